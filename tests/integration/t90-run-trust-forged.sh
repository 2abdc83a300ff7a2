#!/usr/bin/env bash
# boxgate run over real sshd: what a gate cannot do to its own verdict (2 of 3, with t46
# and t91). A forged agent verdict (any framing, even with the nonce read by root), a bar
# laundered through the gate's "bar", a result line that is not one strict JSON object, a
# gate exiting 124 or 75 itself; --gpu outside the box's gpus and bad seconds refused
# before connecting.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/run_trust.sh"

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

finish
