#!/usr/bin/env bash
# The test-host harness itself: real sshds with their own addresses, private /root, host-key
# changes, link cuts, added delay, concurrent instances, and a teardown that leaves nothing.
source "$(dirname "$0")/lib.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts
[ -x /usr/sbin/sshd ] || skip_all "no /usr/sbin/sshd (tests/install-deps)"

D8='' D2='' D1='' DA=''
cleanup() {
  local d
  for d in "$D8" "$D2" "$D1" "$DA"; do [ -z "$d" ] || "$HOSTS" down "$d" >/dev/null 2>&1; done
  rm -rf "$BG_TMP"
}
trap cleanup EXIT

# snapshot K DIR: what instance K / DIR owns now, one "kind name identity" line each
# (namespaces by inode, links by ifindex, pids by start time), so that the check after down
# looks only at this instance's resources, even when another instance reuses the index K.
snapshot() {
  local k=$1 dir=$2 f
  echo "dir $dir -"
  echo "claim $STATE_ROOT/$k $dir"
  awk '$1 == "pid" {print "pid " $2 " " $3}' "$STATE_ROOT/$k" 2>/dev/null
  [ "$(id -u)" = 0 ] || return 0
  for f in /run/netns/bg"$k"h*; do [ -e "$f" ] && echo "netns $f $(stat -L -c %i "$f")"; done
  for f in /sys/class/net/bg"$k"br /sys/class/net/bg"$k"v*; do
    [ -e "$f" ] && echo "link ${f##*/} $(cat "$f/ifindex")"
  done
  echo "rules bg${k}br $k"
}

# leftovers SNAPSHOT: prints what of a snapshot still exists (nothing when clean). Holds the
# harness's allocation lock, so no instance can claim the index while it looks. When another
# run (a test beside this one) has claimed the index since, the names bgK* are its own: `up`
# claimed it only after finding none of ours left, and the kernel hands a freed namespace's
# inode number and a freed link's name out again, so they are not compared.
leftovers() {
  local kind name id st k taken=''
  mkdir -p "$STATE_ROOT"
  exec 8>>"$STATE_ROOT/lock"
  flock 8
  k=$(awk '$1 == "rules" {print $3}' "$1")
  if [ -n "$k" ] && [ -f "$STATE_ROOT/$k" ] &&
    [ "$(head -n 1 "$STATE_ROOT/$k")" != "$(awk '$1 == "dir" {print $2}' "$1")" ]; then
    taken=$(head -n 1 "$STATE_ROOT/$k")
    echo "# index $k now belongs to $taken: its namespaces, links and rules are not ours" >&2
  fi
  while read -r kind name id; do
    [ -z "$taken" ] || case $kind in netns | link | rules) continue ;; esac
    case $kind in
      dir) [ ! -e "$name" ] || echo "dir $name" ;;
      claim) [ ! -f "$name" ] || [ "$(head -n 1 "$name")" != "$id" ] || echo "claim $name" ;;
      pid)
        st=$(sed 's/^.*) //' "/proc/$name/stat" 2>/dev/null | cut -d' ' -f1,20) || continue
        case $st in "" | Z* | X*) ;; *) [ "${st#* }" != "$id" ] ||
          echo "pid $name: $(tr '\0' ' ' <"/proc/$name/cmdline" 2>/dev/null)" ;; esac ;;
      netns) [ ! -e "$name" ] || [ "$(stat -L -c %i "$name")" != "$id" ] || echo "netns ${name##*/}" ;;
      link) [ "$(cat "/sys/class/net/$name/ifindex" 2>/dev/null)" != "$id" ] || echo "link $name" ;;
      rules) iptables -w -t raw -S 2>/dev/null | grep -F -- "-i $name " | sed 's/^/iptables /' ;;
    esac
  done <"$1"
  flock -u 8
  return 0
}

# alive_pids PID...: those still running (a zombie counts as gone).
alive_pids() {
  local p s
  for p in "$@"; do
    s=$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null) || continue
    case $s in Z|X|'') ;; *) echo "$p" ;; esac
  done
}

ssh8() { ssh -F "$BG_SSH_CONFIG" "$@"; }

# ---- 8 hosts --------------------------------------------------------------------------
t0=$EPOCHREALTIME
if D8=$("$HOSTS" up --n 8 2>"$BG_TMP/up.err"); then ok "up --n 8"; else
  not_ok "up --n 8"; diag "$(cat "$BG_TMP/up.err")"; finish; exit
fi
diag "up --n 8 took $(python3 -c "print('%.2f' % ($EPOCHREALTIME - $t0))") s"
. "$D8/env.sh"
K8=$(sed -n 's/^K=//p' "$D8/state")
STATE_ROOT=$(sed -n 's/^STATE_ROOT=//p' "$D8/state")
private=yes
[ "$BG_HOSTS_MODE" = nonroot ] && private=''   # no mount namespaces without root
diag "mode $BG_HOSTS_MODE, instance $K8, dir $D8"

check "env.sh names 8 hosts and the client files" \
  test "$BG_HOSTS_N" = 8 -a -f "$BG_SSH_CONFIG" -a -f "$BG_KNOWN_HOSTS" -a -f "$BG_KEY" -a -f "$BG_CONFIG"
check "boxgate.ini has 8 boxes and the pool" \
  sh -c "[ \$(grep -c '^\[box h' '$BG_CONFIG') = 8 ] && grep -qx 'slots = h1, h2, h3, h4, h5, h6, h7, h8' '$BG_CONFIG' &&
         grep -qx 'host_key_check = strict' '$BG_CONFIG'"

bad=''
for i in $(seq 1 8); do
  a=BG_HOST_${i}_ADDR p=BG_HOST_${i}_PORT
  got=$(ssh8 "h$i" 'set -- $SSH_CONNECTION; echo "$3 $4"' 2>&1) || true
  [ "$got" = "${!a} ${!p}" ] || bad="$bad h$i:'$got'"
done
if [ -z "$bad" ]; then ok "each of 8 hosts answers plain ssh at its own address"; else
  not_ok "each of 8 hosts answers plain ssh at its own address"; diag "$bad"
fi
if [ "$BG_HOSTS_MODE" = netns ]; then
  bad=''
  for i in 1 5 8; do
    a=BG_HOST_${i}_ADDR
    "$HOSTS" exec "$D8" "$i" ip -o -4 addr show dev eth0 | grep -qF " ${!a}/24 " || bad="$bad h$i"
  done
  if [ -z "$bad" ]; then ok "hosts exec runs inside each host's network namespace"; else
    not_ok "hosts exec runs inside each host's network namespace"; diag "$bad"; fi
fi

expect_rc 7 "a remote exit code comes back" ssh8 h3 'exit 7'
expect_rc 0 "a session prints nothing of its own (no rc files, no pyenv)" ssh8 h2 true
check "... stdout and stderr empty" test ! -s "$OUT_FILE" -a ! -s "$ERR_FILE"
expect_rc 0 "python3, dash, bash and cc are on the hosts' PATH" \
  ssh8 h4 'command -v python3 && command -v dash && command -v bash && command -v cc'
has "$OUT_FILE" '^/usr/bin/python3$' "python3 is /usr/bin/python3"
repo=$(sed -n '/^\[box h4\]/,/^$/s/^repo = //p' "$BG_CONFIG")
expect_rc 0 "h4 has the repo directory boxgate.ini names ($repo)" ssh8 h4 "test -d $repo"

# Private /root.
if [ -n "$private" ]; then
ssh8 h1 'echo from-h1 >/root/marker' >/dev/null 2>&1
check "a file written in h1's /root lands in BG_HOST_1_ROOT" grep -qx from-h1 "$BG_HOST_1_ROOT/marker"
expect_rc 1 "... and is not in h2's /root" ssh8 h2 'test -e /root/marker'
check "... nor in the machine's own /root" test ! -e /root/marker
check "hosts exec sees the host's private /root" \
  sh -c "'$HOSTS' exec '$D8' 1 cat /root/marker | grep -qx from-h1 && ! '$HOSTS' exec '$D8' 2 test -e /root/marker"
fi

# Changed host key.
old=$("$HOSTS" knownhost "$D8" 4)
if "$HOSTS" rekey "$D8" 4 2>"$BG_TMP/rekey.err"; then ok "rekey h4"; else
  not_ok "rekey h4"; diag "$(cat "$BG_TMP/rekey.err")"; fi
new=$("$HOSTS" knownhost "$D8" 4)
check "rekey gives a different key" test "$old" != "$new"
expect_rc 255 "strict ssh refuses h4's changed host key" ssh8 h4 true
has "$ERR_FILE" 'IDENTIFICATION HAS CHANGED|Host key verification failed' "... saying the key changed"
printf '%s\n' "$new" >"$BG_TMP/kh4"
expect_rc 0 "h4 is accepted with its new key" ssh8 -o UserKnownHostsFile="$BG_TMP/kh4" h4 true

# Stop / start.
"$HOSTS" stop "$D8" 5
expect_rc 255 "a stopped sshd refuses connections" ssh8 h5 true
"$HOSTS" start "$D8" 5
expect_rc 0 "a started sshd answers again" ssh8 h5 true

# Link cut.
if "$HOSTS" link "$D8" 6 down 2>/dev/null; then
  t0=$EPOCHREALTIME
  expect_rc 255 "a host with its link down is unreachable" ssh8 -o ConnectTimeout=2 h6 true
  diag "unreachable after $(python3 -c "print('%.2f' % ($EPOCHREALTIME - $t0))") s: $(head -c 200 "$ERR_FILE")"
  expect_rc 0 "the other hosts still answer" ssh8 h7 true
  "$HOSTS" link "$D8" 6 up
  expect_rc 0 "the link restored, h6 answers again" ssh8 -o ConnectTimeout=5 h6 true
else
  rc=$?
  check "link exits 77 when it cannot cut links" test "$rc" = 77
fi

# Refused and black-holed addresses.
probe() {
  python3 - "$1" "$2" <<'EOF'
import socket, sys
s = socket.socket(); s.settimeout(1.5)
try:
    s.connect((sys.argv[1], int(sys.argv[2]))); print("connected")
except ConnectionRefusedError: print("refused")
except (socket.timeout, TimeoutError): print("timeout")
except OSError as e: print("error", e)
EOF
}
check "BG_REFUSED_ADDR:PORT refuses" test "$(probe "$BG_REFUSED_ADDR" "$BG_REFUSED_PORT")" = refused
if [ -n "${BG_BLACKHOLE_ADDR:-}" ]; then
  check "BG_BLACKHOLE_ADDR:PORT drops SYNs (connect times out)" \
    test "$(probe "$BG_BLACKHOLE_ADDR" "$BG_BLACKHOLE_PORT")" = timeout
  check "BG_CLOSED is the black hole" test "$BG_CLOSED_ADDR:$BG_CLOSED_PORT" = "$BG_BLACKHOLE_ADDR:$BG_BLACKHOLE_PORT"
fi

# A second instance beside the first.
if D1=$("$HOSTS" up --n 1 2>"$BG_TMP/up1.err"); then
  ok "a second instance comes up beside the first"
  a1=$(. "$D1/env.sh"; echo "$BG_HOST_1_ADDR:$BG_HOST_1_PORT")
  check "... on its own address" test "$a1" != "$BG_HOST_1_ADDR:$BG_HOST_1_PORT"
  check "... and both answer" sh -c "ssh -F '$D1/ssh_config' h1 true && ssh -F '$BG_SSH_CONFIG' h1 true"
  K1=$(sed -n 's/^K=//p' "$D1/state")
  snapshot "$K1" "$D1" >"$BG_TMP/snap1"
  "$HOSTS" down "$D1"
  check "taking it down leaves the first running" ssh8 h8 true
  left=$(leftovers "$BG_TMP/snap1")
  check "... and nothing of its own" test -z "$left"
  [ -z "$left" ] || diag "$left"
  D1=''
else
  not_ok "a second instance comes up beside the first"; diag "$(cat "$BG_TMP/up1.err")"
fi

# Teardown, with a session still running.
ssh8 h3 'sleep 300' >/dev/null 2>&1 &
sshpid=$!
for _ in $(seq 1 100); do
  [ "$("$HOSTS" pids "$D8" 3 | wc -l)" -ge 4 ] && break
  sleep 0.05
done
pids=$(for i in $(seq 1 8); do "$HOSTS" pids "$D8" "$i"; done | tr '\n' ' ')
check "hosts pids lists the running session" test "$("$HOSTS" pids "$D8" 3 | wc -l)" -ge 4
# One call for several hosts (one scan of /proc) lists what a call for each lists.
one=$("$HOSTS" pids "$D8" 1 3 8 | sort -n | tr '\n' ' ')
each=$(for i in 1 3 8; do "$HOSTS" pids "$D8" "$i"; done | sort -n | tr '\n' ' ')
[ -n "$one" ] && [ "$one" = "$each" ] && ok "hosts pids DIR 1 3 8: the pids of hosts 1, 3 and 8 in one call" \
  || { not_ok "hosts pids DIR 1 3 8"; diag "one call: '$one'; a call each: '$each'"; }
expect_rc 1 "hosts pids DIR 1 9 (no host 9) is refused" "$HOSTS" pids "$D8" 1 9
# The compiled scan (procscan) lists what the shell's scan of /proc lists.
check "hosts pids scans /proc with procscan" grep -q '^PROCSCAN=/' "$D8/state"
for _ in 1 2 3; do
  fast=$("$HOSTS" pids "$D8" 1 2 3 4 5 6 7 8 | sort -n | tr '\n' ' ')
  slow=$(BG_HOSTS_SHELL_SCAN=1 "$HOSTS" pids "$D8" 1 2 3 4 5 6 7 8 | sort -n | tr '\n' ' ')
  [ "$fast" = "$slow" ] && break
done
[ -n "$fast" ] && [ "$fast" = "$slow" ] && ok "procscan and the shell's scan list the same processes" \
  || { not_ok "procscan and the shell's scan differ"; diag "procscan: '$fast'; shell: '$slow'"; }
claimpids=$(awk '$1 == "pid" {print $2}' "$STATE_ROOT/$K8" 2>/dev/null | tr '\n' ' ')
# A stray process that entered a host's network namespace from outside (not through sshd).
stray=''
if [ "$BG_HOSTS_MODE" = netns ]; then
  setsid ip netns exec "bg${K8}h2" sleep 1010.25 </dev/null >/dev/null 2>&1 &
  stray=$!
  # (-ef: the same namespace, as readlink would compare it, without a process a poll)
  for ((i = 0; i < 100; i++)); do
    [ "/proc/$stray/ns/net" -ef "/run/netns/bg${K8}h2" ] && break
    bg_pause 0.02
  done
fi
snapshot "$K8" "$D8" >"$BG_TMP/snap8"
t0=$EPOCHREALTIME
expect_rc 0 "down" "$HOSTS" down "$D8"
diag "down took $(python3 -c "print('%.2f' % ($EPOCHREALTIME - $t0))") s"
wait "$sshpid" 2>/dev/null
check "down leaves no process of the hosts (sessions included)" test -z "$(alive_pids $pids $claimpids)"
[ -z "$stray" ] || check "down ends a process that entered a host's namespace with ip netns exec" \
  test -z "$(alive_pids "$stray")"
left=$(leftovers "$BG_TMP/snap8")
check "down leaves no namespace, link, rule, claim or dir" test -z "$left"
[ -z "$left" ] || diag "$left"
expect_rc 0 "down again is a no-op" "$HOSTS" down "$D8"
D8=''

# A crashed test: DIR gone, its hosts still running; down DIR still cleans up.
if D1=$("$HOSTS" up --n 2 --delay 3 2>"$BG_TMP/up1.err"); then
  K1=$(sed -n 's/^K=//p' "$D1/state")
  cpids=$(awk '$1 == "pid" {print $2}' "$STATE_ROOT/$K1" | tr '\n' ' ')
  snapshot "$K1" "$D1" >"$BG_TMP/snap1"
  rm -rf "$D1"
  expect_rc 0 "down of an instance whose DIR was deleted" "$HOSTS" down "$D1"
  check "... stops its processes" test -z "$(alive_pids $cpids)"
  left=$(leftovers "$BG_TMP/snap1")
  check "... and leaves nothing" test -z "$left"
  [ -z "$left" ] || diag "$left"
  D1=''
else
  not_ok "up --n 2 --delay 3"; diag "$(cat "$BG_TMP/up1.err")"
fi

# An index is handed out again only when nothing of its network remains: here a veth of
# index K whose namespace lost its name but is held by a process inside (as a session kept
# open from outside would). Made under the harness's lock, at the lowest free index.
if [ "$BG_HOSTS_MODE" = netns ]; then
  mkdir -p "$STATE_ROOT"
  # gc cleans what is left of every index nobody claims, so a second run of this test (two
  # suites at once) would clean these remains before this one's gc: this part runs alone.
  # Nothing else calls gc.
  exec 7>>"$STATE_ROOT/t10-gc.lock"
  flock 7
  exec 8>>"$STATE_ROOT/lock"
  flock 8
  KL=''
  for k in $(seq 1 250); do
    [ -e "$STATE_ROOT/$k" ] || [ -n "$(ls -d /sys/class/net/bg"$k"br /sys/class/net/bg"$k"v[0-9x]* \
      /run/netns/bg"$k"h[0-9x]* 2>/dev/null)" ] || { KL=$k; break; }
  done
  held=''
  if [ -n "$KL" ] && ip netns add "bg${KL}h1" && ip link add "bg${KL}v1" type veth peer name eth0 netns "bg${KL}h1"; then
    setsid ip netns exec "bg${KL}h1" sleep 1010.5 </dev/null >/dev/null 2>&1 &
    held=$!
    # The name goes only once the process is inside: deleted before `ip netns exec` opened
    # it (a loaded machine), nothing would hold the namespace, and its veth would vanish
    # before gc looked.
    inside=''
    for ((i = 0; i < 1500; i++)); do
      [ "/proc/$held/ns/net" -ef "/run/netns/bg${KL}h1" ] && { inside=1; break; }
      bg_pause 0.02
    done
    ip netns del "bg${KL}h1"
    [ -n "$inside" ] || { diag "the holder of index $KL never entered its namespace in 30 s"; kill "$held"; held=''; }
  fi
  flock -u 8
  exec 8>&-
  if [ -n "$held" ] && [ -e "/sys/class/net/bg${KL}v1" ]; then
    if D1=$("$HOSTS" up --n 1 2>"$BG_TMP/up1.err"); then
      K1=$(sed -n 's/^K=//p' "$D1/state")
      check "up skips index $KL while a process holds its network (took $K1)" test "$K1" != "$KL"
      "$HOSTS" down "$D1"
    else
      not_ok "up beside the remains of index $KL"; diag "$(cat "$BG_TMP/up1.err")"
    fi
    D1=''
    expect_rc 0 "gc cleans what is left of an index nobody claims" "$HOSTS" gc
    has "$ERR_FILE" "cleaning what is left of instance $KL: bg${KL}v1" "... and says so"
    check "... ending the process that held it" test -z "$(alive_pids "$held")"
    check "... and removing its veth" test ! -e "/sys/class/net/bg${KL}v1"
  else
    not_ok "made the remains of an instance by hand (index ${KL:-none})"
  fi
  [ -z "$held" ] || kill "$held" 2>/dev/null
  [ -z "$KL" ] || ip link del "bg${KL}v1" 2>/dev/null
  flock -u 7
  exec 7>&-
fi

# A namespace's id goes to the next new namespace once it is freed (the lowest free number).
# Instance A's host loses its holder and sshd, which frees its mount namespace; new mount
# namespaces are made until one gets A's old id (as another instance's new holder would):
# down of A must end none of them.
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
  strangers=() reused=''
  DA=$("$HOSTS" up --n 1 2>"$BG_TMP/upa.err") || DA=''
  if [ -n "$DA" ]; then
    "$HOSTS" stop "$DA" 1
    read -r ha _ <"$DA/h1/holder.pid"
    kill "$ha"
    for ((i = 0; i < 100; i++)); do [ -d "/proc/$ha" ] || break; bg_pause 0.02; done
    old=$(cat "$DA/h1/mntns")
    for ((j = 0; j < 20; j++)); do
      setsid unshare -m sleep 1010.75 </dev/null >/dev/null 2>&1 &
      strangers+=("$!")
      # until it has its own mount namespace (-ef: no readlink a poll), then its id
      for ((i = 0; i < 100; i++)); do
        [ -e "/proc/$!/ns/mnt" ] && ! [ "/proc/$!/ns/mnt" -ef /proc/self/ns/mnt ] && break
        bg_pause 0.01
      done
      got=$(readlink "/proc/$!/ns/mnt" 2>/dev/null)
      if [ "$got" = "$old" ]; then reused=1; break; fi
    done
    if [ -n "$reused" ]; then diag "a new mount namespace got A's old id $old"
    else diag "no new mount namespace got A's old id $old (${#strangers[@]} made)"; fi
    expect_rc 0 "down of an instance whose holder died" "$HOSTS" down "$DA"
    DA=''
    check "... ends no process of a namespace that reuses its old id" \
      test "$(alive_pids "${strangers[@]}" | wc -l)" = "${#strangers[@]}"
  else
    not_ok "up --n 1 for the reused-id case"; diag "$(cat "$BG_TMP/upa.err")"
  fi
  [ ${#strangers[@]} = 0 ] || kill "${strangers[@]}" 2>/dev/null
  [ -z "$DA" ] || "$HOSTS" down "$DA" >/dev/null 2>&1
fi

# ---- 2 hosts with 10 ms added each way --------------------------------------------------
if D2=$("$HOSTS" up --n 2 --delay 10 2>"$BG_TMP/up2.err"); then ok "up --n 2 --delay 10"; else
  not_ok "up --n 2 --delay 10"; diag "$(cat "$BG_TMP/up2.err")"; finish; exit
fi
. "$D2/env.sh"
K2=$(sed -n 's/^K=//p' "$D2/state")
read -r conn exch < <("$HOSTS" rtt "$D2" 1 9)
diag "delay 10 ms each way: TCP connect $conn ms, SSH id/KEXINIT exchange $exch ms (median of 9)"
if [ "$BG_HOSTS_MODE" = netns ]; then
  check "the round trip is about 20 ms (TCP connect 18..100 ms)" \
    python3 -c "import sys; sys.exit(not 18 <= $conn <= 100)"
fi
check "the SSH-level round trip is at least 20 ms" python3 -c "import sys; sys.exit(not 20 <= $exch)"
t0=$EPOCHREALTIME
expect_rc 0 "ssh through the delay works" ssh -F "$BG_SSH_CONFIG" h2 true
diag "ssh h2 true at 10 ms: $(python3 -c "print('%.3f' % ($EPOCHREALTIME - $t0))") s"
n=$(ssh -F "$BG_SSH_CONFIG" h1 'head -c 8000000 /dev/zero' | wc -c)
check "8 MB stream through the delay arrives whole" test "$n" = 8000000
snapshot "$K2" "$D2" >"$BG_TMP/snap2"
grep -q . < <(iptables -w -t raw -S 2>/dev/null | grep -F -- "-i bg${K2}br ") || [ "$BG_HOSTS_MODE" != netns ] ||
  diag "no root-namespace delay rule for bg${K2}br before down"
"$HOSTS" down "$D2"
left=$(leftovers "$BG_TMP/snap2")
check "down of the delayed instance leaves nothing (rules included)" test -z "$left"
[ -z "$left" ] || diag "$left"
D2=''

finish
