#!/usr/bin/env bash
# The results store: boxgate run appends one schema-1 record per gate invocation
# (the demo gate on the built-in local box, fake gates that fail or crash), records
# survive SIGKILL during a burst of appends, and boxgate results show/export read them.
# Python's json and csv modules are the reference for what a line means.
source "$(dirname "$0")/lib.sh"
cd "$BG_TMP"
unset BOXGATE_CONFIG
export XDG_CONFIG_HOME=$BG_TMP/xdg XDG_DATA_HOME=$BG_TMP/data HOME=$BG_TMP/home
mkdir -p "$HOME"
DEFAULT=$XDG_DATA_HOME/boxgate/results.jsonl

# pycheck DESC SCRIPT ARGS...: passes when the Python script exits 0; what it prints is shown otherwise.

# (a) The main job on the local box appends exactly one record to the default file.
rc=0
"$BOXGATE" run local -- --kind demo --shape tiny --num-workers 8 >"$OUT_FILE" 2>"$ERR_FILE" || rc=$?
case $rc in 0|1) ok "the demo gate ran on the local box (exit $rc)" ;;
  *) not_ok "the demo gate exited $rc"; diag "$(cat "$ERR_FILE")" ;; esac
said=$(sed -n 's/^\(PASS_GATE\|BELOW_BAR\|INVALID\) .*/\1/p' "$OUT_FILE" | tail -1)
has "$ERR_FILE" "^boxgate: local: recorded in $DEFAULT\$" "the summary says where the record went (the default file under XDG_DATA_HOME)"
[ "$(nlines "$DEFAULT")" = 1 ] && ok "exactly one record appended" || not_ok "$(nlines "$DEFAULT") lines in $DEFAULT"
pycheck "the record's fields: schema, run_id, box, transport, command, gate_args, times, exit, verdict, point, result" '
import json, re, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
r = recs[0]
assert r["schema"] == 1, r["schema"]
assert re.fullmatch(r"[0-9a-f]{16}", r["run_id"]), r["run_id"]
assert r["seq"] == 0 and isinstance(r["boxgate"], str) and r["boxgate"]
assert r["box"] == "local" and r["transport"] == "local" and r["host"] == "localhost", r
assert "boxgate-demo-gate --kind demo --shape tiny --num-workers 8" in r["command"], r["command"]
assert r["gate_args"] == ["--kind", "demo", "--shape", "tiny", "--num-workers", "8"], r["gate_args"]
pat = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"
assert re.fullmatch(pat, r["start"]) and re.fullmatch(pat, r["end"]), (r["start"], r["end"])
assert r["start"] <= r["end"]
assert r["exit"] == int(sys.argv[2]), (r["exit"], sys.argv[2])
assert r["verdict"] == sys.argv[3], (r["verdict"], sys.argv[3])
# The demo gate exits 0 on PASS_GATE and 1 on BELOW_BAR (a slow, loaded machine).
assert r["agent"]["rc"] is not None and r["agent"]["gate_exit"] == int(sys.argv[2]), r["agent"]
assert r["point"]["kind"] == "demo" and r["point"]["shape"] == "tiny" and r["point"]["num_workers"] == 8, r["point"]
assert r["device"] in ("cpu", "cuda"), r["device"]
s = r["result"]["candidate"]["slowCTA_us"]
assert isinstance(s, (int, float)) and s > 0, s
assert r["raw"].startswith("FAITHFUL_RESULT ") and json.loads(r["raw"][len("FAITHFUL_RESULT "):]) == r["result"]
' "$DEFAULT" "$rc" "$said"

# --results FILE, the [defaults] results key (relative to the configuration's directory), --no-results.
expect_rc 125 "run --results FILE" "$BOXGATE" run local --results "$BG_TMP/given/r.jsonl" -- --kind demo --shape tiny --num-workers 4 --variant stub
has "$ERR_FILE" "recorded in $BG_TMP/given/r.jsonl\$" "--results FILE: the summary names it"
pycheck "--results FILE: one INVALID record with exit 125 and the stub's candidate" '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert len(recs) == 1 and recs[0]["verdict"] == "INVALID" and recs[0]["exit"] == 125, recs
assert recs[0]["stated"] == "INVALID" and recs[0]["point"]["candidate"] == "stub", recs[0]["point"]
' "$BG_TMP/given/r.jsonl"
[ "$(nlines "$DEFAULT")" = 1 ] && ok "--results FILE leaves the default file alone" || not_ok "the default file grew"
mkdir -p "$BG_TMP/conf"
printf '[defaults]\nresults = keep/runs.jsonl\n' >"$BG_TMP/conf/boxgate.ini"
expect_rc 125 "run with [defaults] results = keep/runs.jsonl" "$BOXGATE" --config "$BG_TMP/conf/boxgate.ini" run local -- --kind demo --shape tiny --num-workers 4 --variant stub
[ "$(nlines "$BG_TMP/conf/keep/runs.jsonl")" = 1 ] && ok "the config key's path is relative to the configuration's directory" \
  || { not_ok "no record in conf/keep/runs.jsonl"; diag "$(cat "$ERR_FILE")"; }
expect_rc 125 "run --results wins over the config key" "$BOXGATE" --config "$BG_TMP/conf/boxgate.ini" run local --results "$BG_TMP/given/r.jsonl" -- --kind demo --shape tiny --num-workers 4 --variant stub
[ "$(nlines "$BG_TMP/given/r.jsonl"):$(nlines "$BG_TMP/conf/keep/runs.jsonl")" = 2:1 ] && ok "--results FILE got the record, the config key's file did not" \
  || not_ok "records: given $(nlines "$BG_TMP/given/r.jsonl"), config $(nlines "$BG_TMP/conf/keep/runs.jsonl")"
expect_rc 125 "run --no-results" "$BOXGATE" run local --no-results -- --kind demo --shape tiny --num-workers 4 --variant stub
[ "$(nlines "$DEFAULT")" = 1 ] && ok "--no-results appends nothing" || not_ok "--no-results appended to $DEFAULT"
hasnt "$ERR_FILE" "recorded in" "--no-results: no 'recorded in'"
expect_rc 2 "--results and --no-results together are refused" "$BOXGATE" run local --no-results --results x.jsonl -- --kind demo
# stdout and stderr into one file: the order in which they were said
rc=0
"$BOXGATE" run local --results "$BG_TMP" -- --kind demo --shape tiny --num-workers 4 --iters 2 >"$BG_TMP/both.out" 2>&1 || rc=$?
[ "$rc" = 1 ] && ok "a record that cannot be written is an error (exit 1)" || { not_ok "unwritable record: exit $rc"; diag "$(cat "$BG_TMP/both.out")"; }
pycheck "the verdict is said first (stdout), then the error naming the file (stderr)" '
import sys
lines = open(sys.argv[1]).read().splitlines()
v = [i for i, l in enumerate(lines) if l.startswith(("PASS_GATE", "BELOW_BAR"))]
e = [i for i, l in enumerate(lines) if l.startswith("boxgate: ") and "record was not kept" in l and sys.argv[2] in l]
assert v and e and v[0] < e[0], lines
' "$BG_TMP/both.out" "$BG_TMP"

# TIMEOUT_HANG and Ctrl-C end an invocation too: each still leaves its record.
H=$BG_TMP/hang.jsonl
expect_rc 124 "a hung demo gate times out" "$BOXGATE" run local --results "$H" --timeout 2 -- --kind demo --shape tiny --variant hang --num-workers 2
"$BOXGATE" run local --results "$H" --timeout 300 -- --kind demo --shape tiny --variant hang --num-workers 3 >"$BG_TMP/c.log" 2>&1 &
pid=$!
for i in $(seq 1 120); do grep -q 'spinning until killed' "$BG_TMP/c.log" && break; sleep 0.25; done
kill -INT $pid; wait $pid; rc=$?
[ "$rc" = 130 ] && ok "Ctrl-C exits 130" || { not_ok "Ctrl-C exit $rc"; diag "$(cat "$BG_TMP/c.log")"; }
pycheck "records of a TIMEOUT_HANG (exit 124, the agent's timeout) and of a Ctrl-C (exit 130, no verdict)" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 2, r
assert r[0]["exit"] == 124 and r[0]["verdict"] == "TIMEOUT_HANG" and r[0]["agent"]["why"] == "timeout", r[0]
assert r[0]["point"]["num_workers"] == 2 and r[0]["point"]["kind"] == "demo", r[0]["point"]
assert r[1]["exit"] == 130 and r[1]["verdict"] is None and r[1]["point"]["num_workers"] == 3, r[1]
assert r[0]["run_id"] != r[1]["run_id"]
' "$H"

# (b) Fake gates that fail or crash still get a record.
FAKE=$BG_ROOT/tests/integration/gates/fake_gate.sh
cat >"$BG_TMP/crash_gate.sh" <<'GATE'
#!/bin/sh
# Prints a passing result, then dies of SIGSEGV.
printf 'FAITHFUL_RESULT {"kind":"gemv_m1","shape":"q_b","num_workers":8,"candidate":{"slowCTA_us":4.0,"wall_us":5.0,"sumCTA_us":400,"cos":0.9999,"status":"PASS"},"baseline_in_tree":{"slowCTA_us":5.2,"wall_us":6.1,"sumCTA_us":402,"cos":1.0,"status":"PASS"},"slowCTA_ratio_base_over_cand":1.3,"verdict":"PASS_GATE"}\n'
kill -SEGV $$
GATE
chmod +x "$BG_TMP/crash_gate.sh"
printf '[box fake]\ntransport = local\ngate = %s\nallow = --mode --kernel\n[box crash]\ntransport = local\ngate = %s\nallow = --kernel\n' \
  "$FAKE" "$BG_TMP/crash_gate.sh" >"$BG_TMP/fake.ini"
F=$BG_TMP/fake.jsonl
expect_rc 1 "a failing fake gate (exit 3, no result)" "$BOXGATE" --config "$BG_TMP/fake.ini" run fake --results "$F" -- --mode fail --kernel 'k,"1".cu'
expect_rc 125 "a crashing gate (a result, then SIGSEGV) is INVALID" "$BOXGATE" --config "$BG_TMP/fake.ini" run crash --results "$F" -- --kernel k2
expect_rc 125 "a gate printing a garbled result line is INVALID" "$BOXGATE" --config "$BG_TMP/fake.ini" run fake --results "$F" -- --mode garbage
expect_rc 0 "a passing fake gate" "$BOXGATE" --config "$BG_TMP/fake.ini" run fake --results "$F" -- --mode pass --kernel 'k,"1".cu'
pycheck "failed and crashed gates have records: exit, null or INVALID verdict, the agent's report" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 4, len(r)
assert r[0]["exit"] == 1 and r[0]["verdict"] is None and r[0]["result"] is None and r[0]["raw"] is None, r[0]
assert r[0]["agent"]["gate_exit"] == 3 and "exited 3" in r[0]["why"], (r[0]["agent"], r[0]["why"])
assert r[0]["point"]["candidate"] == "k,\"1\".cu", r[0]["point"]
assert r[1]["exit"] == 125 and r[1]["verdict"] == "INVALID" and r[1]["stated"] == "PASS_GATE", r[1]
assert r[1]["agent"]["gate_signal"] == 11 and r[1]["agent"]["gate_exit"] is None, r[1]["agent"]
assert r[1]["result"]["candidate"]["slowCTA_us"] == 4.0 and r[1]["point"]["num_workers"] == 8
assert r[2]["exit"] == 125 and r[2]["verdict"] == "INVALID" and r[2]["result"] is None, r[2]
assert r[2]["raw"].startswith("FAITHFUL_RESULT {\"verdict\": PASS_GATE oops"), r[2]["raw"]
assert r[3]["exit"] == 0 and r[3]["verdict"] == "PASS_GATE" and r[3]["box"] == "fake", r[3]
assert len({x["run_id"] for x in r}) == 4
' "$F"

# (c) SIGKILL during bursts of 200 appends into one file.
BURST=$BG_TMP/appendburst
BUILD=${BG_BUILD:-$BG_ROOT/build}
# A sanitizer build's library links only with the sanitizers' runtimes.
SAN=
nm "$BUILD/libboxgate.a" 2>/dev/null | grep -q __asan_ && SAN="-fsanitize=address,undefined"
# shellcheck disable=SC2086 # SAN is zero or one word
if cc $SAN -std=c11 -D_GNU_SOURCE -I"$BG_ROOT" $(pkg-config --cflags libcjson 2>/dev/null) -o "$BURST" \
    "$BG_ROOT/tests/integration/appendburst/appendburst.c" "$BUILD/libboxgate.a" -lcjson -lcrypto -lpthread -lm 2>"$BG_TMP/cc.err"; then
  ok "the append-burst helper builds against libboxgate.a"
else not_ok "the append-burst helper does not build"; diag "$(cat "$BG_TMP/cc.err")"; fi
K=$BG_TMP/burst.jsonl
# The writer says through a fifo when it is AT records in; odd runs then hold
# there for the kill (so a cut is certain), even runs append on, racing it.
runs=6 cut=0 held=0
mkfifo "$BG_TMP/burst.fifo"
for i in $(seq 1 $runs); do
  hold=$((i % 2))
  "$BURST" "$K" 200 $((i * 37 % 150 + 10)) "$BG_TMP/burst.fifo" $hold &
  pid=$!
  timeout 60 head -c1 "$BG_TMP/burst.fifo" >/dev/null
  kill -KILL $pid 2>/dev/null
  wait $pid 2>/dev/null
  [ "$?" = 137 ] && cut=$((cut + 1)) && held=$((held + hold))
done
[ "$held" = 3 ] && [ "$cut" -ge 3 ] && [ "$(nlines "$K")" -lt $((runs * 200)) ] \
  && ok "SIGKILL landed mid-burst ($cut of $runs runs killed, $held while held, $(nlines "$K") lines)" \
  || not_ok "no burst was cut ($cut killed, $held held, $(nlines "$K") lines)"
pycheck "after the kills every complete line parses and at most the last is torn" '
import json, sys
data = open(sys.argv[1], "rb").read()
lines = data.split(b"\n")
tail = lines.pop()  # b"" when the file ends with a newline
for n, l in enumerate(lines, 1):
    o = json.loads(l)
    assert isinstance(o, dict) and o["schema"] == 1, n
if tail:
    try:
        json.loads(tail); raise SystemExit("a whole record without its newline")
    except ValueError:
        pass
assert len(lines) > 0
' "$K"
whole=$(nlines "$K")
# A write cut short by a crash (power loss; SIGKILL above lands between writes) leaves a torn last line:
printf '{"schema":1,"pid":1,"seq":' >>"$K"
expect_rc 0 "results show reports a torn last line and does not fail" "$BOXGATE" results show "$K"
has "$ERR_FILE" "^boxgate: $K: the last line is torn \(an interrupted write\), skipped\$" "the torn line is reported on stderr"
[ "$(($(nlines "$OUT_FILE") - 1))" = "$whole" ] && ok "every whole record is a row ($whole)" || not_ok "$(nlines "$OUT_FILE") table lines for $whole records"
"$BURST" "$K" 3 && expect_rc 0 "an append after the torn line" "$BOXGATE" results show "$K" --json
has "$ERR_FILE" "$K: 1 line is not a record \(line $((whole + 1))\), skipped" "the torn line, now ended, is reported as not a record"
[ "$(nlines "$OUT_FILE")" = $((whole + 3)) ] && ok "the records appended after it are whole" || not_ok "$(nlines "$OUT_FILE") records, wanted $((whole + 3))"

# (d) show, --json, --last, export --csv.
expect_rc 0 "results show FILE" "$BOXGATE" results show "$F"
pycheck "the table: a header and one aligned row per record, with verdicts" '
import sys
rows = open(sys.argv[1]).read().splitlines()
h = rows[0].split()
assert h == ["START", "BOX", "DEVICE", "KIND", "SHAPE", "NW", "CANDIDATE", "SLOWCTA_US", "RATIO", "VERDICT", "RUN"], h
assert len(rows) == 5, rows
assert [r.split()[-2] for r in rows[1:]] == ["-", "INVALID", "INVALID", "PASS_GATE"], rows
col = rows[0].index("VERDICT")
assert all(r[col - 2:col] == "  " for r in rows[1:]), rows
assert rows[4].split()[-4:-1] == ["4.000", "1.300", "PASS_GATE"], rows[4]
assert all(len(r.split()[-1]) == 16 for r in rows[1:]), rows  # the run id
' "$OUT_FILE"
expect_rc 0 "results (no subcommand) is show, on the default file" "$BOXGATE" results
[ "$(nlines "$OUT_FILE")" = 2 ] && ok "the default file's one record is a row" || not_ok "results: $(cat "$OUT_FILE")"
has "$OUT_FILE" '^[-0-9T:.Z]+ +local +(cpu|[^ ].*[^ ]) +demo +tiny +8 +candidate ' "the row: start, box, device, kind, shape, workers, candidate"
expect_rc 0 "results show --json --last 2" "$BOXGATE" results show "$F" --json --last 2
pycheck "--json prints the stored records, --last N the last N" '
import json, sys
got = [json.loads(l) for l in open(sys.argv[1])]
want = [json.loads(l) for l in open(sys.argv[2])][-2:]
assert got == want, (got, want)
' "$OUT_FILE" "$F"
expect_rc 2 "--last 0 is refused" "$BOXGATE" results show "$F" --last 0
expect_rc 0 "results export --csv" "$BOXGATE" results export "$F" --csv
pycheck "the CSV is RFC 4180 (Python's csv): a header, one row per record, quoted fields intact" '
import csv, json, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
recs = [json.loads(l) for l in open(sys.argv[2])]
h = rows[0]
assert len(rows) == 1 + len(recs), len(rows)
assert h[:3] == ["run_id", "seq", "start"] and "verdict" in h and "point.candidate" in h, h
for row, r in zip(rows[1:], recs):
    d = dict(zip(h, row))
    assert len(row) == len(h)
    assert d["run_id"] == r["run_id"] and d["command"] == r["command"], d
    assert d["verdict"] == (r["verdict"] or ""), d
    assert d["point.candidate"] == (r["point"]["candidate"] or ""), d
    assert json.loads(d["gate_args"]) == r["gate_args"]
    assert d["exit"] == str(r["exit"])
assert rows[1][h.index("point.candidate")] == "k,\"1\".cu"
assert float(rows[4][h.index("result.candidate.slowCTA_us")]) == 4.0
' "$OUT_FILE" "$F"
head -c 300 "$OUT_FILE" | grep -q $'\r$' && ok "CSV lines end in CRLF" || not_ok "CSV lines do not end in CRLF"
expect_rc 2 "--csv belongs to export" "$BOXGATE" results show "$F" --csv
expect_rc 0 "results compare of a file with itself finds no point slower" "$BOXGATE" results compare "$F" "$F"

# (e) A missing file is a clear error naming it.
expect_rc 2 "results show of a missing file is exit 2" "$BOXGATE" results show "$BG_TMP/nope.jsonl"
has "$ERR_FILE" "$BG_TMP/nope.jsonl: No such file" "the error names the missing file"
expect_rc 2 "with XDG_DATA_HOME unset the default is under HOME" env -u XDG_DATA_HOME "$BOXGATE" results
has "$ERR_FILE" "$HOME/.local/share/boxgate/results.jsonl: No such file" "the error names ~/.local/share/boxgate/results.jsonl"
finish
