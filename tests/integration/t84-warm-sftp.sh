#!/usr/bin/env bash
# push, pull, status and rollback through a box's connection master (control_persist_s):
# file transfer (SFTP) runs on the master's own session, so a second push pays no
# handshake; the same files, modes, records and exit codes as over a fresh connection,
# and every guarantee of a push kept: a read-only target, a client or master killed or
# stopped mid-upload leave nothing half-written under the final name and no temporary
# file behind; another uid gets nothing from the master.
source "$(dirname "$0")/lib.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts
hosts_up 1
PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '/\.pyenv/' | paste -sd:)
COLD=$BG_TMP/cold.ini WARM=$BG_TMP/warm.ini
cat "$BG_CONFIG" >"$COLD"
printf '\n[box g1]\nhost = h1\nrepo = /root/repo\nrequire_gpu = no\nkeepalive_s = 1\n' >>"$COLD"
sed 's/^control_persist_s = 0$/control_persist_s = 60/' "$COLD" >"$WARM"
check "the warm config turns masters on" grep -q '^control_persist_s = 60$' "$WARM"
cold() { "$BOXGATE" --config "$COLD" "$@"; }
warm() { "$BOXGATE" --config "$WARM" "$@"; }
source "$(dirname "$0")/masters.sh"
R=$BG_HOST_1_ROOT/repo
ntemps() { find "$R" -name '.*.boxgate-*.tmp*' 2>/dev/null | wc -l; }
L=$BG_TMP/l
mkdir -p "$L/sub"
cd "$L" || exit 1
through() { has "$ERR_FILE" "g1 file transfer \(SFTP\) through the connection master" "$1"; }

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
norm() { sed -E 's/[0-9]+(\.[0-9]+)? ?(ms|s|MB\/s|MiB\/s)\b/T/g; s/"(elapsed_ms|ms|ts|time|sha256|bak_sha256|pushed_at)":[^,}]*/"\1":X/g; s/[0-9a-f]{64}/H/g; s/[0-9a-f]{12}(\.\.\.)?/H/g; s/boxgate-[^.]*\.tmp/boxgate-T.tmp/g' "$1"; }
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

# --- hostile requests from a client of our own uid ---
expect_rc 0 "a push leaves a master" warm push --root "$L" --boxes g1 sub/m.py
pid=$(master_pid g1)
sock=$(master_pid g1 socket)
/usr/bin/python3 "$BG_ROOT/tests/integration/master_raw.py" "$sock" /root/repo >"$BG_TMP/raw.out" 2>&1
diag "$(cat "$BG_TMP/raw.out")"
for n in short-op put-without-fd path-with-nul unknown-op path-longer-than-frame; do
  has "$BG_TMP/raw.out" "^$n R -10$" "a bad request ($n) is refused as such (BG_EPROTO)"
done
for n in put-dirfd put-wronlyfd put-sockfd; do
  has "$BG_TMP/raw.out" "^$n R -7$" "an upload from a descriptor that cannot be read ($n) fails as a local read error"
done
has "$BG_TMP/raw.out" "^lstat-with-two-fds R 0$" "descriptors passed with a call that takes none are closed, the call runs"
has "$BG_TMP/raw.out" "^get-a-directory R -8$" "a download of a directory is the box's refusal"
has "$BG_TMP/raw.out" "^lstat-70000-byte-path R -8$" "a 70000-byte path is the box's refusal"
has "$BG_TMP/raw.out" "^frame-longer-than-max closed" "a frame longer than the protocol allows ends the client"
check "... and the master serves on" kill -0 "$pid"
check "... no file left by the refused uploads" test -z "$(ls -A "$R" | grep -E 'fd\.tmp')"
echo 'x = 20' >sub/m.py
a0=$(accepted 1)
expect_rc 0 "the next push through it" warm push --root "$L" --boxes g1 sub/m.py
check "... went through the same master" test "$(accepted 1)" = "$a0"

# --- an older boxgate's master: passed by and told to end ---
warm disconnect >/dev/null 2>&1
/usr/bin/python3 "$BG_ROOT/tests/integration/master_raw.py" --old-master "$sock" >"$BG_TMP/old.out" 2>&1 &
op=$!
for _ in $(seq 1 100); do grep -q listening "$BG_TMP/old.out" && break; sleep 0.05; done
echo 'x = 21' >sub/m.py
BOXGATE_TRACE=1 expect_rc 0 "a push beside an older protocol's master" warm push --root "$L" --boxes g1 sub/m.py
has "$ERR_FILE" "speaks an older protocol: it ends; connecting fresh" "... passes it by"
wait "$op"
has "$BG_TMP/old.out" "^got Q" "... and tells it to end (QUIT)"
check "... the file arrived" cmp -s sub/m.py "$R/sub/m.py"
check "... and it leaves a master of its own" test -n "$(master_pid g1)"

# --- a zero-byte file, a full disk, a file that shrinks, a big directory pulled ---
: >empty.txt
expect_rc 0 "a zero-byte file warm" warm push --root "$L" --boxes g1 empty.txt
check "... arrives empty" test -f "$R/empty.txt" -a ! -s "$R/empty.txt"
mkdir -p full
head -c $((2 << 20)) /dev/urandom >full/big.bin
"$HOSTS" exec "$D" 1 sh -c 'mkdir -p /root/repo/full && mount -t tmpfs -o size=1m tmpfs /root/repo/full'
pid=$(master_pid g1)
THROUGH="g1 file transfer \(SFTP\) through the connection master"
cold_warm_same "a push onto a full disk" 1 push --root "$L" --boxes g1 full/big.bin
THROUGH=
check "... the master lives on after the box refused the upload" test -n "$pid" -a "$(master_pid g1)" = "$pid"
cat "$BG_TMP/w.out" "$BG_TMP/w.err" >"$BG_TMP/w.all"
has "$BG_TMP/w.all" "no space left" "... says so warm"
"$HOSTS" exec "$D" 1 umount /root/repo/full
mkdir -p many
for i in $(seq 1 1500); do : >"$R/many/f$i"; done 2>/dev/null || { mkdir -p "$R/many"; for i in $(seq 1 1500); do : >"$R/many/f$i"; done; }
rm -rf "$BG_TMP/pm"
# the full-disk push before may leave no master (or one still ending): a status first
# leaves a live one, so the pull below is what is judged
warm status --root "$L" --boxes g1 sub/m.py >/dev/null 2>&1
a0=$(accepted 1)
BOXGATE_TRACE=1 expect_rc 0 "a pull of a directory of 1500 files warm" warm pull --boxes g1 --to "$BG_TMP/pm" many
check "... all of them" test "$(ls "$BG_TMP/pm/g1/many" | wc -l)" = 1500
check "... through the master" test "$(accepted 1)" = "$a0"
[ "$(accepted 1)" = "$a0" ] || diag "$(grep -i 'master' "$ERR_FILE" | head -5)"

# --- another uid gets nothing ---
if setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
  OTHER=$(mktemp -d /tmp/bgt84.XXXXXX)
  XDG_RUNTIME_DIR=$OTHER warm push --root "$L" --boxes g1 sub/m.py >/dev/null 2>&1
  s=$(ls "$OTHER"/boxgate/*.sock)
  check "a master of our own under another runtime directory" test -S "$s"
  chmod 711 "$OTHER" "$OTHER/boxgate"
  chmod 666 "$s"
  reply=$(setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c '
import socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
p = b"/root/repo/a.py"
op = struct.pack(">IQ", 1, 0) + struct.pack(">I", len(p)) + p
try:
    s.sendall(b"P" + struct.pack(">I", len(op)) + op)
except OSError:
    pass
try:
    got = s.recv(100)
except ConnectionResetError:  # closed with our request unread: a reset, still no byte
    got = b""
print(len(got))' "$s" 2>"$BG_TMP/uid.err")
  check "another uid that reaches the socket gets not a byte for a file call" test "$reply $(cat "$BG_TMP/uid.err")" = "0 "
  XDG_RUNTIME_DIR=$OTHER warm disconnect >/dev/null 2>&1
  rm -rf "$OTHER"
else
  ok "# SKIP setpriv cannot switch to uid 65534 here"
fi
warm disconnect >/dev/null 2>&1
finish
