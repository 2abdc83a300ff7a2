# Connection masters as a test sees them; sourced by test scripts that define warm()
# (boxgate with a configuration whose control_persist_s is not 0).
#
# accepted I: the 'Accepted publickey' lines in test host I's sshd log (one a fresh session).
# master_pid BOX [FIELD]: the pid (or FIELD) `config check --json` lists for BOX's master
#   (empty: none).

accepted() { grep -c 'Accepted publickey' "$BG_HOSTS_DIR/h$1/sshd.log"; }
master_pid() {
  warm config check --json 2>/dev/null | python3 -c '
import json, sys
for m in json.loads(sys.stdin.readline())["masters"]:
    if m["box"] == sys.argv[1]:
        print(m[sys.argv[2]])' "$1" "${2:-pid}"
}
