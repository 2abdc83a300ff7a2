#!/usr/bin/env bash
# pull's temporary files and exec --out-dir's files over real sshd test hosts: a pull
# SIGKILLed in the middle of a large file leaves its recognisable temporary file and no
# final file; the next pull removes that stale file (never another pull's live, locked one)
# and completes the file; temporaries of a push or pull found on the box are never pulled
# as files. exec --out-dir writes each file whole: while the command runs, and after it is
# killed, a reader sees the previous file, never half of the new one.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/wait.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts
hosts_up 1
BIG_MB=${BG_PULL_BIG_MB:-64}

bg() { "$BOXGATE" --config "$BG_CONFIG" "$@"; }
R=$BG_HOST_1_ROOT/repo
W=$BG_TMP/work
mkdir -p "$W" "$R/big"
cd "$W" || exit 1
temps() { find "$@" -name '.*.boxgate-pull-*.tmp' 2>/dev/null; }

# --- a pull killed in the middle of a large file ---
head -c $((BIG_MB << 20)) /dev/urandom >"$R/big/blob.bin"
sum=$(sha256sum <"$R/big/blob.bin" | cut -d' ' -f1)
"$BOXGATE" --config "$BG_CONFIG" pull -w h1 --to dst big >"$BG_TMP/p1.out" 2>&1 &
pid=$!
# the event: its temporary file is there and has bytes; then freeze it and kill it
wait_until 120 sh -c "[ -n \"\$(find dst -name '.blob.bin.boxgate-pull-*.tmp' -size +0 2>/dev/null)\" ]" ||
  not_ok "the pull's temporary file never appeared: $(cat "$BG_TMP/p1.out")"
kill -STOP "$pid"
if [ -e dst/h1/big/blob.bin ]; then not_ok "the file was complete before the kill (make BG_PULL_BIG_MB larger)"; fi
kill -KILL "$pid"; wait "$pid" 2>/dev/null
t=$(temps dst)
[ "$(echo "$t" | grep -c .)" = 1 ] && ok "the killed pull left one temporary file, named as pull's ($(basename "$t"))" ||
  not_ok "temporaries after the kill: $t"
[ ! -e dst/h1/big/blob.bin ] && ok "and nothing under the final name" || not_ok "a final file after the kill"
size=$(stat -c %s "$t" 2>/dev/null || echo 0)
[ "$size" -lt $((BIG_MB << 20)) ] && ok "the temporary file is partial ($size bytes)" || not_ok "temporary size $size"

# another pull's live temporary file in the same directory, held under its lock
live=dst/h1/big/.other.bin.boxgate-pull-0123456789abcdef.tmp
python3 -c 'import fcntl, sys, time
f = open(sys.argv[1], "w"); fcntl.flock(f, fcntl.LOCK_EX); print("locked", flush=True); time.sleep(600)' "$live" >"$BG_TMP/lock.out" &
holder=$!
wait_for "$BG_TMP/lock.out" '^locked$' 30
# a stale one of another file (no lock), and a file that only looks alike
printf 'junk' >dst/h1/big/.gone.bin.boxgate-pull-fedcba9876543210.tmp
printf 'mine' >dst/h1/big/.notes.boxgate-pull-XYZ.tmp

expect_rc 0 "the next pull completes the file" bg pull -w h1 --to dst big
has "$OUT_FILE" '^h1: 1 file: 1 pulled$' "it pulled the file"
has "$ERR_FILE" '^boxgate: h1: removed 2 stale temporary files of an interrupted pull$' "it says it removed the stale temporaries"
[ "$(sha256sum <dst/h1/big/blob.bin | cut -d' ' -f1)" = "$sum" ] && ok "the file is the box's, byte for byte" || not_ok "the file differs"
[ ! -e "$t" ] && ok "the killed pull's temporary file is gone" || not_ok "$t is still there"
[ ! -e dst/h1/big/.gone.bin.boxgate-pull-fedcba9876543210.tmp ] && ok "so is another stale one" || not_ok "a stale temporary stayed"
[ -e "$live" ] && ok "a live pull's locked temporary file is left alone" || not_ok "the live temporary was removed"
[ -e dst/h1/big/.notes.boxgate-pull-XYZ.tmp ] && ok "a file that only looks like one is left alone" || not_ok "a look-alike was removed"
kill "$holder"; wait "$holder" 2>/dev/null
expect_rc 0 "a third pull: unchanged, the unlocked one removed now" bg pull -w h1 --to dst big
has "$OUT_FILE" '^h1: 1 file: 1 unchanged$' "unchanged"
[ ! -e "$live" ] && ok "once its lock is free the left temporary file goes too" || not_ok "$live stayed"

# --- temporaries on the box are never pulled as files ---
mkdir -p "$R/tdir"
printf 'a\n' >"$R/tdir/a.txt"
printf 'p\n' >"$R/tdir/.a.txt.boxgate-0123456789abcdef.tmp.txt"
printf 'q\n' >"$R/tdir/.b.boxgate-0123456789abcdef.tmp"
printf 'r\n' >"$R/tdir/.c.bin.boxgate-pull-0123456789abcdef.tmp"
printf 's\n' >"$R/tdir/x.boxgate-notatemp"
printf 'h\n' >"$R/tdir/.hidden"
expect_rc 0 "pull of a directory holding push and pull temporaries" bg pull -w h1 --to boxt tdir --json
pycheck "--json: the real files only" '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
got = sorted(r["path"] for r in rows if "path" in r)
assert got == ["tdir/.hidden", "tdir/a.txt", "tdir/x.boxgate-notatemp"], got
' "$OUT_FILE"

# --- exec --out-dir: a reader never sees half a file ---
mkdir -p out
printf 'old out\n' >out/h1.out
printf 'old err\n' >out/h1.err
script='printf "first\n"; printf "e1\n" >&2; while [ ! -e ~/go-exec ]; do sleep 0.05; done; printf "second\n"'
"$BOXGATE" --config "$BG_CONFIG" exec -w h1 --out-dir out -- "$script" >"$BG_TMP/e1.out" 2>&1 &
ex=$!
wait_until 60 sh -c 'grep -qs first out/.h1.out.boxgate-*.tmp' || not_ok "exec's temporary file never got its first line"
[ "$(cat out/h1.out)" = "old out" ] && [ "$(cat out/h1.err)" = "old err" ] &&
  ok "while the command runs, BOX.out and BOX.err are the previous whole files" ||
  not_ok "mid-run: out=$(cat out/h1.out) err=$(cat out/h1.err)"
touch "$BG_HOST_1_ROOT/go-exec"
wait "$ex"; rc=$?
[ "$rc" = 0 ] && ok "exec ended (exit 0)" || not_ok "exec exit $rc: $(cat "$BG_TMP/e1.out")"
[ "$(cat out/h1.out)" = "$(printf 'first\nsecond')" ] && [ "$(cat out/h1.err)" = "e1" ] &&
  ok "then both are the new whole files" || not_ok "after: out=$(cat out/h1.out) err=$(cat out/h1.err)"
[ -z "$(find out -name '.*.boxgate-*.tmp')" ] && ok "no temporary file left" || not_ok "temporaries left: $(ls -a out)"
rm -f "$BG_HOST_1_ROOT/go-exec"
"$BOXGATE" --config "$BG_CONFIG" exec -w h1 --out-dir out -- "$script" >"$BG_TMP/e2.out" 2>&1 &
ex=$!
wait_until 60 sh -c 'grep -qs first out/.h1.out.boxgate-*.tmp' || not_ok "exec's temporary file never got its first line"
kill -KILL "$ex"; wait "$ex" 2>/dev/null
[ "$(cat out/h1.out)" = "$(printf 'first\nsecond')" ] && ok "a SIGKILLed exec leaves the previous whole file" ||
  not_ok "after the kill: out=$(cat out/h1.out)"
touch "$BG_HOST_1_ROOT/go-exec"
[ -n "$(find out -name '.h1.out.boxgate-*.tmp')" ] && ok "the killed exec left its temporary file" || not_ok "no temporary file after the kill"
# a live exec's temporary file (held under its lock) and a look-alike stay
live=out/.h9.out.boxgate-0123456789abcdef.tmp
python3 -c 'import fcntl, sys, time
f = open(sys.argv[1], "w"); fcntl.flock(f, fcntl.LOCK_EX); print("locked", flush=True); time.sleep(600)' "$live" >"$BG_TMP/lock2.out" &
holder=$!
wait_for "$BG_TMP/lock2.out" '^locked$' 30
printf 'mine' >out/.notes.out.boxgate-XYZ.tmp
expect_rc 0 "the next exec --out-dir" bg exec -w h1 --out-dir out -- 'echo again'
[ -z "$(find out -name '.h1.*.boxgate-*.tmp')" ] && ok "it removed the killed exec's temporary file" || not_ok "left: $(ls -a out)"
[ -e "$live" ] && [ -e out/.notes.out.boxgate-XYZ.tmp ] && ok "a live one and a look-alike are left alone" || not_ok "a live or look-alike file was removed"
kill "$holder"; wait "$holder" 2>/dev/null; rm -f "$live" out/.notes.out.boxgate-XYZ.tmp
[ "$(cat out/h1.out)" = again ] && ok "and wrote its output" || not_ok "out: $(cat out/h1.out)"
printf 'first\nsecond\n' >out/h1.out
rm -f out/h1.err; ln -s "$BG_TMP/victim" out/h1.err
find out -name '.*.boxgate-*.tmp' >"$BG_TMP/temps.before"
expect_rc 1 "exec --out-dir with a symlink at BOX.err: that box is not run" bg exec -w h1 --out-dir out -- 'echo x; echo y >&2'
[ ! -e "$BG_TMP/victim" ] && [ -L out/h1.err ] && [ "$(cat out/h1.out)" = "$(printf 'first\nsecond')" ] &&
  ok "nothing written through the link, the link and the previous BOX.out left as they were" ||
  not_ok "the symlink was followed or replaced, or BOX.out changed"
has "$ERR_FILE" 'h1 \(not run: .*out/h1.err: a symbolic link \(not followed\)' "the refusal names the file"
[ "$(find out -name '.*.boxgate-*.tmp')" = "$(cat "$BG_TMP/temps.before")" ] && ok "and leaves no temporary file" || not_ok "a temporary file was left: $(ls -a out)"
finish
