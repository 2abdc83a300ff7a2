#!/usr/bin/env bash
# Connection masters (control_persist_s) against real sshd test hosts: a second exec
# reuses the first one's session (one "Accepted publickey" in sshd's log for two
# commands); output, exit codes, signals, stdin and --timeout come through exactly as
# over a fresh connection; a killed master, a stale or wrong-mode socket, a host key
# that known_hosts no longer holds, another uid, sshd going away, disconnect and idle
# expiry all end in a fresh connection or no master, never in a wrong answer.
source "$(dirname "$0")/lib.sh"
source "$BG_ROOT/tests/integration/wait.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts
hosts_up 2

MDIR=$XDG_RUNTIME_DIR/boxgate
WARM=$BG_TMP/warm.ini
sed 's/^control_persist_s = 0$/control_persist_s = 60/' "$BG_CONFIG" >"$WARM"
check "the test config turns masters on" grep -q '^control_persist_s = 60$' "$WARM"
cold() { "$BOXGATE" --config "$BG_CONFIG" "$@"; }
warm() { "$BOXGATE" --config "$WARM" "$@"; }
source "$(dirname "$0")/masters.sh"
sock_of() { ls "$MDIR"/*.sock 2>/dev/null | head -n 1; }
no_sock() { [ -z "$(ls "$MDIR"/*.sock 2>/dev/null)" ]; }
# dead PID: gone, or a zombie (a master is nobody's child to reap but init's or a subreaper's)
dead() { ! kill -0 "$1" 2>/dev/null || [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" = Z ]; }

# --- off: control_persist_s = 0 leaves nothing behind ---
expect_rc 0 "exec with control_persist_s = 0" cold exec -n -w h1 -- true
check "... leaves no master" no_sock

# --- reuse ---
a0=$(accepted 1)
expect_rc 0 "first exec to h1" warm exec -n -w h1 -- echo one
check "... leaves a master socket (0600) in \$XDG_RUNTIME_DIR/boxgate (0700)" \
  test "$(stat -c %a "$MDIR")" = 700 -a "$(stat -c %a "$(sock_of)")" = 600
pid1=$(master_pid h1)
check "config check lists h1's master" test -n "$pid1"
warm config check >"$OUT_FILE" 2>/dev/null
has "$OUT_FILE" "^; connection master: h1: pid $pid1, root@[^ ]+, idle [0-9.]+ s of 60 s, SHA256:" "... as a comment line"
BOXGATE_TRACE=1 warm exec -n -w h1 -- echo two >"$OUT_FILE" 2>"$ERR_FILE"
has "$ERR_FILE" "h1 through the box's connection master" "second exec goes through the master"
has "$OUT_FILE" "^h1: two$" "... and prints its output"
check "two commands, one 'Accepted publickey' in sshd's log" test "$(accepted 1)" = $((a0 + 1))
check "the master is its own session, not our child" \
  test "$(ps -o sid= -p "$pid1" | tr -d ' ')" = "$pid1"
check "the master holds no pipe of ours (stdout is /dev/null)" \
  test "$(readlink "/proc/$pid1/fd/1")" = /dev/null

# --- exactly as a fresh connection ---
head -c 300000 /dev/urandom >"$BG_TMP/in.bin"
printf 'a\nb\n\001\377 no newline' >"$BG_TMP/raw"
cp "$BG_TMP/raw" "$BG_HOST_1_ROOT/raw"
same() { # DESC ARGS...: exec --json gives the same lines and exit, cold and warm
  local desc=$1 rc1=0 rc2=0; shift
  cold exec --json -w h1 "$@" <"$BG_TMP/in.bin" >"$BG_TMP/c.out" 2>"$BG_TMP/c.err" || rc1=$?
  warm exec --json -w h1 "$@" <"$BG_TMP/in.bin" >"$BG_TMP/w.out" 2>"$BG_TMP/w.err" || rc2=$?
  if [ "$rc1" = "$rc2" ] && cmp -s "$BG_TMP/c.out" "$BG_TMP/w.out" && cmp -s "$BG_TMP/c.err" "$BG_TMP/w.err"
  then ok "$desc (exit $rc1)"; else
    not_ok "$desc: cold exit $rc1, warm exit $rc2"
    diag "cold: $(head -c 800 "$BG_TMP/c.out") $(head -c 400 "$BG_TMP/c.err")"
    diag "warm: $(head -c 800 "$BG_TMP/w.out") $(head -c 400 "$BG_TMP/w.err")"
  fi
}
a1=$(accepted 1)
same "stdout, stderr and exit 7" -n -- 'echo out; echo err >&2; printf "x"; exit 7'
same "bytes without a last newline, on both streams" -n -- 'cat /root/raw; cat /root/raw >&2'
same "stdin, byte for byte" -- 'sha256sum; wc -c'
same "a signal" -n -- 'kill -KILL $$'
same "exit 0 with no output" -n -- true
same "a 3 MB line arrives in the same pieces" -n -- 'head -c 3000000 /dev/zero | tr "\0" x'
check "six cold connections and not one warm one for those" test "$(accepted 1)" = $((a1 + 6))
warm exec -w h1 --out-dir "$BG_TMP/od" -- cat <"$BG_TMP/in.bin" >/dev/null 2>&1
check "stdin through the master reaches the command unchanged (--out-dir)" cmp "$BG_TMP/in.bin" "$BG_TMP/od/h1.out"
mark=$((400000 + RANDOM))
expect_rc 124 "--timeout through the master kills the command" warm exec -n -w h1 --timeout 1 -- "sleep $mark"
check "... and nothing of it is left on the box" wait_until 10 sh -c "! pgrep -x -f 'sleep $mark' >/dev/null"
BOXGATE_TRACE=1 warm exec -n -w h1 -- true 2>"$ERR_FILE"
has "$ERR_FILE" "through the box's connection master" "the master serves again after a kill"
check "no connection for the warm ones since" test "$(accepted 1)" = $((a1 + 6))

# --- a client killed mid-command: the master ends, as the client's connection would ---
mark=$((500000 + RANDOM))
"$BOXGATE" --config "$WARM" exec -n -w h1 -- "sleep $mark" >/dev/null 2>&1 &
cl=$!
wait_until 20 pgrep -x -f "sleep $mark" >/dev/null
kill -9 "$cl"; wait "$cl" 2>/dev/null
check "a client killed mid-command ends the master (no wait on the command)" wait_until 10 dead "$pid1"
for p in $(pgrep -x -f "sleep $mark"); do kill "$p" 2>/dev/null; done
expect_rc 0 "the next exec works" warm exec -n -w h1 -- echo next
pid1=$(master_pid h1)
check "... and leaves a new master" test -n "$pid1"

# --- a killed master: its socket is stale ---
a1=$(accepted 1)
kill -9 "$pid1"
wait_until 10 dead "$pid1"
check "a master killed with -9 leaves its socket behind" test -S "$(sock_of)"
expect_rc 0 "the next exec goes fresh and works" warm exec -n -w h1 -- echo after
has "$OUT_FILE" "^h1: after$" "... with its output"
check "... over a new connection" test "$(accepted 1)" = $((a1 + 1))
pid2=$(master_pid h1)
check "... and leaves a new master" test -n "$pid2" -a "$pid2" != "$pid1"

# --- a socket open to others is not used ---
chmod 666 "$(sock_of)"
a1=$(accepted 1)
expect_rc 0 "exec with the master's socket mode 0666" warm exec -n -w h1 -- true
check "... does not use it (a fresh connection)" test "$(accepted 1)" = $((a1 + 1))
chmod 600 "$(sock_of)"

# --- another uid ---
# The test's own directories are closed to others: this master lives under /tmp.
if setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
  OTHER=$(mktemp -d /tmp/bgt81.XXXXXX)
  XDG_RUNTIME_DIR=$OTHER warm exec -n -w h1 -- true >/dev/null 2>&1
  pid2=$(XDG_RUNTIME_DIR=$OTHER master_pid h1)
  s=$(ls "$OTHER"/boxgate/*.sock)
  as_nobody_connect() {
    setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
try:
    s.connect(sys.argv[1])
    print("connected")
except OSError as e:
    print(type(e).__name__)' "$s" 2>&1
  }
  check "another uid cannot reach the socket as boxgate leaves it (directory 0700)" \
    test "$(as_nobody_connect)" = PermissionError
  chmod 711 "$OTHER" "$OTHER/boxgate"
  check "... nor with the directories open to it, the socket being 0600" \
    test "$(as_nobody_connect)" = PermissionError
  check "... and the master is still there (refused by the kernel: it never saw them)" \
    sh -c "test -S '$s' && kill -0 '$pid2'"
  chmod 666 "$s"
  reply=$(setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
print(len(s.recv(100)))' "$s" 2>&1)
  check "another uid that reaches the socket gets not a byte (SO_PEERCRED)" test "$reply" = 0
  check "... and the master ends rather than stay reachable" wait_until 10 dead "$pid2"
  check "... and removes its socket" wait_until 10 test ! -e "$s"
  rm -rf "$OTHER"
else
  ok "# SKIP setpriv cannot switch to uid 65534 here"
  ok "# SKIP another uid"
  ok "# SKIP another uid"
  ok "# SKIP another uid"
  ok "# SKIP another uid"
  ok "# SKIP another uid"
fi

# --- the host key: known_hosts is the judge, not the master ---
name2=$("$HOSTS" knownhost "$BG_HOSTS_DIR" 2 | cut -d' ' -f1)
cp "$BG_KNOWN_HOSTS" "$BG_TMP/kh.orig"
# h2_key LINE...: known_hosts with h2's lines replaced by LINE...
h2_key() {
  awk -v n="$name2" '$1 != n' "$BG_TMP/kh.orig" >"$BG_KNOWN_HOSTS"
  printf '%s\n' "$@" >>"$BG_KNOWN_HOSTS"
}
expect_rc 0 "a master for h2" warm exec -n -w h2 -- true
pid3=$(master_pid h2)
sock2=$(master_pid h2 socket)
ssh-keygen -q -t ed25519 -N '' -f "$BG_TMP/otherkey" </dev/null
h2_key "$name2 $(cut -d' ' -f1,2 "$BG_TMP/otherkey.pub")"
a2=$(accepted 2)
expect_rc 3 "known_hosts now holds another key for h2: the exec is refused" warm exec -n -w h2 -- true
has "$ERR_FILE" "HAS CHANGED" "... as a changed host key, by the fresh connection's strict check"
check "... the master was not used" test "$(accepted 2)" = "$a2"
check "... and it ended" wait_until 10 dead "$pid3"
check "... and the refused connection leaves no master behind" wait_until 10 test ! -e "$sock2"
cp "$BG_TMP/kh.orig" "$BG_KNOWN_HOSTS"

expect_rc 0 "a master for h2 again" warm exec -n -w h2 -- true
pid4=$(master_pid h2)
"$HOSTS" rekey "$BG_HOSTS_DIR" 2 >/dev/null 2>&1
a3=$(accepted 2)
# sshd keeps the sessions it has: the master's session (old key) is still up.
h2_key "$("$HOSTS" knownhost "$BG_HOSTS_DIR" 2)"
BOXGATE_TRACE=1 expect_rc 0 "h2 rekeyed, only its new key in known_hosts: exec works" warm exec -n -w h2 -- echo rekeyed
has "$OUT_FILE" "^h2: rekeyed$" "... with its output"
has "$ERR_FILE" "h2 known_hosts does not hold the connection master's host key" "... the master's key is not in known_hosts any more (BOXGATE_TRACE)"
check "... over a fresh connection (the old session is not vouched for now)" test "$(accepted 2)" = $((a3 + 1))
if wait_until 10 dead "$pid4"; then ok "... and the old master ended"; else
  not_ok "... and the old master ended"
  diag "$(ps -o pid,stat,wchan:30,cmd -p "$pid4"; ls -la "$MDIR"; timeout 3 strace -p "$pid4" 2>&1 | head -5)"
fi
h2_key "$(cut -d' ' -f1,2 "$BG_TMP/otherkey.pub" | sed "s/^/$name2 /")"
expect_rc 3 "known_hosts with yet another key for rekeyed h2: refused" warm exec -n -w h2 -- true
has "$ERR_FILE" "HAS CHANGED" "... by the strict check, master or not"
h2_key "$("$HOSTS" knownhost "$BG_HOSTS_DIR" 2)"
expect_rc 0 "and a master with the new key" warm exec -n -w h2 -- true

# --- sshd goes away: the master ends ---
pid5=$(master_pid h2)
sock5=$(master_pid h2 socket)
check "h2 has a master (new key)" test -n "$pid5"
# sshd keeps its sessions when stopped: end them too.
"$HOSTS" stop "$BG_HOSTS_DIR" 2 >/dev/null 2>&1
for p in $("$HOSTS" pids "$BG_HOSTS_DIR" 2); do
  [ "$(ps -o comm= -p "$p")" = sshd ] && kill -9 "$p" 2>/dev/null
done
check "sshd and its sessions gone: the master ends with its connection" wait_until 20 dead "$pid5"
check "... and removes its socket" wait_until 10 test ! -e "$sock5"
"$HOSTS" start "$BG_HOSTS_DIR" 2 >/dev/null 2>&1

# --- disconnect ---
expect_rc 0 "a master for h1" warm exec -n -w h1 -- true
pid6=$(master_pid h1)
expect_rc 0 "disconnect h1" warm disconnect h1
has "$OUT_FILE" "^h1: ended its connection master \\(pid $pid6\\)$" "... says what it ended"
check "... the master is gone" wait_until 10 dead "$pid6"
check "... and its socket" no_sock
expect_rc 0 "disconnect with none left" warm disconnect
check "... prints nothing" test ! -s "$OUT_FILE"
expect_rc 0 "masters for h1 and h2" warm exec -n -w h1,h2 -- true
expect_rc 0 "disconnect (all)" warm disconnect --json
pycheck "... one JSON line per master ended" '
import json, sys
v = [json.loads(l) for l in open(sys.argv[1])]
assert sorted(o["box"] for o in v) == ["h1", "h2"], v
assert all(o["pid"] > 1 and o["socket"].endswith(".sock") for o in v), v' "$OUT_FILE"
check "... none left" no_sock

# --- idle expiry ---
sed 's/^control_persist_s = 0$/control_persist_s = 0.3/' "$BG_CONFIG" >"$BG_TMP/short.ini"
expect_rc 0 "control_persist_s = 0.3" "$BOXGATE" --config "$BG_TMP/short.ini" exec -n -w h1 -- true
check "... the master ends by itself once idle" wait_until 20 no_sock

# --- the config key is parsed strictly ---
for v in -1 abc 1.2345 '' 604801; do
  sed "s/^control_persist_s = 0\$/control_persist_s = $v/" "$BG_CONFIG" >"$BG_TMP/bad.ini"
  expect_rc 2 "control_persist_s = '$v' is refused" "$BOXGATE" --config "$BG_TMP/bad.ini" config check
  has "$ERR_FILE" "bad.ini:[0-9]+: .*control_persist_s" "... naming FILE:LINE and the key"
done

finish
