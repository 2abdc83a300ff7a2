#!/usr/bin/env bash
# The campaign's serving agent: each worker keeps one `boxgate-agent serve` on its box and
# hands it the jobs over stdin. Proved on real sshd hosts with the real campaign: one round
# trip a job once the agent is up (BOXGATE_TRACE) and one exec channel a worker instead of
# one a job (sshd's log); records the same as with persistent_agent = no; a hanging job is
# TIMEOUT_HANG and the next job runs on the same serving agent; a serving agent killed
# (kill -9) under a running job: the job is retried and every job is recorded; a cut link
# quarantines the box; Ctrl-C stops the gates and the serving agents on every box.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/campaign_boxes.sh"
source "$(dirname "$0")/wait.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts

# --- boxgate-agent serve directly: the protocol and hostile input ---
AGENT=${BG_BUILD:-$BG_ROOT/build}/boxgate-agent
N=0123456789abcdef0123456789abcdef
LK=$BG_TMP/locks
job() { printf 'job %s %s\n' "${2:-$N}" "$AGENT run --nonce-stdin --lock-dir $LK --timeout ${3:-5} --grace 0.2 -- $1"; }
# serve_out NAME INPUT-CMD: runs serve with INPUT-CMD's output as stdin, NAME.out/.err/.rc
serve_out() {
  local name=$1; shift
  "$@" | "$AGENT" serve --idle 20 >"$BG_TMP/$name.out" 2>"$BG_TMP/$name.err"
  echo $? >"$BG_TMP/$name.rc"
}
# served_n N: serve's stdout holds N job-end markers (the input waits for them, so the
# stray hb and kill land between the jobs however slow the machine).
served_n() { served_in a "$1"; }
# served_in NAME N: NAME.out holds N job-end markers; locked_in NAME: its job took its slot.
served_in() { [ "$(grep -c "^@boxgate-agent $N served {" "$BG_TMP/$1.out" 2>/dev/null)" -ge "$2" ]; }
locked_in() { grep -q "^@boxgate-agent $N locked " "$BG_TMP/$1.out" 2>/dev/null; }
two_jobs() {
  job "sh -c 'echo one; exit 3'"
  wait_until 60 served_n 1
  printf 'hb\nkill\n'
  job "sh -c 'echo two'"
  wait_until 60 served_n 2
}
serve_out a two_jobs
if grep -qx "@boxgate-agent $N served {\"exit\":3}" "$BG_TMP/a.out" && grep -qx "@boxgate-agent $N served {\"exit\":0}" "$BG_TMP/a.out" &&
  [ "$(grep -c "^@boxgate-agent $N end " "$BG_TMP/a.out")" = 2 ] && [ "$(grep -cx "@boxgate-agent $N served" "$BG_TMP/a.err")" = 2 ] &&
  [ "$(cat "$BG_TMP/a.rc")" = 0 ]; then
  ok "serve: two jobs in turn, each a run with its end line, each ended by its markers on both streams; a late hb and kill between them ignored; EOF: exit 0"
else not_ok "serve: two jobs"; sed 's/^/# /' "$BG_TMP/a.out" "$BG_TMP/a.err"; fi
# a job whose command line holds a newline and a backslash (escaped on the line)
cmd="$AGENT run --nonce-stdin --lock-dir $LK -- sh -c 'echo x
printf \"%s\\n\" \"\$0\"' 'ba\\ck'"
esc=$(printf '%s' "$cmd" | sed 's/\\/\\\\/g' | awk '{ printf "%s%s", (NR > 1 ? "\\n" : ""), $0 }')
nl_job() { printf 'job %s %s\n' "$N" "$esc"; wait_until 60 served_in b 1; }
serve_out b nl_job
grep -qx 'x' "$BG_TMP/b.out" && grep -qxF 'ba\ck' "$BG_TMP/b.out" && ok "serve: a command line with a newline and a backslash arrives whole" ||
  { not_ok "serve: escaped command line"; printf '%s\n' "$esc" | sed 's/^/# /'; sed 's/^/# /' "$BG_TMP/b.out" "$BG_TMP/b.err"; }
# the gate's last stderr line without a newline: the marker follows it on that line
tail_job() { job "sh -c 'printf partial >&2'"; wait_until 60 served_in c 1; }
serve_out c tail_job
grep -qx "partial@boxgate-agent $N served" "$BG_TMP/c.err" && ok "serve: a last stderr line without newline keeps its bytes; the marker ends it" ||
  { not_ok "serve: partial last line"; sed 's/^/# /' "$BG_TMP/c.err"; }
bad() { printf '%s\n' "$1"; sleep 0.2; }
for line in "job zz $AGENT version" "job $N" "job ${N:0:8} $AGENT version" "job $N $AGENT version \\q" "job $N trailing\\"; do
  serve_out d bad "$line"
  [ "$(cat "$BG_TMP/d.rc")" = 2 ] && grep -q 'malformed job line' "$BG_TMP/d.err" && ! grep -q served "$BG_TMP/d.out" &&
    ok "serve: malformed job line refused (exit 2): ${line:0:24}..." || { not_ok "serve: '$line' -> $(cat "$BG_TMP/d.rc")"; sed 's/^/# /' "$BG_TMP/d.err"; }
done
serve_out e bad "hello there"
[ "$(cat "$BG_TMP/e.rc")" = 0 ] && grep -q "ignoring unknown stdin line 'hello there'" "$BG_TMP/e.err" && ok "serve: an unknown line is noted and ignored" || not_ok "serve: unknown line"
long_line() { head -c 600000 /dev/zero | tr '\0' a; printf '\n'; job "echo after"; wait_until 60 served_in f 1; }
serve_out f long_line
grep -q 'longer than' "$BG_TMP/f.err" && grep -qx after "$BG_TMP/f.out" && ok "serve: an overlong line is dropped, the next job still runs" ||
  { not_ok "serve: overlong line"; sed 's/^/# /' "$BG_TMP/f.err"; }
expect_rc 2 "serve: a negative --idle is a usage error" "$AGENT" serve --idle -1
# Its stdin a fifo serve holds open for writing itself: no EOF ever comes, only the idle
# timer ends it (a pipe from `sleep` kept the test waiting for the sleep as well).
mkfifo "$BG_TMP/idle.in"
rc=0; timeout 60 "$AGENT" serve --idle 0.3 <>"$BG_TMP/idle.in" >/dev/null 2>"$BG_TMP/g.err" || rc=$?
grep -q 'idle for' "$BG_TMP/g.err" && [ "$rc" = 0 ] && ok "serve: leaves by itself when idle" || not_ok "serve: idle exit ($rc)"
# stdin EOF under a running job: the job's run stops its gate (client gone), then serve leaves
eof_job() { job "sleep 30" "$N" 60; wait_until 60 locked_in h; }
t0=$(date +%s)
serve_out h eof_job
took=$(($(date +%s) - t0))
grep -q "^@boxgate-agent $N end {\"rc\":129,\"why\":\"client_gone\"" "$BG_TMP/h.out" && [ "$took" -lt 20 ] &&
  ok "serve: EOF under a job: the gate is stopped at once (client_gone), serve exits (${took} s)" || { not_ok "serve: EOF under a job"; sed 's/^/# /' "$BG_TMP/h.out" "$BG_TMP/h.err"; }
# SIGTERM to serve under a job: passed on, the job ends terminated, serve exits 143
mkfifo "$BG_TMP/in"
"$AGENT" serve <"$BG_TMP/in" >"$BG_TMP/t.out" 2>"$BG_TMP/t.err" &
spid=$!
exec 7>"$BG_TMP/in"
job "sleep 30" "$N" 60 >&7
wait_for "$BG_TMP/t.out" 'locked' 20
kill -TERM $spid
wait $spid
rc=$?
exec 7>&-
[ "$rc" = 143 ] && grep -q '"why":"terminated"' "$BG_TMP/t.out" && grep -q "served {\"exit\":143}" "$BG_TMP/t.out" &&
  ok "serve: SIGTERM under a job is passed on: the job ends terminated, serve exits 143" || { not_ok "serve: SIGTERM -> $rc"; sed 's/^/# /' "$BG_TMP/t.out" "$BG_TMP/t.err"; }

hosts_up 3
W=$BG_TMP/w
mkdir -p "$W"
INI=$W/boxgate.ini
cat "$BG_CONFIG" >"$INI"
campaign_boxes 3
printf '\n[pool p3]\nslots = c1, c2, c3\n\n[pool p1]\nslots = c1\n' >>"$INI"
cd "$W" || exit 1
bg() { "$BOXGATE" --config "$INI" "$@"; }
LOGS() { for i in 1 2 3; do cat "$(eval echo "\$BG_HOST_${i}_ROOT")/campaign.log" 2>/dev/null; done; }
# sessions: exec channels the three sshds have started so far
sessions() { cat "$D"/h[123]/sshd.log | grep -c 'Starting session: command'; }
# campaign FILE NAME POOL SLEEP EXTRA...: 3 shapes x 4 worker counts, the baseline only
campaign() {
  local f=$1 name=$2 pool=$3 sleep_s=$4; shift 4
  {
    printf '[campaign %s]\npool = %s\ngate_args = --kind fake --sleep %s\n' "$name" "$pool" "$sleep_s"
    printf 'shapes = q_b kv_a o_proj\nnum_workers = 8 64 128 136\ncandidates = baseline\n'
    for x in "$@"; do printf '%s\n' "$x"; done
  } >"$f"
}
# every job of the 3 x 4 matrix recorded final exactly once, with the gate's numbers
EXPECT='
import json, sys
path, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
shapes = ["q_b", "kv_a", "o_proj"]
final = {}
for line in open(path):
    r = json.loads(line)
    c = r["campaign"]
    if c["name"] != name or not c["final"]:
        continue
    assert c["job"] not in final, "job recorded twice: " + c["job"]
    final[c["job"]] = r
assert len(final) == n, "%d jobs recorded, %d expected" % (len(final), n)
for r in final.values():
    p = r["point"]
    if r["verdict"] == "TIMEOUT_HANG":
        continue
    want = 100 + 10 * (shapes.index(p["shape"]) + 1) + 1000 / p["num_workers"]
    assert r["result"], r
    got = r["result"]["candidate"]["slowCTA_us"]
    assert abs(got - want) < 0.01, (p, got, want)
    assert r["verdict"] == "PASS_GATE" and r["agent"]["why"] == "exited", r
'

# --- persistent_agent = no: one channel a job (first: it installs the agent) ---
campaign o.ini o p3 0.2 'persistent_agent = no'
s0=$(sessions)
BOXGATE_TRACE=1 bg campaign o.ini --plain >"$BG_TMP/o.out" 2>"$BG_TMP/o.err"
rc=$?
s1=$(sessions)
[ "$rc" = 0 ] && ok "persistent_agent = no: the campaign ends well" || { not_ok "per-job campaign: exit $rc"; sed 's/^/# /' "$BG_TMP/o.err"; }
n_own=$(grep -c 'job o/.*round trips (a channel of its own)' "$BG_TMP/o.err")
[ "$n_own" = 12 ] && ok "persistent_agent = no: every job in a channel of its own" || not_ok "$n_own of 12 in channels of their own"
own_sessions=$((s1 - s0))
[ "$own_sessions" -ge 12 ] && ok "persistent_agent = no: an exec channel a job ($own_sessions for 12 jobs)" || not_ok "$own_sessions exec channels for 12 jobs"
# --- one round trip a job, one channel a worker ---
campaign s.ini s p3 0.2
s0=$(sessions)
BOXGATE_TRACE=1 bg campaign s.ini --plain >"$BG_TMP/s.out" 2>"$BG_TMP/s.err"
rc=$?
s1=$(sessions)
[ "$rc" = 0 ] && ok "a served campaign ends well" || { not_ok "served campaign: exit $rc"; sed 's/^/# /' "$BG_TMP/s.err"; }
pycheck "every job recorded final once, with the gate's numbers" "$EXPECT" s.results.jsonl s 12
n_att=$(grep -c 'job s/.* attempt [0-9]*: [0-9]* round trips' "$BG_TMP/s.err")
n_served=$(grep -c 'job s/.*round trips (serving agent)' "$BG_TMP/s.err")
n_one=$(grep -c 'job s/.*: 1 round trips (serving agent)' "$BG_TMP/s.err")
n_more=$(grep 'job s/.*round trips (serving agent)' "$BG_TMP/s.err" | grep -vc ': 1 round trips')
[ "$n_att" = 12 ] && [ "$n_served" = 12 ] && ok "every attempt went to a serving agent ($n_served of $n_att)" ||
  { not_ok "attempts $n_att, served $n_served"; sed 's/^/# /' "$BG_TMP/s.err"; }
# 3 slots, two workers each: at most 6 jobs start a serving agent (channel open, exec, job)
[ "$n_more" -le 6 ] && [ "$n_one" -ge 6 ] && ok "one round trip a job once its worker's agent is up ($n_one jobs of 1, $n_more starting an agent)" ||
  { not_ok "$n_one jobs of one round trip, $n_more of more"; grep 'round trips' "$BG_TMP/s.err" | sed 's/^/# /'; }
grep 'job s/.*round trips (serving agent)' "$BG_TMP/s.err" | sed -n 's/.*: \([0-9]*\) round trips.*/\1/p' | sort -u | tr '\n' ' ' >"$BG_TMP/rts"
# (at 0 ms the counter may see a window adjust's answer as one more: never 4)
if grep -qvE '^([123] )*$' "$BG_TMP/rts"; then not_ok "round trips per job above 3: $(cat "$BG_TMP/rts")"; else ok "an attempt takes 1 round trip, 3 when it starts the agent ($(cat "$BG_TMP/rts"))"; fi
# the same slot probes, manifest reads and agent checks; one serving agent a worker
# (at most 6) in place of 12 channels
served_sessions=$((s1 - s0))
[ "$served_sessions" -le $((own_sessions - 6)) ] && ok "$served_sessions exec channels for 12 jobs on 6 workers (against $own_sessions)" ||
  not_ok "$served_sessions exec channels with serving agents, $own_sessions without"

pycheck "the records of both ways have the same shape and the same values (times, run and tag aside)" '
import json, re, sys
def load(p):
    out = {}
    for l in open(p):
        r = json.loads(l)
        out[r["campaign"]["job"].split("/", 1)[1]] = r
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
assert a.keys() == b.keys() and len(a) == 12, (a.keys(), b.keys())
def shape(x):
    if isinstance(x, dict):
        return {k: shape(v) for k, v in x.items()}
    if isinstance(x, list):
        return [shape(v) for v in x]
    return type(x).__name__
def norm(r):
    r = json.loads(json.dumps(r))
    for k in ("run_id", "seq", "start", "end", "box", "host"):
        r.pop(k, None)
    r["command"] = re.sub(r"--tag .*? --timeout", "--tag T --timeout", r["command"])
    # a standby job waits longer for the lock: where a job ran, not how
    r["command"] = re.sub(r"--lock-wait [0-9]+", "--lock-wait W", r["command"])
    c = r["campaign"]
    for k in ("name", "file", "job"):
        c.pop(k, None)
    return r
for k in a:
    assert shape(a[k]) == shape(b[k]), (k, shape(a[k]), shape(b[k]))
    assert norm(a[k]) == norm(b[k]), (k, norm(a[k]), norm(b[k]))
' s.results.jsonl o.results.jsonl

# --- a hanging job: TIMEOUT_HANG, and the next job runs on the same serving agent ---
campaign h.ini h p1 0.1 'timeout_s = 2'
sed -i 's/^gate_args = .*/& --hang kv_a:64/' h.ini
s0=$(sessions)
BOXGATE_TRACE=1 bg campaign h.ini --plain >"$BG_TMP/h.out" 2>"$BG_TMP/h.err"
rc=$?
s1=$(sessions)
[ "$rc" = 0 ] && ok "a campaign with a hanging job ends (exit 0: every job recorded)" || { not_ok "hang campaign: exit $rc"; sed 's/^/# /' "$BG_TMP/h.err"; }
pycheck "the hanging job is TIMEOUT_HANG from the agent, every other job passes" "$EXPECT"'
hang = [r for r in final.values() if r["verdict"] == "TIMEOUT_HANG"]
assert len(hang) == 1 and hang[0]["point"]["shape"] == "kv_a" and hang[0]["point"]["num_workers"] == 64, hang
assert hang[0]["agent"]["why"] == "timeout" and hang[0]["exit"] == 124, hang[0]
' h.results.jsonl h 12
# Counted in exec channels, not round trips (a loaded machine splits a job's replies into
# more waits): the slot probe, the manifest read, the second worker's agent check and one
# serving agent per worker; a hang that cost its worker its agent would add more.
n_served=$(grep -c 'job h/.*round trips (serving agent)' "$BG_TMP/h.err")
[ $((s1 - s0)) -le 5 ] && [ "$n_served" = 12 ] && ok "the jobs after the hang ran on the same serving agents ($((s1 - s0)) exec channels for 12 jobs)" ||
  { not_ok "$((s1 - s0)) exec channels, $n_served of 12 jobs served, for one slot"; grep 'round trips' "$BG_TMP/h.err" | sed 's/^/# /'; }
after=$(grep -A100 '^start kv_a 64' "$BG_HOST_1_ROOT/campaign.log" | grep -c '^end')
[ "$after" -ge 1 ] && ok "jobs ran on the slot after the hung one ($after)" || not_ok "nothing ran after the hang"

# --- a serving agent killed under its job: the job is retried, every job recorded ---
for i in 1 2 3; do rm -f "$(eval echo "\$BG_HOST_${i}_ROOT")/campaign.log" "$(eval echo "\$BG_HOST_${i}_ROOT")/go"; done
campaign k.ini k p3 0.1 'timeout_s = 60'
sed -i 's/^gate_args = .*/& --until go/' k.ini
"$BOXGATE" --config "$INI" campaign k.ini --plain >"$BG_TMP/k.out" 2>"$BG_TMP/k.err" &
cpid=$!
wait_for "$BG_HOST_1_ROOT/campaign.log" '^start' 60 || not_ok "no job started on h1"
# the gate waiting on h1 (not its agent or shell, whose command lines name it too), then
# up its parents to the serving agent (argv[1] "serve"; not the session's shell around it)
gpid=''
for p in $(comm -12 <(pgrep -f 'until go' | sort) <("$HOSTS" pids "$D" 1 | sort)); do
  tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q '^/bin/bash ./gate.sh ' && gpid=$p
done
spid=$gpid
for _ in 1 2 3 4; do
  spid=$(ps -o ppid= -p "$spid" | tr -d ' ')
  [ "$(tr '\0' '\n' <"/proc/$spid/cmdline" 2>/dev/null | sed -n 2p)" = serve ] && break
done
if [ -n "$gpid" ] && [ "$(tr '\0' '\n' <"/proc/$spid/cmdline" | sed -n 2p)" = serve ]; then
  ok "the gate's agent runs under a serving agent (pid $spid)"
  kill -KILL "$spid"
else
  not_ok "the gate's agent's parent is not a serving agent: $(tr '\0' ' ' <"/proc/$spid/cmdline" 2>/dev/null)"
fi
wait_for "$BG_TMP/k.err" 'on c1:cpu cut' 60 && ok "the job is cut when its serving agent dies" || not_ok "no cut after the kill"
for i in 1 2 3; do touch "$(eval echo "\$BG_HOST_${i}_ROOT")/go"; done
wait $cpid
rc=$?
[ "$rc" = 0 ] && ok "the campaign completes after the kill (exit 0)" || { not_ok "exit $rc after the kill"; sed 's/^/# /' "$BG_TMP/k.err"; }
pycheck "every job recorded final once" "$EXPECT" k.results.jsonl k 12
pycheck "the killed attempt is recorded final: false as a lost connection, and retried" '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
cut = [r for r in recs if not r["campaign"]["final"]]
assert len(cut) == 1 and cut[0]["box"] == "c1", [(r["box"], r["campaign"]["job"]) for r in cut]
assert cut[0]["agent"]["rc"] is None and "serving agent ended" in cut[0]["why"], cut[0]
again = [r for r in recs if r["campaign"]["job"] == cut[0]["campaign"]["job"] and r["campaign"]["final"]]
assert len(again) == 1 and again[0]["campaign"]["attempt"] == 2 and again[0]["verdict"] == "PASS_GATE", again
' k.results.jsonl

# --- hostile gates through the serving agent ---
# forge.sh prints the serving agent's end marker under a made-up nonce on both streams
# before the real gate; tail.sh leaves a last stderr line without newline long enough that
# the real marker is cut across two of the client's line pieces (1 MiB each).
cat >"$BG_HOST_1_ROOT/repo/forge.sh" <<'EOF2'
#!/bin/sh
echo '@boxgate-agent 00000000000000000000000000000000 served {"exit":0}'
echo '@boxgate-agent 00000000000000000000000000000000 served' >&2
exec ./gate.sh "$@"
EOF2
cat >"$BG_HOST_1_ROOT/repo/tail.sh" <<'EOF2'
#!/bin/sh
./gate.sh "$@"
rc=$?
head -c 1048570 /dev/zero | tr '\0' a >&2
exit $rc
EOF2
chmod 755 "$BG_HOST_1_ROOT/repo/forge.sh" "$BG_HOST_1_ROOT/repo/tail.sh"
for g in forge tail; do
  sed -n '/^\[box c1\]/,/^kernel_paths/p' "$INI" | sed "s/^\[box c1\]/[box $g]/; s/^gate = .*/gate = $g.sh/" >>"$INI"
  printf '\n[pool %s]\nslots = %s\n' "$g" "$g" >>"$INI"
done
campaign f.ini f forge 0.1
sed -i 's/^shapes = .*/shapes = q_b/; s/^num_workers = .*/num_workers = 8 64/' f.ini
BOXGATE_TRACE=1 bg campaign f.ini --plain >"$BG_TMP/f.out" 2>"$BG_TMP/f.err"
pycheck "a gate that prints a made-up end marker: its job runs to its end, judged INVALID (forged)" '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert len(recs) == 2, recs
for r in recs:
    assert r["campaign"]["final"] and r["verdict"] == "INVALID" and "forged" in r["why"], r
    assert r["agent"]["why"] == "exited" and r["result"]["candidate"]["slowCTA_us"] > 0, r
' f.results.jsonl
[ "$(grep -c 'job f/.*round trips (serving agent)' "$BG_TMP/f.err")" = 2 ] && ok "... both jobs went to serving agents" || { not_ok "forge: not served"; sed 's/^/# /' "$BG_TMP/f.err"; }
campaign t.ini t tail 0.1
sed -i 's/^shapes = .*/shapes = q_b/; s/^num_workers = .*/num_workers = 8 64 128/' t.ini
s0=$(sessions)
BOXGATE_TRACE=1 bg campaign t.ini --plain >"$BG_TMP/t.out" 2>"$BG_TMP/t.err"
rc=$?
s1=$(sessions)
pycheck "a marker cut across two line pieces still ends its job: every job passes" '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert len(recs) == 3 and all(r["campaign"]["final"] and r["verdict"] == "PASS_GATE" for r in recs), [(r["verdict"], r["why"]) for r in recs]
' t.results.jsonl
# (a megabyte of output adds flow-control round trips: counted in channels instead) the
# slot probe, the manifest read, the second worker's agent check, two serving agents
[ "$rc" = 0 ] && [ $((s1 - s0)) -le 5 ] && ok "... and a serving agent takes the next job ($((s1 - s0)) exec channels for 3 jobs)" ||
  { not_ok "tail: rc $rc, $((s1 - s0)) exec channels"; sed 's/^/# /' "$BG_TMP/t.err"; }

# --- a cut link: the box is quarantined, its jobs finish elsewhere ---
for i in 1 2 3; do rm -f "$(eval echo "\$BG_HOST_${i}_ROOT")/campaign.log"; done
campaign c.ini c p3 1
"$BOXGATE" --config "$INI" campaign c.ini --plain >"$BG_TMP/c.out" 2>"$BG_TMP/c.err" &
cpid=$!
wait_for "$BG_HOST_3_ROOT/campaign.log" '^start' 60
if "$HOSTS" link "$D" 3 down; then
  wait $cpid
  rc=$?
  [ "$rc" = 0 ] && ok "a cut link: the campaign ends well (exit 0)" || { not_ok "exit $rc with a cut link"; sed 's/^/# /' "$BG_TMP/c.err"; }
  has "$BG_TMP/c.err" 'box c3 quarantined for the rest of the run' "the cut box is quarantined"
  has "$BG_TMP/c.err" 'on c3:cpu cut: .*\(requeued\)' "its running job was requeued"
  pycheck "every job recorded final once, none on the cut box after the cut" "$EXPECT" c.results.jsonl c 12
  "$HOSTS" link "$D" 3 up
else
  wait $cpid
  ok "# SKIP link cut needs netns mode"
fi

# --- Ctrl-C: the gates and the serving agents end on every box ---
for i in 1 2 3; do rm -f "$(eval echo "\$BG_HOST_${i}_ROOT")/campaign.log"; done
campaign i.ini i p3 0.1
sed -i 's/^gate_args = .*/& --until never/' i.ini
"$BOXGATE" --config "$INI" campaign i.ini --plain >"$BG_TMP/i.out" 2>"$BG_TMP/i.err" &
cpid=$!
wait_until 60 eval '[ "$(LOGS | grep -c "^start")" -ge 3 ]'
kill -INT $cpid
wait $cpid
rc=$?
[ "$rc" = 130 ] && ok "Ctrl-C: exit 130" || not_ok "Ctrl-C: exit $rc"
left() { comm -12 <(pgrep -f "$1" | sort) <(for i in 1 2 3; do "$HOSTS" pids "$D" "$i"; done | sort); }
if wait_until 30 eval '[ -z "$(left "until never")" ]'; then
  ends=$(LOGS | grep -c '^end')
  [ "$ends" = 0 ] && ok "Ctrl-C: no gate left running on any box, none ended by itself" || not_ok "$ends gates ended"
else not_ok "a gate survived Ctrl-C: $(left 'until never')"; fi
wait_until 30 eval '[ -z "$(left " serve --idle ")" ]' && ok "Ctrl-C: no serving agent left on any box" ||
  not_ok "serving agents left: $(left ' serve --idle ')"
pycheck "the cut attempts are recorded final: false" '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert len(recs) >= 3 and not any(r["campaign"]["final"] for r in recs), recs
' i.results.jsonl
finish
