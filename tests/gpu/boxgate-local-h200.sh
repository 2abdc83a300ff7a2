#!/usr/bin/env bash
# boxgate run through the built-in local box on a real NVIDIA GPU: the demo gate's
# CUDA build passes, a hung CUDA gate is killed at the timeout and nvidia-smi then lists
# no compute process, and while another process holds the GPU the run is refused
# INVALID naming its pid. Needs build/ (boxgate, agent, demo gate) and nvcc for the
# GPU holder. Usage: tests/gpu/boxgate-local-h200.sh [OUTDIR]
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-/tmp/boxgate-local-gpu}
mkdir -p "$out"
exec > >(tee "$out/boxgate-local-h200.log") 2>&1
BG=$root/build/boxgate
T=$(mktemp -d)
holder=
trap '[ -n "$holder" ] && kill -9 $holder 2>/dev/null; rm -rf "$T"' EXIT
pass=0 fail=0
show() { echo "\$ $*"; "$@"; RC=$?; echo "[exit $RC]"; }
expect() { if [ "$RC" = "$1" ]; then pass=$((pass+1)); echo "PASS: $2"; else fail=$((fail+1)); echo "FAIL: $2 (exit $RC)"; fi; }
apps() { nvidia-smi --query-compute-apps=pid,name --format=csv,noheader; }

cd "$T"
nvidia-smi -L
show "$BG" run local -- --kind demo --shape q_b --num-workers 132
expect 0 "the CUDA demo gate passes through boxgate run local"
show "$BG" run local --timeout 8 -- --kind demo --shape q_b --num-workers 132 --variant hang
expect 124 "a hung CUDA gate is killed at the timeout (exit 124)"
echo "\$ nvidia-smi --query-compute-apps=pid,name --format=csv"; nvidia-smi --query-compute-apps=pid,name --format=csv
[ -z "$(apps)" ] && { pass=$((pass+1)); echo "PASS: no compute process afterwards"; } || { fail=$((fail+1)); echo "FAIL: compute processes left"; }
nvcc -O2 -o "$T/spin" "$root/tests/gpu/spin.cu" && { "$T/spin" hold & holder=$!; }
for i in $(seq 1 60); do [ -n "$(apps)" ] && break; sleep 0.25; done
echo "\$ nvidia-smi --query-compute-apps=pid,name --format=csv"; nvidia-smi --query-compute-apps=pid,name --format=csv
show "$BG" run local -- --kind demo --shape q_b --num-workers 132
expect 125 "a GPU held by pid $holder is refused INVALID"
kill -9 $holder; wait $holder 2>/dev/null; holder=
for i in $(seq 1 40); do [ -z "$(apps)" ] && break; sleep 0.25; done
show "$BG" run local --json -- --kind demo --shape o_proj --num-workers 132
expect 0 "after the holder left the run passes again (--json)"
echo "$pass passed, $fail failed"
