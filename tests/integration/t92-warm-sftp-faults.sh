#!/usr/bin/env bash
# push through a box's connection master (control_persist_s) (2 of 3, with t84 and t93):
# a master killed or stopped is passed by; a client stopped, then killed, mid-push and a
# master stopped mid-upload leave nothing half-written under the final name and no
# temporary file behind.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/warm_sftp.sh"

echo 'x = 1' >sub/m.py
expect_rc 0 "a first warm push leaves a master" warm push --root "$L" --boxes g1 sub/m.py
pid1=$(master_pid g1)
check "... there is one" test -n "$pid1"
# --- the master killed or stopped ---
pid=$(master_pid g1)
kill -9 "$pid"
echo 'x = 3' >sub/m.py
BOXGATE_TRACE=1 expect_rc 0 "a push after the master was SIGKILLed (stale socket)" warm push --root "$L" --boxes g1 sub/m.py
has "$ERR_FILE" "no connection master to use: connecting fresh" "... connects fresh"
check "... the file arrived" cmp -s sub/m.py "$R/sub/m.py"
pid=$(master_pid g1)
check "... and leaves a new master" test -n "$pid" -a "$pid" != "$pid1"
kill -STOP "$pid"
echo 'x = 4' >sub/m.py
BOXGATE_TRACE=1 expect_rc 0 "a push while the master is stopped" warm push --root "$L" --boxes g1 sub/m.py
has "$ERR_FILE" "did not greet: connecting fresh" "... passes it by"
check "... the file arrived" cmp -s sub/m.py "$R/sub/m.py"
kill -CONT "$pid"
kill -9 "$pid" 2>/dev/null
expect_rc 0 "a push leaves a master again" warm push --root "$L" --boxes g1 sub/m.py
pid=$(master_pid g1)
check "... there is one" test -n "$pid"

# --- the client stopped, then killed, mid-push ---
head -c $((64 << 20)) /dev/urandom >big2.bin
BOXGATE_TRACE=1 warm push --root "$L" --boxes g1 big2.bin >"$BG_TMP/k.out" 2>"$BG_TMP/k.err" &
cp=$!
for _ in $(seq 1 400); do grep -q "g1 probed" "$BG_TMP/k.err" && break; sleep 0.02; done
kill -STOP "$cp"
check "the push got through its probe" grep -q "g1 probed" "$BG_TMP/k.err"
# the master goes on with the upload until it needs the stopped client
for _ in $(seq 1 100); do [ "$(ntemps)" != 0 ] && break; sleep 0.05; done
kill -9 "$cp" 2>/dev/null
wait "$cp" 2>/dev/null
# (on a fast link the push may be done before the stop: either way nothing is left
# half-written, and a master cut short ends)
for _ in $(seq 1 150); do [ "$(ntemps)" = 0 ] && break; sleep 0.1; done
check "a client killed mid-push leaves no temporary file on the box" test "$(ntemps)" = 0
check "... nor a half-written file under its final name" sh -c "test ! -e '$R/big2.bin' || cmp -s big2.bin '$R/big2.bin'"
expect_rc 0 "the next push works" warm push --root "$L" --boxes g1 sub/m.py
check "... the file arrived" cmp -s sub/m.py "$R/sub/m.py"

# --- the master stopped mid-push: a lost connection, nothing half-written ---
expect_rc 0 "a push leaves a master" warm push --root "$L" --boxes g1 sub/m.py
pid=$(master_pid g1)
head -c $((64 << 20)) /dev/urandom >big3.bin
BOXGATE_TRACE=1 warm push --root "$L" --boxes g1 big3.bin >"$BG_TMP/s.out" 2>"$BG_TMP/s.err" &
cp=$!
for _ in $(seq 1 400); do grep -q "g1 probed" "$BG_TMP/s.err" && break; sleep 0.02; done
kill -STOP "$pid"
t0=$(now_ms)
rc=0
wait "$cp" || rc=$?
t1=$(now_ms)
kill -CONT "$pid"
if [ "$rc" = 0 ]; then
  check "a push done before its master stopped: the file whole" cmp -s big3.bin "$R/big3.bin"
else
  check "a push whose master stopped mid-upload: connection lost (exit 3)" test "$rc" = 3
  has "$BG_TMP/s.err" "connection lost: the connection master (sent nothing|went away)" "... says the master went silent"
  check "... after about three keepalives, not the 60 s stall limit ($((t1 - t0)) ms)" test $((t1 - t0)) -lt 30000
  check "... nothing half-written under the final name" test ! -e "$R/big3.bin"
fi
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
expect_rc 0 "the next push completes it" warm push --root "$L" --boxes g1 big3.bin
check "... the file whole" cmp -s big3.bin "$R/big3.bin"

warm disconnect >/dev/null 2>&1
finish
