# Waiting for events instead of sleeping a fixed time; sourced by test scripts.
#
# wait_for FILE PATTERN [DEADLINE_S]: until a line of FILE matches the extended regex
#   PATTERN (0), or DEADLINE_S seconds (default 60) pass (1). A missing FILE is empty.
# wait_until DEADLINE_S COMMAND...: until COMMAND succeeds (0) or the deadline passes (1).
# Both poll every 0.05 s: the deadline only bounds a failure (or, short, a bound a test
# asserts), it is never the wait itself.
#
# A poll forks no process but COMMAND's: the clock is $EPOCHREALTIME and the pause lib.sh's
# bg_pause, where a date and a sleep each cost a process every 0.05 s.
declare -F bg_pause >/dev/null || bg_pause() { sleep "$1"; }

wait_until() {
  local deadline=$1 now end
  shift
  now=${EPOCHREALTIME//[!0-9]/}
  end=$((10#$now / 1000 + deadline * 1000))
  until "$@"; do
    now=${EPOCHREALTIME//[!0-9]/}
    [ $((10#$now / 1000)) -ge "$end" ] && return 1
    bg_pause 0.05
  done
  return 0
}

wait_for() {
  wait_until "${3:-60}" grep -Eq -- "$2" "$1" 2>/dev/null
}
