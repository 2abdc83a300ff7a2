#!/usr/bin/env bash
# boxgate-agent run directly (no ssh): watchdog, reaping, dead-man's switch, slot locks,
# output forwarding, exclusivity without a GPU, exit codes.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/wait.sh"

AGENT=${BG_BUILD:-$BG_ROOT/build}/boxgate-agent
if ! [ -x "$AGENT" ]; then
  AGENT=$BG_TMP/boxgate-agent
  "$BG_ROOT/gate/agent/gen.sh" >"$BG_TMP/boxgate-agent.c" &&
  cc -std=c11 -Wall -Wextra -Werror -Wshadow -D_GNU_SOURCE -O2 -o "$AGENT" \
    "$BG_TMP/boxgate-agent.c" -ldl -lm || skip_all "cannot build the agent"
fi
HANG=$BG_TMP/hang
cc -O1 -o "$HANG" "$BG_ROOT/tests/integration/hang/hang.c" || skip_all "cannot build the hang helper"
LOCKS=$BG_TMP/locks
A() { "$AGENT" run --lock-dir "$LOCKS" "$@"; }

# wait_for N CMD...: up to N seconds until CMD succeeds.
wait_for() {
  local n=$(($1 * 20)); shift
  while ! "$@" 2>/dev/null; do
    n=$((n - 1)); [ "$n" -gt 0 ] || return 1
    sleep 0.05
  done
}
lines_at_least() { [ -f "$1" ] && [ "$(wc -l <"$1")" -ge "$2" ]; }
# survivors PIDFILE [MARK]: pids from the file that still exist (and, with MARK, whose
# command line holds MARK: a reused pid does not count).
survivors() {
  local p out=""
  for p in $(cat "$1" 2>/dev/null); do
    [ -e "/proc/$p" ] || continue
    if [ -n "${2:-}" ] && ! tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF -- "$2"; then continue; fi
    out="$out $p"
  done
  echo "$out"
}
none_survive() {
  local s; s=$(survivors "$@")
  if [ -z "$s" ]; then ok "$3"; else
    not_ok "$3"; diag "alive:$s"
    for p in $s; do diag "$(cat /proc/$p/stat 2>/dev/null)"; kill -9 "$p" 2>/dev/null; done
  fi
}
json_field() { grep -oE "\"$2\":[^,}]*" "$1" | head -n1 | cut -d: -f2; }

# ---------------------------------------------------------------- commands, usage
expect_rc 0 "version exits 0" "$AGENT" version
has "$OUT_FILE" '^boxgate-agent [0-9]+\.[0-9]+\.[0-9]+$' "version prints boxgate-agent VERSION"
expect_rc 0 "gpus exits 0" "$AGENT" gpus
has "$OUT_FILE" '^(no-nvml .+|gpu [0-9]+ .+ .+)$' "gpus prints GPU lines or no-nvml"
expect_rc 0 "procs exits 0" "$AGENT" procs --gpus 0,1
NO_NVML=0; grep -q '^no-nvml' "$OUT_FILE" && NO_NVML=1
check "procs prints only no-nvml or pid lines" \
  awk '!/^(no-nvml .+|pid [0-9]+ gpu [0-9]+ name [^ ]+ mem_mib -?[0-9]+)$/{exit 1}' "$OUT_FILE"

expect_rc 2 "no command: usage" "$AGENT"
has "$ERR_FILE" '^boxgate-agent: usage:' "usage text on stderr"
expect_rc 2 "unknown command" "$AGENT" frobnicate
expect_rc 2 "run without --" A --no-stdin true
expect_rc 2 "run with nothing after --" A --no-stdin --
expect_rc 2 "unknown run option" A --no-stdin --frob -- true
expect_rc 2 "bad --gpus" A --no-stdin --gpus 0,a -- true
expect_rc 2 "bad --gpus range" A --no-stdin --gpus 3-1 -- true
expect_rc 2 "bad --env name" A --no-stdin --env 1X=2 -- true
expect_rc 2 "--env without =" A --no-stdin --env X -- true
expect_rc 2 "bad --timeout" A --no-stdin --timeout -1 -- true
expect_rc 2 "bad --require-gpu" A --no-stdin --require-gpu maybe -- true
expect_rc 2 "--heartbeat with --no-stdin" A --no-stdin --heartbeat 1 -- true
expect_rc 2 "option without its value" A --no-stdin --timeout
MPK_GATE_TIMEOUT_S=x expect_rc 2 "bad MPK_GATE_TIMEOUT_S" A --no-stdin -- true

# ---------------------------------------------------------------- exit status
expect_rc 0 "gate exit 0 passes through" A --no-stdin -- true
expect_rc 3 "gate exit 3 passes through" A --no-stdin -- sh -c 'exit 3'
expect_rc 143 "gate killed by SIGTERM: 128+15" A --no-stdin -- sh -c 'kill -TERM $$'
expect_rc 137 "gate killed by SIGKILL: 128+9" A --no-stdin -- sh -c 'kill -KILL $$'
expect_rc 127 "command not found: 127" A --no-stdin -- "$BG_TMP/no-such-gate"
has "$ERR_FILE" "^boxgate-agent: cannot run .*no-such-gate" "exec failure explained"
expect_rc 127 "bad --cwd: 127" A --no-stdin --cwd "$BG_TMP/no-such-dir" -- true
has "$ERR_FILE" "^boxgate-agent: cannot enter" "bad --cwd explained"

# ---------------------------------------------------------------- environment
expect_rc 0 "gate environment" env -u CUDA_VISIBLE_DEVICES "$AGENT" run --lock-dir "$LOCKS" --no-stdin \
  --gpus 3,1-2 --require-gpu no --env FOO='a b$c' --env BAR= --cwd "$BG_TMP" -- \
  sh -c 'echo "cvd=$CUDA_VISIBLE_DEVICES order=$CUDA_DEVICE_ORDER pyu=$PYTHONUNBUFFERED foo=$FOO bar=[$BAR] pwd=$(pwd)"'
has "$OUT_FILE" "^cvd=1,2,3 order=PCI_BUS_ID pyu=1 foo=a b\\\$c bar=\[\] pwd=$BG_TMP\$" \
  "CUDA_VISIBLE_DEVICES normalised, PYTHONUNBUFFERED, --env, --cwd"
expect_rc 0 "cpu slot" env CUDA_VISIBLE_DEVICES=keep "$AGENT" run --lock-dir "$LOCKS" --no-stdin -- \
  sh -c 'echo "cvd=$CUDA_VISIBLE_DEVICES"'
has "$OUT_FILE" '^cvd=keep$' "no GPU slot: CUDA_VISIBLE_DEVICES left alone"
expect_rc 0 "gate fds" A --no-stdin -- sh -c 'ls /proc/$$/fd; readlink /proc/$$/fd/0'
has "$OUT_FILE" '^0$' "gate has fd 0"
hasnt "$OUT_FILE" '^([3-9]|[1-9][0-9]+)$' "gate inherits no fd above 2 (no lock fd)"
hasnt "$OUT_FILE" '\.lock' "no lock file open in the gate"
has "$OUT_FILE" '^/dev/null$' "gate stdin is /dev/null"
expect_rc 0 "gate session" A --no-stdin -- sh -c 'cut -d" " -f1,5,6 /proc/$$/stat'
has "$OUT_FILE" '^([0-9]+) \1 \1$' "gate leads its own session and process group"

# ---------------------------------------------------------------- exclusivity without a GPU
if [ "$NO_NVML" = 1 ]; then
  rm -f "$BG_TMP/ran"
  expect_rc 125 "--require-gpu yes without NVML: 125" A --no-stdin --gpus 0 --require-gpu yes -- touch "$BG_TMP/ran"
  has "$OUT_FILE" '^FAITHFUL_RESULT \{"verdict":"INVALID","reason":"no_gpu","detail":"[^"]+"\}$' "INVALID no_gpu line"
  check "gate not started when INVALID" test ! -e "$BG_TMP/ran"
  expect_rc 125 "--gpus default requires a GPU" A --no-stdin --gpus 0 -- touch "$BG_TMP/ran"
  expect_rc 0 "--require-gpu no without NVML: runs" A --no-stdin --gpus 0 --require-gpu no -- touch "$BG_TMP/ran"
  check "gate started with --require-gpu no" test -e "$BG_TMP/ran"
  has "$ERR_FILE" '^boxgate-agent: no GPU check: ' "missing NVML noted on stderr"
  hasnt "$OUT_FILE" 'FAITHFUL_RESULT' "no verdict line with --require-gpu no"
else
  ok "# SKIP NVML present: no-GPU cases run on GPU-less machines only"
fi

# ---------------------------------------------------------------- output forwarding
cat >"$BG_TMP/talk.sh" <<'EOF'
echo out1; echo err1 >&2; echo out2
echo 'FAITHFUL_RESULT {"kind":"demo","shape":"q_b","candidate":{"slowCTA_us":4.1,"cos":0.9999},"verdict":"PASS_GATE"}'
echo err2 >&2
printf 'err-tail' >&2
printf 'out-tail'
EOF
expect_rc 0 "talking gate" A --no-stdin -- sh "$BG_TMP/talk.sh"
printf 'out1\nout2\nFAITHFUL_RESULT {"kind":"demo","shape":"q_b","candidate":{"slowCTA_us":4.1,"cos":0.9999},"verdict":"PASS_GATE"}\nout-tail' >"$BG_TMP/want.out"
printf 'err1\nerr2\nerr-tail' >"$BG_TMP/want.err"
check "stdout forwarded byte for byte (order, FAITHFUL_RESULT, unterminated tail)" cmp "$OUT_FILE" "$BG_TMP/want.out"
check "stderr forwarded byte for byte, separately" cmp "$ERR_FILE" "$BG_TMP/want.err"

# A long line and binary-ish bytes pass unchanged.
head -c 300000 /dev/urandom | base64 -w 0 >"$BG_TMP/long"; echo >>"$BG_TMP/long"
printf 'x\001\377y\n' >>"$BG_TMP/long"
expect_rc 0 "long line gate" A --no-stdin -- cat "$BG_TMP/long"
check "a 400 kB line and odd bytes pass unchanged" cmp "$OUT_FILE" "$BG_TMP/long"

# stdout and stderr into one file: no line is split or mixed with another.
cat >"$BG_TMP/mix.sh" <<'EOF'
l=$(printf 'O%.0s' $(seq 300))
m=$(printf 'E%.0s' $(seq 500))
(for i in $(seq 2000); do echo "o$i $l"; done) &
(for i in $(seq 2000); do echo "e$i $m" >&2; done) &
wait
EOF
A --no-stdin -- sh "$BG_TMP/mix.sh" >"$BG_TMP/mix" 2>&1
n_ok=$(grep -cE '^(o[0-9]+ O{300}|e[0-9]+ E{500})$' "$BG_TMP/mix")
n_all=$(wc -l <"$BG_TMP/mix")
if [ "$n_ok" = 4000 ] && [ "$n_all" = 4000 ]; then ok "4000 lines of two streams in one file, none split"; else
  not_ok "interleaved lines intact ($n_ok good of $n_all, want 4000)"; fi
check "per-stream order kept" sh -c "grep -oE '^o[0-9]+' '$BG_TMP/mix' | tr -d o | sort -nc && grep -oE '^e[0-9]+' '$BG_TMP/mix' | tr -d e | sort -nc"

# Live: a line and a partial line arrive while the gate still runs (it waits for them).
rm -f "$BG_TMP/go1" "$BG_TMP/go2"
A --no-stdin --timeout 20 -- sh -c "echo line-one; while [ ! -e $BG_TMP/go1 ]; do sleep 0.05; done; printf 'prompt> '; while [ ! -e $BG_TMP/go2 ]; do sleep 0.05; done; echo done" \
  >"$BG_TMP/live.out" 2>"$BG_TMP/live.err" &
ag=$!
if wait_for 10 grep -q '^line-one$' "$BG_TMP/live.out"; then ok "a complete line arrives at once"; else not_ok "a complete line arrives at once"; fi
touch "$BG_TMP/go1"
if wait_for 10 grep -q 'prompt> $' "$BG_TMP/live.out"; then ok "a partial line arrives after a short idle"; else not_ok "a partial line arrives after a short idle"; fi
touch "$BG_TMP/go2"
wait $ag; rc=$?
check "live gate exits 0" test "$rc" = 0
check "live output complete" test "$(cat "$BG_TMP/live.out")" = "line-one
prompt> done"

# ---------------------------------------------------------------- watchdog on hanging gates
hang_case() { # MODE MIN_PIDS MIN_KILLED
  local mode=$1 want=$2 killed=$3 pf=$BG_TMP/pids.$1
  rm -f "$pf"
  expect_rc 124 "$mode: exit 124 at the timeout" A --no-stdin --timeout 2 --grace 1 -- "$HANG" "$pf" "$mode"
  has "$OUT_FILE" '^FAITHFUL_RESULT \{"verdict":"TIMEOUT_HANG","timeout_s":2,"killed":[0-9]+,"gpu_freed":null,"reaped_ms":[0-9]+\}$' \
    "$mode: TIMEOUT_HANG line"
  check "$mode: all $want processes had started" lines_at_least "$pf" "$want"
  local k; k=$(json_field "$OUT_FILE" killed)
  check "$mode: killed $k >= $killed" test "${k:-0}" -ge "$killed"
  none_survive "$pf" "$pf" "$mode: none of its processes exist afterwards"
}
hang_case sleep 1 1
hang_case busy 1 1
hang_case ignore-term 2 2
hang_case setsid 3 3
hang_case double-fork 2 2
hang_case respawn 2 1
hang_case stopped 2 2
has "$ERR_FILE" '^boxgate-agent: gate timed out after 2 s' "timeout explained on stderr"

rm -f "$BG_TMP/pids.sh"
expect_rc 124 "shell: sleep 1000 under a shell that ignores TERM, double fork and setsid" \
  A --no-stdin --timeout 2 --grace 1 -- sh -c "trap '' TERM; echo \$\$ >>$BG_TMP/pids.sh; (setsid sh -c 'echo \$\$ >>$BG_TMP/pids.sh; exec sleep 1000' &); exec sleep 1000"
check "shell: both recorded" lines_at_least "$BG_TMP/pids.sh" 2
none_survive "$BG_TMP/pids.sh" "" "shell: sleep 1000 processes gone"

rm -f "$BG_TMP/pids.env"
MPK_GATE_TIMEOUT_S=1 expect_rc 124 "MPK_GATE_TIMEOUT_S sets the default timeout" A --no-stdin --grace 1 -- "$HANG" "$BG_TMP/pids.env" sleep
has "$OUT_FILE" '"timeout_s":1,' "timeout_s from MPK_GATE_TIMEOUT_S"
MPK_GATE_TIMEOUT_S=1 expect_rc 0 "--timeout wins over MPK_GATE_TIMEOUT_S" A --no-stdin --timeout 30 -- sleep 1.5

# ---------------------------------------------------------------- leftovers of a gate that exits
rm -f "$BG_TMP/pids.left"
expect_rc 7 "gate leaving a child behind: its status stays" A --no-stdin -- \
  sh -c "$HANG $BG_TMP/pids.left sleep & while [ ! -s $BG_TMP/pids.left ]; do sleep 0.05; done; exit 7"
has "$ERR_FILE" '^boxgate-agent: gate exited but left 1 process behind' "leftover named on stderr"
none_survive "$BG_TMP/pids.left" "$BG_TMP/pids.left" "leftover killed"

# ---------------------------------------------------------------- dead-man's switch
# run_fed NAME WRITER_SCRIPT AGENT_ARGS...: the agent reads a fifo fed by a writer process.
run_fed() {
  local name=$1 writer=$2; shift 2
  local fifo=$BG_TMP/fifo.$name
  rm -f "$fifo"; mkfifo "$fifo"
  bash -c "$writer" >"$fifo" &
  WRITER=$!
  "$AGENT" run --lock-dir "$LOCKS" "$@" <"$fifo" >"$BG_TMP/$name.out" 2>"$BG_TMP/$name.err" &
  AGENT_PID=$!
}
finish_fed() { wait "$AGENT_PID"; FED_RC=$?; kill "$WRITER" 2>/dev/null; wait "$WRITER" 2>/dev/null; }

pf=$BG_TMP/pids.eof; rm -f "$pf"
run_fed eof 'echo hb; exec sleep 1000' --timeout 60 --grace 1 -- "$HANG" "$pf" setsid
wait_for 10 lines_at_least "$pf" 3
kill "$WRITER"
finish_fed
check "stdin EOF (writer ended): exit 129 (got $FED_RC)" test "$FED_RC" = 129
has "$BG_TMP/eof.err" '^boxgate-agent: stdin closed: client gone' "EOF explained"
none_survive "$pf" "$pf" "EOF: gate tree gone"

pf=$BG_TMP/pids.hb; rm -f "$pf"
run_fed hb 'exec sleep 1000' --timeout 60 --grace 1 --heartbeat 1 -- "$HANG" "$pf" ignore-term
finish_fed
check "heartbeat silence: exit 129 (got $FED_RC)" test "$FED_RC" = 129
has "$BG_TMP/hb.err" '^boxgate-agent: no heartbeat for 1 s' "heartbeat silence explained"
check "heartbeat: gate had started" lines_at_least "$pf" 2
none_survive "$pf" "$pf" "heartbeat: gate tree gone"

run_fed hbok 'while :; do echo hb; sleep 0.2; done' --timeout 60 --heartbeat 1 -- sh -c 'sleep 2.5; echo finished'
finish_fed
check "steady heartbeat keeps a 2.5 s gate alive with --heartbeat 1 (rc $FED_RC)" test "$FED_RC" = 0
has "$BG_TMP/hbok.out" '^finished$' "heartbeat gate finished"

pf=$BG_TMP/pids.kill; rm -f "$pf"
run_fed kill "while [ ! -s $pf ]; do sleep 0.05; done; echo hb; echo kill; exec sleep 1000" --timeout 60 --grace 1 -- "$HANG" "$pf" double-fork
finish_fed
check "'kill' line: exit 130 (got $FED_RC)" test "$FED_RC" = 130
has "$BG_TMP/kill.err" '^boxgate-agent: killed on request$' "killed on request"
hasnt "$BG_TMP/kill.out" 'FAITHFUL_RESULT' "no verdict after a kill request"
none_survive "$pf" "$pf" "kill: gate tree gone"

sig_case() { # SIGNAL RC
  local pf=$BG_TMP/pids.sig$1; rm -f "$pf"
  run_fed "sig$1" 'exec sleep 1000' --timeout 60 --grace 1 -- "$HANG" "$pf" setsid
  wait_for 10 lines_at_least "$pf" 3
  kill -"$1" "$AGENT_PID"
  finish_fed
  check "SIG$1 to the agent: exit $2 (got $FED_RC)" test "$FED_RC" = "$2"
  none_survive "$pf" "$pf" "SIG$1: gate tree gone"
}
sig_case HUP 129
sig_case TERM 143
sig_case INT 130

# The reader of the agent's stdout goes away: the gate is stopped.
pf=$BG_TMP/pids.pipe; rm -f "$pf"
( "$AGENT" run --lock-dir "$LOCKS" --no-stdin --timeout 60 --grace 1 -- sh -c "echo \$\$ >$pf; while :; do echo tick; sleep 0.05; done" 2>"$BG_TMP/pipe.err"
  echo "$?" >"$BG_TMP/pipe.rc" ) | head -n 3 >/dev/null
wait_for 10 test -s "$BG_TMP/pipe.rc"
check "stdout reader gone: exit 129 (got $(cat "$BG_TMP/pipe.rc" 2>/dev/null))" test "$(cat "$BG_TMP/pipe.rc" 2>/dev/null)" = 129
none_survive "$pf" "" "stdout reader gone: gate gone"

# The agent itself SIGKILLed: its gate dies with it (PDEATHSIG) and the slot is free.
pf=$BG_TMP/pids.k9; rm -f "$pf"
"$AGENT" run --lock-dir "$LOCKS" --no-stdin --timeout 60 -- "$HANG" "$pf" sleep >/dev/null 2>&1 &
ag=$!
wait_for 10 lines_at_least "$pf" 1
kill -9 "$ag"; wait "$ag" 2>/dev/null
wait_for 5 test -z "$(survivors "$pf" "$pf")"
none_survive "$pf" "$pf" "agent SIGKILLed: the gate's main process dies too"
expect_rc 0 "slot free after the agent was SIGKILLed" A --no-stdin -- true

# ---------------------------------------------------------------- slot locks
log=$BG_TMP/slot.log; rm -f "$log" "$BG_TMP/release"
# The holder's gate runs until the test releases it, so nothing here depends on timing.
gate_held='echo "start $(date +%s%N)" >>'"$log"'; while [ ! -e '"$BG_TMP/release"' ]; do sleep 0.05; done; echo "end $(date +%s%N)" >>'"$log"
gate_short='echo "start $(date +%s%N)" >>'"$log"'; sleep 0.2; echo "end $(date +%s%N)" >>'"$log"
"$AGENT" run --lock-dir "$LOCKS" --no-stdin --timeout 60 --gpus 0,1 --require-gpu no --tag first-laptop -- sh -c "$gate_held" \
  >"$BG_TMP/first.out" 2>"$BG_TMP/first.err" &
first=$!
wait_for 10 grep -q start "$log"
expect_rc 75 "second agent on the slot refused: 75" A --no-stdin --gpus 0 --require-gpu no --tag second -- sh -c "echo ran >>$log"
has "$ERR_FILE" "^boxgate-agent: slot gpu0 busy: held by first-laptop pid $first since [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$" \
  "refusal names the holder's tag, pid and start time"
expect_rc 75 "overlapping slot refused" A --no-stdin --gpus 1-2 --require-gpu no -- sh -c "echo ran >>$log"
has "$ERR_FILE" "slot gpu1 busy: held by first-laptop pid $first" "overlap names the shared GPU"
expect_rc 0 "a disjoint slot runs meanwhile" A --no-stdin --gpus 2 --require-gpu no -- true
expect_rc 0 "the cpu slot is separate" A --no-stdin -- true
expect_rc 75 "--lock-wait shorter than the holder: refused after waiting" A --no-stdin --gpus 0 --require-gpu no --lock-wait 0.3 -- sh -c "echo ran >>$log"
"$AGENT" run --lock-dir "$LOCKS" --no-stdin --gpus 1 --require-gpu no --lock-wait 30 --tag waiter -- sh -c "$gate_short" \
  >"$BG_TMP/waiter.out" 2>"$BG_TMP/waiter.err" &
waiter=$!
wait_for 10 grep -q 'waiting up to' "$BG_TMP/waiter.err"
has "$BG_TMP/waiter.err" '^boxgate-agent: slot gpu1 busy: held by first-laptop .*; waiting up to 30 s$' "waiting explained"
check "the waiter has not started while the slot is held" test "$(grep -c start "$log")" = 1
touch "$BG_TMP/release"
wait "$waiter"; check "--lock-wait: waits, then runs (rc $?)" test "$?" = 0
wait "$first"; check "first agent exits 0" test "$?" = 0
hasnt "$log" '^ran$' "refused gates never ran"
check "never both at once: the waiter started after the holder ended" \
  awk '/^start/{s[++n]=$2} /^end/{e[++m]=$2} END{exit !(n==2 && m==2 && s[2] >= e[1])}' "$log"
check "lock dir created 0700" test "$(stat -c %a "$LOCKS")" = 700
check "lock file per GPU" test -e "$LOCKS/gpu0.lock" -a -e "$LOCKS/gpu1.lock" -a -e "$LOCKS/cpu.lock"
check "holder record cleared after release" test ! -s "$LOCKS/gpu0.lock"

# A waiter whose client goes away gives up without running.
# The holder keeps GPU 5 until released, and the waiter starts once its record is in the lock.
"$AGENT" run --lock-dir "$LOCKS" --no-stdin --gpus 5 --require-gpu no --tag holder -- \
  sh -c "until [ -e $BG_TMP/release5 ]; do sleep 0.05; done" >/dev/null 2>&1 &
holder=$!
wait_until 30 test -s "$LOCKS/gpu5.lock"
run_fed lockeof2 'sleep 0.5' --gpus 5 --require-gpu no --lock-wait 20 -- sh -c "echo ran >>$log"
finish_fed
check "client gone while waiting for the slot: exit 129 (got $FED_RC)" test "$FED_RC" = 129
hasnt "$log" '^ran$' "the waiter never ran"
touch "$BG_TMP/release5"
wait "$holder"

# ---------------------------------------------------------------- framing (--nonce-stdin)
N=0123456789abcdef0123456789abcdef
FEED="printf 'nonce $N\n'; while :; do echo hb; sleep 0.2; done"
F="@boxgate-agent $N"
last_line() { tail -n 1 "$1"; }

pf=$BG_TMP/pids.frame; rm -f "$pf"
run_fed frame "$FEED" --nonce-stdin --heartbeat 2 --timeout 1 --grace 1 -- "$HANG" "$pf" sleep
finish_fed
check "framed timeout: exit 124 (got $FED_RC)" test "$FED_RC" = 124
has "$BG_TMP/frame.out" "^$F FAITHFUL_RESULT \{\"verdict\":\"TIMEOUT_HANG\",\"timeout_s\":1," "the agent's TIMEOUT_HANG line carries the frame"
check "the last line is the framed end report" test "$(last_line "$BG_TMP/frame.out")" = "$F end {\"rc\":124,\"why\":\"timeout\"}"
hasnt "$BG_TMP/frame.out" '^FAITHFUL_RESULT' "no unframed agent verdict"

run_fed frame124 "$FEED" --nonce-stdin --heartbeat 2 -- sh -c 'echo "FAITHFUL_RESULT {\"verdict\":\"TIMEOUT_HANG\"}"; exit 124'
finish_fed
check "a gate exiting 124: the agent exits 124 too (got $FED_RC)" test "$FED_RC" = 124
check "... but its end report says the gate exited 124" test "$(last_line "$BG_TMP/frame124.out")" = "$F end {\"rc\":124,\"why\":\"exited\",\"gate_exit\":124}"
has "$BG_TMP/frame124.out" '^FAITHFUL_RESULT \{"verdict":"TIMEOUT_HANG"\}$' "the gate's own line passes unframed and unchanged"

run_fed framesegv "$FEED" --nonce-stdin --heartbeat 2 -- sh -c 'echo out; kill -SEGV $$'
finish_fed
check "a gate killed by SIGSEGV: exit 139 (got $FED_RC)" test "$FED_RC" = 139
check "... end report names the signal" test "$(last_line "$BG_TMP/framesegv.out")" = "$F end {\"rc\":139,\"why\":\"exited\",\"gate_signal\":11}"

# Slurm ends a step by signalling each of its processes in turn: the gate's SIGTERM can come
# first and the gate be reaped before the agent's own arrives. Inside a step (SLURM_JOB_ID)
# the end waits for it, and says "terminated" (a campaign requeues the job); with no
# SIGTERM for the agent, it says what killed the gate.
reaped() { [ -s "$1" ] && [ -z "$(survivors "$1")" ]; }
pf=$BG_TMP/pids.slurmterm; rm -f "$pf"
SLURM_JOB_ID=77 run_fed slurmterm "$FEED" --nonce-stdin --heartbeat 2 -- sh -c "echo \$\$ >$pf; kill -TERM \$\$"
wait_for 10 reaped "$pf"
kill -TERM "$AGENT_PID"
finish_fed
check "Slurm step, the gate's SIGTERM first: exit 143 (got $FED_RC)" test "$FED_RC" = 143
check "... its end report says terminated, not the gate's signal" \
  test "$(last_line "$BG_TMP/slurmterm.out")" = "$F end {\"rc\":143,\"why\":\"terminated\",\"slurm_job\":\"77\"}"
SLURM_JOB_ID=77 run_fed slurmkill "$FEED" --nonce-stdin --heartbeat 2 -- sh -c 'kill -KILL $$'
finish_fed
check "Slurm step, the gate SIGKILLed and the agent left alone: exit 137 (got $FED_RC)" test "$FED_RC" = 137
check "... its end report names the gate's signal" \
  test "$(last_line "$BG_TMP/slurmkill.out")" = "$F end {\"rc\":137,\"why\":\"exited\",\"gate_signal\":9,\"slurm_job\":\"77\"}"

run_fed framebusy "$FEED" --nonce-stdin --heartbeat 2 --gpus 0 --require-gpu no -- true
finish_fed
check "framed run of a plain gate: exit 0" test "$FED_RC" = 0
check "... end report exited 0" test "$(last_line "$BG_TMP/framebusy.out")" = "$F end {\"rc\":0,\"why\":\"exited\",\"gate_exit\":0}"

run_fed nonceBad "printf 'nonce XYZ\n'; sleep 5" --nonce-stdin -- true
finish_fed
check "a bad nonce line: usage, exit 2 (got $FED_RC)" test "$FED_RC" = 2
run_fed nonceEof "exit 0" --nonce-stdin -- true
finish_fed
check "stdin EOF before the nonce: exit 129 (got $FED_RC)" test "$FED_RC" = 129
expect_rc 2 "--nonce-stdin with --no-stdin: usage" A --no-stdin --nonce-stdin -- true

# A gate of the agent's own user (here both 'nobody') hunts the nonce in the agent's
# memory (/proc/PPID/mem), environ, cmdline and fds, and prints a TIMEOUT_HANG line
# framed with what it found: the agent is non-dumpable before it reads the nonce.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
  NB=$(mktemp -d /tmp/bgnobody.XXXXXX); chmod 755 "$NB"
  cp "$AGENT" "$BG_ROOT/tests/integration/gates/nonce_thief.py" "$NB/"
  mkdir "$NB/locks"; chown nobody "$NB/locks"
  bash -c "$FEED" | setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
    "$NB/boxgate-agent" run --lock-dir "$NB/locks" --nonce-stdin --heartbeat 2 -- \
    /usr/bin/python3 "$NB/nonce_thief.py" >"$BG_TMP/thief.out" 2>"$BG_TMP/thief.err"
  check "the thief's agent ran as nobody and exited 0" test "${PIPESTATUS[1]}" = 0
  for w in mem environ cmdline fd; do
    has "$BG_TMP/thief.err" "^thief: $w: (Permission denied|nothing)$" "same user: the agent's $w gave the gate nothing"
  done
  hasnt "$BG_TMP/thief.out" "^@boxgate-agent $N FAITHFUL_RESULT" "no line framed with the run's nonce came of it"
  has "$BG_TMP/thief.out" '^@boxgate-agent f{32} FAITHFUL_RESULT' "(the thief printed its made-up guess)"
  rm -rf "$NB"
else
  ok "# SKIP the same-user nonce test needs root, setpriv and the user nobody"
fi

# A slow reader of the agent's stdout while the client still sends heartbeats: the final
# flush waits for it (past the 10 s it gives a silent client), nothing is lost.
fifo=$BG_TMP/fifo.slow; rm -f "$fifo"; mkfifo "$fifo"
bash -c "$FEED" >"$fifo" &
W=$!
( "$AGENT" run --lock-dir "$LOCKS" --nonce-stdin --heartbeat 2 --timeout 60 -- \
    awk 'BEGIN { for (i = 0; i < 30000; i++) printf "%099d\n", i; print "last" }' <"$fifo" 2>"$BG_TMP/slow.err"
  echo $? >"$BG_TMP/slow.rc" ) | (sleep 12; cat) >"$BG_TMP/slow.out"
kill "$W" 2>/dev/null; wait "$W" 2>/dev/null
check "slow reader (12 s), heartbeats on: the agent exits 0 (got $(cat "$BG_TMP/slow.rc"))" test "$(cat "$BG_TMP/slow.rc")" = 0
check "slow reader: all 30001 gate lines arrived" test "$(grep -c -v '^@boxgate-agent' "$BG_TMP/slow.out")" = 30001
check "slow reader: the end report is the last line" test "$(last_line "$BG_TMP/slow.out")" = "$F end {\"rc\":0,\"why\":\"exited\",\"gate_exit\":0}"
hasnt "$BG_TMP/slow.err" 'heartbeat|client' "slow reader: never taken for a dead client"

finish
