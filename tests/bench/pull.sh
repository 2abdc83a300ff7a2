#!/usr/bin/env bash
# boxgate pull against the usual ways of fetching files back from many hosts.
#
# A directory of 100 files of 16 KiB each from N test hosts (BENCH_PULL_N, default 8), at an
# added one-way delay of 0 and 10 ms, into a fresh local directory every run: boxgate pull;
# parallel-slurp (pslurp -r); clush --rcopy; scp -r, all hosts at once. Peers that are not
# installed are left out (a note says so).
source "$(dirname "$0")/lib.sh"
N=${BENCH_PULL_N:-8}
DELAYS=${BENCH_DELAYS:-0 10}
FILES=${BENCH_PULL_FILES:-100}

bench_hostlist "$N"
hostlist=$BENCH_HOSTLIST
OUT=$BENCH_TMP/out

# The same tree on every host: FILES files of 16 KiB under repo/out.
fill_hosts() {
  local i f R
  for i in $(seq 1 "$N"); do
    R=$(eval echo "\$BG_HOST_${i}_ROOT")/repo/out
    mkdir -p "$R"
    for f in $(seq 1 "$FILES"); do head -c 16384 /dev/urandom >"$R/f$f.bin"; done
  done
}

tool_boxgate() { "$BOXGATE" --config "$BG_CONFIG" pull --all --to "$OUT" out; }
tool_pslurp() { parallel-slurp -h "$hostlist" -x "-F $BG_SSH_CONFIG" -p "$N" -t 120 -r -L "$OUT" /root/repo/out out; }
tool_clush() { clush -S -f "$N" -w "h[1-$N]" -o "-F $BG_SSH_CONFIG" --rcopy /root/repo/out --dest "$OUT"; }
tool_scp() {
  local i pids=() rc=0
  for i in $(seq 1 "$N"); do
    mkdir -p "$OUT/h$i"
    scp -q -r -F "$BG_SSH_CONFIG" "h$i:/root/repo/out" "$OUT/h$i/" &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || rc=1; done
  return $rc
}
for t in boxgate pslurp clush scp; do eval "bench_prep_$t() { rm -rf \"\$OUT\"; mkdir -p \"\$OUT\"; }"; done

bench_label boxgate "boxgate pull --all"
bench_label pslurp "parallel-slurp -r"
bench_label clush "clush --rcopy"
bench_label scp "scp -r, all hosts at once"
TOOLS=boxgate
command -v parallel-slurp >/dev/null 2>&1 && TOOLS="$TOOLS pslurp" || bench_note "parallel-slurp is not installed: left out"
command -v clush >/dev/null 2>&1 && TOOLS="$TOOLS clush" || bench_note "clush is not installed: left out"
TOOLS="$TOOLS scp"

keys=''
for d in $DELAYS; do
  key="${d}ms"
  keys="$keys $key"
  bench_up_delayed "$N" "$d"
  fill_hosts
  # shellcheck disable=SC2086 # TOOLS is a word list
  bench_measure "$key" "$BENCH_RUNS" $TOOLS
  bench_down
done

# shellcheck disable=SC2086
bench_table "$FILES files x 16 KiB from $N hosts into a fresh directory: median of $BENCH_RUNS runs, seconds" "$keys" $TOOLS
printf '\nratios (lower is better for boxgate)\n'
for t in $TOOLS; do
  [ "$t" = boxgate ] || bench_ratio "boxgate / ${BENCH_LABEL[$t]}" boxgate "$t" "$keys"
done
bench_notes
