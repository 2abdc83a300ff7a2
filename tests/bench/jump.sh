#!/usr/bin/env bash
# `true` on 8 test hosts behind one jump host (h2-h9 take SSH only from h1) at an added
# one-way delay of 0 and 10 ms: boxgate exec (one shared connection to the jump host) against
# OpenSSH's `ssh -J` all at once (a connection to the jump host per box) and parallel-ssh with
# `-x "-J h1"`. boxgate straight to 8 hosts without a jump gives the cost of the extra hop;
# boxgate to one box behind the jump (its connect to the jump host, one channel through
# it, the box's handshake) is the floor the 8-box run is judged against.
# Targets: at least 2x faster than `ssh -J` at both delays; at 10 ms the 8 boxes within
# 1.5x of the one box.
source "$(dirname "$0")/lib.sh"
N=8
DELAYS=${BENCH_DELAYS:-0 10}

hostlist=$BENCH_TMP/behind.txt
seq -f 'h%g' 2 $((N + 1)) >"$hostlist"

tool_boxgate() { "$BOXGATE" --config "$INI" exec --boxes "b[2-$((N + 1))]" -- true; }
tool_one() { "$BOXGATE" --config "$INI" exec --boxes b2 -- true; }
# BENCH_BASELINE=PATH: another boxgate binary (an earlier commit's) side by side.
tool_baseline() { "$BENCH_BASELINE" --config "$INI" exec --boxes "b[2-$((N + 1))]" -- true; }
tool_onebase() { "$BENCH_BASELINE" --config "$INI" exec --boxes b2 -- true; }
tool_direct() { "$BOXGATE" --config "$BG_CONFIG" exec --boxes "h[2-$((N + 1))]" -- true; }
tool_sshj() {
  local i pids=() rc=0
  for i in $(seq 2 $((N + 1))); do ssh -F "$BG_SSH_CONFIG" -J h1 "h$i" true & pids+=($!); done
  for i in "${pids[@]}"; do wait "$i" || rc=1; done
  return $rc
}
tool_pssh() { parallel-ssh -h "$hostlist" -x "-F $BG_SSH_CONFIG -J h1" -p "$N" -t 60 true; }

bench_label boxgate "boxgate exec, $N boxes behind one jump"
bench_label sshj "OpenSSH ssh -J, all at once"
bench_label pssh "parallel-ssh -x \"-J h1\""
bench_label direct "boxgate exec, $N boxes without a jump"
bench_label one "boxgate exec, 1 box behind the jump"
bench_label baseline "baseline binary, $N boxes behind the jump"
bench_label onebase "baseline binary, 1 box behind the jump"
TOOLS="boxgate one sshj pssh"
[ -n "${BENCH_BASELINE:-}" ] && TOOLS="$TOOLS baseline onebase"

keys=''
for d in $DELAYS; do
  key="${d}ms"
  keys="$keys $key"
  bench_up_delayed $((N + 1)) "$d"
  INI=$BENCH_TMP/jump.ini
  cat "$BG_CONFIG" >"$INI"
  for i in $(seq 2 $((N + 1))); do
    printf '\n[box b%d]\nhost = h%d\njump = h1\nrepo = /root/repo\nrequire_gpu = no\n' "$i" "$i" >>"$INI"
  done
  # the direct run first, before the hosts are closed to everyone but h1
  bench_measure "$key" "$BENCH_RUNS" direct
  for i in $(seq 2 $((N + 1))); do "$BG_HOSTS_TOOL" only-from "$BG_HOSTS_DIR" "$i" 1; done
  bench_measure "$key" "$BENCH_RUNS" $TOOLS
  a0=$(grep -c 'Accepted publickey' "$BG_HOSTS_DIR/h1/sshd.log")
  tool_boxgate >/dev/null 2>&1
  a1=$(grep -c 'Accepted publickey' "$BG_HOSTS_DIR/h1/sshd.log")
  tool_sshj >/dev/null 2>&1
  a2=$(grep -c 'Accepted publickey' "$BG_HOSTS_DIR/h1/sshd.log")
  bench_note "$key: sessions the jump host accepted for one run: boxgate $((a1 - a0)), ssh -J $((a2 - a1))"
  bench_down
done

bench_table "true on $N hosts behind one jump host: median of $BENCH_RUNS runs, seconds (added one-way delay)" "$keys" $TOOLS direct
printf '\nratios\n'
bench_ratio "ssh -J / boxgate" sshj boxgate "$keys" ">= 2x"
bench_ratio "parallel-ssh -J / boxgate" pssh boxgate "$keys" ">= 2x"
bench_ratio "$N boxes behind the jump / one box behind it" boxgate one "$keys" "<= 1.5x @10 ms"
bench_ratio "boxgate through the jump / direct" boxgate direct "$keys"
if [ -n "${BENCH_BASELINE:-}" ]; then
  bench_ratio "ssh -J / baseline binary" sshj baseline "$keys"
  bench_ratio "baseline: $N boxes / one box" baseline onebase "$keys"
  bench_ratio "boxgate / baseline binary, $N boxes" boxgate baseline "$keys"
fi
bench_note "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end; every handshake is CPU-bound here"
bench_notes
