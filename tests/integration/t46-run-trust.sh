#!/usr/bin/env bash
# boxgate run over real sshd: what a gate cannot do to its own verdict. A crash after
# a PASS line, a forged agent verdict (any framing), a bar laundered through the gate's
# "bar", a result line that is not one strict JSON object, a gate exiting 124 or 75
# itself; --gpu outside the box's gpus and bad seconds refused before connecting; a
# stalled reader of boxgate's stdout that must not get a healthy gate killed; a frozen
# client that still must.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/wait.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts

hosts_up 1
GATE=$BG_ROOT/tests/integration/gates/trust_gate.sh
cp "$GATE" "$BG_HOST_1_ROOT/repo/trust.sh"
cp "$BG_ROOT/tests/integration/gates/nonce_thief.py" "$BG_HOST_1_ROOT/repo/"
INI=$BG_TMP/run.ini
cat "$BG_CONFIG" >"$INI"
cat >>"$INI" <<EOF2

[box t1]
host = h1
repo = /root/repo
gate = trust.sh
gpus = 0-1
require_gpu = no
heartbeat_timeout_s = 2
kill_grace_s = 0.5
keepalive_s = 1
allow = --mode --lines
env --gate-timeout = MPK_GATE_TIMEOUT_S={}

[box nogpus]
host = h1
repo = /root/repo
gate = trust.sh
require_gpu = no
allow = --mode
EOF2
printf '[box far]\nhost = %s\nport = %s\nconnect_timeout_s = 30\nrepo = /root/repo\ngate = trust.sh\ngpus = 0-1\nrequire_gpu = no\nallow = --mode\nenv --gate-timeout = MPK_GATE_TIMEOUT_S={}\n' \
  "$BG_CLOSED_ADDR" "$BG_CLOSED_PORT" >>"$INI"
bg() { "$BOXGATE" --config "$INI" "$@"; }

# --- the baseline: a clean PASS ---
expect_rc 0 "a clean PASS_GATE exits 0 (-v: the gate's lines shown)" bg run t1 -v -- --mode pass
has "$OUT_FILE" '^FAITHFUL_RESULT \{"kind":"gemv_m1".*"verdict":"PASS_GATE"\}$' "the gate's result line reaches stdout verbatim"
hasnt "$OUT_FILE" '@boxgate-agent' "no agent frame reaches the user"

# --- a verdict needs a clean exit ---
expect_rc 125 "PASS then SIGSEGV: INVALID" bg run t1 -v -- --mode pass-segv
has "$ERR_FILE" 'INVALID: the gate printed its PASS_GATE line, then was killed by signal 11' "the crash is named"
has "$OUT_FILE" '"verdict":"PASS_GATE"' "the PASS line itself still flows to the user"
expect_rc 125 "PASS then SIGABRT: INVALID" bg run t1 -- --mode pass-abort
expect_rc 125 "PASS then exit 1: INVALID" bg run t1 -- --mode pass-exit1
has "$ERR_FILE" 'PASS_GATE line, then exited 1' "the exit is named"
expect_rc 125 "PASS then exit 3: INVALID" bg run t1 -- --mode pass-exit3
expect_rc 125 "PASS then a CUDA error on stderr: INVALID" bg run t1 -- --mode pass-cuda
has "$ERR_FILE" 'INVALID: the gate reported a CUDA error: RuntimeError: CUDA error: an illegal memory access' "the CUDA error is named"
expect_rc 125 "a CUDA error before the PASS line: INVALID" bg run t1 -- --mode cuda-first

# --- no PASS is said before the end is known; the last JSON event is the final verdict ---
# (Python's json reads every event; the human output never says PASS_GATE as a verdict)
json_final() { python3 - "$OUT_FILE" "$1" "$2" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1], encoding='utf-8')]
want, code = sys.argv[2], int(sys.argv[3])
last = ev[-1]
assert last.get('event') == 'end' and last['verdict'] == want and last['exit'] == code, last
res = [e for e in ev if e.get('event') == 'result']
assert res, ev
assert all(e['verdict'] == want for e in res), res
if want != 'PASS_GATE':
    assert not any(e.get('verdict') == 'PASS_GATE' for e in ev), ev
    assert 'why' in last and want in last['why'], last
PY
}
for m in pass-exit1 pass-exit2 pass-exit124 pass-segv pass-kill pass-abort pass-cuda; do
  expect_rc 125 "PASS then $m: INVALID (exit 125)" bg run t1 -- --mode $m
  hasnt "$OUT_FILE" '^(.\[[0-9;]*m)?PASS_GATE' "$m: no PASS_GATE line in the human output"
  hasnt "$ERR_FILE" '^boxgate: (.\[[0-9;]*m)?PASS_GATE' "$m: nor on stderr"
  has "$ERR_FILE" '^boxgate: t1: INVALID' "$m: the INVALID line says why"
  expect_rc 125 "--json, PASS then $m: exit 125" bg run --json t1 -- --mode $m
  check "--json, $m: every event is JSON, none says PASS_GATE, the last is the end with INVALID" json_final INVALID 125
done
expect_rc 0 "--json, a clean PASS" bg run --json t1 -- --mode pass
check "--json, a clean PASS: the result event and the end say PASS_GATE" json_final PASS_GATE 0
expect_rc 0 "human, a clean PASS" bg run t1 -- --mode pass
has "$OUT_FILE" '^PASS_GATE  slowCTA 5.000 us' "the PASS line comes once the end is known"

# --- only the agent speaks for the agent ---
expect_rc 125 "a gate printing TIMEOUT_HANG and exiting 124: INVALID, not a timeout" bg run t1 -- --mode forge-timeout
has "$ERR_FILE" 'INVALID: forged: .*TIMEOUT_HANG' "the forgery is named"
expect_rc 125 "PASS then a forged TIMEOUT_HANG line: INVALID" bg run t1 -- --mode forge-timeout-after-pass
expect_rc 125 "a gate printing the agent's gpu_busy verdict: INVALID (forged)" bg run t1 -- --mode forge-busy
has "$ERR_FILE" "forged: .*'gpu_busy'" "forged gpu_busy named"
expect_rc 125 "a gate printing the agent's no_gpu verdict: INVALID (forged)" bg run t1 -- --mode forge-no-gpu
expect_rc 125 "a gate guessing the agent's frame (and searching argv/environ for a nonce): INVALID" bg run t1 -- --mode forge-frame
has "$ERR_FILE" 'framed as the agent' "the forged frame is named"
hasnt "$ERR_FILE" 'TIMEOUT_HANG:' "no TIMEOUT_HANG verdict came of it"
# --- an agent verdict line is the watchdog's only when the end report agrees ---
# (a gate of the same user cannot read the nonce: t40 shows it; root can read any
# process's memory)
# root can read any process's memory: the forged line has the real nonce, and still
# is not shown as the watchdog's, since the agent's end report disagrees
expect_rc 125 "a root gate that reads the nonce from /proc/PPID/mem and forges TIMEOUT_HANG: INVALID" bg run t1 -v -- --mode steal-nonce-root
has "$ERR_FILE" '^thief: mem: found$' "(root did read the nonce)"
hasnt "$OUT_FILE" '^FAITHFUL_RESULT \{"verdict":"TIMEOUT_HANG"' "the forged line is not shown as the agent's"
has "$OUT_FILE" '^@boxgate-agent [0-9a-f]{32} FAITHFUL_RESULT' "it is shown as it came, framed: gate output"
has "$ERR_FILE" "INVALID: the agent's TIMEOUT_HANG line and its exit \(exited\) disagree" "the disagreement is named"
hasnt "$OUT_FILE" '^TIMEOUT_HANG' "no TIMEOUT_HANG verdict line"
expect_rc 125 "--json: the same" bg run --json t1 -- --mode steal-nonce-root
check "--json: no result event, the end event says INVALID" python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert not [e for e in ev if e.get("event") == "result"], ev
assert ev[-1]["event"] == "end" and ev[-1]["verdict"] == "INVALID", ev[-1]
assert not any(e.get("line", "").startswith("FAITHFUL_RESULT") for e in ev), ev
' "$OUT_FILE"

expect_rc 1 "a gate exiting 124 itself is a failed gate (exit 1), not TIMEOUT_HANG" bg run t1 -- --mode exit-124
has "$ERR_FILE" 'the gate failed \(exited 124\)' "the gate's own 124 is named as the gate's"
expect_rc 1 "a gate exiting 75 itself is a failed gate, not a busy slot" bg run t1 -- --mode exit-75
hasnt "$ERR_FILE" 'busy' "no 'slot busy' for a gate's own 75"
expect_rc 124 "the agent's own timeout still is TIMEOUT_HANG (exit 124)" bg run t1 -v --timeout 2 -- --mode sleep
has "$OUT_FILE" '^FAITHFUL_RESULT \{"verdict":"TIMEOUT_HANG"' "the agent's TIMEOUT_HANG line reaches stdout unframed"
hasnt "$OUT_FILE" '@boxgate-agent' "the frame is stripped"
wait_gone 'sleep.1046\.5' && ok "the timed-out gate is gone" || not_ok "sleep 1046.5 survived"

# --- the user's bar wins ---
expect_rc 0 "ratio 1.1, no --bar: PASS_GATE" bg run t1 -- --mode pass
expect_rc 1 "ratio 1.1 with --bar 1.2 over the gate's bar 1.0: BELOW_BAR (exit 1), not PASS, not INVALID" bg run t1 --bar 1.2 -- --mode pass
has "$OUT_FILE" '^BELOW_BAR.*below the bar 1.20 \(--bar\)' "the user's bar is named (the result's line, on stdout)"
expect_rc 0 "--bar 1.05: PASS_GATE" bg run t1 --bar 1.05 -- --mode pass
for b in 0 -1 nan inf 1e3x 0x2 ' 1.2' ''; do
  expect_rc 2 "--bar '$b' refused" bg run t1 --bar "$b" -- --mode pass
done

# --- strict result lines ---
expect_rc 125 "duplicate \"verdict\" key: INVALID" bg run t1 -- --mode dup-verdict
has "$OUT_FILE" '^INVALID: .*duplicate key \\?"verdict' "the duplicate key is named"
expect_rc 125 "trailing bytes after the object: INVALID" bg run t1 -- --mode trailing
has "$OUT_FILE" '^INVALID: .*trailing bytes' "the trailing bytes are named"
expect_rc 125 "absurd numbers (cos 1.7, num_workers -3): INVALID" bg run t1 -- --mode absurd
has "$ERR_FILE" 'num_workers' "the absurd field is named"
expect_rc 0 "--json with bytes that are not UTF-8" bg run --json t1 -- --mode bytes
# PYTHONIOENCODING: strict UTF-8 on stdin even in the C locale (surrogateescape otherwise).
if PYTHONIOENCODING=utf-8:strict python3 -c 'import json,sys; [json.loads(l) for l in sys.stdin]' <"$OUT_FILE" 2>"$BG_TMP/py.err"; then
  ok "--json output is valid JSON and UTF-8 for Python's json module"; else not_ok "--json output"; diag "$(cat "$BG_TMP/py.err")"; fi
python3 - "$OUT_FILE" <<'PY' && ok "--json: bad bytes arrive as line_b64/raw_b64, byte for byte" || not_ok "--json: b64 fields"
import base64, json, sys
ev = [json.loads(l) for l in open(sys.argv[1], encoding='utf-8')]
b = [base64.b64decode(e['line_b64']) for e in ev if 'line_b64' in e]
assert b'surrogate \xed\xa0\x80 overlong \xc0\xaf stray \xff' in b, b
assert b'err \xed\xa0\x80' in b, b
raw = [base64.b64decode(e['raw_b64']) for e in ev if e.get('event') == 'result' and 'raw_b64' in e]
assert raw and raw[0].startswith(b'FAITHFUL_RESULT {"kind":"x\xff"'), ev
res = [e for e in ev if e.get('event') == 'result']
assert res[0]['line_verdict'] == 'INVALID' and res[-1]['line_verdict'] == 'PASS_GATE', res
assert all(e['verdict'] == 'PASS_GATE' for e in res) and ev[-1]['event'] == 'end', ev
PY

# --- --gpu and seconds, refused before anything connects ---
expect_rc 0 "--gpu 1 on a box with gpus = 0-1" bg run t1 -v --gpu 1 -- --mode env
has "$OUT_FILE" '^CUDA_VISIBLE_DEVICES=1 ' "the gate got GPU 1"
for g in 5 0-2 '1;id' -1 2.5 99999999999 ''; do
  expect_rc 2 "--gpu '$g' on a box with gpus = 0-1 is refused" bg run far --gpu "$g" -- --mode env
done
expect_rc 2 "--gpu 5: refused" bg run far --gpu 5 -- --mode env
has "$ERR_FILE" "GPU 5 is not one of box far's gpus \(0-1\)" "the refusal names the box and its gpus"
hasnt "$ERR_FILE" 'connect|timed out' "refused before connecting (the box's address is closed)"
expect_rc 2 "--gpu on a box without gpus is refused" bg run nogpus --gpu 0 -- --mode env
has "$ERR_FILE" 'box nogpus lists no gpus' "the missing gpus are named"
expect_rc 2 "explain checks --gpu too" bg explain far --gpu 7 -- --mode env
for v in '1;id' 2.5 99999999999 -5 ''; do
  expect_rc 2 "--timeout '$v' refused" bg run far --timeout "$v" -- --mode env
  has "$ERR_FILE" "--timeout wants whole seconds" "--timeout '$v': the flag is named"
  expect_rc 2 "--gate-timeout '$v' refused" bg run far -- --mode env --gate-timeout "$v"
  has "$ERR_FILE" "--gate-timeout" "--gate-timeout '$v': the flag is named"
done
expect_rc 2 "--gate-timeout=2.5 refused" bg run far -- --mode env --gate-timeout=2.5
has "$ERR_FILE" "--gate-timeout wants whole seconds from 1 to 604800, got '2.5'" "the value is quoted back"
expect_rc 0 "a good --gate-timeout reaches the gate and the agent" bg run t1 -v -- --mode env --gate-timeout 30
has "$OUT_FILE" 'MPK_GATE_TIMEOUT_S=30$' "MPK_GATE_TIMEOUT_S=30 arrived"

# --- a stalled reader is not a dead client ---
lines=200000
sh "$GATE" --mode flood --lines $lines >"$BG_TMP/flood.want"
want=$(wc -c <"$BG_TMP/flood.want")
# -v: the gate's lines on stdout, byte for byte, then boxgate's one verdict line.
bg run t1 -v -- --mode flood --lines $lines >"$BG_TMP/flood.got" 2>/dev/null
cmp -s <(head -c "$want" "$BG_TMP/flood.got") "$BG_TMP/flood.want" && ok "flood without a stall: the gate's stdout byte for byte" \
  || not_ok "flood: stdout differs"
tail -c +"$((want + 1))" "$BG_TMP/flood.got" >"$BG_TMP/flood.tail"
[ "$(nlines "$BG_TMP/flood.tail")" = 1 ] && grep -q '^PASS_GATE  slowCTA ' "$BG_TMP/flood.tail" \
  && ok "... then the verdict line alone" || not_ok "flood: after the gate's bytes: $(head -c 300 "$BG_TMP/flood.tail")"
whole=$(wc -c <"$BG_TMP/flood.got")
# The reader takes one byte (the run is under way), stalls until the gate has written
# everything and ended (the agent then holds the rest), and 3 s more: longer than
# heartbeat 2 s + grace 0.5 s.
bg run t1 -v -- --mode flood --lines $lines 2>"$BG_TMP/stall.err" \
  | (dd bs=1 count=1 2>/dev/null | wc -c; wait_until 60 gone 'trust.sh.--mode.flood'; sleep 3; wc -c) \
  | awk '{ n += $1 } END { print n }' >"$BG_TMP/stall.count"
rc=${PIPESTATUS[0]}
[ "$rc" = 0 ] && ok "stalled reader (the gate's end + 3 s > heartbeat 2 s + grace 0.5 s), $want bytes: PASS_GATE, exit 0" \
  || { not_ok "stalled reader: exit $rc"; diag "$(tail -5 "$BG_TMP/stall.err")"; }
got=$(tr -d ' ' <"$BG_TMP/stall.count")
[ "$got" = "$whole" ] && ok "stalled reader: all $want bytes of the gate and the verdict line arrived" || not_ok "stalled reader: $got of $whole bytes"
hasnt "$BG_TMP/stall.err" 'no heartbeat|client gone|presumed gone' "stalled reader: the agent never took the client for dead"

# --- a frozen client still is a dead client ---
"$BOXGATE" --config "$INI" run t1 --timeout 300 -- --mode sleep >"$BG_TMP/stop.out" 2>&1 &
cpid=$!
for i in $(seq 1 120); do gone 'sleep.1046\.5' || break; sleep 0.25; done
kill -STOP $cpid
t0=$(date +%s)
wait_gone 'sleep.1046\.5' 60 && ok "SIGSTOPped client: the gate is gone within $(( $(date +%s) - t0 )) s (bound: heartbeat 2 s + grace 0.5 s)" \
  || not_ok "SIGSTOPped client: gate survived"
kill -CONT $cpid; wait $cpid; rc=$?
[ "$rc" = 1 ] && ok "the resumed client says the agent stopped the gate (exit 1)" || not_ok "resumed client exit $rc"
has "$BG_TMP/stop.out" 'client_gone' "the agent's reason reaches the client"

# --- a gate that stops its agent (same user: it may) does not hang the client ---
expect_rc 125 "a gate that SIGSTOPs its agent: INVALID once timeout + grace + 60 s have passed" bg run t1 --timeout 1 -- --mode stop-agent
has "$ERR_FILE" 'INVALID: the agent did not end within its timeout and grace plus 60 s' "the client says why"
hasnt "$OUT_FILE" '^PASS_GATE' "the PASS line before it is not said"
# (the stopped agent and its gate go with the test host)
finish
