# Shared helpers for integration tests: TAP output, assertions, the test hosts.
# Each test script sources this, prints TAP lines ("ok N - what" / "not ok N - what")
# and is counted by tests/run.
set -u
BG_ROOT=${BG_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BOXGATE=${BOXGATE:-$BG_ROOT/build/boxgate}
BG_TMP=$(mktemp -d "${TMPDIR:-/tmp}/bgtest.XXXXXX")
# boxgate run records every result; a test's records stay in its own directory.
export XDG_DATA_HOME=$BG_TMP/data
# Connection masters (control_persist_s) of a test stay in its own directory.
export XDG_RUNTIME_DIR=$BG_TMP/run
mkdir -m 700 "$XDG_RUNTIME_DIR"
_tap_n=0
_tap_failed=0
# bg_pause SECONDS: a sleep that forks no process (a read that times out on a fifo nobody
# writes, opened for that read alone, so no command inherits it); polling loops pause with
# it, where a sleep would cost a process every poll. The fifo lies beside BG_TMP, not in it
# (tests run boxgate there and list it), and goes with it.
_bg_fifo=$BG_TMP.pause
mkfifo -m 600 "$_bg_fifo" 2>/dev/null || _bg_fifo=
bg_pause() {
  if [ -n "$_bg_fifo" ] && [ -p "$_bg_fifo" ]; then read -r -t "$1" _ <>"$_bg_fifo" || :; else sleep "$1"; fi
}

ok() { _tap_n=$((_tap_n + 1)); printf 'ok %d - %s\n' "$_tap_n" "$*"; }
not_ok() {
  _tap_n=$((_tap_n + 1)); _tap_failed=$((_tap_failed + 1))
  printf 'not ok %d - %s\n' "$_tap_n" "$*"
}
# diag TEXT...: TEXT as TAP comment lines, "# " before each (no sed: tests call it often).
diag() { local nl=$'\n'; printf '# %s\n' "${*//$nl/$nl# }"; }

# check DESC CMD...: passes when CMD exits 0; its output is shown on failure.
check() {
  local desc=$1; shift
  local out
  case $1 in
    test | '[')
      # a builtin that changes nothing: run here, its words kept in a file, where a
      # command substitution would fork a subshell for it
      if "$@" >"$BG_TMP/check.out" 2>&1; then ok "$desc"; else
        not_ok "$desc"; diag "$(cat "$BG_TMP/check.out")"
      fi ;;
    *) if out=$("$@" 2>&1); then ok "$desc"; else not_ok "$desc"; diag "$out"; fi ;;
  esac
}

# pycheck DESC SCRIPT ARGS...: passes when the Python SCRIPT (run with ARGS) exits 0;
# Python's json and csv modules are the reference for what boxgate writes.
pycheck() {
  local desc=$1 script=$2; shift 2
  local out
  if out=$(python3 -c "$script" "$@" 2>&1); then ok "$desc"; else not_ok "$desc"; diag "$out"; fi
}
# nlines FILE: its line count, 0 when it does not exist.
# As wc -l counts: newlines (a last line without one is not counted), read by bash, as
# tests poll it.
nlines() {
  local n=0 _l
  if [ -f "$1" ]; then while IFS= read -r _l; do n=$((n + 1)); done <"$1"; fi
  echo "$n"
}

# expect_rc RC DESC CMD...: runs CMD, stores its stdout/stderr in $OUT_FILE/$ERR_FILE,
# passes when its exit status is RC.
OUT_FILE=$BG_TMP/last.out
ERR_FILE=$BG_TMP/last.err
expect_rc() {
  local want=$1 desc=$2; shift 2
  local rc=0
  "$@" >"$OUT_FILE" 2>"$ERR_FILE" || rc=$?
  if [ "$rc" = "$want" ]; then ok "$desc"; else
    not_ok "$desc (exit $rc, wanted $want)"
    diag "stdout: $(head -c 2000 "$OUT_FILE")"
    diag "stderr: $(head -c 2000 "$ERR_FILE")"
  fi
  return 0
}

# has FILE PATTERN DESC: passes when FILE contains the extended regex PATTERN.
has() {
  if grep -Eq -- "$2" "$1"; then ok "$3"; else
    not_ok "$3"; diag "no /$2/ in $1: $(head -c 2000 "$1")"
  fi
}
hasnt() {
  if grep -Eq -- "$2" "$1"; then not_ok "$3"; diag "unexpected /$2/ in $1"; else ok "$3"; fi
}

skip_all() { printf '1..0 # SKIP %s\n' "$*"; rm -rf "$BG_TMP" "$BG_TMP.pause"; exit 0; }

finish() {
  printf '1..%d\n' "$_tap_n"
  rm -rf "$BG_TMP" "$BG_TMP.pause"
  [ "$_tap_failed" = 0 ]
}

# hosts_up N: N real sshd test hosts for this test (D is their directory, their env.sh
# sourced), taken down with BG_TMP at exit.
hosts_up() {
  D=$("$BG_ROOT/tests/hosts/hosts" up --n "$1") || { not_ok "test hosts came up"; finish; exit 1; }
  # shellcheck disable=SC2064 # D is known now
  trap "\"$BG_ROOT/tests/hosts/hosts\" down \"$D\" >/dev/null 2>&1; rm -rf \"$BG_TMP\" \"$BG_TMP.pause\"" EXIT
  # shellcheck disable=SC1091
  source "$D/env.sh"
}

# host_has_proc PATTERN: a process in this test's hosts (D) has PATTERN (an extended
# regex) in its command line. Never looks wider: tests running beside this one start the
# same gates with the same arguments, and a match on one of theirs would say this test's
# gate started (or survived) when it did not.
host_has_proc() {
  local n='' l i p a hs=() IFS=$' \t\n'
  # One `hosts pids` for every host, each command line read and matched in bash: this runs
  # in polling loops, where a sed, a seq and a grep per process cost more cpu than the wait.
  while IFS= read -r l; do [[ $l == N=* ]] && n=${l#N=}; done 2>/dev/null <"$D/state"
  for ((i = 1; i <= ${n:-0}; i++)); do hs+=("$i"); done
  [ ${#hs[@]} -gt 0 ] || return 1
  for p in $("$BG_ROOT/tests/hosts/hosts" pids "$D" "${hs[@]}"); do
    # its command line with each NUL (the last one too) as a space: '.' in PATTERN matches
    # either, and '$' matches after the last NUL in neither
    mapfile -d '' -t a 2>/dev/null <"/proc/$p/cmdline" || continue
    [[ "${a[*]} " =~ $1 ]] && return 0
  done
  return 1
}

# host_procs PATTERN: "PID START" (START: field 22 of its stat) of each process in this
# test's hosts with PATTERN in its command line.
host_procs() {
  local n='' l i p a s hs=() IFS=$' \t\n'
  while IFS= read -r l; do [[ $l == N=* ]] && n=${l#N=}; done 2>/dev/null <"$D/state"
  for ((i = 1; i <= ${n:-0}; i++)); do hs+=("$i"); done
  [ ${#hs[@]} -gt 0 ] || return 0
  for p in $("$BG_ROOT/tests/hosts/hosts" pids "$D" "${hs[@]}"); do
    mapfile -d '' -t a 2>/dev/null <"/proc/$p/cmdline" || continue
    [[ "${a[*]} " =~ $1 ]] || continue
    { read -r s <"/proc/$p/stat"; } 2>/dev/null || continue
    s=${s##*) }
    set -- "$1" $s
    printf '%s %s\n' "$p" "${21}"
  done
  return 0
}
# proc_alive PID START: PID runs (not a zombie) and is the process that started at START.
proc_alive() {
  local s
  { read -r s <"/proc/$1/stat"; } 2>/dev/null || return 1
  s=${s##*) }
  set -- "$2" $s
  case $2 in Z|X) return 1 ;; esac
  [ "${21}" = "$1" ]
}

# gone PATTERN: no process in this test's hosts has PATTERN in its command line;
# wait_gone PATTERN [TRIES [EVERY_S]], wait_running PATTERN (30 s at most) wait for it.
gone() { ! host_has_proc "$1"; }
wait_gone() { local i; for ((i = 0; i < ${2:-40}; i++)); do gone "$1" && return 0; bg_pause "${3:-0.25}"; done; return 1; }
wait_running() { local i; for ((i = 0; i < 120; i++)); do gone "$1" || return 0; bg_pause 0.25; done; return 1; }
# now_ms: the clock in milliseconds, printed; set_now_ms sets NOW_MS to it instead, for polls
# that must not fork the subshell a $(now_ms) costs.
set_now_ms() { local t=${EPOCHREALTIME//[!0-9]/}; NOW_MS=$((10#$t / 1000)); }
now_ms() { set_now_ms; echo "$NOW_MS"; }
# gone_in_bound WHAT PATTERN T0_MS: the gate is gone within heartbeat + grace of T0_MS (the
# test's HB/HB_MS and GRACE/GRACE_MS) plus 2 s; waits 60 s before calling it survived. The
# slack covers what the test adds around the agent's own deadline: the heartbeat already on
# its way when the link went and a loaded sanitizer build (4.2 s was seen there). The gate's
# processes are found once and then their own /proc entries watched (a read each, every
# 20 ms): the time measured is when they ended, not when a scan of every process under a
# loaded machine got round to seeing it (scans in a polling loop had made a gate that went
# in time look late). Runs given --timeout 300 keep a watchdog that ignored the missing
# heartbeats far outside the bound.
gone_in_bound() {
  local bound=$((HB_MS + GRACE_MS + 2000)) took l i left=0 procs=()
  while read -r l; do procs+=("$l"); done < <(host_procs "$2")
  for ((i = 0; i < 3000; i++)); do
    left=0
    for l in "${procs[@]}"; do
      # shellcheck disable=SC2086 # "PID START"
      proc_alive $l && { left=1; break; }
    done
    [ $left = 1 ] || break
    bg_pause 0.02
  done
  took=$(($(now_ms) - $3))
  if [ $left = 1 ] || ! wait_gone "$2" 600 0.1; then not_ok "$1: the gate survived"; return; fi
  [ "$took" -le "$bound" ] && ok "$1: the remote gate is gone within heartbeat $HB s + grace $GRACE s (took $took ms)" \
    || not_ok "$1: the gate took $took ms to go, over heartbeat $HB s + grace $GRACE s (+2 s)"
}

# fake_gate_on I...: the fake gate (gates/fake_gate.sh) as repo/gate.sh of test hosts I...
fake_gate_on() {
  local i
  for i in "$@"; do
    cp "$BG_ROOT/tests/integration/gates/fake_gate.sh" "$(eval echo "\$BG_HOST_${i}_ROOT")/repo/gate.sh"
  done
}
