#!/usr/bin/env bash
# boxgate run over real sshd: what a gate cannot do to its own verdict (1 of 3, with t90
# and t91). A crash, a non-zero exit or a CUDA error after a PASS line is INVALID, and no
# PASS is said, in the human output or in --json, before the end is known.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/run_trust.sh"

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

finish
