#!/usr/bin/env bash
# boxgate run over real sshd: what a gate cannot do to its own verdict (3 of 3, with t46
# and t90). A stalled reader of boxgate's stdout must not get a healthy gate killed; a
# frozen client still must; a gate that stops its own agent does not hang the client.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/run_trust.sh"

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
