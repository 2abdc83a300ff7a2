# Connection masters as a test sees them; sourced by test scripts that define warm()
# (boxgate with a configuration whose control_persist_s is not 0).
#
# accepted I: the 'Accepted publickey' lines in test host I's sshd log (one a fresh session).
# master_pid BOX [FIELD]: the pid (or FIELD) `config check --json` lists for BOX's master
#   (empty: none).
# master_port PID: the local TCP port of master PID's SSH connection (empty: none found),
#   the "port N" of that connection's lines in the test host's sshd log.
# cold_warm_same DESC WANT CMD ARGS...: boxgate CMD ARGS run cold() and warm(), plain and with
#   --json (right after CMD): both end with exit WANT and print the same lines, stdout and
#   stderr, once the test's norm FILE has taken out what differs by nature (timings, ids;
#   the trace's lines go anyway). $SETUP, when set, runs before each of the four. With
#   THROUGH set (a pattern), each warm one's trace must also match it (it went through the
#   master): one more test each. The last warm one's output stays in $BG_TMP/w.out, w.err.

accepted() { grep -c 'Accepted publickey' "$BG_HOSTS_DIR/h$1/sshd.log"; }
master_pid() {
  warm config check --json 2>/dev/null | python3 -c '
import json, sys
for m in json.loads(sys.stdin.readline())["masters"]:
    if m["box"] == sys.argv[1]:
        print(m[sys.argv[2]])' "$1" "${2:-pid}"
}
master_port() {
  local f l hex inos=" "
  for f in /proc/"$1"/fd/*; do
    l=$(readlink "$f" 2>/dev/null) || continue
    case $l in socket:\[*\]) l=${l#socket:[}; inos+="${l%]} " ;; esac
  done
  # an established connection (st 01) on one of its sockets: local_address is ADDR:PORT in hex
  hex=$(cat /proc/"$1"/net/tcp /proc/"$1"/net/tcp6 2>/dev/null |
    awk -v inos="$inos" 'index(inos, " " $10 " ") && $4 == "01" { sub(/.*:/, "", $2); print $2; exit }')
  [ -z "$hex" ] || echo $((16#$hex))
}
# the lines of FILE as cold_warm_same compares them: --json's lines of the command's stderr
# after the rest, in their own order. The command writes its stdout and stderr to two pipes,
# and which of two lines written to both at once is read first is the scheduler's choice,
# cold or warm (seen under load: a gate's stderr line before its result line cold, after it
# warm); within each stream the order is kept and compared.
cold_warm_lines() {
  norm "$1" | grep -v '^boxgate-trace' |
    awk 'index($0, "\"stream\":\"stderr\"") { e[++n] = $0; next } { print } END { for (i = 1; i <= n; i++) print e[i] }'
}
cold_warm_same() {
  local desc=$1 want=$2 cmd=$3 f rc1 rc2
  shift 3
  for f in "" --json; do
    rc1=0 rc2=0
    ${SETUP:-}
    cold "$cmd" $f "$@" >"$BG_TMP/c.out" 2>"$BG_TMP/c.err" || rc1=$?
    ${SETUP:-}
    BOXGATE_TRACE=1 warm "$cmd" $f "$@" >"$BG_TMP/w.out" 2>"$BG_TMP/w.err" || rc2=$?
    if [ "$rc1" = "$want" ] && [ "$rc2" = "$want" ] &&
      diff <(cold_warm_lines "$BG_TMP/c.out") <(cold_warm_lines "$BG_TMP/w.out") >/dev/null &&
      diff <(cold_warm_lines "$BG_TMP/c.err") <(cold_warm_lines "$BG_TMP/w.err") >/dev/null; then
      ok "$desc ${f:-plain}: exit $want and the same lines cold and warm"
    else
      not_ok "$desc ${f:-plain}: cold exit $rc1, warm exit $rc2 (want $want)"
      diag "$(diff <(cold_warm_lines "$BG_TMP/c.out") <(cold_warm_lines "$BG_TMP/w.out") | head -20)"
      diag "$(diff <(cold_warm_lines "$BG_TMP/c.err") <(cold_warm_lines "$BG_TMP/w.err") | head -20)"
    fi
    if [ -n "${THROUGH:-}" ]; then
      if grep -Eq "$THROUGH" "$BG_TMP/w.err"; then ok "... the warm one through the master"; else
        not_ok "... the warm one through the master"
        diag "$(grep -i 'master' "$BG_TMP/w.err" | head -5)"
      fi
    fi
  done
}
