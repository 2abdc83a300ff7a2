#!/usr/bin/env bash
# push records on the box what it placed (<repo>/.boxgate/pushed: SHA-256, time, path),
# rollback too, and each run record carries it back as "pushed"; against real sshd
# test hosts with the fake gate.
source "$(dirname "$0")/lib.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts

hosts_up 2
PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '/\.pyenv/' | paste -sd:)
fake_gate_on 1 2
INI=$BG_TMP/t63.ini
cat "$BG_CONFIG" >"$INI"
for i in 1 2; do cat >>"$INI" <<EOF2

[box g$i]
host = h$i
repo = /root/repo
gate = gate.sh
require_gpu = no
allow = --kind --shape --num-workers --mode
EOF2
done
bg() { "$BOXGATE" --config "$INI" "$@"; }
R=$BG_TMP/results.jsonl
L=$BG_TMP/repo
mkdir -p "$L/scripts"
cd "$L" || exit 1
sha() { sha256sum <"$1" | cut -d' ' -f1; }
# pushed_is DESC [PATH SHA]...: the last record's "pushed" lists exactly these.
pushed_is() {
  local desc=$1; shift
  check "$desc" python3 - "$R" "$@" <<'PY'
import json, sys
rec = json.loads(open(sys.argv[1], encoding="utf-8").read().splitlines()[-1])
want = dict(zip(sys.argv[2::2], sys.argv[3::2]))
got = rec["pushed"]
assert isinstance(got, list), rec.get("pushed_error")
for p in got:
    assert set(p) == {"path", "sha256", "pushed_at"}, p
    assert len(p["pushed_at"]) == 24 and p["pushed_at"].endswith("Z"), p
assert {p["path"]: p["sha256"] for p in got} == want, (got, want)
assert len(got) == len(want), got
PY
}

# --- two files pushed: the record lists both with the local SHA-256 ---
printf 'print("a1")\n' >scripts/a.py
printf 'print("b1")\n' >scripts/b.py
expect_rc 0 "push two files" bg push --root "$L" --boxes h1 scripts/a.py scripts/b.py
[ -f "$BG_HOST_1_ROOT/repo/.boxgate/pushed" ] && ok "the box has the manifest .boxgate/pushed" || not_ok "no manifest"
a1=$(sha scripts/a.py) b1=$(sha scripts/b.py)
expect_rc 0 "run the fake gate on the box" bg run g1 --results "$R" -- --kind gemv_m1
pushed_is "the record lists both paths with the local files' sha256" scripts/a.py "$a1" scripts/b.py "$b1"

# --- one pushed again: its new hash, the other's old one ---
printf 'print("a2")\n' >scripts/a.py
a2=$(sha scripts/a.py)
expect_rc 0 "push a new a.py" bg push --root "$L" --boxes h1 scripts/a.py
expect_rc 0 "run again" bg run g1 --results "$R" -- --kind gemv_m1
pushed_is "the record has a.py's new hash and b.py's old one" scripts/a.py "$a2" scripts/b.py "$b1"
[ "$a1" != "$a2" ] && ok "the two contents differ" || not_ok "same hash"

# --- rollback: the .bak's hash ---
expect_rc 0 "rollback a.py" bg rollback --root "$L" h1 scripts/a.py
expect_rc 0 "run after the rollback" bg run g1 --results "$R" -- --kind gemv_m1
pushed_is "the record shows the .bak's hash after rollback" scripts/a.py "$a1" scripts/b.py "$b1"

# --- a box never pushed to ---
expect_rc 0 "run on a box never pushed to" bg run g2 --results "$R" -- --kind gemv_m1
pushed_is "its record has \"pushed\": []"

# --- a path with a tab: pushed fine, not listed ---
TABP=$(printf 'scripts/t\tb.py')
printf 'print("tab")\n' >"$TABP"
expect_rc 0 "a path with a tab is pushed" bg push --root "$L" --boxes h1 "$TABP"
cmp -s "$TABP" "$BG_HOST_1_ROOT/repo/$TABP" && ok "the tab path is on the box" || not_ok "tab path missing"
has "$ERR_FILE" 'h1: 1 path with a tab or newline not recorded' "push says the path was not recorded"
expect_rc 0 "run after pushing the tab path" bg run g1 --results "$R" -- --kind gemv_m1
pushed_is "the tab path is not listed; the others are" scripts/a.py "$a1" scripts/b.py "$b1"

# --- the manifest as the box has it; lines that are not SHA TAB EPOCH TAB PATH are left out ---
M1=$BG_HOST_1_ROOT/repo/.boxgate/pushed
check "the manifest has one SHA256 TAB EPOCH TAB PATH line per recorded path" python3 - "$M1" "$a1" "$b1" <<'PY'
import sys, time
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
rows = sorted((l.split("\t") for l in lines), key=lambda r: r[2])
assert [(r[0], r[2]) for r in rows] == [(sys.argv[2], "scripts/a.py"), (sys.argv[3], "scripts/b.py")], rows
assert all(abs(int(r[1]) - time.time()) < 600 for r in rows), rows
PY
printf 'x\n%s\t12\n%s\tsoon\tscripts/c.py\n' "$a1" "$a1" >>"$M1"
touch "$BG_HOST_1_ROOT/repo/.boxgate/.pushed.999999.tmp"
expect_rc 0 "run with malformed manifest lines" bg run g1 --results "$R" -- --kind gemv_m1
pushed_is "malformed lines are left out of the record" scripts/a.py "$a1" scripts/b.py "$b1"
printf 'print("b2")\n' >scripts/b.py
b2=$(sha scripts/b.py)
expect_rc 0 "push b.py over a manifest with malformed lines" bg push --root "$L" --boxes h1 scripts/b.py
[ ! -e "$BG_HOST_1_ROOT/repo/.boxgate/.pushed.999999.tmp" ] && ok "a killed push's temporary manifest is removed" || not_ok "stale temporary manifest kept"
expect_rc 0 "run after it" bg run g1 --results "$R" -- --kind gemv_m1
pushed_is "the rewrite keeps the others and updates b.py" scripts/a.py "$a1" scripts/b.py "$b2"
cp "$M1" "$BG_TMP/m1.keep"
head -c 1100000 /dev/zero | tr '\0' 'x' >>"$M1"
expect_rc 0 "run with a manifest over 1 MiB" bg run g1 --results "$R" -- --kind gemv_m1
check "over 1 MiB: \"pushed\": null with the reason" python3 - "$R" <<'PY'
import json, sys
rec = json.loads(open(sys.argv[1], encoding="utf-8").read().splitlines()[-1])
assert rec["pushed"] is None and "larger than" in rec["pushed_error"], rec
PY
cp "$BG_TMP/m1.keep" "$M1"

# --- a manifest that cannot be written never blocks a push ---
printf 'x\n' >"$BG_HOST_2_ROOT/repo/.boxgate"
expect_rc 0 "push succeeds when .boxgate is a file" bg push --root "$L" --boxes h2 scripts/b.py
cmp -s scripts/b.py "$BG_HOST_2_ROOT/repo/scripts/b.py" && ok "the file is in place" || not_ok "file not pushed"
[ "$(grep -c 'could not record what was placed' "$ERR_FILE")" = 1 ] && grep -q 'h2: could not record' "$ERR_FILE" &&
  ok "one warning names the box" || { not_ok "manifest warning"; diag "$(cat "$ERR_FILE")"; }
expect_rc 0 "run on that box" bg run g2 --results "$R" -- --kind gemv_m1
pushed_is "no manifest there: \"pushed\": []"
rm -f "$BG_HOST_2_ROOT/repo/.boxgate"
mkdir -p "$BG_HOST_2_ROOT/repo/.boxgate/pushed"
printf 'print("b3")\n' >scripts/b.py
expect_rc 0 "push succeeds when .boxgate/pushed is a directory" bg push --root "$L" --boxes h2 scripts/b.py
has "$ERR_FILE" 'h2: could not record' "the push warns"
[ -z "$(ls -A "$BG_HOST_2_ROOT/repo/.boxgate/pushed")" ] && ok "nothing was moved into the directory" || not_ok "the directory has $(ls -A "$BG_HOST_2_ROOT/repo/.boxgate/pushed")"
[ -z "$(ls -A "$BG_HOST_2_ROOT/repo/.boxgate" | grep -v '^pushed$')" ] && ok "no temporary manifest is left" || not_ok "left: $(ls -A "$BG_HOST_2_ROOT/repo/.boxgate")"
expect_rc 0 "run on that box still runs the gate" bg run g2 --results "$R" -- --kind gemv_m1
check "an unreadable manifest: \"pushed\": null with the reason" python3 - "$R" <<'PY'
import json, sys
rec = json.loads(open(sys.argv[1], encoding="utf-8").read().splitlines()[-1])
assert rec["pushed"] is None and ".boxgate/pushed" in rec["pushed_error"], rec
assert rec["verdict"] == "PASS_GATE", rec
PY
diag "pushed_error: $(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])["pushed_error"])' "$R")"
rm -rf "$BG_HOST_2_ROOT/repo/.boxgate"

# --- status lists what push created (no .bak), by the manifest ---
# Two boxes named so that name order (b2, b10) is neither the order given nor strcmp's.
cat >>"$INI" <<EOF2

[box b2]
host = h2
repo = /root/repo

[box b10]
host = h1
repo = /root/repo
EOF2
rm -rf "$BG_HOST_1_ROOT/repo/scripts" "$BG_HOST_1_ROOT/repo/.boxgate" "$BG_HOST_2_ROOT/repo/scripts"
printf 'print("new")\n' >scripts/new.py
printf 'print("old, on the box")\n' >"$BG_TMP/old.py"
mkdir -p "$BG_HOST_1_ROOT/repo/scripts" && cp "$BG_TMP/old.py" "$BG_HOST_1_ROOT/repo/scripts/a.py"
expect_rc 0 "push a new file and a replacement to b10 and b2" bg push --root "$L" --boxes b10,b2 scripts/new.py scripts/a.py
[ ! -e "$BG_HOST_1_ROOT/repo/scripts/new.py.bak" ] && ok "the created file has no .bak" || not_ok "new.py.bak exists"
expect_rc 0 "status without paths" bg status --root "$L" --boxes b10,b2
has "$OUT_FILE" '^b\[2,10\]: scripts/new.py: same \(.*created by push, no \.bak' "status lists the created file (no .bak) as created by push"
has "$OUT_FILE" '^b10: scripts/a.py: same \(.*placed by push, \.bak present' "the replaced one as placed by push, with its .bak"
has "$OUT_FILE" '^b2: scripts/a.py: same \(.*created by push' "on the other box, a.py too (b2 had none)"
hasnt "$OUT_FILE" 'no file pushed' "no box says it found nothing"
has "$OUT_FILE" '; 3 created by push \(no \.bak\)$' "the summary counts the files push created"
[ "$(grep -oE '^b[0-9]+' "$OUT_FILE" | uniq | paste -sd' ')" = "b2 b10" ] && ok "boxes in name order: b2 before b10 (given b10,b2)" \
  || { not_ok "box order"; diag "$(cat "$OUT_FILE")"; }
expect_rc 0 "status --json without paths" bg status --root "$L" --boxes b10,b2 --json
check "status --json: created_by_push true for the created file, false for the replaced one; box order" python3 - "$OUT_FILE" "$(sha scripts/new.py)" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
files = [e for e in ev if "path" in e]
by = {(e["box"], e["path"]): e for e in files}
n = by[("b10", "scripts/new.py")]
assert n["state"] == "same" and n["pushed"] is True and n["created_by_push"] is True and n["bak"] is False, n
assert n["pushed_sha256"] == sys.argv[2] and n["pushed_at"].endswith("Z"), n
a = by[("b10", "scripts/a.py")]
assert a["pushed"] is True and a["created_by_push"] is False and a["bak"] is True, a
assert [e["box"] for e in files] == sorted((e["box"] for e in files), key=lambda b: int(b[1:])), files
assert ev[-1]["event"] == "summary" and ev[-1]["created_by_push_count"] == 3, ev[-1]
PY
expect_rc 0 "status with the created file named" bg status --root "$L" --boxes b10 scripts/new.py
has "$OUT_FILE" '^b10: scripts/new.py: same \(.*created by push, no \.bak' "named: created by push too"
printf 'edited on the box\n' >>"$BG_HOST_1_ROOT/repo/scripts/new.py"
expect_rc 0 "status after an edit on the box" bg status --root "$L" --boxes b10 scripts/new.py
has "$OUT_FILE" '^b10: scripts/new.py: differs \(.*changed on the box since push placed' "status says the box's copy changed since push placed it"
cp scripts/new.py "$BG_HOST_1_ROOT/repo/scripts/new.py"
# A file created by hand, not by push, is not called pushed.
printf 'by hand\n' >"$BG_HOST_1_ROOT/repo/scripts/hand.py"; cp "$BG_HOST_1_ROOT/repo/scripts/hand.py" scripts/hand.py
expect_rc 0 "status of a file push never placed" bg status --root "$L" --boxes b10 scripts/hand.py
hasnt "$OUT_FILE" 'by push' "... says nothing of push"

# --- rollback of a file push created: refused, the file left ---
expect_rc 1 "rollback --dry-run of a created file fails (exit 1)" bg rollback --root "$L" --dry-run b10 scripts/new.py
has "$ERR_FILE" 'b10: scripts/new.py: push placed it and there is no \.bak beside it .*nothing to roll back to, left as it is' "the dry run says why and what it leaves"
expect_rc 1 "rollback of a created file fails (exit 1)" bg rollback --root "$L" b10 scripts/new.py
has "$ERR_FILE" 'push placed it and there is no \.bak' "rollback says push created it"
cmp -s scripts/new.py "$BG_HOST_1_ROOT/repo/scripts/new.py" && ok "the created file is still there, unchanged" || not_ok "the created file was touched"
expect_rc 1 "rollback over b10 (replaced a.py) and b2 (push created it): exit 1" bg rollback --root "$L" --boxes b10,b2 scripts/a.py
has "$OUT_FILE" '^b10: scripts/a.py: rolled back' "the replaced file rolls back"
cmp -s "$BG_TMP/old.py" "$BG_HOST_1_ROOT/repo/scripts/a.py" && ok "the box has its old file again" || not_ok "rollback content"
[ "$(grep -oE '^b[0-9]+' "$OUT_FILE" | uniq | paste -sd' ')" = "b10" ] && has "$ERR_FILE" '^boxgate: b2: scripts/a.py: .*no \.bak' "b2 (created a.py) fails, b10 rolls back" \
  || { not_ok "rollback lines"; diag "$(cat "$OUT_FILE" "$ERR_FILE")"; }
expect_rc 1 "rollback --json over both boxes" bg rollback --root "$L" --json --dry-run --boxes b10,b2 scripts/a.py
check "rollback --json: boxes in name order, keys without spaces" python3 - "$OUT_FILE" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert [e["box"] for e in ev if "box" in e] == ["b2", "b10"], ev
assert all(" " not in k for e in ev for k in e), ev
PY
head -c 1100000 /dev/zero | tr '\0' 'x' >>"$BG_HOST_1_ROOT/repo/.boxgate/pushed"
expect_rc 0 "status with a manifest over 1 MiB" bg status --root "$L" --boxes b10 scripts/new.py
has "$ERR_FILE" 'b10: \.boxgate/pushed is over 1048576 bytes: not read' "status says the manifest was not read"
hasnt "$OUT_FILE" 'by push' "... and calls nothing pushed"
finish
