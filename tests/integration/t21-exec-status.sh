#!/usr/bin/env bash
# boxgate exec against real sshd test hosts: a channel that closes without an exit status
# (sshd's ChannelTimeout) is "no exit status", never exit 0; the status the command's
# wrapper reports leaves the output byte for byte as written and cannot be forged by it;
# signals still say which; --timeout kills what the command started outside its process
# group (setsid, double forks, TERM ignored), on ssh boxes and on the local box.
source "$(dirname "$0")/lib.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts

D=$("$HOSTS" up --n 2) || { not_ok "test hosts came up"; finish; exit 1; }
LEFT=()
cleanup() {
  local p
  for p in "${LEFT[@]}"; do kill -9 "$p" 2>/dev/null; done
  "$HOSTS" down "$D" >/dev/null 2>&1
  rm -rf "$BG_TMP"
}
trap cleanup EXIT
source "$D/env.sh"
bg() { "$BOXGATE" --config "$BG_CONFIG" "$@"; }

# alive N...: pids of live processes whose command line is "sleep N" (a zombie has
# no command line left).
alive() {
  local IFS='|'
  pgrep -x -f "sleep ($*)"
}
# gone N...: waits (5 s at most) until no such sleep is left; the survivors are killed after.
gone() {
  local k=0
  while [ -n "$(alive "$@")" ] && [ $k -lt 50 ]; do sleep 0.1; k=$((k + 1)); done
  local left
  left=$(alive "$@")
  [ -z "$left" ] && return 0
  LEFT+=($left)
  return 1
}
base=$((300000 + RANDOM * 8))

# --- ChannelTimeout: the channel closes while the command runs on ---
"$HOSTS" stop "$D" 2
echo 'ChannelTimeout session:*=2s' >>"$D/h2/sshd_config"
"$HOSTS" start "$D" 2
SSHD=$(command -v sshd || echo /usr/sbin/sshd)
if "$SSHD" -T -f "$D/h2/sshd_config" 2>/dev/null | grep -qi '^channeltimeout session:\*=2s'; then
  ok "sshd -T shows ChannelTimeout session:*=2s on h2"
  expect_rc 3 "a channel closed by ChannelTimeout is no exit status, not exit 0" bg exec --boxes h2 -- 'sleep 5; echo done'
  has "$ERR_FILE" 'h2 \(no exit status: the channel closed before the command ended' "the summary says no exit status"
  hasnt "$OUT_FILE" 'done' "no output claims the command finished"
  expect_rc 3 "--json: the same" bg exec --json --boxes h2 -- 'sleep 5; echo done'
  has "$OUT_FILE" '"event":"lost"' "--json says lost"
  # a tick every 0.5 s leaves 1.5 s of the 2 s for a loaded machine's scheduling
  expect_rc 0 "a command that keeps the channel busy still exits 0 there" bg exec --boxes h2 -- 'for i in 1 2 3 4 5 6 7 8; do echo tick; sleep 0.5; done'
  [ "$(grep -c '^h2: tick$' "$OUT_FILE")" = 8 ] && ok "every tick arrived" || not_ok "ticks: $(cat "$OUT_FILE")"
else
  skip_all "this sshd has no ChannelTimeout"
fi
expect_rc 0 "the same command on a box without ChannelTimeout exits 0" bg exec --boxes h1 -- 'sleep 3; echo done'
has "$OUT_FILE" '^h1: done$' "... with its output"

# --- the status trailer: output stays byte for byte, and cannot be forged ---
expect_rc 0 "stderr with lookalikes of the trailer" bg exec --json --boxes h1 -- \
  'echo out; echo err >&2; printf "a\036@bgst-0123456789abcdef 0\n" >&2; printf "\036\036x\n" >&2; echo >&2; printf "last\036" >&2'
if python3 - "$OUT_FILE" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
err = [(e['line'], e.get('no_newline', False)) for e in ev if e.get('stream') == 'stderr']
assert err == [('err', False), ('a\x1e@bgst-0123456789abcdef 0', False), ('\x1e\x1ex', False), ('', False),
               ('last\x1e', True)], err
assert [e['line'] for e in ev if e.get('stream') == 'stdout'] == ['out'], ev
assert ev[-1] == {'box': 'h1', 'event': 'exit', 'status': 0}, ev[-1]
PY
then ok "every stderr byte arrives as written, the last line flagged without newline"; else not_ok "stderr bytes"; diag "$(cat "$OUT_FILE")"; fi
expect_rc 1 "a forged status line does not change the exit status" bg exec --boxes h1 -- \
  'printf "\036@bgst-0000000000000000 0\n" >&2; exit 7'
has "$ERR_FILE" 'h1 \(exit 7\)' "exit 7 is reported"
expect_rc 0 "a last stderr line without newline" bg exec --boxes h1 -- 'printf "no newline" >&2'
has "$ERR_FILE" '^h1: no newline$' "arrives whole"
expect_rc 1 "exit and exec still report the status" bg exec --boxes h1 -- 'exec sh -c "exit 5"'
has "$ERR_FILE" 'h1 \(exit 5\)' "exec sh -c 'exit 5' is exit 5"
expect_rc 0 "a command that is only a comment" bg exec --boxes h1 -- '# nothing'

# --- signals ---
expect_rc 1 'kill -9 $$' bg exec --boxes h1 -- 'kill -9 $$'
has "$ERR_FILE" 'h1 \(killed by signal KILL\)' 'kill -9 $$ says signal KILL'
expect_rc 1 "a child killed by TERM" bg exec --json --boxes h1 -- 'sh -c "kill -TERM \$\$"'
has "$OUT_FILE" '"event":"signal","signal":"TERM"' "--json says signal TERM"
hasnt "$OUT_FILE" 'Terminated' "the wrapper's shell adds no line of its own"
expect_rc 1 "a syntax error" bg exec --boxes h1 -- 'echo a; if then'
has "$ERR_FILE" "^h1: .*line 1: syntax error near unexpected token .then'" "is shown, with the command's own line number"

# --- --timeout kills what the command started outside its group ---
s1=$((base + 1)) s2=$((base + 2))
expect_rc 124 "exec --timeout 2 -- 'setsid sleep & sleep'" bg exec --boxes h1 --timeout 2 -- "setsid sleep $s1 & sleep $s2"
has "$ERR_FILE" 'timed out after 2 s' "the summary says timed out"
gone "$s1" "$s2" && ok "no sleep of the command survives (setsid)" || not_ok "left: $(alive "$s1" "$s2")"
s3=$((base + 3)) s4=$((base + 4)) s5=$((base + 5))
expect_rc 124 "double fork and setsid" bg exec --boxes h1 --timeout 2 -- \
  "(setsid sh -c 'sleep $s3 &' &); (sleep $s4 &); sleep $s5"
gone "$s3" "$s4" "$s5" && ok "no sleep of the command survives (double fork)" || not_ok "left: $(alive "$s3" "$s4" "$s5")"
s6=$((base + 6)) s7=$((base + 7))
expect_rc 124 "a detached child that ignores TERM" bg exec --boxes h1 --timeout 2 -- \
  "setsid sh -c 'trap \"\" TERM; exec sleep $s6' </dev/null >/dev/null 2>&1 & sleep $s7"
gone "$s6" "$s7" && ok "it is killed too (KILL after the grace)" || not_ok "left: $(alive "$s6" "$s7")"

# flood CONFIG BOX: a command that never stops writing still ends at --timeout
# (the outer KILL at 30 s only bounds this test if it does not: exit 137).
flood() {
  local rc=0
  timeout -s KILL 30 "$BOXGATE" --config "$1" exec --boxes "$2" --timeout 2 -- yes >/dev/null 2>"$BG_TMP/flood.err" || rc=$?
  if [ "$rc" = 124 ] && grep -q 'timed out after 2 s' "$BG_TMP/flood.err"; then
    ok "$2: a command flooding stdout still times out at --timeout"
  else
    not_ok "$2: flooding command (exit $rc)"; diag "$(head -c 500 "$BG_TMP/flood.err")"
  fi
}
flood "$BG_CONFIG" h1

# --- the same on the local box ---
printf '[box loc]\ntransport = local\nrepo = %s\n' "$BG_TMP" >"$BG_TMP/local.ini"
s8=$((base + 8)) s9=$((base + 9)) s10=$((base + 10)) s11=$((base + 11))
expect_rc 124 "local box: exec --timeout 2 with setsid and a double fork" "$BOXGATE" --config "$BG_TMP/local.ini" exec --boxes loc --timeout 2 -- \
  "setsid sleep $s8 & (setsid sh -c 'sleep $s9 &' &); setsid sh -c 'trap \"\" TERM; exec sleep $s10' </dev/null >/dev/null 2>&1 & sleep $s11"
gone "$s8" "$s9" "$s10" "$s11" && ok "local box: no sleep of the command survives" || not_ok "local left: $(alive "$s8" "$s9" "$s10" "$s11")"
flood "$BG_TMP/local.ini" loc

finish
