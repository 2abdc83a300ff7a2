#!/usr/bin/env bash
# boxgate exec forwards its standard input, against 3 real sshd test hosts and the
# local box: one box streams 50 MB byte-exact in bounded memory, several boxes get the
# same bytes, a box that stops reading holds no other back, NUL bytes pass, end of input
# closes the command's stdin, -n and a terminal give an empty stdin, bad input says so.
source "$(dirname "$0")/lib.sh"

hosts_up 3
bg() { "$BOXGATE" --config "$BG_CONFIG" "$@"; }
for i in 1 2 3; do
  root_var=BG_HOST_${i}_ROOT
  echo "h$i" >"${!root_var}/id"
done

# bg_in FILE ARGS...: boxgate with FILE on its stdin, bounded so a hang fails the test.
bg_in() { local f=$1; shift; timeout 120 "$BOXGATE" --config "$BG_CONFIG" exec "$@" <"$f"; }

# Peak RSS (KiB) of boxgate exec with FILE on stdin; the output goes to $BG_TMP/rss.out.
# ASan's freed-memory quarantine is its memory, not boxgate's: kept at 1 MB (t20).
rss_for() {
  local f=$1; shift
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1" python3 - "$BOXGATE" "$BG_CONFIG" "$f" "$BG_TMP/rss.out" "$@" <<'PY'
import resource, subprocess, sys
with open(sys.argv[3], 'rb') as inp, open(sys.argv[4], 'wb') as out:
    subprocess.run([sys.argv[1], '--config', sys.argv[2], 'exec'] + sys.argv[5:], stdin=inp,
                   stdout=out, timeout=300, check=False)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
}

head -c 5000000 /dev/urandom >"$BG_TMP/in5"
head -c 50000000 /dev/urandom >"$BG_TMP/in50"
sum5=$(sha256sum <"$BG_TMP/in5" | cut -d' ' -f1)
sum50=$(sha256sum <"$BG_TMP/in50" | cut -d' ' -f1)

# --- one box: the stream goes through whole, in bounded memory ---
small=$(rss_for "$BG_TMP/in5" --boxes h1 -- sha256sum)
grep -qx "h1: $sum5  -" "$BG_TMP/rss.out" && ok "one box: 5 MB of stdin arrive byte-exact (sha256 on the box)" \
  || { not_ok "one box: 5 MB of stdin"; diag "$(cat "$BG_TMP/rss.out")"; }
big=$(rss_for "$BG_TMP/in50" --boxes h1 -- sha256sum)
grep -qx "h1: $sum50  -" "$BG_TMP/rss.out" && ok "one box: 50 MB of stdin arrive byte-exact (sha256 on the box)" \
  || { not_ok "one box: 50 MB of stdin"; diag "$(cat "$BG_TMP/rss.out")"; }
[ -n "$small" ] && [ -n "$big" ] && [ $((big - small)) -lt 16384 ] \
  && ok "one box: memory stays flat: peak RSS ${small} KiB for 5 MB, ${big} KiB for 50 MB" \
  || not_ok "one box: peak RSS ${small:-?} KiB for 5 MB but ${big:-?} KiB for 50 MB"

# --- many boxes: the same bytes to every box, read once ---
many=$(rss_for "$BG_TMP/in50" --boxes 'h[1-3],local' -- sha256sum)
[ "$(grep -cx "[a-z0-9]*: $sum50  -" "$BG_TMP/rss.out")" = 4 ] \
  && ok "h[1-3] and local: each gets the same 50 MB byte-exact" \
  || { not_ok "many boxes: 50 MB each"; diag "$(cat "$BG_TMP/rss.out")"; }
[ -n "$many" ] && [ -n "$small" ] && [ $((many - small)) -lt 16384 ] \
  && ok "many boxes: memory stays flat (the input is spooled): ${many} KiB for 50 MB to 4 boxes" \
  || not_ok "many boxes: peak RSS ${many:-?} KiB against ${small:-?} KiB"
cat "$BG_TMP/in50" | timeout 120 "$BOXGATE" --config "$BG_CONFIG" exec --boxes 'h[2-3]' -- sha256sum >"$BG_TMP/pipe.out" 2>&1
[ "$(grep -cx "h[23]: $sum50  -" "$BG_TMP/pipe.out")" = 2 ] && ok "from a pipe too (not only a file)" \
  || { not_ok "from a pipe"; diag "$(cat "$BG_TMP/pipe.out")"; }

# --- a box that stops reading stalls nobody ---
expect_rc 0 "head -c1 on h1, cat|sha256sum on h2 and h3" bg_in "$BG_TMP/in50" --boxes 'h[1-3]' -- \
  'case $(cat /root/id) in h1) head -c1 >/dev/null; echo took-one;; *) cat | sha256sum;; esac'
has "$OUT_FILE" '^h1: took-one$' "h1 took one byte and ended"
[ "$(grep -cx "h[23]: $sum50  -" "$OUT_FILE")" = 2 ] && ok "h2 and h3 still got all 50 MB" \
  || { not_ok "h2 and h3 after h1 stopped reading"; diag "$(cat "$OUT_FILE")"; }
# h1 never reads and waits (60 s at most) until h2 and h3 have hashed all their input:
# were they held back by h1, it would wait out its deadline.
expect_rc 0 "a box that never reads and runs on holds the readers back by nothing" bg_in "$BG_TMP/in5" \
  --boxes 'h[1-3]' -- "case \$(cat /root/id) in h1) i=0; until [ -e $BG_TMP/done.h2 ] && [ -e $BG_TMP/done.h3 ] || [ \$i = 600 ]; do sleep 0.1; i=\$((i + 1)); done; [ -e $BG_TMP/done.h2 ] && [ -e $BG_TMP/done.h3 ] && echo slept || echo gave-up;; *) sha256sum; touch $BG_TMP/done.\$(cat /root/id);; esac"
[ -e "$BG_TMP/done.h2" ] && [ -e "$BG_TMP/done.h3" ] && grep -qx "h1: slept" "$OUT_FILE" && [ "$(grep -cx "h[23]: $sum5  -" "$OUT_FILE")" = 2 ] \
  && ok "h2 and h3 finished their 5 MB before h1 woke" || { not_ok "readers not held back"; diag "$(cat "$OUT_FILE")"; }
start=$(date +%s)
yes | timeout 60 "$BOXGATE" --config "$BG_CONFIG" exec --boxes 'h[1-3],local' -- 'head -c 4' >"$BG_TMP/yes.out" 2>&1
rc=$?
[ $rc = 0 ] && [ "$(grep -c ': y$' "$BG_TMP/yes.out")" = 8 ] && [ $(($(date +%s) - start)) -lt 30 ] \
  && ok "endless input: every box took what it wanted and boxgate ended (exit 0)" \
  || { not_ok "endless input (exit $rc)"; diag "$(cat "$BG_TMP/yes.out")"; }
# A command that stops reading and ends while boxgate is still sending ends with its
# own status: a stdin packet the socket took only part of is finished before the close
# (it was once "connection lost at channel close"). Several rounds, as the window is narrow.
lost=0
for round in 1 2 3 4 5 6 7 8; do
  yes | timeout 60 "$BOXGATE" --config "$BG_CONFIG" exec --boxes 'h[1-3],local' -- 'head -n 2' >"$BG_TMP/yes.out" 2>&1
  rc=$?
  [ $rc = 0 ] && [ "$(grep -c ': y$' "$BG_TMP/yes.out")" = 8 ] \
    || { lost=$((lost + 1)); diag "round $round: exit $rc: $(grep -v ': y$' "$BG_TMP/yes.out")"; }
done
[ $lost = 0 ] && ok "endless input, 8 rounds on 4 boxes: each ends with head's exit 0" \
  || not_ok "endless input: $lost of 8 rounds did not end with exit 0"
yes | timeout 60 "$BOXGATE" --config "$BG_CONFIG" exec --boxes h1 -- 'head -c 4' >"$BG_TMP/yes1.out" 2>&1
rc=$?
[ $rc = 0 ] && [ "$(grep -c '^h1: y$' "$BG_TMP/yes1.out")" = 2 ] && ok "endless input, one box: boxgate ends with the command" \
  || { not_ok "endless input, one box (exit $rc)"; diag "$(cat "$BG_TMP/yes1.out")"; }

# --- bytes pass unchanged; end of input closes stdin ---
python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 4 + b"\0\0tail-without-newline")' >"$BG_TMP/bin"
binsum=$(sha256sum <"$BG_TMP/bin" | cut -d' ' -f1)
expect_rc 0 "binary input with NUL bytes" bg_in "$BG_TMP/bin" --boxes 'h1,h2,local' -- sha256sum
[ "$(grep -cx "[a-z0-9]*: $binsum  -" "$OUT_FILE")" = 3 ] && ok "every byte value, NULs included, arrives unchanged on 3 boxes" \
  || { not_ok "binary input"; diag "$(cat "$OUT_FILE")"; }
printf 'one\ntwo\n' >"$BG_TMP/lines"
expect_rc 0 "a command reading lines to the end" bg_in "$BG_TMP/lines" --boxes 'h1,local' -- \
  'while read -r l; do echo "got $l"; done; echo end'
[ "$(grep -c '^h1: got one$\|^h1: got two$\|^h1: end$' "$OUT_FILE")" = 3 ] && [ "$(grep -c '^local: ' "$OUT_FILE")" = 3 ] \
  && ok "the end of the input ends the command's stdin (ssh box and local box)" || { not_ok "end of input"; diag "$(cat "$OUT_FILE")"; }
expect_rc 0 "an empty input" bg exec --boxes 'h1,h2' -- 'wc -c' </dev/null
[ "$(grep -cx 'h[12]: 0' "$OUT_FILE")" = 2 ] && ok "an empty input: the command reads end of file at once" || { not_ok "empty input"; diag "$(cat "$OUT_FILE")"; }

# --- -n, a terminal: the command's stdin is empty ---
expect_rc 0 "-n with input waiting" bg_in "$BG_TMP/in5" -n --boxes 'h1,local' -- 'wc -c'
[ "$(grep -cx '[a-z0-9]*: 0' "$OUT_FILE")" = 2 ] && ok "-n: the command reads nothing" || { not_ok "-n"; diag "$(cat "$OUT_FILE")"; }
expect_rc 0 "--no-stdin with an endless pipe" sh -c "yes | timeout 30 \"$BOXGATE\" --config \"$BG_CONFIG\" exec --no-stdin --boxes h1 -- 'cat | wc -c'"
has "$OUT_FILE" '^h1: 0$' "--no-stdin: a command reading stdin ends at once"
# A closed stdin (and stdout) reads as empty: it once handed fd 0 to the first file boxgate
# opened, and exec on ssh boxes hung reading it.
expect_rc 0 "a closed stdin on two ssh boxes and the local one" sh -c "timeout 30 \"$BOXGATE\" --config \"$BG_CONFIG\" exec --boxes h1,h2,local -- 'cat | wc -c' <&-"
[ "$(grep -cx '[a-z0-9]*: 0' "$OUT_FILE")" = 3 ] && hasnt "$ERR_FILE" 'Bad file descriptor' "a closed stdin: every command reads nothing, no error" \
  || { not_ok "a closed stdin"; diag "$(cat "$OUT_FILE" "$ERR_FILE")"; }
expect_rc 0 "a closed stdout: the run still ends with the commands' status" sh -c "timeout 30 \"$BOXGATE\" --config \"$BG_CONFIG\" exec --boxes h1,local -- 'echo hi' >&-"
if command -v script >/dev/null; then
  timeout 30 script -qec "\"$BOXGATE\" --config \"$BG_CONFIG\" exec --boxes h1,local -- 'cat | wc -c'" /dev/null >"$BG_TMP/tty.out" 2>&1
  rc=$?
  [ $rc = 0 ] && [ "$(grep -c ': 0' "$BG_TMP/tty.out")" = 2 ] && ok "stdin on a terminal: the command reads end of file at once, no hang" \
    || { not_ok "terminal stdin (exit $rc)"; diag "$(cat "$BG_TMP/tty.out")"; }
else
  ok "# SKIP no script(1) for a terminal"
fi

# --- input that cannot be read or spooled ---
expect_rc 1 "stdin that cannot be read (a directory)" bg_in / --boxes h1 -- 'wc -c'
has "$ERR_FILE" 'exec: reading standard input: Is a directory' "the read error is named"
expect_rc 1 "no spool can be made" env TMPDIR="$BG_TMP/none" "$BOXGATE" --config "$BG_CONFIG" exec --boxes 'h1,h2' -- 'wc -c' <"$BG_TMP/lines"
has "$ERR_FILE" "cannot make a spool for standard input in $BG_TMP/none: No such file" "the missing spool directory is named"
has "$ERR_FILE" '\(-n runs without input\)' "... with the way out"
hasnt "$OUT_FILE" 'h1' "nothing ran"
expect_rc 0 "one box needs no spool" env TMPDIR="$BG_TMP/none" "$BOXGATE" --config "$BG_CONFIG" exec --boxes h1 -- 'wc -c' <"$BG_TMP/lines"

# --- help ---
expect_rc 0 "exec --help" bg exec --help
has "$OUT_FILE" '^  -n, --no-stdin' "--help lists -n"
has "$OUT_FILE" 'Standard input, when it is not a terminal' "--help says where stdin goes"

finish
