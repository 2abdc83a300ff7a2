#!/usr/bin/env bash
# run --no-baseline (and the box key no_baseline = yes) over real sshd: a gate that
# reports only the candidate, on a box whose allowlist has no --baseline, is run alone
# and its valid, correct result is MEASURED (exit 0): recorded, summarised under
# --repeat, said in --json. A low cos stays INVALID; a gate that reports both sides
# keeps PASS_GATE or BELOW_BAR. Python's json and statistics are the reference.
source "$(dirname "$0")/lib.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts

hosts_up 1
GATES=$BG_ROOT/tests/integration/gates
cp "$GATES/cand_gate.sh" "$BG_HOST_1_ROOT/repo/cand_gate.sh"
cp "$GATES/seq_gate.sh" "$BG_HOST_1_ROOT/repo/seq_gate.sh"
# odd.sh --m MODE: candidate-only lines that are not a clean, correct candidate.
cat >"$BG_HOST_1_ROOT/repo/odd.sh" <<'EOF2'
#!/bin/sh
c='"candidate":{"slowCTA_us":100,"wall_us":101,"sumCTA_us":100,"cos":0.9999,"status":"PASS"}'
case $2 in
  crash) echo "FAITHFUL_RESULT {$c,\"verdict\":\"PASS_GATE\"}"; exit 3 ;;
  statfail) echo "FAITHFUL_RESULT {$(echo "$c" | sed 's/PASS/FAIL/'),\"verdict\":\"PASS_GATE\"}" ;;
  claims) echo "FAITHFUL_RESULT {$c,\"verdict\":\"MEASURED\"}" ;;
  statlow) echo "FAITHFUL_RESULT {$(echo "$c" | sed 's/PASS/pass/'),\"verdict\":\"PASS_GATE\"}" ;;
  statempty) echo "FAITHFUL_RESULT {$(echo "$c" | sed 's/"PASS"/""/'),\"verdict\":\"PASS_GATE\"}" ;;
  below) echo "FAITHFUL_RESULT {$c,\"bar\":1.5,\"verdict\":\"BELOW_BAR\"}"; exit 1 ;;
  basefail) b=$(echo "$c" | sed 's/candidate/baseline_in_tree/; s/PASS/FAIL/; s/100,"wall_us":101,"sumCTA_us":100/130,"wall_us":131,"sumCTA_us":130/')
     echo "FAITHFUL_RESULT {$c,$b,\"verdict\":\"PASS_GATE\"}" ;;
  candfail) b=$(echo "$c" | sed 's/candidate/baseline_in_tree/; s/100,"wall_us":101,"sumCTA_us":100/130,"wall_us":131,"sumCTA_us":130/')
     echo "FAITHFUL_RESULT {$(echo "$c" | sed 's/PASS/FAIL/'),$b,\"verdict\":\"PASS_GATE\"}" ;;
esac
EOF2
chmod +x "$BG_HOST_1_ROOT/repo/odd.sh"
INI=$BG_TMP/nb.ini
cat "$BG_CONFIG" >"$INI"
cat >>"$INI" <<'EOF2'

[box nb]
host = h1
repo = /root/repo
gate = cand_gate.sh
require_gpu = no
allow = --values --counter --cos --stated --num-workers

[box nbkey]
host = h1
repo = /root/repo
gate = cand_gate.sh
require_gpu = no
no_baseline = yes
allow = --values --counter --cos --stated

[box odd]
host = h1
repo = /root/repo
gate = odd.sh
require_gpu = no
allow = --m --baseline

[box both]
host = h1
repo = /root/repo
gate = seq_gate.sh
require_gpu = no
allow = --values --counter --base
EOF2
bg() { "$BOXGATE" --config "$INI" "$@"; }
R=$BG_TMP/r.jsonl

# (a) Without --no-baseline the candidate-only gate cannot be run on this box: its
# baseline run (the same arguments plus --baseline) is refused by the allowlist.
expect_rc 2 "without --no-baseline: the baseline run cannot be made (exit 2)" \
  bg run nb --results "$BG_TMP/a.jsonl" -- --values 100
has "$ERR_FILE" "reports only the candidate, and its baseline run .* cannot be made" "the refusal says why"

# (b) --no-baseline: one run, MEASURED, exit 0, no --baseline run, one record.
expect_rc 0 "--no-baseline: the candidate alone is MEASURED (exit 0)" \
  bg run nb --no-baseline --results "$R" -- --values 100
has "$OUT_FILE" "^MEASURED  slowCTA 100\.000 us  wall 101\.000 us  sumCTA 10000\.000 us  cos 0\.99990.*no baseline, no ratio" \
  "the result line gives the candidate's timings, no ratio"
hasnt "$OUT_FILE" "PASS_GATE|BELOW_BAR|ratio [0-9]" "no bar verdict, no ratio"
pycheck "one record, verdict MEASURED, the candidate's numbers, no role, no --baseline" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 1, r
x = r[0]
assert x["verdict"] == "MEASURED", x["verdict"]
assert x["exit"] == 0 and x.get("why") is None, x
assert x["result"]["candidate"]["slowCTA_us"] == 100, x["result"]
assert "baseline_in_tree" not in x["result"]
assert x.get("role") is None, x.get("role")
assert "--baseline" not in x["command"] and "--baseline" not in x["gate_args"], x["command"]
' "$R"

# (c) --repeat 3: the point's medians, spread and CV, verdict MEASURED.
rm -f "$BG_HOST_1_ROOT/repo/cnt"
: >"$R"
expect_rc 0 "--no-baseline --repeat 3: MEASURED (exit 0)" \
  bg run nb --no-baseline --repeat 3 --max-cv 50 --results "$R" -- --counter cnt --values 100,110,90
has "$OUT_FILE" "^MEASURED  median of 3: slowCTA 100\.000 us \(90\.000-110\.000, CV [0-9.]+%\)  wall 101\.000 us" \
  "the point line gives the median, the spread and the CV"
has "$OUT_FILE" "^  MEASURED: the candidate alone \(no baseline\)" "and says the candidate was measured alone"
hasnt "$OUT_FILE" "ratio [0-9]|NOISY|measured apart" "no ratio, no NOISY, no apart path"
pycheck "3 records, all MEASURED, one run_id, repeat i 0..2, no baseline run" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 3, len(r)
assert [x["verdict"] for x in r] == ["MEASURED"] * 3, [x["verdict"] for x in r]
assert len({x["run_id"] for x in r}) == 1
assert [x["repeat"]["i"] for x in r] == [0, 1, 2]
assert [x["result"]["candidate"]["slowCTA_us"] for x in r] == [100, 110, 90]
assert all(x.get("role") is None and "--baseline" not in x["command"] for x in r)
' "$R"

# (d) --json: the result events and the end events say MEASURED; the point event too.
rm -f "$BG_HOST_1_ROOT/repo/cnt"
expect_rc 0 "--no-baseline --repeat 3 --json: exit 0" \
  bg run nb --no-baseline --repeat 3 --max-cv 50 --json --no-results -- --counter cnt --values 100,110,90
cp "$OUT_FILE" "$BG_TMP/j.out"
pycheck "--json: result and end events MEASURED, the point MEASURED with statistics.median" '
import json, statistics as s, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
res = [e for e in ev if e.get("event") == "result"]
end = [e for e in ev if e.get("event") == "end"]
pts = [e for e in ev if e.get("event") == "point"]
assert len(res) == 3 and len(end) == 3 and len(pts) == 1, (len(res), len(end), len(pts))
assert all(e["verdict"] == "MEASURED" and e["line_verdict"] == "MEASURED" for e in res), res
assert all(e["verdict"] == "MEASURED" and e["exit"] == 0 for e in end), end
p = pts[0]
assert p["verdict"] == "MEASURED" and p["verdict_on_medians"] == "MEASURED" and p["exit"] == 0, p
assert p["slowCTA_us"]["median"] == s.median([100, 110, 90]), p["slowCTA_us"]
assert "ratio" not in p and p["decision"] is None and p["noisy"] is False, p
' "$BG_TMP/j.out"

# (e) Correctness is still judged: a cos below 0.99 is INVALID, whether the gate says so
# or claims PASS_GATE.
expect_rc 125 "--no-baseline, cos 0.5 (the gate says INVALID): INVALID (exit 125)" \
  bg run nb --no-baseline --no-results -- --values 100 --cos 0.5
hasnt "$OUT_FILE" "MEASURED" "not MEASURED"
expect_rc 125 "--no-baseline, cos 0.5 stated PASS_GATE: INVALID (exit 125)" \
  bg run nb --no-baseline --results "$BG_TMP/e.jsonl" -- --values 100 --cos 0.5 --stated PASS_GATE
has "$OUT_FILE" "^INVALID: .*cos" "the refusal names the cos"
pycheck "its record says INVALID" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 1 and r[0]["verdict"] == "INVALID", r
' "$BG_TMP/e.jsonl"
expect_rc 125 "--no-baseline, a gate stating BELOW_BAR on its own numbers' PASS: INVALID (it disagrees)" \
  bg run nb --no-baseline --no-results -- --values 100 --stated BELOW_BAR

expect_rc 125 "--no-baseline, a candidate line then a crash (exit 3): INVALID (exit 125)" \
  bg run odd --no-baseline --no-results -- --m crash
has "$ERR_FILE" "a result needs a clean exit" "the crash is named"
expect_rc 125 "--no-baseline, a gate that states MEASURED itself: INVALID (the verdict is boxgate's)" \
  bg run odd --no-baseline --no-results -- --m claims
has "$OUT_FILE" "^INVALID: .*unknown verdict 'MEASURED'" "a gate cannot claim MEASURED (its result line, on stdout)"
# A candidate that says it failed is no pass and no measurement: INVALID (exit 125), as a
# low cos is, with or without --no-baseline, and so is one whose status is not exactly PASS.
expect_rc 125 "--no-baseline, candidate status FAIL stated PASS_GATE: INVALID (exit 125)" \
  bg run odd --no-baseline --results "$BG_TMP/sf.jsonl" -- --m statfail
hasnt "$OUT_FILE" "MEASURED|PASS_GATE  slowCTA" "a candidate saying status FAIL is neither MEASURED nor PASS_GATE"
has "$OUT_FILE" "candidate status 'FAIL' is not PASS" "the refusal names the candidate's status"
pycheck "its record says INVALID, exit 125" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 1 and r[0]["verdict"] == "INVALID" and r[0]["exit"] == 125, r
' "$BG_TMP/sf.jsonl"
expect_rc 125 "without --no-baseline, candidate status FAIL: INVALID too" \
  bg run odd --no-results -- --m statfail
expect_rc 125 "--no-baseline, candidate status 'pass' (not PASS): INVALID" \
  bg run odd --no-baseline --no-results -- --m statlow
expect_rc 125 "--no-baseline, candidate status '' : INVALID" \
  bg run odd --no-baseline --no-results -- --m statempty
expect_rc 125 "both sides, the candidate FAIL with a good ratio: INVALID, not PASS_GATE" \
  bg run odd --no-results -- --m candfail
has "$OUT_FILE" "candidate status 'FAIL'" "named"
expect_rc 125 "both sides, the baseline FAIL: INVALID, not PASS_GATE" \
  bg run odd --no-results -- --m basefail
has "$OUT_FILE" "baseline_in_tree status 'FAIL'" "named"
# A gate that itself calls its candidate BELOW_BAR (against its own bar) is not MEASURED:
# the gate's failing verdict stands, whatever --bar says.
expect_rc 1 "--no-baseline, the gate says BELOW_BAR (its bar 1.5): BELOW_BAR (exit 1), not MEASURED" \
  bg run odd --no-baseline --results "$BG_TMP/bb.jsonl" -- --m below
hasnt "$OUT_FILE" "MEASURED" "not MEASURED"
has "$OUT_FILE" "^BELOW_BAR" "BELOW_BAR said"
expect_rc 1 "--no-baseline --bar 1, the gate says BELOW_BAR: still BELOW_BAR (exit 1)" \
  bg run odd --no-baseline --bar 1 --no-results -- --m below
hasnt "$OUT_FILE" "MEASURED|PASS_GATE  slowCTA" "neither MEASURED nor PASS_GATE"
pycheck "its record says BELOW_BAR" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 1 and r[0]["verdict"] == "BELOW_BAR" and r[0]["exit"] == 1, r
' "$BG_TMP/bb.jsonl"

# (f) --bar does not apply to the candidate alone.
expect_rc 0 "--no-baseline --bar 2: still MEASURED (no ratio to hold against a bar)" \
  bg run nb --no-baseline --bar 2 --no-results -- --values 100
has "$OUT_FILE" "^MEASURED  slowCTA 100\.000 us" "MEASURED line"

# (g) A gate that reports both sides keeps its verdict under --no-baseline.
expect_rc 0 "--no-baseline, a gate with a baseline side: PASS_GATE (exit 0)" \
  bg run both --no-baseline --results "$BG_TMP/g.jsonl" -- --values 100 --base 130
has "$OUT_FILE" "^PASS_GATE  slowCTA 100\.000 us \(baseline 130\.000 us, ratio 1\.300\)" "PASS_GATE with its ratio"
expect_rc 1 "--no-baseline, a gate with a baseline side under --bar 2: BELOW_BAR (exit 1)" \
  bg run both --no-baseline --bar 2 --results "$BG_TMP/g.jsonl" -- --values 100 --base 130
has "$OUT_FILE" "^BELOW_BAR" "BELOW_BAR"
pycheck "their records say PASS_GATE, BELOW_BAR" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert [x["verdict"] for x in r] == ["PASS_GATE", "BELOW_BAR"], [x["verdict"] for x in r]
' "$BG_TMP/g.jsonl"
rm -f "$BG_HOST_1_ROOT/repo/cnt"
expect_rc 0 "--no-baseline --repeat 3 on a gate with a baseline side: its ratio decides (PASS_GATE)" \
  bg run both --no-baseline --repeat 3 --no-results -- --counter cnt --values 100,101,99 --base 200
has "$OUT_FILE" "^PASS_GATE  median of 3: .* ratio " "the point keeps its ratio and verdict"

# (h) The box key: no_baseline = yes runs the candidate alone without the flag.
expect_rc 0 "no_baseline = yes: MEASURED without --no-baseline (exit 0)" \
  bg run nbkey --no-results -- --values 100
has "$OUT_FILE" "^MEASURED  slowCTA 100\.000 us" "MEASURED line"
expect_rc 0 "config check shows the effective key" bg config check
pycheck "no_baseline = yes for nbkey only, no (the default) for nb" '
import sys
box, seen = None, {}
for l in open(sys.argv[1]):
    l = l.strip()
    if l.startswith("[box "):
        box = l[5:-1]
    elif l.startswith("no_baseline = "):
        seen[box] = l.split(" = ")[1]
assert seen.get("nbkey") == "yes" and seen.get("nb") == "no" and seen.get("both") == "no", seen
' "$OUT_FILE"

# (i) A bad value is an error naming FILE:LINE.
BAD=$BG_TMP/bad.ini
cat "$INI" >"$BAD"
printf '\n[box badkey]\nhost = h1\nno_baseline = maybe\n' >>"$BAD"
line=$(grep -n '^no_baseline = maybe' "$BAD" | cut -d: -f1)
expect_rc 2 "no_baseline = maybe: a configuration error (exit 2)" \
  "$BOXGATE" --config "$BAD" run badkey --no-baseline --no-results -- --values 100
has "$ERR_FILE" "$BAD:$line: no_baseline must be yes or no, got 'maybe'" "the error names FILE:LINE"

# (j) Readers of the results file take a MEASURED record as a measured candidate.
: >"$R"
bg run nb --no-baseline --results "$R" -- --values 100 >/dev/null 2>&1
bg run nb --no-baseline --results "$R" -- --values 120 >/dev/null 2>&1
expect_rc 0 "results show reads MEASURED records" bg results show "$R"
has "$OUT_FILE" "MEASURED" "the verdict column says MEASURED"
expect_rc 0 "results --by point reads them" bg results show "$R" --by point
hasnt "$OUT_FILE" "INVALID|PASS_GATE" "not counted as INVALID or PASS_GATE"
# (k) A campaign with no baseline candidate runs each candidate alone: a result that
# reports only the candidate is recorded MEASURED, and its cells are MEASURED (never
# BELOW_BAR, never the best of their point); a candidate the gate itself calls BELOW_BAR
# stays BELOW_BAR. The summary, report and --json say so; brief asks for a baseline.
# alone.sh: reports only the candidate, slowCTA 1000 / --speed (x 8 / num_workers); --below
# makes it call its candidate BELOW_BAR against its own bar 1.5 (exit 1, as the contract says).
cat >"$BG_HOST_1_ROOT/repo/alone.sh" <<'EOF2'
#!/bin/sh
speed=1 nw=8 v=PASS_GATE rc=0 bar=
while [ $# -gt 0 ]; do
  case $1 in
    --speed) speed=$2; shift ;; --num-workers) nw=$2; shift ;;
    --below) v=BELOW_BAR rc=1 bar='"bar":1.5,' ;;
  esac
  shift
done
awk -v s="$speed" -v nw="$nw" -v v="$v" -v bar="$bar" 'BEGIN { t = 1000 / s * 8 / nw
  printf "FAITHFUL_RESULT {\"kind\":\"fake\",\"shape\":\"q_b\",\"num_workers\":%d,\"candidate\":{\"slowCTA_us\":%.3f,\"wall_us\":%.3f,\"sumCTA_us\":%.3f,\"cos\":0.9999,\"status\":\"PASS\"},%s\"verdict\":\"%s\",\"device\":\"cpu\"}\n", nw, t, t + 1, t * nw, bar, v }'
exit $rc
EOF2
chmod +x "$BG_HOST_1_ROOT/repo/alone.sh"
printf '\n[box ca]\nhost = h1\nrepo = /root/repo\ngate = alone.sh\nrequire_gpu = no\nallow = --kind --shape --configs --num-workers --speed --below --baseline\n\n[pool pc]\nslots = ca\n' >>"$INI"
W=$BG_TMP/camp
mkdir -p "$W"
cat >"$W/alone.ini" <<'EOF2'
[campaign alone]
pool = pc
gate_args = --kind fake
shapes = q_b
num_workers = 8 64
repeats = 2
candidates = fast same below
candidate.fast = --speed 1.25
candidate.same = --speed 1
candidate.below = --speed 2 --below
EOF2
(cd "$W" && expect_rc 0 "a campaign with no baseline candidate runs every job" \
  bg campaign alone.ini --plain)
cp "$OUT_FILE" "$BG_TMP/camp.out"
pycheck "records: fast and same MEASURED, below BELOW_BAR (its gate says so), none PASS_GATE" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 12, len(r)
by = {}
for x in r:
    by.setdefault(x["campaign"]["candidate"], set()).add(x["verdict"])
assert by == {"fast": {"MEASURED"}, "same": {"MEASURED"}, "below": {"BELOW_BAR"}}, by
' "$W/alone.results.jsonl"
has "$BG_TMP/camp.out" "^ +8 +fast .* MEASURED +2$" "the summary's fast cell at 8 says MEASURED"
has "$BG_TMP/camp.out" "^ +64 +same .* MEASURED +2$" "the same cell at 64 says MEASURED"
hasnt "$BG_TMP/camp.out" "(fast|same) .*BELOW_BAR" "no MEASURED cell shows BELOW_BAR"
hasnt "$BG_TMP/camp.out" "^ +[0-9]+ +[a-z]+ +\*" "no cell is marked best, not even the fastest (its gate says BELOW_BAR, no baseline ran)"
has "$BG_TMP/camp.out" "q_b: none best at 8-64" "no winner at any worker count"
expect_rc 0 "report --json reads the campaign" bg report "$W/alone.results.jsonl" --json --out "$W/rep"
cp "$OUT_FILE" "$BG_TMP/rep.json"
pycheck "report --json: MEASURED cells, no ratio, no best" '
import json, sys
doc = json.load(open(sys.argv[1]))
pts = doc["points"] if "points" in doc else doc
cells = {}
for p in pts:
    assert p["best"] is None, p
    for c in p["cells"]:
        cells[(p["num_workers"], c["candidate"])] = c
for nw in (8, 64):
    for k in ("fast", "same"):
        c = cells[(nw, k)]
        assert c["verdict"] == "MEASURED" and c["ratio"] is None and c["best"] is False, c
    assert cells[(nw, "below")]["verdict"] == "BELOW_BAR", cells[(nw, "below")]
' "$BG_TMP/rep.json"
expect_rc 0 "report writes the markdown and the plots" bg report "$W/alone.results.jsonl" --out "$W/rep"
has "$W/rep/alone.results.report.md" "\| fast \| [0-9.]+ \|.*\| MEASURED \| 2 \|" "the report's fast row says MEASURED"
hasnt "$W/rep/alone.results.report.md" "\*\*(fast|same)\*\*" "and is not bold (best)"
has "$W/rep/alone.results.ratio.svg" ">MEAS<" "the heat map labels the cell MEAS, not INV"
hasnt "$W/rep/alone.results.ratio.svg" "(fast|same): (BELOW_BAR|INVALID)" "nor calls it BELOW_BAR or INVALID"
expect_rc 1 "brief: no baseline measurement, a baseline is asked for" \
  bg brief "$W/alone.results.jsonl" --shape q_b
has "$ERR_FILE" "no baseline measurement" "it says why"
finish
