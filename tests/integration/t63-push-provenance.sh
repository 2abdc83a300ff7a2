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
finish
