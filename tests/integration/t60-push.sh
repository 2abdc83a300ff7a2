#!/usr/bin/env bash
# boxgate push / status / rollback against 4 real sshd test hosts: unchanged files in one
# round trip, .bak, verify on the box (and locally first), atomic swap, modes, mappings,
# refused paths, all-or-nothing, dry run, rollback, drift status, stale temporary files,
# unwritable and full remote disks, an unreachable box, odd file names, the local box.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/wait.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts

D=$("$HOSTS" up --n 4) || { not_ok "test hosts came up"; finish; exit 1; }
cleanup() {
  "$HOSTS" exec "$D" 2 umount /root/repo/ro 2>/dev/null
  "$HOSTS" exec "$D" 3 umount /root/repo/full 2>/dev/null
  "$HOSTS" down "$D" >/dev/null 2>&1
  rm -rf "$BG_TMP"
}
trap cleanup EXIT
source "$D/env.sh"
# Local checks use python3 from PATH: a pyenv shim would only make them slow.
PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '/\.pyenv/' | paste -sd:)

L=$BG_TMP/repo
mkdir -p "$L/scripts" "$L/tests"
cd "$L" || exit 1
CONF=$BG_TMP/boxgate.ini
cp "$BG_CONFIG" "$CONF"
cat >>"$CONF" <<'EOF'

[verify]
.cfg = test ! -e /root/refuse-cfg
tests/_build_helper.py = {python} -c "import importlib.util as u, sys; s = u.spec_from_file_location('h', sys.argv[1]); m = u.module_from_spec(s); s.loader.exec_module(m); assert 'q_b' in m.SHAPE_REGISTRY, 'shape q_b is missing from SHAPE_REGISTRY'" {}
EOF
bg() { "$BOXGATE" --config "$CONF" "$@"; }
hroot() { local v=BG_HOST_${1}_ROOT; printf '%s' "${!v}"; }
rfile() { printf '%s/repo/%s' "$(hroot "$1")" "$2"; }
ntemps() { find "$(hroot "$1")/repo" -name '.*.boxgate-*.tmp*' 2>/dev/null | wc -l; }
count() { grep -c -- "$2" "$D/h$1/sshd.log" 2>/dev/null || true; }
same_all() { # same_all REL LOCALFILE: every host's copy equals the local file
  local i
  for i in 1 2 3 4; do cmp -s "$2" "$(rfile "$i" "$1")" || return 1; done
}
mode_of() { stat -c %a "$1"; }

# --- create on every box; mode follows the local file ---
printf 'print("v1")\n' >scripts/a.py
chmod 755 scripts/a.py
expect_rc 0 "push creates a new file on 4 boxes" bg push --root "$L" --all scripts/a.py
same_all scripts/a.py scripts/a.py && ok "every box has the pushed content" || not_ok "content on the boxes"
[ "$(mode_of "$(rfile 1 scripts/a.py)")" = 755 ] && ok "the new file has the local file's mode (755)" || not_ok "mode: $(mode_of "$(rfile 1 scripts/a.py)")"
has "$OUT_FILE" '^h\[1-4\]: scripts/a.py: created' "the 4 boxes' identical lines fold into one (h[1-4])"
[ ! -e "$(rfile 1 scripts/a.py.bak)" ] && ok "no .bak for a file that did not exist" || not_ok "unexpected .bak"

# --- unchanged: one connection and one command per box, no SFTP ---
c0=$(count 2 'Accepted publickey'); x0=$(count 2 'Starting session: command'); s0=$(count 2 "subsystem 'sftp'")
expect_rc 0 "pushing the same content again" bg push --root "$L" --all scripts/a.py
has "$OUT_FILE" '^h\[1-4\]: scripts/a.py: unchanged' "unchanged files are reported unchanged"
sleep 0.2
c1=$(count 2 'Accepted publickey'); x1=$(count 2 'Starting session: command'); s1=$(count 2 "subsystem 'sftp'")
# Through connection masters (BG_CONTROL_PERSIST_S) a box's next push needs no connection.
warm_ok=$([ "${BG_CONTROL_PERSIST_S:-0}" != 0 ] && echo 0 || echo 1)
{ [ $((c1 - c0)) = 1 ] || [ $((c1 - c0)) = "$warm_ok" ]; } && [ $((x1 - x0)) = 1 ] && [ $((s1 - s0)) = 0 ] &&
  ok "an unchanged file costs one connection and one command per box (no SFTP)" ||
  not_ok "unchanged push: $((c1 - c0)) connections, $((x1 - x0)) commands, $((s1 - s0)) sftp"

# --- update: .bak, atomic replace, one connection for everything ---
printf 'print("v2")\n' >scripts/a.py
c0=$(count 1 'Accepted publickey')
expect_rc 0 "push updates a changed file" bg push --root "$L" --all scripts/a.py
c1=$(count 1 'Accepted publickey')
same_all scripts/a.py scripts/a.py && ok "every box has the new content" || not_ok "updated content"
[ "$(cat "$(rfile 4 scripts/a.py.bak)")" = 'print("v1")' ] && ok "the previous content is kept as .bak" || not_ok ".bak content"
{ [ $((c1 - c0)) = 1 ] || [ $((c1 - c0)) = "$warm_ok" ]; } && ok "one SSH connection per box for probe, upload, verify and swap" || not_ok "$((c1 - c0)) connections"
has "$OUT_FILE" 'scripts/a.py: updated \(sha256 [0-9a-f]{12} confirmed on the box' "the SHA-256 is confirmed on the box"
[ "$(ntemps 1)" = 0 ] && ok "no temporary file is left" || not_ok "temporary files left"

# --- keep-mode ---
chmod 600 "$(rfile 1 scripts/a.py)"
printf 'print("v3")\n' >scripts/a.py
expect_rc 0 "push --keep-mode" bg push --root "$L" --boxes h1 --keep-mode scripts/a.py
[ "$(mode_of "$(rfile 1 scripts/a.py)")" = 600 ] && ok "--keep-mode keeps the replaced file's mode" || not_ok "keep-mode: $(mode_of "$(rfile 1 scripts/a.py)")"
printf 'print("v4")\n' >scripts/a.py
expect_rc 0 "push without --keep-mode" bg push --root "$L" --boxes h1 scripts/a.py
[ "$(mode_of "$(rfile 1 scripts/a.py)")" = 755 ] && ok "by default the local mode wins" || not_ok "mode: $(mode_of "$(rfile 1 scripts/a.py)")"
expect_rc 0 "bring every box to v4" bg push --root "$L" --all scripts/a.py

# --- a syntax error: refused locally first, and on the box ---
cp "$(rfile 2 scripts/a.py)" "$BG_TMP/before"
printf 'def broken(:\n    pass\n' >scripts/a.py
x0=$(count 1 'Starting session'); x30=$(count 3 'Starting session')
expect_rc 4 "a syntax error is refused by the local check (exit 4)" bg push --root "$L" --all scripts/a.py
sleep 0.2
x1=$(count 1 'Starting session'); x31=$(count 3 'Starting session')
[ "$x1" = "$x0" ] && [ "$x31" = "$x30" ] && ok "the local check fails before any box is touched (no command, no SFTP)" || not_ok "a box was touched"
hasnt "$OUT_FILE" '^h[0-9]: ' "no box reports anything after a local refusal"
has "$ERR_FILE" 'SyntaxError' "the local check shows the verifier's own error"
expect_rc 4 "the same error refused on the boxes (--no-local-check)" bg push --root "$L" --all --no-local-check scripts/a.py
has "$ERR_FILE" '^h\[1-4\]: .*SyntaxError' "the boxes' identical verifier output is shown once, led by their box set"
has "$ERR_FILE" 'h\[1-4\]: scripts/a.py: refused by the verifier on the box' "the refusal names boxes and path"
has "$ERR_FILE" 'File "scripts/a.py", line 1' "the output names the target, not the temporary file"
ident=1; for i in 1 2 3 4; do cmp -s "$BG_TMP/before" "$(rfile "$i" scripts/a.py)" || ident=0; done
[ $ident = 1 ] && ok "every target is byte-identical to before" || not_ok "a target changed"
t=0; for i in 1 2 3 4; do t=$((t + $(ntemps "$i"))); done
[ $t = 0 ] && ok "no temporary file is left after a refusal" || not_ok "$t temporary files left"
cp "$BG_TMP/before" scripts/a.py

# --- a path-specific verifier (the shape registry must name q_b) ---
printf 'SHAPE_REGISTRY = {"q_a": 1}\n' >tests/_build_helper.py
expect_rc 4 "a path-specific verifier refuses a registry without the shape" bg push --root "$L" --boxes h1 tests/_build_helper.py
has "$ERR_FILE" 'shape q_b is missing from SHAPE_REGISTRY' "the path verifier's message is shown"
[ ! -e "$(rfile 1 tests/_build_helper.py)" ] && ok "the refused registry did not land" || not_ok "refused registry landed"
printf 'SHAPE_REGISTRY = {"q_a": 1, "q_b": 2}\n' >tests/_build_helper.py
expect_rc 0 "the path-specific verifier accepts the fixed registry" bg push --root "$L" --boxes h1 tests/_build_helper.py

# --- dry run ---
printf 'print("dry")\n' >scripts/a.py
printf 'x = 1\n' >scripts/new.py
m0=$(stat -c %Y.%i "$(rfile 1 scripts/a.py)")
expect_rc 0 "push --dry-run" bg push --root "$L" --boxes h1 --dry-run scripts/a.py scripts/new.py
has "$OUT_FILE" '^h1: scripts/a.py: would update' "the plan says would update"
has "$OUT_FILE" '^h1: scripts/new.py: would create' "the plan says would create"
[ "$(stat -c %Y.%i "$(rfile 1 scripts/a.py)")" = "$m0" ] && [ ! -e "$(rfile 1 scripts/new.py)" ] &&
  ok "a dry run writes nothing" || not_ok "the dry run wrote"
cp "$BG_TMP/before" scripts/a.py

# --- all-or-nothing: one box refuses, no box changes ---
printf 'k = 1\n' >x.cfg
expect_rc 0 "push x.cfg everywhere" bg push --root "$L" --all x.cfg
printf 'k = 2\n' >x.cfg
touch "$(hroot 3)/refuse-cfg"
expect_rc 4 "all-or-nothing: one box's verifier refuses (exit 4)" bg push --root "$L" --all --all-or-nothing x.cfg
unchanged=1; for i in 1 2 3 4; do [ "$(cat "$(rfile "$i" x.cfg)")" = 'k = 1' ] || unchanged=0; done
[ $unchanged = 1 ] && ok "all-or-nothing: no box was changed" || not_ok "all-or-nothing changed a box"
has "$ERR_FILE" 'no box was changed' "all-or-nothing says no box was changed"
t=0; for i in 1 2 3 4; do t=$((t + $(ntemps "$i"))); done
[ $t = 0 ] && ok "all-or-nothing removed every temporary file" || { not_ok "$t temporary files left"; diag "$(find "$D" -name "*.boxgate-*")"; }
expect_rc 4 "without all-or-nothing the others proceed" bg push --root "$L" --all x.cfg
[ "$(cat "$(rfile 1 x.cfg)")" = 'k = 2' ] && [ "$(cat "$(rfile 3 x.cfg)")" = 'k = 1' ] &&
  ok "three boxes updated, the refusing box unchanged" || not_ok "partial push"
rm -f "$(hroot 3)/refuse-cfg"
expect_rc 0 "all-or-nothing when every box passes" bg push --root "$L" --all --all-or-nothing x.cfg
[ "$(cat "$(rfile 3 x.cfg)")" = 'k = 2' ] && ok "all-or-nothing swaps when all verified" || not_ok "aon swap"

# --- LOCAL=REMOTE mappings, new directories ---
expect_rc 0 "LOCAL=REMOTE into new directories" bg push --root "$L" --boxes h1 scripts/a.py=deep/er/b.py 'x.cfg=conf/'
cmp -s scripts/a.py "$(rfile 1 deep/er/b.py)" && cmp -s x.cfg "$(rfile 1 conf/x.cfg)" &&
  ok "mapped files land at REMOTE (a trailing / keeps the name)" || not_ok "mapping"

# --- refused paths ---
echo 'secret' >"$BG_TMP/outside.py"
ln -sf "$BG_TMP/outside.py" scripts/link.py
mkdir -p sub
expect_rc 2 "a path with .. out of the repo is refused" bg push --root "$L" --all ../outside.py
has "$ERR_FILE" 'outside the repo root' "the refusal says why"
expect_rc 2 "an absolute path outside the repo is refused" bg push --root "$L" --all "$BG_TMP/outside.py"
expect_rc 2 "a symlink leading out of the repo is refused" bg push --root "$L" --all scripts/link.py
has "$ERR_FILE" 'symlink that leads out' "the symlink refusal says why"
expect_rc 2 "an absolute REMOTE is refused" bg push --root "$L" --all scripts/a.py=/etc/x.py
expect_rc 2 "a REMOTE with .. out of the repo is refused" bg push --root "$L" --all 'scripts/a.py=a/../../x.py'
expect_rc 2 "a directory is refused" bg push --root "$L" --all sub
expect_rc 2 "two files for one target are refused" bg push --root "$L" --all scripts/a.py x.cfg=scripts/a.py
[ ! -e "$(hroot 1)/x.py" ] && [ ! -e /etc/x.py ] && ok "nothing escaped the repo" || not_ok "a file escaped"
# On the box: a symlinked target, a directory leading out of the repo.
ln -s /etc/hostname "$(rfile 1 scripts/sl.py)"
mkdir -p "$(hroot 1)/elsewhere"; ln -s /root/elsewhere "$(rfile 1 out)"
printf 'z = 1\n' >scripts/sl.py; mkdir -p out; printf 'z = 1\n' >out/o.py
expect_rc 1 "a target that is a symlink on the box is refused" bg push --root "$L" --boxes h1 scripts/sl.py out/o.py
has "$ERR_FILE" 'h1: scripts/sl.py: is a symlink on the box' "the box-side symlink is named"
has "$ERR_FILE" 'h1: out/o.py: its directory on the box leads out of the repo' "a directory leading out is refused"
[ ! -e "$(hroot 1)/elsewhere/o.py" ] && ok "nothing was written outside the repo on the box" || not_ok "wrote outside"

# --- rollback ---
printf 'print("r1")\n' >scripts/r.py
expect_rc 0 "push r1" bg push --root "$L" --boxes h1,h2 scripts/r.py
printf 'print("r2")\n' >scripts/r.py
expect_rc 0 "push r2" bg push --root "$L" --boxes h1,h2 scripts/r.py
expect_rc 0 "rollback BOX PATH" bg rollback --root "$L" h1 scripts/r.py
[ "$(cat "$(rfile 1 scripts/r.py)")" = 'print("r1")' ] && [ "$(cat "$(rfile 1 scripts/r.py.bak)")" = 'print("r1")' ] &&
  ok "rollback put the .bak back in (the .bak stays)" || not_ok "rollback result"
[ "$(cat "$(rfile 2 scripts/r.py)")" = 'print("r2")' ] && ok "rollback touched only the named box" || not_ok "other box rolled back"
has "$OUT_FILE" 'h1: scripts/r.py: rolled back' "rollback reports"
printf 'def bad(:\n' >"$(rfile 2 scripts/r.py.bak)"
expect_rc 4 "a .bak the verifier refuses is not rolled back (exit 4)" bg rollback --root "$L" --boxes h2 scripts/r.py
[ "$(cat "$(rfile 2 scripts/r.py)")" = 'print("r2")' ] && [ "$(ntemps 2)" = 0 ] && ok "the box is unchanged after a refused rollback" || not_ok "refused rollback changed the box"
expect_rc 1 "rollback without a .bak fails" bg rollback --root "$L" h3 scripts/r.py
has "$ERR_FILE" 'h3: scripts/r.py: there is no .bak' "the missing .bak is named"

# --- status: same, differs, missing, .bak, stale temporary files ---
printf 'print("r2")\n' >scripts/r.py
touch "$(rfile 1 scripts/.r.py.boxgate-0123456789abcdef.tmp.py)"
expect_rc 0 "status --no-clean" bg status --root "$L" --boxes h1 --no-clean scripts/r.py
has "$OUT_FILE" '1 temporary file of an interrupted' "status reports a stale temporary file"
[ -e "$(rfile 1 scripts/.r.py.boxgate-0123456789abcdef.tmp.py)" ] && ok "--no-clean keeps it" || not_ok "--no-clean removed it"
expect_rc 0 "status on 4 boxes" bg status --root "$L" --all scripts/r.py scripts/a.py
has "$OUT_FILE" '^h1: scripts/r.py: differs .*\.bak present.*1 stale temporary file removed' "status: differs, .bak present, stale temp removed"
has "$OUT_FILE" '^h2: scripts/r.py: same' "status: same"
has "$OUT_FILE" '^h\[3-4\]: scripts/r.py: missing' "status: missing (h3 and h4 folded)"
[ "$(grep -o '^h[^:]*' "$OUT_FILE" | paste -sd' ')" = 'h1 h[1-4] h2 h[3-4]' ] && ok "status lines in box-name order, folded" || { not_ok "status order"; diag "$(cat "$OUT_FILE")"; }
expect_rc 0 "status --no-fold" bg status --root "$L" --all --no-fold scripts/r.py
[ "$(grep -o '^h[^:]*' "$OUT_FILE" | paste -sd' ')" = 'h1 h2 h3 h4' ] && ok "status --no-fold: one line per box, in name order" || { not_ok "status --no-fold"; diag "$(cat "$OUT_FILE")"; }
[ ! -e "$(rfile 1 scripts/.r.py.boxgate-0123456789abcdef.tmp.py)" ] && ok "status removed the stale temporary file" || not_ok "stale temp kept"
expect_rc 1 "status --exit-code with drift exits 1" bg status --root "$L" --all --exit-code scripts/r.py
expect_rc 0 "status --json" bg status --root "$L" --boxes h1,h3 --json scripts/r.py
if python3 - "$OUT_FILE" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
by = {(e.get('box'), e.get('path')): e for e in ev if 'path' in e}
assert by[('h1', 'scripts/r.py')]['state'] == 'differs' and by[('h1', 'scripts/r.py')]['bak'] is True, ev
assert by[('h3', 'scripts/r.py')]['state'] == 'missing', ev
assert ev[-1]['event'] == 'summary' and ev[-1]['differs'] == 1 and ev[-1]['missing'] == 1, ev[-1]
PY
then ok "status --json: one object per file and box, and a summary"; else not_ok "status --json"; diag "$(cat "$OUT_FILE")"; fi
expect_rc 0 "status without paths scans the box for .bak files" bg status --root "$L" --boxes h1
has "$OUT_FILE" '^h1: scripts/a.py: same' "the scan finds pushed files"
has "$OUT_FILE" '^h1: scripts/r.py: differs' "the scan compares them with the local files"

# --- the next push removes leftover temporary files ---
touch "$(rfile 2 scripts/.a.py.boxgate-00000000000000aa.tmp.py)" "$(rfile 2 scripts/.a.py.boxgate-notours.tmp)"
expect_rc 0 "push after an interrupted one" bg push --root "$L" --boxes h2 scripts/a.py
has "$OUT_FILE" '1 stale temporary file removed' "push reports the removed temporary file"
[ ! -e "$(rfile 2 scripts/.a.py.boxgate-00000000000000aa.tmp.py)" ] && [ -e "$(rfile 2 scripts/.a.py.boxgate-notours.tmp)" ] &&
  ok "only boxgate's own temporary names are removed" || not_ok "temp cleanup"
rm -f "$(rfile 2 scripts/.a.py.boxgate-notours.tmp)"

# --- pushes to one box are serialised ---
# The holder keeps the lock until the push has given up (a file says when): a fixed hold
# could end before a slow push even asked, or a slow holder lock after it.
rm -f "$BG_HOST_1_ROOT/lk.held" "$BG_HOST_1_ROOT/lk.release"
"$HOSTS" exec "$D" 1 flock /root/repo sh -c ': >/root/lk.held; i=0; while [ ! -e /root/lk.release ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done' &
holder=$!
wait_until 60 test -e "$BG_HOST_1_ROOT/lk.held" || diag "the lock holder never took the lock"
printf 'print("locked")\n' >scripts/lk.py
expect_rc 1 "a push waits for the box's lock, then gives up" bg push --root "$L" --boxes h1 --lock-wait 1 scripts/lk.py
has "$ERR_FILE" 'h1: another boxgate push' "the busy box is named"
: >"$BG_HOST_1_ROOT/lk.release"
wait "$holder"
expect_rc 0 "the push goes through once the lock is free" bg push --root "$L" --boxes h1 scripts/lk.py

# --- unwritable directory, full disk: clear errors, the other boxes proceed ---
mkdir -p ro full
printf 'ro = 1\n' >ro/x.py
head -c 3000000 /dev/urandom >full/big.bin
"$HOSTS" exec "$D" 2 sh -c 'mkdir -p /root/repo/ro && mount --bind /root/repo/ro /root/repo/ro && mount -o remount,bind,ro /root/repo/ro'
"$HOSTS" exec "$D" 3 sh -c 'mkdir -p /root/repo/full && mount -t tmpfs -o size=1m tmpfs /root/repo/full'
expect_rc 1 "read-only and full remote directories fail (exit 1)" bg push --root "$L" --all ro/x.py full/big.bin
has "$ERR_FILE" 'h2: ro/x.py: the directory /root/repo/ro on the box is not writable' "the unwritable directory is named with box and path"
has "$ERR_FILE" "h3: full/big.bin: upload failed: .*no space left on the box's disk" "the full disk is named with box and path"
cmp -s ro/x.py "$(rfile 1 ro/x.py)" && cmp -s full/big.bin "$(rfile 4 full/big.bin)" && cmp -s ro/x.py "$(rfile 3 ro/x.py)" &&
  ok "the other boxes got both files" || not_ok "other boxes"
[ -z "$("$HOSTS" exec "$D" 3 find /root/repo/full -name '*.tmp*')" ] && ok "the partial upload on the full disk was removed" || not_ok "partial upload left on the full disk"

# --- an unreachable box: the others proceed, exit 3 ---
printf 'print("net")\n' >scripts/net.py
"$HOSTS" link "$D" 4 down
expect_rc 3 "an unreachable box gives exit 3" bg push --root "$L" --all scripts/net.py
"$HOSTS" link "$D" 4 up
has "$ERR_FILE" 'h4: connect to .* timed out' "the unreachable box is named"
has "$ERR_FILE" 'h4: scripts/net.py: not pushed' "its file is reported not pushed"
cmp -s scripts/net.py "$(rfile 1 scripts/net.py)" && cmp -s scripts/net.py "$(rfile 3 scripts/net.py)" &&
  ok "the reachable boxes got the file" || not_ok "reachable boxes"

# --- odd names: spaces, quotes, $, newlines, non-ASCII and non-UTF-8 bytes ---
mkdir -p "we ird"
names=("we ird/it's \"q\" \$HOME.py" $'new\nline.sh' $'caf\xc3\xa9.json' $'\xff\xfe raw.txt' '-dash.py' 'back\slash*.py')
printf 'x = 1\n' >"${names[0]}"; printf 'echo hi\n' >"${names[1]}"; printf '{"a": 1}\n' >"${names[2]}"
printf 'raw\n' >"${names[3]}"; printf 'y = 2\n' >"${names[4]}"; printf 'z = 3\n' >"${names[5]}"
expect_rc 0 "odd names push" bg push --root "$L" --boxes h1,h2 -- "${names[@]}"
allsame=1; for n in "${names[@]}"; do cmp -s -- "$n" "$(rfile 2 "$n")" || allsame=0; done
[ $allsame = 1 ] && ok "every odd name landed byte for byte" || not_ok "odd names"
for n in "${names[@]}"; do printf '# edit\n' >>"$n"; done
printf '{"a": 2}\n' >"${names[2]}"
expect_rc 0 "odd names update (.bak, verify)" bg push --root "$L" --boxes h1 -- "${names[@]}"
allsame=1; for n in "${names[@]}"; do cmp -s -- "$n" "$(rfile 1 "$n")" && [ -f "$(rfile 1 "$n").bak" ] || allsame=0; done
[ $allsame = 1 ] && ok "odd names updated with their .bak" || not_ok "odd names update"
has "$OUT_FILE" '"new\\nline.sh": updated' "a newline in a name is shown escaped"
expect_rc 0 "odd names status --json" bg status --root "$L" --boxes h1 --json -- "${names[@]}"
if python3 - "$OUT_FILE" <<'PY'
import json, sys, base64
ev = [json.loads(l) for l in open(sys.argv[1])]
files = [e for e in ev if 'state' in e]
assert len(files) == 6 and all(e['state'] == 'same' for e in files), ev
assert any(base64.b64decode(e['path_b64']) == b'\xff\xfe raw.txt' for e in files if 'path_b64' in e), ev
assert any(e.get('path') == 'caf\u00e9.json' for e in files), ev
PY
then ok "status --json: every odd name same; non-UTF-8 names as base64"; else not_ok "odd names json"; diag "$(cat "$OUT_FILE")"; fi

# --- a progress line per box on a terminal ---
head -c 8388608 /dev/urandom >big.bin
if command -v script >/dev/null; then
  script -qec "$BOXGATE --config $CONF push --root $L --boxes h1,h2 big.bin" /dev/null >"$BG_TMP/tty.out" 2>&1
  grep -aq 'h1: big.bin .*%.*MiB' "$BG_TMP/tty.out" && grep -aq 'h2: big.bin .*%.*MiB' "$BG_TMP/tty.out" &&
    ok "on a terminal each box shows a progress line" || { not_ok "progress lines"; diag "$(tr -d '\033' <"$BG_TMP/tty.out" | head -c 800)"; }
  expect_rc 0 "no progress lines when stdout is not a terminal" bg push --root "$L" --boxes h3 big.bin
  hasnt "$OUT_FILE" 'MiB' "piped output has no progress lines"
fi

# --- big files: hashed on the box while they arrive; without python, after ---
head -c 20000000 /dev/urandom >huge.bin
expect_rc 0 "a 20 MB file" bg push --root "$L" --boxes h1,h2 huge.bin
cmp -s huge.bin "$(rfile 1 huge.bin)" && cmp -s huge.bin "$(rfile 2 huge.bin)" && ok "the big file landed whole" || not_ok "big file content"
has "$OUT_FILE" 'h\[1-2\]: huge.bin: created \(sha256 [0-9a-f]{12} confirmed' "the big file's SHA-256 is confirmed"
# (one may still be ending as push returns; gone, lib.sh, looks in this test's hosts)
wait_until 10 gone hashlib && ok "no hashing process is left on the boxes" || not_ok "a hashing process is left on the boxes 10 s after the push"
NOPY=$BG_TMP/nopython.ini
sed 's|^python = .*|python = /nonexistent/python3|' "$BG_CONFIG" >"$NOPY"
head -c 4 /dev/urandom | dd of=huge.bin conv=notrunc 2>/dev/null
expect_rc 0 "a big file to a box without python" "$BOXGATE" --config "$NOPY" push --root "$L" --boxes h2 huge.bin
cmp -s huge.bin "$(rfile 2 huge.bin)" && ok "without python on the box the big file still lands" || not_ok "no-python big file"
has "$OUT_FILE" 'h2: huge.bin: updated \(sha256 [0-9a-f]{12} confirmed' "... and is confirmed by hashing it after the upload"
rm -f huge.bin

# --- the local box ---
LB=$BG_TMP/localbox
mkdir -p "$LB"
LCONF=$BG_TMP/local.ini
printf '[box loc]\ntransport = local\nrepo = %s\n' "$LB" >"$LCONF"
expect_rc 0 "push to a local box" "$BOXGATE" --config "$LCONF" push --root "$L" --boxes loc scripts/a.py "${names[0]}"
cmp -s scripts/a.py "$LB/scripts/a.py" && cmp -s -- "${names[0]}" "$LB/${names[0]}" && ok "the local box got the files" || not_ok "local box files"
printf 'print("local2")\n' >scripts/a.py
expect_rc 0 "update on the local box" "$BOXGATE" --config "$LCONF" push --root "$L" --boxes loc scripts/a.py
cmp -s scripts/a.py "$LB/scripts/a.py" && [ "$(cat "$LB/scripts/a.py.bak")" = "$(cat "$BG_TMP/before")" ] &&
  ok "the local box keeps a .bak too" || not_ok "local .bak"
printf 'def x(:\n' >scripts/a.py
expect_rc 4 "the local box's verify refuses a syntax error" "$BOXGATE" --config "$LCONF" push --root "$L" --boxes loc --no-local-check scripts/a.py
[ "$(cat "$LB/scripts/a.py")" = 'print("local2")' ] && [ -z "$(find "$LB" -name '*.tmp*')" ] && ok "the local box is unchanged after a refusal" || not_ok "local refusal"
expect_rc 0 "status on the local box" "$BOXGATE" --config "$LCONF" status --root "$L" --boxes loc scripts/a.py
has "$OUT_FILE" '^loc: scripts/a.py: differs' "local status says differs"
expect_rc 0 "rollback on the local box" "$BOXGATE" --config "$LCONF" rollback --root "$L" loc scripts/a.py
[ "$(cat "$LB/scripts/a.py")" = "$(cat "$BG_TMP/before")" ] && ok "local rollback restored the .bak" || not_ok "local rollback"

# --- usage ---
expect_rc 2 "push without files is a usage error" bg push --all
expect_rc 2 "push to an unknown box is a usage error" bg push --root "$L" --boxes nope scripts/r.py
expect_rc 2 "a missing local file is a usage error" bg push --root "$L" --all scripts/does-not-exist.py
# Seconds go through one strict parser: no shell text, fractions, overflow, sign, nothing.
for v in '1;id' 2.5 99999999999 -5 ''; do
  for cf in "push --verify-timeout" "push --lock-wait" "rollback --verify-timeout"; do
    set -- $cf
    expect_rc 2 "$1 $2 '$v' is refused (exit 2)" bg "$1" --root "$L" --boxes h1 "$2" "$v" scripts/r.py
    grep -qF -- "$1: $2 " "$ERR_FILE" && ok "... naming the flag $2" || { not_ok "... naming the flag $2"; diag "$(cat "$ERR_FILE")"; }
  done
done

finish
