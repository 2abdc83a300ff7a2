#!/usr/bin/env bash
# Round trips after the TCP connect, as BOXGATE_TRACE counts them (the client waiting
# for an answer after it sent), on a host 10 ms away each way so that every answer
# is a real wait. To authenticate: banners and KEXINITs, key exchange, the ssh-userauth
# service with the first key's public key query right behind it, the signature with
# the first channel's open right behind it (4; 5 when the server's KEXINIT comes apart
# from its banner, as it does on a loaded machine). Then the exec, whose answer the
# command's output follows (1); a later channel costs its open too (2). `run` with the agent in place
# takes one channel: the agent check and the push manifest read ride in front of the
# gate in the same command; through the box's connection master it takes one exec
# channel on the master's session, as ssh through a ControlMaster does.
source "$(dirname "$0")/lib.sh"

D=''
trap '[ -z "$D" ] || "$BG_ROOT/tests/hosts/hosts" down "$D" >/dev/null 2>&1; rm -rf "$BG_TMP"' EXIT
D=$("$BG_ROOT/tests/hosts/hosts" up --n 1 --delay 10) || { not_ok "test hosts came up"; finish; exit 1; }
# shellcheck disable=SC1091
source "$D/env.sh"
fake_gate_on 1
INI=$BG_TMP/rt.ini
cat "$BG_CONFIG" >"$INI"
printf '\n[box g1]\nhost = h1\nrepo = /root/repo\ngate = gate.sh\nrequire_gpu = no\nallow = --kind\n' >>"$INI"
# a gate that exits with the agent check's own status, saying nothing
printf '\n[box g97]\nhost = h1\nrepo = /root/repo\ngate = g97.sh\nrequire_gpu = no\n' >>"$INI"
printf '#!/bin/sh\nexit 97\n' >"$BG_HOST_1_ROOT/repo/g97.sh"
chmod 755 "$BG_HOST_1_ROOT/repo/g97.sh"
bg() { BOXGATE_TRACE=1 "$BOXGATE" --config "$INI" "$@"; }
# trips FILE: "AUTH CHANNELS", the round trips the last trace line in FILE reports.
trips() { sed -n 's/.*round trips after the TCP connect: [0-9]* (\([0-9]*\) to authenticate, \([0-9]*\) for channels).*/\1 \2/p' "$1" | tail -n 1; }

expect_rc 0 "exec true through the traced client" bg exec --boxes h1 -- true
read -r a n <<<"$(trips "$ERR_FILE")"
if [ -n "$a" ] && [ "$a" -le 5 ]; then ok "exec true: $a round trips to authenticate (the channel's open rides with the signature)"; else
  not_ok "exec true: '$a' round trips to authenticate, more than 5"; diag "$(cat "$ERR_FILE")"; fi
if [ "${n:-9}" -le 1 ]; then ok "exec true: $n round trip for its channel (the exec)"; else
  not_ok "exec true: '$n' round trips for its channel, more than 1"; diag "$(cat "$ERR_FILE")"; fi
check "exec true: at most 6 round trips after the TCP connect in all ($((a + n)))" test $((a + n)) -le 6
# A first key the box refuses: its query went out early and came back refused; the
# next key is asked for as before, and the command runs.
sed "s|^  IdentityFile \(.*\)$|  IdentityFile $BG_TMP/other\n  IdentityFile \1|" "$BG_SSH_CONFIG" >"$BG_TMP/ssh2"
ssh-keygen -q -t ed25519 -N '' -f "$BG_TMP/other" </dev/null
sed "s|^ssh_config = .*|ssh_config = $BG_TMP/ssh2|" "$INI" >"$BG_TMP/two.ini"
BOXGATE_TRACE=1 expect_rc 0 "exec with a refused key first, the right one second" "$BOXGATE" --config "$BG_TMP/two.ini" exec --boxes h1 -- echo two-keys
has "$OUT_FILE" "two-keys" "... runs the command"
# A changed host key: refused before any key is offered (no public key line in the log)
p0=$(grep -c publickey "$BG_HOSTS_DIR/h1/sshd.log")
cp "$BG_KNOWN_HOSTS" "$BG_TMP/kh.orig"
awk '{ print $1 " ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEPl0ngX9lM8RXbY0X4Qm3z2WvYyVvC7v2T4u8w9b5tK" }' "$BG_TMP/kh.orig" >"$BG_KNOWN_HOSTS"
expect_rc 3 "exec to a host whose key changed is refused" bg exec --boxes h1 -- true
check "... before any public key was offered" test "$(grep -c publickey "$BG_HOSTS_DIR/h1/sshd.log")" = "$p0"
cp "$BG_TMP/kh.orig" "$BG_KNOWN_HOSTS"

# sessions: the exec channels host 1's sshd has started so far (LogLevel VERBOSE)
sessions() { grep -c 'Starting session: command' "$BG_HOSTS_DIR/h1/sshd.log"; }
s0=$(sessions)
expect_rc 0 "run installs the agent on the first call" bg run g1 --results "$BG_TMP/r.jsonl" -- --kind x
has "$ERR_FILE" "agent installed" "... saying so"
read -r a n <<<"$(trips "$ERR_FILE")"
s1=$(sessions)
# the run whose check failed, the upload, the run again: 3 channels, the first one's
# open riding with the authentication
if [ "${n:-99}" -le 5 ] && [ $((s1 - s0)) -le 3 ]; then ok "run that installs: $n round trips for channels, $((s1 - s0)) exec channels"; else
  not_ok "run that installs: '$n' round trips for channels (more than 5) or $((s1 - s0)) exec channels (more than 3)"; diag "$(cat "$ERR_FILE")"; fi
expect_rc 0 "run with the agent in place" bg run g1 --results "$BG_TMP/r.jsonl" -- --kind x
read -r a n <<<"$(trips "$ERR_FILE")"
s2=$(sessions)
# the agent check and the manifest read ride in the gate's own command: one channel,
# opened with the authentication
if [ "${n:-9}" -le 1 ]; then ok "run: $n round trip for channels (the agent check and the manifest read ride with the gate)"; else
  not_ok "run: '$n' round trips for channels, more than 1"; diag "$(cat "$ERR_FILE")"; fi
check "... and one exec channel on the box ($((s2 - s1)))" test $((s2 - s1)) = 1
expect_rc 0 "run --no-results with the agent in place" bg run --no-results g1 -- --kind x
read -r a n <<<"$(trips "$ERR_FILE")"
s3=$(sessions)
if [ "${n:-9}" -le 1 ]; then ok "... $n round trip for channels (at most 1)"; else
  not_ok "... '$n' round trips for channels, more than 1"; diag "$(cat "$ERR_FILE")"; fi
check "... and one exec channel on the box ($((s3 - s2)))" test $((s3 - s2)) = 1

# Warm: through the box's connection master the same run is one exec channel on the
# master's session (its channel opened ahead), no new SSH session.
WARM=$BG_TMP/warm.ini
sed 's/^control_persist_s = 0$/control_persist_s = 60/' "$INI" >"$WARM"
warm() { "$BOXGATE" --config "$WARM" "$@"; }
# shellcheck source=tests/integration/masters.sh
source "$(dirname "$0")/masters.sh"
expect_rc 0 "a run that leaves g1 a master" warm run --no-results g1 -- --kind x
a0=$(accepted 1) s0=$(sessions)
BOXGATE_TRACE=1 expect_rc 0 "warm run with the agent in place" warm run g1 --results "$BG_TMP/r.jsonl" -- --kind x
has "$ERR_FILE" "through the box's connection master" "... went through the master"
s1=$(sessions)
check "... one exec channel on the box ($((s1 - s0))), no new session" test $((s1 - s0)) = 1 -a "$(accepted 1)" = "$a0"
BOXGATE_TRACE=1 expect_rc 0 "warm run --no-results" warm run --no-results g1 -- --kind x
s2=$(sessions)
check "... one exec channel on the box ($((s2 - s1)))" test $((s2 - s1)) = 1
# the agent gone behind a master's back: the run finds it absent, installs and runs
rm -rf "$BG_HOST_1_ROOT/.cache/boxgate"
BOXGATE_TRACE=1 expect_rc 0 "warm run after the agent vanished" warm run --no-results g1 -- --kind x
has "$ERR_FILE" "agent installed" "... installs it again"
has "$OUT_FILE" "^PASS_GATE" "... and the gate is judged once"
check "... one judged line, not two" test "$(grep -c '^PASS_GATE' "$OUT_FILE")" = 1
warm disconnect >/dev/null 2>&1
pycheck "every record carries the push manifest (read in front of the gate, cold and warm)" '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert len(recs) == 3, len(recs)
for r in recs:
    assert isinstance(r.get("pushed"), list) and not r.get("pushed_error"), r
' "$BG_TMP/r.jsonl"

# The agent removed behind boxgate's back: the check fails, the agent is installed
# again and the manifest is still read.
rm -rf "$BG_HOST_1_ROOT/.cache/boxgate"
expect_rc 0 "run after the agent vanished installs it again" bg run g1 --results "$BG_TMP/r.jsonl" -- --kind x
has "$ERR_FILE" "agent installed" "the missing agent is installed again"
# A manifest too big to read: the run goes on, the record says why.
mkdir -p "$BG_HOST_1_ROOT/repo/.boxgate"
head -c $((1100 * 1024)) /dev/zero | tr '\0' 'a' >"$BG_HOST_1_ROOT/repo/.boxgate/pushed"
expect_rc 0 "run with an unreadable manifest still runs" bg run g1 --results "$BG_TMP/r.jsonl" -- --kind x
pycheck "the record says why the manifest was not read" '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert recs[-1]["pushed"] is None and "larger than" in recs[-1]["pushed_error"], recs[-1]
' "$BG_TMP/r.jsonl"
# A fifo (or a device) in the manifest's place is refused at once: reading it would
# block the run until the read's timeout.
rm -f "$BG_HOST_1_ROOT/repo/.boxgate/pushed"
mkfifo "$BG_HOST_1_ROOT/repo/.boxgate/pushed"
t0=$(date +%s)
expect_rc 0 "run with a fifo as the manifest still runs" bg run g1 --results "$BG_TMP/r.jsonl" -- --kind x
took=$(($(date +%s) - t0))
[ "$took" -lt 25 ] && ok "... without waiting on the fifo (${took} s)" || not_ok "the run waited ${took} s on the fifo"
pycheck "the record says the manifest is not a regular file" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])][-1]
assert r["pushed"] is None and "not a regular file" in r["pushed_error"], r
' "$BG_TMP/r.jsonl"
rm -f "$BG_HOST_1_ROOT/repo/.boxgate/pushed"
# An agent that lost its execute bit fails the check: installed again.
chmod -x "$BG_HOST_1_ROOT"/.cache/boxgate/agent-*
expect_rc 0 "run with a non-executable agent" bg run g1 --results "$BG_TMP/r.jsonl" -- --kind x
has "$ERR_FILE" "agent installed" "the non-executable agent is installed again"

# What sits in the agent's place is checked by the run's own command: anything that
# is not this agent is replaced, and the gate runs once.
agent=$(ls -d "$BG_HOST_1_ROOT"/.cache/boxgate/agent-*)
odd() { # DESC: the agent's place prepared by the caller; the run replaces it
  expect_rc 0 "run with $1 in the agent's place" bg run --no-results g1 -- --kind x
  has "$ERR_FILE" "agent installed" "... installs the agent over it"
  check "... and the gate ran once" test "$(grep -c '^PASS_GATE' "$OUT_FILE")" = 1
  check "... the agent is a file again" test -f "$agent" -a -x "$agent" -a ! -L "$agent"
}
rm -f "$agent"; mkdir -p "$agent/sub"; odd "a directory"
rm -f "$agent"; ln -s /bin/true "$agent"; odd "a symlink to /bin/true (exits 0 for any word)"
head -c 4096 /dev/urandom >"$agent"; chmod 755 "$agent"; odd "random bytes, executable"
: >"$agent"; chmod 755 "$agent"; odd "an empty executable file"
# A gate that exits 97 (the check's status) with nothing said is the gate's exit: the
# agent's end report tells them apart; no install, no second run.
s0=$(sessions)
expect_rc 1 "a gate that exits 97 silently is judged, not taken for a missing agent" bg run --no-results g97 -- x
has "$ERR_FILE" "the gate failed \(exited 97\)" "... as the gate's own exit"
hasnt "$ERR_FILE" "agent installed" "... no install"
check "... one exec channel ($(($(sessions) - s0)))" test $(($(sessions) - s0)) = 1
# $HOME that cannot take the agent: said once, nothing recorded, no gate ran.
rm -rf "$BG_HOST_1_ROOT/.cache"; : >"$BG_HOST_1_ROOT/.cache"
expect_rc 1 "run where ~/.cache cannot be made" bg run g1 --results "$BG_TMP/nohome.jsonl" -- --kind x
has "$ERR_FILE" "cannot write the agent into ~/.cache/boxgate" "... says why"
hasnt "$OUT_FILE" "PASS_GATE" "... no gate ran"
check "... nothing recorded" test ! -s "$BG_TMP/nohome.jsonl"
rm -f "$BG_HOST_1_ROOT/.cache"
finish
