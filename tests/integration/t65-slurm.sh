#!/usr/bin/env bash
# A Slurm cluster as a transport, against a real single-node Slurm (slurmctld + slurmd inside
# test host h1's namespaces, 4 fake GPUs; tests/slurm/cluster): h1 is the login node boxgate
# reaches over SSH and the compute node. A gate passes with its Slurm job recorded; a hang is
# killed at the timeout and the job leaves squeue; a SIGKILLed client and a cut link leave no
# job; a 20-job campaign over the 4 GPUs never gives one GPU to two jobs at once and records
# every job once; a job Slurm cancels (scancel from outside) is requeued.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/wait.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts
CLUSTER=$BG_ROOT/tests/slurm/cluster

hosts_up 1
trap '"$CLUSTER" down "$D" >/dev/null 2>&1; "$BG_ROOT/tests/hosts/hosts" down "$D" >/dev/null 2>&1; rm -rf "$BG_TMP"' EXIT
SC=$("$CLUSTER" up "$D" 1) || { rc=$?; [ $rc = 77 ] && skip_all "no Slurm here, or no network namespaces"; not_ok "the Slurm cluster came up"; finish; exit 1; }
ok "a single-node Slurm with 4 fake GPUs is up in h1"
install -m 755 "$BG_ROOT/tests/integration/gates/fake_gate.sh" "$BG_HOST_1_ROOT/repo/gate.sh"
install -m 755 "$BG_ROOT/tests/integration/gates/campaign_gate.sh" "$BG_HOST_1_ROOT/repo/cgate.sh"
SQ=("$HOSTS" exec "$D" 1 env SLURM_CONF="$SC")
squeue_boxgate() { "${SQ[@]}" squeue -h -o '%i %T %j' 2>/dev/null | awk '$3 ~ /^boxgate-/ { print $1, $2 }'; }
# wait_squeue_empty SECONDS: true once no boxgate job is left in squeue
wait_squeue_empty() { local i; for i in $(seq 1 $(($1 * 5))); do [ -z "$(squeue_boxgate)" ] && return 0; sleep 0.2; done; return 1; }
wait_running() { local i; for i in $(seq 1 100); do squeue_boxgate | grep -q RUNNING && return 0; sleep 0.2; done; return 1; }
# wait_client PID SECONDS: waits for a background client; one still running then is killed
# (a test never hangs on it) and the status is 124
wait_client() {
  local i
  for i in $(seq 1 $(($2 * 10))); do kill -0 "$1" 2>/dev/null || { wait "$1"; return; }; sleep 0.1; done
  kill -9 "$1" 2>/dev/null; wait "$1" 2>/dev/null; return 124
}

INI=$BG_TMP/slurm.ini
{
  cat "$BG_CONFIG"
  printf '\n[box sl]\nhost = h1\nscheduler = slurm\nslurm_conf = %s\npartition = gpu\n' "$SC"
  printf 'srun_args = --time=10\nmax_jobs = 4\nrepo = /root/repo\ngate = gate.sh\nrequire_gpu = no\n'
  printf 'keepalive_s = 1\nheartbeat_timeout_s = 3\nkill_grace_s = 1\n'
  printf 'allow = --mode --tag --kind --shape --num-workers --configs --sleep --speed --hang --baseline\n'
  printf '\n[box slc]\nhost = h1\nscheduler = slurm\nslurm_conf = %s\nmax_jobs = 4\n' "$SC"
  printf 'repo = /root/repo\ngate = cgate.sh\nrequire_gpu = no\nkeepalive_s = 1\nheartbeat_timeout_s = 3\nkill_grace_s = 1\n'
  printf 'allow = --kind --shape --configs --num-workers --speed --sleep --hang --baseline --until\n'
  printf '\n[pool slurm]\nslots = slc\n'
} >"$INI"
bg() { "$BOXGATE" --config "$INI" "$@"; }
export XDG_DATA_HOME=$BG_TMP/data
RES=$XDG_DATA_HOME/boxgate/results.jsonl

# --- configuration ---
printf '[box bad]\nhost = h1\nscheduler = pbs\nrepo = r\n' >"$BG_TMP/bad1.ini"
expect_rc 2 "an unknown scheduler is a configuration error" "$BOXGATE" --config "$BG_TMP/bad1.ini" config check
has "$ERR_FILE" "bad1.ini:3: scheduler must be slurm or none, got 'pbs'" "... naming the line"
printf '[box bad]\nhost = h1\npartition = gpu\nrepo = r\n' >"$BG_TMP/bad2.ini"
expect_rc 2 "a Slurm key on a box without scheduler = slurm is refused" "$BOXGATE" --config "$BG_TMP/bad2.ini" config check
has "$ERR_FILE" "bad2.ini:3: partition needs scheduler = slurm in box 'bad'" "... naming the key and the line"
expect_rc 0 "explain shows the srun step" bg explain sl -- --mode pass
has "$OUT_FILE" "srun --quiet --ntasks=1 --job-name=boxgate-[0-9a-f]{16} --gres gpu:1 --partition gpu --time=10 .*agent-[0-9a-f]* run --nonce-stdin --gpus-from-env" "... with the gres, partition, srun_args and the agent taking Slurm's GPU"

# --- a gate passes, its job recorded ---
expect_rc 0 "a gate passes as a Slurm step" bg run sl -v -- --mode pass
has "$OUT_FILE" 'CUDA_VISIBLE_DEVICES=[0-3] ' "the gate got one of the 4 GPUs from Slurm"
pycheck "the record holds the Slurm job, step and node, and the job is known to Slurm" '
import json, subprocess, sys
r = [json.loads(l) for l in open(sys.argv[1])][-1]
s = r.get("slurm")
assert s and s["job"].isdigit() and s["step"] == "0" and s["node"], r
out = subprocess.run(sys.argv[2:] + ["scontrol", "show", "job", s["job"]], capture_output=True, text=True).stdout
assert "JobName=boxgate-" in out and "JobState=COMPLETED" in out, out
' "$RES" "${SQ[@]}"

# --- push and status on the login node, run --pool through the broker ---
L=$BG_TMP/local
mkdir -p "$L/scripts"
printf 'print("on the shared filesystem")\n' >"$L/scripts/s.py"
expect_rc 0 "push to a Slurm box (its login node)" bg push --root "$L" --boxes sl scripts/s.py
cmp -s "$L/scripts/s.py" "$BG_HOST_1_ROOT/repo/scripts/s.py" && ok "... the file is in the box's repo" || not_ok "pushed file on the login node"
expect_rc 0 "status on a Slurm box" bg status --root "$L" --boxes sl scripts/s.py
expect_rc 0 "run --pool on a pool of a Slurm box" bg run -v --pool slurm -- --kind fake --sleep 0.1
has "$OUT_FILE" 'FAITHFUL_RESULT' "... the broker placed it as a Slurm step"

# --- a hang is killed at the timeout and the job leaves squeue ---
expect_rc 124 "a hanging gate is TIMEOUT_HANG at its timeout" bg run sl --timeout 2 -- --mode sleep --tag 61
wait_squeue_empty 5 && ok "... and its job left squeue" || { not_ok "job left after the timeout"; diag "$(squeue_boxgate)"; }
# gone (lib.sh) looks in this test's hosts only: a second suite beside it runs the same gates
gone 'sleep.10061\.5' && ok "the hung gate is gone" || not_ok "the hung gate is gone"

# --- Ctrl-C stops the gate and the step ---
"$BOXGATE" --config "$INI" run sl -- --mode sleep --tag 65 >/dev/null 2>"$BG_TMP/int.err" &
cpid=$!
if wait_running; then
  kill -INT "$cpid"; wait_client "$cpid" 30; rc=$?
  [ "$rc" = 130 ] && ok "Ctrl-C on a Slurm step exits 130" || { not_ok "exit $rc after Ctrl-C"; diag "$(cat "$BG_TMP/int.err")"; }
  wait_squeue_empty 5 && ok "... and its job left squeue" || { not_ok "job left after Ctrl-C"; diag "$(squeue_boxgate)"; }
else
  not_ok "the job started"; kill -9 "$cpid" 2>/dev/null; wait "$cpid" 2>/dev/null
fi

# --- a SIGKILLed client leaves no job ---
"$BOXGATE" --config "$INI" run sl -- --mode sleep --tag 62 >/dev/null 2>&1 &
cpid=$!
if wait_running; then
  expect_rc 0 "slots on a Slurm box" bg slots sl
  has "$OUT_FILE" '^sl +slurm:[0-9]+ +held +root since .*Slurm job [0-9]+ RUNNING on [^ ]+, .*gpu' "... lists boxgate's running job from squeue"
  has "$OUT_FILE" '^sl +slurm3 +free' "... and the free places up to max_jobs"
  check "... its gate runs in h1, where the checks that no gate survives look" wait_until 30 host_has_proc 'sleep.10062\.5'
  kill -9 "$cpid"; wait "$cpid" 2>/dev/null
  # bound: the SSH session's end ends srun at once; else the agent's heartbeat (3 s) + grace (1 s)
  wait_squeue_empty 6 && ok "a SIGKILLed client leaves no job within heartbeat + grace + 2 s" || { not_ok "job left after SIGKILL"; diag "$(squeue_boxgate)"; }
else
  not_ok "the job started"; kill -9 "$cpid" 2>/dev/null; wait "$cpid" 2>/dev/null
fi
gone 'sleep.10062\.5' && ok "no gate survives the client" || not_ok "no gate survives the client"

# --- a cut link: the agent's dead-man's switch ends the step ---
"$BOXGATE" --config "$INI" run sl -- --mode sleep --tag 63 >/dev/null 2>&1 &
cpid=$!
if wait_running && "$HOSTS" link "$D" 1 down; then
  wait_squeue_empty 8 && ok "a cut link leaves no job within heartbeat + grace + 4 s" || { not_ok "job left after a cut link"; diag "$(squeue_boxgate)"; }
  "$HOSTS" link "$D" 1 up
else
  not_ok "cut link setup"
fi
wait_client "$cpid" 30
gone 'sleep.10063\.5' && ok "no gate survives the cut link" || not_ok "no gate survives the cut link"

# --- a lost link, the login node reachable again: boxgate cancels its step by name ---
printf '\n[box slk]\nhost = h1\nscheduler = slurm\nslurm_conf = %s\nrepo = /root/repo\ngate = gate.sh\nrequire_gpu = no\n' "$SC" >>"$INI"
printf 'keepalive_s = 1\nheartbeat_timeout_s = 60\nconnect_timeout_s = 8\nallow = --mode --tag\n' >>"$INI"
"$BOXGATE" --config "$INI" run slk -- --mode sleep --tag 64 >/dev/null 2>"$BG_TMP/lost.err" &
cpid=$!
if wait_running && "$HOSTS" link "$D" 1 down; then
  # boxgate calls the link dead after about 4 s of silence; the link is back (7 s) before its
  # reconnect gives up, long before the agent's own 60 s heartbeat would end the step
  ( sleep 7; "$HOSTS" link "$D" 1 up ) &
  lpid=$!
  wait_client "$cpid" 40; rc=$?
  wait "$lpid"
  [ "$rc" = 3 ] && ok "a lost link is a connection failure (exit 3)" || { not_ok "exit $rc after a lost link"; diag "$(cat "$BG_TMP/lost.err")"; }
  has "$BG_TMP/lost.err" 'slk: the link was lost: cancelled Slurm job boxgate-[0-9a-f]{16}' "boxgate reconnected and cancelled its step by name"
  wait_squeue_empty 5 && ok "... and the job left squeue, long before the agent's heartbeat" || { not_ok "job left after scancel"; diag "$(squeue_boxgate)"; }
else
  not_ok "lost link setup"; wait_client "$cpid" 1
fi

# --- a 20-job campaign over the 4 GPUs ---
W=$BG_TMP/w
mkdir -p "$W"
{
  printf '[campaign s20]\npool = slurm\ngate_args = --kind fake --sleep 0.5\n'
  printf 'shapes = q_b kv_a o_proj w13 w2\nnum_workers = 8 64 128 136\ncandidates = baseline\n'
} >"$W/s20.ini"
rm -f "$BG_HOST_1_ROOT/campaign.log"
expect_rc 0 "a 20-job campaign over a Slurm box of 4 slots completes" bg campaign "$W/s20.ini" --plain
pycheck "every job recorded final once, each with a Slurm job of its own" '
import json, sys, collections
recs = [json.loads(l) for l in open(sys.argv[1])]
final = [r for r in recs if r["campaign"]["final"]]
keys = collections.Counter(r["campaign"]["job"] for r in final)
assert len(keys) == 20 and set(keys.values()) == {1}, keys
jobs = [r["slurm"]["job"] for r in final]
assert len(set(jobs)) == 20, jobs
' "$W/s20.results.jsonl"
pycheck "no GPU index ever ran two gates at once, and more than one ran at a time" '
import sys
ev = []
for l in open(sys.argv[1]):
    w = l.split()
    ev.append((float(w[5]), 0 if w[0] == "end" else 1, w[4]))
ev.sort()
busy, most = {}, 0
for t, kind, gpu in ev:
    assert gpu in "0123" and len(gpu) == 1, gpu
    if kind:
        assert not busy.get(gpu), "GPU %s given twice at %s" % (gpu, t)
        busy[gpu] = True
    else:
        busy[gpu] = False
    most = max(most, sum(busy.values()))
assert most >= 2, most
' "$BG_HOST_1_ROOT/campaign.log"

# --- a job Slurm cancels is requeued ---
# The victim is a job whose gate has started (its start line names its Slurm job) and waits
# for ~/s4go: the scancel lands mid-gate by construction, and no job of s20 (whose last steps
# may still be RUNNING in squeue as that campaign returns) can be taken for one of s4.
wait_squeue_empty 30 || diag "s20's jobs still in squeue: $(squeue_boxgate)"
rm -f "$BG_HOST_1_ROOT/campaign.log" "$BG_HOST_1_ROOT/s4go"
{
  printf '[campaign s4]\npool = slurm\ngate_args = --kind fake --sleep 0 --until s4go\n'
  printf 'shapes = q_b\nnum_workers = 8 64 128 136\ncandidates = baseline\n'
} >"$W/s4.ini"
"$BOXGATE" --config "$INI" campaign "$W/s4.ini" --plain >"$BG_TMP/s4.out" 2>"$BG_TMP/s4.err" &
cpid=$!
# victim_started: sets victim to the Slurm job of the first s4 gate that started
victim_started() { victim=$(awk '$1 == "start" && NF == 7 { print $7; exit }' "$BG_HOST_1_ROOT/campaign.log" 2>/dev/null); [ -n "$victim" ]; }
victim=''
if wait_until 30 victim_started; then
  "${SQ[@]}" scancel "$victim" 2>"$BG_TMP/scancel.err" || diag "scancel $victim failed: $(cat "$BG_TMP/scancel.err")"
  # the cancelled attempt must be seen cut before the others may end
  wait_for "$BG_TMP/s4.err" "Slurm ended job $victim" 60 || diag "no requeue seen yet: $(cat "$BG_TMP/s4.err")"
else
  diag "no gate of s4 started in 30 s (a start line naming its Slurm job): $(cat "$BG_HOST_1_ROOT/campaign.log" 2>&1)"
fi
: >"$BG_HOST_1_ROOT/s4go"
wait_client "$cpid" 120; rc=$?
[ "$rc" = 0 ] && ok "the campaign ends well after a scancel from outside" || { not_ok "exit $rc after scancel"; diag "$(cat "$BG_TMP/s4.err")"; }
has "$BG_TMP/s4.err" "Slurm ended job $victim .*requeued" "the cancelled job is named and requeued"
# a miss shows each job's end (a cancelled attempt recorded final would show there)
grep -q "Slurm ended job $victim .*requeued" "$BG_TMP/s4.err" || diag "s4's output: $(cat "$BG_TMP/s4.out")"
pycheck "every job recorded final once; the cancelled attempt is recorded not final" '
import json, sys, collections
recs = [json.loads(l) for l in open(sys.argv[1])]
final = collections.Counter(r["campaign"]["job"] for r in recs if r["campaign"]["final"])
assert len(final) == 4 and set(final.values()) == {1}, final
cut = [r for r in recs if not r["campaign"]["final"]]
assert len(cut) == 1 and cut[0]["slurm"]["job"] == sys.argv[2], [r.get("slurm") for r in cut]
' "$W/s4.results.jsonl" "$victim"
wait_squeue_empty 5 && ok "no boxgate job is left in squeue" || not_ok "jobs left: $(squeue_boxgate)"

finish
