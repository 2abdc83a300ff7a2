#!/usr/bin/env bash
# What boxgate run prints: one line per gate invocation and the point's summary on stdout
# (the same bytes whatever stdout is, colour only on a terminal, which script(1) gives
# it here), the gate's own lines with -v, --json as before; --warmup N (recorded as
# warm-ups, outside every point's numbers: run's, results', report's); the point table of
# --export-markdown and --export-json (Python's json the reference), and their refusals.
source "$(dirname "$0")/lib.sh"
cd "$BG_TMP"
unset BOXGATE_CONFIG NO_COLOR
export XDG_CONFIG_HOME=$BG_TMP/xdg XDG_DATA_HOME=$BG_TMP/data HOME=$BG_TMP/home
mkdir -p "$HOME"
GATES=$BG_ROOT/tests/integration/gates
CONF=$BG_TMP/t71.ini
printf '[box seq]\ntransport = local\ngate = %s\nallow = --values --counter --base --num-workers --cpus\n' "$GATES/seq_gate.sh" >"$CONF"
printf '[box cand]\ntransport = local\ngate = %s\nallow = --values --bvalues --counter --baseline\n' "$GATES/cand_gate.sh" >>"$CONF"
# seqrun RC DESC RESULTS VALUES [run options] -- [gate args]: a fresh counter each time.
seqrun() {
  local want=$1 desc=$2 res=$3 values=$4; shift 4
  local opts=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  rm -f "$BG_TMP/cnt" "$BG_TMP/cnt.b"
  expect_rc "$want" "$desc" "$BOXGATE" --config "$CONF" run seq --results "$res" "${opts[@]}" -- \
    --values "$values" --counter "$BG_TMP/cnt" "$@"
}

# (a) Not a terminal, no -v: a line per run, the point, nothing of the gate's own stdout.
R=$BG_TMP/a.jsonl
seqrun 0 "--repeat 3 into a file" "$R" 100,104,98 --repeat 3
cat >"$BG_TMP/want.a" <<'EOF'
  run 1/3  slowCTA 100.000 us  ratio 1.300  PASS_GATE
  run 2/3  slowCTA 104.000 us  ratio 1.250  PASS_GATE
  run 3/3  slowCTA 98.000 us  ratio 1.327  PASS_GATE
EOF
check "one line per run, in order, with slowCTA, ratio and verdict" cmp "$BG_TMP/want.a" <(head -n 3 "$OUT_FILE")
has "$OUT_FILE" "^PASS_GATE  median of 3: slowCTA 100\.000 us \(98\.000-104\.000, CV [0-9.]+%\)" "then the point's summary on stdout"
hasnt "$OUT_FILE" "FAITHFUL_RESULT|^argv:|^env:" "no gate line on stdout without -v"
hasnt "$ERR_FILE" "PASS_GATE|median of|FAITHFUL_RESULT" "nothing of it on stderr"
has "$ERR_FILE" "^boxgate: seq: 3 records \(run [0-9a-f]{16}\) in $R\$" "stderr says once where the 3 records went"
hasnt "$ERR_FILE" "recorded in" "not once per run"
pycheck "the records keep every raw result line" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 3 and all(x["raw"].startswith("FAITHFUL_RESULT {") for x in r), r
assert [x["result"]["candidate"]["slowCTA_us"] for x in r] == [100, 104, 98]
assert not any("warmup" in x for x in r), r
' "$R"
cp "$OUT_FILE" "$BG_TMP/plain.out"

# (b) -v and --verbose: the gate's stdout lines as they come, before the run's line.
for v in -v --verbose; do
  seqrun 1 "$v --repeat 2 (NOISY: no interval at 2 runs, exit 1)" "$BG_TMP/b.jsonl" 100,100 --repeat 2 "$v"
  [ "$(grep -c '^FAITHFUL_RESULT {' "$OUT_FILE")" = 2 ] && [ "$(grep -c '^argv:' "$OUT_FILE")" = 2 ] \
    && ok "$v: both runs' argv and FAITHFUL_RESULT lines on stdout" || { not_ok "$v"; diag "$(cat "$OUT_FILE")"; }
  check "$v: each gate's lines come before its run line" python3 -c '
import sys
l = open(sys.argv[1]).read().splitlines()
i = [n for n, s in enumerate(l) if s.startswith("FAITHFUL_RESULT")]
j = [n for n, s in enumerate(l) if s.startswith("  run ")]
assert len(i) == 2 and len(j) == 2 and i[0] < j[0] < i[1] < j[1], l
' "$OUT_FILE"
done

# (c) A lone run: its one full line; a failing gate without -v: its last stdout lines on stderr.
seqrun 0 "one run" "$BG_TMP/c.jsonl" 100
cat >"$BG_TMP/want.c" <<'EOF'
PASS_GATE  slowCTA 100.000 us (baseline 130.000 us, ratio 1.300)  wall 101.000 us  sumCTA 10000.000 us  cos 0.99990  on CPU twin
EOF
check "a lone run prints its one full line" cmp "$BG_TMP/want.c" "$OUT_FILE"
has "$ERR_FILE" "^boxgate: seq: recorded in $BG_TMP/c\.jsonl\$" "and where its record went"
seqrun 1 "a run that fails without a result (exit 1)" "$BG_TMP/c.jsonl" fail
has "$OUT_FILE" "^FAILED \(exit 1\)$" "its line says FAILED and the exit"
has "$ERR_FILE" "^boxgate: seq: the gate's last 2 stdout lines \(-v shows every line\):\$" "stderr shows the gate's last stdout lines"
has "$ERR_FILE" "^  argv:--values fail " "... its argv line among them"
has "$ERR_FILE" "^boom\$" "the gate's stderr as it came"
seqrun 1 "the same with -v" "$BG_TMP/c.jsonl" fail -v
hasnt "$ERR_FILE" "last [0-9]+ stdout line" "-v: no tail, the lines were shown"
has "$OUT_FILE" "^argv:--values fail " "-v: the gate's line on stdout"

# (d) A terminal (script(1)): the same lines, the verdicts in colour; NO_COLOR: none.
tty_run() { # tty_run FILE ARGS...: boxgate under a pseudo-terminal, output to FILE
  local f=$1; shift
  rm -f "$BG_TMP/cnt"
  script -qec "$(printf '%q ' "$BOXGATE" --config "$CONF" run seq "$@")" /dev/null >"$f" 2>&1 </dev/null
}
tty_run "$BG_TMP/tty.out" --results "$BG_TMP/d.jsonl" --repeat 3 -- --values 100,104,98 --counter "$BG_TMP/cnt"
e=$(printf '\033')
grep -q "^  run 1/3  slowCTA 100\.000 us  ratio 1\.300  ${e}\[1;32mPASS_GATE${e}\[0m" "$BG_TMP/tty.out" \
  && ok "a terminal: the run line's verdict in green" || { not_ok "tty run line"; diag "$(cat -v "$BG_TMP/tty.out")"; }
grep -q "^${e}\[1;32mPASS_GATE${e}\[0m  median of 3" "$BG_TMP/tty.out" && ok "... and the point's" || not_ok "tty point line"
check "without the colour the terminal shows the very lines a pipe gets" python3 -c '
import re, sys
tty = [re.sub(r"\x1b\[[0-9;]*m", "", l).rstrip("\r") for l in open(sys.argv[1]).read().splitlines()]
tty = [l for l in tty if not l.startswith("boxgate: ")]
plain = open(sys.argv[2]).read().splitlines()
norm = lambda ls: [re.sub(r"CV [0-9.]+%", "CV x%", l) for l in ls]
assert norm(tty) == norm(plain), (tty, plain)
' "$BG_TMP/tty.out" "$BG_TMP/plain.out"
grep -q 'FAITHFUL_RESULT' "$BG_TMP/tty.out" && not_ok "a terminal without -v shows a raw line" || ok "a terminal without -v shows no raw line"
NO_COLOR=1 tty_run "$BG_TMP/nocolor.out" --results "$BG_TMP/d.jsonl" --repeat 2 -- --values 100 --counter "$BG_TMP/cnt"
grep -q "$e" "$BG_TMP/nocolor.out" && not_ok "NO_COLOR: colour on a terminal" || ok "NO_COLOR: no colour on a terminal"
tty_run "$BG_TMP/ttyv.out" -v --results "$BG_TMP/d.jsonl" -- --values 100 --counter "$BG_TMP/cnt"
grep -q "^${e}\[1mFAITHFUL_RESULT {" "$BG_TMP/ttyv.out" && ok "a terminal with -v: the raw result line, bold" || { not_ok "tty -v"; diag "$(cat -v "$BG_TMP/ttyv.out")"; }

# (e) --json: JSON lines only, as before: no run line, no summary text; -v changes nothing.
seqrun 1 "--json --repeat 2" "$BG_TMP/e.jsonl" 100,101 --repeat 2 --json
cp "$OUT_FILE" "$BG_TMP/j1.out"
seqrun 1 "--json -v --repeat 2" "$BG_TMP/e.jsonl" 100,101 --repeat 2 --json -v
pycheck "--json: every line JSON, the events of before (stdout lines, result, recorded, end, point), -v the same" '
import json, sys
def events(p):
    ev = [json.loads(l) for l in open(p)]
    for e in ev:
        e.pop("run_id", None)
        if e.get("event") == "point":
            e.pop("slowCTA_us"); e.pop("wall_us"); e.pop("sumCTA_us")
    return ev
a, b = events(sys.argv[1]), events(sys.argv[2])
assert a == b, (a, b)
kinds = [e.get("event") or e.get("stream") for e in a]
assert kinds == ["stdout", "stdout", "stdout", "result", "recorded", "end"] * 2 + ["point"], kinds
assert not any("warmup" in e for e in a), a
p = a[-1]
assert set(p) == {"box", "event", "num_workers", "n", "repeat", "n_results", "verdict", "verdict_on_medians",
    "noisy", "sloughed", "max_cv_pct", "strict_noise", "cv_warning", "single", "decision", "exit", "ratio",
    "bar", "device", "device_name", "cpus", "oversubscribed", "source", "measured", "apart"}, sorted(p)
' "$BG_TMP/j1.out" "$OUT_FILE"

# (f) --warmup 2 --repeat 3: the warm-ups run first, are recorded as such, and count nowhere.
W=$BG_TMP/w.jsonl
seqrun 0 "--warmup 2 --repeat 3 (warm-ups 500 and 400 us, then 100, 101, 99)" "$W" 500,400,100,101,99 --warmup 2 --repeat 3
has "$OUT_FILE" "^  warmup 1/2  slowCTA 500\.000 us  ratio 0\.260  BELOW_BAR  -- slowCTA ratio 0\.260 below the bar 1\.00 \(default\)  \(warm-up: not counted\)\$" "the first warm-up's line says it is not counted"
has "$OUT_FILE" "^  warmup 2/2  slowCTA 400\.000 us" "the second warm-up"
has "$OUT_FILE" "^  run 1/3  slowCTA 100\.000 us" "then the counted runs"
has "$OUT_FILE" "^PASS_GATE  median of 3: slowCTA 100\.000 us \(99\.000-101\.000, CV" "the point: 3 runs, median 100, the warm-ups' 500 and 400 left out"
has "$ERR_FILE" "5 records \(run [0-9a-f]{16}\)" "all 5 recorded"
pycheck "records: 2 warm-ups (warmup true, no repeat), then repeat i 0..2 of n 3" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert [x.get("warmup") for x in r] == [True, True, None, None, None], r
assert "repeat" not in r[0] and "repeat" not in r[1], r[:2]
assert [x["repeat"] for x in r[2:]] == [{"i": i, "n": 3} for i in range(3)], r
assert [x["seq"] for x in r] == list(range(5)) and len({x["run_id"] for x in r}) == 1
assert r[0]["verdict"] == "BELOW_BAR"
' "$W"
expect_rc 0 "results show --by point of that file" "$BOXGATE" results show "$W" --by point --json
pycheck "results show --by point: n 3, median 100, max 101 (the warm-ups are not samples)" '
import json, sys
pts = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert len(pts) == 1 and pts[0]["n"] == 3 and pts[0]["n_bad"] == 0, pts
assert pts[0]["slowCTA_median_us"] == 100 and pts[0]["slowCTA_max_us"] == 101, pts
' "$OUT_FILE"
expect_rc 0 "results compare of the warm-up store with itself" "$BOXGATE" results compare --json "$W" "$W"
pycheck "results compare: one point, n 3 a side, median 100" '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
pts = [r for r in rows if "point" in r]
assert len(pts) == 1 and pts[0]["n_before"] == 3 and pts[0]["n_after"] == 3, rows
assert pts[0]["median_before"] == 100, pts
' "$OUT_FILE"
mkdir -p "$BG_TMP/rep"
expect_rc 0 "report of the warm-up store" "$BOXGATE" report "$W" --out "$BG_TMP/rep" --json
pycheck "report: one point of n 3 (the warm-ups are not in it)" '
import json, sys
s = open(sys.argv[1]).read()
assert "\"n\":3" in s.replace(" ", "") and "\"n\":5" not in s.replace(" ", "") and "500" not in s, s[:2000]
' "$OUT_FILE"

# (g) --warmup with a sweep: warm-ups per count; with the baseline apart: a warm-up pair.
S=$BG_TMP/s.jsonl
seqrun 0 "--warmup 1 --repeat 3 over --num-workers 8,64" "$S" 300,100,100,100,300,100,100,100 --warmup 1 --repeat 3 -- --num-workers 8,64
[ "$(grep -c '^  nw 8  warmup 1/1  slowCTA 300' "$OUT_FILE"):$(grep -c '^  nw 64  warmup 1/1  slowCTA 300' "$OUT_FILE")" = 1:1 ] \
  && ok "a warm-up per count, its line naming the count" || { not_ok "sweep warm-ups"; diag "$(cat "$OUT_FILE")"; }
has "$OUT_FILE" "^ +64 +100\.000 +0\.0% +1\.300 +PASS_GATE$" "the sweep's table: the counted runs only"
pycheck "sweep records: per count a warm-up then 3 runs" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert [(x["point"]["num_workers"], bool(x.get("warmup"))) for x in r] == [(8, True)] + [(8, False)] * 3 + [(64, True)] + [(64, False)] * 3, r
' "$S"
rm -f "$BG_TMP/cnt" "$BG_TMP/cnt.b"
expect_rc 0 "--warmup 1 --repeat 3 measured apart (C B pairs)" "$BOXGATE" --config "$CONF" run cand --results "$BG_TMP/ab.jsonl" \
  --warmup 1 --repeat 5 -- --values 900,100,100,100,100,100 --bvalues 100,150,150,150,150,150 --counter "$BG_TMP/cnt"
has "$OUT_FILE" "^  warmup 1/1 C  slowCTA 900\.000 us  .*\(warm-up: not counted\)$" "the warm-up's candidate run"
has "$OUT_FILE" "^  warmup 1/1 B  slowCTA 100\.000 us  .*\(warm-up: not counted\)$" "and its baseline run"
has "$OUT_FILE" "^  run 5/5 B  " "then 5 pairs"
has "$OUT_FILE" "ratio 1\.500 \(bar 1\.00\)" "the point's ratio is 150/100 of the counted pairs, not the warm-up's 100/900"
has "$OUT_FILE" "measured apart, interleaved \(5 pairs," "5 pairs, not 6"
pycheck "apart records: a warm-up pair (candidate, baseline), then 5 pairs" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert [(x.get("role"), bool(x.get("warmup"))) for x in r] == [("candidate", True), ("baseline", True)] + [("candidate", False), ("baseline", False)] * 5, r
' "$BG_TMP/ab.jsonl"

# (h) --export-markdown and --export-json: the point table, one row per count.
seqrun 1 "a sweep with --export-markdown and --export-json" "$BG_TMP/x.jsonl" 100,101,99,140,141,139 --repeat 3 \
  --export-markdown "$BG_TMP/t.md" --export-json "$BG_TMP/t.json" -- --num-workers 8,64
pycheck "--export-json: a JSON object (Python json), a row per count, medians, spread, CV, n, ratio, verdict" '
import json, statistics, sys
d = json.load(open(sys.argv[1]))
assert d["box"] == "seq" and len(d["run_id"]) == 16, d
p8, p64 = d["points"]
assert p8["num_workers"] == 8 and p64["num_workers"] == 64, d
assert p8["n"] == 3 and p8["runs"] == 3 and p8["warmup"] == 0
assert p8["slowCTA_us"]["median"] == 100 and p8["slowCTA_us"]["min"] == 99 and p8["slowCTA_us"]["max"] == 101
cv = 100 * statistics.stdev([100, 101, 99]) / statistics.mean([100, 101, 99])
assert abs(p8["slowCTA_us"]["cv_pct"] - cv) < 1e-6, (p8["slowCTA_us"], cv)
assert abs(p8["ratio"]["median"] - 1.3) < 1e-9 and p8["ratio"]["lo"] <= p8["ratio"]["hi"], p8["ratio"]
assert p8["verdict"] == "PASS_GATE" and p8["exit"] == 0 and p8["bar"] == 1
assert p64["verdict"] == "BELOW_BAR" and p64["exit"] == 1, p64
assert p8["decision"]["call"] == "PASS_GATE" and p8["source"].startswith("CPU twin, 8 workers")
' "$BG_TMP/t.json"
pycheck "--export-markdown: a title, a table whose rows all have the header's cells, a row per count" '
import sys
l = open(sys.argv[1]).read().splitlines()
assert l[0].startswith("# boxgate run seq (run ") and l[1] == "", l
cells = lambda s: [c.strip() for c in s.strip().strip("|").split("|")]
head = cells(l[2])
assert head[:3] == ["num_workers", "n", "slowCTA median (us)"] and head[-2:] == ["verdict", "source"], head
assert all(set(c) <= set("-: ") and "-" in c for c in cells(l[3])) and len(cells(l[3])) == len(head)
rows = [cells(x) for x in l[4:]]
assert len(rows) == 2 and all(len(r) == len(head) for r in rows), rows
assert rows[0][0] == "8" and rows[0][1] == "3" and rows[0][2] == "100.000" and rows[0][3] == "99.000-101.000", rows[0]
assert rows[0][head.index("verdict")] == "PASS_GATE" and rows[1][head.index("verdict")] == "BELOW_BAR", rows
' "$BG_TMP/t.md"
[ "$(stat -c %a "$BG_TMP/t.md")" = 644 ] && ok "the exported file is 0644" || not_ok "mode $(stat -c %a "$BG_TMP/t.md")"
ls -a "$BG_TMP" | grep -q '^\.t\.md\.' && not_ok "a temporary file was left beside it" || ok "no temporary file left beside it"
seqrun 0 "--export-json of a lone run" "$BG_TMP/x.jsonl" 100 --export-json "$BG_TMP/one.json"
pycheck "a lone run exports its one point (no interval)" '
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["points"]) == 1 and d["points"][0]["n"] == 1 and d["points"][0]["decision"] is None, d
' "$BG_TMP/one.json"
seqrun 0 "--warmup with --export-json" "$BG_TMP/x.jsonl" 700,100,100,100 --warmup 1 --repeat 3 --export-json "$BG_TMP/w.json"
pycheck "the exported row counts the warm-up apart" '
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
assert p["warmup"] == 1 and p["n"] == 3 and p["slowCTA_us"]["max"] == 100, p
' "$BG_TMP/w.json"

# (i) Refusals before anything runs: each names the FILE or the value, exit 2, no record.
mkdir -p "$BG_TMP/adir"
N=$BG_TMP/none.jsonl
for spec in "--export-markdown|$BG_TMP/adir|a directory" "--export-json|$BG_TMP/nope/t.json|$BG_TMP/nope/t.json" \
  "--export-json|/dev/null|not a regular file" "--export-markdown|$BG_TMP/adir/|not a file name" \
  "--export-json|$N|is the results file"; do
  IFS='|' read -r flag file why <<<"$spec"
  seqrun 2 "$flag $file is refused (exit 2)" "$N" 100 "$flag" "$file"
  has "$ERR_FILE" "$flag .*$why" "... naming the file and why"
  [ ! -e "$BG_TMP/cnt" ] && ok "... before the gate ran" || not_ok "$flag $file: the gate ran"
done
seqrun 2 "--export-markdown and --export-json naming one file" "$N" 100 --export-markdown "$BG_TMP/same" --export-json "$BG_TMP/./same"
has "$ERR_FILE" "name the same file" "the refusal says so"
for n in -1 101 x 1.5 "" 0x1; do
  seqrun 2 "--warmup '$n' is refused" "$N" 100 --warmup "$n"
  has "$ERR_FILE" "--warmup wants a whole number from 0 to 100, got '$n'" "... naming the value"
done
[ "$(nlines "$N")" = 0 ] && ok "no refused run left a record" || not_ok "records after refusals: $(nlines "$N")"
seqrun 0 "--warmup 0 is no warm-up" "$BG_TMP/z.jsonl" 100 --warmup 0
hasnt "$OUT_FILE" "warmup" "no warm-up line"
chmod 0555 "$BG_TMP/adir"
if [ "$(id -u)" != 0 ]; then
  seqrun 2 "--export-json into a directory that takes no file" "$N" 100 --export-json "$BG_TMP/adir/t.json"
  has "$ERR_FILE" "adir/t.json: cannot write there" "the refusal names the file"
else
  ok "# SKIP root writes into a read-only directory"; ok "# SKIP (same)"
fi
chmod 0755 "$BG_TMP/adir"

# (j) Hostile and unlucky cases: a device name with an escape, a newline and a '|'; the
# export's directory gone by the end (exit 1, naming it, the records kept); Ctrl-C (the
# export not written: an earlier file is kept whole).
cat >"$BG_TMP/odd_gate.sh" <<EOF
#!/bin/sh
[ "\$1" = --rmdir ] && rmdir "$BG_TMP/gone"
printf 'FAITHFUL_RESULT {"kind":"k","shape":"q","num_workers":8,"candidate":{"slowCTA_us":4.0,"wall_us":4.0,"sumCTA_us":4.0,"cos":0.9999,"status":"PASS"},"baseline_in_tree":{"slowCTA_us":5.0,"wall_us":5.0,"sumCTA_us":5.0,"cos":0.9999,"status":"PASS"},"slowCTA_ratio_base_over_cand":1.25,"verdict":"PASS_GATE","device":"cuda","device_name":"EVIL\\\\u001b]0;pwned\\\\u0007|x\\\\ny"}\\n'
EOF
chmod +x "$BG_TMP/odd_gate.sh"
printf '[box odd]\ntransport = local\ngate = %s\nallow = --rmdir\n' "$BG_TMP/odd_gate.sh" >>"$CONF"
expect_rc 0 "a device name with control bytes" "$BOXGATE" --config "$CONF" run odd --no-results --repeat 3 --export-markdown "$BG_TMP/odd.md"
grep -q "$e" "$OUT_FILE" && not_ok "the gate's escape reached stdout" || ok "the gate's escape never reaches stdout"
has "$OUT_FILE" '^PASS_GATE  median of 3: .*  -- EVIL\?\]0;pwned\?\|x\?y, 8 workers$' "control bytes shown as '?', the summary one line"
has "$BG_TMP/odd.md" '\| EVIL\?\]0;pwned\?\\\|x\?y, 8 workers \|$' "and in the table's cell, its '|' escaped"
mkdir -p "$BG_TMP/gone"
expect_rc 1 "the export's directory removed during the run: exit 1" "$BOXGATE" --config "$CONF" run odd --results "$BG_TMP/gone.jsonl" \
  --export-json "$BG_TMP/gone/t.json" -- --rmdir
has "$ERR_FILE" "^boxgate: run: --export-json $BG_TMP/gone/t\.json: No such file or directory\$" "the error names the file"
[ "$(nlines "$BG_TMP/gone.jsonl")" = 1 ] && ok "the run's record is kept" || not_ok "records: $(nlines "$BG_TMP/gone.jsonl")"
echo KEEP >"$BG_TMP/keep.json"
rm -f "$BG_TMP/cnt"
"$BOXGATE" --config "$CONF" run seq -v --results "$BG_TMP/int.jsonl" --repeat 3 --export-json "$BG_TMP/keep.json" -- \
  --values 100,sleep,100 --counter "$BG_TMP/cnt" >"$BG_TMP/int.out" 2>"$BG_TMP/int.err" &
pid=$!
for _ in $(seq 1 120); do grep -q 'sleeping until killed' "$BG_TMP/int.out" && break; sleep 0.25; done
kill -INT $pid; rc=0; wait $pid || rc=$?
[ "$rc" = 130 ] && ok "Ctrl-C during a run with --export-json: exit 130" || { not_ok "Ctrl-C exit $rc"; diag "$(cat "$BG_TMP/int.err")"; }
[ "$(cat "$BG_TMP/keep.json")" = KEEP ] && ok "the earlier export is kept whole" || not_ok "keep.json: $(head -c 200 "$BG_TMP/keep.json")"
has "$BG_TMP/int.err" "^boxgate: run: the run was cut short: $BG_TMP/keep\.json not written\$" "stderr says it was not written"

# (k) The demo gate on the built-in local box in a terminal, with a warm-up.
rm -f "$BG_TMP/dm.jsonl"
script -qec "$(printf '%q ' "$BOXGATE" run local --results "$BG_TMP/dm.jsonl" --warmup 1 --repeat 2 -- --kind demo --shape tiny --num-workers 1)" /dev/null \
  >"$BG_TMP/demo.out" 2>&1 </dev/null
sed 's/\x1b\[[0-9;]*m//g; s/\r$//' "$BG_TMP/demo.out" >"$BG_TMP/demo.txt"
has "$BG_TMP/demo.txt" "^  warmup 1/1  slowCTA [0-9.]+ us  ratio [0-9.]+  (PASS_GATE|BELOW_BAR)(  -- .*)?  \(warm-up: not counted\)\$" "the demo gate: a warm-up line"
[ "$(grep -cE '^  run [12]/2  slowCTA [0-9.]+ us  ratio [0-9.]+  (PASS_GATE|BELOW_BAR)(  -- .*)?$' "$BG_TMP/demo.txt")" = 2 ] \
  && ok "the demo gate: a line per run" || { not_ok "demo run lines"; diag "$(cat "$BG_TMP/demo.txt")"; }
has "$BG_TMP/demo.txt" "^(PASS_GATE|BELOW_BAR|NOISY)  median of 2: " "the demo gate: the point of the two runs"
hasnt "$BG_TMP/demo.txt" "FAITHFUL_RESULT" "the demo gate: no raw line on the terminal"
pycheck "the demo records: a warm-up and 2 runs, each with its raw line" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert [bool(x.get("warmup")) for x in r] == [True, False, False], r
assert all(x["raw"].startswith("FAITHFUL_RESULT {") for x in r)
' "$BG_TMP/dm.jsonl"
finish
