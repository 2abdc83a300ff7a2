#!/usr/bin/env bash
# Round trips after the TCP connect, as BOXGATE_TRACE counts them (the client waiting
# for an answer after it sent), on a host 10 ms away each way so that every answer
# is a real wait. libssh2 1.10's floor for `exec true`: banner and KEXINIT, key
# exchange, the ssh-userauth service, public key query and signature, channel open,
# exec (the command's output rides on the exec's answer). `run` with the agent in
# place adds one channel for the agent check and the push manifest together, then
# the gate's channel.
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
# trips FILE: the round trips the trace line in FILE reports.
trips() { sed -n 's/.*round trips after the TCP connect: \([0-9]*\).*/\1/p' "$1" | tail -n 1; }

expect_rc 0 "exec true through the traced client" bg exec --boxes h1 -- true
n=$(trips "$ERR_FILE")
if [ -n "$n" ] && [ "$n" -le 8 ]; then ok "exec true: $n round trips after the TCP connect (libssh2's floor is 7, the stdin EOF's answer may count once)"; else
  not_ok "exec true: '$n' round trips after the TCP connect, more than 8"; diag "$(cat "$ERR_FILE")"; fi

expect_rc 0 "run installs the agent on the first call" bg run g1 --results "$BG_TMP/r.jsonl" -- --kind x
expect_rc 0 "run with the agent in place" bg run g1 --results "$BG_TMP/r.jsonl" -- --kind x
n=$(trips "$ERR_FILE")
# handshake 7, agent check + manifest 2 (one channel), the gate's channel 2 (+1 EOF)
if [ -n "$n" ] && [ "$n" -le 10 ]; then ok "run: $n round trips after the TCP connect (the agent check rides with the manifest read)"; else
  not_ok "run: '$n' round trips after the TCP connect, more than 10"; diag "$(cat "$ERR_FILE")"; fi
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
finish
