#!/usr/bin/env bash
# boxgate-agent slots on a real NVIDIA GPU (written for one H200): builds the agent and
# tests/gpu/spin.cu on the machine, then shows that `slots --gpus 0` says
#   free with no compute process, busy (naming the pid) while a foreign CUDA process holds
#   the GPU, held (tag, pid) while a run holds the slot, disabled with its reason, and that
#   run refuses the disabled slot. Usage: tests/gpu/slots-h200.sh [OUTDIR]
# Ends with "N passed, N failed"; exit 0 when all pass.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
outdir=${1:-${OUT:-/tmp/boxgate-gpu}}
mkdir -p "$outdir"
exec > >(tee "$outdir/slots-h200.log") 2>&1
T=$(mktemp -d /tmp/bggpu.XXXXXX)
LOCKS=$T/locks
pass=0 fail=0 holder=
trap '[ -n "$holder" ] && kill -9 "$holder" 2>/dev/null; rm -rf "$T"' EXIT
show() { printf '\n$ %s\n' "$*"; "$@" >"$T/o" 2>&1; RC=$?; cat "$T/o"; printf '[exit %d]\n' "$RC"; }
verdict() {
  local desc=$1; shift
  if "$@"; then pass=$((pass + 1)); echo "PASS: $desc"; else fail=$((fail + 1)); echo "FAIL: $desc"; fi
}
apps() { nvidia-smi --query-compute-apps=pid --format=csv,noheader -i 0 2>/dev/null; }
state_is() { python3 -c "import json,sys; r=json.loads(open('$T/o').readline()); sys.exit(0 if r['state']=='$1' else 1)"; }

echo "== boxgate-agent slots on $(hostname) at $(date -u +%FT%TZ)"
show nvidia-smi --query-gpu=index,name --format=csv
"$root/gate/agent/gen.sh" >"$T/boxgate-agent.c"
show gcc -std=c11 -Wall -Wextra -Werror -Wshadow -D_GNU_SOURCE -O2 -o "$T/boxgate-agent" "$T/boxgate-agent.c" -ldl -lm
verdict "agent builds with -Werror" test "$RC" = 0
show nvcc -O2 -arch=sm_90 -o "$T/spin" "$root/tests/gpu/spin.cu"
cd "$T" || exit 1

show ./boxgate-agent slots --lock-dir "$LOCKS"
verdict "no --gpus: one row per NVML GPU, the first gpu0" grep -q '^{"slot":"gpu0","gpu":0,' "$T/o"
show ./boxgate-agent slots --lock-dir "$LOCKS" --gpus 0
verdict "idle GPU: free, procs []" sh -c "grep -q '\"procs\":\[\]' '$T/o' && grep -q '\"state\":\"free\"' '$T/o'"

./spin hold >"$T/hold.out" 2>&1 &
holder=$!
for _ in $(seq 300); do grep -q holding "$T/hold.out" && break; sleep 0.1; done
for _ in $(seq 100); do [ -n "$(apps)" ] && break; sleep 0.1; done
show ./boxgate-agent slots --lock-dir "$LOCKS" --gpus 0
verdict "a foreign CUDA process: busy" state_is busy
verdict "busy names the foreign pid $holder" grep -q "\"pid\":$holder," "$T/o"
kill "$holder"; wait "$holder" 2>/dev/null; holder=
for _ in $(seq 100); do [ -z "$(apps)" ] && break; sleep 0.1; done
show ./boxgate-agent slots --lock-dir "$LOCKS" --gpus 0
verdict "after it exits: free" state_is free

./boxgate-agent run --gpus 0 --no-stdin --lock-dir "$LOCKS" --tag h200-test -- ./spin hold >"$T/run.out" 2>&1 &
runner=$!
for _ in $(seq 300); do grep -q holding "$T/run.out" && break; sleep 0.1; done
show ./boxgate-agent slots --lock-dir "$LOCKS" --gpus 0
verdict "a run holding the slot: held (its own CUDA process is not foreign)" state_is held
verdict "held names the tag" grep -q '"tag":"h200-test"' "$T/o"
kill -TERM "$runner"; wait "$runner" 2>/dev/null
for _ in $(seq 100); do [ -z "$(apps)" ] && break; sleep 0.1; done

show ./boxgate-agent slot-disable --lock-dir "$LOCKS" --gpus 0 --why "KDA job until Friday" --by tester
show ./boxgate-agent slots --lock-dir "$LOCKS" --gpus 0
verdict "disabled with its reason" sh -c "grep -q '\"why\":\"KDA job until Friday\"' '$T/o' && grep -q '\"state\":\"disabled\"' '$T/o'"
show ./boxgate-agent run --gpus 0 --no-stdin --lock-dir "$LOCKS" -- sh -c 'echo GATE-RAN'
verdict "run on the disabled slot: exit 75, reason named, gate never ran" \
  sh -c "[ $RC = 75 ] && grep -q 'slot gpu0 disabled: KDA job until Friday' '$T/o' && ! grep -q GATE-RAN '$T/o'"
show ./boxgate-agent slot-enable --lock-dir "$LOCKS" --gpus 0
show ./boxgate-agent run --gpus 0 --no-stdin --lock-dir "$LOCKS" -- sh -c 'echo GATE-RAN'
verdict "enabled again: the gate runs" sh -c "[ $RC = 0 ] && grep -q GATE-RAN '$T/o'"
echo
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
