#!/usr/bin/env bash
# The README's main job: boxgate run on the built-in local box with the demo gate, and
# the watchdog through the local transport (hang, killed client, Ctrl-C).
source "$(dirname "$0")/lib.sh"
cd "$BG_TMP"
unset BOXGATE_CONFIG
export XDG_CONFIG_HOME=$BG_TMP/xdg
gone() { ! grep -qaE -- "$1" /proc/[0-9]*/cmdline 2>/dev/null; }
wait_gone() { local i; for i in $(seq 1 ${2:-40}); do gone "$1" && return 0; sleep 0.25; done; return 1; }

# The verdict of a timed run depends on the machine (a loaded CPU can make the
# candidate lose): the test checks the run is judged, not who wins.
rc=0
"$BOXGATE" run local -- --kind demo --shape q_b --num-workers 8 >"$OUT_FILE" 2>"$ERR_FILE" || rc=$?
case $rc in 0|1) ok "the main job ran: boxgate run local -- --kind demo --shape q_b --num-workers 8 (exit $rc)" ;;
  *) not_ok "the main job exited $rc"; diag "$(cat "$ERR_FILE")" ;; esac
has "$OUT_FILE" '^FAITHFUL_RESULT \{.*"num_workers":8.*"verdict":"(PASS_GATE|BELOW_BAR)"' "the demo gate printed its result line"
if nvidia-smi -L >/dev/null 2>&1; then ok "GPU present: the CUDA build ran"; else
  has "$OUT_FILE" '"device":"cpu"' "no GPU here: the CPU twin ran, labelled device cpu"; fi
stated=$(sed -n 's/^FAITHFUL_RESULT .*"verdict":"\([A-Z_]*\)".*/\1/p' "$OUT_FILE")
has "$ERR_FILE" "^boxgate: $stated +slowCTA .*ratio" "boxgate judged the result and agrees with the gate ($stated)"
expect_rc 0 "config check works with no configuration file" "$BOXGATE" config check
has "$OUT_FILE" '\[box local\]' "the built-in local box is listed"
expect_rc 2 "a flag the demo gate does not take is refused" "$BOXGATE" run local -- --kind demo --frobnicate
has "$ERR_FILE" 'local.*--frobnicate' "the refusal names the box and the flag"
expect_rc 125 "the stub variant is judged INVALID" "$BOXGATE" run local -- --kind demo --shape q_b --num-workers 4 --variant stub
expect_rc 0 "exec on the local box" "$BOXGATE" exec --boxes local -- 'echo hello; echo oops >&2; exit 0'
has "$OUT_FILE" '^local: hello$' "local exec output is prefixed"
has "$ERR_FILE" '^local: oops$' "local exec stderr is prefixed"

expect_rc 124 "a hung demo gate is killed at the timeout" "$BOXGATE" run local --timeout 2 -- --kind demo --variant hang --num-workers 2
has "$OUT_FILE" '"verdict":"TIMEOUT_HANG"' "TIMEOUT_HANG printed"
wait_gone 'boxgate-demo-gate.*--variant.hang' && ok "no demo gate process is left" || not_ok "demo gate survived"

# started LOG: the gate announced it is spinning (so the agent and gate are up).
started() { local i; for i in $(seq 1 120); do grep -q 'spinning until killed' "$1" && return 0; sleep 0.25; done; return 1; }
"$BOXGATE" run local --timeout 300 -- --kind demo --variant hang --num-workers 3 >"$BG_TMP/k.log" 2>&1 &
pid=$!
started "$BG_TMP/k.log" || diag "the hung gate did not start"
kill -KILL $pid; wait $pid 2>/dev/null
wait_gone 'variant.hang.--num-workers.3' 20 && ok "SIGKILLed client: the local gate is gone (the agent saw EOF)" || not_ok "local gate survived a killed client"

"$BOXGATE" run local --timeout 300 -- --kind demo --variant hang --num-workers 5 >"$BG_TMP/c.log" 2>&1 &
pid=$!
started "$BG_TMP/c.log" || diag "the hung gate did not start"
kill -INT $pid; wait $pid; rc=$?
[ "$rc" = 130 ] && ok "Ctrl-C exits 130" || { not_ok "Ctrl-C exit $rc"; diag "$(cat "$BG_TMP/c.log")"; }
wait_gone 'variant.hang.--num-workers.5' 20 && ok "Ctrl-C killed the local gate" || not_ok "local gate survived Ctrl-C"
finish
