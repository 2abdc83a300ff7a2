#!/usr/bin/env bash
# rollback never destroys, against 2 real sshd test hosts: a target changed on the box since
# push placed it is refused (named), --force keeps that version as
# FILE.boxgate-rollback-<time> before rolling back, and a second rollback is a no-op that
# says so instead of swapping back; an edit in place of the rolled-back file leaves the .bak
# alone; the keep name is never overwritten.
source "$(dirname "$0")/lib.sh"
hosts_up 2
PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '/\.pyenv/' | paste -sd:)

L=$BG_TMP/repo
mkdir -p "$L/scripts"
cd "$L" || exit 1
bg() { "$BOXGATE" --config "$BG_CONFIG" "$@"; }
T1=$BG_HOST_1_ROOT/repo/scripts/k.py
T2=$BG_HOST_2_ROOT/repo/scripts/k.py

printf 'v = 1\n' >scripts/k.py
expect_rc 0 "push v1" bg push --root "$L" --boxes h1,h2 scripts/k.py
printf 'v = 2\n' >scripts/k.py
expect_rc 0 "push v2" bg push --root "$L" --boxes h1,h2 scripts/k.py

# A hot fix by hand on h1.
printf 'v = 2  # hot fix\n' >"$T1"
expect_rc 0 "status sees the change" bg status --root "$L" --boxes h1 scripts/k.py
has "$OUT_FILE" 'changed on the box since push' "status: changed on the box since push"
expect_rc 1 "rollback over a file changed on the box is refused" bg rollback --root "$L" h1 scripts/k.py
has "$ERR_FILE" 'h1: scripts/k.py: changed on the box since push placed .*--force keeps it' "the refusal names the file and --force"
[ "$(cat "$T1")" = 'v = 2  # hot fix' ] && ok "the hot fix is still there" || not_ok "the hot fix was lost"
expect_rc 1 "rollback --dry-run says the same" bg rollback --root "$L" --dry-run h1 scripts/k.py
has "$ERR_FILE" 'changed on the box since push' "the dry run refuses too"

expect_rc 0 "rollback --force" bg rollback --root "$L" --force h1 scripts/k.py
kept=$(find "$BG_HOST_1_ROOT/repo/scripts" -name 'k.py.boxgate-rollback-*')
[ "$(cat "$T1")" = 'v = 1' ] && ok "--force rolled back" || not_ok "--force: $(cat "$T1")"
[ -n "$kept" ] && [ "$(cat "$kept")" = 'v = 2  # hot fix' ] && ok "the hot fix is kept as k.py.boxgate-rollback-TIME" ||
  not_ok "the hot fix was not kept ($kept)"
echo "$kept" | grep -Eq 'k\.py\.boxgate-rollback-[0-9]{8}T[0-9]{6}Z$' && ok "the name carries the UTC time" || not_ok "keep name: $kept"
has "$OUT_FILE" "h1: scripts/k.py: rolled back .*kept as scripts/k.py.boxgate-rollback-" "the output names the kept file"
[ "$(cat "$T1.bak")" = 'v = 1' ] && ok "the .bak stays" || not_ok ".bak: $(cat "$T1.bak")"

# A second rollback does nothing and says so.
expect_rc 0 "a second rollback" bg rollback --root "$L" h1 scripts/k.py
[ "$(cat "$T1")" = 'v = 1' ] && ok "the second rollback did not swap back" || not_ok "swapped back: $(cat "$T1")"
has "$OUT_FILE" 'h1: scripts/k.py: already rolled back' "it says already rolled back"
has "$OUT_FILE" '1 already rolled back' "the summary counts it"
expect_rc 0 "rollback --json of an already rolled-back file" bg rollback --root "$L" --json h1 scripts/k.py
pycheck "--json: already_rolled_back" '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert ev[0]["state"] == "already_rolled_back" and ev[-1]["already_rolled_back"] == 1 and ev[-1]["exit"] == 0, ev
' "$OUT_FILE"

# An edit in place of the rolled-back target does not reach the .bak.
printf 'v = 9\n' >>"$T1"
[ "$(cat "$T1.bak")" = 'v = 1' ] && ok "an in-place edit leaves the .bak alone" || not_ok ".bak followed an in-place edit"

# A rollback without a hand change needs no --force, keeps no copy.
expect_rc 0 "rollback on h2 (not changed on the box)" bg rollback --root "$L" h2 scripts/k.py
[ "$(cat "$T2")" = 'v = 1' ] && [ -z "$(find "$BG_HOST_2_ROOT/repo/scripts" -name '*boxgate-rollback*')" ] &&
  ok "rolled back, nothing kept (push placed it)" || not_ok "h2 rollback"
has "$OUT_FILE" 'h2: scripts/k.py: rolled back .*push it again to restore' "it says how to get the pushed version back"

# The keep name is never overwritten: one already there fails the rollback.
printf 'v = 3\n' >scripts/k.py
expect_rc 0 "push v3 to h2" bg push --root "$L" --boxes h2 scripts/k.py
printf 'v = 3 fixed\n' >"$T2"
# every name of the next 10 minutes (the rollback starts well within them)
start=$(date +%s)
for k in $(seq 0 600); do
  printf 'precious\n' >"$T2.boxgate-rollback-$(date -u -d "@$((start + k))" +%Y%m%dT%H%M%SZ)"
done
first=$T2.boxgate-rollback-$(date -u -d "@$start" +%Y%m%dT%H%M%SZ)
expect_rc 1 "rollback --force when the keep name is taken" bg rollback --root "$L" --force h2 scripts/k.py
[ "$(cat "$T2")" = 'v = 3 fixed' ] && ok "the target is unchanged" || not_ok "target: $(cat "$T2")"
[ "$(cat "$first")" = precious ] && [ "$(grep -lv precious "$T2".boxgate-rollback-* | wc -l)" = 0 ] && ok "the file under the keep name is untouched" || not_ok "keep name overwritten"

finish
