# Waiting for events instead of sleeping a fixed time; sourced by test scripts.
#
# wait_for FILE PATTERN [DEADLINE_S]: until a line of FILE matches the extended regex
#   PATTERN (0), or DEADLINE_S seconds (default 60) pass (1). A missing FILE is empty.
# wait_until DEADLINE_S COMMAND...: until COMMAND succeeds (0) or the deadline passes (1).
# Both poll every 0.05 s: the deadline only bounds a failure (or, short, a bound a test
# asserts), it is never the wait itself.

wait_until() {
  local deadline=$1 end
  shift
  end=$(($(date +%s%N) / 1000000 + deadline * 1000))
  until "$@"; do
    [ "$(($(date +%s%N) / 1000000))" -ge "$end" ] && return 1
    sleep 0.05
  done
  return 0
}

wait_for() {
  wait_until "${3:-60}" grep -Eq -- "$2" "$1" 2>/dev/null
}
