#!/usr/bin/env bash
# ProxyJump against real sshd test hosts: h2-h9 take SSH only from h1 (their namespaces
# reject every other source), h10 only from h2. Boxes behind h1 are reached through one
# shared connection to it (counted in h1's sshd log), through the box key `jump` and through
# ssh_config's ProxyJump (OpenSSH's own ssh, with the same file, is the reference); exec,
# push, run and check work through it; a direct connection is refused; a changed key at the
# jump host or at the box is refused and named; two hops; a jump host that goes away.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/wait.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts

hosts_up 10
for i in 2 3 4 5 6 7 8 9; do
  "$HOSTS" only-from "$D" "$i" 1 || { rc=$?; [ $rc = 77 ] && skip_all "needs network namespaces (root)"; not_ok "only-from"; finish; exit 1; }
done
"$HOSTS" only-from "$D" 10 2
fake_gate_on 2
for i in $(seq 1 10); do echo "h$i" >"$(eval echo "\$BG_HOST_${i}_ROOT")/id"; done

INI=$BG_TMP/jump.ini
{
  cat "$BG_CONFIG"
  for i in 2 3 4 5 6 7 8 9; do
    printf '\n[box b%d]\nhost = h%d\njump = h1\nrepo = /root/repo\ngate = gate.sh\nrequire_gpu = no\n' "$i" "$i"
    printf 'allow = --mode --kind --shape --num-workers --configs\n'
  done
  printf '\n[box b10]\nhost = h10\njump = root@h1,h2\nrepo = /root/repo\nrequire_gpu = no\n'
  printf '\n[pool behind]\nslots = b2 b3 b4 b5 b6 b7 b8 b9\n'
} >"$INI"
bg() { "$BOXGATE" --config "$INI" "$@"; }
accepted() { grep -c 'Accepted publickey' "$D/h$1/sshd.log"; }
H1=$BG_HOST_1_ADDR
H2=$BG_HOST_2_ADDR

# --- a box behind the jump host cannot be reached directly ---
expect_rc 3 "a direct connection to a host behind the jump host is refused" bg exec --boxes h3 -- true
has "$ERR_FILE" "h3: connect to $BG_HOST_3_ADDR port 22: Connection refused" "... and the refusal is named"

# --- 8 boxes behind one jump host: one connection to it ---
a0=$(accepted 1)
expect_rc 0 "exec on 8 boxes behind one jump host" bg exec --boxes 'b[2-9]' -- 'echo "$(cat /root/id) ${SSH_CONNECTION%% *}"'
n=0
for i in 2 3 4 5 6 7 8 9; do grep -qx "b$i: h$i $H1" "$OUT_FILE" && n=$((n + 1)); done
[ $n = 8 ] && ok "every box answered as itself, reached from the jump host's address" || { not_ok "8 answers through h1 ($n)"; diag "$(cat "$OUT_FILE" "$ERR_FILE")"; }
a1=$(accepted 1)
# The 8 boxes share the jump host's connections: one, or up to four lanes when
# opens through one connection queue up longer than a fresh connect (a loaded
# machine, a sanitizer build); never one per box.
s=$((a1 - a0))
[ "$s" -ge 1 ] && [ "$s" -le 4 ] && ok "the jump host saw 1-4 SSH sessions for the 8 boxes ($s)" || { not_ok "jump sessions: $s for 8 boxes"; diag "$(tail -20 "$D/h1/sshd.log")"; }

# --- two hops ---
expect_rc 0 "exec through two hops (jump = root@h1,h2)" bg exec --boxes b10 -- 'echo "$(cat /root/id) ${SSH_CONNECTION%% *}"'
has "$OUT_FILE" "^b10: h10 $H2\$" "the box behind two hops is reached from the second hop"

# --- ssh_config's ProxyJump, with OpenSSH's ssh as the reference ---
SC=$BG_TMP/ssh_config
{ printf 'Host h4\n  ProxyJump h1\nHost h10\n  ProxyJump h1,h2\n\n'; cat "$BG_SSH_CONFIG"; } >"$SC"
sed "s|^ssh_config = .*|ssh_config = $SC|" "$BG_CONFIG" >"$BG_TMP/sc.ini"
grep -q "^ssh_config = $SC" "$BG_TMP/sc.ini" || printf '[defaults]\nssh_config = %s\n' "$SC" >>"$BG_TMP/sc.ini"
printf '\n[box s4]\nhost = h4\nrepo = /root/repo\nrequire_gpu = no\n[box s10]\nhost = h10\nrepo = /root/repo\nrequire_gpu = no\n' >>"$BG_TMP/sc.ini"
for h in h4 h10; do
  want=$(ssh -G -F "$SC" "$h" | awk '$1 == "proxyjump" { print $2 }')
  got=$("$BOXGATE" --config "$BG_TMP/sc.ini" config check --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print([b for b in d["boxes"] if b.get("host") == sys.argv[1]][0]["proxyjump"])' "$h")
  [ "$want" = "$got" ] && ok "$h: ProxyJump '$got' as ssh -G reads it" || not_ok "$h: ssh -G says '$want', boxgate '$got'"
done
ref=$(ssh -F "$SC" h4 'echo "$(cat /root/id) ${SSH_CONNECTION%% *}"' 2>&1)
expect_rc 0 "exec through ssh_config's ProxyJump" "$BOXGATE" --config "$BG_TMP/sc.ini" exec --boxes s4,s10 -- 'echo "$(cat /root/id) ${SSH_CONNECTION%% *}"'
has "$OUT_FILE" "^s4: $ref\$" "boxgate and OpenSSH's ssh reach h4 the same way ($ref)"
has "$OUT_FILE" "^s10: h10 $H2\$" "ssh_config's two-hop ProxyJump"

# --- push, run and check through the jump host ---
L=$BG_TMP/local
mkdir -p "$L/scripts"
printf 'print("through the jump")\n' >"$L/scripts/j.py"
expect_rc 0 "push through the jump host" bg push --root "$L" --boxes b2,b3 scripts/j.py
same=1
for i in 2 3; do cmp -s "$L/scripts/j.py" "$(eval echo "\$BG_HOST_${i}_ROOT")/repo/scripts/j.py" || same=0; done
[ $same = 1 ] && ok "both boxes behind the jump host hold the pushed file" || not_ok "pushed content behind the jump host"
expect_rc 0 "status through the jump host" bg status --root "$L" --boxes b2 scripts/j.py
expect_rc 0 "run through the jump host: a passing gate" bg run b2 -- --mode pass
has "$OUT_FILE" 'PASS_GATE' "the gate's verdict came back through the jump host"
expect_rc 0 "check through the jump host" bg check b2 b3 b10
[ "$(grep -cE '^b(2|3|10) +yes +ok' "$OUT_FILE")" = 3 ] && ok "check: a row per box behind the jump host" || { not_ok "check rows"; diag "$(cat "$OUT_FILE")"; }

# --- what the jump host cannot reach is named ---
printf '\n[box nowhere]\nhost = %s\nport = %s\njump = h1\nrepo = /root/repo\nrequire_gpu = no\n' "$BG_REFUSED_ADDR" "$BG_REFUSED_PORT" >>"$INI"
expect_rc 3 "a box the jump host cannot reach fails" bg exec --boxes nowhere,b2 -- true
has "$ERR_FILE" "nowhere: jump h1 cannot reach $BG_REFUSED_ADDR port $BG_REFUSED_PORT" "... naming the jump host and the box's address"
has "$ERR_FILE" '1 of 2 boxes failed: nowhere' "... and the other box behind the same jump host still ran"

# --- bad jump specs are configuration errors with FILE:LINE ---
printf '[box badj]\nhost = h2\njump = h1:99999\nrepo = /root/repo\n' >"$BG_TMP/badj.ini"
cat "$BG_CONFIG" "$BG_TMP/badj.ini" >"$BG_TMP/badj2.ini"
expect_rc 2 "a jump with a bad port is refused before connecting" "$BOXGATE" --config "$BG_TMP/badj2.ini" exec --boxes badj -- true
has "$ERR_FILE" "box 'badj': $BG_TMP/badj2.ini:[0-9]+: ProxyJump 'h1:99999': 'h1:99999': port '99999' is not 1-65535" "... naming the file, line and hop"
printf 'Host loop1\n  HostName %s\n  ProxyJump loop2\nHost loop2\n  HostName %s\n  ProxyJump loop1\n' "$H1" "$H1" >"$BG_TMP/loop_config"
printf '[defaults]\nssh_config = %s\n[box l]\nhost = loop1\nrepo = /root/repo\n' "$BG_TMP/loop_config" >"$BG_TMP/loop.ini"
expect_rc 3 "a ProxyJump loop in ssh_config refuses the box" "$BOXGATE" --config "$BG_TMP/loop.ini" exec --boxes l -- true
has "$ERR_FILE" "l: ssh_config asks for a ProxyJump chain longer than 8 hops \\($BG_TMP/loop_config:[36]\\)" "... as a chain too long"
printf 'Host *\n  ProxyJump self\n' >"$BG_TMP/self_config"
printf '[defaults]\nssh_config = %s\n[box o]\nhost = other\nrepo = /root/repo\n' "$BG_TMP/self_config" >"$BG_TMP/self.ini"
expect_rc 3 "a jump host that jumps through itself is refused, as ssh refuses it" "$BOXGATE" --config "$BG_TMP/self.ini" exec --boxes o -- true
has "$ERR_FILE" "o: ssh_config asks for a ProxyJump loop via self \\($BG_TMP/self_config:2\\) on jump self" "... naming the loop (ssh: jumphost loop via self)"
printf 'Host pc\n  HostName %s\n  ProxyJump h1\nHost h1\n  ProxyCommand nc %%h %%p\n' "$BG_HOST_2_ADDR" >"$BG_TMP/pc_config"
printf '[defaults]\nssh_config = %s\n[box pc]\nhost = pc\nrepo = /root/repo\n' "$BG_TMP/pc_config" >"$BG_TMP/pc.ini"
expect_rc 3 "a ProxyCommand on the jump host is refused by name" "$BOXGATE" --config "$BG_TMP/pc.ini" exec --boxes pc -- true
has "$ERR_FILE" "pc: ssh_config asks for ProxyCommand \\($BG_TMP/pc_config:5\\) on jump h1" "... naming the hop and the line"

# --- the jump host goes away ---
"$HOSTS" stop "$D" 1
expect_rc 3 "with the jump host down every box behind it fails" bg exec --boxes 'b[2-5]' -- true
[ "$(grep -c 'b[2-5]: jump h1: connect to .*Connection refused' "$ERR_FILE")" = 4 ] && ok "... each naming the jump host" || { not_ok "jump down named"; diag "$(cat "$ERR_FILE")"; }
"$HOSTS" start "$D" 1
printf '\n[box k2]\nhost = h2\njump = h1\nkeepalive_s = 1\nrepo = /root/repo\nrequire_gpu = no\n[box k3]\nhost = h3\njump = h1\nkeepalive_s = 1\nrepo = /root/repo\nrequire_gpu = no\n' >>"$INI"
# the jump host's link is cut once the command runs on both boxes (each says so in a file)
rm -f "$BG_HOST_2_ROOT/cut.me" "$BG_HOST_3_ROOT/cut.me"
( wait_until 60 test -e "$BG_HOST_2_ROOT/cut.me" -a -e "$BG_HOST_3_ROOT/cut.me"; "$HOSTS" link "$D" 1 down ) &
expect_rc 3 "a jump host whose link is cut mid-command is a connection failure" bg exec --boxes k2,k3 -- ': >~/cut.me; sleep 20; echo finished'
wait
"$HOSTS" link "$D" 1 up >/dev/null 2>&1
hasnt "$OUT_FILE" finished "no box behind it claims the command finished"
has "$ERR_FILE" '2 of 2 boxes failed' "both boxes behind the cut jump host failed"

# --- changed host keys: at the box, then at the jump host ---
"$HOSTS" rekey "$D" 3
expect_rc 3 "a changed key on a box behind the jump host is refused" bg exec --boxes b2,b3 -- true
has "$ERR_FILE" "b3: WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED" "... named for the box"
hasnt "$ERR_FILE" "b2:" "... while the box beside it ran"
"$HOSTS" rekey "$D" 1
expect_rc 3 "a changed key on the jump host is refused" bg exec --boxes b2,b4 -- true
[ "$(grep -c 'b[24]: jump h1: WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED' "$ERR_FILE")" = 2 ] && ok "... named as the jump host's, for each box behind it" || { not_ok "jump host key change named"; diag "$(cat "$ERR_FILE")"; }
ssh_ref=$(ssh -F "$BG_SSH_CONFIG" -J h1 h2 true 2>&1; echo "rc=$?")
[[ $ssh_ref == *"IDENTIFICATION HAS CHANGED"*"rc=255" ]] && ok "OpenSSH's ssh -J refuses the same jump host" || not_ok "ssh -J reference: $ssh_ref"

finish
