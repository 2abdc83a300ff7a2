#!/usr/bin/env bash
# The broker on a real NVIDIA GPU (written for one H200) through the built-in local box:
# `slots` sees a foreign CUDA process as busy and `run --pool` refuses that slot naming
# it; freed, the pool's slot runs the CUDA demo gate; two clients with --wait share it in
# turn. Needs build/ (boxgate, agent, demo gate) and nvcc for tests/gpu/spin.cu.
# Usage: tests/gpu/broker-h200.sh [OUTDIR]. Ends with "N passed, N failed".
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-${OUT:-/tmp/boxgate-gpu}}
mkdir -p "$out"
exec > >(tee "$out/broker-h200.log") 2>&1
T=$(mktemp -d /tmp/bgbroker.XXXXXX)
BG=$root/build/boxgate
export XDG_DATA_HOME=$T/data HOME=$T/home
mkdir -p "$HOME"
pass=0 fail=0 holder=
trap '[ -n "$holder" ] && kill -9 "$holder" 2>/dev/null; rm -rf "$T"' EXIT
verdict() {
  local desc=$1; shift
  if "$@"; then pass=$((pass + 1)); echo "PASS: $desc"; else fail=$((fail + 1)); echo "FAIL: $desc"; fi
}
show() { printf '\n$ %s\n' "$*"; "$@" >"$T/o" 2>&1; RC=$?; cat "$T/o"; printf '[exit %d]\n' "$RC"; }
printf '[box local]\ngpus = 0\n\n[pool g]\nslots = local:0\n' >"$T/b.ini"
cd "$root" || exit 2
nvcc -O2 -arch=sm_90 -o "$T/spin" tests/gpu/spin.cu || exit 2
GATE=(-- --kind demo --shape q_b --num-workers 132 --configs q_b)

show "$BG" --config "$T/b.ini" slots --pool g
verdict "an idle GPU: the pool's slot is free" grep -qE '^local +gpu0 +free$' "$T/o"

"$T/spin" hold >"$T/hold.out" 2>&1 &
holder=$!
for _ in $(seq 300); do grep -q holding "$T/hold.out" && break; sleep 0.1; done
show "$BG" --config "$T/b.ini" slots --pool g
verdict "a foreign CUDA process: busy, naming its pid" grep -qE "^local +gpu0 +busy +compute process pid $holder " "$T/o"
show "$BG" --config "$T/b.ini" run --pool g --no-results "${GATE[@]}"
verdict "run --pool refuses the busy slot (exit 1) naming the process" \
  sh -c "[ $RC = 1 ] && grep -q 'local:gpu0 busy: compute process pid $holder' '$T/o'"
kill "$holder"; wait "$holder" 2>/dev/null; holder=
for _ in $(seq 100); do [ -z "$(nvidia-smi --query-compute-apps=pid --format=csv,noheader)" ] && break; sleep 0.1; done

show "$BG" --config "$T/b.ini" run --pool g --holder h200-broker "${GATE[@]}"
verdict "freed: run --pool takes the slot and the CUDA demo gate passes" \
  sh -c "[ $RC = 0 ] && grep -q 'pool g: local:gpu0 is free, taking it' '$T/o' && grep -q '\"backend\":\"cuda\"' '$T/o'"

"$BG" --config "$T/b.ini" run --pool g --wait 120 --no-results -- --kind demo --shape q_b --num-workers 132 --configs q_b --iters 100000 >"$T/a.out" 2>&1 &
a=$!
sleep 1
show "$BG" --config "$T/b.ini" run --pool g --wait 120 --no-results "${GATE[@]}"
wait $a; arc=$?
cat "$T/a.out" | grep -v '^FAITHFUL'
verdict "two clients with --wait: the first passes" test "$arc" = 0
verdict "the second waited in line for the slot, then passed" \
  sh -c "[ $RC = 0 ] && grep -q 'first in line, waiting for a free slot' '$T/o'"
show "$BG" results show
echo
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
