#!/usr/bin/env bash
# boxgate validate: the reference must pass, the stub must score 0, the drop-the-feature
# variant must fail the cos gate. The demo gate on the built-in local box holds; fake
# gates whose stub scores or whose drop variant passes do not; a box without the keys
# and a command line without '--' are refused before anything runs.
source "$(dirname "$0")/lib.sh"
cd "$BG_TMP"
unset BOXGATE_CONFIG
export XDG_CONFIG_HOME=$BG_TMP/xdg
mkdir -p "$BG_TMP/repo"
cp "$BG_ROOT/tests/integration/gates/validate_gate.sh" "$BG_TMP/repo/validate_gate.sh"
chmod +x "$BG_TMP/repo/validate_gate.sh"
INI=$BG_TMP/validate.ini
cat >"$INI" <<EOF2
[box vg]
transport = local
repo = $BG_TMP/repo
gate = validate_gate.sh
allow = --kind --shape --num-workers --variant --broken
validate_stub = --variant stub
validate_drop = --variant   halfk

[box nokeys]
transport = local
repo = $BG_TMP/repo
gate = validate_gate.sh
allow = --kind --shape --num-workers --variant
validate_drop = --variant halfk

[box narrow]
transport = local
repo = $BG_TMP/repo
gate = validate_gate.sh
allow = --kind --shape --num-workers
validate_stub = --variant stub
validate_drop = --variant halfk
EOF2
# An ssh box on a loopback port nothing listens on: the connection fails.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
: >"$BG_TMP/ssh_config"
cat >>"$INI" <<EOF2

[box closed]
host = 127.0.0.1
port = $port
connect_timeout_s = 5
known_hosts = $BG_TMP/known_hosts
repo = /nonexistent
gate = gate.sh
require_gpu = no
allow = --kind --variant
validate_stub = --variant stub
validate_drop = --variant halfk
EOF2
sed -i "1i [defaults]\nssh_config = $BG_TMP/ssh_config\n" "$INI"
bg() { "$BOXGATE" --config "$INI" "$@"; }
# field LINE NAME: "VERDICT COS" of NAME[VERDICT cos COS] in the field-notes line.
field() { sed -n "s/.*  $2\[\([A-Z_]*\) cos \([-0-9.]*\)\].*/\1 \2/p" "$1"; }

# --- the demo gate on the built-in local box ---
expect_rc 0 "the demo gate on the local box validates (exit 0)" \
  "$BOXGATE" validate local -- --kind demo --shape tiny --num-workers 8
has "$OUT_FILE" '^tiny nw8  stub\[[A-Z_]+ cos [-0-9.]+\]  ref\[[A-Z_]+ cos [-0-9.]+\]  drop\[[A-Z_]+ cos [-0-9.]+\]$' \
  "one line in the field notes' form: tiny nw8  stub[..]  ref[..]  drop[..]"
read -r sv sc <<<"$(field "$OUT_FILE" stub)"
read -r rv rc_ <<<"$(field "$OUT_FILE" ref)"
read -r dv dc <<<"$(field "$OUT_FILE" drop)"
if [ "${sv:-}" = INVALID ] && [ "${sc:-}" = 0.000 ]; then ok "the stub is INVALID with cos 0.000"; else not_ok "the stub: '$sv $sc'"; fi
case ${rv:-} in PASS|BELOW_BAR) ok "the reference passes ($rv)" ;; *) not_ok "the reference: '$rv'" ;; esac
if awk -v c="${rc_:-x}" 'BEGIN { exit !(c + 0 >= 0.99 && c ~ /^[0-9.]+$/) }'; then ok "the reference's cos $rc_ >= 0.99"; else not_ok "the reference's cos '$rc_'"; fi
if [ "${dv:-}" = INVALID ] && awk -v c="${dc:-x}" 'BEGIN { exit !(c ~ /^[0-9.]+$/ && c + 0 < 0.99) }'; then
  ok "the drop variant (halfk) is INVALID with cos $dc < 0.99"; else not_ok "the drop variant: '$dv $dc'"; fi
has "$OUT_FILE" '^validate: the gate holds$' "validate says the gate holds"
has "$ERR_FILE" '^boxgate: local: stub: INVALID' "each invocation's verdict is said on stderr"
if [ -e "$XDG_DATA_HOME/boxgate/results.jsonl" ]; then not_ok "validate kept records"; else ok "validate keeps no record in the results store"; fi

expect_rc 0 "validate --json on the local box" "$BOXGATE" validate local --json -- --kind demo --shape tiny --num-workers 8
if python3 - "$OUT_FILE" <<'PY'
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1])]
assert len(objs) == 4, objs
v = {o["variant"]: o for o in objs[:3]}
assert [o["event"] for o in objs] == ["variant"] * 3 + ["summary"]
assert set(v) == {"ref", "stub", "drop"}
assert v["ref"]["verdict"] in ("PASS_GATE", "BELOW_BAR") and v["ref"]["cos"] >= 0.99
assert v["stub"]["verdict"] == "INVALID" and abs(v["stub"]["cos"]) <= 1e-6
assert v["drop"]["verdict"] == "INVALID" and v["drop"]["cos"] < 0.99
assert v["stub"]["gate_args"][-2:] == ["--variant", "stub"], v["stub"]["gate_args"]
assert v["drop"]["gate_args"][-2:] == ["--variant", "halfk"]
assert v["ref"]["gate_args"] == ["--kind", "demo", "--shape", "tiny", "--num-workers", "8"]
assert all(o["holds"] for o in objs[:3])
s = objs[3]
assert s["holds"] is True and s["failed"] == [] and s["exit"] == 0
assert s["shape"] == "tiny" and s["num_workers"] == 8
assert v["ref"]["result"]["num_workers"] == 8
PY
then ok "--json: three variant objects and a summary, as Python's json reads them"; else not_ok "--json output"; diag "$(head -c 3000 "$OUT_FILE")"; fi

expect_rc 0 "config check shows the local box's validate keys" "$BOXGATE" config check
has "$OUT_FILE" '^validate_stub = --variant stub$' "the local box's validate_stub is --variant stub"
has "$OUT_FILE" '^validate_drop = --variant halfk$' "the local box's validate_drop is --variant halfk"

# --- fake gates ---
expect_rc 0 "a sound fake gate validates" bg validate vg -- --kind demo --shape q_b --num-workers 8
has "$OUT_FILE" '^q_b nw8  stub\[INVALID cos 0\.000\]  ref\[PASS cos 1\.000\]  drop\[INVALID cos 0\.711\]$' \
  "the fake gate's line: stub[INVALID cos 0.000] ref[PASS cos 1.000] drop[INVALID cos 0.711]"
has "$ERR_FILE" '^drop: validate_gate: variant halfk' "validate_drop's words split on blanks reached the gate"

expect_rc 1 "a gate whose stub scores cos 0.5 fails validation (exit 1)" \
  bg validate vg -- --kind demo --shape q_b --num-workers 8 --broken stub
has "$OUT_FILE" '  stub\[INVALID cos 0\.500\]' "the line shows the stub's cos 0.500"
has "$OUT_FILE" '^validate: stub fails: .*score 0.*cos 0\.50000' "the failing check names the stub and its cos"
hasnt "$OUT_FILE" 'holds|^validate: (ref|drop) fails' "only the stub is named"

expect_rc 1 "a gate whose drop variant passes the cos gate fails validation (exit 1)" \
  bg validate vg -- --kind demo --shape q_b --num-workers 8 --broken drop
has "$OUT_FILE" '  drop\[PASS cos 0\.995\]' "the line shows the drop variant passing"
has "$OUT_FILE" '^validate: drop fails: .*cos gate.*PASS cos 0\.99500' "the failing check names the drop variant"
hasnt "$OUT_FILE" 'holds|^validate: (ref|stub) fails' "only the drop variant is named"

expect_rc 1 "--json on a failing gate" bg validate vg --json -- --kind demo --broken drop
if python3 - "$OUT_FILE" <<'PY'
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1])]
s = objs[-1]
assert s["event"] == "summary" and s["holds"] is False and s["failed"] == ["drop"] and s["exit"] == 1, s
d = [o for o in objs if o.get("variant") == "drop"][0]
assert d["holds"] is False and d["verdict"] == "PASS_GATE" and "cos gate" in d["failed"]
PY
then ok "--json summary: failed [drop], exit 1"; else not_ok "--json failing summary"; diag "$(head -c 3000 "$OUT_FILE")"; fi

# --- refusals before anything runs ---
line=$(grep -n '^\[box nokeys\]' "$INI" | cut -d: -f1)
expect_rc 2 "a box without validate_stub is refused (exit 2)" bg validate nokeys -- --kind demo
has "$ERR_FILE" "box nokeys has no validate_stub.*$INI:$line" "the refusal names the key and the box's config line"
hasnt "$ERR_FILE" 'validate_drop|validate_gate:' "validate_drop is there, and nothing ran"
expect_rc 2 "stub words the box's allowlist refuses are refused (exit 2)" bg validate narrow -- --kind demo
has "$ERR_FILE" "validate_stub \($INI:[0-9]+\)" "the refusal names where the stub's words come from"
expect_rc 2 "gate flags without '--' are refused (exit 2)" "$BOXGATE" validate local --kind demo
expect_rc 2 "no gate arguments is refused (exit 2)" "$BOXGATE" validate local
has "$ERR_FILE" "after '--'" "the refusal says the gate's arguments go after '--'"
expect_rc 2 "an unknown box is refused (exit 2)" "$BOXGATE" validate nosuch -- --kind demo
expect_rc 3 "a box that cannot be reached is a connection failure (exit 3)" bg validate closed -- --kind demo
hasnt "$OUT_FILE" 'holds|fails' "no verdict on the gate without a connection"
expect_rc 0 "validate --help" "$BOXGATE" validate --help
has "$OUT_FILE" 'keeps no record' "--help says validate keeps no record"
finish
