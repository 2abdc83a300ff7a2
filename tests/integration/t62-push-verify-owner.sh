#!/usr/bin/env bash
# push against a real sshd test host: no file name can inject code into a [verify]
# template, however the template nests shells (the verifier always sees a path of safe
# bytes boxgate chose, also as $1 and BOXGATE_FILE); a push as root keeps the replaced
# file's owner and group (and its mode with --keep-mode), the .bak and a rollback too.
source "$(dirname "$0")/lib.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts

hosts_up 1
PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '/\.pyenv/' | paste -sd:)

L=$BG_TMP/repo
mkdir -p "$L"
cd "$L" || exit 1
CONF=$BG_TMP/boxgate.ini
cp "$BG_CONFIG" "$CONF"
cat >>"$CONF" <<'EOF'

[verify]
.vtx = sh -c "test -s {}"
.vty = sh -c 'test -s {}' && test -s "$1" && test "$BOXGATE_FILE" = {} && sh -c "sh -c \"test -s $BOXGATE_FILE\"" && eval "test -s {}"
.vtl = echo "checking {}"; test -s {}
.cfg = true
EOF
bg() { "$BOXGATE" --config "$CONF" "$@"; }
R=$BG_HOST_1_ROOT
rfile() { printf '%s/repo/%s' "$R" "$1"; }
# Every file any injected command would have made, anywhere on the box's side.
canaries() { find "$R" "$L" -name 'CANARY*' 2>/dev/null; }

# --- the exact case: sh -c "test -s {}" and a file named z$(touch X).vtx ---
printf 'data\n' >'z$(touch CANARY1).vtx'
expect_rc 0 'push z$(touch X).vtx with the template sh -c "test -s {}"' bg push --root "$L" --boxes h1 -- 'z$(touch CANARY1).vtx'
cmp -s -- 'z$(touch CANARY1).vtx' "$(rfile 'z$(touch CANARY1).vtx')" && ok "the file landed under its own name" || not_ok "the file landed"
has "$OUT_FILE" 'created' "the push reports created"
[ -z "$(canaries)" ] && ok "the \$(touch ...) in the name did not run on the box" || { not_ok "an injected command ran"; diag "$(canaries)"; }
printf 'data 2\n' >'z$(touch CANARY1).vtx'
expect_rc 0 "update it (.bak, verify again)" bg push --root "$L" --boxes h1 -- 'z$(touch CANARY1).vtx'
[ -f "$(rfile 'z$(touch CANARY1).vtx.bak')" ] && [ -z "$(canaries)" ] && ok "updated with a .bak, still nothing injected" || not_ok "update"

# --- quotes, backticks, ;, spaces, a newline, a leading dash; in a directory name too ---
mkdir -p -- 'd$(touch CANARY2)' '-dir;touch CANARY3' "q'd\"ir"
names=("q'uote\$(touch CANARY4).vtx" 'd"quote$(touch CANARY5)".vtx' 'b`touch CANARY6`tick.vtx'
  'semi;touch CANARY7;.vtx' 'sp ace $(touch CANARY8) x.vty' $'new\nline$(touch CANARY9).vty' '-dash$(touch CANARYa).vty'
  'd$(touch CANARY2)/in$(touch CANARYb).vtx' '-dir;touch CANARY3/x.vty' "q'd\"ir/\`touch CANARYc\`.vty")
for n in "${names[@]}"; do printf 'content of %s\n' "$n" >"$n"; done
expect_rc 0 "odd names through nested-shell templates" bg push --root "$L" --boxes h1 -- "${names[@]}"
allsame=1; for n in "${names[@]}"; do cmp -s -- "$n" "$(rfile "$n")" || allsame=0; done
[ $allsame = 1 ] && ok "every odd name landed byte for byte" || not_ok "odd names landed"
[ -z "$(canaries)" ] && ok "no quote, backtick, ; or \$( ) in a name ran on the box" || { not_ok "an injected command ran"; diag "$(canaries)"; }
[ -z "$(find "$R/repo" -name '.boxgate-*.vdir')" ] && ok "the verifier's directory links are gone" || not_ok "a .vdir link was left"
[ -z "$(find "$R/repo" -name '*.boxgate-*.tmp*')" ] && ok "no temporary file is left" || not_ok "temporary files left"

# --- a refusal still names the file the verifier saw ---
: >'e$(touch CANARYd) empty.vtl'
expect_rc 4 "an empty file is refused by the verifier" bg push --root "$L" --boxes h1 -- 'e$(touch CANARYd) empty.vtl'
grep -qF 'checking e$(touch CANARYd) empty.vtl' "$ERR_FILE" && ok "the verifier's output shows the target's name" || { not_ok "verifier output"; diag "$(cat "$ERR_FILE")"; }
has "$ERR_FILE" 'refused by the verifier on the box' "the refusal is reported"
[ -z "$(canaries)" ] && [ ! -e "$(rfile 'e$(touch CANARYd) empty.vtl')" ] && ok "nothing ran, nothing landed" || not_ok "refusal"

# --- the local box goes through the same scripts ---
LB=$BG_TMP/localbox
mkdir -p "$LB"
printf '[box loc]\ntransport = local\nrepo = %s\n' "$LB" >>"$CONF"
expect_rc 0 "the exact case on the local box" bg push --root "$L" --boxes loc -- 'z$(touch CANARY1).vtx' "${names[6]}"
[ -z "$(find "$LB" -name 'CANARY*')" ] && cmp -s -- 'z$(touch CANARY1).vtx' "$LB/z\$(touch CANARY1).vtx" && ok "nothing injected on the local box" || not_ok "local box injection"

# --- owner, group and mode of a replaced file (pushes run as root on the test host) ---
printf 'own = 1\n' >own.cfg
chmod 644 own.cfg
expect_rc 0 "push own.cfg" bg push --root "$L" --boxes h1 own.cfg
T=$(rfile own.cfg)
chown 1000:1000 "$T"
chmod 640 "$T"
printf 'own = 2\n' >own.cfg
expect_rc 0 "push --keep-mode over a file of 1000:1000 mode 640" bg push --root "$L" --boxes h1 --keep-mode own.cfg
[ "$(cat "$T")" = 'own = 2' ] && ok "the new content landed" || not_ok "content"
[ "$(stat -c %u:%g:%a "$T")" = 1000:1000:640 ] && ok "the new file keeps owner 1000, group 1000, mode 640" || not_ok "new file: $(stat -c %u:%g:%a "$T")"
[ "$(stat -c %u:%g:%a "$T.bak")" = 1000:1000:640 ] && [ "$(cat "$T.bak")" = 'own = 1' ] && ok "the .bak keeps them too" || not_ok ".bak: $(stat -c %u:%g:%a "$T.bak")"
hasnt "$ERR_FILE" 'warning' "no warning when the owner could be kept"
printf 'own = 3\n' >own.cfg
expect_rc 0 "push without --keep-mode" bg push --root "$L" --boxes h1 own.cfg
[ "$(stat -c %u:%g:%a "$T")" = 1000:1000:644 ] && ok "owner and group kept; the mode is the local one (644) by default" || not_ok "default push: $(stat -c %u:%g:%a "$T")"
expect_rc 0 "rollback" bg rollback --root "$L" h1 own.cfg
[ "$(cat "$T")" = 'own = 2' ] && [ "$(stat -c %u:%g:%a "$T")" = 1000:1000:640 ] && ok "rollback restores the file with owner 1000:1000 and mode 640" || not_ok "rollback: $(cat "$T") $(stat -c %u:%g:%a "$T")"
[ "$(cat "$T.bak")" = 'own = 2' ] && [ "$(stat -c %u:%g "$T.bak")" = 1000:1000 ] && ok "the .bak stays, with its owner" || not_ok "rollback .bak: $(stat -c %u:%g:%a "$T.bak")"
# setuid bits survive the chown (which clears them) with --keep-mode
chmod 4750 "$T"
printf 'own = 4\n' >own.cfg
expect_rc 0 "push --keep-mode over a setuid file of another owner" bg push --root "$L" --boxes h1 --keep-mode own.cfg
[ "$(stat -c %u:%g:%a "$T")" = 1000:1000:4750 ] && ok "owner, group and setuid mode 4750 kept" || not_ok "setuid: $(stat -c %u:%g:%a "$T")"

finish
