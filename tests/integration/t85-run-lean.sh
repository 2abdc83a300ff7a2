#!/usr/bin/env bash
# What a run costs on the box, counted, not timed: the run's one command starts the agent
# once (the check in front of it is shell builtins: no `agent version` process; whether
# the file is the agent the run's framed lines say), a shell that cannot execute what is
# in the agent's place says nothing the run shows, and the agent reads /proc to hunt a
# gate's leftovers only when a child of its own is left.
source "$(dirname "$0")/lib.sh"

AGENT=${BG_BUILD:-$BG_ROOT/build}/boxgate-agent
[ -x "$AGENT" ] || skip_all "no built agent"
LOCKS=$BG_TMP/locks

# ---------------------------------------------------------------- the agent alone
# --stderr-fd N: the agent's notes go to fd N, fd 2 (the shell's /dev/null) is let go.
expect_rc 127 "run --stderr-fd 4 of a missing gate" \
  bash -c '"$0" run --stderr-fd 4 --no-stdin --lock-dir "$1" -- /nonexistent/gate 4>"$2" 2>/dev/null' \
  "$AGENT" "$LOCKS" "$BG_TMP/err4"
has "$BG_TMP/err4" "boxgate-agent: cannot run /nonexistent/gate" "... its note arrives on fd 4"
expect_rc 2 "run --stderr-fd 1 (not above 2) is a usage error" "$AGENT" run --stderr-fd 1 --no-stdin -- true
expect_rc 2 "run --stderr-fd x is a usage error" "$AGENT" run --stderr-fd x --no-stdin -- true
expect_rc 2 "run --stderr-fd 9 (not open) is a usage error" "$AGENT" run --stderr-fd 9 --no-stdin -- true
expect_rc 2 "run --stderr-fd without its value is a usage error" "$AGENT" run --stderr-fd
expect_rc 2 "--stderr-fd after another option is not taken" "$AGENT" run --no-stdin --stderr-fd 4 -- true

# An LD_PRELOAD counter of opendir("/proc"): the agent's scan of every process.
cat >"$BG_TMP/procscan.c" <<'EOF'
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
DIR *opendir(const char *name)
{
	static DIR *(*real)(const char *);
	if (!real)
		real = (DIR * (*)(const char *)) dlsym(RTLD_NEXT, "opendir");
	const char *log = getenv("PROCSCAN_LOG");
	if (log && !strcmp(name, "/proc")) {
		FILE *f = fopen(log, "a");
		if (f) {
			fputs("scan\n", f);
			fclose(f);
		}
	}
	return real(name);
}
EOF
cc -shared -fPIC -o "$BG_TMP/procscan.so" "$BG_TMP/procscan.c" -ldl || skip_all "cannot build the counter"
scans() { if [ -f "$BG_TMP/scans" ]; then wc -l <"$BG_TMP/scans" | tr -d ' '; else echo 0; fi; }
# The gate (a shell) forks and reaps its own children: none is left when it exits.
rm -f "$BG_TMP/scans"
expect_rc 0 "a gate that leaves nothing behind" env LD_PRELOAD="$BG_TMP/procscan.so" PROCSCAN_LOG="$BG_TMP/scans" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
  "$AGENT" run --no-stdin --lock-dir "$LOCKS" -- sh -c 'x=$(echo child); /bin/true; echo "$x"'
check "... no scan of /proc ($(scans))" test "$(scans)" = 0
rm -f "$BG_TMP/scans"
expect_rc 0 "a gate that leaves a process behind" env LD_PRELOAD="$BG_TMP/procscan.so" PROCSCAN_LOG="$BG_TMP/scans" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
  "$AGENT" run --no-stdin --lock-dir "$LOCKS" --grace 1 -- sh -c '(setsid sleep 300 &) ; exit 0'
has "$ERR_FILE" "left 1 process behind" "... is still found"
check "... through /proc ($(scans) scans)" test "$(scans)" -ge 1
rm -f "$BG_TMP/scans"
expect_rc 0 "a gate whose exited child is a zombie it never reaped" env LD_PRELOAD="$BG_TMP/procscan.so" PROCSCAN_LOG="$BG_TMP/scans" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
  "$AGENT" run --no-stdin --lock-dir "$LOCKS" -- sh -c 'sleep 0.1 & exec /bin/sleep 0.5'
check "... is reaped without a leftover" test "$(grep -c 'left .* behind' "$ERR_FILE")" = 0

# ---------------------------------------------------------------- through ssh
D=''
trap '[ -z "$D" ] || "$BG_ROOT/tests/hosts/hosts" down "$D" >/dev/null 2>&1; rm -rf "$BG_TMP"' EXIT
D=$("$BG_ROOT/tests/hosts/hosts" up --n 1) || { not_ok "test hosts came up"; finish; exit 1; }
# shellcheck disable=SC1091
source "$D/env.sh"
fake_gate_on 1
INI=$BG_TMP/lean.ini
cat "$BG_CONFIG" >"$INI"
printf '\n[box g1]\nhost = h1\nrepo = /root/repo\ngate = gate.sh\nrequire_gpu = no\nallow = --kind\n' >>"$INI"
bg() { "$BOXGATE" --config "$INI" "$@"; }

expect_rc 0 "run installs the agent" bg run --no-results g1 -- --kind x
agent=$(ls -d "$BG_HOST_1_ROOT"/.cache/boxgate/agent-*)
# The agent moved aside, a logging stand-in in its place: every start of it is a line.
mv "$agent" "$agent.real"
printf '#!/bin/sh\necho "$1" >>"$HOME/agent-starts"\nexec "$0.real" "$@"\n' >"$agent"
chmod 755 "$agent"
starts() { if [ -f "$BG_HOST_1_ROOT/agent-starts" ]; then tr '\n' ' ' <"$BG_HOST_1_ROOT/agent-starts"; fi; }
rm -f "$BG_HOST_1_ROOT/agent-starts"
expect_rc 0 "a run through the stand-in" bg run --no-results g1 -- --kind x
has "$OUT_FILE" "^PASS_GATE" "... passes"
check "... starts the agent once, as run, no version check ($(starts))" test "$(starts)" = "run "
rm -f "$BG_HOST_1_ROOT/agent-starts"
expect_rc 0 "a recorded run (the push manifest read in front)" bg run g1 --results "$BG_TMP/r.jsonl" -- --kind x
check "... starts the agent once too ($(starts))" test "$(starts)" = "run "
rm -f "$agent"
mv "$agent.real" "$agent"

# Bytes that are no program in the agent's place (another machine's build on a shared
# home): the shell cannot execute them; its complaint is not the run's output.
head -c 4096 /dev/urandom >"$agent"
chmod 755 "$agent"
expect_rc 0 "run with random bytes in the agent's place" bg run g1 --results "$BG_TMP/r.jsonl" -- --kind x
has "$ERR_FILE" "agent installed" "... installs the agent"
hasnt "$ERR_FILE" "cannot execute|Exec format|binary file" "... the shell's complaint is not shown"
check "... the gate ran once" test "$(grep -c '^PASS_GATE' "$OUT_FILE")" = 1
pycheck "... and the manifest was read once, as in any run" '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])][-1]
assert isinstance(r.get("pushed"), list) and not r.get("pushed_error"), r
' "$BG_TMP/r.jsonl"
# A program that talks in the agent's place: not the agent either. What it said is not
# shown; the agent is installed over it and the gate runs once.
printf '#!/bin/sh\necho "impostor on stdout"\necho "impostor on stderr" >&2\nexit 3\n' >"$agent"
chmod 755 "$agent"
expect_rc 0 "run with a talking program in the agent's place" bg run --no-results g1 -- --kind x
has "$ERR_FILE" "agent installed" "... installs the agent"
hasnt "$OUT_FILE" "impostor" "... its stdout is not shown"
hasnt "$ERR_FILE" "impostor" "... nor its stderr"
check "... the gate ran once" test "$(grep -c '^PASS_GATE' "$OUT_FILE")" = 1
# A program killed by a signal there has no exit status of its own: the agent failing.
printf '#!/bin/sh\nkill -9 $$\n' >"$agent"
chmod 755 "$agent"
expect_rc 1 "a program killed by a signal in the agent's place" bg run --no-results g1 -- --kind x
has "$ERR_FILE" "before reporting" "... is an agent that failed, not a missing one"

# ---------------------------------------------------------------- through a connection master
# What the box sends last, the wrapper's status trailer with the EOF and close behind it,
# read by the master in one go: the trailer is no output, so the master has nothing to
# pass on, but the command's end is in hand. It must go on at once, never wait on a
# socket that has nothing more (it waited a poll's whole second there). The master is
# stopped while the command ends, so that all of it waits in its socket; an LD_PRELOAD
# counter logs each of its waits on the session and the client (two fds) that timed out.
source "$(dirname "$0")/wait.sh"
WARM=$BG_TMP/warm.ini
sed 's/^control_persist_s = 0$/control_persist_s = 60/' "$INI" >"$WARM"
warm() { "$BOXGATE" --config "$WARM" "$@"; }
source "$(dirname "$0")/masters.sh"
cat >"$BG_TMP/polls.c" <<'EOF2'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	static int (*real)(struct pollfd *, nfds_t, int);
	if (!real)
		real = (int (*)(struct pollfd *, nfds_t, int))dlsym(RTLD_NEXT, "poll");
	int r = real(fds, n, timeout);
	const char *log = getenv("POLLS_LOG");
	if (log && r == 0 && timeout > 0) {
		FILE *f = fopen(log, "a");
		if (f) {
			fprintf(f, "%d %lu %d\n", (int)getpid(), (unsigned long)n, timeout);
			fclose(f);
		}
	}
	return r;
}
EOF2
cc -shared -fPIC -o "$BG_TMP/polls.so" "$BG_TMP/polls.c" -ldl || skip_all "cannot build the poll counter"
expect_rc 0 "a master for h1, the counter in it" env LD_PRELOAD="$BG_TMP/polls.so" POLLS_LOG="$BG_TMP/polls" \
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" "$BOXGATE" --config "$WARM" exec -n -w h1 -- true
mpid=$(master_pid h1)
check "... is up ($mpid)" test -n "$mpid"
rm -f "$BG_HOST_1_ROOT/wpid" "$BG_HOST_1_ROOT/go"
# $$ in the command is the wrapper's shell: it writes the trailer as it exits. The command
# prints nothing: its stdout would be passed on in the same round.
warm exec -n -w h1 -- 'echo $$ >"$HOME/wpid"; while [ ! -e "$HOME/go" ]; do sleep 0.01; done' \
  >"$BG_TMP/x.out" 2>"$BG_TMP/x.err" &
xpid=$!
wait_until 60 test -s "$BG_HOST_1_ROOT/wpid"
wpid=$(cat "$BG_HOST_1_ROOT/wpid")
gone() { [ ! -e "/proc/$1" ] || [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" = Z ]; }
# the bytes waiting in the master's TCP socket, settled (the box has sent all it will)
recvq() { ss -Htnp 2>/dev/null | awk -v p="pid=$mpid," 'index($0, p) { print $2; exit }'; }
settled() {
  local a b
  a=$(recvq)
  [ "${a:-0}" -gt 0 ] || return 1
  bg_pause 0.2
  b=$(recvq)
  [ "$a" = "$b" ]
}
kill -STOP "$mpid"
echo "done" >"$BG_HOST_1_ROOT/go"
check "the command ends while its master is stopped" wait_until 60 gone "$wpid"
check "... what the box sent last waits in the master's socket ($(recvq) bytes)" wait_until 60 settled
: >"$BG_TMP/polls"
kill -CONT "$mpid"
rc=0
wait "$xpid" || rc=$?
check "... exit 0 through the master (rc $rc)" test "$rc" = 0
check "... no output (it printed none)" test ! -s "$BG_TMP/x.out"
n=$(awk -v p="$mpid" '$1 == p && $2 == 2' "$BG_TMP/polls" | wc -l)
check "... the master read the end and waited out no poll for it ($n)" test "$n" = 0
warm disconnect >/dev/null 2>&1
finish
