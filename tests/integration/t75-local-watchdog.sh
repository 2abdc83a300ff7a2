#!/usr/bin/env bash
# The watchdog through the local transport with the demo gate: a hung gate killed at the
# timeout, a SIGKILLed and a SIGSTOPped client's gate stopped within heartbeat + grace,
# Ctrl-C. (The README's main job on the local box is t70.)
# bg-test: serial: it bounds how soon the agent stops a gate; nothing else runs beside it
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/wait.sh"
cd "$BG_TMP"
unset BOXGATE_CONFIG
export XDG_CONFIG_HOME=$BG_TMP/xdg
# mine PATTERN: pids of this test's processes (their cwd is the local box's repo, $BG_TMP)
# whose command line matches PATTERN: a second suite's t75 beside it runs the same gates
mine() { local p; for p in $(pgrep -f -- "$1"); do [ "/proc/$p/cwd" -ef "$BG_TMP" ] && echo "$p"; done; }
gone() { [ -z "$(mine "$1")" ]; }
wait_gone() { local i; for i in $(seq 1 ${2:-40}); do gone "$1" && return 0; sleep "${3:-0.25}"; done; return 1; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# The watchdog runs get a short heartbeat and grace through a configuration of their own.
HB=3 GRACE=1
WATCH_INI=$BG_TMP/watch.ini
printf '[defaults]\nheartbeat_timeout_s = %d\nkill_grace_s = %d\n' "$HB" "$GRACE" >"$WATCH_INI"

expect_rc 124 "a hung demo gate is killed at the timeout" "$BOXGATE" run local -v --timeout 2 -- --kind demo --variant hang --num-workers 2
has "$OUT_FILE" '"verdict":"TIMEOUT_HANG"' "TIMEOUT_HANG printed"
wait_gone 'boxgate-demo-gate.*--variant.hang' && ok "no demo gate process is left" || not_ok "demo gate survived"

# started LOG: the gate announced it is spinning (so the agent and gate are up).
started() { local i; for i in $(seq 1 120); do grep -q 'spinning until killed' "$1" && return 0; sleep 0.25; done; return 1; }
"$BOXGATE" --config "$WATCH_INI" run local --timeout 300 -- --kind demo --variant hang --num-workers 3 >"$BG_TMP/k.log" 2>&1 &
pid=$!
started "$BG_TMP/k.log" && ! gone 'variant.hang.--num-workers.3' && ok "SIGKILLed client: the gate was running first" \
  || { not_ok "SIGKILLed client: the hung gate never started"; diag "$(cat "$BG_TMP/k.log")"; }
kill -KILL $pid; wait $pid 2>/dev/null
t0=$(now_ms)
if wait_gone 'variant.hang.--num-workers.3' 600 0.1; then
  took=$(($(now_ms) - t0))
  # Bound: heartbeat + grace (+1 s for this poll); EOF on the agent's stdin usually ends it sooner.
  [ "$took" -le $(((HB + GRACE + 1) * 1000)) ] \
    && ok "SIGKILLed client: the local gate is gone within heartbeat $HB s + grace $GRACE s (took $took ms)" \
    || not_ok "SIGKILLed client: the local gate took $took ms, over heartbeat $HB s + grace $GRACE s (+1 s)"
else not_ok "local gate survived a killed client"; fi

# A sub-second heartbeat (heartbeat_timeout_s = 0.5, kill_grace_s = 0.25): a live client
# keeps its gate (heartbeats come every 0.125 s), a frozen one loses it within 0.75 s.
printf '[defaults]\nheartbeat_timeout_s = 0.5\nkill_grace_s = 0.25\n' >"$BG_TMP/fast.ini"
"$BOXGATE" --config "$BG_TMP/fast.ini" run local --timeout 300 -- --kind demo --variant hang --num-workers 4 >"$BG_TMP/f.log" 2>&1 &
pid=$!
# gate4_gone: no demo gate process (argv[0], not the client or agent naming it) of this run.
gate4_gone() { gone '^[^ ]*boxgate-demo-gate[^ ]* .*--num-workers 4( |$)'; }
started "$BG_TMP/f.log" && sleep 1.5 && ! gate4_gone \
  && ok "heartbeat_timeout_s = 0.5: the gate of a live client runs on past 3 heartbeat timeouts" \
  || { not_ok "heartbeat_timeout_s = 0.5: the live client's gate did not run on"; diag "$(cat "$BG_TMP/f.log")"; }
kill -STOP $pid
t0=$(now_ms)
if wait_until 30 gate4_gone; then
  took=$(($(now_ms) - t0))
  [ "$took" -le 1750 ] && ok "SIGSTOPped client: gone within heartbeat 0.5 s + grace 0.25 s (took $took ms)" \
    || not_ok "SIGSTOPped client: the gate took $took ms, over heartbeat 0.5 s + grace 0.25 s (+1 s)"
else not_ok "SIGSTOPped client: the gate survived"; fi
kill -CONT $pid; wait $pid; rc=$?
[ "$rc" = 1 ] && ok "the resumed client says the agent stopped the gate (exit 1)" \
  || { not_ok "resumed client exit $rc"; diag "$(cat "$BG_TMP/f.log")"; }
has "$BG_TMP/f.log" 'client_gone' "the agent's reason (client_gone) reaches the client"

"$BOXGATE" run local --timeout 300 -- --kind demo --variant hang --num-workers 5 >"$BG_TMP/c.log" 2>&1 &
pid=$!
started "$BG_TMP/c.log" && ! gone 'variant.hang.--num-workers.5' && ok "Ctrl-C: the gate was running first" \
  || { not_ok "Ctrl-C: the hung gate never started"; diag "$(cat "$BG_TMP/c.log")"; }
kill -INT $pid; wait $pid; rc=$?
[ "$rc" = 130 ] && ok "Ctrl-C exits 130" || { not_ok "Ctrl-C exit $rc"; diag "$(cat "$BG_TMP/c.log")"; }
wait_gone 'variant.hang.--num-workers.5' 20 && ok "Ctrl-C killed the local gate" || not_ok "local gate survived Ctrl-C"
finish
