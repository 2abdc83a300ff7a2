#!/bin/sh
# A stand-in gate for boxgate's run tests: --mode picks a behaviour, every other
# argument is echoed so the tests can see what crossed the shim.
mode=pass
tag=0
for a in "$@"; do
  case $prev in --mode) mode=$a ;; --tag) tag=$a ;; esac
  prev=$a
done
printf 'argv:'; printf ' [%s]' "$@"; echo
# (no command substitution: each costs the gate a process, and tests run it often)
echo "env: MPK_GG_DECODE_M1=${MPK_GG_DECODE_M1-unset} MPK_GATE_TIMEOUT_S=${MPK_GATE_TIMEOUT_S-unset} CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset} PYTHONUNBUFFERED=${PYTHONUNBUFFERED-unset} cwd=$PWD"
# result CANDIDATE(4 numbers) BASELINE(4 numbers) RATIO VERDICT: the result line, whole
result() {
  printf 'FAITHFUL_RESULT {"kind":"gemv_m1","shape":"q_b","num_workers":8,"candidate":%s,"baseline_in_tree":%s,"slowCTA_ratio_base_over_cand":%s,"verdict":"%s"}\n' \
    "{\"slowCTA_us\":$1,\"wall_us\":$2,\"sumCTA_us\":$3,\"cos\":$4,\"status\":\"PASS\"}" \
    "{\"slowCTA_us\":$5,\"wall_us\":$6,\"sumCTA_us\":$7,\"cos\":$8,\"status\":\"PASS\"}" "$9" "${10}"
}
case $mode in
  pass) echo "progress line on stderr" >&2; result 4.0 5.0 400 0.9999 5.2 6.1 402 1.0 1.3 PASS_GATE ;;
  below) result 6.0 7.0 400 0.9999 5.2 6.1 402 1.0 0.8667 BELOW_BAR ;;
  liar) result 4.0 5.0 400 0.2 5.2 6.1 402 1.0 1.3 PASS_GATE ;;
  garbage) echo 'FAITHFUL_RESULT {"verdict": PASS_GATE oops' ;;
  none) echo "no result here" ;;
  fail) echo "boom" >&2; exit 3 ;;
  sleep) echo $$ >"/tmp/bg-fake-$tag.pid"; exec sleep "100$tag.5" ;;
  ignore-term) trap '' TERM; while :; do sleep "10$tag.25"; done ;;
  escape) setsid sh -c "exec sleep 200$tag.5" & ( ( sleep "300$tag.5" & ) & ); sleep "400$tag.5" ;;
  hold) # holds its slot about 0.5 s, recording start and end on the box (t54)
    echo "start $tag ${CUDA_VISIBLE_DEVICES-cpu} $(date +%s.%N)" >>"$HOME/slot.log"
    sleep 0.5
    echo "end $tag ${CUDA_VISIBLE_DEVICES-cpu} $(date +%s.%N)" >>"$HOME/slot.log"
    result 4.0 5.0 400 0.9999 5.2 6.1 402 1.0 1.3 PASS_GATE ;;
  slow) # holds its slot until the test creates $HOME/release-TAG (60 s at most), then passes
    i=0
    while [ ! -e "$HOME/release-$tag" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
    result 4.0 5.0 400 0.9999 5.2 6.1 402 1.0 1.3 PASS_GATE ;;
esac
