#!/usr/bin/env bash
# push and pull through a box's connection master (control_persist_s) (3 of 3, with t84
# and t92): hostile requests from a client of our own uid are refused and the master
# serves on, as it does after a client that closed its command and went at once; an older
# boxgate's master is passed by and told to end; a zero-byte file, a full disk and a
# directory of 1500 files; another uid gets nothing from the master.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/warm_sftp.sh"

echo 'x = 1' >sub/m.py
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

# --- a client that closes its command and goes at once ---
# The master, busy (here: stopped), wakes with a frame to send and finds the client gone
# before it read the client's CLOSE: what the client said before it went still counts.
pid=$(master_pid g1)
/usr/bin/python3 "$BG_ROOT/tests/integration/master_raw.py" --close-and-go "$sock" "$pid" >"$BG_TMP/go.out" 2>&1
has "$BG_TMP/go.out" "^started S$" "a command started through the master"
has "$BG_TMP/go.out" "^after idle$" "... closed by a client that went at once: the master serves on"
check "... the same master" test "$(master_pid g1)" = "$pid"
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
mport=$(master_port "$pid")
THROUGH="g1 file transfer \(SFTP\) through the connection master"
cold_warm_same "a push onto a full disk" 1 push --root "$L" --boxes g1 full/big.bin
THROUGH=
check "... the master lives on after the box refused the upload" test -n "$pid" -a "$(master_pid g1)" = "$pid"
if [ "$(master_pid g1)" != "$pid" ]; then
  # how its connection ended: "Received disconnect ... boxgate master done" (it chose to
  # end), or its sessions' "Close session" lines and no disconnect (it exited without one:
  # killed, crashed, or its _exit when a client went mid-command)
  diag "master $pid, its connection from port ${mport:-?}: $(grep -E " port ${mport:-none}( |:|\$)" "$BG_HOSTS_DIR/h1/sshd.log" | tail -8)"
fi
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
