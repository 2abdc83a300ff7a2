#!/usr/bin/env bash
# push, pull, status and rollback through a box's connection master (control_persist_s)
# (1 of 3, with t92 and t93): file transfer (SFTP) runs on the master's own session, so a
# second push pays no handshake; the same files, modes, records and exit codes as over a
# fresh connection; a read-only target refused the same way.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/warm_sftp.sh"

# --- the first push leaves a master, the next pushes, pulls, status and rollback use it ---
echo 'print(1)' >a.py
BOXGATE_TRACE=1 expect_rc 0 "a first warm push connects fresh" warm push --root "$L" --boxes g1 a.py
hasnt "$ERR_FILE" "through the connection master" "... (no master yet)"
pid1=$(master_pid g1)
check "... and leaves a master for g1" test -n "$pid1"
a0=$(accepted 1)
echo 'print(2)' >a.py
BOXGATE_TRACE=1 expect_rc 0 "a second push" warm push --root "$L" --boxes g1 a.py
through "... sends its file through the master"
check "... the file arrived" cmp -s a.py "$R/a.py"
echo 'print(3)' >a.py
BOXGATE_TRACE=1 expect_rc 0 "a third push" warm push --root "$L" --boxes g1 a.py
BOXGATE_TRACE=1 expect_rc 0 "a pull" warm pull --boxes g1 --to "$BG_TMP/pulled" a.py
check "... pulled what was pushed" cmp -s a.py "$BG_TMP/pulled/g1/a.py"
BOXGATE_TRACE=1 expect_rc 0 "status" warm status --root "$L" --boxes g1 a.py
BOXGATE_TRACE=1 expect_rc 0 "rollback" warm rollback --root "$L" g1 a.py
check "... put the .bak back" grep -q 'print(2)' "$R/a.py"
check "push+push+pull+status+rollback: no new ssh session on the box" test "$(accepted 1)" = "$a0"
check "... through the same master" test "$(master_pid g1)" = "$pid1"

# --- the same files, modes, lines and exit codes, cold and warm ---
# what differs by nature: timings, digests, temporary names
printf 'x = 1\n' >sub/m.py
chmod 750 sub/m.py
odd=$'we ird\nname\'s "q".py'
printf 'odd\n' >"sub/$odd"
head -c $((16 << 20)) /dev/urandom >big.bin
# push twice: the first creates (cold); the file removed on the box, warm creates it again
for f in sub/m.py "sub/$odd" big.bin; do
  expect_rc 0 "cold push of $(printf %q "$f")" cold push --root "$L" --boxes g1 -- "$f"
  cm=$(stat -c %a "$R/$f")
  rm -f "$R/$f"
  BOXGATE_TRACE=1 expect_rc 0 "... and warm" warm push --root "$L" --boxes g1 -- "$f"
  through "... through the master"
  check "... the same bytes" cmp -s "$L/$f" "$R/$f"
  check "... the same mode ($cm)" test "$(stat -c %a "$R/$f")" = "$cm"
done
check "no temporary file left on the box" test "$(ntemps)" = 0
n=10
bump() { n=$((n + 1)); echo "x = $n" >"$L/sub/m.py"; }
SETUP=bump
cold_warm_same "push of a changed file" 0 push --root "$L" --boxes g1 sub/m.py
SETUP=
cold_warm_same "status" 0 status --root "$L" --boxes g1 sub/m.py a.py big.bin
bump_push() { bump; cold push --root "$L" --boxes g1 sub/m.py >/dev/null 2>&1; }
SETUP=bump_push
cold_warm_same "rollback" 0 rollback --root "$L" --boxes g1 sub/m.py
SETUP=
rm -rf "$BG_TMP/pc" "$BG_TMP/pw"
expect_rc 0 "cold pull" cold pull --boxes g1 --to "$BG_TMP/pc" sub big.bin
a0=$(accepted 1)
BOXGATE_TRACE=1 expect_rc 0 "warm pull" warm pull --boxes g1 --to "$BG_TMP/pw" sub big.bin
check "... through the master (no new ssh session)" test "$(accepted 1)" = "$a0"
check "... the same tree, bytes and modes as cold" diff -r "$BG_TMP/pc" "$BG_TMP/pw"
check "... the 16 MiB file whole" cmp -s big.bin "$BG_TMP/pw/g1/big.bin"
cold_warm_same "pull of a missing file" 1 pull --boxes g1 --to "$BG_TMP/px" nosuch.py
check "the master lives on after the pulls" test "$(master_pid g1)" = "$pid1"

# --- a target directory that is read-only ---
mkdir -p ro && echo 'r = 1' >ro/x.py
"$HOSTS" exec "$D" 1 sh -c 'mkdir -p /root/repo/ro && mount --bind /root/repo/ro /root/repo/ro && mount -o remount,bind,ro /root/repo/ro'
cold_warm_same "a push into a read-only directory" 1 push --root "$L" --boxes g1 ro/x.py
cat "$BG_TMP/w.out" "$BG_TMP/w.err" >"$BG_TMP/w.all"
has "$BG_TMP/w.all" "g1: ro/x.py: .*not writable" "... says so warm"
"$HOSTS" exec "$D" 1 umount /root/repo/ro

warm disconnect >/dev/null 2>&1
finish
