#!/usr/bin/env bash
# Compare anything with anything, and report any results file. A real sweep
# (`run --repeat 5 -- --num-workers 8,16`) of two variants of one gate (variant_gate.sh:
# known numbers per --variant) goes into one store; results compare splits it with
# --before/--after selectors and pairs the variants (inferred, --pair KEY, --pair A=B);
# the change, its Hodges-Lehmann interval and p are checked against Python (every
# arrangement counted) and SciPy's exact Mann-Whitney U; --json through Python's json,
# --csv through Python's csv (formula cells neutralised, numbers as measured); run=,
# since=/until=, box=, device= selections; bad selectors name themselves; results show
# --select and --by point; report on the sweep (no campaign), with --select, its plots
# rendered by rsvg-convert and their pixels checked (NOISY hollow, 4x and 6x apart).
source "$(dirname "$0")/lib.sh"
cd "$BG_TMP" || exit 1
unset BOXGATE_CONFIG
export XDG_CONFIG_HOME=$BG_TMP/xdg XDG_DATA_HOME=$BG_TMP/data HOME=$BG_TMP/home
mkdir -p "$HOME" d
GATE=$BG_ROOT/tests/integration/gates/variant_gate.sh
PNG="python3 $BG_ROOT/tests/integration/png_check.py"
SCIPY=/usr/bin/python3
printf '[box vbox]\ntransport = local\ngate = %s\nallow = --variant --dir --num-workers --shape --kind\n' \
  "$GATE" >v.ini
printf '100\n101\n99\n100.5\n99.5\n' >d/candidate.values
printf '110\n111\n109\n110.5\n109.5\n' >d/nosplit.values
bg() { "$BOXGATE" --config "$BG_TMP/v.ini" "$@"; }

for v in candidate nosplit; do
  expect_rc 0 "a sweep of variant $v: run --repeat 5 -- --num-workers 8,16" \
    bg run vbox --results r.jsonl --repeat 5 -- --variant $v --dir d --num-workers 8,16
done
[ "$(wc -l <r.jsonl)" = 20 ] && ok "20 records in one store" || not_ok "$(wc -l <r.jsonl) records"

# --- compare two variants of one store ---
expect_rc 1 "compare --before variant=candidate --after variant=nosplit: slower, exit 1" \
  bg results compare r.jsonl --before variant=candidate --after variant=nosplit
has "$OUT_FILE" '^paired on everything but variant \(the key the selectors differ in\)$' "the pairing key is inferred and said"
has "$OUT_FILE" '^vbox var q_b nw8 - --dir d +100\.00 ± 0\.8% +5 +110\.00 ± 0\.7% +5 +\+10\.00% +\[\+8\.96%, \+11\.06%\] +p=0\.0079 +slower$' \
  "nw8: medians ± CV, n, the change, its interval and p, slower"
has "$OUT_FILE" '^vbox var q_b nw16 - --dir d .* slower$' "nw16 paired too"
has "$OUT_FILE" '^2 points: 0 same, 0 faster, 2 slower' "the summary"
expect_rc 1 "--pair variant says the same" bg results compare r.jsonl --before variant=candidate --after variant=nosplit --pair variant
has "$OUT_FILE" '^paired on everything but variant$' "the explicit key"
expect_rc 1 "--pair candidate=nosplit maps one value to the other" \
  bg results compare r.jsonl --before variant=candidate --after variant=nosplit --pair candidate=nosplit
has "$OUT_FILE" '^vbox var q_b nw8 - --variant candidate --dir d .* slower$' "the rows pair through the mapping"
expect_rc 0 "the other way round: faster, exit 0" \
  bg results compare r.jsonl --before variant=nosplit --after variant=candidate
has "$OUT_FILE" '-9\.09% .* faster$' "faster by 9.09%"
expect_rc 0 "without a key to pair on, nothing pairs: exit 0, and a hint" \
  bg results compare r.jsonl --before variant=candidate --after variant=nosplit,num-workers=8 --pair num-workers
has "$OUT_FILE" 'only in before' "the points stay apart"

expect_rc 1 "--json" bg results compare r.jsonl --before variant=candidate --after variant=nosplit --json
if "$SCIPY" - "$OUT_FILE" <<'PY'
import itertools, json, math, sys
from scipy import stats
rows = [json.loads(l) for l in open(sys.argv[1])]
pts, summ = rows[:-1], rows[-1]
A = [100, 101, 99, 100.5, 99.5]; B = [110, 111, 109, 110.5, 109.5]
# the exact U distribution by counting every arrangement, its 5% critical value
cnt = {}
for comb in itertools.combinations(range(10), 5):
    u = sum(sum(1 for j in range(i) if j not in comb) for i in comb)
    cnt[u] = cnt.get(u, 0) + 1
k, below = -1, 0
for u in sorted(cnt):
    below += cnt[u]
    if below / 252 > 0.05 + 1e-12:  # 5% a side: the 90% interval
        break
    k = u
d = sorted(math.log(b) - math.log(a) for a in A for b in B)
lo, hi = math.exp(d[k]), math.exp(d[-1 - k])
p = stats.mannwhitneyu(A, B, alternative="two-sided", method="exact").pvalue
assert len(pts) == 2, pts
for o in pts:
    assert o["call"] == "slower" and o["decided"] is True, o
    assert abs(o["ratio"] - 1.1) < 1e-12
    assert abs(o["ratio_low"] - lo) < 1e-9 and abs(o["ratio_high"] - hi) < 1e-9, (o, lo, hi)
    assert o["level"] >= 0.9, o
    assert abs(o["p"] - p) < 1e-12 and o["p_exact"] is True, (o["p"], p)
    assert o["point_before"].endswith("--variant candidate --dir d")
    assert o["point_after"].endswith("--variant nosplit --dir d")
assert summ["before_select"] == "variant=candidate" and summ["paired_on_all_but"] == "variant"
assert summ["slower"] == 2 and summ["exit"] == 1
print("interval %.6f-%.6f, p %.6f (SciPy %.6f)" % (lo, hi, pts[0]["p"], p))
PY
then ok "--json: the interval matches every arrangement counted, p matches SciPy's exact test"
else not_ok "--json against Python and SciPy"; diag "$(cat "$OUT_FILE")"; fi

# --- records written here: dates, devices, boxes, hostile names, long numbers ---
python3 - <<'PY'
import json
def rec(run, start, gpu, box, cand, slow, variant="a", extra=()):
    res = {"kind": "var", "shape": "q_a", "num_workers": 64,
           "candidate": {"slowCTA_us": slow}, "slowCTA_ratio_base_over_cand": 130 / slow,
           "verdict": "PASS_GATE"}
    return {"schema": 1, "run_id": run, "seq": 0, "box": box, "gpu_name": gpu, "device": "cuda",
            "start": start, "gate_args": ["--kind", "var", "--variant", variant, *extra],
            "verdict": "PASS_GATE", "point": {"kind": "var", "shape": "q_a", "num_workers": 64,
            "candidate": cand}, "result": res}
L = []
for i, s in enumerate([100, 101, 99, 100.5, 99.5]):
    L.append(rec("aaaa000000000001", "2026-12-01T10:00:0%dZ" % i, "NVIDIA H100", "h100-a", "k1", s))
for i, s in enumerate([80, 81, 79, 80.5, 79.5]):
    L.append(rec("bbbb000000000002", "2026-12-03T10:00:0%dZ" % i, "NVIDIA H200", "h200-a", "k1", s))
# a device name a spreadsheet would run, and a number with a long binary tail
for i, s in enumerate([28709.151, 28709.152, 28709.150]):
    L.append(rec("cccc000000000003", "2026-12-04T10:00:0%dZ" % i, "=HYPERLINK(\"http://x\")", "h200-a",
                 "k1", s))
for i, s in enumerate([28709.151, 28709.152, 28709.150]):
    L.append(rec("dddd000000000004", "2026-12-04T11:00:0%dZ" % i, "-2+3", "h200-a", "k1", s))
open("w.jsonl", "w").write("".join(json.dumps(r) + "\n" for r in L))
PY
expect_rc 0 "compare two runs of one store by run id prefix (device differs: --pair device)" \
  bg results compare w.jsonl --before run=aaaa --after run=bbbb --pair device
has "$OUT_FILE" '^var q_a nw64 k1 --variant a +100\.00 ± 0\.8% +5 +80\.00 ± 1\.0% +5 +-20\.00% .* faster$' \
  "the H200 run is 20% faster"
expect_rc 0 "since=/until= pick the days, device= a GPU by part of its name" \
  bg results compare w.jsonl --before until=2026-12-01,device=h100 --after since=2026-12-02T00,until=2026-12-03,device=H200
has "$OUT_FILE" 'paired on everything but device' "device is the key the selectors differ in"
has "$OUT_FILE" ' faster$' "the same comparison by dates"
expect_rc 0 "box= selects too" bg results compare w.jsonl --before box=h100-a --after box=h200-a,run=bbbb --pair device
has "$OUT_FILE" ' faster$' "by box"
expect_rc 0 "--csv" bg results compare w.jsonl --before run=cccc --after run=dddd --csv
if python3 - "$OUT_FILE" <<'PY'
import csv, sys
raw = open(sys.argv[1], newline="").read()
rows = list(csv.reader(raw.splitlines()))
head, body = rows[0], rows[1:]
assert head[:4] == ["point", "median_before_us", "cv_before_pct", "n_before"], head
assert len(body) == 2, body                                       # the devices differ
r, s = dict(zip(head, body[0])), dict(zip(head, body[1]))
assert r["point"].startswith("'=HYPERLINK"), r["point"]          # neutralised
assert s["point"].startswith("'-2+3 var"), s["point"]
assert r["median_before_us"] == "28709.151" and r["n_before"] == "3", r   # as measured
assert s["median_after_us"] == "28709.151" and s["n_after"] == "3", s
assert r["call"] == "only_before" and s["call"] == "only_after", (r, s)
assert "000000000" not in raw, raw
PY
then ok "--csv: Python's csv reads it; the formula cell starts with ', the medians are 28709.151"
else not_ok "--csv"; diag "$(cat "$OUT_FILE")"; fi
expect_rc 0 "results export: numbers as written, formula cells neutralised" bg results export w.jsonl --select run=cccc
has "$OUT_FILE" ',"'"'"'=HYPERLINK\(' "the device cell starts with ' (inside its quotes)"
has "$OUT_FILE" ',28709\.151,' "28709.151, not 28709.151000000002"
hasnt "$OUT_FILE" '28709\.15[0-2]0000' "no binary tail"

# Spans no clock measures (1e308 us) are no samples: a pair with none on either side is
# ambiguous, never "only in before" and never a number; an upper-case gate flag selects.
python3 - <<'PY'
import json
def rec(run, slow):
    return {"schema": 1, "run_id": run, "box": "b", "gpu_name": "G\u001b[31m", "verdict": "PASS_GATE",
            "gate_args": ["--kind", "k", "--M", "4096"], "point": {"kind": "k", "shape": "s", "num_workers": 8},
            "result": {"candidate": {"slowCTA_us": slow}}}
open("huge.jsonl", "w").write("".join(json.dumps(rec(r, s)) + "\n" for r in ("aa", "bb")
                                     for s in (1e308, 1.7e308, 1.5e308)))
PY
expect_rc 0 "impossible spans on both sides" bg results compare huge.jsonl --before run=aa,M=4096 --after run=bb
has "$OUT_FILE" '^G\?\[31m k s nw8 - --M 4096 +- +0 +- +0 +- +- +- +ambiguous$' \
  "no sample either side: ambiguous, the escape byte shown as ?"
has "$OUT_FILE" 'skipped: 3 before, 3 after' "the records are counted as skipped"
hasnt "$OUT_FILE" 'inf|nan' "no inf or nan printed"

# --- bad selectors and operands name what is wrong ---
bad() {
  local desc=$1 want=$2; shift 2
  expect_rc 2 "$desc" bg results "$@"
  has "$ERR_FILE" "$want" "... the error names it"
}
bad "a date that is not one" "--before: selector 'since=yesterday': not an ISO 8601 date" \
  compare w.jsonl --before since=yesterday --after run=bbbb
bad "a month 13" "selector 'until=2026-13-01'" compare w.jsonl --before until=2026-13-01 --after run=bbbb
bad "a run id that is not hex" "--after: selector 'run=XYZ': a run id is lowercase hex" \
  compare w.jsonl --before run=aaaa --after run=XYZ
bad "a term without =" "selector 'nokey': not KEY=VALUE" compare w.jsonl --before nokey --after run=bbbb
bad "an empty value" "selector 'variant=': an empty value" compare w.jsonl --before variant= --after run=bbbb
bad "a selector that matches nothing" "--after 'run=eeee' matches no record of w\.jsonl" \
  compare w.jsonl --before run=aaaa --after run=eeee
bad "--pair a=b=c" "--pair 'a=b=c'" compare w.jsonl --before run=aaaa --after run=bbbb --pair a=b=c
bad "--pair with a bad key" "--pair 'Bad Key'" compare w.jsonl --before run=aaaa --after run=bbbb --pair 'Bad Key'
bad "two points of a side pairing one of the other" "both pair with" \
  compare r.jsonl --before variant=candidate --after variant=candidate,num-workers=8 --pair num-workers
bad "one file and no selectors" "or one store and --before/--after" compare w.jsonl
bad "--select on compare" "--select is for results show" compare w.jsonl --select run=aaaa --before run=aaaa
bad "--before on show" "--before is for results compare" show w.jsonl --before run=aaaa
bad "--by something else" "--by 'run'" show w.jsonl --by run
bad "--select with a bad date" "--select: selector 'since=2026-12-1'" show w.jsonl --select since=2026-12-1

# --- results show --select and --by point ---
expect_rc 0 "show --select variant=nosplit" bg results show r.jsonl --select variant=nosplit
[ "$(grep -c ' PASS_GATE ' "$OUT_FILE")" = 10 ] && ok "10 records of one variant" || not_ok "$(cat "$OUT_FILE")"
has "$OUT_FILE" 'VERDICT +RUN$' "the run id column"
expect_rc 0 "show --by point" bg results show r.jsonl --by point
has "$OUT_FILE" '^POINT +N +SLOWCTA_US +RATIO +INTERVAL +VERDICT +RUN$' "the header"
has "$OUT_FILE" '^vbox var q_b nw8 - --variant candidate --dir d +5 +100\.000 ± 0\.8% +1\.300 +\[1\.287, 1\.313\] +PASS_GATE +[0-9a-f]{16}$' \
  "a point: n, median ± CV, ratio with its interval, verdict and run id"
[ "$(grep -c '^vbox ' "$OUT_FILE")" = 4 ] && ok "4 points" || not_ok "points: $(cat "$OUT_FILE")"
expect_rc 0 "show --by point --json --select num-workers=16" bg results show r.jsonl --by point --json --select num-workers=16
pycheck "--by point --json: one object a point, as Python's json reads it" '
import json, sys
o = [json.loads(l) for l in open(sys.argv[1])]
assert len(o) == 2, o
assert all(x["n"] == 5 and x["fields"]["num-workers"] == "16" and len(x["runs"]) == 1 for x in o), o
assert {x["verdict"] for x in o} == {"PASS_GATE"}, o
' "$OUT_FILE"

# --- report for a sweep that is no campaign ---
command -v rsvg-convert >/dev/null 2>&1 || { finish; exit; }
expect_rc 0 "report on the sweep's results file" bg report r.jsonl --out rep
has rep/r.report.md '^# Results r$' "titled by the file, not a campaign"
has rep/r.report.md '^\| 8 \| \*\*candidate --variant candidate\*\* \| \*\*100\.00\*\* ' "the cells named by what sets them apart"
has rep/r.report.md '20 records of runs \(not of a campaign\)' "the note says they are records of runs"
expect_rc 0 "report --select variant=nosplit" bg report r.jsonl --select variant=nosplit --out rep2
hasnt rep2/r.report.md 'variant candidate' "only the selected variant"
expect_rc 1 "report --select matching nothing" bg report r.jsonl --select variant=zzz
has "$ERR_FILE" "matches --select 'variant=zzz'" "says so"
expect_rc 2 "report --select with a bad selector" bg report r.jsonl --select since=x
has "$ERR_FILE" "report: --select: selector 'since=x'" "names it"

# A campaign and records of runs in one file: ratios of 4x and 6x, a NOISY cell (its
# interval straddles the bar) and a provisional best (fast6, not measurably faster than
# close).
python3 - <<'PY'
import json
def rec(cand, nw, slow, camp=True, gpu="NVIDIA H200"):
    res = {"kind": "var", "shape": "kv", "num_workers": nw, "device": "cuda",
           "candidate": {"slowCTA_us": slow, "wall_us": slow, "sumCTA_us": slow * nw, "cos": 0.9999},
           "verdict": "PASS_GATE"}
    r = {"schema": 1, "run_id": "ffff000000000001", "box": "b1", "gpus": "0", "gpu_name": gpu,
         "device": "cuda", "start": "2026-12-03T14:00:00.000Z", "end": "2026-12-03T15:00:00.000Z",
         "verdict": "PASS_GATE", "result": res,
         "point": {"kind": "var", "shape": "kv", "num_workers": nw, "candidate": cand}}
    if camp:
        r["campaign"] = {"name": "mix", "shape": "kv", "num_workers": nw, "candidate": cand,
                         "final": True, "bar": 1.2, "max_cv": 2.0}
    return r
L = []
for nw in (8, 16):
    for k in (0.999, 1.0, 1.001):
        L.append(rec("baseline", nw, 60 * k))
        L.append(rec("fast4", nw, 15 * k))       # ratio 4
        L.append(rec("fast6", nw, 10 * k))       # ratio 6
    for k in (0.8, 1.0, 1.2):
        L.append(rec("wobbly", nw, 50 * k))      # ratio 1.2 at the bar, CV 20%: NOISY
    for k in (0.7, 1.0, 1.3):
        L.append(rec("close", nw, 10.2 * k))     # as fast as fast6 for all we know
L.append(rec("baseline", 32, 61, camp=False))    # a run's record beside the campaign
open("mix.jsonl", "w").write("".join(json.dumps(r) + "\n" for r in L))
PY
expect_rc 0 "report on a campaign mixed with a run's records" bg report mix.jsonl --out mixrep
has mixrep/mix.report.md '^\| 32 \| \*\*baseline\*\*' "the run's record is a point of its own"
for f in mixrep/*.svg rep/*.svg; do
  if python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$f" &&
    rsvg-convert -o "${f%.svg}.png" "$f"; then ok "$f is XML and renders"; else not_ok "$f"; fi
  has "$f" 'id="subtitle"[^>]*>NVIDIA H200, 2026-12-03 14:00 to 2026-12-03 15:00 UTC<|id="subtitle"[^>]*>cpu, 20[0-9-]+ [0-9:]+' \
    "$f names the device and the date"
done
has mixrep/mix.ratio.svg 'class="axis-title"[^>]*>num_workers<' "the heat map's x axis has a title"
has mixrep/mix.ratio.svg 'class="axis-title"[^>]*>shape<' "... and its y axis"
has mixrep/mix.slowcta.kv.svg '>num_workers \(the sweep set\)<' "the slowCTA plot's x axis title"
has mixrep/mix.slowcta.kv.svg '>slowCTA \(us.*median and min-max<' "... and its y axis title"
# the heat map's cells by their rects: panels fast4, fast6, wobbly, close; one row;
# columns 8 16 32
cellrgb() {
  python3 - "$1" "$2" <<'PY'
import re, sys
svg = open(sys.argv[1]).read()
m = re.search(r'id="%s" x="([0-9.]+)" y="([0-9.]+)"' % sys.argv[2], svg)
print(int(float(m.group(1))) + 5, int(float(m.group(2))) + 5)
PY
}
read -r x4 y4 < <(cellrgb mixrep/mix.ratio.svg cell-0-0-0)
read -r x6 y6 < <(cellrgb mixrep/mix.ratio.svg cell-1-0-0)
check "4x is green" $PNG family mixrep/mix.ratio.png "$x4" "$y4" green
check "6x is green" $PNG family mixrep/mix.ratio.png "$x6" "$y6" green
check "4x and 6x look different (no saturation): colour distance above 40" \
  $PNG differ mixrep/mix.ratio.png "$x4" "$y4" "$x6" "$y6" 40
has mixrep/mix.ratio.svg '>4\.00<' "the 4x cell says 4.00"
has mixrep/mix.ratio.svg '>1\.20~<' "the NOISY cell is marked ~"
has mixrep/mix.report.md '^Best per point: 8 fast6 \(provisional\), 16 fast6 \(provisional\), 32 baseline$' \
  "fast6 is the provisional best"
# a provisional best's cell has a dashed black border; a decided one none
read -r px py < <(cellrgb mixrep/mix.ratio.svg cell-1-0-0)
check "the provisional best's heat-map cell has a black (dashed) border" \
  $PNG count mixrep/mix.ratio.png $((px - 6)) $((py - 6)) $((px + 52)) $((py - 3)) '#000000' 12
read -r qx qy < <(cellrgb mixrep/mix.ratio.svg cell-0-0-0)
check "fast4's cell (not a best) has none" \
  sh -c "! $PNG count mixrep/mix.ratio.png $((qx - 6)) $((qy - 6)) $((qx + 52)) $((qy - 3)) '#000000' 1"
has mixrep/mix.ratio.svg '>dashed border: provisional best<' "the heat map's legend says so"
has mixrep/mix.slowcta.kv.svg 'stroke-dasharray="3,2" class="provisional"' "the slowCTA plot rings the provisional best, dashed"
has mixrep/mix.slowcta.kv.svg '>provisional best<' "... and its legend says so"
# NOISY points are hollow in the slowCTA plot: white inside a ring of the candidate's colour
python3 - mixrep/mix.slowcta.kv.svg >noisy.xy <<'PY'
import re, sys
m = re.search(r'<circle cx="([0-9.]+)" cy="([0-9.]+)" r="5" fill="#ffffff" stroke="(#[0-9a-f]+)"[^>]*class="noisy"', open(sys.argv[1]).read())
print(int(float(m.group(1))), int(float(m.group(2))), m.group(3))
PY
read -r nx ny ncol <noisy.xy
check "a NOISY point is drawn hollow (white at its centre)" $PNG count mixrep/mix.slowcta.kv.png "$nx" "$ny" $((nx + 1)) $((ny + 1)) '#ffffff' 1
check "... inside a ring of its colour" $PNG count mixrep/mix.slowcta.kv.png $((nx - 6)) $((ny - 6)) $((nx + 7)) $((ny + 7)) "$ncol" 8
has mixrep/mix.slowcta.kv.svg '>NOISY \(undecided\)<' "the legend says what hollow means"
finish
