#!/usr/bin/env bash
# A demo-gate campaign on a real NVIDIA GPU (written for one H200) through the built-in local
# box: 4 shapes x 5 worker counts x the in-tree baseline and the demo's candidate, REPEATS
# repeats (default 5: 200 jobs on GPU 0, the slot's second worker staging each next job behind the running one).
# Checks that every job is recorded final exactly once, on the CUDA build, none INVALID (so
# the staged agent never found the previous gate still on the GPU), then writes the report
# (Markdown and SVG) into OUTDIR for rendering elsewhere. Needs build/ (boxgate, agent, the
# CUDA demo gate). Usage: tests/gpu/campaign-h200.sh [OUTDIR]. Ends with "N passed, N failed".
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-${OUT:-/tmp/boxgate-gpu}}
mkdir -p "$out"
exec > >(tee "$out/campaign-h200.log") 2>&1
T=$(mktemp -d /tmp/bgcampaign.XXXXXX)
BG=$root/build/boxgate
export XDG_DATA_HOME=$T/data HOME=$T/home
mkdir -p "$HOME"
pass=0 fail=0
trap 'rm -rf "$T"' EXIT
verdict() {
  local desc=$1; shift
  if "$@"; then pass=$((pass + 1)); echo "PASS: $desc"; else fail=$((fail + 1)); echo "FAIL: $desc"; fi
}
printf '[box local]\ngpus = 0\n\n[pool g]\nslots = local:0\n' >"$T/b.ini"
REPEATS=${REPEATS:-5}
JOBS=$((4 * 5 * 2 * REPEATS))
cat >"$out/h200.ini" <<EOF2
[campaign h200]
pool = g
gate_args = --kind demo
shapes = q_b kv_a o_proj q_a
num_workers = 8 64 66 128 132
candidates = baseline cand
candidate.cand = --variant candidate
repeats = ${REPEATS}
timeout_s = 120
EOF2
cd "$root" || exit 2
start=$(date +%s.%N)
"$BG" --config "$T/b.ini" campaign "$out/h200.ini" --plain
rc=$?
end=$(date +%s.%N)
echo "campaign: exit $rc in $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s"
verdict "the campaign ends with exit 0" test "$rc" = 0
verdict "$JOBS jobs, each recorded final once, on the CUDA build, none INVALID or hung" python3 - "$out/h200.results.jsonl" "$JOBS" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
final = [r for r in recs if r["campaign"]["final"]]
keys = [r["campaign"]["job"] for r in final]
n = int(sys.argv[2])
assert len(keys) == n and len(set(keys)) == n, (len(keys), len(set(keys)))
bad = [(r["campaign"]["job"], r["verdict"], r["why"]) for r in final if r["verdict"] not in ("PASS_GATE", "BELOW_BAR")]
assert not bad, bad
assert all(r["result"]["backend"] == "cuda" and r["gpus"] == "0" for r in final), {r["result"].get("backend") for r in final}
print("gpu:", final[0]["gpu_name"], "- cut attempts:", len(recs) - len(final))
PY
"$BG" report "$out/h200.results.jsonl"
verdict "report wrote its Markdown and plots" test -s "$out/h200.results.report.md" -a -s "$out/h200.results.ratio.svg"
"$BG" brief "$out/h200.results.jsonl" --shape q_b >"$out/h200.brief.txt"
verdict "brief for q_b" grep -q 'Target per num_workers' "$out/h200.brief.txt"
echo
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
