#!/usr/bin/env bash
# boxgate pull against 8 real sshd test hosts: 100 files x 8 boxes into DIR/BOX/..., a
# resumed pull (matching SHA-256 left alone), folded and --no-fold output, wildcards,
# hostile symlinks on the box (refused unless --follow-links), names with a newline and
# control bytes, '..' and absolute paths, local symlinks never written through, a 256 MiB
# file (BG_PULL_BIG_MB overrides the size) and a box that disconnects in the middle of it
# (nothing half-written under the final name, the next pull completes it), --json.
source "$(dirname "$0")/lib.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts
hosts_up 8
BIG_MB=${BG_PULL_BIG_MB:-256}

bg() { "$BOXGATE" --config "$BG_CONFIG" "$@"; }
root() { eval "printf '%s' \"\$BG_HOST_${1}_ROOT\""; }
W=$BG_TMP/work
mkdir -p "$W"
cd "$W" || exit 1

# 100 files per box under out/ (10 directories), the same on every box but one file.
for i in $(seq 1 8); do
  R=$(root "$i")/repo
  mkdir -p "$R"
  for d in $(seq 0 9); do
    mkdir -p "$R/out/d$d"
    for f in $(seq 0 9); do printf 'file %s %s\n' "$d" "$f" >"$R/out/d$d/f$f.txt"; done
  done
  printf 'box %s\n' "$i" >"$R/out/d0/f0.txt"
done

expect_rc 0 "pull of 100 files from 8 boxes" bg pull --all out
has "$OUT_FILE" '^h\[1-8\]: 100 files: 100 pulled$' "one folded line for the 8 boxes"
has "$OUT_FILE" '^pull: 8 boxes into pulled/BOX: 800 files: 800 pulled' "the closing count"
same=0
for i in $(seq 1 8); do
  diff -r "$(root "$i")/repo/out" "pulled/h$i/out" >/dev/null && same=$((same + 1))
done
[ "$same" = 8 ] && ok "every box's tree arrived byte for byte" || not_ok "trees differ ($same of 8 same)"
leftover=$(find pulled -name '*.boxgate-*' | wc -l)
[ "$leftover" = 0 ] && ok "no temporary file left" || not_ok "$leftover temporary files left"

# Resume: the same files again are left alone; one changed locally is fetched again.
ino=$(stat -c %i pulled/h2/out/d5/f5.txt)
echo local edit >pulled/h3/out/d1/f1.txt
expect_rc 0 "a second pull" bg pull --all out
has "$OUT_FILE" '^h\[1-2,4-8\]: 100 files: 100 unchanged$' "unchanged files are not fetched again"
has "$OUT_FILE" '^h3: 100 files: 1 pulled, 99 unchanged$' "a locally changed file is fetched again"
[ "$(stat -c %i pulled/h2/out/d5/f5.txt)" = "$ino" ] && ok "an unchanged file is not rewritten" ||
  not_ok "an unchanged file was rewritten"
cmp -s pulled/h3/out/d1/f1.txt "$(root 3)/repo/out/d1/f1.txt" && ok "the changed copy is the box's again" ||
  not_ok "the changed copy was not restored"

expect_rc 0 "--no-fold" bg pull --all --no-fold out/d0/f0.txt
for i in $(seq 1 8); do
  has "$OUT_FILE" "^h$i: 1 file: 1 unchanged$" "--no-fold: a line for h$i"
done

# Wildcards: only matching names, never a leading dot.
touch "$(root 1)/repo/out/d2/.hidden.txt"
expect_rc 0 "a wildcard path" bg pull -w h1 --to wild 'out/d*/f1.txt' 'out/d2/*.txt'
n=$(find wild/h1 -type f | wc -l)
[ "$n" = 19 ] && ok "the wildcards matched 10 + 10 files, one counted once" || not_ok "matched $n files"
[ ! -e wild/h1/out/d2/.hidden.txt ] && ok "a wildcard does not match a leading dot" ||
  not_ok "a hidden file was matched"
expect_rc 1 "a pattern matching nothing" bg pull -w h1 --to wild 'out/*.none'
grep -q 'out/\*.none: no such file on the box' "$ERR_FILE" && ok "the empty pattern is named" ||
  { not_ok "the empty pattern is named"; diag "$(cat "$ERR_FILE")"; }

# Hostile symlinks on the box.
R1=$(root 1)/repo
echo secret >"$(root 1)/secret"
ln -s /root/secret "$R1/out/evil"
ln -s /root "$R1/out/evildir"
ln -s d3 "$R1/out/gooddir"
ln -s d4/f4.txt "$R1/out/goodlink"
expect_rc 1 "a tree with links leading out of the repo" bg pull -w h1 --to links out
has "$ERR_FILE" '^boxgate: h1: out/evil: a symlink leading out of the repo \(to /root/secret\): refused' "the file link out is refused, naming where it leads"
has "$ERR_FILE" 'h1: out/evildir: a symlink leading out of the repo' "the directory link out is refused"
has "$ERR_FILE" 'out/gooddir: a symlink to a directory: not followed' "a directory link inside is not descended into"
[ ! -e links/h1/out/evil ] && [ ! -e links/h1/out/evildir ] && ok "nothing of the links out arrived" ||
  not_ok "a link out was followed"
cmp -s links/h1/out/goodlink "$R1/out/d4/f4.txt" && ok "a file link inside the repo is followed" ||
  not_ok "a file link inside was not followed"
expect_rc 1 "an explicit path through a linked directory" bg pull -w h1 --to links out/evildir/secret
has "$ERR_FILE" 'out/evildir/secret: a symlink leading out of the repo' "a path through a link out is refused"
expect_rc 1 "a wildcard through a linked directory" bg pull -w h1 --to links 'out/evildir/*'
[ ! -e links/h1/out/evildir ] && ok "a wildcard does not read a directory out of the repo" ||
  not_ok "a wildcard read out of the repo"
expect_rc 0 "--follow-links pulls what the link leads to" bg pull -w h1 --to follow --follow-links out/evil
cmp -s follow/h1/out/evil "$(root 1)/secret" && ok "--follow-links: the linked file arrived" ||
  not_ok "--follow-links: the linked file is missing"

# Paths that climb out, absolute paths: refused before any box is asked.
expect_rc 2 "a path climbing out of the repo" bg pull -w h1 out/../../secret
has "$ERR_FILE" "escapes the repo" "the climb is named"
expect_rc 2 "an absolute path" bg pull -w h1 /root/secret

# Odd names: a newline, an escape and a control byte.
odd=$'out/odd\nname\x01\x1b[31m.txt'
printf 'odd\n' >"$R1/$odd"
expect_rc 0 "a name with a newline and control bytes" bg pull -w h1 --to odd "$odd"
[ -f "odd/h1/$odd" ] && cmp -s "odd/h1/$odd" "$R1/$odd" && ok "it arrived under the same bytes" ||
  not_ok "the odd name did not arrive"
ln -s /etc "$R1/out/evil"$'\n'"x"
expect_rc 1 "a hostile link with a newline in its name" bg pull -w h1 --to odd out
if grep -q $'\x1b' "$ERR_FILE" "$OUT_FILE"; then not_ok "an escape byte reached the terminal"; else
  ok "no raw escape byte printed"; fi
has "$ERR_FILE" 'h1: "out/evil\\nx": a symlink leading out' "the odd name is shown escaped"

# Local symlinks in the way are never written through.
mkdir -p "$BG_TMP/elsewhere" local/h1/out
ln -s "$BG_TMP/elsewhere" local/h1/out/d0
echo mine >"$BG_TMP/mine"
mkdir -p local/h1/out/d1
ln -s "$BG_TMP/mine" local/h1/out/d1/f1.txt
expect_rc 1 "a local symlinked directory in the way" bg pull -w h1 --to local out/d0 out/d1/f1.txt
has "$ERR_FILE" 'out/d0/f0.txt: cannot write here: .*local/h1/out/d0: a symlink or file is in the way' "the local link is named"
[ -z "$(ls -A "$BG_TMP/elsewhere")" ] && ok "nothing was written through the local link" ||
  not_ok "written through a local directory link"
[ "$(cat "$BG_TMP/mine")" = mine ] && [ -f local/h1/out/d1/f1.txt ] && [ ! -L local/h1/out/d1/f1.txt ] &&
  ok "a symlink at the final name is replaced, its target untouched" || not_ok "a final-name link was written through"

# JSON: every file, then a summary; Python's json is the reference.
expect_rc 0 "--json" bg pull -w h2 --json --to js out/d9
pycheck "--json: 10 files with sha256 and a summary" '
import json, sys, hashlib
rows = [json.loads(l) for l in open(sys.argv[1])]
files = [r for r in rows if "state" in r]
assert len(files) == 10, rows
for r in files:
    assert r["state"] == "pulled" and r["box"] == "h2", r
    assert hashlib.sha256(open(r["local"], "rb").read()).hexdigest() == r["sha256"], r
assert rows[-1]["event"] == "summary" and rows[-1]["pulled"] == 10 and rows[-1]["exit"] == 0, rows[-1]
' "$OUT_FILE"

# A big file, and a box that disconnects in the middle of it.
head -c $((BIG_MB * 1048576)) /dev/urandom >"$(root 2)/repo/big.bin"
expect_rc 0 "a ${BIG_MB} MiB file" bg pull -w h2 --to big big.bin
cmp -s big/h2/big.bin "$(root 2)/repo/big.bin" && ok "the big file arrived whole" || not_ok "the big file differs"
rm -rf big
bg pull -w h2 --to big big.bin >"$BG_TMP/cut.out" 2>&1 &
pid=$!
tmp=''
for _ in $(seq 1200); do
  tmp=$(find big/h2 -name '.big.bin.boxgate-*' -size +0 2>/dev/null | head -n 1)
  [ -n "$tmp" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.05
done
if [ -n "$tmp" ]; then
  for p in $("$HOSTS" pids "$D" 2); do
    case $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) in *notty*) kill -9 "$p" ;; esac
  done
fi
rc=0
wait "$pid" || rc=$?
if [ -z "$tmp" ]; then not_ok "the transfer was caught in the middle"; else
  [ "$rc" = 3 ] && ok "a lost box mid-file: exit 3" || { not_ok "a lost box mid-file: exit $rc"; diag "$(cat "$BG_TMP/cut.out")"; }
  [ ! -e big/h2/big.bin ] && ok "nothing under the final name" || not_ok "a partial file under the final name"
  [ -z "$(find big -name '*.boxgate-*')" ] && ok "the temporary file was removed" || not_ok "a temporary file was left"
  grep -q 'h2: big.bin: .*connection lost' "$BG_TMP/cut.out" && ok "the file's line says the connection was lost" ||
    { not_ok "the lost connection is named"; diag "$(cat "$BG_TMP/cut.out")"; }
fi
expect_rc 0 "the next pull completes it" bg pull -w h2 --to big big.bin
cmp -s big/h2/big.bin "$(root 2)/repo/big.bin" && ok "the big file arrived whole after the cut" ||
  not_ok "the big file differs after the cut"

# An unreachable box does not stop the others.
cat "$BG_CONFIG" >"$BG_TMP/conf.ini"
printf '\n[box gone]\nhost = %s\nport = %s\nrepo = /root/repo\n' "$BG_REFUSED_ADDR" "$BG_REFUSED_PORT" >>"$BG_TMP/conf.ini"
expect_rc 3 "an unreachable box" "$BOXGATE" --config "$BG_TMP/conf.ini" pull -w gone,h1 --to reach out/d0/f0.txt
has "$OUT_FILE" '^h1: 1 file: 1 unchanged|^h1: 1 file: 1 pulled' "the reachable box is pulled"
has "$ERR_FILE" 'gone' "the unreachable box is named"

# exec --out-dir: each box's stdout and stderr byte for byte in DIR/BOX.out, DIR/BOX.err.
expect_rc 0 "exec --out-dir" bg exec --all --out-dir od -- 'echo "out $BG_X"; echo err >&2; printf "no newline"'
ok_files=0
for i in $(seq 1 8); do
  [ "$(cat "od/h$i.out")" = "out "$'\n'"no newline" ] && [ "$(cat "od/h$i.err")" = err ] &&
    [ "$(tail -c 1 "od/h$i.out")" = e ] && ok_files=$((ok_files + 1))
done
[ "$ok_files" = 8 ] && ok "--out-dir: 8 boxes' output in their files, bytes as sent" ||
  { not_ok "--out-dir files ($ok_files of 8 right)"; diag "$(head od/*)"; }
hasnt "$OUT_FILE" 'out |no newline' "--out-dir: the lines are not printed"
mkdir -p od2
ln -s "$BG_TMP/victim" od2/h1.out
expect_rc 1 "exec --out-dir with a symlink at BOX.out" bg exec -w h1,h2 --out-dir od2 -- echo hi
[ ! -e "$BG_TMP/victim" ] && [ "$(cat od2/h2.out)" = hi ] && ok "not written through the link; the other box ran" ||
  not_ok "--out-dir wrote through a symlink"
has "$ERR_FILE" 'h1 \(not run: .*od2/h1.out' "the box whose file could not be written is named"

finish
