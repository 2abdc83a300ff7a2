#!/usr/bin/env bash
# Streaming latency and watchdog reaction of `boxgate run` (issue: run a gate on a box).
#
# A gate prints a line stamped with CLOCK_REALTIME every 10 ms for 2 s; the test hosts
# share this machine's clock, so arrival minus stamp is the delay a user sees. Compared
# with plain `ssh host cmd`, at an added one-way delay of 0 and 10 ms. Then the
# watchdog: reaped_ms (first SIGTERM to the last reap) for a gate that dies on SIGTERM
# and one that ignores it (grace 1 s).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
HOSTS=$root/tests/hosts/hosts
BOXGATE=${BOXGATE:-$root/build/boxgate}
tmp=$(mktemp -d)
D=
cleanup() { [ -n "$D" ] && "$HOSTS" down "$D" >/dev/null 2>&1; rm -rf "$tmp"; }
trap cleanup EXIT

cat >"$tmp/ticker.py" <<'PY'
import sys, time
for i in range(200):
    print("tick %d %d" % (i, time.time_ns()), flush=True)
    time.sleep(0.01)
PY
cat >"$tmp/measure.py" <<'PY'
import subprocess, sys, time
cmd = sys.argv[1:]
delays = []
p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
for raw in iter(p.stdout.readline, b''):
    now = time.time_ns()
    parts = raw.split()
    if len(parts) == 3 and parts[0] == b'tick':
        delays.append((now - int(parts[2])) / 1e6)
p.wait()
delays.sort()
if len(delays) < 190:
    print("only %d lines" % len(delays)); sys.exit(1)
pct = lambda q: delays[min(len(delays) - 1, int(q * len(delays)))]
print("%.2f %.2f %d" % (pct(0.50), pct(0.99), len(delays)))
PY

# the gate's own lines reach stdout only with -v; a run that measured nothing fails the script
failed=0
printf '%-8s %-10s %10s %10s %8s\n' delay tool p50_ms p99_ms lines
for delay in 0 10; do
  D=$("$HOSTS" up --n 1 --delay "$delay") || { echo "hosts up failed"; exit 1; }
  source "$D/env.sh"
  cp "$tmp/ticker.py" "$BG_HOST_1_ROOT/repo/ticker.py"
  ini=$tmp/bench.ini
  { cat "$BG_CONFIG"; printf '\n[box t1]\nhost = h1\nrepo = /root/repo\ngate = ticker.py\nrequire_gpu = no\n'; } >"$ini"
  "$BOXGATE" --config "$ini" bootstrap --boxes t1 >/dev/null
  rtt=$("$HOSTS" rtt "$D" 1 5 2>/dev/null | head -1)
  for rep in 1 2 3; do
    b=$(python3 "$tmp/measure.py" "$BOXGATE" --config "$ini" run -v t1 --) || failed=1
    s=$(python3 "$tmp/measure.py" ssh -F "$BG_SSH_CONFIG" h1 python3 /root/repo/ticker.py)
    printf '%-8s %-10s %10s %10s %8s\n' "${delay}ms" boxgate $b
    printf '%-8s %-10s %10s %10s %8s\n' "${delay}ms" ssh $s
  done
  echo "# rtt ($delay ms added): $rtt"
  "$HOSTS" down "$D" >/dev/null; D=
done

echo
echo "watchdog reaction (reaped_ms from the TIMEOUT_HANG line, grace 1 s, 5 runs each)"
D=$("$HOSTS" up --n 1) || exit 1
source "$D/env.sh"
cp "$root/tests/integration/gates/fake_gate.sh" "$BG_HOST_1_ROOT/repo/gate.sh"
{ cat "$BG_CONFIG"; printf '\n[box w1]\nhost = h1\nrepo = /root/repo\ngate = gate.sh\nrequire_gpu = no\nkill_grace_s = 1\nallow = --mode --tag\n'; } >"$tmp/w.ini"
for mode in sleep ignore-term; do
  vals=
  for rep in 1 2 3 4 5; do
    v=$("$BOXGATE" --config "$tmp/w.ini" run -v w1 --timeout 1 -- --mode "$mode" --tag 9 2>/dev/null |
        sed -n 's/.*"reaped_ms":\([0-9]*\).*/\1/p')
    [ -n "$v" ] || failed=1
    vals="$vals ${v:-?}"
  done
  echo "  $mode: reaped_ms$vals (target: under grace 1000 + 500)"
done
exit "$failed"
