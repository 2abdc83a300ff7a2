#!/usr/bin/env bash
# run, check and slots through a box's connection master (control_persist_s): the
# same judged lines and exit codes as over a fresh connection, and every guarantee
# of run kept: the watchdog's timeout, Ctrl-C and a SIGKILLed client leave no gate
# on the box; a dead master, a stale socket or a host key that known_hosts no longer
# holds end in a fresh connection (or the strict refusal), never in a wrong answer;
# file transfer (an overlay) goes through the master too.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/wait.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts
hosts_up 2
cp "$BG_ROOT/tests/integration/gates/fake_gate.sh" "$BG_HOST_1_ROOT/repo/gate.sh"
rm -rf "$BG_HOST_1_ROOT/.cache"
HB=2 GRACE=0.5 HB_MS=2000 GRACE_MS=500
COLD=$BG_TMP/cold.ini WARM=$BG_TMP/warm.ini
cat "$BG_CONFIG" >"$COLD"
cat >>"$COLD" <<EOF2

[box g1]
host = h1
repo = /root/repo
gate = gate.sh
require_gpu = no
heartbeat_timeout_s = $HB
kill_grace_s = $GRACE
keepalive_s = 1
allow = --kind --shape --num-workers --configs --mode --tag
EOF2
sed 's/^control_persist_s = 0$/control_persist_s = 60/' "$COLD" >"$WARM"
check "the warm config turns masters on" grep -q '^control_persist_s = 60$' "$WARM"
cold() { "$BOXGATE" --config "$COLD" "$@"; }
warm() { "$BOXGATE" --config "$WARM" "$@"; }
source "$(dirname "$0")/masters.sh"
dead() { ! kill -0 "$1" 2>/dev/null || [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" = Z ]; }
# through_master DESC: the last command's stderr ($ERR_FILE, BOXGATE_TRACE) says it
# went through h1's master
through_master() { has "$ERR_FILE" "(g1|h1) through the box's connection master" "$1"; }

# --- the first run leaves a master, the next goes through it ---
expect_rc 0 "a cold run installs the agent" cold run g1 -- --mode pass
BOXGATE_TRACE=1 expect_rc 0 "the first warm run connects fresh" warm run g1 -- --mode pass
hasnt "$ERR_FILE" "through the box's connection master" "... (no master yet)"
pid1=$(master_pid g1)
check "... and leaves a master for g1" test -n "$pid1"
a0=$(accepted 1)
BOXGATE_TRACE=1 expect_rc 0 "the next run" warm run g1 -- --mode pass
through_master "... goes through the master"
check "... with no new ssh session on the box" test "$(accepted 1)" = "$a0"

# --- the same judged lines and exit codes, cold and warm ---
# what differs by nature: timings, record ids
norm() { sed -E 's/[0-9]+(\.[0-9]+)? ?(ms|s)\b/T/g; s/"(elapsed_ms|wall_ms|ms|started|ended|run_id|id|ts|time)":[^,}]*/"\1":X/g' "$1"; }
THROUGH="through the box's connection master"
for m in "pass 0" "below 1" "liar 125" "garbage 125" "none 125" "fail 1"; do
  read -r mode want <<<"$m"
  cold_warm_same "--mode $mode" "$want" run g1 -- --mode "$mode"
done
THROUGH=

# --- the watchdog through the master ---
BOXGATE_TRACE=1 expect_rc 124 "a sleeping gate times out through the master (exit 124)" warm run g1 -v --timeout 2 -- --mode sleep --tag 1
through_master "... (it went through the master)"
has "$OUT_FILE" '"verdict":"TIMEOUT_HANG"' "... a TIMEOUT_HANG line was printed"
wait_gone 'sleep.1001\.5' && ok "... and the sleeping gate is gone" || not_ok "sleep 1001.5 survived"
BOXGATE_TRACE=1 expect_rc 124 "a gate ignoring SIGTERM times out through the master" warm run g1 --timeout 2 -- --mode ignore-term --tag 2
wait_gone 'sleep.102\.25' && ok "... and is gone" || not_ok "ignore-term survived"
expect_rc 124 "a gate whose children escaped times out through the master" warm run g1 --timeout 2 -- --mode escape --tag 3
wait_gone 'sleep.(2003|3003|4003)\.5' && ok "... and its escapees are gone" || not_ok "escapees survived"

# --- Ctrl-C through the master: the gate is killed, the master serves on ---
pidc=$(master_pid g1)
check "a master is there before Ctrl-C" test -n "$pidc"
BOXGATE_TRACE=1 "$BOXGATE" --config "$WARM" run g1 --timeout 300 -- --mode sleep --tag 7 >"$BG_TMP/c.out" 2>"$BG_TMP/c.err" &
cpid=$!
wait_running 'sleep.1007\.5' && ok "Ctrl-C: the gate was running first" || not_ok "Ctrl-C: the gate never started"
kill -INT $cpid; wait $cpid; rc=$?
[ "$rc" = 130 ] && ok "Ctrl-C through the master: the client exits 130" || not_ok "Ctrl-C: exit $rc"
grep -q "through the box's connection master" "$BG_TMP/c.err" && ok "... (that run went through the master)" ||
  not_ok "... (that run went through the master)"
wait_gone 'sleep.1007\.5' 8 && ok "Ctrl-C: the remote gate was killed" || not_ok "Ctrl-C: gate survived"
check "... and the master lives on" test "$(master_pid g1)" = "$pidc"
a0=$(accepted 1)
BOXGATE_TRACE=1 expect_rc 0 "the next run after Ctrl-C" warm run g1 -- --mode pass
through_master "... goes through the same master"
check "... without a new session" test "$(accepted 1)" = "$a0"

# --- a SIGKILLed client: the master ends as the client's connection would, and
# the agent's watchdog kills the gate ---
pidk=$(master_pid g1)
a0=$(accepted 1)
"$BOXGATE" --config "$WARM" run g1 --timeout 300 -- --mode sleep --tag 5 >"$BG_TMP/k.out" 2>"$BG_TMP/k.err" &
cpid=$!
wait_running 'sleep.1005\.5' && ok "SIGKILLed client: the gate was running first" || not_ok "SIGKILLed client: the gate never started"
check "... through the master (no new session)" test "$(accepted 1)" = "$a0"
kill -KILL $cpid; wait $cpid 2>/dev/null
gone_in_bound "SIGKILLed client through a master" 'sleep.1005\.5' "$(now_ms)"
check "... and the master ended" wait_until 10 dead "$pidk"
check "... leaving no agent of that run on the box" wait_until 10 gone 'agent-.*.run.*--tag.5(.|$)'
expect_rc 0 "the next run works (fresh)" warm run g1 -- --mode pass
has "$OUT_FILE" '^PASS_GATE ' "... and is judged"

# --- the master dies or stops mid-run: the client says the connection is lost (exit 3),
# as over a cut link, and the agent's watchdog kills the gate ---
expect_rc 0 "a run that leaves g1 a master" warm run g1 -- --mode pass
pidm=$(master_pid g1)
"$BOXGATE" --config "$WARM" run g1 --timeout 300 -- --mode sleep --tag 8 >"$BG_TMP/m.out" 2>"$BG_TMP/m.err" &
cpid=$!
wait_running 'sleep.1008\.5' && ok "master SIGKILLed mid-run: the gate was running first" || not_ok "the gate never started"
kill -KILL "$pidm"
t0=$(now_ms)
gone_in_bound "master SIGKILLed mid-run" 'sleep.1008\.5' "$t0"
wait $cpid; rc=$?
[ "$rc" = 3 ] && ok "... the client reports the lost connection (exit 3)" || not_ok "... client exit $rc"
has "$BG_TMP/m.err" "connection lost" "... naming it"
expect_rc 0 "a run that leaves g1 a master" warm run g1 -- --mode pass
pidm=$(master_pid g1)
"$BOXGATE" --config "$WARM" run g1 --timeout 300 -- --mode sleep --tag 9 >"$BG_TMP/m.out" 2>"$BG_TMP/m.err" &
cpid=$!
wait_running 'sleep.1009\.5' && ok "master stopped (SIGSTOP) mid-run: the gate was running first" || not_ok "the gate never started"
kill -STOP "$pidm"
t0=$(now_ms)
gone_in_bound "master stopped mid-run" 'sleep.1009\.5' "$t0"
# keepalive_s = 1: ssh calls a link silent for 3 keepalives (+1 s) dead; so does the client
# of a master that sends nothing (it sends a frame every keepalive_s while a command runs)
if wait_until 30 sh -c "! kill -0 $cpid 2>/dev/null"; then
  ok "... the client does not wait for it forever (gone $(($(now_ms) - t0)) ms after the stop)"
else
  not_ok "... the client still waits on a stopped master after 30 s"; kill -KILL $cpid
fi
wait $cpid; rc=$?
[ "$rc" = 3 ] && ok "... and reports the lost connection (exit 3)" || not_ok "... client exit $rc"
has "$BG_TMP/m.err" "the connection master sent nothing for 4 s" "... naming the silent master"
kill -CONT "$pidm"
check "... and the master, continued, finds its client gone and ends" wait_until 10 dead "$pidm"

# --- a dead master (stale socket) and a changed host key ---
expect_rc 0 "a run that leaves g1 a master" warm run g1 -- --mode pass
pid2=$(master_pid g1)
sock=$(master_pid g1 socket)
check "a master again" test -n "$pid2"
kill -9 "$pid2"; wait_until 10 dead "$pid2"
check "the killed master left its socket" test -S "$sock"
a0=$(accepted 1)
BOXGATE_TRACE=1 expect_rc 0 "run with a stale socket goes fresh" warm run g1 -- --mode pass
has "$OUT_FILE" '^PASS_GATE ' "... and is judged"
has "$ERR_FILE" "no connection master to use: connecting fresh" "... saying so (BOXGATE_TRACE)"
check "... over a new session" test "$(accepted 1)" = $((a0 + 1))
pid3=$(master_pid g1)
check "... and leaves a new master" test -n "$pid3" -a "$pid3" != "$pid2"
name1=$("$HOSTS" knownhost "$BG_HOSTS_DIR" 1 | cut -d' ' -f1)
cp "$BG_KNOWN_HOSTS" "$BG_TMP/kh.orig"
ssh-keygen -q -t ed25519 -N '' -f "$BG_TMP/otherkey" </dev/null
{ awk -v n="$name1" '$1 != n' "$BG_TMP/kh.orig"; echo "$name1 $(cut -d' ' -f1,2 "$BG_TMP/otherkey.pub")"; } >"$BG_KNOWN_HOSTS"
a0=$(accepted 1)
expect_rc 3 "known_hosts holds another key for h1 now: run is refused" warm run g1 -- --mode pass
has "$ERR_FILE" "HAS CHANGED" "... by the fresh connection's strict check"
hasnt "$OUT_FILE" "PASS_GATE" "... and no gate ran"
check "... the master was not used (no session either)" test "$(accepted 1)" = "$a0"
check "... and it ended" wait_until 10 dead "$pid3"
expect_rc 3 "check refuses h1 the same way" warm check h1
cp "$BG_TMP/kh.orig" "$BG_KNOWN_HOSTS"

# --- check and slots through the master ---
expect_rc 0 "check h1 (fresh: leaves a master)" warm check h1
cp "$OUT_FILE" "$BG_TMP/check1"
a0=$(accepted 1)
BOXGATE_TRACE=1 expect_rc 0 "check h1 again" warm check h1
check "... through the master (no new session)" test "$(accepted 1)" = "$a0"
check "... and prints the same table" diff "$BG_TMP/check1" "$OUT_FILE"
expect_rc 0 "slots --pool all" warm slots --pool all
cp "$OUT_FILE" "$BG_TMP/slots1"
a1=$(accepted 1) a2=$(accepted 2)
BOXGATE_TRACE=1 expect_rc 0 "slots --pool all again" warm slots --pool all
check "... through the masters (no new session on h1 or h2)" test "$(accepted 1)" = "$a1" -a "$(accepted 2)" = "$a2"
check "... and the same listing" diff <(sed -E 's/[0-9]+ ?s\b/T/g' "$BG_TMP/slots1") <(sed -E 's/[0-9]+ ?s\b/T/g' "$OUT_FILE")

# --- an overlay: its files go through the master too ---
echo "overlaid" >"$BG_TMP/ov.txt"
expect_rc 0 "a run that leaves g1 a master" warm run g1 -- --mode pass
a0=$(accepted 1)
BOXGATE_TRACE=1 expect_rc 0 "run --overlay through the master" warm run g1 --overlay "$BG_TMP/ov.txt=data/ov.txt" -- --mode pass
has "$ERR_FILE" "file transfer \(SFTP\) through the connection master" "... says the files go through the master"
has "$OUT_FILE" '^PASS_GATE ' "... and is judged"
check "... no new session, files included" test "$(accepted 1)" = "$a0"

warm disconnect >/dev/null 2>&1
finish
