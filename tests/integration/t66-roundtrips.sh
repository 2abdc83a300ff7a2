#!/usr/bin/env bash
# Round trips after the TCP connect, as BOXGATE_TRACE counts them (the client waiting
# for an answer after it sent), on a host 10 ms away each way so that every answer
# is a real wait. libssh2 1.10's floor to authenticate: banners and KEXINITs, key
# exchange, the ssh-userauth service, public key query and signature (5; 6 when the
# server's KEXINIT comes apart from its banner). Then per channel: its open and the
# exec, whose answer the command's output follows (2). `run` with the agent in place
# takes two channels: the agent check with the push manifest read, then the gate.
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
bg() { BOXGATE_TRACE=1 "$BOXGATE" --config "$INI" "$@"; }
# trips FILE: "AUTH CHANNELS", the round trips the last trace line in FILE reports.
trips() { sed -n 's/.*round trips after the TCP connect: [0-9]* (\([0-9]*\) to authenticate, \([0-9]*\) for channels).*/\1 \2/p' "$1" | tail -n 1; }

expect_rc 0 "exec true through the traced client" bg exec --boxes h1 -- true
read -r a n <<<"$(trips "$ERR_FILE")"
if [ -n "$a" ] && [ "$a" -le 6 ]; then ok "exec true: $a round trips to authenticate (libssh2 1.10's floor: 5)"; else
  not_ok "exec true: '$a' round trips to authenticate, more than 6"; diag "$(cat "$ERR_FILE")"; fi
if [ "${n:-9}" -le 2 ]; then ok "exec true: $n round trips for its channel (open, exec)"; else
  not_ok "exec true: '$n' round trips for its channel, more than 2"; diag "$(cat "$ERR_FILE")"; fi

expect_rc 0 "run installs the agent on the first call" bg run g1 --results "$BG_TMP/r.jsonl" -- --kind x
expect_rc 0 "run with the agent in place" bg run g1 --results "$BG_TMP/r.jsonl" -- --kind x
read -r a n <<<"$(trips "$ERR_FILE")"
# the agent check with the manifest read (one channel), the gate's channel: 2 + 2
if [ "${n:-9}" -le 4 ]; then ok "run: $n round trips for channels (the agent check rides with the manifest read)"; else
  not_ok "run: '$n' round trips for channels, more than 4"; diag "$(cat "$ERR_FILE")"; fi
pycheck "both records carry the push manifest (read with the agent check the second time)" '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert len(recs) == 2, len(recs)
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
finish
