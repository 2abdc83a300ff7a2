#!/usr/bin/env bash
# The demo gate (gate/demo/): the CPU twin and the launcher for real, the CUDA build where
# a GPU is usable (on a machine without one, that it says so and the launcher falls back).
# Nothing here is judged on speed (a bar any candidate clears, or one none can), so it runs
# beside other tests.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/wait.sh"
B=${BG_BUILD:-$BG_ROOT/build}
CPU=$B/boxgate-demo-gate-cpu
GATE=$B/boxgate-demo-gate
CUDA=$B/boxgate-demo-gate-cuda
[ -x "$CPU" ] && [ -x "$GATE" ] || skip_all "demo gate not built ($CPU, $GATE)"
command -v python3 >/dev/null 2>&1 || skip_all "no python3"
unset MPK_TEST_NUM_WORKERS BOXGATE_DEMO_GATE
# Speed is not under test (sanitizer builds run the candidate slower than the baseline):
# a bar any measured candidate clears, and the sloughing guard off, make PASS_GATE a
# statement about correctness alone where a test wants it.
ANY="--bar 0.01 --slough-tol 100"

# jq DESC EXPR: the last command printed exactly one FAITHFUL_RESULT line, a JSON object d
# for which the Python expression EXPR holds.
jq() {
	local desc=$1 expr=$2 out
	if out=$(python3 - "$OUT_FILE" "$expr" 2>&1 <<'EOF'
import json, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("FAITHFUL_RESULT ")]
if len(lines) != 1:
    sys.exit("want exactly one FAITHFUL_RESULT line, got %d" % len(lines))
d = json.loads(lines[0][len("FAITHFUL_RESULT "):])
if not eval("(" + sys.argv[2] + "\n)", {"d": d}):
    sys.exit("false: %s\n%s" % (sys.argv[2], json.dumps(d)[:1500]))
EOF
	); then ok "$desc"; else not_ok "$desc"; diag "$out"; fi
}

CONTRACT='(all(isinstance(d[o][f], (int, float)) and not isinstance(d[o][f], bool)
              for o in ("candidate", "baseline_in_tree")
              for f in ("slowCTA_us", "wall_us", "sumCTA_us", "cos"))
          and all(isinstance(d[o]["status"], str) for o in ("candidate", "baseline_in_tree"))
          and isinstance(d["slowCTA_ratio_base_over_cand"], (int, float))
          and d["verdict"] in ("PASS_GATE", "BELOW_BAR", "INVALID")
          and isinstance(d["kind"], str) and isinstance(d["shape"], str)
          and isinstance(d["num_workers"], int) and isinstance(d["device"], str)
          and d["timer_res_ns"] > 0 and "gbps" in d["candidate"] and "bw_frac" in d["candidate"])'

# --- baseline against candidate, for real ---
expect_rc 0 "cpu twin: candidate vs baseline on tiny passes" "$CPU" --shape tiny --num-workers 4 $ANY
jq "FAITHFUL_RESULT follows the contract" "$CONTRACT"
jq "both measured, both correct" \
	'd["candidate"]["status"] == "PASS" and d["baseline_in_tree"]["status"] == "PASS"
	 and d["candidate"]["cos"] >= 0.99 and d["baseline_in_tree"]["cos"] >= 0.99
	 and d["candidate"]["variant"] == "candidate" and d["baseline_in_tree"]["variant"] == "baseline"'
jq "labelled cpu, num_workers echoed, verdict PASS_GATE" \
	'd["device"] == "cpu" and d["backend"] == "cpu" and d["num_workers"] == 4 and d["verdict"] == "PASS_GATE"'
jq "ratio is baseline slowCTA over candidate slowCTA" \
	'abs(d["slowCTA_ratio_base_over_cand"] - d["baseline_in_tree"]["slowCTA_us"] / d["candidate"]["slowCTA_us"])
	 <= 1e-3 * d["slowCTA_ratio_base_over_cand"] + 1e-3'
jq "slowCTA <= wall and slowCTA <= sumCTA" \
	'all(d[o]["slowCTA_us"] <= d[o]["wall_us"] + 1e-3 and d[o]["slowCTA_us"] <= d[o]["sumCTA_us"] + 1e-3
	     for o in ("candidate", "baseline_in_tree"))'
has "$OUT_FILE" '^FAITHFUL_RESULT \{' "the line starts with FAITHFUL_RESULT {"

expect_rc 0 "fp8 weights with block scales pass" "$CPU" --shape tiny --dtype fp8 --num-workers 3 $ANY
jq "fp8: dtype echoed, cos >= 0.99 against the dequantised reference" \
	'd["dtype"] == "fp8" and d["candidate"]["cos"] >= 0.99 and d["baseline_in_tree"]["cos"] >= 0.99'

expect_rc 0 "--baseline measures the in-tree kernel as the candidate" "$CPU" --shape tiny --num-workers 2 --baseline $ANY
jq "--baseline: ratio exactly 1.0" \
	'd["slowCTA_ratio_base_over_cand"] == 1.0 and d["candidate"]["variant"] == "baseline" and d["verdict"] == "PASS_GATE"'

expect_rc 1 "a bar the candidate cannot reach: BELOW_BAR, exit 1" "$CPU" --shape tiny --num-workers 2 --bar 100
jq "BELOW_BAR stated" 'd["verdict"] == "BELOW_BAR"'

# --- the gate judges broken kernels itself ---
expect_rc 125 "stub variant (writes zeros) is INVALID, exit 125" "$CPU" --shape tiny --num-workers 4 --variant stub
jq "stub: cos 0, status FAIL, baseline still PASS" \
	'd["verdict"] == "INVALID" and d["candidate"]["cos"] == 0 and d["candidate"]["status"] == "FAIL"
	 and d["baseline_in_tree"]["status"] == "PASS"'
expect_rc 125 "drop-half-K variant is rejected by cos" "$CPU" --shape tiny --num-workers 4 --variant halfk
jq "half-K: cos far below 0.99 (about 1/sqrt 2), INVALID" \
	'0.5 < d["candidate"]["cos"] < 0.9 and d["verdict"] == "INVALID" and d["candidate"]["status"] == "FAIL"'
expect_rc 125 "drop-half-K is rejected for fp8 too" "$CPU" --shape tiny --dtype fp8 --num-workers 4 --variant halfk
jq "fp8 half-K: cos below 0.9" 'd["candidate"]["cos"] < 0.9 and d["verdict"] == "INVALID"'

# --- usage errors exit 2 and name the flag ---
usage_case() {
	local flagname=$1; shift
	expect_rc 2 "usage error: $*" "$CPU" --shape tiny "$@"
	has "$ERR_FILE" -- "$flagname" "  ... names $flagname"
	hasnt "$OUT_FILE" FAITHFUL_RESULT "  ... prints no result"
}
usage_case --num-workers --num-workers 0
usage_case --num-workers --num-workers abc
usage_case --shape --shape nope
usage_case --variant --variant nope
usage_case --dtype --dtype fp4
usage_case --kind --kind prefill
usage_case --iters --iters
usage_case --bogus --bogus
usage_case --configs --configs q_a
usage_case --split --split 2
expect_rc 0 "--configs equal to --shape is accepted" "$CPU" --shape tiny --configs tiny --num-workers 2 $ANY
expect_rc 0 "--kind gemv_m1 is the same task" "$CPU" --kind gemv_m1 --shape tiny --num-workers 2 --iters 2 $ANY
jq "kind echoed" 'd["kind"] == "gemv_m1"'

# --- worker count from the environment ---
MPK_TEST_NUM_WORKERS=3 expect_rc 0 "MPK_TEST_NUM_WORKERS sets the grid" "$CPU" --shape tiny --iters 2 $ANY
jq "num_workers from MPK_TEST_NUM_WORKERS" 'd["num_workers"] == 3'
MPK_TEST_NUM_WORKERS=3 expect_rc 0 "--num-workers wins over the environment" "$CPU" --shape tiny --num-workers 5 --iters 2 $ANY
jq "num_workers from the flag" 'd["num_workers"] == 5'
MPK_TEST_NUM_WORKERS=x expect_rc 2 "a bad MPK_TEST_NUM_WORKERS is a usage error" "$CPU" --shape tiny
has "$ERR_FILE" MPK_TEST_NUM_WORKERS "  ... names MPK_TEST_NUM_WORKERS"

# --- inputs: fresh per run, reproducible by seed ---
expect_rc 0 "seeded run" "$CPU" --shape tiny --num-workers 2 --seed 7 --iters 2 $ANY
cos1=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().split(" ",1)[1])["candidate"]["cos"])' "$OUT_FILE")
expect_rc 0 "same seed again" "$CPU" --shape tiny --num-workers 2 --seed 7 --iters 2 $ANY
jq "same seed, same inputs: same cos" "d['seed'] == 7 and d['candidate']['cos'] == $cos1"
expect_rc 0 "unseeded run" "$CPU" --shape tiny --num-workers 2 --iters 2 $ANY
jq "unseeded runs draw fresh inputs" "d['seed'] != 7"

# --- help hides the hang variant; the hang variant hangs until killed ---
expect_rc 0 "--help" "$CPU" --help
has "$OUT_FILE" -- "--variant" "help lists --variant"
hasnt "$OUT_FILE" hang "help does not list the hang variant"
expect_rc 0 "--list-shapes" "$CPU" --list-shapes
has "$OUT_FILE" "^q_b +N=24576 +K=1536" "registry: q_b is 1536 -> 24576"
has "$OUT_FILE" "^kv_a +N=576 +K=7168" "registry: kv_a is 7168 -> 576"
# Killed once it has said it spins (a fixed 2 s could end it before it got there on a
# loaded machine), and still running then.
"$CPU" --shape tiny --num-workers 2 --variant hang >"$OUT_FILE" 2>"$ERR_FILE" &
hpid=$!
if wait_for "$ERR_FILE" "spinning until killed" 120; then ok "hang variant: says it spins until killed, on stderr"
else not_ok "hang variant: never said it spins"; diag "$(cat "$ERR_FILE")"; fi
sleep 0.5
if kill -TERM "$hpid" 2>/dev/null; then ok "hang variant: still running half a second later, until killed"
else not_ok "hang variant: ended by itself"; fi
wait "$hpid" 2>/dev/null

# --- the launcher: what boxgate's local box runs ---
cuda_usable=0
if [ -x "$CUDA" ]; then
	expect_rc_any=0
	"$CUDA" --probe >"$OUT_FILE" 2>"$ERR_FILE" || expect_rc_any=$?
	if [ "$expect_rc_any" = 0 ]; then
		cuda_usable=1
		ok "cuda build: a GPU is usable here"
	elif [ "$expect_rc_any" = 69 ]; then
		ok "cuda build without a usable GPU: --probe exits 69"
		expect_rc 69 "cuda build without a GPU: a gate run exits 69" "$CUDA" --shape tiny --num-workers 2
		hasnt "$OUT_FILE" FAITHFUL_RESULT "  ... and prints no result (the launcher falls back)"
		has "$ERR_FILE" "no usable CUDA device" "  ... saying why on stderr"
	else
		not_ok "cuda build --probe exited $expect_rc_any (want 0 or 69)"
		diag "$(cat "$ERR_FILE")"
	fi
else
	ok "# SKIP no cuda build (no nvcc when built)"
fi
rc=0
"$GATE" --kind demo --shape q_b --num-workers 8 --iters 3 --warmup 1 >"$OUT_FILE" 2>"$ERR_FILE" || rc=$?
if [ "$rc" = 0 ] || [ "$rc" = 1 ]; then ok "launcher runs a short q_b job at 8 workers: exit $rc"
else not_ok "launcher runs a short q_b job at 8 workers: exit $rc"; diag "$(head -c 2000 "$ERR_FILE")"; fi
jq "launcher: contract holds" "$CONTRACT"
jq "launcher: exit code matches the verdict" "d['verdict'] == ('PASS_GATE' if $rc == 0 else 'BELOW_BAR')"
if [ "$cuda_usable" = 1 ]; then
	jq "launcher picked the CUDA build" 'd["backend"] == "cuda" and d["device"] != "cpu"'
else
	jq "launcher fell back to the CPU twin, labelled cpu" 'd["backend"] == "cpu" and d["device"] == "cpu"'
fi
BOXGATE_DEMO_GATE=cpu expect_rc 0 "BOXGATE_DEMO_GATE=cpu forces the twin" "$GATE" --shape tiny --num-workers 2 --iters 2 $ANY
jq "forced twin is labelled cpu" 'd["device"] == "cpu"'
BOXGATE_DEMO_GATE=gpu expect_rc 2 "a bad BOXGATE_DEMO_GATE is a usage error" "$GATE" --shape tiny
expect_rc 125 "launcher passes the verdict's exit code through" "$GATE" --shape tiny --num-workers 2 --variant stub

# --- the CUDA build itself, where a GPU is usable ---
if [ "$cuda_usable" = 1 ]; then
	expect_rc 0 "cuda: candidate vs baseline on tiny" "$CUDA" --shape tiny --num-workers 8 --iters 20 $ANY
	jq "cuda: contract, correct, device named" "$CONTRACT"' and d["backend"] == "cuda" and d["candidate"]["cos"] >= 0.99'
	expect_rc 125 "cuda: stub is INVALID" "$CUDA" --shape tiny --num-workers 8 --variant stub --iters 5
	expect_rc 125 "cuda: drop-half-K is INVALID" "$CUDA" --shape tiny --num-workers 8 --variant halfk --iters 5
	jq "cuda: half-K cos below 0.9" 'd["candidate"]["cos"] < 0.9'
	expect_rc 0 "cuda: fp8" "$CUDA" --shape tiny --num-workers 8 --dtype fp8 --iters 5 $ANY
fi
finish
