#!/usr/bin/env bash
# The command driver: one option parser for every command (both value
# spellings, "--" passing the rest through, errors that name the option),
# and box selections that contradict each other refused before anything
# connects. No test hosts: every refusal here happens before a connection,
# and what runs, runs on the built-in local box.
source "$(dirname "$0")/lib.sh"

cd "$BG_TMP" || exit 1
# Port 1 on loopback: a box that would fail loudly if anything connected.
cat >c.ini <<'EOF'
[box a1]
host = 127.0.0.1
port = 1
gpus = 0

[box a2]
host = 127.0.0.1
port = 1
gpus = 0

[pool p]
slots = a1:0, a2:0
EOF
echo 'x = 1' >f.py
bg() { "$BOXGATE" --config "$BG_TMP/c.ini" "$@"; }

# --- conflicting selections are refused, not ranked ---
for cmd in exec push status rollback bootstrap; do
  expect_rc 2 "$cmd --pool with --boxes is refused" bg $cmd --pool p --boxes a1 -- f.py
  has "$ERR_FILE" "$cmd: --pool and --boxes: choose one way to select boxes" "... saying which flags conflict"
  hasnt "$ERR_FILE" "connect|refused by|127\.0\.0\.1" "... before anything connects"
  expect_rc 2 "$cmd --all with --boxes is refused" bg $cmd --all --boxes a1 -- f.py
  has "$ERR_FILE" "$cmd: --all and --boxes: choose one way" "... naming --all and --boxes"
  expect_rc 2 "$cmd --all with --pool is refused" bg $cmd --pool=p --all -- f.py
  has "$ERR_FILE" "$cmd: --all and --pool: choose one way" "... naming --all and --pool"
done

# --- parse errors ---
expect_rc 2 "an unknown option is a usage error" bg push --all --frobnicate f.py
has "$ERR_FILE" "^boxgate: push: unknown option '--frobnicate' \(see 'boxgate help push'\)$" "... naming the option and where the help is"
check "... in one line, no usage dump" test "$(nlines "$ERR_FILE")" = 1
expect_rc 2 "a missing value is a usage error" bg status --boxes
has "$ERR_FILE" "^boxgate: status: option '--boxes' needs a value$" "... naming the option"
expect_rc 2 "a flag given a value is a usage error" bg exec --json=yes --boxes local -- true
has "$ERR_FILE" "exec: option '--json' takes no value" "... naming the flag"
expect_rc 2 "bad seconds are a usage error" bg push --all --verify-timeout 5m f.py
has "$ERR_FILE" "push: --verify-timeout wants whole seconds from 0 to 86400, got '5m'" "... naming the flag, the bounds and the value"
expect_rc 2 "seconds above the bound are refused" bg push --all --lock-wait=86401 f.py
has "$ERR_FILE" "push: --lock-wait wants whole seconds from 0 to 86400, got '86401'" "... with --flag=value too"
expect_rc 2 "rollback --verify-timeout goes through the same parser" bg rollback a1 --verify-timeout -1 f.py
has "$ERR_FILE" "rollback: --verify-timeout wants whole seconds" "... and says so the same way"
expect_rc 2 "run: an unknown option points at '--'" bg run local --kind demo
has "$ERR_FILE" "run: unknown option '--kind' \(gate flags go after '--'\)" "... the gate's flags go after '--'"
expect_rc 2 "run: a missing value names the option" bg explain local --gpu
has "$ERR_FILE" "explain: option '--gpu' needs a value" "... --gpu"
expect_rc 2 "exec without a command" bg exec --boxes local
has "$ERR_FILE" "exec: no command given" "... says what is missing"
expect_rc 2 "rollback without a box" bg rollback
has "$ERR_FILE" "rollback: no box given" "... says what is missing"
expect_rc 2 "bootstrap with a stray argument" bg bootstrap --boxes a1 a2
has "$ERR_FILE" "bootstrap: unexpected argument 'a2'" "... names it"

# --- both spellings, and "--" passes the rest through untouched ---
expect_rc 0 "--boxes=NAME and --timeout=S" bg exec --boxes=local --timeout=30 -- echo ok
has "$OUT_FILE" '^local: ok$' "... ran on the local box"
expect_rc 0 "--boxes NAME and --timeout S" bg exec --timeout 30 --boxes local -- echo ok
has "$OUT_FILE" '^local: ok$' "... ran on the local box"
expect_rc 0 "boxgate's own flags after '--' reach the command" bg exec --boxes local -- echo --json --boxes x --
has "$OUT_FILE" '^local: --json --boxes x --$' "... untouched"
expect_rc 0 "exec: the command's first word ends the options" bg exec --boxes local echo --json
has "$OUT_FILE" '^local: --json$' "... its flags are its own"
expect_rc 0 "explain: options anywhere before '--'" bg explain --timeout=30 local --gpu 0 -- --kind demo --bar 2
has "$OUT_FILE" '^timeout: 30 s' "... --timeout=30 is boxgate's"
has "$OUT_FILE" '^  --bar +-> pass' "... the gate's --bar after '--' is the gate's"
expect_rc 0 "config --json check" bg config --json check
has "$OUT_FILE" '"boxes":\[' "... prints JSON"

finish
