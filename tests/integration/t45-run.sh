#!/usr/bin/env bash
# boxgate run over real sshd: the shim, the agent installed on demand, live lines,
# verdicts judged again, and the watchdog: hangs, a killed client, a cut link,
# Ctrl-C, two clients on one slot. Processes are checked through /proc (the test
# hosts share this machine's pid namespace).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/wait.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts

hosts_up 2
cp "$BG_ROOT/tests/integration/gates/fake_gate.sh" "$BG_HOST_1_ROOT/repo/gate.sh"
cp "$BG_ROOT/tests/integration/gates/fake_gate.sh" "$BG_HOST_2_ROOT/repo/gate.sh"
rm -rf "$BG_HOST_1_ROOT/.cache" "$BG_HOST_2_ROOT/.cache"
# The agent's heartbeat timeout and kill grace for the g boxes, in seconds and in ms.
HB=2 GRACE=0.5 HB_MS=2000 GRACE_MS=500
INI=$BG_TMP/run.ini
cat "$BG_CONFIG" >"$INI"
for i in 1 2; do cat >>"$INI" <<EOF2

[box g$i]
host = h$i
repo = /root/repo
gate = gate.sh
require_gpu = no
heartbeat_timeout_s = $HB
kill_grace_s = $GRACE
keepalive_s = 1
allow = --kind --shape --num-workers --configs --mode --tag
env --decode-m1 = MPK_GG_DECODE_M1=1
env --gate-timeout = MPK_GATE_TIMEOUT_S={}
EOF2
done
bg() { "$BOXGATE" --config "$INI" "$@"; }

# --- the shim, before anything connects ---
printf '[box far]\nhost = %s\nport = %s\nconnect_timeout_s = 30\nrepo = /root/repo\ngate = gate.sh\nrequire_gpu = no\nallow = --kind\n' \
  "$BG_BLACKHOLE_ADDR" "$BG_BLACKHOLE_PORT" >>"$INI"
start=$(date +%s%N)
expect_rc 2 "a disallowed flag is refused with exit 2" bg run far -- --kind x --decode-m1
ms=$(( ($(date +%s%N) - start) / 1000000 ))
has "$ERR_FILE" "far.*--decode-m1" "the refusal names the box and the flag"
[ "$ms" -lt 3000 ] && ok "refused before connecting (the box is unreachable; took ${ms} ms)" || not_ok "took ${ms} ms: it connected first"
expect_rc 2 "--configs must match --shape" bg run g1 -- --shape q_b --configs q_a
has "$ERR_FILE" "one shape per invocation|--configs" "the policy refusal explains itself"
expect_rc 2 "run without a box is a usage error" bg run

# --- explain ---
expect_rc 0 "explain prints the plan" bg explain g1 -- --kind gemv_m1 --decode-m1 --shape q_b --gate-timeout 9
has "$OUT_FILE" '--decode-m1 +-> env MPK_GG_DECODE_M1=1' "explain: --decode-m1 goes to the environment"
has "$OUT_FILE" "--kind +-> pass" "explain: --kind passes"
has "$OUT_FILE" "agent-[0-9a-f]{16} run .*--timeout 9 .*--env 'MPK_GG_DECODE_M1=1'.* -- ./gate.sh --kind gemv_m1 --shape q_b" "explain: the exact remote command"
[ ! -d "$BG_HOST_1_ROOT/.cache/boxgate" ] && ok "explain touched nothing on the box" || not_ok "explain installed something"

# Numbers on the command line are parsed and passed in their canonical form: a
# bash gate reads 08 as a bad octal number. A GPU named twice is an error.
expect_rc 0 "explain: --gate-timeout 08 is a number" bg explain g1 -- --kind x --gate-timeout 08
has "$OUT_FILE" "--gate-timeout +-> env MPK_GATE_TIMEOUT_S=8 " "... the gate is given 8, not 08"
has "$OUT_FILE" "--timeout 8 .*--env 'MPK_GATE_TIMEOUT_S=8' " "... in the remote command too"
hasnt "$OUT_FILE" "MPK_GATE_TIMEOUT_S=08" "... and 08 appears nowhere"
expect_rc 2 "explain: --timeout 0 is refused, not taken as the default" bg explain g1 --timeout 0 -- --kind x
has "$ERR_FILE" "explain: --timeout wants whole seconds from 1 to 604800, got '0'" "... naming the bounds"
expect_rc 0 "explain: --timeout 05 is 5" bg explain g1 --timeout 05 -- --kind x
has "$OUT_FILE" "agent-[0-9a-f]{16} run .*--timeout 5 " "... passed as 5"
printf '[box gp]\nhost = %s\nport = %s\nrepo = /root/repo\ngate = gate.sh\ngpus = 0-3\nrequire_gpu = no\n' \
  "$BG_BLACKHOLE_ADDR" "$BG_BLACKHOLE_PORT" >>"$INI"
expect_rc 0 "explain: --gpu 00 is GPU 0" bg explain gp --gpu 00 -- x
has "$OUT_FILE" "run .*--gpus 0 " "... passed as 0"
expect_rc 0 "explain: --gpu 3,01 is GPUs 1 and 3" bg explain gp --gpu 3,01 -- x
has "$OUT_FILE" "run .*--gpus 1,3 " "... passed as 1,3"
for v in '0,0' '0-2,1' '3,0-3'; do
  expect_rc 2 "--gpu $v names a GPU twice: refused" bg explain gp --gpu "$v" -- x
  has "$ERR_FILE" "explain: --gpu $v: GPU [0-9] is named twice" "... naming the GPU"
done
for v in ' 0' '0 ' '1, 2' $'0\t' '' ',' '0,' '+1' '-1' '0x1' '1e0' '4'; do
  expect_rc 2 "--gpu '$v' refused" bg explain gp --gpu "$v" -- x
done

# --- a passing run: agent installed on demand, lines live, env translated ---
expect_rc 0 "a passing gate exits 0 (-v: the gate's stdout lines too)" bg run g1 -v -- --kind gemv_m1 --shape q_b --configs q_b --decode-m1 --mode pass
has "$ERR_FILE" "agent installed \(prebuilt\)" "the agent was installed on first use"
has "$OUT_FILE" '^argv: \[--kind\] \[gemv_m1\] \[--shape\] \[q_b\] \[--configs\] \[q_b\] \[--mode\] \[pass\]$' "the gate got exactly the allowed arguments"
has "$OUT_FILE" 'MPK_GG_DECODE_M1=1 ' "--decode-m1 arrived as MPK_GG_DECODE_M1=1"
has "$OUT_FILE" 'PYTHONUNBUFFERED=1 cwd=/root/repo' "the gate ran in the repo with PYTHONUNBUFFERED=1"
has "$OUT_FILE" '^FAITHFUL_RESULT \{.*"verdict":"PASS_GATE"\}$' "the result line arrived verbatim"
has "$ERR_FILE" 'progress line on stderr' "stderr lines arrive on stderr"
has "$OUT_FILE" '^PASS_GATE +slowCTA 4.000 us \(baseline 5.200 us, ratio 1.300\)' "boxgate judged the result itself (its line on stdout)"
ls "$BG_HOST_1_ROOT"/.cache/boxgate/agent-* >/dev/null 2>&1 && ok "the agent is content-addressed under ~/.cache/boxgate" || not_ok "agent path"
expect_rc 0 "a second run finds the agent present" bg run g1 -- --mode pass
hasnt "$ERR_FILE" "agent installed" "no second install"
expect_rc 0 "bootstrap reports the agent present" bg bootstrap --boxes g1,g2
has "$OUT_FILE" '^g1: agent present' "bootstrap: present on g1"
has "$OUT_FILE" '^g2: agent installed \(prebuilt\)' "bootstrap: installed on g2"
expect_rc 0 "bootstrap --force reinstalls" bg bootstrap --force --boxes g2
has "$OUT_FILE" '^g2: agent installed' "bootstrap --force installed again"

# --- verdicts ---
expect_rc 1 "BELOW_BAR exits 1" bg run g1 -- --mode below
expect_rc 125 "a result that lies about its numbers is INVALID" bg run g1 -- --mode liar
has "$OUT_FILE" '^INVALID: .*cos' "the lie is named (the result's line, on stdout)"
expect_rc 125 "an unparseable result line is INVALID" bg run g1 -v -- --mode garbage
has "$OUT_FILE" 'FAITHFUL_RESULT \{"verdict": PASS_GATE oops' "the bad line is kept verbatim"
expect_rc 125 "a gate without a result line is INVALID" bg run g1 -- --mode none
expect_rc 1 "a failing gate exits 1" bg run g1 -- --mode fail
expect_rc 0 "--json" bg run --json g1 -- --mode pass
python3 - "$OUT_FILE" <<'PY' && ok "--json: gate lines and the judged result are JSON" || not_ok "--json output"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
res = [e for e in ev if e.get('event') == 'result']
assert res and res[0]['verdict'] == 'PASS_GATE' and res[0]['result']['candidate']['cos'] == 0.9999, ev
assert any(e.get('stream') == 'stdout' and e.get('line', '').startswith('argv:') for e in ev)
PY

# --- the watchdog over ssh: hangs ---
expect_rc 124 "a sleeping gate times out (exit 124)" bg run g1 -v --timeout 2 -- --mode sleep --tag 1
has "$OUT_FILE" '"verdict":"TIMEOUT_HANG"' "a TIMEOUT_HANG line was printed"
wait_gone 'sleep.1001\.5' && ok "the sleeping gate is gone" || not_ok "sleep 1001.5 survived"
expect_rc 124 "a gate ignoring SIGTERM times out" bg run g1 --timeout 2 -- --mode ignore-term --tag 2
wait_gone 'sleep.102\.25' && ok "the SIGTERM-ignoring gate is gone" || not_ok "ignore-term survived"
expect_rc 124 "a gate whose children escaped (setsid, double fork) times out" bg run g1 --timeout 2 -- --mode escape --tag 3
wait_gone 'sleep.(2003|3003|4003)\.5' && ok "setsid grandchild and double-forked child are gone" || not_ok "escapees survived"
expect_rc 124 "MPK_GATE_TIMEOUT_S through the shim sets the watchdog" bg run g1 -v -- --mode sleep --tag 4 --gate-timeout 02
has "$OUT_FILE" "MPK_GATE_TIMEOUT_S=2 " "... and the gate was given 2, not 02"
wait_gone 'sleep.1004\.5' && ok "gate gone after the shim-given timeout" || not_ok "sleep 1004.5 survived"

# --- the client goes away ---
"$BOXGATE" --config "$INI" run g1 --timeout 300 -- --mode sleep --tag 5 >"$BG_TMP/k.out" 2>&1 &
cpid=$!
wait_running 'sleep.1005\.5' && ok "SIGKILLed client: the gate was running first" || not_ok "SIGKILLed client: the gate never started"
kill -KILL $cpid; wait $cpid 2>/dev/null
gone_in_bound "SIGKILLed client" 'sleep.1005\.5' "$(now_ms)"
"$BOXGATE" --config "$INI" run g2 --timeout 300 -- --mode sleep --tag 6 >"$BG_TMP/l.out" 2>&1 &
cpid=$!
wait_running 'sleep.1006\.5' && ok "cut link: the gate was running first" || not_ok "cut link: the gate never started"
"$HOSTS" link "$D" 2 down
gone_in_bound "cut link" 'sleep.1006\.5' "$(now_ms)"
wait $cpid; rc=$?
[ "$rc" = 3 ] && ok "the client reports the lost connection (exit 3)" || not_ok "client exit $rc after the cut"
"$HOSTS" link "$D" 2 up
"$BOXGATE" --config "$INI" run g1 --timeout 300 -- --mode sleep --tag 7 >"$BG_TMP/c.out" 2>&1 &
cpid=$!
wait_running 'sleep.1007\.5' && ok "Ctrl-C: the gate was running first" || not_ok "Ctrl-C: the gate never started"
kill -INT $cpid; wait $cpid; rc=$?
[ "$rc" = 130 ] && ok "Ctrl-C: the client exits 130" || not_ok "Ctrl-C: exit $rc"
wait_gone 'sleep.1007\.5' 8 && ok "Ctrl-C: the remote gate was killed" || not_ok "Ctrl-C: gate survived"

# --- two clients, one slot ---
"$BOXGATE" --config "$INI" run g1 -v -- --mode slow >"$BG_TMP/first.out" 2>&1 &
first=$!
wait_for "$BG_TMP/first.out" '^argv' 30
expect_rc 1 "a second client on a held slot is refused" bg run g1 -v -- --mode pass
has "$ERR_FILE" 'busy: held by [^ ]+@[^ ]+ pid [0-9]+ since' "the refusal names the holder's tag, pid and start time"
hasnt "$OUT_FILE" '^argv' "the second gate never started"
touch "$BG_HOST_1_ROOT/release-0"
wait $first; rc=$?
rm -f "$BG_HOST_1_ROOT/release-0"
[ "$rc" = 0 ] && ok "the first client's gate finished normally" || not_ok "first client exit $rc"
expect_rc 0 "the slot is free again afterwards" bg run g1 -- --mode pass

# --- the summary names the device the result names ---
cat >"$BG_HOST_1_ROOT/repo/dev_gate.sh" <<'EOF2'
#!/bin/sh
# dev_gate.sh [--dev DEVICE] [--name DEVICE_NAME]: a passing result naming them.
dev='' name=''
while [ $# -gt 0 ]; do case $1 in --dev) dev=$2; shift ;; --name) name=$2; shift ;; esac; shift; done
extra=''
[ -n "$dev" ] && extra="$extra,\"device\":\"$dev\""
[ -n "$name" ] && extra="$extra,\"device_name\":\"$name\""
side() { printf '{"slowCTA_us":%s,"wall_us":%s,"sumCTA_us":%s,"cos":0.9999,"status":"PASS"}' "$1" "$1" "$1"; }
printf 'FAITHFUL_RESULT {"kind":"k","shape":"q_b","num_workers":8,"candidate":%s,"baseline_in_tree":%s,"slowCTA_ratio_base_over_cand":1.25,"verdict":"PASS_GATE"%s}\n' \
  "$(side 4.0)" "$(side 5.0)" "$extra"
EOF2
chmod +x "$BG_HOST_1_ROOT/repo/dev_gate.sh"
printf '\n[box gd]\nhost = h1\nrepo = /root/repo\ngate = dev_gate.sh\nrequire_gpu = no\nallow = --dev --name\n' >>"$INI"
expect_rc 0 "a result on a GPU" bg run gd -- --dev cuda --name 'NVIDIA H200 (compute 9.0)'
has "$OUT_FILE" '^PASS_GATE  slowCTA .* cos [0-9.]+  on NVIDIA H200 \(compute 9\.0\)$' "the result line ends with the GPU's name"
expect_rc 0 "a result on the CPU twin" bg run gd -- --dev cpu --name 'AMD EPYC 7B13'
has "$OUT_FILE" '^PASS_GATE  slowCTA .*  on CPU twin \(AMD EPYC 7B13\)$' "the CPU twin, with its CPU model"
expect_rc 0 "the CPU twin without a model" bg run gd -- --dev cpu
has "$OUT_FILE" '^PASS_GATE  slowCTA .*  on CPU twin$' "the CPU twin alone"
expect_rc 0 "a result naming no device" bg run gd
hasnt "$OUT_FILE" ' on ' "no device: the line names none"
expect_rc 0 "--repeat 3 on a GPU" bg run gd --repeat 3 -- --dev cuda --name 'NVIDIA H200'
has "$OUT_FILE" '^PASS_GATE  median of 3: .*  -- NVIDIA H200, 8 workers$' "the repeat summary names the GPU"
expect_rc 0 "--repeat 3 on the CPU twin" bg run gd --repeat 3 -- --dev cpu --name 'AMD EPYC 7B13'
has "$OUT_FILE" '^PASS_GATE  median of 3: .*  -- CPU twin \(AMD EPYC 7B13\), 8 workers$' "the repeat summary names the CPU twin and its model"
finish
