#!/usr/bin/env bash
# Baseline and candidate apart: a gate that reports only the candidate (cand_gate.sh,
# known numbers) is measured C B C B ... in separate processes on the same slot, the B
# run being the user's arguments plus --baseline; boxgate combines each pair into
# slowCTA_ratio_base_over_cand = B/C (median over pairs) and judges it (bar, cos,
# anti-sloughing). A gate that measures both in one process (seq_gate.sh, the demo
# gate) keeps its path and says so. Python's json and statistics are the reference.
source "$(dirname "$0")/lib.sh"
cd "$BG_TMP"
unset BOXGATE_CONFIG
export XDG_CONFIG_HOME=$BG_TMP/xdg XDG_DATA_HOME=$BG_TMP/data HOME=$BG_TMP/home
mkdir -p "$HOME"
GATES=$BG_ROOT/tests/integration/gates
CONF=$BG_TMP/cand.ini
printf '[box cand]\ntransport = local\ngate = %s\nallow = --values --bvalues --counter --num-workers --cos --cand-sum-pct --stated --baseline --kernel\n' "$GATES/cand_gate.sh" >"$CONF"
printf '[box seq]\ntransport = local\ngate = %s\nallow = --values --counter --base --num-workers --cpus\n' "$GATES/seq_gate.sh" >>"$CONF"
printf '[box nobase]\ntransport = local\ngate = %s\nallow = --values --bvalues --counter\n' "$GATES/cand_gate.sh" >>"$CONF"
# candrun RC DESC RESULTS [run options] -- [gate args]: a fresh counter each time.
candrun() {
  local want=$1 desc=$2 res=$3; shift 3
  local opts=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  rm -f "$BG_TMP/cnt" "$BG_TMP/cnt.b"
  expect_rc "$want" "$desc" "$BOXGATE" --config "$CONF" run cand --results "$res" "${opts[@]}" -- \
    --counter "$BG_TMP/cnt" "$@"
}

# (a) --repeat 3: pairs (C, B) = (100, 150), (110, 121), (90, 99): pair ratios 1.5, 1.1, 1.1,
# median 1.1 (the ratio of the medians, 121/100, would be 1.21). Three pairs are judged as
# their two samples, and B's 99 lies under C's 100 and 110: no 90% interval above the
# bar, so the point is NOISY (it leans above), never a claimed PASS_GATE.
R=$BG_TMP/a.jsonl
candrun 1 "a candidate-only gate, --repeat 3: three pairs, NOISY at the default bar" "$R" \
  --repeat 3 --max-cv 50 -- --values 100,110,90 --bvalues 150,121,99
has "$OUT_FILE" "^NOISY  median of 3: slowCTA 100\.000 us .*  ratio 1\.100 \(bar 1\.00\)" \
  "the point's ratio is the median over pairs of B/C: 1.100"
has "$OUT_FILE" "^  NOISY: estimated ratio [0-9.]+, 90\.0% interval [0-9.]+-[0-9.]+ \(rank-sum, 3 pairs as two samples\) straddles the bar 1\.00; leans above the bar" \
  "NOISY names the interval of the pairs and the lean"
has "$OUT_FILE" "^  baseline and candidate measured apart, interleaved \(3 pairs, candidate first: C B C B \.\.\.\)$" \
  "the point line says baseline and candidate were measured apart, 3 pairs"
has "$OUT_FILE" "^  baseline median of 3: slowCTA 121\.000 us \(99\.000-150\.000" "the baseline's median and spread are shown"
hasnt "$OUT_FILE" "measured by the gate in one process" "it does not claim the one-process path"
pycheck "6 records alternate candidate, baseline with one run_id; B is the user's arguments plus --baseline" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 6, len(r)
assert len({x["run_id"] for x in r}) == 1
assert [x["seq"] for x in r] == list(range(6)), [x["seq"] for x in r]
assert [x["role"] for x in r] == ["candidate", "baseline"] * 3, [x.get("role") for x in r]
assert [x["repeat"]["i"] for x in r] == [0, 0, 1, 1, 2, 2]
c, b = r[0::2], r[1::2]
assert all(x["gate_args"][-1] == "--baseline" and x["command"].endswith("--baseline") for x in b), b
assert all("--baseline" not in x["gate_args"] and "--baseline" not in x["command"] for x in c)
assert all(x["gate_args"][:-1] == y["gate_args"] for x, y in zip(b, c))
assert [x["point"]["candidate"] for x in r] == ["candidate", "baseline"] * 3, [x["point"] for x in r]
assert [x["result"]["candidate"]["slowCTA_us"] for x in c] == [100, 110, 90]
assert [x["result"]["candidate"]["slowCTA_us"] for x in b] == [150, 121, 99]
assert all(x["gpus"] == y["gpus"] for x, y in zip(b, c))
' "$R"
candrun 1 "the same in --json" "$BG_TMP/j.jsonl" --repeat 3 --max-cv 50 --json -- --values 100,110,90 --bvalues 150,121,99
cp "$OUT_FILE" "$BG_TMP/j.out"
pycheck "--json: one point event, ratio median = statistics.median of B/C per pair, apart, 3 pairs" '
import json, statistics as s, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
pts = [e for e in ev if e.get("event") == "point"]
assert len(pts) == 1, pts
p = pts[0]
c, b = [100, 110, 90], [150, 121, 99]
want = s.median([x / y for x, y in zip(b, c)])
assert abs(p["ratio"]["median"] - want) < 1e-12, (p["ratio"], want)
assert p["apart"] is True and p["pairs"] == 3 and p["measured"].startswith("baseline and candidate measured apart, interleaved (3 pairs"), p
assert p["verdict"] == "NOISY" and p["exit"] == 1 and p["n"] == 6, p
d = p["decision"]
assert d["call"] == "NOISY" and d["lean"] == "above" and d["n_baseline"] == 3 and d["n_candidate"] == 3, d
assert d["lo"] < 1.0 < d["hi"] and abs(d["level"] - 0.9) < 1e-12, d
assert p["baseline_slowCTA_us"]["median"] == 121 and p["slowCTA_us"]["median"] == 100, p
' "$BG_TMP/j.out"

# (b) The verdict follows the bar: pairs (100, 110), (101, 111), (99, 109), ratio 1.1,
# every B/C between 1.079 and 1.121: under --bar 1.2, over --bar 1.05.
candrun 1 "the median ratio 1.100 under --bar 1.2 is BELOW_BAR (exit 1)" "$BG_TMP/b.jsonl" \
  --repeat 3 --max-cv 50 --bar 1.2 -- --values 100,101,99 --bvalues 110,111,109
has "$OUT_FILE" "^BELOW_BAR  median of 3: .*ratio 1\.100 \(bar 1\.20\)" "the point is BELOW_BAR against bar 1.20"
candrun 0 "and passes --bar 1.05" "$BG_TMP/b2.jsonl" \
  --repeat 3 --max-cv 50 --bar 1.05 -- --values 100,101,99 --bvalues 110,111,109
has "$OUT_FILE" "^PASS_GATE  median of 3: .*ratio 1\.100 \(bar 1\.05\)" "the point is PASS_GATE against bar 1.05"

# (c) Default: one pair. A slower candidate (130 vs 100) is BELOW_BAR.
candrun 1 "one pair by default; a slower candidate is BELOW_BAR" "$BG_TMP/c.jsonl" -- --values 130 --bvalues 100
has "$OUT_FILE" "^BELOW_BAR  median of 1: .*ratio 0\.769" "ratio 100/130 = 0.769"
has "$OUT_FILE" "measured apart, interleaved \(1 pair," "one pair"
pycheck "2 records: candidate then baseline" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert [x["role"] for x in r] == ["candidate", "baseline"], r
' "$BG_TMP/c.jsonl"

# (d) A candidate with cos 0.5 is INVALID, whatever its speed: when the gate claims
# PASS_GATE for it, boxgate's cos gate says INVALID (the pairs still alternate); when the
# gate itself says INVALID, there is nothing to pair and no baseline run.
candrun 125 "a candidate with cos 0.5 the gate calls PASS_GATE is INVALID (exit 125)" "$BG_TMP/d.jsonl" \
  --repeat 2 -- --values 50 --bvalues 100 --cos 0.5 --stated PASS_GATE
has "$OUT_FILE" "candidate cos 0\.500000 < 0\.99" "boxgate's cos gate names the candidate's cos"
has "$OUT_FILE" "^INVALID  over 4 of 4 runs" "the point is INVALID over its 2 pairs"
hasnt "$OUT_FILE" "^PASS_GATE  median" "never PASS_GATE"
pycheck "the records: C INVALID, B PASS_GATE, alternating" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert [(x["role"], x["verdict"]) for x in r] == [("candidate", "INVALID"), ("baseline", "PASS_GATE")] * 2, r
' "$BG_TMP/d.jsonl"
candrun 125 "a candidate the gate itself calls INVALID is INVALID (exit 125)" "$BG_TMP/d2.jsonl" --repeat 2 -- --values 50 --bvalues 100 --cos 0.5
has "$OUT_FILE" "^INVALID  over 2 of 2 runs" "the point is INVALID, without baseline runs"

# (e) Sloughing: ratio 1.3, but the candidate's sumCTA is 20% over the baseline's.
candrun 1 "a candidate whose sumCTA is 20% over the baseline's is BELOW_BAR" "$BG_TMP/e.jsonl" -- --values 100 --bvalues 130 --cand-sum-pct 20
has "$OUT_FILE" "^BELOW_BAR  median of 1: .*ratio 1\.300" "the ratio alone would pass"
has "$OUT_FILE" "^  BELOW_BAR: the median sumCTA 15600\.000 us rose more than 10% over the baseline's 13000\.000 us" "the sloughing line names both sumCTAs"
candrun 0 "5% more sumCTA is within the tolerance" "$BG_TMP/e2.jsonl" -- --values 100 --bvalues 130 --cand-sum-pct 5

# (e2) A noisy baseline (100, 150, 200) under a steady candidate (50): every B/C is 2 to
# 4, measurably over the bar: PASS_GATE with the baseline's CV as a warning; NOISY under
# --strict-noise, never PASS_GATE.
candrun 0 "a noisy baseline under a steady candidate twice as fast passes, with a warning" "$BG_TMP/n.jsonl" \
  --repeat 3 -- --values 50,50,50 --bvalues 100,150,200
has "$OUT_FILE" "^  warning: the baseline's slowCTA CV 33\.3% > 2\.0% over 3 runs" "the warning names the baseline's CV"
candrun 1 "--strict-noise: a noisy baseline under a steady candidate is NOISY" "$BG_TMP/n.jsonl" \
  --repeat 3 --strict-noise -- --values 50,50,50 --bvalues 100,150,200
has "$OUT_FILE" "^NOISY  median of 3: slowCTA 50\.000 us" "the point is NOISY"
has "$OUT_FILE" "^  NOISY: the baseline's slowCTA CV 33\.3% > 2\.0% over 3 runs" "the line names the baseline's CV"
hasnt "$OUT_FILE" "^  NOISY: slowCTA CV" "the candidate's own CV is not blamed"

# (e3) A worker-count sweep: each count is its own pair.
candrun 0 "a sweep of 2 counts: one pair per count" "$BG_TMP/s.jsonl" -- --num-workers 8,64 --values 100 --bvalues 130
pycheck "4 records: (candidate, baseline) at 8, then at 64; B carries --baseline with the single count" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert [(x["role"], x["point"]["num_workers"]) for x in r] == [("candidate", 8), ("baseline", 8), ("candidate", 64), ("baseline", 64)], r
assert r[3]["gate_args"][-3:] == ["--bvalues", "130", "--baseline"] and "64" in r[3]["gate_args"], r[3]["gate_args"]
' "$BG_TMP/s.jsonl"
has "$OUT_FILE" "^ +64 +100\.000 +0\.0% +1\.300 +PASS_GATE$" "the sweep table's row for 64 has ratio 1.300"

# (f) --baseline given by the user: one invocation, point.candidate baseline, no pairing.
candrun 0 "run -- --baseline runs the in-tree kernel once" "$BG_TMP/f.jsonl" -- --baseline --bvalues 130
pycheck "one record, point.candidate baseline, no role" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 1 and r[0]["point"]["candidate"] == "baseline" and "role" not in r[0], r
assert r[0]["result"]["candidate"]["slowCTA_us"] == 130
' "$BG_TMP/f.jsonl"
# --kernel K: the B record is still the baseline.
candrun 0 "--kernel K with a candidate-only gate" "$BG_TMP/k.jsonl" -- --kernel k7 --values 100 --bvalues 130
pycheck "C's point.candidate is k7, B's is baseline" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert [x["point"]["candidate"] for x in r] == ["k7", "baseline"], [x["point"] for x in r]
' "$BG_TMP/k.jsonl"

# (g) A box whose allowlist refuses --baseline: said, exit 2, the candidate's record kept.
rm -f "$BG_TMP/cnt" "$BG_TMP/cnt.b"
expect_rc 2 "a box that refuses --baseline cannot measure apart (exit 2)" "$BOXGATE" --config "$CONF" run nobase \
  --results "$BG_TMP/g.jsonl" -- --counter "$BG_TMP/cnt" --values 100
has "$ERR_FILE" "reports only the candidate, and its baseline run .* cannot be made" "the refusal says why"

# (h) A gate that measures both in one process: unchanged, and says so.
rm -f "$BG_TMP/cnt"
expect_rc 0 "seq_gate (baseline in the same line) with --repeat 3" "$BOXGATE" --config "$CONF" run seq \
  --results "$BG_TMP/h.jsonl" --repeat 3 -- --values 100,100,100 --counter "$BG_TMP/cnt"
has "$OUT_FILE" "^  baseline and candidate measured by the gate in one process$" "the point says: measured by the gate in one process"
pycheck "3 records, no role, no --baseline" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 3 and all("role" not in x and "--baseline" not in x["gate_args"] for x in r), r
' "$BG_TMP/h.jsonl"
rc=0
"$BOXGATE" run local --results "$BG_TMP/demo.jsonl" --repeat 2 --max-cv 100 -- --kind demo --shape tiny --num-workers 8 >"$OUT_FILE" 2>"$ERR_FILE" || rc=$?
case $rc in 0|1) ok "the demo gate with --repeat 2 (exit $rc)" ;; *) not_ok "the demo gate exited $rc"; diag "$(cat "$ERR_FILE")" ;; esac
has "$OUT_FILE" "^  baseline and candidate measured by the gate in one process$" "the demo gate's point says measured in one process"
hasnt "$OUT_FILE" "measured apart" "the demo gate is not measured apart"
pycheck "the demo gate: 2 records, no role, no --baseline added" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 2 and all("role" not in x and "--baseline" not in x["command"] for x in r), r
' "$BG_TMP/demo.jsonl"
# The demo gate's --baseline runs the in-tree kernel as the candidate: ratio 1.0, one record.
rc=0
"$BOXGATE" run local --results "$BG_TMP/demob.jsonl" -- --kind demo --shape tiny --num-workers 8 --baseline >"$OUT_FILE" 2>"$ERR_FILE" || rc=$?
[ "$rc" = 0 ] && ok "the demo gate with --baseline passes (ratio 1.0 >= bar 1.0)" || { not_ok "the demo gate with --baseline exited $rc"; diag "$(cat "$ERR_FILE")"; }
pycheck "the demo --baseline record: point.candidate baseline, ratio 1.0, variant baseline, no role" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 1, r
x = r[0]
assert x["point"]["candidate"] == "baseline" and "role" not in x, x["point"]
assert x["result"]["slowCTA_ratio_base_over_cand"] == 1.0 and x["result"]["candidate"]["variant"] == "baseline", x["result"]
' "$BG_TMP/demob.jsonl"
finish
