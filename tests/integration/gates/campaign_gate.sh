#!/bin/bash
# A deterministic gate for campaign tests: sleeps --sleep S (default 0.5), then prints a
# FAITHFUL_RESULT whose numbers follow from its arguments, so a test knows every expected
# value. The in-tree baseline's slowCTA is 100 + 10 x (the shape's place in SHAPES) +
# 1000 / num_workers us; a candidate runs --speed F times faster (a kernel file named by
# kernel_paths, kernels/k.cuh, may hold "speed F" instead); --baseline measures the
# in-tree kernel as the candidate. --hang SHAPE:NW hangs that point only; --poison
# SHAPE:NW kills the gate's agent (its parent) at that point, and so does every run on a
# box whose ~/poison_box exists; --until NAME waits, after its sleep, until ~/NAME exists.
# Each run logs "start|end SHAPE NW SPEED SLOT EPOCH" to ~/campaign.log (a start line in a
# Slurm step adds its SLURM_JOB_ID; a poisoned run "poison SHAPE NW SLOT EPOCH").
# Campaign tests run it hundreds of times: bash, for a clock ($EPOCHREALTIME) and a pause
# (pause, below) that fork no date and no sleep.
shape=q_b nw=8 speed=1 sleep_s=0.5 hang=- poison=- baseline=0 until=
while [ $# -gt 0 ]; do
  case $1 in
    --shape) shape=$2; shift ;;
    --num-workers) nw=$2; shift ;;
    --speed) speed=$2; shift ;;
    --sleep) sleep_s=$2; shift ;;
    --hang) hang=$2; shift ;;
    --poison) poison=$2; shift ;;
    --until) until=$2; shift ;;
    --baseline) baseline=1 ;;
    --configs|--kind) shift ;;
  esac
  shift
done
if [ -f kernels/k.cuh ] && [ "$baseline" = 0 ]; then
  # the rest of its "speed " line(s), as sed -n 's/^speed //p' prints them
  speed='' nl=''
  while IFS= read -r l || [ -n "$l" ]; do
    [[ $l == 'speed '* ]] && { speed+=$nl${l#speed }; nl=$'\n'; }
  done <kernels/k.cuh
fi
[ "$baseline" = 1 ] && speed=1
slot=${CUDA_VISIBLE_DEVICES-cpu}
# now: seconds since the epoch, '.' before the fraction whatever the locale
now() { NOW=${EPOCHREALTIME/,/.}; }
now; echo "start $shape $nw $speed $slot $NOW${SLURM_JOB_ID:+ $SLURM_JOB_ID}" >>"$HOME/campaign.log"
if [ "$poison" = "$shape:$nw" ] || [ -f "$HOME/poison_box" ]; then
  now; echo "poison $shape $nw $slot $NOW" >>"$HOME/campaign.log"
  kill -KILL "$PPID"
  exit 1
fi
if [ "$hang" = "$shape:$nw" ]; then
  exec sleep 3600.25
fi
# pause S: a read that times out on fd 9, a pty master whose slave nobody opens (no process,
# no file); sleep where there is no /dev/ptmx.
if { exec 9<>/dev/ptmx; } 2>/dev/null; then pause() { read -r -t "$1" -u 9 _; }; else pause() { sleep "$1"; }; fi
pause "$sleep_s"
if [ -n "$until" ]; then
  while [ ! -e "$HOME/$until" ]; do pause 0.05; done
fi
exec 9<&-
SHAPES=${SHAPES:-"q_b kv_a o_proj w13 w2"}
awk -v shape="$shape" -v nw="$nw" -v speed="$speed" -v shapes="$SHAPES" 'BEGIN {
  n = split(shapes, s, " "); k = 0
  for (i = 1; i <= n; i++) if (s[i] == shape) k = i
  b = 100 + 10 * k + 1000 / nw; c = b / speed
  v = speed >= 1 ? "PASS_GATE" : "BELOW_BAR"
  printf "FAITHFUL_RESULT {\"kind\":\"fake\",\"shape\":\"%s\",\"num_workers\":%d,", shape, nw
  printf "\"candidate\":{\"slowCTA_us\":%.3f,\"wall_us\":%.3f,\"sumCTA_us\":%.3f,\"cos\":0.9999,\"status\":\"PASS\"},", c, c * 1.2, b * 100
  printf "\"baseline_in_tree\":{\"slowCTA_us\":%.3f,\"wall_us\":%.3f,\"sumCTA_us\":%.3f,\"cos\":1.0,\"status\":\"PASS\"},", b, b * 1.2, b * 100
  printf "\"slowCTA_ratio_base_over_cand\":%.4f,\"verdict\":\"%s\"}\n", speed, v
}'
now; echo "end $shape $nw $speed $slot $NOW" >>"$HOME/campaign.log"
