#!/usr/bin/env bash
# A campaign's makespan: 40 jobs of a 0.5 s fake gate over 8 test hosts (one slot each) at
# an added one-way delay of 0 and 10 ms, against the ideal (jobs x gate time / slots) and a
# hand-kept script (one ssh per job, one loop per host, all hosts in parallel). Also the
# scheduling overhead per job in round trips, from the campaign's own records: the time
# between one job's end and the next job's end on a slot, less the gate's own time.
# Target: within 1.1x of the ideal; under 2 round trips per job once connections are up.
source "$(dirname "$0")/lib.sh"
N=8
JOBS=40
DELAYS=${BENCH_DELAYS:-0 10}
GATE=$BG_ROOT/tests/integration/gates/campaign_gate.sh
declare -A GATE_S OVER SPAN

bench_prep_campaign() { rm -f "$BENCH_TMP/b.results.jsonl"; }
tool_campaign() { "$BOXGATE" --config "$INI" campaign "$BENCH_TMP/b.ini" --plain; }
# the script users keep today: per host, its jobs one after the other over ssh
tool_script() {
  local i
  for i in $(seq 1 "$N"); do
    (
      for k in $(seq "$i" "$N" "$JOBS"); do
        ssh -F "$BG_SSH_CONFIG" "h$i" "cd repo && ./gate.sh --kind fake --sleep 0.5 --shape q_b --num-workers $k" >/dev/null || exit 1
      done
    ) &
  done
  wait
}
bench_label campaign "boxgate campaign (8 slots, 40 jobs)"
bench_label script "ssh per job, a loop per host"
TOOLS="campaign script"
# BENCH_BASELINE=PATH: another boxgate binary (an earlier commit's) side by side, with
# its own copy of the campaign under another name (so its own results file).
bench_prep_campbase() { rm -f "$BENCH_TMP/base.results.jsonl"; }
tool_campbase() { "$BENCH_BASELINE" --config "$INI" campaign "$BENCH_TMP/base.ini" --plain; }
bench_label campbase "the baseline binary's campaign"
[ -n "${BENCH_BASELINE:-}" ] && TOOLS="$TOOLS campbase"

keys=''
for d in $DELAYS; do
  key="${d}ms"
  keys="$keys $key"
  bench_up_delayed "$N" "$d"
  INI=$BENCH_TMP/campaign.ini
  cat "$BG_CONFIG" >"$INI"
  slots=''
  for i in $(seq 1 "$N"); do
    install -m 755 "$GATE" "$(eval echo "\$BG_HOST_${i}_ROOT")/repo/gate.sh"
    printf '\n[box c%d]\nhost = h%d\nrepo = /root/repo\ngate = gate.sh\nrequire_gpu = no\nallow = --kind --shape --configs --num-workers --sleep --baseline --speed\n' \
      "$i" "$i" >>"$INI"
    slots+="${slots:+, }c$i"
  done
  printf '\n[pool b]\nslots = %s\n' "$slots" >>"$INI"
  # 5 shapes x 4 worker counts x 2 candidates = 40 jobs
  printf '[campaign b]\npool = b\ngate_args = --kind fake --sleep 0.5\nshapes = q_b kv_a o_proj w13 w2\nnum_workers = 8 64 128 136\ncandidates = baseline fast\ncandidate.fast = --speed 1.25\n' \
    >"$BENCH_TMP/b.ini"
  sed 's/^\[campaign b\]/[campaign base]/' "$BENCH_TMP/b.ini" >"$BENCH_TMP/base.ini"
  # the gate's own time on a box, without boxgate: the ideal's unit
  GATE_S[$key]=$("$BG_HOSTS_TOOL" exec "$BG_HOSTS_DIR" 1 sh -c \
    'cd /root/repo && for i in 1 2 3 4 5; do s=$(date +%s.%N); ./gate.sh --sleep 0.5 >/dev/null; e=$(date +%s.%N); echo "$s $e"; done' |
    awk '{ print $2 - $1 }' | sort -g | awk '{ v[NR] = $1 } END { printf "%.3f", v[3] }')
  bench_measure "$key" "$BENCH_RUNS" $TOOLS
  # per-slot spacing of jobs in the last run's records
  OVER[$key]=$(python3 - "$BENCH_TMP/b.results.jsonl" "${GATE_S[$key]}" <<'PY'
import json, sys
from datetime import datetime
gate = float(sys.argv[2])
t = lambda s: datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
slots = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    slots.setdefault(r["box"], []).append((t(r["start"]), t(r["end"])))
steps = []
for v in slots.values():
    v.sort()
    steps += [b[1] - a[1] - gate for a, b in zip(v, v[1:])]
steps.sort()
span = max(e for v in slots.values() for _, e in v) - min(s for v in slots.values() for s, _ in v)
print("%.1f %.3f" % (1000 * steps[len(steps) // 2], span))
PY
)
  read -r OVER[$key] SPAN[$key] <<<"${OVER[$key]}"
  bench_down
done

bench_table "40 jobs of a 0.5 s fake gate on 8 hosts: makespan, median of $BENCH_RUNS runs, seconds (added one-way delay)" "$keys" $TOOLS
printf '\nagainst the ideal (40 x the gate'"'"'s own time / 8 slots)\n'
for t in $TOOLS; do
  printf '  %-42s' "${BENCH_LABEL[$t]}"
  for k in $keys; do
    x=${BENCH_MED[$t@$k]:-}
    if [ -n "$x" ]; then printf ' %10s' "$(awk -v x="$x" -v g="${GATE_S[$k]}" -v j="$JOBS" -v n="$N" 'BEGIN { printf "%.2fx", x / (j * g / n) }')"; else printf ' %10s' -; fi
  done
  printf '\n'
done
printf '  %-42s' "campaign from its first job's start, last run"
for k in $keys; do printf ' %10s' "$(awk -v x="${SPAN[$k]}" -v g="${GATE_S[$k]}" -v j="$JOBS" -v n="$N" 'BEGIN { printf "%.2fx", x / (j * g / n) }')"; done
printf '\n'
printf '  %-42s' "ideal, seconds (gate time measured on a box)"
for k in $keys; do printf ' %10s' "$(awk -v g="${GATE_S[$k]}" -v j="$JOBS" -v n="$N" 'BEGIN { printf "%.3f", j * g / n }')"; done
printf '   (target 1.1x)\n'
printf '\nratios\n'
bench_ratio "script / boxgate campaign" script campaign "$keys"
[ -n "${BENCH_BASELINE:-}" ] && bench_ratio "boxgate campaign / baseline binary" campaign campbase "$keys"
printf '\nscheduling overhead per job (median over slots: end to next end, less the gate), ms\n'
printf '  %-42s' "boxgate campaign"
for k in $keys; do printf ' %10s' "${OVER[$k]:--}"; done
printf '   (target: under 2 round trips = 4 x the added delay + the base round trip)\n'
for k in $keys; do bench_note "$k: the gate alone takes ${GATE_S[$k]} s on a box (sleep 0.5 plus its shell, date and awk)"; done
bench_note "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
bench_notes
