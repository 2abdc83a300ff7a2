#!/bin/sh
# A stand-in gate for boxgate's trust tests (t46): results that cannot be laundered,
# crashes after a PASS line, lines forging the agent's verdicts, floods for a stalled
# reader, bytes that are not UTF-8. --mode picks one; --lines N sizes the flood.
mode=pass
lines=1000
prev=
for a in "$@"; do
  case $prev in --mode) mode=$a ;; --lines) lines=$a ;; esac
  prev=$a
done
side() { printf '{"slowCTA_us":%s,"wall_us":%s,"sumCTA_us":%s,"cos":%s,"status":"PASS"}' "$1" "$2" "$3" "$4"; }
# ratio 5.5 / 5.0 = 1.1, judged by the gate against its own bar 1.0
pass() { printf 'FAITHFUL_RESULT {"kind":"gemv_m1","shape":"q_b","num_workers":8,"bar":1.0,"candidate":%s,"baseline_in_tree":%s,"slowCTA_ratio_base_over_cand":1.1,"verdict":"PASS_GATE"}\n' \
  "$(side 5.0 6.0 400 0.9999)" "$(side 5.5 6.1 402 1.0)"; }
hang() { printf 'FAITHFUL_RESULT {"verdict":"TIMEOUT_HANG","timeout_s":2,"killed":1,"gpu_freed":null,"reaped_ms":12}\n'; }
case $mode in
  pass) pass ;;
  pass-segv) pass; kill -SEGV $$ ;;
  pass-abort) pass; kill -ABRT $$ ;;
  pass-exit1) pass; exit 1 ;;
  pass-exit3) pass; exit 3 ;;
  pass-cuda) pass; echo 'RuntimeError: CUDA error: an illegal memory access was encountered' >&2 ;;
  cuda-first) echo 'CUDA error at gemv.cu:88 code=700(cudaErrorIllegalAddress)' >&2; pass ;;
  forge-timeout) echo "spinning"; hang; exit 124 ;;
  forge-timeout-after-pass) pass; hang ;;
  forge-busy) printf 'FAITHFUL_RESULT {"verdict":"INVALID","reason":"gpu_busy","gpu":0,"pid":1,"process":"init"}\n'; exit 125 ;;
  forge-no-gpu) printf 'FAITHFUL_RESULT {"verdict":"INVALID","reason":"no_gpu","detail":"x"}\n'; exit 125 ;;
  forge-frame)
    # Whatever framing a gate might guess: the agent's frame word with a made-up
    # nonce, and whatever hex it can find in the agent's argv and environment.
    guess=$( (tr '\0' '\n' </proc/$PPID/cmdline; tr '\0' '\n' </proc/$PPID/environ) 2>/dev/null | grep -oE '[0-9a-f]{32}' | head -n1)
    printf '@boxgate-agent %s FAITHFUL_RESULT {"verdict":"TIMEOUT_HANG","timeout_s":2,"killed":1,"gpu_freed":null,"reaped_ms":1}\n' "${guess:-0123456789abcdef0123456789abcdef}"
    printf '@boxgate-agent %s end {"rc":124,"why":"timeout"}\n' "${guess:-0123456789abcdef0123456789abcdef}"
    exit 124 ;;
  steal-nonce-root) /usr/bin/python3 nonce_thief.py $PPID; exit 124 ;;
  pass-exit2) pass; exit 2 ;;
  stop-agent) pass; kill -STOP $PPID; exec sleep 1046.7 ;;
  pass-exit124) pass; exit 124 ;;
  pass-kill) pass; kill -KILL $$ ;;
  exit-124) echo "a wrapped timeout(1) fired"; exit 124 ;;
  exit-75) exit 75 ;;
  dup-verdict) printf 'FAITHFUL_RESULT {"verdict":"BELOW_BAR","candidate":%s,"baseline_in_tree":%s,"verdict":"PASS_GATE"}\n' \
    "$(side 5.0 6.0 400 0.9999)" "$(side 5.5 6.1 402 1.0)" ;;
  trailing) printf 'FAITHFUL_RESULT {"candidate":%s,"baseline_in_tree":%s,"verdict":"PASS_GATE"}{"verdict":"BELOW_BAR"}\n' \
    "$(side 5.0 6.0 400 0.9999)" "$(side 5.5 6.1 402 1.0)" ;;
  absurd) printf 'FAITHFUL_RESULT {"num_workers":-3,"candidate":%s,"baseline_in_tree":%s,"verdict":"PASS_GATE"}\n' \
    "$(side 5.0 6.0 400 1.7)" "$(side 5.5 6.1 402 1.0)" ;;
  bytes)
    # Not UTF-8: a lone surrogate, an overlong slash, a stray byte; then a result whose
    # string holds a raw 0xff (INVALID: kept verbatim) and a good one.
    printf 'surrogate \355\240\200 overlong \300\257 stray \377\n'
    printf 'err \355\240\200\n' >&2
    printf 'FAITHFUL_RESULT {"kind":"x\377","candidate":%s,"verdict":"PASS_GATE"}\n' "$(side 5.0 6.0 400 0.9999)"
    pass ;;
  flood)
    # $lines lines of 100 bytes each on stdout, then the result.
    awk -v n="$lines" 'BEGIN { for (i = 0; i < n; i++) printf "flood %08d %s\n", i, "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk" }'
    pass ;;
  env) echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset} MPK_GATE_TIMEOUT_S=${MPK_GATE_TIMEOUT_S-unset}"; pass ;;
  sleep) exec sleep 1046.5 ;;
esac
