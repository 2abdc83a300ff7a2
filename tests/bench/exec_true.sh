#!/usr/bin/env bash
# `true` on 8 test hosts at an added one-way delay of 0 and 10 ms: boxgate exec against a
# sequential OpenSSH loop, OpenSSH all at once, parallel-ssh, clush and ansible -m raw;
# boxgate on 1 host gives the latency floor (8 hosts should cost about what 1 does).
# Then `true` on 32 and 64 hosts (BENCH_BOXES="32 64"; empty: none) against the sshd CPU
# floor: the CPU the hosts' sshds (each listener and every process it reaped: the
# connection's sshd processes and the command they ran) used during the run, over the
# machine's cores, measured run by run.
source "$(dirname "$0")/lib.sh"
N=8
DELAYS=${BENCH_DELAYS:-0 10}

bench_hostlist "$N"
hostlist=$BENCH_HOSTLIST

tool_boxgate() { "$BOXGATE" --config "$BG_CONFIG" exec --all -- true; }
tool_boxgate1() { "$BOXGATE" --config "$BG_CONFIG" exec --boxes h1 -- true; }
# BENCH_BASELINE=PATH: another boxgate binary (an earlier commit's) side by side.
tool_baseline() { "$BENCH_BASELINE" --config "$BG_CONFIG" exec --all -- true; }
tool_ssh1() { ssh -F "$BG_SSH_CONFIG" h1 true; }
tool_sshseq() {
  local i
  for i in $(seq 1 "$N"); do ssh -F "$BG_SSH_CONFIG" "h$i" true || return 1; done
}
tool_sshpar() {
  local i pids=() rc=0
  for i in $(seq 1 "$N"); do ssh -F "$BG_SSH_CONFIG" "h$i" true & pids+=($!); done
  for i in "${pids[@]}"; do wait "$i" || rc=1; done
  return $rc
}
tool_pssh() { parallel-ssh -h "$hostlist" -x "-F $BG_SSH_CONFIG" -p "$N" -t 60 true; }
tool_clush() { clush -S -f "$N" -w "h[1-$N]" -o "-F $BG_SSH_CONFIG" true; }
bench_ansible_env
# Cold: no ControlMaster, every run pays every handshake (as the other tools do).
tool_ansible() {
  ANSIBLE_SSH_ARGS='-o ControlMaster=no -o ControlPath=none' \
    ansible all -i "$BENCH_TMP/inventory" -m raw -a true -f "$N" -o
}
# Warm: ansible's default ControlPersist, masters kept from the warm-up run on.
tool_ansiblecp() {
  ANSIBLE_SSH_ARGS="-o ControlMaster=auto -o ControlPersist=60s -o ControlPath=$BENCH_TMP/cp-%C" \
    ansible all -i "$BENCH_TMP/inventory" -m raw -a true -f "$N" -o
}

bench_label boxgate "boxgate exec --all ($N hosts)"
bench_label boxgate1 "boxgate exec (1 host)"
bench_label ssh1 "OpenSSH ssh (1 host)"
bench_label sshseq "OpenSSH ssh, sequential loop"
bench_label sshpar "OpenSSH ssh, all at once"
bench_label pssh "parallel-ssh"
bench_label clush "clush"
bench_label ansible "ansible -m raw (no ControlPersist)"
bench_label ansiblecp "ansible -m raw (ControlPersist warm)"
bench_label baseline "boxgate exec --all, baseline binary"
TOOLS="boxgate boxgate1 ssh1 sshseq sshpar pssh clush ansible ansiblecp"
[ -n "${BENCH_BASELINE:-}" ] && TOOLS="$TOOLS baseline"
# BENCH_EXEC_TOOLS="boxgate boxgate1 ...": only these on the 8 hosts (a quicker run)
[ -z "${BENCH_EXEC_TOOLS:-}" ] || TOOLS=$BENCH_EXEC_TOOLS

keys=''
for d in $DELAYS; do
  key="${d}ms"
  keys="$keys $key"
  bench_up_delayed "$N" "$d"
  bench_ansible_inventory
  bench_measure "$key" "$BENCH_RUNS" $TOOLS
  rt=$(BOXGATE_TRACE=1 "$BOXGATE" --config "$BG_CONFIG" exec --boxes h1 -- true 2>&1 >/dev/null |
    sed -n 's/.*round trips after the TCP connect: //p')
  bench_note "$key: boxgate exec true on 1 host: round trips after the TCP connect: ${rt:-?}"
  bench_down
done

# sshd_ticks: CPU clock ticks the hosts' listening sshds and the children they reaped have
# used so far (utime stime cutime cstime of each listener).
sshd_ticks() {
  local i pid s=0 f
  for i in $(seq 1 "$BG_HOSTS_N"); do
    read -r pid _ <"$BG_HOSTS_DIR/h$i/sshd.pid"
    read -r -a f < <(sed 's/^.*) //' "/proc/$pid/stat")
    s=$((s + f[11] + f[12] + f[13] + f[14]))
  done
  echo "$s"
}
# sshd_settled: every listener has reaped its connections' processes (up to 5 s).
sshd_settled() {
  local i pid busy
  for _ in $(seq 1 100); do
    busy=0
    for i in $(seq 1 "$BG_HOSTS_N"); do
      read -r pid _ <"$BG_HOSTS_DIR/h$i/sshd.pid"
      [ -z "$(cat "/proc/$pid/task/$pid/children" 2>/dev/null)" ] || { busy=1; break; }
    done
    [ "$busy" = 0 ] && return 0
    sleep 0.05
  done
}
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.3f", m }'; }
BIG=${BENCH_BOXES-32 64}
tick=$(getconf CLK_TCK) cores=$(nproc)
for n in $BIG; do
  bench_label "bg$n" "boxgate exec --all ($n hosts)"
  bench_label "floor$n" "sshd CPU floor (sum of sshd CPU / $cores cores)"
  for d in $DELAYS; do
    bench_up_delayed "$n" "$d"
    "$BOXGATE" --config "$BG_CONFIG" exec --all -- true >/dev/null 2>&1 # warm-up, untimed
    ts=() fs=() ok=1
    for r in $(seq 1 "$BENCH_RUNS"); do
      sshd_settled
      c0=$(sshd_ticks) t0=$EPOCHREALTIME
      "$BOXGATE" --config "$BG_CONFIG" exec --all -- true >/dev/null 2>&1 || { ok=0; break; }
      t1=$EPOCHREALTIME
      sshd_settled
      c1=$(sshd_ticks)
      ts+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')")
      fs+=("$(awk -v c="$((c1 - c0))" -v t="$tick" -v k="$cores" 'BEGIN { printf "%.4f", c / t / k }')")
    done
    if [ "$ok" = 1 ]; then
      # shellcheck disable=SC2034 # BENCH_MED is lib.sh's (bench_table, bench_ratio read it)
      BENCH_MED["bg$n@${d}ms"]=$(median "${ts[@]}")
      BENCH_MED["floor$n@${d}ms"]=$(median "${fs[@]}")
      bench_log "$n hosts @ ${d}ms: boxgate ${ts[*]}; sshd floor ${fs[*]}"
      bench_note "$n hosts at ${d}ms: the sshd CPU floor is the CPU time (utime, stime and reaped children's) of the $n hosts' listening sshds during each run, over $cores cores"
    else
      bench_note "boxgate exec --all on $n hosts at ${d}ms: run $r failed"
    fi
    bench_down
  done
done

bench_table "true on $N hosts: median of $BENCH_RUNS runs, seconds (added one-way delay)" "$keys" $TOOLS
printf '\nratios\n'
bench_ratio "boxgate / parallel-ssh" boxgate pssh "$keys" "<= 0.8x at 10 ms"
bench_ratio "boxgate / clush" boxgate clush "$keys" "<= 0.8x at 10 ms"
bench_ratio "boxgate / ansible -m raw (cold)" boxgate ansible "$keys"
bench_ratio "boxgate $N hosts / boxgate 1 host" boxgate boxgate1 "$keys" "<= 1.5x"
bench_ratio "OpenSSH all at once / OpenSSH 1 host" sshpar ssh1 "$keys"
[ -n "${BENCH_BASELINE:-}" ] && bench_ratio "boxgate / baseline binary" boxgate baseline "$keys"
for n in $BIG; do
  bench_table "true on $n hosts against the sshd CPU floor: median of $BENCH_RUNS runs, seconds" "$keys" "bg$n" "floor$n"
  printf '\nratios\n'
  bench_ratio "boxgate $n hosts / sshd CPU floor" "bg$n" "floor$n" "$keys" "<= 1.1x"
done
bench_note "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end; every handshake is CPU-bound here"
bench_notes
