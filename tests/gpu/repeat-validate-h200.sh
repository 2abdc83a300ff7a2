#!/usr/bin/env bash
# The demo gate on a real NVIDIA GPU through the built-in local box: `validate`
# (reference, stub, drop-the-feature), then a --repeat 5 worker-count sweep whose
# records and point summaries land in OUTDIR. Needs build/ (boxgate, agent, demo
# gate). Usage: tests/gpu/repeat-validate-h200.sh [OUTDIR] [COUNTS]
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-/tmp/boxgate-repeat-gpu}
counts=${2:-8,64,128,132}
mkdir -p "$out"
exec > >(tee "$out/repeat-validate.log") 2>&1
BG=$root/build/boxgate
export XDG_DATA_HOME=$out/data
cd "$root" || exit 2
nvidia-smi -L
echo "\$ boxgate validate local -- --kind demo --shape q_b --num-workers 132 --configs q_b"
"$BG" validate local -- --kind demo --shape q_b --num-workers 132 --configs q_b
echo "[exit $?]"
echo "\$ boxgate run local --repeat 5 --json -- --kind demo --shape q_b --num-workers $counts --configs q_b"
"$BG" run local --repeat 5 --json -- --kind demo --shape q_b --num-workers "$counts" --configs q_b \
	>"$out/points.jsonl"
echo "[exit $?]"
grep '"event":"point"' "$out/points.jsonl"
echo "\$ boxgate results show"
"$BG" results show
cp "$XDG_DATA_HOME/boxgate/results.jsonl" "$out/results.jsonl"
