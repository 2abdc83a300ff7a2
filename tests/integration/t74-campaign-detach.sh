#!/usr/bin/env bash
# boxgate campaign --detach on real sshd test hosts: the campaign runs in a session of its
# own and survives its terminal closing (a real pty from script(1), then SIGHUP) and its
# client's parent exiting; status, list and logs -f follow it from its state file and the
# results store; a second detached run of the same name is refused; cancel stops the
# scheduling and the running gates on every box and leaves every job final or requeued;
# bad subcommand use gets a clear error.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/campaign_boxes.sh"
source "$(dirname "$0")/wait.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts

hosts_up 2
W=$BG_TMP/w
mkdir -p "$W/kernels"
INI=$W/boxgate.ini
cat "$BG_CONFIG" >"$INI"
campaign_boxes 2
printf '\n[pool p2]\nslots = c1, c2\n' >>"$INI"
export XDG_STATE_HOME=$BG_TMP/state
cd "$W" || exit 1
bg() { "$BOXGATE" --config "$INI" "$@"; }
LOGS() { for i in 1 2; do cat "$(eval echo "\$BG_HOST_${i}_ROOT")/campaign.log" 2>/dev/null; done; }

# campaign FILE NAME SLEEP [GATE FLAGS]: 2 shapes x 2 worker counts x 2 candidates = 8 jobs
campaign() {
  printf '[campaign %s]\npool = p2\ngate_args = --kind fake --sleep %s %s\nshapes = q_b kv_a\nnum_workers = 8 64\ncandidates = baseline fast\ncandidate.fast = --speed 1.25\n' "$2" "$3" "${4:-}" >"$1"
}
state_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["state"])' "$XDG_STATE_HOME/boxgate/campaigns/$1.json" 2>/dev/null; }
# ended NAME: its state is one a campaign ends in (not starting, not running)
ended() { bg campaign status "$1" --json 2>/dev/null | python3 -c 'import json,sys; sys.exit(json.load(sys.stdin)["state"] in ("starting", "running"))'; }

# --- detached from a real terminal that then closes ---
# Its gates wait for ~/go on their box: the campaign runs until the test lets it end.
campaign d.ini d 0.1 "--until go"
script -qec "$BOXGATE --config $INI campaign d.ini --detach >$BG_TMP/d.out 2>$BG_TMP/d.err" /dev/null >/dev/null 2>&1
rc=$?
[ "$rc" = 0 ] && ok "campaign --detach returns at once (exit 0)" || not_ok "campaign --detach: exit $rc"
has "$BG_TMP/d.out" '^d$' "it prints the campaign's id"
has "$BG_TMP/d.err" "campaign d runs detached \(pid [0-9]+, log .*/boxgate/campaigns/d.log\)" "and where to follow it"
pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$XDG_STATE_HOME/boxgate/campaigns/d.json")
# Its terminal (script's pty) is gone; a stray SIGHUP does not stop it either.
kill -HUP "$pid" 2>/dev/null
sid=$(ps -o sid= -p "$pid" | tr -d ' ')
if [ -n "$sid" ] && [ "$sid" != "$(ps -o sid= -p $$ | tr -d ' ')" ] && [ "$sid" != "$pid" ]; then
  ok "it runs in a session of its own, not as its leader (it can never regain a terminal)"
else not_ok "its session: $(ps -o pid,sid,pgid -p "$pid")"; fi
expect_rc 1 "a second detached run of the same campaign is refused" bg campaign d.ini --detach
has "$ERR_FILE" "campaign d is already running detached; see 'boxgate campaign status d'" "it says which and where to look"
wait_for "$XDG_STATE_HOME/boxgate/campaigns/d.json" '"running":\[\{' 60
expect_rc 0 "campaign status d while it runs" bg campaign status d
has "$OUT_FILE" '^campaign d: running, pid [0-9]+' "status says running, with its pid"
has "$OUT_FILE" 'progress +[0-9]+ of 8 jobs recorded' "status shows the progress"
has "$OUT_FILE" 'running +c[12]:cpu[0-9]* +d/(q_b|kv_a)/(8|64)/(baseline|fast)@[0-9a-f]{12}/0' "status shows the job running on a slot"
expect_rc 0 "campaign list" bg campaign list
has "$OUT_FILE" '^d +running +[0-9]+/8 ' "list shows it running"
# logs -f follows until the campaign ends, and then returns
touch "$BG_HOST_1_ROOT/go" "$BG_HOST_2_ROOT/go"
expect_rc 0 "campaign logs d -f returns once the campaign has ended" timeout 120 "$BOXGATE" --config "$INI" campaign logs d -f
has "$OUT_FILE" '\[8/8\] ' "the log holds every job's line"
has "$OUT_FILE" 'campaign d: 8 of 8 jobs recorded \(8 this run, 0 before\)' "and the run's summary"
[ "$(state_of d)" = finished ] && ok "the state file says finished" || not_ok "state: $(state_of d)"
pycheck "status --json: finished, 8 ran, the results file holds the 8 final records of its run" '
import json, subprocess, sys
s = json.loads(subprocess.run([sys.argv[1], "--config", sys.argv[2], "campaign", "status", "d", "--json"], capture_output=True, text=True, check=True).stdout)
assert s["state"] == "finished" and s["ran"] == 8 and s["left"] == 0 and s["exit"] == 0, s
assert s["recorded_this_run"] == {"final": 8, "cut": 0}, s
recs = [json.loads(l) for l in open("d.results.jsonl")]
keys = [r["campaign"]["job"] for r in recs if r["campaign"]["final"]]
assert len(keys) == 8 and len(set(keys)) == 8, keys
assert all(r["run_id"] == s["run_id"] for r in recs), s
' "$BOXGATE" "$INI"
expect_rc 1 "cancel of a finished campaign is refused" bg campaign cancel d
has "$ERR_FILE" 'campaign d is not running \(finished\)' "it says the campaign is not running"

# --- the client's parent exits at once; the campaign goes on ---
campaign p.ini p 0.2
( bg campaign p.ini --detach >/dev/null 2>&1 & )
wait_until 30 test -f "$XDG_STATE_HOME/boxgate/campaigns/p.json" && wait_until 120 ended p
[ "$(state_of p)" = finished ] && ok "detached from a parent that exited at once, it finished" || not_ok "state: $(state_of p)"

# --- cancel: stops the scheduling and the running gates, every job final or requeued ---
campaign c.ini c 30
: >"$BG_HOST_1_ROOT/campaign.log"; : >"$BG_HOST_2_ROOT/campaign.log"
expect_rc 0 "a long campaign detaches" bg campaign c.ini --detach
# the gates (campaign_gate.sh pauses in its own process) in this test's hosts
gate_pids() { for i in 1 2; do comm -12 <(pgrep -f '^/bin/bash \./gate\.sh --kind fake --sleep 30 ' | sort) <("$HOSTS" pids "$D" "$i" | sort); done; }
wait_until 60 eval '[ "$(LOGS | grep -c "^start")" -ge 2 ]'
# what the check after cancel looks for is there before it
[ -n "$(gate_pids)" ] && ok "the running gates are found on the boxes before cancel" || not_ok "no running gate found before cancel"
expect_rc 0 "campaign cancel c" timeout 120 "$BOXGATE" --config "$INI" campaign cancel c
has "$OUT_FILE" 'campaign c cancelled: 0 jobs recorded this run, [0-9]+ attempts cut, 8 left' "cancel says what was cut and what is left"
no_gate_left() { [ -z "$(gate_pids)" ]; }
if wait_until 30 no_gate_left; then ok "no gate is left running on any box"; else not_ok "a gate survived cancel"; fi
pycheck "every attempt cut by cancel is recorded final: false (the jobs run again next time)" '
import json
recs = [json.loads(l) for l in open("c.results.jsonl")]
assert len(recs) >= 2 and not any(r["campaign"]["final"] for r in recs), recs
'
[ "$(state_of c)" = cancelled ] && ok "the state file says cancelled" || not_ok "state: $(state_of c)"
expect_rc 0 "status of all campaigns" bg campaign status
has "$OUT_FILE" '^campaign c: cancelled' "it lists the cancelled one"
has "$OUT_FILE" 'left +8 jobs \(run the campaign again to finish them\)' "with what is left"

# --- a campaign killed outright shows as died ---
campaign k.ini k 30
expect_rc 0 "another long campaign detaches" bg campaign k.ini --detach
kpid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$XDG_STATE_HOME/boxgate/campaigns/k.json")
kill -KILL "$kpid"
wait_until 30 ended k
expect_rc 0 "status of a SIGKILLed campaign" bg campaign status k
has "$OUT_FILE" '^campaign k: died' "it shows as died, not running"
expect_rc 1 "cancel of a dead campaign is refused" bg campaign cancel k
# its gates end on their own: the agent's heartbeat sees the client gone
wait_until 60 no_gate_left || true

# --- bad use ---
expect_rc 2 "logs without a name" bg campaign logs
has "$ERR_FILE" 'campaign logs: give the campaign' "it asks for the name"
expect_rc 2 "a path as the name is refused" bg campaign status ../../etc/passwd
has "$ERR_FILE" "bad campaign name '../../etc/passwd'" "it names the bad name"
expect_rc 2 "status of an unknown campaign" bg campaign status nosuch
has "$ERR_FILE" 'no detached campaign nosuch' "it says there is none"
expect_rc 2 "--follow without logs" bg campaign status d -f
expect_rc 2 "--detach with --dry-run" bg campaign d.ini --detach --dry-run
expect_rc 2 "list takes no name" bg campaign list d
chmod 777 "$XDG_STATE_HOME/boxgate/campaigns"
expect_rc 1 "a state directory others can write is refused" bg campaign list
has "$ERR_FILE" 'others can write it' "it says why"
chmod 700 "$XDG_STATE_HOME/boxgate/campaigns"

finish
