# Shared helpers for boxgate's benchmarks (tests/bench/*.sh, run by tests/bench/run).
#
#   bench_up N DELAY_MS        bring up N test hosts; sources their env.sh (BG_CONFIG,
#                              BG_SSH_CONFIG, ...); they are taken down when the script exits
#   bench_down                 take the hosts of the last bench_up down now (the peers'
#                              ssh ControlPersist masters under BENCH_TMP are ended first)
#   bench_rtt [I]              "connect_ms exchange_ms" medians to host I (default 1)
#   bench_up_delayed N DELAY_MS  bench_up, then the measured round trip as a note
#   bench_measure KEY RUNS T... time the tools T (shell functions tool_T, run with no
#                              arguments) RUNS times each, round robin so load drift hits
#                              every tool alike, after one untimed warm-up each; a tool whose
#                              warm-up or any run fails is skipped with a note. Medians go to
#                              BENCH_MED[T@KEY], the runs to BENCH_ALL[T@KEY].
#   bench_prep_T               optional shell function run (untimed) before every run of T
#   bench_table TITLE "KEY1 KEY2.." T...   medians as a table, one row per tool
#   bench_ratio LABEL A B "KEY1 KEY2.." [TARGET]   rows of BENCH_MED[A]/BENCH_MED[B]
#   bench_label T LABEL        the row label of tool T in tables
#   bench_note TEXT            a note printed under the tables
#   bench_hostlist N           BENCH_HOSTLIST: a file naming h1..hN, one a line (pssh, ansible)
#   bench_ansible_env          ansible's state and temporary files under BENCH_TMP
#   bench_ansible_inventory    BENCH_TMP/inventory: the hosts of BENCH_HOSTLIST as root over
#                              BG_SSH_CONFIG
set -u
BG_ROOT=${BG_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BOXGATE=${BOXGATE:-$BG_ROOT/build/boxgate}
BG_HOSTS_TOOL=$BG_ROOT/tests/hosts/hosts
BENCH_RUNS=${BENCH_RUNS:-7}
BENCH_TMP=$(mktemp -d "${TMPDIR:-/tmp}/bgbench.XXXXXX")
declare -A BENCH_MED=() BENCH_ALL=() BENCH_LABEL=()
BENCH_NOTES=()
_bench_dirs=()

# _bench_end_masters: ends the ssh ControlPersist masters the peer tools left (ansible's),
# found by their control sockets under BENCH_TMP, and waits until they are gone: a master
# holds its session on the host open, and with it the host's namespace.
_bench_end_masters() {
  local s pid out pids=()
  while IFS= read -r s; do
    out=$(ssh -o ControlPath="$s" -O check bench-master 2>&1) || continue
    pid=$(printf '%s' "$out" | sed -n 's/.*(pid=\([0-9]*\)).*/\1/p')
    ssh -o ControlPath="$s" -O exit bench-master >/dev/null 2>&1 || true
    [ -z "$pid" ] || pids+=("$pid")
  done < <(find "$BENCH_TMP" -type s 2>/dev/null)
  local i p left
  for i in $(seq 1 100); do
    left=()
    for p in "${pids[@]}"; do [ -d "/proc/$p" ] && [ "$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)" != Z ] && left+=("$p"); done
    [ ${#left[@]} -gt 0 ] || return 0
    sleep 0.02
  done
  kill -KILL "${left[@]}" 2>/dev/null || true
}

_bench_cleanup() {
  local d
  _bench_end_masters
  for d in "${_bench_dirs[@]}"; do "$BG_HOSTS_TOOL" down "$d" >/dev/null 2>&1 || true; done
  rm -rf "$BENCH_TMP"
}
trap _bench_cleanup EXIT
trap 'exit 130' INT TERM

bench_hostlist() { BENCH_HOSTLIST=$BENCH_TMP/hosts.txt; seq -f 'h%g' 1 "$1" >"$BENCH_HOSTLIST"; }
bench_ansible_env() {
  export ANSIBLE_LOCAL_TEMP=$BENCH_TMP/ansible-tmp ANSIBLE_NOCOLOR=1 ANSIBLE_DEPRECATION_WARNINGS=False \
    ANSIBLE_SSH_CONTROL_PATH_DIR=$BENCH_TMP/ansible-cp ANSIBLE_HOME=$BENCH_TMP/ansible-home
}
bench_ansible_inventory() {
  {
    echo "[all]"
    cat "$BENCH_HOSTLIST"
    echo "[all:vars]"
    echo "ansible_connection=ssh"
    echo "ansible_user=root"
    echo "ansible_ssh_common_args='-F $BG_SSH_CONFIG'"
  } >"$BENCH_TMP/inventory"
}
bench_log() { printf '# %s\n' "$*" >&2; }
bench_note() { BENCH_NOTES+=("$*"); }
bench_label() { BENCH_LABEL[$1]=$2; }

bench_up() {
  local n=$1 delay=$2 d
  d=$("$BG_HOSTS_TOOL" up --n "$n" --delay "$delay") || { echo "bench: hosts up failed" >&2; exit 1; }
  _bench_dirs+=("$d")
  # shellcheck disable=SC1091
  . "$d/env.sh"
}

bench_down() {
  [ ${#_bench_dirs[@]} -gt 0 ] || return 0
  _bench_end_masters
  local last=$((${#_bench_dirs[@]} - 1))
  "$BG_HOSTS_TOOL" down "${_bench_dirs[$last]}"
  unset "_bench_dirs[$last]"
  _bench_dirs=("${_bench_dirs[@]}")
}

bench_rtt() { "$BG_HOSTS_TOOL" rtt "$BG_HOSTS_DIR" "${1:-1}" 9; }
bench_up_delayed() {
  local conn exch
  bench_up "$1" "$2"
  read -r conn exch < <(bench_rtt 1)
  bench_note "added delay $2 ms each way: measured TCP connect $conn ms, SSH id->KEXINIT round trip $exch ms (medians of 9)"
  bench_log "delay $2 ms: hosts up in $BG_HOSTS_DIR ($BG_HOSTS_MODE), rtt $conn / $exch ms"
}

# _bench_once T: runs tool T once (prep untimed), prints seconds; its output goes to a log.
_bench_once() {
  local t=$1 t0 t1 rc=0
  if declare -F "bench_prep_$t" >/dev/null; then "bench_prep_$t" >>"$BENCH_TMP/$t.log" 2>&1 || return 1; fi
  t0=$EPOCHREALTIME
  "tool_$t" >>"$BENCH_TMP/$t.log" 2>&1 </dev/null || rc=$?
  t1=$EPOCHREALTIME
  [ "$rc" = 0 ] || return 1
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", b - a }'
}

bench_measure() {
  local key=$1 runs=$2; shift 2
  local t r s live=()
  for t in "$@"; do
    : >"$BENCH_TMP/$t.log"
    if s=$(_bench_once "$t"); then
      live+=("$t"); BENCH_ALL[$t@$key]=''
    else
      bench_note "${BENCH_LABEL[$t]:-$t} at $key: skipped, its warm-up failed: $(tail -n 3 "$BENCH_TMP/$t.log" | tr '\n' ' ' | cut -c1-300)"
    fi
  done
  for r in $(seq 1 "$runs"); do
    for t in "${live[@]}"; do
      [ -n "${BENCH_ALL[$t@$key]+x}" ] || continue
      [ "${BENCH_ALL[$t@$key]}" != FAILED ] || continue
      if s=$(_bench_once "$t"); then
        BENCH_ALL[$t@$key]+="$s "
      else
        BENCH_ALL[$t@$key]=FAILED
        bench_note "${BENCH_LABEL[$t]:-$t} at $key: run $r failed: $(tail -n 3 "$BENCH_TMP/$t.log" | tr '\n' ' ' | cut -c1-300)"
      fi
    done
  done
  for t in "${live[@]}"; do
    [ "${BENCH_ALL[$t@$key]}" != FAILED ] || continue
    BENCH_MED[$t@$key]=$(printf '%s\n' ${BENCH_ALL[$t@$key]} | sort -g |
      awk '{ v[NR] = $1 } END { if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.3f", m }')
    bench_log "${BENCH_LABEL[$t]:-$t} @ $key: ${BENCH_ALL[$t@$key]}-> median ${BENCH_MED[$t@$key]}"
  done
}

bench_table() {
  local title=$1 keys=$2 t k; shift 2
  printf '\n%s\n' "$title"
  printf '  %-42s' "tool"
  for k in $keys; do printf ' %10s' "$k"; done
  printf '\n'
  for t in "$@"; do
    printf '  %-42s' "${BENCH_LABEL[$t]:-$t}"
    for k in $keys; do printf ' %10s' "${BENCH_MED[$t@$k]:--}"; done
    printf '\n'
  done
}

bench_ratio() {
  local label=$1 a=$2 b=$3 keys=$4 target=${5:-} k x y
  printf '  %-42s' "$label"
  for k in $keys; do
    x=${BENCH_MED[$a@$k]:-} y=${BENCH_MED[$b@$k]:-}
    if [ -n "$x" ] && [ -n "$y" ]; then
      printf ' %10s' "$(awk -v x="$x" -v y="$y" 'BEGIN { printf "%.2fx", x / y }')"
    else
      printf ' %10s' -
    fi
  done
  [ -z "$target" ] || printf '   (target %s)' "$target"
  printf '\n'
}

bench_notes() {
  local n
  [ ${#BENCH_NOTES[@]} -gt 0 ] || return 0
  printf '\nnotes:\n'
  for n in "${BENCH_NOTES[@]}"; do printf '  - %s\n' "$n"; done
}
