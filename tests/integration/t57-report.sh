#!/usr/bin/env bash
# boxgate report and brief: a campaign's results file written here with Python (3 shapes x 5
# num_workers x baseline and 2 candidates, 3 repeats, with known numbers so every ratio, best
# and flip is known; plus a NOISY cell, a TIMEOUT_HANG, a record of a cut attempt, a
# duplicate, a missing job and a torn last line). Checks the Markdown table values and the
# flips exactly, renders every SVG with rsvg-convert and checks the image (png_check.py),
# the brief's command, baseline and targets, and bad input.
source "$(dirname "$0")/lib.sh"
cd "$BG_TMP" || exit 1
command -v rsvg-convert >/dev/null 2>&1 || skip_all "rsvg-convert (librsvg2-bin) is not installed"
PNG="python3 $BG_ROOT/tests/integration/png_check.py"

python3 - <<'PY'
import json
NW = [8, 16, 32, 64, 128]
SHAPES = ["q_b", "w13", "kv"]
# ratio baseline/candidate per (shape, candidate): one value per num_workers
RATIO = {("q_b", "cand_a"): [1.3, 1.3, 1.3, 0.9, 0.9],
         ("q_b", "cand_b"): [0.8] * 5,
         ("w13", "cand_a"): [1.25] * 5,
         ("w13", "cand_b"): [1.5, 1.5, 1.0, 1.0, 1.0],
         ("kv", "cand_a"): [1.1] * 5,
         ("kv", "cand_b"): [1.4, 1.4, 1.4, 1.4, 0.8]}
def base(nw): return 10 + nw / 8
seq = 0
def rec(shape, nw, cand, rep, slow, verdict="PASS_GATE", final=True, attempt=1, sumf=1.0, camp="w13", box="b1"):
    global seq
    seq += 1
    res = None
    if verdict in ("PASS_GATE", "BELOW_BAR"):
        res = {"kind": "largem_compact", "shape": shape, "num_workers": nw, "device": "cuda",
               "device_name": "NVIDIA H200",
               "candidate": {"slowCTA_us": slow, "wall_us": slow * 1.5,
                             "sumCTA_us": base(nw) * nw * 10 * sumf, "cos": 0.9999, "status": "PASS"},
               "slowCTA_ratio_base_over_cand": 1.0, "verdict": verdict}
    return {"schema": 1, "run_id": "0123456789abcdef", "seq": seq, "box": box, "gpus": "0",
            "gpu_name": "NVIDIA H200", "device": "cuda", "command": "gate",
            "start": "2026-12-03T14:%02d:%02d.000Z" % (seq // 60 % 60, seq % 60),
            "end": "2026-12-03T15:%02d:%02d.000Z" % (seq // 60 % 60, seq % 60),
            "exit": 0, "verdict": verdict, "result": res,
            "campaign": {"name": camp, "file": "/abs/w13.ini", "pool": "b200",
                         "gate_args": ["--kind", "largem_compact"],
                         "job": "%s/%s/%d/%s/%d" % (camp, shape, nw, cand, rep),
                         "shape": shape, "num_workers": nw, "candidate": cand,
                         "candidate_file": None if cand == "baseline" else "kernels/%s.cuh" % cand,
                         "candidate_sha256": None, "candidate_flags": None,
                         "repeat": rep, "repeats": 3, "jobs": 135, "attempt": attempt,
                         "final": final, "bar": 1.2, "max_cv": 2.0, "sum_tolerance": 10.0}}
lines = []
for shape in SHAPES:
    for i, nw in enumerate(NW):
        for cand in ("baseline", "cand_a", "cand_b"):
            med = base(nw) if cand == "baseline" else base(nw) / RATIO[(shape, cand)][i]
            spread = [0.995, 1.0, 1.005]
            if (shape, nw, cand) == ("w13", 64, "cand_b"):
                spread = [0.9, 1.0, 1.1]                      # CV 10%: a warning
            for rep in range(3):
                if (shape, nw, cand, rep) == ("kv", 32, "cand_a", 2):
                    continue                                   # a job never recorded
                if (shape, nw, cand, rep) == ("w13", 128, "cand_b", 2):
                    lines.append(rec(shape, nw, cand, rep, 0, verdict="TIMEOUT_HANG"))
                    continue
                if (shape, nw, cand, rep) == ("kv", 16, "cand_a", 0):
                    # a cut attempt, requeued: never counted
                    lines.append(rec(shape, nw, cand, rep, 0.001, final=False))
                if (shape, nw, cand, rep) == ("q_b", 8, "cand_b", 0):
                    # recorded final twice: the last one counts
                    lines.append(rec(shape, nw, cand, rep, 1000.0))
                sumf = 1.5 if (shape, nw, cand) == ("kv", 8, "cand_b") else 1.0
                lines.append(rec(shape, nw, cand, rep, med * spread[rep], sumf=sumf,
                                 box="b1" if rep % 2 == 0 else "b2"))
with open("w13.results.jsonl", "w") as f:
    for r in lines:
        f.write(json.dumps(r) + "\n")
    f.write('{"schema":1,"verd')                               # torn last line
with open("two.jsonl", "w") as f:
    for r in lines[:10]:
        f.write(json.dumps(r) + "\n")
    f.write(json.dumps(rec("q_b", 8, "baseline", 0, 11.0, camp="other")) + "\n")
with open("weird.jsonl", "w") as f:
    for cand, slow in (("baseline", 10.0), ('c<&"x', 8.0)):
        for rep in range(2):
            r = rec('a<&"b', 8, cand, rep, slow * (1 + rep / 1000), camp="odd")
            f.write(json.dumps(r) + "\n")
with open("nocamp.jsonl", "w") as f:
    f.write('{"schema":1,"box":"b1","verdict":"PASS_GATE"}\n')
PY
[ -s w13.results.jsonl ] && ok "a campaign's results file written" || not_ok "no results file"

expect_rc 0 "report writes the report" "$BOXGATE" report w13.results.jsonl
for f in w13.results.report.md w13.results.slowcta.q_b.svg w13.results.slowcta.w13.svg \
  w13.results.slowcta.kv.svg w13.results.ratio.svg; do
  has "$OUT_FILE" "^\./$f\$" "report prints $f" && [ -s "$f" ] || not_ok "$f written"
done
has "$ERR_FILE" 'torn' "the torn last line is reported on stderr"

if python3 - w13.results.report.md <<'PY'
import re, statistics, sys
md = open(sys.argv[1]).read()
NW = [8, 16, 32, 64, 128]
RATIO = {("q_b", "cand_a"): [1.3, 1.3, 1.3, 0.9, 0.9], ("q_b", "cand_b"): [0.8] * 5,
         ("w13", "cand_a"): [1.25] * 5, ("w13", "cand_b"): [1.5, 1.5, 1.0, 1.0, 1.0],
         ("kv", "cand_a"): [1.1] * 5, ("kv", "cand_b"): [1.4, 1.4, 1.4, 1.4, 0.8]}
rows, shape = {}, None
for line in md.splitlines():
    m = re.match(r"## Shape (.*)", line)
    if m:
        shape = m.group(1).replace("\\_", "_")
    elif shape and line.startswith("| ") and not line.startswith("| num_workers"):
        c = [x.strip() for x in line.strip("|").split("|")]
        rows[(shape, int(c[0]), c[1].strip("*").replace("\\_", "_"))] = c
assert len(rows) == 45, len(rows)
def base(nw): return 10 + nw / 8
for shape in ("q_b", "w13", "kv"):
    for i, nw in enumerate(NW):
        b = rows[(shape, nw, "baseline")]
        assert b[2].strip("*") == "%.2f" % base(nw), (shape, nw, b)
        assert b[9] == "baseline" and b[10] == "3", b
        for cand in ("cand_a", "cand_b"):
            c = rows[(shape, nw, cand)]
            r = RATIO[(shape, cand)][i]
            spread = [0.9, 1.0, 1.1] if (shape, nw, cand) == ("w13", 64, "cand_b") else [0.995, 1, 1.005]
            s = [base(nw) / r * k for k in spread]
            if (shape, nw, cand) == ("w13", 128, "cand_b"):
                s = s[:2]
            if (shape, nw, cand) == ("kv", 32, "cand_a"):
                s = s[:2]
            med = statistics.median(s)
            assert c[2].strip("*") == "%.2f" % med, (c, med)
            assert c[4] == "%.3f" % (base(nw) / med), (c, base(nw) / med)
            assert c[5] == "jobs", c
            cv = statistics.stdev(s) / statistics.mean(s) * 100
            assert c[3] == "%.2f-%.2f (%.1f%%)" % (min(s), max(s), cv), (c[3], s)
want = {("q_b", 8, "cand_a"): "PASS_GATE", ("q_b", 64, "cand_a"): "BELOW_BAR",
        ("q_b", 8, "cand_b"): "BELOW_BAR", ("w13", 8, "cand_b"): "PASS_GATE",
        ("w13", 64, "cand_b"): "BELOW_BAR",
        ("w13", 128, "cand_b"): "TIMEOUT_HANG", ("w13", 32, "cand_a"): "PASS_GATE",
        ("kv", 8, "cand_b"): "BELOW_BAR (sumCTA above the baseline's tolerance)",
        ("kv", 16, "cand_b"): "PASS_GATE", ("kv", 16, "cand_a"): "BELOW_BAR"}
# a decided verdict carries its 90% interval; the CV over max CV is a warning beside it
for k, v in want.items():
    got = re.sub(r" \(90% interval [0-9.]+-[0-9.]+\)| \(CV [0-9.]+% > 2\.0%: a warning\)", "", rows[k][9])
    assert got == v, (k, rows[k][9], v)
assert rows[("q_b", 8, "cand_a")][9] == "PASS_GATE (90% interval 1.287-1.313)", rows[("q_b", 8, "cand_a")]
assert rows[("w13", 64, "cand_b")][9].endswith("(CV 10.0% > 2.0%: a warning)"), rows[("w13", 64, "cand_b")]
# 3 baseline runs and 2 of the candidate can have no interval: NOISY, saying so
assert rows[("kv", 32, "cand_a")][9].startswith("**NOISY** (estimated ratio 1.103 (rank-sum, 3 baseline and 2 candidate runs): no interval"), rows[("kv", 32, "cand_a")]
assert rows[("w13", 128, "cand_b")][10] == "2 (+1 TIMEOUT_HANG)", rows[("w13", 128, "cand_b")]
assert rows[("kv", 16, "cand_a")][10] == "3"      # the cut attempt did not count
assert rows[("q_b", 8, "cand_b")][10] == "3"      # the duplicate counted once
best = {k for k, c in rows.items() if c[1].startswith("**")}
want_best = {("q_b", n, "cand_a") for n in (8, 16, 32)} | {("q_b", n, "baseline") for n in (64, 128)} \
    | {("w13", n, "cand_b") for n in (8, 16)} | {("w13", n, "cand_a") for n in (32, 64, 128)} \
    | {("kv", 8, "cand_a")} | {("kv", n, "cand_b") for n in (16, 32, 64)} | {("kv", 128, "cand_a")}
assert best == want_best, sorted(best ^ want_best)
flips = re.findall(r"^Winner flips: (.*)$", md, re.M)
assert flips == ["q\\_b: cand\\_a best at 8-32, baseline at 64-128",
                 "w13: cand\\_b best at 8-16, cand\\_a at 32-128",
                 "kv: cand\\_a best at 8, cand\\_b at 16-64, cand\\_a at 128"], flips
assert "- jobs recorded: 134 of 135" in md
assert "- boxes: b1, b2" in md and "- GPUs: NVIDIA H200" in md
assert "- 1 of 135 jobs not recorded (missing)" in md
assert "- 1 duplicate final record of a job (the last one kept)" in md
assert "- 1 record of cut attempts (requeued) not counted" in md
assert "- the last line of the results file is torn" in md
assert "](w13.results.slowcta.q_b.svg)" in md and "](w13.results.ratio.svg)" in md
assert "- time: 2026-12-03T14:00:01.000Z to 2026-12-03T15:" in md
PY
then ok "the Markdown tables: medians, spreads, ratios, verdicts, best and flips as computed"
else not_ok "the Markdown report"; diag "$(cat w13.results.report.md)"; fi

# Every SVG is well-formed XML and renders; the plots are checked as images.
for f in w13.results.*.svg; do
  if python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$f" 2>/dev/null &&
    ! grep -Eqi 'nan|inf' "$f" && rsvg-convert -o "${f%.svg}.png" "$f"; then
    ok "$f is XML without NaN/inf and renders"
  else not_ok "$f does not render"; fi
done
check "the slowCTA plot renders at its size" $PNG size w13.results.slowcta.q_b.png 780 460
# Each candidate's legend colour draws its line in the plot area.
for i in 0 1 2; do
  col=$(grep -o "id=\"legend-$i\"[^>]*fill=\"#[0-9a-f]*\"" w13.results.slowcta.w13.svg | grep -o '#[0-9a-f]*')
  check "candidate $i's colour ($col) is drawn in the w13 plot" \
    $PNG count w13.results.slowcta.w13.png 80 50 570 400 "$col" 150
done
# A heat-map cell's pixel by its rect (the top-left corner, away from the centred text).
cellpx() {
  python3 - "$1" "$2" <<'PY'
import re, sys
svg = open(sys.argv[1]).read()
m = re.search(r'id="%s" x="([0-9.]+)" y="([0-9.]+)"' % sys.argv[2], svg)
print(int(float(m.group(1))) + 5, int(float(m.group(2))) + 5)
PY
}
# panels: cand_a 0, cand_b 1; rows q_b, w13, kv; columns 8 16 32 64 128
read -r x y < <(cellpx w13.results.ratio.svg cell-0-0-0)
check "heat map: q_b nw8 cand_a (ratio 1.30, above the bar) is green" $PNG family w13.results.ratio.png "$x" "$y" green
read -r x y < <(cellpx w13.results.ratio.svg cell-1-0-2)
check "heat map: q_b nw32 cand_b (ratio 0.80) is red" $PNG family w13.results.ratio.png "$x" "$y" red
read -r x y < <(cellpx w13.results.ratio.svg cell-1-1-4)
check "heat map: w13 nw128 cand_b (TIMEOUT_HANG) is grey" $PNG family w13.results.ratio.png "$x" "$y" grey
read -r x y < <(cellpx w13.results.ratio.svg cell-1-1-0)
check "heat map: w13 nw8 cand_b (ratio 1.50) is green" $PNG family w13.results.ratio.png "$x" "$y" green
has w13.results.ratio.svg '>1\.30</text>' "the ratio is printed in its cell"

cp w13.results.ratio.svg first.svg
expect_rc 0 "report --out DIR --json" "$BOXGATE" report w13.results.jsonl --out out --json
pycheck "--json: the points as one object, the files written listed" '
import json, sys
o = json.load(open(sys.argv[1]))
assert o["campaign"] == "w13" and o["jobs_recorded"] == 134 and o["duplicates"] == 1
assert len(o["points"]) == 15 and o["points"][0]["best"] == "cand_a"
assert o["flips"]["kv"] == "kv: cand_a best at 8, cand_b at 16-64, cand_a at 128"
assert o["written"][-1] == "out/w13.results.report.md"
' "$OUT_FILE"
check "the output is deterministic" cmp first.svg out/w13.results.ratio.svg

# brief
expect_rc 0 "brief --shape w13" "$BOXGATE" brief w13.results.jsonl --shape w13 --kernel k.cuh
has "$OUT_FILE" "^  boxgate run --pool b200 --kernel k\.cuh -- --kind largem_compact --shape w13 --configs w13 --num-workers 64$" \
  "the exact gate command at each worker count"
has "$OUT_FILE" "N in 8 16 32 64 128" "the sweep list"
has "$OUT_FILE" "^ +8 +11\.000 +10\.945-11\.055 +0\.5 +3  NVIDIA H200$" "the measured baseline at nw 8"
has "$OUT_FILE" "^ +128 +26\.000 +21\.667$" "the target at nw 128: baseline median / 1.2"
has "$OUT_FILE" "measured baseline median" "says the reference is the measured baseline"
has "$OUT_FILE" "num_workers 8: cand_b, slowCTA 7\.333 us, ratio 1\.500 \(PASS_GATE, 90% interval 1\.485-1\.515\)" "the best candidate so far, with its interval"
has "$OUT_FILE" "not checked: no pool 'b200' in the configuration" "a pool missing from the configuration leaves the command unchecked, and it says so"
has "$OUT_FILE" "__syncthreads" "the barrier constraint"
has "$OUT_FILE" "aligned to" "the alignment constraint"
has "$OUT_FILE" "shadow tree" "the overlay: the production tree is never written"
expect_rc 0 "brief --reference" "$BOXGATE" brief w13.results.jsonl --shape q_b --reference 12
has "$OUT_FILE" "^ +64 +12\.000 +10\.000$" "the target from the given reference"
has "$OUT_FILE" "--kernel CANDIDATE_FILE" "a placeholder without --kernel"
expect_rc 2 "brief: an unknown shape" "$BOXGATE" brief w13.results.jsonl --shape nope
has "$ERR_FILE" "no shape 'nope' \(shapes: q_b, w13, kv\)" "names the shape and lists the shapes"
expect_rc 2 "brief without --shape" "$BOXGATE" brief w13.results.jsonl
expect_rc 2 "brief: a bad --reference" "$BOXGATE" brief w13.results.jsonl --shape kv --reference x

# bad input
expect_rc 1 "report: a missing file" "$BOXGATE" report nope.jsonl
has "$ERR_FILE" "nope\.jsonl" "names the file"
expect_rc 1 "report: no campaign records" "$BOXGATE" report nocamp.jsonl
has "$ERR_FILE" "nocamp\.jsonl holds no campaign records" "says so"
expect_rc 2 "report: an unknown --campaign" "$BOXGATE" report w13.results.jsonl --campaign nope
has "$ERR_FILE" "no campaign 'nope' \(campaigns in it: w13\)" "names the campaigns present"
expect_rc 2 "report: several campaigns and no --campaign" "$BOXGATE" report two.jsonl
has "$ERR_FILE" "2 campaigns: w13, other" "lists them"
expect_rc 0 "report --campaign picks one" "$BOXGATE" report two.jsonl --campaign other
expect_rc 2 "report without FILE" "$BOXGATE" report
expect_rc 0 "report --help" "$BOXGATE" report --help
has "$OUT_FILE" "^usage: boxgate report FILE" "the help"

# a shape and a candidate named with markup characters
expect_rc 0 "report: names with <&\" characters" "$BOXGATE" report weird.jsonl
f=weird.slowcta.a___b.svg
if [ -s "$f" ] && python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$f" &&
  rsvg-convert -o weird.png "$f" && rsvg-convert -o weird-ratio.png weird.ratio.svg; then
  ok "their plots are well-formed and render"
else not_ok "the plots of odd names"; fi
has "$f" 'a&lt;&amp;&quot;b' "the shape is escaped in the SVG"
has weird.ratio.svg 'c&lt;&amp;&quot;x' "the candidate is escaped in the heat map"
has weird.report.md '^## Shape a&lt;&amp;"b$' "and in the Markdown"

# values no span can have, and names no one would choose: report returns, and every
# SVG it writes is XML (Python's parser) that rsvg-convert renders
python3 - <<'PY'
import json
def rec(shape, cand, slow, nw=8):
    res = {"shape": shape, "num_workers": nw, "verdict": "PASS_GATE",
           "candidate": {"slowCTA_us": slow, "wall_us": slow, "sumCTA_us": slow, "cos": 0.9999}}
    return {"schema": 1, "box": "b1", "gpus": "0", "verdict": "PASS_GATE", "result": res,
            "campaign": {"name": "hx", "job": "hx/%s/%d/%s/%r" % (shape, nw, cand, slow),
                         "shape": shape, "num_workers": nw, "candidate": cand, "final": True}}
L = [rec("tiny", "baseline", 5e-324), rec("tiny", "cand", 1.0),
     rec("huge", "baseline", 1.797e308), rec("huge", "cand", 2.0),
     rec("mix", "baseline", 5e-324), rec("mix", "cand", 1.797e308, 16), rec("mix", "baseline", 3.0, 16),
     rec("nc\ufffe\uffff\u202e<&]]>\"'\x01\x7f\u0085", "c\ufffe\u2066x", 4.0),
     rec("x" * 3000, "baseline", 5.0), rec("x" * 3000 + "y", "cand", 6.0)]
open("hostile.jsonl", "w").write("".join(json.dumps(r) + "\n" for r in L))
PY
expect_rc 0 "report: slowCTA 5e-324 and 1.797e308, U+FFFE/U+FFFF and a 3000-byte shape" \
  timeout 30 "$BOXGATE" report hostile.jsonl --out hostile
bad=0
for f in hostile/*.svg; do
  python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$f" &&
    rsvg-convert -o "${f%.svg}.png" "$f" || { bad=1; diag "$f"; }
done
[ "$bad" = 0 ] && [ "$(ls hostile/*.svg | wc -l)" = 7 ] && ok "all 7 plots are XML and render" || not_ok "the hostile plots"
has hostile/hostile.report.md 'impossible span' "the impossible spans are no samples, said in the table"
check "the 3000-byte shapes have file names that fit, numbered apart" \
  test -f "hostile/hostile.slowcta.$(printf 'x%.0s' $(seq 64)).svg" -a -f "hostile/hostile.slowcta.$(printf 'x%.0s' $(seq 64))-2.svg"
long=$(printf 'd%.0s' $(seq 200))/$(printf 'e%.0s' $(seq 200))/$(printf 'f%.0s' $(seq 200))/$(printf 'g%.0s' $(seq 200))
expect_rc 1 "report --out into a directory that cannot be made" "$BOXGATE" report hostile.jsonl --out "$long"
has "$ERR_FILE" 'No such file or directory$' "the reason is kept, however long the path"
finish
