#!/usr/bin/env bash
# 40 jobs of a 0.5 s fake gate over the 4 fake GPUs of a real single-node Slurm inside test
# host h1 (tests/slurm/cluster): boxgate campaign on a Slurm box (max_jobs = 4) against plain
# srun on the login node, one job after another and all 40 at once (Slurm queues what does not
# fit), and against the ideal (40 x the gate's own time / 4 GPUs). Also what Slurm adds per
# job: one srun of the gate against the gate alone.
source "$(dirname "$0")/lib.sh"
JOBS=40
GPUS=4
CLUSTER=$BG_ROOT/tests/slurm/cluster
GATE=$BG_ROOT/tests/integration/gates/campaign_gate.sh

tool_campaign() { "$BOXGATE" --config "$INI" campaign "$BENCH_TMP/b.ini" --plain; }
bench_prep_campaign() { rm -f "$BENCH_TMP/b.results.jsonl"; }
on_login() { ssh -F "$BG_SSH_CONFIG" h1 "export SLURM_CONF=$SC; cd /root/repo; $1"; }
tool_srunseq() { on_login "for i in \$(seq $JOBS); do srun --quiet --gres=gpu:1 ./gate.sh --sleep 0.5 >/dev/null || exit 1; done"; }
tool_srunpar() { on_login "for i in \$(seq $JOBS); do srun --quiet --gres=gpu:1 ./gate.sh --sleep 0.5 >/dev/null 2>&1 & done; wait"; }
bench_label campaign "boxgate campaign (Slurm box, max_jobs 4)"
bench_label srunseq "srun, one job after another"
bench_label srunpar "srun, all 40 at once"
TOOLS="campaign srunseq srunpar"

bench_up_delayed 1 0
SC=$("$CLUSTER" up "$BG_HOSTS_DIR" 1 "$GPUS") || { echo "bench: no Slurm cluster (is Slurm installed?)" >&2; exit 1; }
trap '"$CLUSTER" down "$BG_HOSTS_DIR" >/dev/null 2>&1; _bench_cleanup' EXIT
install -m 755 "$GATE" "$BG_HOST_1_ROOT/repo/gate.sh"
INI=$BENCH_TMP/slurm.ini
{
  cat "$BG_CONFIG"
  printf '\n[box sl]\nhost = h1\nscheduler = slurm\nslurm_conf = %s\nmax_jobs = %d\n' "$SC" "$GPUS"
  printf 'repo = /root/repo\ngate = gate.sh\nrequire_gpu = no\nallow = --kind --shape --configs --num-workers --sleep --baseline --speed\n'
  printf '\n[pool s]\nslots = sl\n'
} >"$INI"
# 5 shapes x 8 worker counts = 40 jobs
printf '[campaign b]\npool = s\ngate_args = --kind fake --sleep 0.5\nshapes = q_b kv_a o_proj w13 w2\nnum_workers = 8 16 32 64 66 128 132 136\ncandidates = baseline\n' >"$BENCH_TMP/b.ini"
# the gate alone, and one srun of it, on the login node: medians of 5
median5() { sort -g | awk '{ v[NR] = $1 } END { printf "%.3f", v[3] }'; }
GATE_S=$(on_login 'for i in 1 2 3 4 5; do s=$(date +%s.%N); ./gate.sh --sleep 0.5 >/dev/null; e=$(date +%s.%N); echo "$s $e"; done' | awk '{ print $2 - $1 }' | median5)
SRUN_S=$(on_login 'for i in 1 2 3 4 5; do s=$(date +%s.%N); srun --quiet --gres=gpu:1 ./gate.sh --sleep 0.5 >/dev/null; e=$(date +%s.%N); echo "$s $e"; done' | awk '{ print $2 - $1 }' | median5)
bench_measure 0ms "$BENCH_RUNS" $TOOLS

bench_table "$JOBS jobs of a 0.5 s fake gate on $GPUS fake GPUs of one Slurm node: makespan, median of $BENCH_RUNS runs, seconds" 0ms $TOOLS
printf '\nagainst the ideal (%d x the gate'"'"'s own time / %d GPUs = %s s)\n' "$JOBS" "$GPUS" "$(awk -v g="$GATE_S" -v j="$JOBS" -v n="$GPUS" 'BEGIN { printf "%.3f", j * g / n }')"
for t in $TOOLS; do
  x=${BENCH_MED[$t@0ms]:-}
  [ -n "$x" ] && printf '  %-42s %10s\n' "${BENCH_LABEL[$t]}" "$(awk -v x="$x" -v g="$GATE_S" -v j="$JOBS" -v n="$GPUS" 'BEGIN { printf "%.2fx", x / (j * g / n) }')"
done
printf '\nratios\n'
bench_ratio "srun all at once / boxgate campaign" srunpar campaign 0ms
bench_ratio "srun one after another / boxgate campaign" srunseq campaign 0ms
printf '\nper job, seconds: the gate alone %s, one srun of it %s: Slurm adds %s s\n' "$GATE_S" "$SRUN_S" "$(awk -v a="$SRUN_S" -v b="$GATE_S" 'BEGIN { printf "%.3f", a - b }')"
bench_note "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
bench_notes
