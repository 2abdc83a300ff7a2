#!/usr/bin/env bash
# run --repeat N and --num-workers sweeps on local boxes: a fake gate with known
# numbers (seq_gate.sh takes its candidate slowCTA from a list by invocation) gives
# known medians and CVs, a noisy one is NOISY and never passes, every invocation is
# its own record, bad worker lists are refused, and the demo gate repeats end to end.
# Python's json and statistics modules are the reference.
source "$(dirname "$0")/lib.sh"
cd "$BG_TMP"
unset BOXGATE_CONFIG
export XDG_CONFIG_HOME=$BG_TMP/xdg XDG_DATA_HOME=$BG_TMP/data HOME=$BG_TMP/home
mkdir -p "$HOME"
SEQ=$BG_ROOT/tests/integration/gates/seq_gate.sh
CONF=$BG_TMP/seq.ini
printf '[box seq]\ntransport = local\ngate = %s\nallow = --values --counter --base --num-workers --cpus --shape --configs --kind --cand-sum-pct\n' "$SEQ" >"$CONF"
R=$BG_TMP/r.jsonl
# seqrun RC DESC RESULTS VALUES [run options] -- [gate args]: a fresh counter each time.
seqrun() {
  local want=$1 desc=$2 res=$3 values=$4; shift 4
  local opts=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  rm -f "$BG_TMP/cnt"
  expect_rc "$want" "$desc" "$BOXGATE" --config "$CONF" run seq --results "$res" "${opts[@]}" -- \
    --values "$values" --counter "$BG_TMP/cnt" "$@"
}
# cv VALUES: the sample CV in percent, one decimal, as Python's statistics computes it.
cv() { python3 -c 'import statistics as s, sys; v = [float(x) for x in sys.argv[1].split(",")]; print("%.1f" % (100 * s.stdev(v) / s.mean(v)))' "$1"; }

# (a) Steady numbers: medians, spread and CV as computed by hand; the verdict on the medians.
seqrun 0 "--repeat 5 with steady numbers passes" "$R" 100,101,99,100,100 --repeat 5
c=$(cv 100,101,99,100,100)
has "$OUT_FILE" "^PASS_GATE  median of 5: slowCTA 100\.000 us \(99\.000-101\.000, CV $c%\)  wall 101\.000 us \(100\.000-102\.000, CV [0-9.]+%\)  sumCTA 10000\.000 us \(9900\.000-10100\.000, CV $c%\)  ratio 1\.300 \(bar 1\.00\)" \
  "the summary: median slowCTA 100, spread 99-101, CV $c%, wall and sumCTA medians, ratio 1.300"
has "$OUT_FILE" "-- CPU twin, 8 workers on 4 cpus, oversubscribed$" "the summary says CPU twin, 8 workers on 4 cpus: oversubscribed"
hasnt "$OUT_FILE" "NOISY" "a steady point is not NOISY"
pycheck "5 records: one run_id, seq 0..4, repeat i 0..4 of n 5, each with its own slowCTA" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 5, len(r)
assert len({x["run_id"] for x in r}) == 1, [x["run_id"] for x in r]
assert [x["seq"] for x in r] == [0, 1, 2, 3, 4], [x["seq"] for x in r]
assert [x["repeat"] for x in r] == [{"i": i, "n": 5} for i in range(5)], [x["repeat"] for x in r]
assert [x["result"]["candidate"]["slowCTA_us"] for x in r] == [100, 101, 99, 100, 100]
assert all(x["verdict"] == "PASS_GATE" and x["exit"] == 0 for x in r)
' "$R"

# (a2) Sloughing on the medians: every run's ratio clears the bar, but two of three
# runs spread work (sumCTA 20% above the baseline's, BELOW_BAR each); the median
# ratio alone would pass: the point is BELOW_BAR, never PASS_GATE.
seqrun 1 "a point whose median sumCTA rose 20% over the baseline's exits 1" "$BG_TMP/slough.jsonl" 100,100,100 --repeat 3 -- --cand-sum-pct 20,20,5
has "$OUT_FILE" "^BELOW_BAR  median of 3: slowCTA 100\.000 us" "the point is BELOW_BAR on its medians"
has "$OUT_FILE" "^  BELOW_BAR: the median sumCTA 12000\.000 us rose more than 10% over the baseline's 10000\.000 us while slowCTA fell" "the line names the sumCTA rise and the baseline's"
hasnt "$OUT_FILE" "^PASS_GATE  median" "a sloughing point never PASS_GATEs"

# (b) A noisy gate: the pair ratios 1.30, 0.87, 1.44, 0.65, 1.30 straddle the bar 1.0:
# NOISY, saying the interval, the lean and the repeats likely to decide it; the CV
# over --max-cv is a warning beside it. Never PASS_GATE, exit 1.
seqrun 1 "a noisy gate (100, 150, 90, 200, 100) exits 1" "$BG_TMP/noisy.jsonl" 100,150,90,200,100 --repeat 5
c=$(cv 100,150,90,200,100)
has "$OUT_FILE" "^NOISY  median of 5: slowCTA 100\.000 us \(90\.000-200\.000, CV $c%\)" "the point is NOISY: median 100, spread 90-200, CV $c%"
has "$OUT_FILE" "^  NOISY: estimated ratio 1\.061, 93\.8% interval 0\.650-1\.444 \(signed-rank, 5 pairs\) straddles the bar 1\.00; leans above the bar; more repeats are unlikely to decide it soon \(over 100\)$" "NOISY says the interval, the lean and the repeats likely to decide it"
has "$OUT_FILE" "^  warning: slowCTA CV $c% > 2\.0% over 5 repeats; more repeats or iterations may steady it$" "the CV over --max-cv is a warning with the figure and the threshold"
hasnt "$OUT_FILE" "^PASS_GATE  median" "a NOISY point never PASS_GATEs"
[ "$(nlines "$BG_TMP/noisy.jsonl")" = 5 ] && ok "the noisy run kept 5 records" || not_ok "noisy: $(nlines "$BG_TMP/noisy.jsonl") records"
seqrun 1 "NOISY in --json too" "$BG_TMP/j.jsonl" 100,150,90,200,100 --repeat 5 --json
pycheck "--json: one point event with the medians, CVs, n and verdict NOISY" '
import json, statistics as s, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
pts = [e for e in ev if e.get("event") == "point"]
assert len(pts) == 1, pts
p = pts[0]
v = [100, 150, 90, 200, 100]
assert p["verdict"] == "NOISY" and p["noisy"] is True and p["exit"] == 1, p
assert p["n"] == 5 and p["n_results"] == 5 and p["num_workers"] == 8, p
assert p["slowCTA_us"]["median"] == 100 and p["slowCTA_us"]["min"] == 90 and p["slowCTA_us"]["max"] == 200, p
assert abs(p["slowCTA_us"]["cv_pct"] - 100 * s.stdev(v) / s.mean(v)) < 1e-9, p["slowCTA_us"]
assert p["wall_us"]["median"] == 101 and p["sumCTA_us"]["median"] == 10000, p
assert abs(p["ratio"]["median"] - 1.3) < 1e-9, p["ratio"]
assert p["device"] == "cpu" and p["cpus"] == 4 and p["oversubscribed"] is True, p
rec = [e for e in ev if e.get("event") == "recorded"]
assert len(rec) == 5 and {e["run_id"] for e in rec} == {p["run_id"]}, (rec, p["run_id"])
' "$OUT_FILE"

seqrun 1 "--bar 1.35 over steady numbers: the median ratio 1.300 is BELOW_BAR (exit 1)" "$R.2" 100,100,100 --repeat 3 --bar 1.35
has "$OUT_FILE" "^BELOW_BAR  median of 3: .*ratio 1\.300 \(bar 1\.35\)" "the verdict on the medians uses --bar"
has "$OUT_FILE" "^  BELOW_BAR: estimated ratio 1\.300, 90\.0% interval 1\.300-1\.300 \(rank-sum, 3 pairs as two samples\)$" "3 runs of the gate's own baseline and candidate decide as two samples"

# (b2) Two runs can have no interval: NOISY, saying so and leaning, never a claimed verdict.
seqrun 1 "--repeat 2 cannot decide (exit 1)" "$R.2" 100,100 --repeat 2
has "$OUT_FILE" "^  NOISY: estimated ratio 1\.300 \(rank-sum, 2 pairs as two samples\): no interval at 90% below 3 runs a side; leans above the bar; about 1 more run a side would likely decide it$" "2 runs: no interval, the lean and what would decide it"

# (c) The threshold: --max-cv, else [defaults] max_cv; a bad value is refused. Ratios
# 1.30, 1.24, 1.37, 1.30, 1.27 all clear the bar: PASS_GATE, the CV 3.8% a warning,
# a hard rule only under --strict-noise.
seqrun 0 "a CV over --max-cv is a warning: the decided point passes" "$R.2" 100,105,95,100,102 --repeat 5
has "$OUT_FILE" "^  warning: slowCTA CV [0-9.]+% > 2\.0% over 5 repeats" "the CV warning names the threshold"
seqrun 1 "--strict-noise: the CV over --max-cv makes it NOISY (exit 1)" "$R.2" 100,105,95,100,102 --repeat 5 --strict-noise
has "$OUT_FILE" "^NOISY  median of 5" "--strict-noise: the point is NOISY"
has "$OUT_FILE" "^  NOISY: slowCTA CV [0-9.]+% > 2\.0% over 5 repeats" "--strict-noise: the NOISY line names the CV and the threshold"
seqrun 0 "--strict-noise --max-cv 40: the same numbers are steady enough, the point passes" "$R.2" 100,105,95,100,102 --repeat 5 --strict-noise --max-cv 40
printf '[defaults]\nmax_cv = 50\n' >>"$CONF"
seqrun 0 "[defaults] max_cv = 50 sets the threshold" "$R.2" 100,105,95,100,102 --repeat 5 --strict-noise
seqrun 1 "--max-cv wins over [defaults] max_cv" "$R.2" 100,105,95,100,102 --repeat 5 --strict-noise --max-cv 2
has "$OUT_FILE" "> 2\.0% over 5 repeats" "the NOISY line names --max-cv's threshold"
sed -i 's/^max_cv = 50$/max_cv = lots/' "$CONF"
seqrun 2 "a bad [defaults] max_cv is a configuration error" "$R.2" 100 --repeat 2
has "$ERR_FILE" "max_cv.*lots" "the error names the key and the value"
sed -i '/^\[defaults\]$/d; /^max_cv = lots$/d' "$CONF"
seqrun 2 "a bad --max-cv is refused" "$R.2" 100 --repeat 2 --max-cv 2%
for n in 0 101 x; do
  seqrun 2 "--repeat $n is refused" "$R.bad" 100 --repeat $n
  has "$ERR_FILE" "--repeat .*'$n'" "--repeat $n: the refusal names the value"
done
[ "$(nlines "$R.bad")" = 0 ] && ok "a refused --repeat ran nothing" || not_ok "records after a refused --repeat"

# (d) --repeat 3: 3 records, seq 0,1,2, one run_id; a single invocation is never NOISY.
seqrun 0 "--repeat 3" "$BG_TMP/three.jsonl" 100,100,100 --repeat 3
pycheck "--repeat 3 wrote 3 records with seq 0,1,2 and the same run_id" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert [x["seq"] for x in r] == [0, 1, 2] and len({x["run_id"] for x in r}) == 1, r
' "$BG_TMP/three.jsonl"
seqrun 1 "--repeat 1 is one invocation judged as today (BELOW_BAR, exit 1)" "$BG_TMP/one.jsonl" 200 --repeat 1
hasnt "$OUT_FILE" "median of|NOISY" "a single invocation prints no summary and is never NOISY"
seqrun 0 "without --repeat: one invocation" "$BG_TMP/one.jsonl" 100
pycheck "a plain run has no repeat object; --repeat 1 has {i 0, n 1}" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 2 and r[0]["repeat"] == {"i": 0, "n": 1} and "repeat" not in r[1], r
' "$BG_TMP/one.jsonl"

# (e) One INVALID run makes the point INVALID; a failed run leaves no verdict on the medians.
seqrun 125 "an INVALID run among the repeats makes the point INVALID (exit 125)" "$R.3" 100,inv,100 --repeat 3
has "$OUT_FILE" "^INVALID  over 3 of 3 runs" "the summary says INVALID"
seqrun 1 "a run that fails without a result fails the point (exit 1)" "$R.3" 100,fail,100 --repeat 3
has "$OUT_FILE" "^FAILED  over 3 of 3 runs" "the summary says FAILED"

# (f) A sweep over 3 counts: 3 points, 3 records, each with its own count.
seqrun 1 "a sweep over 8,64,68 (the 64 point is below the bar: exit 1)" "$BG_TMP/sweep.jsonl" 100,140,100 -- --num-workers 8,64,68 --shape q_b --configs q_b --cpus 16
pycheck "3 records with num_workers 8, 64, 68 in point and in gate_args" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 3 and [x["seq"] for x in r] == [0, 1, 2] and len({x["run_id"] for x in r}) == 1, r
for x, n in zip(r, (8, 64, 68)):
    assert x["point"]["num_workers"] == n, x["point"]
    a = x["gate_args"]
    assert a[a.index("--num-workers") + 1] == str(n), a
    assert "8,64,68" not in x["command"] and ("--num-workers %d" % n) in x["command"], x["command"]
assert [x["verdict"] for x in r] == ["PASS_GATE", "BELOW_BAR", "PASS_GATE"], [x["verdict"] for x in r]
' "$BG_TMP/sweep.jsonl"
has "$OUT_FILE" "^ +num_workers +slowCTA_us +CV +ratio +verdict$" "the sweep ends with a table"
has "$OUT_FILE" "^ +8 +100\.000 +0\.0% +1\.300 +PASS_GATE$" "row 8: 100 us, ratio 1.300, PASS_GATE"
has "$OUT_FILE" "^ +64 +140\.000 +0\.0% +0\.929 +BELOW_BAR$" "row 64: 140 us, ratio 0.929, BELOW_BAR"
has "$OUT_FILE" "^ +68 +100\.000 +0\.0% +1\.300 +PASS_GATE$" "row 68: PASS_GATE"
has "$OUT_FILE" "-- CPU twin, 64 workers on 16 cpus, oversubscribed$" "64 workers on 16 cpus is oversubscribed"
has "$OUT_FILE" "-- CPU twin, 8 workers on 16 cpus$" "8 workers on 16 cpus is not"
printf '[box seqenv]\ntransport = local\ngate = %s\nallow = --values --counter --num-workers\nnum_workers_env = SEQ_NW\n' "$SEQ" >>"$CONF"
rm -f "$BG_TMP/cnt"
expect_rc 0 "a sweep on a box that translates --num-workers (num_workers_env)" "$BOXGATE" --config "$CONF" run seqenv -v --no-results -- --values 100 --counter "$BG_TMP/cnt" --num-workers 8,64
[ "$(grep -c '^env: SEQ_NW=' "$OUT_FILE")" = 2 ] && grep -q '^env: SEQ_NW=8$' "$OUT_FILE" && grep -q '^env: SEQ_NW=64$' "$OUT_FILE" \
  && ok "the shim's env translation got one count per invocation (SEQ_NW=8, then 64)" \
  || { not_ok "num_workers_env in a sweep"; diag "$(grep '^env' "$OUT_FILE")"; }
seqrun 0 "a sweep with --repeat 3 and --num-workers=LIST: both points pass (exit 0)" "$BG_TMP/sweep2.jsonl" 100,100,100,100,100,100 --repeat 3 -- --num-workers=4,6 --cpus 4
pycheck "4 records: 2 per count, --num-workers=N in each" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert [x["point"]["num_workers"] for x in r] == [4, 4, 4, 6, 6, 6], [x["point"] for x in r]
assert [x["gate_args"][4] for x in r] == ["--num-workers=4"] * 3 + ["--num-workers=6"] * 3, [x["gate_args"] for x in r]
assert [x["repeat"]["i"] for x in r] == [0, 1, 2, 0, 1, 2], r
' "$BG_TMP/sweep2.jsonl"
has "$OUT_FILE" "^ +6 +100\.000 +0\.0% +1\.300 +PASS_GATE$" "row 6 of the second sweep"

# (g) Bad worker lists are refused before anything runs, naming the value.
for bad in 8,x 8,8 0 8,,64 70000; do
  seqrun 2 "--num-workers $bad is refused" "$BG_TMP/bad.jsonl" 100 -- --num-workers "$bad"
  case $bad in 8,8) want="8 is given twice" ;; 8,,64) want="'' is not a worker count" ;;
    8,x) want="'x' is not a worker count" ;; *) want="'$bad' is not a worker count" ;; esac
  has "$ERR_FILE" "--num-workers $bad: $want" "--num-workers $bad: the refusal names the value"
done
[ -f "$BG_TMP/cnt" ] && not_ok "a refused list ran the gate" || ok "a refused list ran no gate"
seqrun 2 "a sweep keeps one shape per invocation: --configs must equal --shape" "$BG_TMP/bad.jsonl" 100 -- --num-workers 8,64 --shape q_b --configs q_a,q_b
has "$ERR_FILE" "--configs q_a,q_b does not match --shape q_b" "the --configs refusal names both"
[ "$(nlines "$BG_TMP/bad.jsonl")" = 0 ] && ok "refused runs kept no records" || not_ok "records after refusals"

# (g2) explain takes the same sweep and shows each count's remote command; a bad list is
# refused the same way.
expect_rc 0 "explain of a 3-count sweep" "$BOXGATE" --config "$CONF" explain seq -- --values 100 --num-workers 8,64,128
[ "$(grep -c '^-- num_workers [0-9]* ([1-3] of 3 in the sweep)$' "$OUT_FILE")" = 3 ] \
  && ok "explain shows the 3 counts" || { not_ok "explain shows the 3 counts"; diag "$(cat "$OUT_FILE")"; }
for nw in 8 64 128; do
  grep -A1 '^remote command:' "$OUT_FILE" | grep -q -- "--num-workers $nw\$" \
    && ok "explain: one remote command carries --num-workers $nw alone" || not_ok "explain: no command with --num-workers $nw"
done
expect_rc 2 "explain refuses a bad list too" "$BOXGATE" --config "$CONF" explain seq -- --values 100 --num-workers 8,8
has "$ERR_FILE" "--num-workers 8,8: 8 is given twice" "explain's refusal names the value"

# (h) Ctrl-C during a repeat: the current invocation is killed cleanly, no more run, records stay.
rm -f "$BG_TMP/cnt"
"$BOXGATE" --config "$CONF" run seq -v --results "$BG_TMP/int.jsonl" --repeat 3 -- --values 100,sleep,100 --counter "$BG_TMP/cnt" >"$BG_TMP/int.log" 2>&1 &
pid=$!
for i in $(seq 1 120); do grep -q 'sleeping until killed' "$BG_TMP/int.log" && break; sleep 0.25; done
grep -q 'sleeping until killed' "$BG_TMP/int.log" && ok "Ctrl-C: the second repeat was running" || not_ok "Ctrl-C: the second repeat never started"
kill -INT $pid; rc=0; wait $pid || rc=$?
[ "$rc" = 130 ] && ok "Ctrl-C during a repeat exits 130" || { not_ok "Ctrl-C exit $rc"; diag "$(cat "$BG_TMP/int.log")"; }
[ "$(cat "$BG_TMP/cnt")" = 2 ] && ok "no repeat ran after Ctrl-C" || not_ok "the gate ran $(cat "$BG_TMP/cnt") times"
pycheck "the finished run and the stopped one are recorded (exit 0, then 130)" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert [x["exit"] for x in r] == [0, 130], [x["exit"] for x in r]
' "$BG_TMP/int.jsonl"

# (i) The demo gate with --repeat 2, end to end on the built-in local box.
rc=0
"$BOXGATE" run local --results "$BG_TMP/demo.jsonl" --repeat 2 -- --kind demo --shape tiny --num-workers 8 >"$OUT_FILE" 2>"$ERR_FILE" || rc=$?
# A loaded machine may make the candidate lose or the point noisy: the test checks it was judged.
case $rc in 0|1) ok "the demo gate with --repeat 2 ran (exit $rc)" ;;
  *) not_ok "the demo gate with --repeat 2 exited $rc"; diag "$(cat "$ERR_FILE")" ;; esac
has "$OUT_FILE" "^(PASS_GATE|BELOW_BAR|NOISY)  median of 2: slowCTA [0-9.]+ us .*  -- (CPU twin|[^,]+), 8 workers" "the demo point's summary: median of 2, the device and the worker count"
pycheck "the demo run kept 2 records of one run, each with its own result" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 2 and r[0]["run_id"] == r[1]["run_id"] and [x["seq"] for x in r] == [0, 1], r
assert all(x["result"]["candidate"]["slowCTA_us"] > 0 and x["point"]["num_workers"] == 8 for x in r)
' "$BG_TMP/demo.jsonl"
finish
