#!/usr/bin/env bash
# boxgate init: a starter boxgate.ini at the repository's root that loads once its
# settings are uncommented, the hosts of ~/.ssh/config offered as boxes (Include
# followed, patterns skipped), an existing file never overwritten without --force,
# and the file written whole or not at all. No test hosts: nothing connects.
source "$(dirname "$0")/lib.sh"

export HOME=$BG_TMP/home
mkdir -p "$HOME/.ssh/conf.d" "$BG_TMP/repo/.git" "$BG_TMP/repo/src/deep" "$BG_TMP/plain"
cat >"$HOME/.ssh/config" <<'EOF2'
# a comment
Host h200-a h200-b *.corp !bad ?x
  HostName 10.0.0.1
HOST "quoted-c"
Include conf.d/*
Host=eq-d # trailing comment
Host under_score.dot h200-a
Match host h200-z
  User nobody
Host bad/name
EOF2
printf 'Host inc-e\n' >"$HOME/.ssh/conf.d/extra"

cd "$BG_TMP/repo/src/deep" || exit 1
expect_rc 0 "init in a subdirectory succeeds" "$BOXGATE" init
has "$OUT_FILE" "wrote $BG_TMP/repo/boxgate.ini \(6 hosts from $HOME/.ssh/config" "... writes at the repository root, naming the host count"
check "... and only there" test ! -e "$BG_TMP/repo/src/deep/boxgate.ini"
ini=$BG_TMP/repo/boxgate.ini
boxes=$(sed -n 's/^; \[box \(.*\)\]$/\1/p' "$ini" | tr '\n' ' ')
check "every plain Host name is offered in order, Include followed, patterns and bad names skipped (got: $boxes)" \
  test "$boxes" = "local h200-a h200-b quoted-c inc-e eq-d under_score.dot "
hasnt "$ini" '^[^#;[]' "every setting is commented out"
has "$ini" '^; slots = h200-a:0-7, h200-b:0-7, quoted-c:0-7, inc-e:0-7, eq-d:0-7, under_score.dot:0-7$' "... with a pool of them all"
expect_rc 0 "the starter as written loads" "$BOXGATE" --config "$ini" config check
has "$ERR_FILE" "configuration OK: .*; 1 box, 0 pools\)" "... as the built-in local box alone"
expect_rc 0 "a command run in a subdirectory finds it" "$BOXGATE" config check
has "$ERR_FILE" "configuration OK: $ini \(found from $BG_TMP/repo/src/deep; 1 box," "... by searching upward to the repository root"
sed 's/^; //' "$ini" >"$BG_TMP/uncommented.ini"
expect_rc 0 "with every '; ' removed it still loads" "$BOXGATE" --config "$BG_TMP/uncommented.ini" config check --json
pycheck "... with each offered host a box reached as ssh would, and the pool" '
import json, sys
doc = json.load(open(sys.argv[1]))
names = [b["name"] for b in doc["boxes"]]
assert names == ["local", "h200-a", "h200-b", "quoted-c", "inc-e", "eq-d", "under_score.dot"], names
hosts = {b["name"]: b.get("hostname") for b in doc["boxes"]}
assert hosts["h200-a"] == "10.0.0.1", hosts
' "$OUT_FILE"

# ssh refuses an Include loop when it resolves a host; listing names just stops.
mkdir -p "$BG_TMP/loop/.ssh"
printf 'Host looped\nInclude ~/.ssh/config\n' >"$BG_TMP/loop/.ssh/config"
HOME=$BG_TMP/loop expect_rc 0 "an Include loop in ~/.ssh/config ends" "$BOXGATE" init --stdout
has "$OUT_FILE" '^; \[box looped\]$' "... offering its host once"

cp "$ini" "$BG_TMP/before"
echo '; my edit' >>"$ini"
cp "$ini" "$BG_TMP/edited"
expect_rc 1 "a second init refuses" "$BOXGATE" init
has "$ERR_FILE" "init: $ini exists; left as it is \(--force replaces it\)" "... naming the file and --force"
check "... leaving the user's file byte for byte" cmp "$ini" "$BG_TMP/edited"
expect_rc 0 "--force replaces it" "$BOXGATE" init --force
check "... with a fresh starter" cmp "$ini" "$BG_TMP/before"
expect_rc 0 "--stdout prints the starter" "$BOXGATE" init --stdout
check "... the same text, writing nothing" cmp "$OUT_FILE" "$BG_TMP/before"
leftover=$(find "$BG_TMP/repo" -name '*.init-*' | head -1)
check "no temporary file is left behind" test -z "$leftover"

cd "$BG_TMP/plain" || exit 1
rm -f "$HOME/.ssh/config"
expect_rc 0 "outside a repository init writes in the working directory" "$BOXGATE" init
has "$OUT_FILE" "wrote $BG_TMP/plain/boxgate.ini \(not inside a git repository\) \(0 hosts" "... and says so"
has "$BG_TMP/plain/boxgate.ini" '^; \[box h200-a\]$' "without ~/.ssh/config an example box is shown"
sed 's/^; //' "$BG_TMP/plain/boxgate.ini" >"$BG_TMP/u2.ini"
expect_rc 0 "... and that starter loads uncommented too" "$BOXGATE" --config "$BG_TMP/u2.ini" config check

if [ "$(id -u)" != 0 ]; then
  mkdir "$BG_TMP/ro" && chmod 555 "$BG_TMP/ro" && cd "$BG_TMP/ro" || exit 1
  expect_rc 1 "an unwritable directory is an error" "$BOXGATE" init
  has "$ERR_FILE" "init: cannot write $BG_TMP/ro/boxgate.ini: Permission denied" "... naming the file and why"
  cd "$BG_TMP" || exit 1
else
  # root writes anywhere: a directory named boxgate.ini stands in for what cannot be replaced.
  mkdir -p "$BG_TMP/ro/boxgate.ini" && cd "$BG_TMP/ro" || exit 1
  expect_rc 1 "a boxgate.ini that is a directory is refused" "$BOXGATE" init --force
  has "$ERR_FILE" "init: cannot write $BG_TMP/ro/boxgate.ini: Is a directory" "... naming the file and why"
  leftover=$(find "$BG_TMP/ro" -name '*.init-*' | head -1)
  check "... leaving no temporary file" test -z "$leftover"
  cd "$BG_TMP" || exit 1
fi
expect_rc 2 "init takes no operand" "$BOXGATE" init extra
has "$ERR_FILE" "init: unexpected argument 'extra'" "... naming it"
# Nothing from outside becomes live configuration: a directory whose name holds
# newlines and an ini section, CR, tab, ESC and DEL, and hostile ssh_config Host names.
mkdir -p "$BG_TMP/hostile/.ssh"
{
  printf 'Host ok-1 "evil]" "[box x]" a;b "sp ace" "#hash" =eq\n'
  printf 'Host "ctl\001x" "del\177x" tab\tok-2\n'
  printf 'Host "cr\rx" ok-3\n'
  printf 'Host "[box injected2]"\n  HostName evil.example\n'
} >"$BG_TMP/hostile/.ssh/config"
odd=$BG_TMP/$'odd\n[box injected]\nhost = evil.example\r\n[pool p]\nslots = injected:0\t\e\x7f'
mkdir -p "$odd/.git" && cd "$odd" || exit 1
HOME=$BG_TMP/hostile expect_rc 0 "init in a directory named with newlines and a [box] line" "$BOXGATE" init
ini=$odd/boxgate.ini
has "$ini" '^# boxgate configuration for .*/odd\\x0a\[box injected\]\\x0ahost = evil.example\\x0d\\x0a\[pool p\]\\x0aslots = injected:0\\x09\\x1b\\x7f, written by' \
  "... the name is written escaped, on its comment line"
hasnt "$ini" '^[^#;[]' "... every line is still a comment or a commented setting"
hasnt "$ini" $'[\x01-\x08\x0b-\x1f\x7f]' "... and no control character reaches the file"
has "$ini" '^; repo = /home/ubuntu/REPO ' "... the box's repository is left for the user to name"
expect_rc 0 "... the starter as written loads" "$BOXGATE" --config "$ini" config check --json
pycheck "... to the built-in local box alone, no pool" '
import json, sys
doc = json.load(open(sys.argv[1]))
assert [b["name"] for b in doc["boxes"]] == ["local"], doc["boxes"]
' "$OUT_FILE"
has "$ERR_FILE" "\(--config; 1 box, 0 pools\)" "... no pool either"
sed 's/^; //' "$ini" >"$BG_TMP/hostile.ini"
expect_rc 0 "... and uncommented it loads" "$BOXGATE" --config "$BG_TMP/hostile.ini" config check --json
pycheck "... to exactly the plain Host names offered, hostile ones skipped" '
import json, sys
doc = json.load(open(sys.argv[1]))
names = [b["name"] for b in doc["boxes"]]
assert names == ["local", "ok-1", "tab", "ok-2", "ok-3"], names
' "$OUT_FILE"
has "$ERR_FILE" "configuration OK: .*\(--config; 5 boxes, 1 pool\)" "... and the one pool offered"
cd "$BG_TMP" || exit 1
finish
