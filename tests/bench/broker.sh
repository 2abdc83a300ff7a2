#!/usr/bin/env bash
# The broker's cost: `run --pool` (8 boxes asked in parallel, the first free slot taken)
# against `run BOX --gpu N` on a fixed slot, the fake gate's pass mode, 8 test hosts at an
# added one-way delay of 0 and 10 ms. Also the pick when only the last box is free, and the
# line (--wait: a ticket on the first box, then the pick). Target: the broker costs at most
# one extra round trip over the fixed slot.
source "$(dirname "$0")/lib.sh"
N=8
DELAYS=${BENCH_DELAYS:-0 10}

tool_fixed() { "$BOXGATE" --config "$INI" run g1 --gpu 0 --no-results -- --mode pass; }
tool_pool() { "$BOXGATE" --config "$INI" run --pool first --no-results -- --mode pass; }
tool_poollast() { "$BOXGATE" --config "$INI" run --pool last --no-results -- --mode pass; }
tool_poolwait() { "$BOXGATE" --config "$INI" run --pool first --wait 60 --no-results -- --mode pass; }
bench_label fixed "run g1 --gpu 0 (a fixed slot)"
bench_label pool "run --pool (8 boxes, the first free)"
bench_label poollast "run --pool (8 boxes, only the last free)"
bench_label poolwait "run --pool --wait (line + pick)"
TOOLS="fixed pool poollast poolwait"

keys=''
for d in $DELAYS; do
  key="${d}ms"
  keys="$keys $key"
  bench_up_delayed "$N" "$d"
  INI=$BENCH_TMP/broker.ini
  cat "$BG_CONFIG" >"$INI"
  first='' last=''
  for i in $(seq 1 "$N"); do
    cp "$BG_ROOT/tests/integration/gates/fake_gate.sh" "$(eval echo "\$BG_HOST_${i}_ROOT")/repo/gate.sh"
    printf '\n[box g%d]\nhost = h%d\nrepo = /root/repo\ngate = gate.sh\ngpus = 0-1\nrequire_gpu = no\nallow = --mode\n' \
      "$i" "$i" >>"$INI"
    first+="${first:+, }g$i:0" last+="${last:+, }g$i:1"
  done
  printf '\n[pool first]\nslots = %s\n\n[pool last]\nslots = %s\n' "$first" "$last" >>"$INI"
  for i in $(seq 1 $((N - 1))); do
    "$BOXGATE" --config "$INI" slots disable "g$i:1" --why "bench: only the last is free" >/dev/null ||
      { echo "bench: cannot disable g$i:1" >&2; exit 1; }
  done
  bench_measure "$key" "$BENCH_RUNS" $TOOLS
  bench_down
done

bench_table "one gate run (fake gate, pass): median of $BENCH_RUNS runs, seconds (added one-way delay)" "$keys" $TOOLS
printf '\nthe broker over a fixed slot, milliseconds\n'
for t in pool poollast poolwait; do
  printf '  %-42s' "${BENCH_LABEL[$t]}"
  for k in $keys; do
    x=${BENCH_MED[$t@$k]:-} y=${BENCH_MED[fixed@$k]:-}
    if [ -n "$x" ] && [ -n "$y" ]; then printf ' %+9.0f ms' "$(awk -v x="$x" -v y="$y" 'BEGIN { print (x - y) * 1000 }')"; else printf ' %12s' -; fi
  done
  printf '\n'
done
printf '\nratios\n'
bench_ratio "run --pool / run on a fixed slot" pool fixed "$keys" "at most one round trip more"
bench_ratio "run --pool, last free / fixed" poollast fixed "$keys"
bench_ratio "run --pool --wait / fixed" poolwait fixed "$keys"
bench_note "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end; one round trip is about twice the added delay"
bench_notes
