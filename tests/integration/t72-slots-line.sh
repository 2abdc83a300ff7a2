#!/usr/bin/env bash
# boxgate slots shows who waits in a pool's first-come line (each waiter: its holder tag,
# since when, its position, the line's box) and which slots a campaign holds (its name from
# the lock's holder tag; for a campaign detached from this client, the job on the slot from
# its state file), in the table and in --json, over real sshd test hosts. Waiters are real
# `run --pool P --wait S` clients held in line while the slot is busy.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/wait.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts

hosts_up 2
fake_gate_on 1
install -m 755 "$BG_ROOT/tests/integration/gates/campaign_gate.sh" "$BG_HOST_2_ROOT/repo/cgate.sh"
INI=$BG_TMP/t72.ini
cat "$BG_CONFIG" >"$INI"
cat >>"$INI" <<EOF2

[box g1]
host = h1
repo = /root/repo
gate = gate.sh
gpus = 0
require_gpu = no
heartbeat_timeout_s = 3
kill_grace_s = 0.5
allow = --kind --shape --num-workers --mode --tag

[box c2]
host = h2
repo = /root/repo
gate = cgate.sh
require_gpu = no
keepalive_s = 1
heartbeat_timeout_s = 3
kill_grace_s = 1
allow = --kind --shape --configs --num-workers --speed --sleep --until --baseline

[pool one]
slots = g1:0

[pool pc]
slots = c2
EOF2
export XDG_STATE_HOME=$BG_TMP/state
bg() { "$BOXGATE" --config "$INI" "$@"; }
cd "$BG_TMP" || exit 1

# --- an empty line ---
expect_rc 0 "slots --pool one: nobody waits yet" bg slots --pool one
has "$OUT_FILE" '^g1 +gpu0 +free$' "the slot is free"
has "$OUT_FILE" '^line of pool one \(on g1\): no one waits$' "the line is said empty"
expect_rc 0 "slots --all: an empty line is not said" bg slots --all
hasnt "$OUT_FILE" 'line of pool' "no line part when nobody waits"
expect_rc 0 "slots --pool one --json" bg slots --pool one --json
pycheck "--json: the slot's row only, no waiter" '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [(r["box"], r["slot"], r["state"]) for r in rows] == [("g1", "gpu0", "free")], rows
' "$OUT_FILE"

# --- the slot held, two waiters in line ---
bg run --pool one --holder long-job --no-results -- --mode slow --tag A >"$BG_TMP/hold.out" 2>&1 &
holder=$!
wait_for "$BG_TMP/hold.out" '^argv' 60
"$BOXGATE" --config "$INI" run --pool one --wait 300 --no-results -- --mode pass >"$BG_TMP/w1.out" 2>&1 &
w1=$!
wait_for "$BG_TMP/w1.out" 'first in line' 60 || not_ok "waiter 1 never got first in line: $(cat "$BG_TMP/w1.out")"
"$BOXGATE" --config "$INI" run --pool one --wait 300 --no-results -- --mode pass >"$BG_TMP/w2.out" 2>&1 &
w2=$!
wait_for "$BG_TMP/w2.out" '1 waiter ahead in line' 60 || not_ok "waiter 2 never got in line: $(cat "$BG_TMP/w2.out")"
me=${USER:-$(id -un)}@$(hostname)
expect_rc 0 "slots --pool one while two wait" bg slots --pool one
has "$OUT_FILE" "^g1 +gpu0 +held +long-job " "the slot is held by the holder"
has "$OUT_FILE" '^line of pool one \(on g1\): 2 waiting, first come first served$' "the line says two wait"
has "$OUT_FILE" "^  1  $me:$w1  since 20[0-9-]+T[0-9:]+Z  \(ticket [0-9]+, agent pid [0-9]+\)$" "waiter 1 first: its tag (user@host:pid), since when, its ticket"
has "$OUT_FILE" "^  2  $me:$w2  since " "waiter 2 second"
expect_rc 0 "slots --pool one --json while two wait" bg slots --pool one --json
pycheck "--json: the slot row, then one object per waiter in line order" '
import json, re, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
slots = [r for r in rows if "slot" in r]
wait = [r for r in rows if "line" in r]
assert len(slots) == 1 and slots[0]["state"] == "held", slots
assert [w["position"] for w in wait] == [1, 2], wait
assert [w["tag"] for w in wait] == [sys.argv[2] + ":" + sys.argv[3], sys.argv[2] + ":" + sys.argv[4]], wait
assert all(w["line"] == "one" and w["box"] == "g1" for w in wait), wait
assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", w["since"]) for w in wait), wait
assert wait[0]["ticket"] < wait[1]["ticket"] and all(isinstance(w["pid"], int) for w in wait), wait
' "$OUT_FILE" "$me" "$w1" "$w2"
expect_rc 0 "slots g1 (the pool's first box named): the line is shown too" bg slots g1
has "$OUT_FILE" '^line of pool one \(on g1\): 2 waiting' "its line"

# A waiter killed in line leaves it: the next look shows one waiter.
kill -KILL "$w2"; wait "$w2" 2>/dev/null
wait_until 60 sh -c "'$BOXGATE' --config '$INI' slots --pool one --json | grep -c '\"line\"' | grep -qx 1" \
  && ok "a SIGKILLed waiter leaves the line (its ticket's lock died with its agent)" \
  || not_ok "the killed waiter still shows: $(bg slots --pool one)"

# Release the holder: waiter 1 runs and the line empties.
touch "$BG_HOST_1_ROOT/release-A"
wait "$holder"; wait "$w1"; rc=$?
[ "$rc" = 0 ] && ok "waiter 1 got the slot and passed" || not_ok "waiter 1 exited $rc: $(tail -3 "$BG_TMP/w1.out")"
expect_rc 0 "slots --pool one after" bg slots --pool one
has "$OUT_FILE" '^line of pool one \(on g1\): no one waits$' "nobody waits"

# --- a campaign holding a slot: foreground, then detached ---
printf '[campaign cf]\npool = pc\ngate_args = --kind fake --sleep 0 --until go-cf\nshapes = q_b\ncandidates = baseline\n' >cf.ini
bg campaign cf.ini --plain >"$BG_TMP/cf.out" 2>&1 &
cf=$!
wait_until 60 grep -q '^start ' "$BG_HOST_2_ROOT/campaign.log" || not_ok "the campaign's gate never started"
wait_until 60 sh -c "'$BOXGATE' --config '$INI' slots c2 | grep -q held" || true
expect_rc 0 "slots c2 while a foreground campaign runs there" bg slots c2
has "$OUT_FILE" "^c2 +cpu +held +campaign cf: [^ ]+@[^ ]+:[0-9]+ \(agent pid [0-9]+\) since " "the slot names the campaign holding it"
expect_rc 0 "slots c2 --json" bg slots c2 --json
pycheck "--json: campaign cf, not detached" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 1 and r[0]["state"] == "held" and r[0]["campaign"] == "cf", r
assert "campaign_detached" not in r[0] and "campaign_job" not in r[0], r
' "$OUT_FILE"
touch "$BG_HOST_2_ROOT/go-cf"
wait "$cf" || not_ok "the foreground campaign failed: $(tail -3 "$BG_TMP/cf.out")"

printf '[campaign cd]\npool = pc\ngate_args = --kind fake --sleep 0 --until go-cd\nshapes = q_b\ncandidates = baseline\n' >cd.ini
expect_rc 0 "campaign cd --detach" bg campaign cd.ini --detach
wait_for "$XDG_STATE_HOME/boxgate/campaigns/cd.json" '"running":\[\{' 60
wait_until 60 sh -c "'$BOXGATE' --config '$INI' slots c2 | grep -q 'campaign cd'" || true
expect_rc 0 "slots c2 while a detached campaign runs there" bg slots c2
has "$OUT_FILE" "^c2 +cpu +held +campaign cd \(detached, cd/q_b/-/baseline@[0-9a-f]{12}/0\): [^ ]+@[^ ]+:[0-9]+ \(agent pid [0-9]+\) since " \
  "the slot names the detached campaign and the job it runs there"
expect_rc 0 "slots c2 --json" bg slots c2 --json
pycheck "--json: campaign cd, detached, its job" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 1 and r[0]["campaign"] == "cd" and r[0]["campaign_detached"] is True, r
assert r[0]["campaign_job"].startswith("cd/q_b/"), r
' "$OUT_FILE"
touch "$BG_HOST_2_ROOT/go-cd"
wait_until 120 sh -c "! grep -q '\"state\":\"running\"' '$XDG_STATE_HOME/boxgate/campaigns/cd.json'" \
  || not_ok "the detached campaign did not end"
finish
