#!/usr/bin/env bash
# boxgate campaign on 8 real sshd test hosts with a deterministic gate: a 5 x 4 x 2 campaign
# runs every job exactly once with the numbers the gate's arguments imply; a host whose link
# is cut mid-run is quarantined and its jobs finish elsewhere; a SIGKILLed client is resumed
# with no duplicate and no missing job; a hanging point is TIMEOUT_HANG alone; sources are
# pushed first (a verifier's refusal stops the campaign before any job); a kernel file is
# overlaid; Ctrl-C stops and says what is left; bad campaign files are FILE:LINE errors.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/campaign_boxes.sh"
source "$(dirname "$0")/wait.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts

hosts_up 8
W=$BG_TMP/w
mkdir -p "$W/kernels" "$W/tests"
INI=$W/boxgate.ini
cat "$BG_CONFIG" >"$INI"
campaign_boxes 8
cat >>"$INI" <<'EOF2'

[pool p8]
slots = c1, c2, c3, c4, c5, c6, c7, c8

[pool p2]
slots = c1, c2

[verify]
.py = {python} -c "import ast,sys; ast.parse(open(sys.argv[1],'rb').read(), sys.argv[1])" {}
EOF2
cd "$W" || exit 1
bg() { "$BOXGATE" --config "$INI" "$@"; }
LOGS() { for i in $(seq 1 8); do cat "$(eval echo "\$BG_HOST_${i}_ROOT")/campaign.log" 2>/dev/null; done; }
clear_logs() { for i in $(seq 1 8); do rm -f "$(eval echo "\$BG_HOST_${i}_ROOT")/campaign.log"; done; }

# campaign FILE NAME POOL SLEEP EXTRA...: writes a 5 shapes x 4 worker counts x 2 candidates file
campaign() {
  local f=$1 name=$2 pool=$3 sleep_s=$4; shift 4
  {
    printf '[campaign %s]\npool = %s\ngate_args = --kind fake --sleep %s\n' "$name" "$pool" "$sleep_s"
    printf 'shapes = q_b kv_a o_proj w13 w2\nnum_workers = 8 64 128 136\n'
    printf 'candidates = baseline fast\ncandidate.fast = --speed 1.25\n'
    for x in "$@"; do printf '%s\n' "$x"; done
  } >"$f"
}

# expected_check RESULTS NAME N: every job of the 5 x 4 x 2 matrix recorded final exactly
# once, with the numbers the gate's formula gives (Python's json is the reader)
EXPECT='
import json, sys
path, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
shapes = ["q_b", "kv_a", "o_proj", "w13", "w2"]
final = {}
for line in open(path):
    r = json.loads(line)
    c = r["campaign"]
    if c["name"] != name or not c["final"]:
        continue
    assert c["job"] not in final, "job recorded twice: " + c["job"]
    final[c["job"]] = r
assert len(final) == n, "%d jobs recorded, %d expected" % (len(final), n)
for key, r in final.items():
    c = r["campaign"]
    if r["verdict"] == "TIMEOUT_HANG":
        continue
    b = 100 + 10 * (shapes.index(c["shape"]) + 1) + 1000 / c["num_workers"]
    speed = 1.25 if c["candidate"] == "fast" else 1.0
    got = r["result"]["candidate"]["slowCTA_us"]
    assert abs(got - b / speed) < 0.002, (key, got, b / speed)
    assert r["verdict"] == "PASS_GATE", (key, r["verdict"])
    assert c["jobs"] == n and c["repeats"] == 1
'

# --- a whole campaign, every job exactly once ---
campaign w.ini w p8 0.3
expect_rc 0 "--dry-run lists the jobs without connecting" bg campaign w.ini --dry-run
has "$OUT_FILE" '^campaign w \(.*w.ini:1\): 40 jobs, 0 recorded, 40 to run on pool p8 \(8 slots\)' "it counts 40 jobs over 8 slots"
has "$OUT_FILE" '^c1:cpu +w/q_b/8/baseline@[0-9a-f]{12}/0 +--kind fake --sleep 0.3 --shape q_b --configs q_b --num-workers 8 --baseline$' "each job with its key, first slot and gate words"
[ ! -e w.results.jsonl ] && ok "a dry run records nothing" || not_ok "a dry run wrote records"
expect_rc 0 "a 5 x 4 x 2 campaign over 8 hosts" bg campaign w.ini --plain
pycheck "every job recorded final exactly once, with the gate's numbers" "$EXPECT" w.results.jsonl w 40
[ "$(LOGS | grep -c '^end ')" = 40 ] && ok "the gate ran 40 times in all" || not_ok "the gate ran $(LOGS | grep -c '^end ') times"
used=$(python3 -c 'import json,sys; print(len({json.loads(l)["box"] for l in open(sys.argv[1])}))' w.results.jsonl)
[ "$used" = 8 ] && ok "all 8 boxes took jobs" || not_ok "only $used boxes took jobs"
has "$OUT_FILE" '^\[40/40\] ' "one line per finished job, counted to 40/40"
expect_rc 0 "running it again" bg campaign w.ini --plain
has "$ERR_FILE" '40 of 40 jobs already recorded' "it says every job is recorded"
[ "$(LOGS | grep -c '^end ')" = 40 ] && ok "and runs nothing again" || not_ok "a recorded job ran again"

# --- --json: events Python's json reads ---
clear_logs
campaign j.ini j p2 0.05
expect_rc 0 "--json" bg campaign j.ini --json
pycheck "--json events: 40 job_end, one summary, every line JSON" '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
ends = [e for e in ev if e.get("event") == "job_end"]
summ = [e for e in ev if e.get("event") == "summary"]
assert len(ends) == 40 and len({e["job"] for e in ends}) == 40, len(ends)
assert all(e["verdict"] == "PASS_GATE" and e["slot"] in ("c1:cpu", "c2:cpu") for e in ends)
assert len(summ) == 1 and summ[0]["left"] == 0 and summ[0]["ran"] == 40, summ
' "$OUT_FILE"

# --- a cut link: the host is quarantined, its jobs finish elsewhere ---
clear_logs
campaign cut.ini cut p8 1.5
"$BOXGATE" --config "$INI" campaign cut.ini --plain >"$BG_TMP/cut.out" 2>"$BG_TMP/cut.err" &
cpid=$!
for _ in $(seq 1 100); do grep -q '^start' "$BG_HOST_3_ROOT/campaign.log" 2>/dev/null && break; sleep 0.1; done
if "$HOSTS" link "$D" 3 down; then
  wait $cpid; rc=$?
  if [ "$rc" = 0 ]; then ok "the campaign ends well with a host cut off (exit 0)"; else
    not_ok "exit $rc with a host cut"; sed 's/^/# /' "$BG_TMP/cut.err"; fi
  has "$BG_TMP/cut.err" 'box c3 quarantined for the rest of the run after 2 failures' "the cut host is quarantined, and the run says so"
  has "$BG_TMP/cut.err" 'on c3:cpu cut: .*\(requeued\)' "its running job was requeued"
  pycheck "every job recorded final once, none on the cut host after the cut" "$EXPECT" cut.results.jsonl cut 40
  pycheck "the cut attempt is recorded final: false, and its job ran again elsewhere" '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
cut = [r for r in recs if not r["campaign"]["final"]]
assert cut and all(r["box"] == "c3" for r in cut), [(r["box"], r["campaign"]["job"]) for r in cut]
for r in cut:
    again = [x for x in recs if x["campaign"]["job"] == r["campaign"]["job"] and x["campaign"]["final"]]
    assert len(again) == 1 and again[0]["box"] != "c3" and again[0]["campaign"]["attempt"] == 2, again
' cut.results.jsonl
  "$HOSTS" link "$D" 3 up
else
  wait $cpid
  ok "# SKIP link cut needs netns mode"
fi

# --- SIGKILL of the client mid-run, then a re-run: nothing twice, nothing missing ---
clear_logs
campaign k.ini k p8 1
"$BOXGATE" --config "$INI" campaign k.ini --plain >"$BG_TMP/k1.out" 2>&1 &
cpid=$!
for _ in $(seq 1 200); do [ "$(nlines k.results.jsonl)" -ge 12 ] && break; sleep 0.1; done
# a second run waits for the first (it reads the records only once it holds the lock)
"$BOXGATE" --config "$INI" campaign k.ini --plain >"$BG_TMP/k2.out" 2>"$BG_TMP/k2.err" &
k2=$!
for _ in $(seq 1 600); do grep -q 'waiting for it to end' "$BG_TMP/k2.err" && break; sleep 0.1; done
has "$BG_TMP/k2.err" 'campaign k: another campaign run is writing .*k.results.jsonl; waiting for it to end' "a second run of a running campaign says it waits for it"
kill -KILL $cpid; wait $cpid 2>/dev/null
first=$(nlines k.results.jsonl)
[ "$first" -ge 12 ] && [ "$first" -lt 40 ] && ok "SIGKILL landed mid-run ($first records)" || not_ok "SIGKILL at $first records"
wait $k2; rc=$?
[ "$rc" = 0 ] && ok "the waiting run takes over and finishes the campaign" || { not_ok "the waiting run: exit $rc"; diag "$(cat "$BG_TMP/k2.err")"; }
has "$BG_TMP/k2.err" "$first of 40 jobs already recorded" "it resumes from the recorded jobs"
pycheck "after the re-run: every job once, no duplicate" "$EXPECT" k.results.jsonl k 40
pycheck "no job recorded by the first run ran in the second" '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
runs = sorted({r["run_id"] for r in recs}, key=[r["run_id"] for r in recs].index)
assert len(runs) == 2, runs
first = {r["campaign"]["job"] for r in recs if r["run_id"] == runs[0]}
second = {r["campaign"]["job"] for r in recs if r["run_id"] == runs[1]}
assert not first & second, first & second
assert len(first | second) == 40
' k.results.jsonl

# --- a hanging point: TIMEOUT_HANG for that job only, its slot freed ---
clear_logs
campaign h.ini h p2 0.05 "timeout_s = 2" "gate_args = --kind fake --sleep 0.05 --hang kv_a:64"
expect_rc 2 "gate_args set twice: refused" bg campaign h.ini
has "$ERR_FILE" "h.ini:[0-9]+: 'gate_args' set twice in \[campaign h\], first at line 3" "the error names the file, line and the first"
sed -i '3d' h.ini
expect_rc 0 "a campaign with one hanging point completes" bg campaign h.ini --plain
pycheck "exactly the two kv_a nw64 jobs are TIMEOUT_HANG, everything else passes" '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
import re
hang = sorted(re.sub("@[0-9a-f]{12}/", "/", r["campaign"]["job"]) for r in recs if r["verdict"] == "TIMEOUT_HANG")
assert hang == ["h/kv_a/64/baseline/0", "h/kv_a/64/fast/0"], hang
assert sum(r["verdict"] == "PASS_GATE" for r in recs) == 38
assert all(r["campaign"]["final"] for r in recs)
' h.results.jsonl
has "$OUT_FILE" 'kv_a nw64 baseline r0 on c[12]:cpu: TIMEOUT_HANG' "the job line says TIMEOUT_HANG"

# --- push first; a refused source stops the campaign before any job ---
clear_logs
printf 'x = 1\n' >tests/helper.py
campaign p.ini p p2 0.05 "push = tests/helper.py" "shapes = q_b" "num_workers = 8"
expect_rc 2 "shapes set twice: refused" bg campaign p.ini
sed -i '/^shapes = q_b kv_a/d; /^num_workers = 8 64/d' p.ini
expect_rc 0 "a campaign that pushes a source first" bg campaign p.ini --plain
[ -f "$BG_HOST_1_ROOT/repo/tests/helper.py" ] && [ -f "$BG_HOST_2_ROOT/repo/tests/helper.py" ] && ok "the source is on both boxes" || not_ok "the source was not pushed"
[ "$(grep -cE '^boxgate: campaign p: push: [^ :]+: tests/helper.py: ' "$ERR_FILE")" = 2 ] && ok "each box's push is said on one line" || not_ok "each box's push is said on one line: $(cat "$ERR_FILE")"
pycheck "the records carry the pushed file's SHA-256" '
import hashlib, json, sys
want = hashlib.sha256(open("tests/helper.py", "rb").read()).hexdigest()
recs = [json.loads(l) for l in open(sys.argv[1])]
assert len(recs) == 2
for r in recs:
    assert any(p["path"] == "tests/helper.py" and p["sha256"] == want for p in r["pushed"]), r["pushed"]
' p.results.jsonl
printf 'def broken(:\n' >tests/helper.py
rm -f p.results.jsonl
clear_logs
expect_rc 4 "a source the verifier refuses" bg campaign p.ini --plain
has "$ERR_FILE" 'campaign p: push failed \(exit 4\): no job was run' "it says no job ran"
has "$ERR_FILE" 'campaign p: push: c[12]: tests/helper.py: refused by the verifier on the box \(exit 1\)' "it names the refused source and its box"
hasnt "$ERR_FILE" 'push: (c[12]): \1:' "... once"
[ ! -s p.results.jsonl ] && [ -z "$(LOGS)" ] && ok "no gate ran, nothing recorded" || not_ok "a job ran after the refused push"
grep -q 'x = 1' "$BG_HOST_1_ROOT/repo/tests/helper.py" && ok "the box kept the good source" || not_ok "the refused source replaced the good one"
sed -i 's|^push = tests/helper.py$|push = tests/helper.py tests/no-such-source.py|' p.ini
expect_rc 2 "a source that does not exist" bg campaign p.ini --plain
has "$ERR_FILE" 'p.ini:6: push: no such readable file .*/tests/no-such-source.py' "the spec names the missing source"
[ ! -s p.results.jsonl ] && ok "nothing recorded" || not_ok "a job ran after the refused push"

# --- a kernel file overlaid as the candidate ---
clear_logs
printf 'speed 2\n' >kernels/cand_b.cuh
campaign o.ini o p2 0.05 "candidates = baseline kernels/cand_b.cuh" "shapes = q_b" "num_workers = 64"
sed -i '/^candidates = baseline fast/d; /^shapes = q_b kv_a/d; /^num_workers = 8 64/d' o.ini
expect_rc 0 "a kernel file as the candidate" bg campaign o.ini --plain
pycheck "the overlaid kernel ran (speed 2) and its record names the file and its SHA-256" '
import hashlib, json, re, sys
want = hashlib.sha256(open("kernels/cand_b.cuh", "rb").read()).hexdigest()
recs = {json.loads(l)["campaign"]["candidate"]: json.loads(l) for l in open(sys.argv[1])}
c = recs["cand_b"]
assert c["campaign"]["candidate_sha256"] == want and c["campaign"]["candidate_file"] == "kernels/cand_b.cuh"
assert re.fullmatch("o/q_b/64/cand_b@[0-9a-f]{12}/0", c["campaign"]["job"]), c["campaign"]["job"]
assert c["result"]["slowCTA_ratio_base_over_cand"] == 2.0
assert c["overlay"]["files"][0]["sha256"] == want
assert recs["baseline"]["result"]["slowCTA_ratio_base_over_cand"] == 1.0
assert recs["baseline"]["overlay"] is None
' o.results.jsonl
[ ! -e "$BG_HOST_1_ROOT/repo/kernels/k.cuh" ] && [ ! -e "$BG_HOST_2_ROOT/repo/kernels/k.cuh" ] && ok "the production tree was never written" || not_ok "the candidate landed in the repo"
printf 'speed 4\n' >kernels/cand_b.cuh
expect_rc 0 "an edited kernel file is a new job" bg campaign o.ini --plain
has "$ERR_FILE" '1 of 2 jobs already recorded' "only the baseline was already recorded"
has "$ERR_FILE" '1 cell changed definition since its records: kernels/cand_b.cuh \(kernel file\)' "it says the kernel file changed"

# --- Ctrl-C: stops the gates, says what is left; the re-run finishes ---
# The gates wait for a file that never comes: none can end before the Ctrl-C lands.
clear_logs
campaign c.ini c p2 2
sed -i 's/^gate_args = .*/& --until never/' c.ini
"$BOXGATE" --config "$INI" campaign c.ini --plain >"$BG_TMP/c.out" 2>"$BG_TMP/c.err" &
cpid=$!
wait_until 60 eval '[ "$(LOGS | grep -c "^start")" -ge 2 ]'
kill -INT $cpid; wait $cpid; rc=$?
[ "$rc" = 130 ] && ok "Ctrl-C: exit 130" || not_ok "Ctrl-C: exit $rc"
has "$BG_TMP/c.err" 'campaign c: 40 jobs left \(interrupted\); run the same command again' "it says what is left"
# Only these hosts' processes: every test on the machine shares one pid namespace.
no_gate_left() { [ -z "$(for i in 1 2; do comm -12 <(pgrep -f 'until never' | sort) <("$HOSTS" pids "$D" "$i" | sort); done)" ]; }
if wait_until 30 no_gate_left; then
  starts=$(LOGS | grep -c '^start') ends=$(LOGS | grep -c '^end')
  [ "$starts" -ge 2 ] && [ "$ends" = 0 ] && ok "no gate is left running on the boxes: the running ones were cut ($starts started, $ends ended)" \
    || not_ok "gates: $starts started, $ends ended"
else not_ok "a gate survived Ctrl-C"; fi
pycheck "the cut attempts are recorded final: false" '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert recs and not any(r["campaign"]["final"] for r in recs), recs
' c.results.jsonl

# --- bad campaign files: FILE:LINE before anything connects ---
bad() {
  local desc=$1 pattern=$2; shift 2
  printf '%s\n' "$@" >bad.ini
  expect_rc 2 "bad file: $desc" bg campaign bad.ini --dry-run
  has "$ERR_FILE" "$pattern" "  ... $desc: the error names it"
}
bad "no pool" 'bad.ini:1: \[campaign x\] needs pool = ' '[campaign x]' 'shapes = q_b'
bad "unknown pool" 'bad.ini:1: no pool .nope. in ' '[campaign x]' 'pool = nope' 'shapes = q_b'
bad "misspelt key" "bad.ini:3: unknown key 'shape' in \\[campaign x\\] \\(did you mean 'shapes'\\?\\)" '[campaign x]' 'pool = p8' 'shape = q_b'
bad "bad worker count" "bad.ini:4: num_workers: '0' is not a whole number from 1 to 65536" '[campaign x]' 'pool = p8' 'shapes = q_b' 'num_workers = 8 0'
bad "duplicate worker count" 'bad.ini:4: num_workers: 8 listed twice' '[campaign x]' 'pool = p8' 'shapes = q_b' 'num_workers = 8 8'
bad "missing kernel file" "bad.ini:4: candidate 'k/none.cuh': no such readable file" '[campaign x]' 'pool = p8' 'shapes = q_b' 'candidates = baseline k/none.cuh'
bad "repeats out of range" "bad.ini:4: repeats: '0' is not a whole number from 1 to 100" '[campaign x]' 'pool = p8' 'shapes = q_b' 'repeats = 0'
bad "shape with a shell character" "bad.ini:3: shapes: bad shape name 'q;b'" '[campaign x]' 'pool = p8' 'shapes = q;b'
bad "a gate flag the box refuses" 'c1' '[campaign x]' 'pool = p8' 'shapes = q_b' 'gate_args = --evil 1'
bad "two campaigns, none named" 'holds 2 campaigns \(x, y\): name one with --name' '[campaign x]' 'pool = p8' 'shapes = q_b' '[campaign y]' 'pool = p8' 'shapes = q_b'
expect_rc 2 "a missing campaign file" bg campaign nothere.ini
has "$ERR_FILE" 'nothere.ini: no such campaign file, and .*boxgate.ini has no \[campaign nothere.ini\]' "the error names the file"

# --- a campaign kept in boxgate.ini, run by name ---
printf '\n[campaign inini]\npool = p2\ngate_args = --kind fake --sleep 0.05\nshapes = w2\n' >>"$INI"
expect_rc 0 "a campaign in boxgate.ini, run by name" bg campaign inini --plain
has "$ERR_FILE" "records in $W/inini.results.jsonl" "its results go next to boxgate.ini"
expect_rc 0 "boxgate.ini with a campaign section still loads for other commands" bg config check

finish
