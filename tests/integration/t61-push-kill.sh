#!/usr/bin/env bash
# SIGKILL the client at random moments while it pushes an 8 MiB Python file (6 trials; 30
# under make test-long, BG_TEST_LONG=1; half before and half after the swap moment measured
# on an unkilled push):
# the target is always exactly the old or the new file, the .bak, when present, is a
# complete earlier version, and the next push succeeds and removes what was left.
source "$(dirname "$0")/lib.sh"
if [ -n "${BG_TEST_LONG:-}" ]; then TRIALS=${BG_KILL_TRIALS:-30}; else TRIALS=${BG_KILL_TRIALS:-6}; fi

hosts_up 1
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
settle() { # waits (10 s at most) until the killed client's remote commands have ended
  local k
  for ((k = 0; k < 200; k++)); do host_has_proc '/bin/sh -c|sftp|flock|sshd: root' || return 0; bg_pause 0.05; done
}

make_version 0
cp "$BG_TMP/versions/0.py" gate/big.py
expect_rc 0 "initial push of an 8 MiB file" bg push --root "$L" --boxes h1 gate/big.py
# hold_target: keeps the target open (descriptor $held), so swapped can tell, with no process
# (the polls below run every few milliseconds), whether the name now holds another file.
hold_target() { exec {held}<"$T"; }
swapped() { ! [ "$T" -ef "/dev/fd/$held" ]; }
upload_seen() { local f; for f in "$BG_HOST_1_ROOT"/repo/gate/.big.py.boxgate-*; do [ -e "$f" ] && return 0; done; return 1; }
# time_push N: pushes version N unkilled in the background, polling the target's inode
# (the swap is a rename), and sets SWAP_MS (start to swap) and END_MS (start to exit).
time_push() {
  local start pid
  make_version "$1"
  cp "$BG_TMP/versions/$1.py" gate/big.py
  hold_target
  SWAP_MS=
  set_now_ms; start=$NOW_MS
  "$BOXGATE" --config "$BG_CONFIG" push --no-local-check --root "$L" --boxes h1 gate/big.py \
    >"$BG_TMP/timed.out" 2>&1 {held}<&- &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    set_now_ms
    [ -z "$SWAP_MS" ] && swapped && SWAP_MS=$((NOW_MS - start))
    bg_pause 0.005
  done
  set_now_ms; END_MS=$((NOW_MS - start))
  # A swap right before the exit may fall between two polls.
  [ -z "$SWAP_MS" ] && swapped && SWAP_MS=$END_MS
  exec {held}<&-
  wait "$pid"
}
# Calibration: two unkilled pushes of this very build (a sanitizer build is several times
# slower), so the kill moments below cover both sides of the swap in any build.
swap_ms=0 end_ms=0
for v in 1 2; do
  rc=0; time_push "$v" || rc=$?
  if [ "$rc" != 0 ] || [ -z "$SWAP_MS" ]; then
    not_ok "a timed push (exit $rc, swap seen: ${SWAP_MS:-no})"; diag "$(cat "$BG_TMP/timed.out")"; finish; exit 1
  fi
  [ "$SWAP_MS" -gt "$swap_ms" ] && swap_ms=$SWAP_MS
  [ "$END_MS" -gt "$end_ms" ] && end_ms=$END_MS
done
ok "a timed push"
diag "an unkilled push swaps at about $swap_ms ms and exits at $end_ms ms"

# kill_delay TRIAL: odd trials kill before the measured swap, even ones between the swap
# and a little past the exit, each uniformly in its window.
kill_delay() {
  if [ $(($1 % 2)) = 1 ]; then echo $((RANDOM * swap_ms / 32768))
  else echo $((swap_ms + RANDOM * (end_ms * 12 / 10 - swap_ms + 1) / 32768)); fi
}

bad_target=0 bad_bak=0 bad_recover=0 left_temps=0 old=0 new=0 baks=0
# The trials' time budget follows the calibrated push (two pushes a trial, three times over),
# so a slow or loaded machine is no failure; 300 s at least.
budget=$((TRIALS * end_ms * 6 / 1000 + 60))
[ "$budget" -lt 300 ] && budget=300
deadline=$((SECONDS + budget))
for trial in $(seq 3 $((TRIALS + 2))); do
  [ $SECONDS -lt $deadline ] || { not_ok "the kill trials ran out of time at trial $trial"; break; }
  prev=$(sha "$T")
  make_version "$trial"
  cp "$BG_TMP/versions/$trial.py" gate/big.py
  want=$(cat "$BG_TMP/versions/$trial.sha")
  delay=$(kill_delay "$trial")
  hold_target
  # The binary itself in the background: killing a subshell would leave it running.
  "$BOXGATE" --config "$BG_CONFIG" push --no-local-check --root "$L" --boxes h1 gate/big.py >/dev/null 2>&1 {held}<&- &
  pid=$!
  # The first two trials kill on an event, so both sides of the swap are hit by
  # construction: trial 3 once the upload's temporary file exists (before the swap),
  # trial 4 once the target is the new file (after it). The rest kill at random moments.
  case $trial in
    3) until upload_seen || ! kill -0 "$pid" 2>/dev/null; do bg_pause 0.002; done
       delay="upload seen" ;;
    4) until swapped || ! kill -0 "$pid" 2>/dev/null; do bg_pause 0.002; done
       delay="swap seen" ;;
    *) sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))" ;;
  esac
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  exec {held}<&-
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
  upload_seen && left_temps=$((left_temps + 1))
  [ -e "$T.bak" ] && baks=$((baks + 1))
  # The next push succeeds, lands the new file and cleans up.
  if ! bg push --no-local-check --root "$L" --boxes h1 gate/big.py >"$BG_TMP/rec.out" 2>&1; then
    bad_recover=$((bad_recover + 1)); diag "trial $trial: the next push failed: $(cat "$BG_TMP/rec.out")"
  elif [ "$(sha "$T")" != "$want" ] || upload_seen; then
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
