#!/usr/bin/env bash
# SIGKILL the client at random moments while it pushes an 8 MiB Python file (30 trials):
# the target is always exactly the old or the new file, the .bak, when present, is a
# complete earlier version, and the next push succeeds and removes what was left.
source "$(dirname "$0")/lib.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts
TRIALS=${BG_KILL_TRIALS:-30}

D=$("$HOSTS" up --n 1) || { not_ok "test host came up"; finish; exit 1; }
trap '"$HOSTS" down "$D" >/dev/null 2>&1; rm -rf "$BG_TMP"' EXIT
source "$D/env.sh"
PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '/\.pyenv/' | paste -sd:)

L=$BG_TMP/repo
mkdir -p "$L/gate" "$BG_TMP/versions"
cd "$L" || exit 1
T=$BG_HOST_1_ROOT/repo/gate/big.py
bg() { "$BOXGATE" --config "$BG_CONFIG" "$@"; }
sha() { sha256sum <"$1" | cut -c1-64; }

# make_version N: an 8 MiB Python file (a big string literal: parses fast) unique to N.
make_version() {
  python3 - "$1" "$BG_TMP/versions/$1.py" <<'PY'
import os, sys, base64
n, out = sys.argv[1], sys.argv[2]
head = "# version %s\nDATA = '''\n" % n
tail = "\n'''\n"
size = 8 * 1024 * 1024 - len(head) - len(tail)
raw = base64.b64encode(os.urandom(size)).decode()[:size]
body = "\n".join(raw[i:i + 79] for i in range(0, size, 80))
body = (body + "x" * size)[:size]
with open(out, "w") as f:
    f.write(head + body + tail)
PY
  sha "$BG_TMP/versions/$1.py" >"$BG_TMP/versions/$1.sha"
}
known() { # known SHA: which version has it ("" when none)
  grep -lx "$1" "$BG_TMP/versions/"*.sha 2>/dev/null | head -n 1
}
session_procs() { # processes of login sessions on the host (sshd listener and holders excluded)
  local p n=0
  for p in $("$HOSTS" pids "$D" 1); do
    { tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | grep -q -e '/bin/sh -c' -e 'sftp' -e 'flock' -e 'sshd: root' && n=$((n + 1))
  done
  echo $n
}
settle() { # waits (10 s at most) until the killed client's remote commands have ended
  local k=0
  while [ "$(session_procs)" != 0 ] && [ $k -lt 200 ]; do sleep 0.05; k=$((k + 1)); done
}

make_version 0
cp "$BG_TMP/versions/0.py" gate/big.py
expect_rc 0 "initial push of an 8 MiB file" bg push --root "$L" --boxes h1 gate/big.py
make_version 1
cp "$BG_TMP/versions/1.py" gate/big.py
start=$(date +%s%N)
expect_rc 0 "a timed push" bg push --no-local-check --root "$L" --boxes h1 gate/big.py
dur_ms=$((($(date +%s%N) - start) / 1000000))
[ "$dur_ms" -lt 200 ] && dur_ms=200
diag "one push takes about $dur_ms ms; kills land uniformly in 0..$((dur_ms * 12 / 10)) ms"

bad_target=0 bad_bak=0 bad_recover=0 left_temps=0 old=0 new=0 baks=0
deadline=$((SECONDS + 300))
for trial in $(seq 2 $((TRIALS + 1))); do
  [ $SECONDS -lt $deadline ] || { not_ok "the kill trials ran out of time at trial $trial"; break; }
  prev=$(sha "$T")
  make_version "$trial"
  cp "$BG_TMP/versions/$trial.py" gate/big.py
  want=$(cat "$BG_TMP/versions/$trial.sha")
  delay=$((RANDOM % (dur_ms * 12 / 10 + 1)))
  # The binary itself in the background: killing a subshell would leave it running.
  "$BOXGATE" --config "$BG_CONFIG" push --no-local-check --root "$L" --boxes h1 gate/big.py >/dev/null 2>&1 &
  pid=$!
  sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  # At this instant and once the box has settled: exactly the old or the new file.
  for when in now settled; do
    [ "$when" = settled ] && settle
    got=$(sha "$T")
    if [ "$got" != "$prev" ] && [ "$got" != "$want" ]; then
      bad_target=$((bad_target + 1)); diag "trial $trial ($delay ms, $when): target is neither old nor new"
    fi
    if [ -e "$T.bak" ] && [ -z "$(known "$(sha "$T.bak")")" ]; then
      bad_bak=$((bad_bak + 1)); diag "trial $trial ($delay ms, $when): .bak is not a complete version"
    fi
  done
  [ "$got" = "$want" ] && new=$((new + 1)) || old=$((old + 1))
  [ -n "$(find "$BG_HOST_1_ROOT/repo/gate" -name '.big.py.boxgate-*')" ] && left_temps=$((left_temps + 1))
  [ -e "$T.bak" ] && baks=$((baks + 1))
  # The next push succeeds, lands the new file and cleans up.
  if ! bg push --no-local-check --root "$L" --boxes h1 gate/big.py >"$BG_TMP/rec.out" 2>&1; then
    bad_recover=$((bad_recover + 1)); diag "trial $trial: the next push failed: $(cat "$BG_TMP/rec.out")"
  elif [ "$(sha "$T")" != "$want" ] || [ -n "$(find "$BG_HOST_1_ROOT/repo/gate" -name '.big.py.boxgate-*')" ]; then
    bad_recover=$((bad_recover + 1)); diag "trial $trial: after the next push: wrong target or temporary files left"
  fi
done
diag "trials: $TRIALS; killed with the old target: $old, with the new: $new; temporary files left by the kill: $left_temps"
[ $bad_target = 0 ] && ok "after every kill the target is exactly the old or the new file ($TRIALS trials)" || not_ok "$bad_target bad targets"
[ $bad_bak = 0 ] && ok "the .bak is always a complete earlier version ($baks trials had one)" || not_ok "$bad_bak partial .bak files"
[ $bad_recover = 0 ] && ok "the next push always succeeds and leaves no temporary file" || not_ok "$bad_recover failed recoveries"
[ "$old" -gt 0 ] && [ "$new" -gt 0 ] && ok "kills landed both before and after the swap" || not_ok "kills all landed on one side (old $old, new $new)"
[ "$left_temps" -gt 0 ] && ok "some kills interrupted an upload (and left a temporary file to clean)" || diag "no kill left a temporary file"
expect_rc 0 "status after the trials" bg status --root "$L" --boxes h1 gate/big.py
has "$OUT_FILE" '^h1: gate/big.py: same' "the box ends with the local content"

finish
