#!/usr/bin/env bash
# Standard input sent to a command on 4 test hosts (`sha256sum` of 1 MB and 32 MB): boxgate
# exec (read once, spooled, each box at its own pace) against clush (reads stdin once, sends
# it to every node), parallel-ssh -I, and OpenSSH all at once (one ssh per host, each reading
# the file itself: the floor of what sending it 4 times costs). Every tool's digests are
# checked once against the local sha256sum before anything is timed.
source "$(dirname "$0")/lib.sh"
N=4
SIZES=${BENCH_SIZES:-1 32}

bench_hostlist "$N"
hostlist=$BENCH_HOSTLIST

tool_boxgate() { "$BOXGATE" --config "$BG_CONFIG" exec --all -- sha256sum <"$INPUT"; }
tool_clush() { clush -S -f "$N" -w "h[1-$N]" -o "-F $BG_SSH_CONFIG" sha256sum <"$INPUT"; }
tool_pssh() { parallel-ssh -I -h "$hostlist" -x "-F $BG_SSH_CONFIG" -p "$N" -t 120 -i sha256sum <"$INPUT"; }
tool_sshpar() {
  local i pids=() rc=0
  for i in $(seq 1 "$N"); do ssh -F "$BG_SSH_CONFIG" "h$i" sha256sum <"$INPUT" & pids+=($!); done
  for i in "${pids[@]}"; do wait "$i" || rc=1; done
  return $rc
}

bench_label boxgate "boxgate exec --all < FILE"
bench_label clush "clush < FILE"
bench_label pssh "parallel-ssh -I < FILE"
bench_label sshpar "OpenSSH ssh, all at once, each < FILE"

bench_up "$N" 0
keys=''
for mb in $SIZES; do
  key="${mb}MB"
  keys="$keys $key"
  INPUT=$BENCH_TMP/input-$mb
  head -c "$((mb * 1048576))" /dev/urandom >"$INPUT"
  want=$(sha256sum <"$INPUT" | cut -d' ' -f1)
  for t in boxgate clush pssh sshpar; do
    got=$("tool_$t" 2>/dev/null | grep -c "$want")
    bench_note "$key: $t printed the right digest for $got of $N hosts"
  done
  bench_measure "$key" "$BENCH_RUNS" boxgate clush pssh sshpar
done
bench_down

bench_table "sha256sum of stdin on $N hosts: median of $BENCH_RUNS runs, seconds (input size)" "$keys" boxgate clush pssh sshpar
printf '\nratios\n'
bench_ratio "clush / boxgate" clush boxgate "$keys"
bench_ratio "parallel-ssh -I / boxgate" pssh boxgate "$keys"
bench_ratio "ssh all at once / boxgate" sshpar boxgate "$keys"
bench_note "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
bench_notes
