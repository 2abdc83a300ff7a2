#!/usr/bin/env bash
# The demo gate's campaign on the built-in local box (its CPU twin here): 2 shapes x 2 worker
# counts x the in-tree baseline and the demo's candidate, end to end through the real
# boxgate; then `report` writes its Markdown and plots, which render (rsvg-convert) and are
# checked as images, and `brief` names the measured baseline.
# Nothing here is judged on speed (either kernel may win), so it runs beside other tests.
source "$(dirname "$0")/lib.sh"
command -v rsvg-convert >/dev/null 2>&1 || skip_all "rsvg-convert (librsvg2-bin) is not installed"
PNG="python3 $BG_ROOT/tests/integration/png_check.py"
cd "$BG_TMP" || exit 1
printf '[pool cpu]\nslots = local\n' >boxgate.ini
cat >demo.ini <<'EOF2'
[campaign demo]
pool = cpu
gate_args = --kind demo --iters 5 --warmup 1   ; short: this is about the pipeline
shapes = q_b kv_a
num_workers = 1 2
candidates = baseline cand
candidate.cand = --variant candidate
EOF2
export BOXGATE_DEMO_GATE=cpu
expect_rc 0 "the demo campaign on the local box" "$BOXGATE" campaign demo.ini --plain
has "$OUT_FILE" '^\[8/8\] ' "8 jobs ran"
has "$OUT_FILE" '^shape kv_a$' "the closing summary has a table per shape"
# which kernel wins is the twin's business (an instrumented build slows the candidate, and
# beside other tests the winner may differ from one worker count to the next)
has "$OUT_FILE" '^  q_b: (cand|baseline) best at (1-2|1, (cand|baseline) at 2)$' "the summary names the winner of each shape"
pycheck "8 records, each final and judged, the CPU twin named" '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert len(recs) == 8 and all(r["campaign"]["final"] and r["verdict"] in ("PASS_GATE", "BELOW_BAR") for r in recs)
assert all(r["box"] == "local" and r["transport"] == "local" and r["device"] == "cpu" for r in recs)
assert {r["campaign"]["candidate"] for r in recs} == {"baseline", "cand"}
base = [r for r in recs if r["campaign"]["candidate"] == "baseline"]
assert all("--baseline" in r["gate_args"] for r in base)
' demo.results.jsonl

expect_rc 0 "report" "$BOXGATE" report demo.results.jsonl
for f in demo.results.report.md demo.results.slowcta.q_b.svg demo.results.slowcta.kv_a.svg demo.results.ratio.svg; do
  [ -s "$f" ] && ok "report wrote $f" || not_ok "report did not write $f"
done
for f in demo.results.*.svg; do
  if rsvg-convert -o "${f%.svg}.png" "$f"; then ok "$f renders"; else not_ok "$f does not render"; fi
done
check "the q_b plot renders at its size" $PNG size demo.results.slowcta.q_b.png 780 460
for i in 0 1; do
  col=$(grep -o "id=\"legend-$i\"[^>]*fill=\"#[0-9a-f]*\"" demo.results.slowcta.q_b.svg | grep -o '#[0-9a-f]*')
  check "candidate $i's line ($col) is drawn" $PNG count demo.results.slowcta.q_b.png 80 50 570 400 "$col" 100
done
read -r x y < <(python3 - demo.results.ratio.svg <<'PY'
import re, sys
m = re.search(r'id="cell-0-0-0" x="([0-9.]+)" y="([0-9.]+)"', open(sys.argv[1]).read())
print(int(float(m.group(1))) + 5, int(float(m.group(2))) + 5)
PY
)
family=$(python3 -c '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
med = lambda c: sorted(r["result"]["candidate"]["slowCTA_us"] for r in recs if r["campaign"]["candidate"] == c and r["campaign"]["shape"] == "q_b" and r["campaign"]["num_workers"] == 1)[0]
print("green" if med("baseline") / med("cand") >= 1.0 else "red")' demo.results.jsonl)
check "heat map: q_b nw1 is $family, as the recorded ratio says" $PNG family demo.results.ratio.png "$x" "$y" "$family"
expect_rc 0 "brief --shape q_b" "$BOXGATE" brief demo.results.jsonl --shape q_b
has "$OUT_FILE" 'boxgate run --pool cpu -- --kind demo --iters 5 --warmup 1 --shape q_b --configs q_b --num-workers 1' "the brief gives the gate command, checked against the configuration: the local box names no kernel path, so no --kernel"
has "$OUT_FILE" 'no --kernel: box local names no kernel path for --kind demo' "and says why it suggests no --kernel"
finish
