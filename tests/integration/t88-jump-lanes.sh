#!/usr/bin/env bash
# Boxes behind a jump host 30 ms away each way: the connections to the jump host
# ("lanes") that spread their channel opens start once the first lane's TCP connect
# says what a round trip costs, their handshakes overlapping the first's (the jump
# host's sshd log shows a second connection before the first session's acceptance),
# never more than four; each lane's first channel open rides behind the lane's signed
# request; and each box's own handshake through the tunnel takes the
# round trips a direct one does (the key query behind the service request, the
# channel open behind the signature).
source "$(dirname "$0")/lib.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts

D=''
trap '[ -z "$D" ] || "$HOSTS" down "$D" >/dev/null 2>&1; rm -rf "$BG_TMP"' EXIT
D=$("$HOSTS" up --n 5 --delay 30) || { not_ok "test hosts came up"; finish; exit 1; }
# shellcheck disable=SC1091
source "$D/env.sh"
for i in 2 3 4 5; do
  "$HOSTS" only-from "$D" "$i" 1 || { rc=$?; [ $rc = 77 ] && skip_all "needs network namespaces (root)"; not_ok "only-from"; finish; exit 1; }
done
INI=$BG_TMP/lanes.ini
{
  cat "$BG_CONFIG"
  for i in 2 3 4 5; do printf '\n[box b%d]\nhost = h%d\njump = h1\nrepo = /root/repo\nrequire_gpu = no\n' "$i" "$i"; done
} >"$INI"
LOG=$D/h1/sshd.log
n0=$(wc -l <"$LOG")
BOXGATE_TRACE=1 expect_rc 0 "exec on 4 boxes behind a jump host 30 ms away" "$BOXGATE" --config "$INI" exec --boxes 'b[2-5]' -- 'echo "$(hostname -I | cut -d" " -f1)"'
n=0
for i in 2 3 4 5; do grep -qx "b$i: $(eval echo "\$BG_HOST_${i}_ADDR")" "$OUT_FILE" && n=$((n + 1)); done
check "every box answered as itself ($n of 4)" test "$n" = 4
tail -n +$((n0 + 1)) "$LOG" >"$BG_TMP/run.log"
# connections the jump host took before it accepted the first session
early=$(awk '/Accepted publickey/ { exit } /Connection from/ { n++ } END { print n + 0 }' "$BG_TMP/run.log")
lanes=$(grep -c 'Accepted publickey' "$BG_TMP/run.log")
if [ "$early" -ge 2 ]; then ok "a second lane connected while the first was still in its handshake ($early connections before the first acceptance)"; else
  not_ok "lanes waited for the first to authenticate: $early connection(s) before the first acceptance"; diag "$(cat "$BG_TMP/run.log")"; diag "$(cat "$ERR_FILE")"; fi
if [ "$lanes" -ge 2 ] && [ "$lanes" -le 4 ]; then ok "2-4 sessions on the jump host for the 4 boxes ($lanes)"; else
  not_ok "$lanes sessions on the jump host for 4 boxes"; diag "$(cat "$ERR_FILE")"; fi
# each box's handshake through the tunnel: as pipelined as a direct one (t66)
bad=''
for i in 2 3 4 5; do
  read -r a c <<<"$(sed -n "s/.* b$i round trips after the TCP connect: [0-9]* (\([0-9]*\) to authenticate, \([0-9]*\) for channels).*/\1 \2/p" "$ERR_FILE")"
  { [ -n "$a" ] && [ "$a" -le 5 ] && [ "${c:-9}" -le 1 ]; } || bad="$bad b$i($a+$c)"
done
[ -z "$bad" ] && ok "every box behind the jump: at most 5 round trips to authenticate and 1 for its channel" || { not_ok "round trips through the jump:$bad"; diag "$(cat "$ERR_FILE")"; }
has "$ERR_FILE" "b[2-5] channel through jump h1 \\(lane [1-4]\\) open" "BOXGATE_TRACE says when each box's channel opened, and on which lane"
# Each lane's first channel went out behind the lane's signed request, in place of
# a session channel the lane never uses: open once the lane is authenticated, with
# no round trip of its own (later channels on a lane cost one each).
pycheck "each lane's first channel open cost the lane no round trip past its authentication" '
import re, sys
first = {}
for line in open(sys.argv[1]):
    m = re.search(r"\(lane (\d+)\) open: .* round trips so far (\d+) \((\d+) to authenticate\)", line)
    if m:
        lane, so_far, auth = int(m[1]), int(m[2]), int(m[3])
        first[lane] = min(first.get(lane, (99, 0)), (so_far, auth))
assert first, "no channel-open trace lines"
for lane, (so_far, auth) in first.items():
    assert so_far == auth, (lane, so_far, auth)
' "$ERR_FILE"
finish
