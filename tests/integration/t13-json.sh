#!/usr/bin/env bash
# Every --json output reads as JSON means: Python's json module parses each line, no key
# holds a space or an upper-case letter, yes/no are JSON booleans (json_lines.py is the
# oracle); and explain --json and bootstrap --json say what their human output says.
source "$(dirname "$0")/lib.sh"
hosts_up 2
PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '/\.pyenv/' | paste -sd:)
fake_gate_on 1 2
INI=$BG_TMP/t13.ini
cat "$BG_CONFIG" >"$INI"
for i in 1 2; do cat >>"$INI" <<EOF2

[box g$i]
host = h$i
repo = /root/repo
gate = gate.sh
require_gpu = no
allow = --kind --shape --num-workers --mode
env --decode-m1 = MPK_GG_DECODE_M1=1
EOF2
done
printf '\n[box dead]\nhost = %s\nport = %s\nconnect_timeout_s = 2\nrepo = /root/repo\nrequire_gpu = no\n' \
  "$BG_BLACKHOLE_ADDR" "$BG_BLACKHOLE_PORT" >>"$INI"
bg() { "$BOXGATE" --config "$INI" "$@"; }
ORACLE="python3 $BG_ROOT/tests/integration/json_lines.py"
# jsonok DESC [ORACLE ARGS]: the last command's stdout passes the oracle.
jsonok() {
  local desc=$1; shift
  if $ORACLE "$@" "$OUT_FILE" 2>"$BG_TMP/oracle.err"; then ok "$desc"; else
    not_ok "$desc"; diag "$(cat "$BG_TMP/oracle.err")"; diag "$(head -c 1500 "$OUT_FILE")"; fi
}
# pyok DESC ARGS... <<'PY': the Python script on stdin, run with ARGS, exits 0.
pyok() {
  local desc=$1; shift
  local out
  if out=$(python3 - "$@" 2>&1); then ok "$desc"; else not_ok "$desc"; diag "$out"; fi
}
L=$BG_TMP/repo
mkdir -p "$L/scripts"
cd "$L" || exit 1

# --- the oracle itself refuses what it must ---
printf '{"rolled back": 1}\n' >"$BG_TMP/bad1"; printf '{"repo": "yes"}\n' >"$BG_TMP/bad2"
printf '{"ok": 1}\n' >"$BG_TMP/bad3"; printf 'not json\n' >"$BG_TMP/bad4"
bad=0; for f in bad1 bad2 bad3 bad4; do $ORACLE --bool ok "$BG_TMP/$f" 2>/dev/null && bad=1; done
[ $bad = 0 ] && ok "the oracle refuses a key with a space, \"yes\", a number for a boolean, a non-JSON line" || not_ok "the oracle let one through"

# --- check --json ---
expect_rc 3 "check --json with an unreachable box" bg check --json h1 g1 dead
jsonok "check --json: JSON, snake_case, booleans" --bool reachable,auth,repo,ok --min 3
pyok "check --json: yes/no as true/false, gpus a count or null, null for what was not probed" "$OUT_FILE" <<'PY'
import json, sys
rows = {r["box"]: r for r in map(json.loads, open(sys.argv[1]))}
h1, dead = rows["h1"], rows["dead"]
assert h1["reachable"] is True and h1["auth"] is True and h1["repo"] is True and h1["ok"] is True, h1
assert h1["host_key"] == "ok" and h1["transport"] == "ssh" and h1["python"].startswith("3."), h1
assert h1["gpus"] is None, h1  # no nvidia-smi on the test hosts
assert dead["reachable"] is False and dead["ok"] is False and dead["auth"] is None, dead
assert dead["repo"] is None and dead["python"] is None and "error" in dead, dead
PY
expect_rc 0 "check --json on the built-in local box" bg check --json local
jsonok "check --json local" --bool reachable,auth,repo,ok
pyok "local: reachable, transport local, auth not tried (null)" "$OUT_FILE" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).readline())
assert r["transport"] == "local" and r["reachable"] is True and r["auth"] is None and r["host_key"] is None, r
PY

# --- config check --json ---
expect_rc 0 "config check --json" bg config check --json
jsonok "config check --json: one JSON object, snake_case keys" --min 1
[ "$(wc -l <"$OUT_FILE")" = 1 ] && ok "config check --json is one line" || not_ok "config check --json: $(wc -l <"$OUT_FILE") lines"

# --- explain --json ---
expect_rc 0 "explain --json" bg explain g1 --json -- --kind gemv_m1 --decode-m1 --mode pass
jsonok "explain --json: JSON" --bool gpu_if_found --min 1
pyok "explain --json says what the text says: box, gate, cwd, slot, timeouts, the routes" "$OUT_FILE" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
e = json.loads(lines[0])
assert e["box"] == "g1" and e["transport"] == "ssh" and e["gate"] == "gate.sh" and e["cwd"] == "/root/repo", e
assert e["slot"] == "cpu" and e["gpus"] is None and e["gpu_if_found"] is False, e
assert e["defined_in"].endswith("t13.ini") and e["defined_at_line"] > 0, e
assert e["timeout_s"] > 0 and e["grace_s"] > 0 and e["heartbeat_s"] > 0, e
routes = {a["arg"]: a for a in e["arguments"]}
assert routes["--kind"]["route"] == "pass" and routes["gemv_m1"]["route"] == "value", routes
d = routes["--decode-m1"]
assert d["route"] == "env" and d["env"] == "MPK_GG_DECODE_M1=1" and d["rule_file"].endswith("t13.ini") and d["rule_line"] > 0, d
assert "--decode-m1" not in e["flags"] and e["flags"][:2] == ["--kind", "gemv_m1"], e["flags"]
assert "MPK_GG_DECODE_M1=1" in e["env"], e["env"]
assert "gate.sh" in e["remote_command"] and "sweep" not in e, e
PY
# Fractional seconds: what the config says is what the agent is told, kill_grace_s = 0 included.
sed 's/^\[box g1\]$/[box g1]\nheartbeat_timeout_s = 0.25\nkill_grace_s = 0/' "$INI" >"$BG_TMP/frac.ini"
expect_rc 0 "explain --json with heartbeat_timeout_s = 0.25, kill_grace_s = 0" "$BOXGATE" --config "$BG_TMP/frac.ini" explain g1 --json -- --kind gemv_m1
pyok "explain --json: grace 0 s, heartbeat 0.25 s every 0.062 s, and so on the agent's command line" "$OUT_FILE" <<'PY'
import json, sys
e = json.loads(open(sys.argv[1]).read())
assert e["grace_s"] == 0 and e["heartbeat_s"] == 0.25 and e["heartbeat_every_s"] == 0.062, e
assert " --grace 0 " in e["remote_command"] and " --heartbeat 0.250 " in e["remote_command"], e["remote_command"]
PY
expect_rc 0 "explain (text) still prints text" bg explain g1 -- --kind gemv_m1 --decode-m1
has "$OUT_FILE" '^box: +g1 ' "explain's text names the box"
expect_rc 0 "explain --json over a worker sweep" bg explain g1 --json -- --kind gemv_m1 --num-workers 8,64
pyok "one object per count, in order, each naming its count" "$OUT_FILE" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert [e["sweep"]["num_workers"] for e in ev] == [8, 64] and [e["sweep"]["of"] for e in ev] == [2, 2], ev
assert ev[1]["flags"][-2:] == ["--num-workers", "64"], ev[1]["flags"]
PY
expect_rc 2 "explain --json refuses a flag the box refuses" bg explain g1 --json -- --frobnicate
[ ! -s "$OUT_FILE" ] && ok "... and prints no JSON" || not_ok "explain printed: $(cat "$OUT_FILE")"
has "$ERR_FILE" 'g1.*--frobnicate' "... naming the box and the flag"
expect_rc 0 "explain --json on the built-in local box" bg explain local --json -- --kind demo
pyok "the local box: transport local, no file, slot decided at run (GPU 0 if found)" "$OUT_FILE" <<'PY'
import json, sys
e = json.loads(open(sys.argv[1]).readline())
assert e["transport"] == "local" and e["hostname"] is None and e["defined_in"] is None, e
assert e["slot"] == "cpu" and e["gpu_if_found"] is True, e
PY

# --- bootstrap --json ---
rm -rf "$BG_HOST_1_ROOT/.cache" "$BG_HOST_2_ROOT/.cache"
expect_rc 0 "bootstrap --json" bg bootstrap --json --boxes g2,g1
jsonok "bootstrap --json: JSON" --bool ok --min 2
pyok "one object per box in box-name order: ok, how, path, sha256" "$OUT_FILE" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert [e["box"] for e in ev] == ["g1", "g2"], ev
for e in ev:
    assert e["ok"] is True and e["agent"] in ("installed", "compiled"), e
    assert len(e["sha256"]) == 64 and e["sha256"][:16] in e["path"] and "error" not in e, e
PY
expect_rc 0 "bootstrap --json again" bg bootstrap --json --boxes g1
pyok "the agent is now present" "$OUT_FILE" <<'PY'
import json, sys
e = json.loads(open(sys.argv[1]).readline())
assert e["agent"] == "present" and "shadow_trees_removed" not in e, e
PY
expect_rc 0 "bootstrap --json --clean" bg bootstrap --json --clean --boxes g1
pyok "--clean: shadow_trees_removed is a number" "$OUT_FILE" <<'PY'
import json, sys
e = json.loads(open(sys.argv[1]).readline())
assert e["shadow_trees_removed"] == 0, e
PY
expect_rc 3 "bootstrap --json on an unreachable box" bg bootstrap --json --boxes dead,g1
jsonok "bootstrap --json with a failure: JSON" --bool ok --min 2
pyok "the dead box: ok false, agent null, the error" "$OUT_FILE" <<'PY'
import json, sys
ev = {e["box"]: e for e in map(json.loads, open(sys.argv[1]))}
d = ev["dead"]
assert d["ok"] is False and d["agent"] is None and d["path"] is None and "dead" in d["error"], d
assert ev["g1"]["ok"] is True, ev
PY
has "$ERR_FILE" 'dead' "the failure is said on stderr too"
expect_rc 0 "bootstrap without --json still prints text" bg bootstrap --boxes g1
has "$OUT_FILE" '^g1: agent present: ' "bootstrap's text"

# --- push, status, rollback ---
printf 'print("a1")\n' >scripts/a.py
expect_rc 0 "push --json" bg push --root "$L" --boxes h1,h2 --json scripts/a.py
jsonok "push --json: JSON, snake_case" --bool bak --min 3
printf 'print("a2")\n' >scripts/a.py
expect_rc 0 "push --json --dry-run" bg push --root "$L" --boxes h1 --json --dry-run scripts/a.py
jsonok "push --dry-run --json" --bool bak
pyok "would_update, as a key and a state" "$OUT_FILE" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert ev[0]["state"] == "would_update", ev
assert ev[-1]["event"] == "summary" and ev[-1]["would_update"] == 1, ev
PY
expect_rc 0 "push the change" bg push --root "$L" --boxes h1 scripts/a.py
printf 'print("b")\n' >scripts/b.py
expect_rc 0 "status --json" bg status --root "$L" --boxes h1,h2 --json scripts/a.py scripts/b.py
jsonok "status --json: JSON, snake_case, booleans" --bool bak,pushed,created_by_push --min 3
pyok "status's summary keys: same, differs, missing, no_local_file" "$OUT_FILE" <<'PY'
import json, sys
s = [json.loads(l) for l in open(sys.argv[1])][-1]
assert s["event"] == "summary" and {"same", "differs", "missing", "no_local_file", "created_by_push_count"} <= set(s), s
assert (s["same"], s["differs"], s["missing"], s["created_by_push_count"]) == (1, 1, 2, 1), s
PY
expect_rc 0 "rollback --json --dry-run" bg rollback --root "$L" --json --dry-run h1 scripts/a.py
jsonok "rollback --dry-run --json" --bool bak,dry_run
pyok "would_roll_back, dry_run true" "$OUT_FILE" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert ev[0]["state"] == "would_roll_back" and ev[-1]["dry_run"] is True and ev[-1]["would_roll_back"] == 1, ev
PY
expect_rc 0 "rollback --json" bg rollback --root "$L" --json h1 scripts/a.py
jsonok "rollback --json" --bool bak,dry_run
pyok "rolled_back: the state and the summary key" "$OUT_FILE" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert ev[0]["state"] == "rolled_back" and ev[-1]["rolled_back"] == 1 and ev[-1]["dry_run"] is False, ev
assert not any(" " in k for e in ev for k in e), ev
PY

# --- exec, run, results ---
expect_rc 0 "exec --json" bg exec --json --boxes h1,h2 -- 'echo hi; echo there >&2'
jsonok "exec --json" --min 2
R=$BG_TMP/results.jsonl
expect_rc 0 "run --json" bg run --json g1 --results "$R" -- --kind gemv_m1 --mode pass
jsonok "run --json (the gate's own result object passes as the gate wrote it)" --bool disagrees,forged --min 3
expect_rc 0 "results --json" bg results --json "$R"
jsonok "results --json" --min 1
finish
