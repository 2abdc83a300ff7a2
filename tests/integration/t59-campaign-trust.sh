#!/usr/bin/env bash
# boxgate campaign, what a re-run and a second run may trust, on 4 real sshd test hosts: an
# edited candidate or gate_args is a new job (the run says which cells changed, their old
# records are never counted in the new cells); a second run waits for the first's lock
# and only then reads what is recorded; a job whose gate kills its agent is recorded failed
# after 2 boxes while every healthy box stays in service, and a box that fails every job is
# still quarantined; hostile campaign files and results files are refused.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/campaign_boxes.sh"

hosts_up 4
W=$BG_TMP/w
mkdir -p "$W"
INI=$W/boxgate.ini
cat "$BG_CONFIG" >"$INI"
campaign_boxes 4
printf '\n[pool p4]\nslots = c1, c2, c3, c4\n\n[pool p1]\nslots = c1\n' >>"$INI"
cd "$W" || exit 1
bg() { "$BOXGATE" --config "$INI" "$@"; }
LOGS() { for i in 1 2 3 4; do cat "$(eval echo "\$BG_HOST_${i}_ROOT")/campaign.log" 2>/dev/null; done; }
clear_logs() { for i in 1 2 3 4; do rm -f "$(eval echo "\$BG_HOST_${i}_ROOT")/campaign.log"; done; }
# wait_for FILE PATTERN: until FILE holds PATTERN (an event, not a time), at most 60 s
wait_for() { for _ in $(seq 1 600); do grep -Eq -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }

# camp FILE NAME SPEED GATE_ARGS EXTRA...: 1 shape x 2 worker counts x baseline and fast
camp() {
  local f=$1 name=$2 speed=$3 ga=$4; shift 4
  {
    printf '[campaign %s]\npool = p4\ngate_args = %s\nshapes = q_b\nnum_workers = 8 64\n' "$name" "$ga"
    printf 'candidates = baseline fast\ncandidate.fast = --speed %s\n' "$speed"
    for x in "$@"; do printf '%s\n' "$x"; done
  } >"$f"
}
# cell JSONFILE NW CAND FIELD: a cell's field from the closing "points" event of --json
cell() {
  python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
pts = [e for e in ev if e.get("event") == "points"][-1]
for p in pts["points"]:
    if p["num_workers"] == int(sys.argv[2]):
        for c in p["cells"]:
            if c["candidate"] == sys.argv[3]:
                print(c[sys.argv[4]])
' "$@"
}

# --- an edited candidate is a new job; old records are not counted in the new cell ---
clear_logs
camp e.ini e 1.25 "--kind fake --sleep 0.05"
expect_rc 0 "a campaign of 4 jobs" bg campaign e.ini --plain
sed -i 's/^candidate.fast = --speed 1.25/candidate.fast = --speed 2/' e.ini
expect_rc 0 "the same campaign with candidate.fast edited" bg campaign e.ini --json
has "$ERR_FILE" 'campaign e: 2 cells changed definition since their records: candidate.fast \(flags\); they run again' "it says which cells changed definition, and how"
has "$ERR_FILE" '2 of 4 jobs already recorded' "only the baseline's jobs count as recorded"
[ "$(LOGS | grep -c '^end q_b [0-9]* 2 ')" = 2 ] && ok "the edited candidate ran at both points" || not_ok "the edited candidate ran $(LOGS | grep -c '^end q_b [0-9]* 2 ') times"
[ "$(cell "$OUT_FILE" 64 fast n)" = 1 ] && [ "$(cell "$OUT_FILE" 64 fast ratio | cut -c1-5)" = 2.000 ] && ok "the new cell holds the new definition's record only (ratio 2.0)" || not_ok "the new cell: n $(cell "$OUT_FILE" 64 fast n) ratio $(cell "$OUT_FILE" 64 fast ratio)"
pycheck "the summary counts the old records apart" '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
p = [e for e in ev if e.get("event") == "points"][-1]
assert p["superseded"] == 2 and p["jobs_recorded"] == 4, (p["superseded"], p["jobs_recorded"])
' "$OUT_FILE"
sed -i 's/^num_workers = 8 64/num_workers = 8 64\nrepeats = 2/' e.ini
expect_rc 0 "repeats raised to 2" bg campaign e.ini --json
hasnt "$ERR_FILE" 'changed definition' "raising repeats changes no definition"
[ "$(cell "$OUT_FILE" 64 fast n)" = 2 ] && [ "$(cell "$OUT_FILE" 64 fast slowCTA_max_us)" = "$(cell "$OUT_FILE" 64 fast slowCTA_min_us)" ] && ok "two samples of the same definition, none of the old" || not_ok "fast nw64: n $(cell "$OUT_FILE" 64 fast n), min $(cell "$OUT_FILE" 64 fast slowCTA_min_us) max $(cell "$OUT_FILE" 64 fast slowCTA_max_us)"
expect_rc 0 "report on the edited campaign" bg report e.results.jsonl --out rep
has rep/e.results.report.md 'records? of an earlier definition .* not counted: fast' "the report's notes name the candidate whose old records are not counted"
pycheck "report --json: the fast cells hold only --speed 2 samples" '
import json, subprocess, sys
out = subprocess.run(sys.argv[1:] + ["report", "e.results.jsonl", "--out", "rep", "--json"], capture_output=True, text=True).stdout
j = json.loads(out.splitlines()[-1]) if out.strip() else None
pts = j.get("points") if j else None
if pts is None:
    raise SystemExit("no points in report --json: " + out[:300])
for p in pts:
    for c in p["cells"]:
        if c["candidate"] == "fast":
            assert c["n"] == 2 and abs(c["ratio"] - 2.0) < 1e-3, c
' "$BOXGATE" --config "$INI"
sed -i 's/^gate_args = --kind fake --sleep 0.05/gate_args = --kind fake --sleep 0.06/' e.ini
expect_rc 0 "gate_args edited" bg campaign e.ini --plain
has "$ERR_FILE" '4 cells changed definition since their records: baseline \(gate_args\), candidate.fast \(gate_args\)' "an edited gate_args changes every cell, the baseline's too"
has "$ERR_FILE" '0 of 8 jobs already recorded|campaign e: 8 jobs to run' "every job runs again"
sed -i 's/--sleep 0.06/--sleep 0.05/; s/--speed 2$/--speed 1.25/; /^repeats = 2/d' e.ini
n0=$(LOGS | grep -c '^end ')
expect_rc 0 "the first definition again" bg campaign e.ini --json
has "$ERR_FILE" '4 of 4 jobs already recorded' "its records count again"
[ "$(LOGS | grep -c '^end ')" = "$n0" ] && ok "nothing ran" || not_ok "a job ran again"
[ "$(cell "$OUT_FILE" 64 fast ratio | cut -c1-4)" = 1.25 ] && ok "the summary shows the campaign file's definition (ratio 1.25), not the last recorded" || not_ok "ratio $(cell "$OUT_FILE" 64 fast ratio)"

# --- a second run waits for the first's lock, then reads what it recorded ---
clear_logs
camp l.ini l 1.25 "--kind fake --sleep 0.05"
expect_rc 0 "run A's records, written aside" bg campaign l.ini --plain --results a.jsonl
mkfifo go
# holds a POSIX lock on l's results file (as run A's would be), appends A's records once
# told to through the FIFO, then lets go
python3 -c '
import fcntl, sys
f = open("l.results.jsonl", "a")
fcntl.lockf(f, fcntl.LOCK_EX)
print("locked", flush=True)
open("go").read()
f.write(open("a.jsonl").read()); f.flush()
fcntl.lockf(f, fcntl.LOCK_UN)
' >holder.out &
hpid=$!
wait_for holder.out locked || not_ok "the lock holder started"
n0=$(LOGS | grep -c '^end ')
"$BOXGATE" --config "$INI" campaign l.ini --plain >b.out 2>b.err &
bpid=$!
if wait_for b.err 'another campaign run is writing .*l.results.jsonl; waiting for it to end'; then
  ok "run B says it waits for the run holding the results file"
else
  not_ok "run B did not wait"; diag "$(cat b.err)"
fi
echo go >go
wait $hpid
wait $bpid; rc=$?
[ "$rc" = 0 ] && ok "run B ends well (exit 0)" || { not_ok "run B exit $rc"; diag "$(cat b.err)"; }
has b.err '4 of 4 jobs already recorded' "run B read the records run A made while it waited"
[ "$(LOGS | grep -c '^end ')" = "$n0" ] && ok "run B ran no job" || not_ok "run B ran $(( $(LOGS | grep -c '^end ') - n0 )) jobs"
# Ctrl-C while waiting: nothing runs, exit 130
python3 -c '
import fcntl
f = open("l.results.jsonl", "a")
fcntl.lockf(f, fcntl.LOCK_EX)
print("locked", flush=True)
open("go").read()
' >holder2.out &
hpid=$!
wait_for holder2.out locked || not_ok "the lock holder started"
sed -i 's/--speed 1.25/--speed 3/' l.ini
"$BOXGATE" --config "$INI" campaign l.ini --plain >b2.out 2>b2.err &
bpid=$!
wait_for b2.err 'waiting for it to end' || not_ok "run B did not wait"
kill -INT $bpid; wait $bpid; rc=$?
echo go >go; wait $hpid
[ "$rc" = 130 ] && ok "Ctrl-C while waiting: exit 130" || not_ok "Ctrl-C while waiting: exit $rc"
has b2.err 'stopped while waiting for the other run; nothing was run' "it says nothing was run"
[ "$(LOGS | grep -c '^end ')" = "$n0" ] && ok "no job ran" || not_ok "a job ran"

# --- a kernel file edited after the campaign read it: the run stops, no box is charged ---
clear_logs
mkdir -p kernels
printf 'speed 2\n' >kernels/kf.cuh
printf '[campaign kf]\npool = p1\ngate_args = --kind fake --sleep 0.05\nshapes = q_b\ncandidates = kernels/kf.cuh\n' >kf.ini
python3 -c '
import fcntl
f = open("kf.results.jsonl", "a")
fcntl.lockf(f, fcntl.LOCK_EX)
print("locked", flush=True)
open("go").read()
' >holder3.out &
hpid=$!
wait_for holder3.out locked || not_ok "the lock holder started"
"$BOXGATE" --config "$INI" campaign kf.ini --plain >kf.out 2>kf.err &
bpid=$!
wait_for kf.err 'waiting for it to end' || not_ok "the campaign did not wait"
printf 'speed 4\n' >kernels/kf.cuh
echo go >go; wait $hpid
wait $bpid; rc=$?
[ "$rc" = 1 ] && ok "a kernel file edited mid-run: exit 1" || { not_ok "exit $rc"; diag "$(cat kf.err)"; }
has kf.err 'campaign kf: stopped: the kernel file .*kernels/kf.cuh changed since the campaign read it' "it says the kernel file changed and stops"
hasnt kf.err 'quarantined' "no box is charged for it"
[ -z "$(LOGS)" ] && ok "no gate ran the edited file under the old key" || not_ok "a gate ran: $(LOGS)"
expect_rc 0 "the run after the edit" bg campaign kf.ini --plain
pycheck "it ran the edited file, keyed and recorded by its SHA-256" '
import hashlib, json, sys
want = hashlib.sha256(open("kernels/kf.cuh", "rb").read()).hexdigest()
recs = [json.loads(l) for l in open(sys.argv[1])]
fin = [r for r in recs if r["campaign"]["final"]]
assert len(fin) == 1 and fin[0]["campaign"]["candidate_sha256"] == want, fin
assert fin[0]["result"]["slowCTA_ratio_base_over_cand"] == 4.0, fin[0]["result"]
' kf.results.jsonl

# --- a poison job: recorded failed after 2 boxes, every healthy box stays in service ---
clear_logs
camp p.ini p 1.25 "--kind fake --sleep 0.3 --poison q_b:64" "candidates = baseline"
sed -i '/^candidates = baseline fast/d; s/^num_workers = 8 64/num_workers = 8 16 32 64 128 136/' p.ini
expect_rc 0 "a campaign with a job whose gate kills its agent" bg campaign p.ini --plain
hasnt "$ERR_FILE" 'quarantined' "no box is quarantined"
[ "$(LOGS | grep -c '^poison q_b 64 ')" = 2 ] && ok "the poison job ran exactly twice" || not_ok "the poison job ran $(LOGS | grep -c '^poison q_b 64 ') times"
has "$ERR_FILE" 'campaign p: job p/q_b/64/baseline@[0-9a-f]{12}/0 marked failed: its agent vanished 2 times \(on c[1-4], c[1-4]\), each box answering again at once: recorded failed, the job.s fault, not the boxes.' "the summary says which job was marked failed and why"
pycheck "the poison job is recorded final once, failed on 2 different boxes; every other job passed" '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
poison = [r for r in recs if r["campaign"]["num_workers"] == 64]
assert len(poison) == 2 and len({r["box"] for r in poison}) == 2, [(r["box"], r["campaign"]["final"]) for r in poison]
assert [r["campaign"]["final"] for r in poison] == [False, True], poison
assert poison[1]["verdict"] is None and "the job" in poison[1]["why"], poison[1]["why"]
rest = [r for r in recs if r["campaign"]["num_workers"] != 64]
assert len(rest) == 5 and all(r["verdict"] == "PASS_GATE" and r["campaign"]["final"] for r in rest)
' p.results.jsonl
expect_rc 0 "running it again" bg campaign p.ini --plain
has "$ERR_FILE" '6 of 6 jobs already recorded' "the failed job is recorded: it does not run again"
# --- a box whose agent dies for every job is still quarantined ---
# The healthy boxes' gates wait for ~/go until the poisoned box has failed two jobs: that box
# gets its two jobs however slowly it connects (a loaded machine let the healthy boxes run
# all eight first), and is charged for each once it runs well elsewhere.
clear_logs
touch "$BG_HOST_2_ROOT/poison_box"
camp q.ini q 1.25 "--kind fake --sleep 0.3 --until go" "candidates = baseline"
sed -i '/^candidates = baseline fast/d; s/^num_workers = 8 64/num_workers = 8 16 32 64 128 136 200 256/' q.ini
bg campaign q.ini --plain >"$OUT_FILE" 2>"$ERR_FILE" &
qpid=$!
poisoned_twice() { [ "$(grep -c '^poison ' "$BG_HOST_2_ROOT/campaign.log" 2>/dev/null)" -ge 2 ]; }
for _ in $(seq 1 1200); do poisoned_twice && break; kill -0 $qpid 2>/dev/null || break; bg_pause 0.1; done
check "the poisoned box failed two jobs while the healthy boxes' gates waited" poisoned_twice
for i in 1 3 4; do touch "$(eval echo "\$BG_HOST_${i}_ROOT")/go"; done
rc=0; wait $qpid || rc=$?
[ "$rc" = 0 ] && ok "a campaign with one box that kills every agent" || { not_ok "a campaign with one box that kills every agent: exit $rc"; diag "$(tail -5 "$ERR_FILE")"; }
rm -f "$BG_HOST_2_ROOT/poison_box" "$BG_HOST_1_ROOT/go" "$BG_HOST_3_ROOT/go" "$BG_HOST_4_ROOT/go"
has "$ERR_FILE" 'box c2 quarantined for the rest of the run' "that box is quarantined"
hasnt "$ERR_FILE" 'box c[134] quarantined|marked failed' "no other box quarantined, no job marked failed"
pycheck "every job passed on a healthy box" '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
final = [r for r in recs if r["campaign"]["final"]]
assert len(final) == 8 and all(r["verdict"] == "PASS_GATE" and r["box"] != "c2" for r in final), [(r["box"], r["verdict"]) for r in final]
' q.results.jsonl
# --- a one-box pool: the poison job is tried twice there, the box stays ---
clear_logs
camp o.ini o 1.25 "--kind fake --sleep 0.05 --poison q_b:8" "candidates = baseline"
sed -i '/^candidates = baseline fast/d; s/^pool = p4/pool = p1/' o.ini
expect_rc 0 "a poison job on a one-box pool" bg campaign o.ini --plain
has "$ERR_FILE" 'job o/q_b/8/baseline@[0-9a-f]{12}/0 marked failed: its agent vanished 2 times \(on c1\)' "marked failed after 2 attempts on the only box"
has "$ERR_FILE" '2 of 2 jobs recorded' "the other job ran on the same box"

# --- a poison job where the other box cannot run any gate: the run ends ---
clear_logs
mv "$BG_HOST_2_ROOT/repo/gate.sh" "$BG_HOST_2_ROOT/repo/gate.sh.off"
camp n.ini n 1.25 "--kind fake --sleep 0.05 --poison q_b:8" "candidates = baseline" "max_failures = 100"
sed -i '/^candidates = baseline fast/d; s/^pool = p4/pool = p12/' n.ini
printf '\n[pool p12]\nslots = c1, c2\n' >>"$INI"
expect_rc 0 "a poison job while the other box cannot run any gate" timeout 120 "$BOXGATE" --config "$INI" campaign n.ini --plain
mv "$BG_HOST_2_ROOT/repo/gate.sh.off" "$BG_HOST_2_ROOT/repo/gate.sh"
has "$ERR_FILE" '2 of 2 jobs recorded' "both jobs are recorded (the poison one INVALID where no gate runs)"
hasnt "$ERR_FILE" 'quarantined' "no box is quarantined"

# --- hostile campaign and results files ---
camp h.ini h 1.25 "--kind fake --sleep 0.05"
mkfifo fifo.jsonl
printf 'results = fifo.jsonl\n' >>h.ini
expect_rc 1 "a FIFO as the results file is refused, not waited on" timeout 20 "$BOXGATE" --config "$INI" campaign h.ini --plain
has "$ERR_FILE" 'the results file .*fifo.jsonl is not a regular file' "it says so"
sed -i 's/^results = fifo.jsonl/results = ./' h.ini
expect_rc 1 "a directory as the results file is refused" bg campaign h.ini --plain

finish
