#!/usr/bin/env bash
# run --pool: the broker. 20 concurrent clients on 2 slots of 2 real sshd test hosts are
# served one at a time per slot, all of them, in arrival order; held and disabled slots are
# skipped; a SIGKILLed holder frees its slot for the next in line; Ctrl-C while waiting
# leaves no ticket behind; bad input is refused before anything connects.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/wait.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts

hosts_up 2
fake_gate_on 1 2
INI=$BG_TMP/t54.ini
cat "$BG_CONFIG" >"$INI"
for i in 1 2; do cat >>"$INI" <<EOF2

[box g$i]
host = h$i
repo = /root/repo
gate = gate.sh
gpus = 0-1
require_gpu = no
heartbeat_timeout_s = 2
kill_grace_s = 0.5
allow = --kind --shape --num-workers --mode --tag
EOF2
done
cat >>"$INI" <<EOF2

[pool p]
slots = g1:0, g2:0

[pool one]
slots = g2:1
EOF2
bg() { "$BOXGATE" --config "$INI" "$@"; }
cd "$BG_TMP" || exit 1
LOG1=$BG_HOST_1_ROOT/slot.log LOG2=$BG_HOST_2_ROOT/slot.log

# --- picking ---
expect_rc 0 "run --pool takes a free slot" bg run -v --pool p --no-results -- --mode pass
has "$ERR_FILE" '^boxgate: pool p: g1:gpu0 is free, taking it$' "the first free slot in the pool's order: g1:gpu0"
has "$OUT_FILE" 'CUDA_VISIBLE_DEVICES=0 ' "the gate ran on GPU 0 of that box"
expect_rc 0 "disable g1:0" bg slots disable g1:0 --why "bench job"
expect_rc 0 "run --pool skips the disabled slot" bg run -v --pool p --no-results -- --mode pass
has "$ERR_FILE" '^boxgate: pool p: g2:gpu0 is free, taking it$' "it took g2:gpu0"
bg run -v --pool p --holder long-job --no-results -- --mode slow >"$BG_TMP/slow.out" 2>&1 &
slow=$!
wait_for "$BG_TMP/slow.out" '^argv' 30
expect_rc 1 "every slot taken and no --wait: refused at once" bg run -v --pool p --no-results -- --mode pass
has "$ERR_FILE" 'no free slot in pool p:' "the refusal says no slot is free"
has "$ERR_FILE" '^  g1:gpu0 disabled: bench job$' "it names the disabled slot and why"
has "$ERR_FILE" '^  g2:gpu0 held by long-job [^ ]+@[^ ]+:[0-9]+ since ' "it names the holder, with its --holder tag"
touch "$BG_HOST_2_ROOT/release-0"
wait $slow
rm -f "$BG_HOST_2_ROOT/release-0"
expect_rc 0 "enable g1:0" bg slots enable g1:0

# --- -x/--exclude: boxes left out of the pick ---
expect_rc 0 "run --pool -x g1 passes g1 by although it is free" bg run -v --pool p -x g1 --no-results -- --mode pass
has "$ERR_FILE" '^boxgate: pool p: g2:gpu0 is free, taking it$' "... taking g2:gpu0"
expect_rc 2 "an exclusion that leaves the pool empty is refused" bg run -v --pool one --exclude g2 --no-results -- --mode pass
has "$ERR_FILE" "matched no box \(--exclude took every box of pool 'one'\)" "... saying so"
expect_rc 2 "excluding a box that is not configured is refused" bg run -v --pool p -x g3 --no-results -- --mode pass
has "$ERR_FILE" "unknown box 'g3' to exclude" "... naming it"
hasnt "$ERR_FILE" "taking it" "... before anything is picked"

# --- run BOX without --gpu on a box of several GPUs: its first free one ---
expect_rc 0 "run g1 with every GPU free" bg run -v g1 --no-results -- --mode pass
hasnt "$ERR_FILE" 'is free, taking it' "quiet when the box's first GPU is free"
has "$OUT_FILE" 'CUDA_VISIBLE_DEVICES=0 ' "it ran on GPU 0"
"$BOXGATE" --config "$INI" run -v g1 --gpu 0 --no-results -- --mode slow >"$BG_TMP/g0.out" 2>&1 &
g0=$!
wait_for "$BG_TMP/g0.out" '^argv' 30
expect_rc 0 "run g1 while GPU 0 is held" bg run -v g1 --no-results -- --mode pass
has "$ERR_FILE" '^boxgate: g1: gpu1 is free, taking it \(the first GPUs are taken\)$' "it says it took gpu1, the first being taken"
has "$OUT_FILE" 'CUDA_VISIBLE_DEVICES=1 ' "the gate ran on GPU 1"
"$BOXGATE" --config "$INI" run -v g1 --gpu 1 --no-results -- --mode slow >"$BG_TMP/g1.out" 2>&1 &
g1=$!
wait_for "$BG_TMP/g1.out" '^argv' 30
expect_rc 1 "run g1 with both GPUs held" bg run -v g1 --no-results -- --mode pass
has "$ERR_FILE" 'no free slot on box g1' "refused: no free slot on the box"
has "$ERR_FILE" '^  g1:gpu0 held by ' "naming each holder"
touch "$BG_HOST_1_ROOT/release-0"
wait $g0 $g1
rm -f "$BG_HOST_1_ROOT/release-0"

# --- --repeat under --wait: later repeats wait for their slot too ---
rm -f "$LOG2"
bg run -v --pool one --wait 60 --repeat 3 --no-results -- --mode hold --tag r3 >"$BG_TMP/r3.out" 2>&1 &
r3=$!
wait_for "$LOG2" '^start r3 ' 30
bg run -v --pool one --wait 60 --no-results -- --mode hold --tag r1 >"$BG_TMP/r1.out" 2>&1 &
r1=$!
wait $r3; rc3=$?
wait $r1; rc1=$?
[ "$rc3" = 0 ] && [ "$rc1" = 0 ] && ok "a --repeat 3 client and a second client on one slot both pass" ||
  not_ok "exits $rc3 and $rc1: $(tail -2 "$BG_TMP/r3.out") / $(tail -2 "$BG_TMP/r1.out")"
check "4 holds of the one slot, never overlapping" python3 - "$LOG2" <<'PY'
import sys
ev = [l.split() for l in open(sys.argv[1])]
st = sorted(float(t) for k, _, _, t in ev if k == "start")
en = sorted(float(t) for k, _, _, t in ev if k == "end")
assert len(st) == len(en) == 4, ev
assert all(b >= a for a, b in zip(en, st[1:])), ev
PY

# --- slots disabled in the pool's configuration ---
printf '\n[pool cfg]\nslots = g1:0-1\ndisabled = g1:0\ndisabled_why = reserved for the KDA job\n' >>"$INI"
expect_rc 0 "slots --pool cfg" bg slots --pool cfg
has "$OUT_FILE" '^g1 +gpu0 +disabled +reserved for the KDA job \(by pool cfg in .*t54\.ini:[0-9]+\)$' \
  "the configured slot shows disabled, the reason and where it was configured"
expect_rc 0 "run --pool cfg skips the configured slot" bg run -v --pool cfg --no-results -- --mode pass
has "$ERR_FILE" '^boxgate: pool cfg: g1:gpu1 is free, taking it$' "it took gpu1"
printf '[box b]\nhost = h1\ngpus = 0-1\n\n[pool x]\nslots = b:0\ndisabled = b:1\ndisabled_why = no\n' >"$BG_TMP/bad1.ini"
expect_rc 2 "a disabled slot that is not the pool's" "$BOXGATE" --config "$BG_TMP/bad1.ini" config check
has "$ERR_FILE" "bad1\.ini:7: pool 'x': disabled 'b:1' is not one of its slots" "the error names the file, line and slot"
printf '[box b]\nhost = h1\ngpus = 0-1\n\n[pool x]\nslots = b:0\ndisabled = b:0\n' >"$BG_TMP/bad2.ini"
expect_rc 2 "disabled without disabled_why" "$BOXGATE" --config "$BG_TMP/bad2.ini" config check
has "$ERR_FILE" 'bad2\.ini:7: .*disabled and disabled_why go together' "the error says the reason is needed"

# --- a foreign compute process: the local box, its NVML replaced by the agent's test stand-in ---
mkdir -p "$BG_TMP/lrepo"
cp "$BG_ROOT/tests/integration/gates/fake_gate.sh" "$BG_TMP/lrepo/gate.sh"
printf '\n[box lo]\ntransport = local\nrepo = %s\ngate = gate.sh\ngpus = 0-1\nrequire_gpu = yes\nallow = --mode --tag\n\n[pool lp]\nslots = lo:0-1\n' \
  "$BG_TMP/lrepo" >>"$INI"
printf 'gpus 2\nproc 0 4242 foreign_job\n' >"$BG_TMP/nvml"
export BOXGATE_AGENT_FAKE_NVML=$BG_TMP/nvml
expect_rc 0 "slots: a GPU with a foreign compute process" bg slots --pool lp
has "$OUT_FILE" '^lo +gpu0 +busy +compute process pid 4242 \(foreign_job\)$' "gpu0 is busy, naming the process"
has "$OUT_FILE" '^lo +gpu1 +free$' "gpu1 is free"
expect_rc 0 "run --pool never picks the busy GPU" bg run -v --pool lp --no-results -- --mode pass
has "$ERR_FILE" '^boxgate: pool lp: lo:gpu1 is free, taking it$' "it took gpu1"
has "$OUT_FILE" 'CUDA_VISIBLE_DEVICES=1 ' "the gate ran on GPU 1"
expect_rc 0 "run lo without --gpu skips it too" bg run -v lo --no-results -- --mode pass
has "$ERR_FILE" '^boxgate: lo: gpu1 is free, taking it' "it took gpu1"
expect_rc 125 "run lo --gpu 0 on the busy GPU is INVALID (the agent's check)" bg run -v lo --gpu 0 --no-results -- --mode pass
has "$OUT_FILE" '"reason":"gpu_busy","gpu":0,"pid":4242' "gpu_busy names the process"
printf 'gpus 2\nproc 0 4242 foreign_job\nproc 1 4343 other_job\n' >"$BG_TMP/nvml"
expect_rc 1 "both GPUs busy: run --pool is refused" bg run -v --pool lp --no-results -- --mode pass
has "$ERR_FILE" '^  lo:gpu1 busy: compute process pid 4343 \(other_job\)$' "naming each process"
unset BOXGATE_AGENT_FAKE_NVML

# --- refused before anything connects ---
expect_rc 2 "--pool and a BOX" bg run -v g1 --pool p -- --mode pass
has "$ERR_FILE" 'give BOX or --pool, not both' "the error says so"
expect_rc 2 "--pool and --gpu" bg run -v --pool p --gpu 0 -- --mode pass
expect_rc 2 "--wait without --pool" bg run -v g1 --wait 5 -- --mode pass
expect_rc 2 "an unknown pool" bg run -v --pool nope -- --mode pass
has "$ERR_FILE" "no pool 'nope'" "the error names the pool"
expect_rc 2 "a flag one box of the pool refuses" bg run -v --pool p -- --frobnicate
has "$ERR_FILE" 'g1.*--frobnicate' "the refusal names the box and the flag"

# --- 20 clients, 2 slots, each gate holding its slot about 0.5 s ---
rm -f "$LOG1" "$LOG2"
pids=()
for i in $(seq -w 1 20); do
  bg run -v --pool p --wait 120 --no-results -- --mode hold --tag "c$i" >"$BG_TMP/c$i.out" 2>&1 &
  pids+=($!)
  # Arrival is when a client took a slot or its place in line, not when it was started: the
  # next one starts only then (a loaded machine can take longer to start one client than
  # another, and the line serves them in the order they joined it).
  wait_for "$BG_TMP/c$i.out" 'is free, taking it|in line|PASS_GATE' 120 ||
    echo "# c$i neither took a slot nor joined the line: $(tail -n 2 "$BG_TMP/c$i.out")"
done
bad=0
for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
[ "$bad" = 0 ] && ok "all 20 clients passed" || not_ok "$bad of 20 clients failed: $(grep -l -v PASS_GATE "$BG_TMP"/c*.out | head -3)"
check "never two holders of one slot, all 20 served, in arrival order (within 3 places)" \
  python3 - "$LOG1" "$LOG2" <<'PY'
import sys
import os
events = []
for box, path in enumerate(sys.argv[1:]):
    # a loaded machine may serve every client from one box's slot: no log on the other
    for line in (open(path) if os.path.exists(path) else []):
        kind, tag, gpu, t = line.split()
        events.append((float(t), kind, tag, (box, gpu)))
starts = {tag: (t, slot) for t, kind, tag, slot in events if kind == "start"}
ends = {tag: t for t, kind, tag, slot in events if kind == "end"}
assert sorted(starts) == sorted(ends) == [f"c{i:02d}" for i in range(1, 21)], (starts, ends)
for slot in {s for _, s in starts.values()}:
    iv = sorted((t, ends[tag]) for tag, (t, s) in starts.items() if s == slot)
    for (a0, a1), (b0, b1) in zip(iv, iv[1:]):
        assert b0 >= a1, f"overlap on {slot}: {a0}-{a1} and {b0}-{b1}"
served = [tag for tag, _ in sorted(starts.items(), key=lambda kv: kv[1][0])]
for rank, tag in enumerate(served):
    arrived = int(tag[1:]) - 1
    assert abs(rank - arrived) <= 3, f"{tag} arrived {arrived + 1}th, served {rank + 1}th: {served}"
print("served:", " ".join(served))
PY

# --- a SIGKILLed holder frees its slot; the next in line gets it ---
# started without the bg function, so that $! is boxgate itself
"$BOXGATE" --config "$INI" run -v --pool one --no-results -- --mode sleep --tag 5 >"$BG_TMP/holder.out" 2>&1 &
holder=$!
wait_for "$BG_TMP/holder.out" '^argv' 30
bg run -v --pool one --wait 60 --no-results -- --mode pass >"$BG_TMP/next.out" 2>&1 &
next=$!
wait_for "$BG_TMP/next.out" 'first in line' 30
kill -KILL $holder
t0=$(date +%s)
wait $next; rc=$?
took=$(($(date +%s) - t0))
[ "$rc" = 0 ] && ok "the waiter got the slot of the SIGKILLed holder and passed" || not_ok "the waiter exited $rc: $(tail -3 "$BG_TMP/next.out")"
# the bound: the holder's agent sees its client gone (the channel closes, or at worst
# heartbeat_timeout_s = 2 without a heartbeat) and stops the gate within kill_grace_s = 0.5
[ "$took" -le 8 ] && ok "within the bound ($took s <= heartbeat 2 s + grace 0.5 s + margin)" || not_ok "it took $took s"

# --- what is no ticket in the line's directory: a FIFO, a symlink, a directory, a
# ticket of a dead waiter; the waiter passes them by and its --wait holds exactly ---
Q=$BG_HOST_2_ROOT/.cache/boxgate/locks/queue-one
mkdir -p "$Q"
"$BOXGATE" --config "$INI" run -v --pool one --no-results -- --mode sleep --tag 7 >"$BG_TMP/holder3.out" 2>&1 &
holder=$!
for _ in $(seq 1 120); do grep -q '^argv' "$BG_TMP/holder3.out" && break; sleep 0.25; done
mkfifo "$Q/000000000000.ticket"
ln -s /dev/zero "$Q/000000000001.ticket"
mkdir "$Q/000000000002.ticket"
printf 'pid=999999\n' >"$Q/000000000003.ticket"
t0=$(date +%s.%N)
# --wait 5: the line's queue command must answer within it, which takes a few seconds on a
# loaded machine with the sanitizer build.
expect_rc 1 "a waiter with --wait 5 past a FIFO, a symlink and a directory in the line" \
  bg run -v --pool one --wait 5 --no-results -- --mode pass
took=$(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" "$t0" "$(date +%s.%N)")
python3 -c "import sys; sys.exit(not 5 <= float(sys.argv[1]) <= 15)" "$took" &&
  ok "it ended at the --wait ($took s for --wait 5)" || not_ok "it ended after $took s for --wait 5"
has "$ERR_FILE" 'first in line, waiting for a free slot' "it was first in line: nothing there was a ticket"
has "$ERR_FILE" 'no free slot in pool one within --wait:' "it says no slot was free within --wait"
hasnt "$ERR_FILE" 'still -1|-1 waiter' "no placeholder count"
check "the dead waiter's ticket was removed, the rest left alone" \
  test ! -e "$Q/000000000003.ticket" -a -p "$Q/000000000000.ticket" -a -L "$Q/000000000001.ticket"
queue_agents() { "$HOSTS" pids "$D" 2 | xargs -r ps -o args= -p 2>/dev/null | grep -c 'queue --name one'; }
for _ in $(seq 1 20); do [ "$(queue_agents)" = 0 ] && break; sleep 0.25; done
[ "$(queue_agents)" = 0 ] && ok "no queue agent of it is left on the box" || not_ok "$(queue_agents) queue agents left on the box"
rm -rf "$Q/000000000000.ticket" "$Q/000000000001.ticket" "$Q/000000000002.ticket"
kill -INT $holder; wait $holder

# --- the agent's own files in the line are never followed: a symlink planted at its
# temporary ticket name (.PID.new) or as the counter does not make it write elsewhere ---
A=$BG_ROOT/build/boxgate-agent
mkdir -p "$BG_TMP/ql/queue-x"
echo precious >"$BG_TMP/victim"
bash -c 'ln -s "$1" "$2/.$$.new"; exec "$3" queue --name x --lock-dir "$4" --heartbeat 0' _ \
  "$BG_TMP/victim" "$BG_TMP/ql/queue-x" "$A" "$BG_TMP/ql" < <(sleep 0.5; echo done) >"$BG_TMP/ql.out" 2>&1
check "a symlink at the agent's temporary ticket name: the file it points to is untouched" \
  grep -qx precious "$BG_TMP/victim"
rm -f "$BG_TMP/ql/queue-x/counter"; ln -s "$BG_TMP/victim" "$BG_TMP/ql/queue-x/counter"
expect_rc 71 "a symlink as the line's counter is refused" "$A" queue --name x --lock-dir "$BG_TMP/ql" --heartbeat 0
has "$ERR_FILE" 'cannot take a ticket: .*/counter: a symbolic link' "... saying so"
check "... and the file it points to is untouched" grep -qx precious "$BG_TMP/victim"

# --- Ctrl-C while waiting leaves no ticket behind ---
"$BOXGATE" --config "$INI" run -v --pool one --no-results -- --mode sleep --tag 6 >"$BG_TMP/holder2.out" 2>&1 &
holder=$!
wait_for "$BG_TMP/holder2.out" '^argv' 30
"$BOXGATE" --config "$INI" run -v --pool one --wait 60 --no-results -- --mode pass >"$BG_TMP/w.out" 2>&1 &
w=$!
wait_for "$BG_TMP/w.out" 'first in line' 10
has "$BG_TMP/w.out" 'first in line, waiting for a free slot' "the waiter is first in line, waiting"
expect_rc 1 "a second waiter whose --wait runs out in line" bg run -v --pool one --wait 5 --no-results -- --mode pass
has "$ERR_FILE" 'pool one: still 1 waiter ahead in line after --wait 5 s; the slots:' "it says how many were ahead"
has "$ERR_FILE" '^  g2:gpu1 held by [^ ]+@[^ ]+:[0-9]+ since ' "and names the slot's holder"
kill -INT $w; wait $w; rc=$?
[ "$rc" = 130 ] && ok "Ctrl-C while waiting: exit 130" || not_ok "Ctrl-C while waiting: exit $rc"
left=0
for _ in $(seq 1 20); do
  left=$(find "$BG_HOST_2_ROOT/.cache/boxgate/locks/queue-one" -name '*.ticket' | wc -l)
  [ "$left" = 0 ] && break; sleep 0.25
done
[ "$left" = 0 ] && ok "no ticket left in the line" || not_ok "$left tickets left behind"
kill -INT $holder; wait $holder
expect_rc 0 "the slot is free again" bg run -v --pool one --no-results -- --mode pass

finish
