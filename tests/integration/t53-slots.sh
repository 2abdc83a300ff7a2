#!/usr/bin/env bash
# boxgate slots: free, held, disabled slots of a pool over two real sshd test hosts, as
# the boxes' agents see them; slots disable/enable stored on the box and obeyed by run;
# looking at a slot never makes a run busy.
source "$(dirname "$0")/lib.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts

hosts_up 2
fake_gate_on 1 2
INI=$BG_TMP/t53.ini
cat "$BG_CONFIG" >"$INI"
cat >>"$INI" <<EOF2

[box g1]
host = h1
repo = /root/repo
gate = gate.sh
gpus = 0-1
require_gpu = no
allow = --kind --shape --num-workers --mode --tag

[box g2]
host = h2
repo = /root/repo
gate = gate.sh
gpus = 0
require_gpu = no
allow = --kind --shape --num-workers --mode --tag

[box c1]
host = h2
repo = /root/repo
gate = gate.sh
require_gpu = no
allow = --kind --shape --num-workers --mode --tag

[pool p]
slots = g1:0-1, g2:0
EOF2
bg() { "$BOXGATE" --config "$INI" "$@"; }
cd "$BG_TMP" || exit 1
# slots_are DESC BOX:SLOT:STATE...: `slots --pool p --json`, read by Python, is exactly these.
slots_are() {
  local desc=$1; shift
  bg slots --pool p --json >"$BG_TMP/slots.json" 2>"$ERR_FILE"
  check "$desc" python3 - "$BG_TMP/slots.json" "$@" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
got = [f'{r["box"]}:{r["slot"]}:{r["state"]}' for r in rows]
assert got == sys.argv[2:], got
PY
}

slots_are "a fresh pool: every slot free, in the pool's order" g1:gpu0:free g1:gpu1:free g2:gpu0:free
expect_rc 0 "the table" bg slots --pool p
has "$OUT_FILE" '^BOX +SLOT +STATE +DETAIL$' "the table has its header"
has "$OUT_FILE" '^g\[1-2\] +gpu0 +free$' "a free slot is one row with no detail, the boxes alike folded"
expect_rc 0 "the table, --no-fold" bg slots --pool p --no-fold
has "$OUT_FILE" '^g2 +gpu0 +free$' "--no-fold: a row per box"

expect_rc 0 "slots disable g1:1 --why" bg slots disable g1:1 --why "KDA job until Friday"
has "$OUT_FILE" '^g1: disabled gpu1$' "the box says it disabled gpu1"
slots_are "the disabled slot shows as disabled" g1:gpu0:free g1:gpu1:disabled g2:gpu0:free
check "the mark is on the box, beside its locks" test -f "$BG_HOST_1_ROOT/.cache/boxgate/locks/gpu1.disabled"
expect_rc 0 "the table with a disabled slot" bg slots g1
has "$OUT_FILE" '^g1 +gpu1 +disabled +KDA job until Friday \(by [^ ]+@[^ ]+ since 20[0-9-]+T[0-9:]+Z\)$' \
  "the row gives the reason, who disabled it and since when"

expect_rc 1 "run on the disabled slot is refused" bg run g1 --gpu 1 -- --mode pass
has "$ERR_FILE" 'slot gpu1 disabled: KDA job until Friday' "the refusal names the slot and the reason"
has "$ERR_FILE" '^boxgate: g1: the slot gpu1 is disabled$' "boxgate's line says disabled"
hasnt "$ERR_FILE" 'busy' "... not busy"
hasnt "$OUT_FILE" '^argv' "the gate never started there"

# a held slot: a run holds gpu0 of g1 until the test releases it
bg run g1 --gpu 0 -- --mode slow >"$BG_TMP/held.out" 2>&1 &
held=$!
for _ in $(seq 1 120); do grep -q '^argv' "$BG_TMP/held.out" && break; sleep 0.25; done
slots_are "while a run holds g1 gpu0 it is held" g1:gpu0:held g1:gpu1:disabled g2:gpu0:free
check "held: the holder's tag (user@host:pid of the client), agent pid and since" python3 - "$BG_TMP/slots.json" <<'PY'
import json, re, sys
r = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")][0]
assert re.fullmatch(r"[^@]+@[^:]+:\d+", r["tag"]), r
assert isinstance(r["pid"], int) and r["pid"] > 1, r
assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r["since"]), r
PY
expect_rc 0 "the table while held" bg slots --pool p
has "$OUT_FILE" '^g1 +gpu0 +held +[^ ]+@[^ ]+:[0-9]+ \(agent pid [0-9]+\) since ' "a held row names its holder"
touch "$BG_HOST_1_ROOT/release-0"
wait $held; rc=$?
rm -f "$BG_HOST_1_ROOT/release-0"
[ "$rc" = 0 ] && ok "the holding run passed (its slot was looked at, never taken)" || not_ok "the holding run exited $rc"
slots_are "after the run, g1 gpu0 is free again" g1:gpu0:free g1:gpu1:disabled g2:gpu0:free

expect_rc 0 "slots enable g1:1" bg slots enable g1:1
has "$OUT_FILE" '^g1: enabled gpu1$' "the box says it enabled gpu1"
slots_are "every slot free again" g1:gpu0:free g1:gpu1:free g2:gpu0:free
expect_rc 0 "run on the enabled slot works" bg run g1 --gpu 1 -- --mode pass

# a reason with a newline cannot forge the record's other keys
expect_rc 0 "a reason with a newline" bg slots disable g2:0 --why $'maintenance\nby=mallory'
check "the newline is folded: the reason is one line and 'by' is the real user" python3 - <<PY
import json, subprocess
out = subprocess.run(["$BOXGATE", "--config", "$INI", "slots", "g2", "--json"],
                     capture_output=True, text=True, check=True).stdout
r = json.loads(out.splitlines()[0])
assert r["why"] == "maintenance by=mallory" and r["disabled_by"] != "mallory", r
PY
expect_rc 0 "enable g2:0" bg slots enable g2:0

# bad input, refused before anything connects
expect_rc 2 "disable without --why" bg slots disable g1:1
has "$ERR_FILE" 'needs --why' "the error says --why is needed"
expect_rc 2 "enable with --why" bg slots enable g1:1 --why x
expect_rc 2 "bad GPUS" bg slots disable g1:x --why y
has "$ERR_FILE" "bad GPUS 'x' in 'g1:x'" "the error names the bad GPUS"
for spec in g1:-1 g1:0- g1: 'g1:0,,1' g1:1-0 g1:99999999999; do
  expect_rc 2 "bad GPUS '$spec'" bg slots disable "$spec" --why y
  has "$ERR_FILE" "^boxgate: slots: bad GPUS '${spec#g1:}' in '$spec'" "... refused here, naming it"
  hasnt "$ERR_FILE" 'boxgate-agent|slot-disable' "... not on the box with the remote command"
done
expect_rc 2 "a GPU the box does not list" bg slots disable g1:5 --why y
has "$ERR_FILE" "GPU 5 is not one of box g1's gpus \(0-1\)" "the error names the box's gpus"
expect_rc 2 "GPUS on a box that lists none (its one slot is the CPU slot)" bg slots disable c1:0,0 --why y
has "$ERR_FILE" "box c1 lists no gpus: its one slot is the CPU slot" "the error says the box's one slot"
check "nothing was written on the box" test ! -e "$BG_HOST_2_ROOT/.cache/boxgate/locks/gpu0.disabled"
expect_rc 0 "slots disable c1: its CPU slot" bg slots disable c1 --why "cpu maintenance"
has "$OUT_FILE" '^c1: disabled cpu$' "the box says it disabled cpu"
expect_rc 1 "run on the disabled CPU slot is refused" bg run c1 -- --mode pass
has "$ERR_FILE" '^boxgate: c1: the CPU slot is disabled$' "boxgate's line says the CPU slot is disabled"
hasnt "$ERR_FILE" 'GPU slot|busy' "... no GPU, no busy"
expect_rc 0 "slots enable c1" bg slots enable c1
expect_rc 0 "run on the enabled CPU slot works" bg run c1 -- --mode pass
expect_rc 0 "slots disable g1:1,1 sends one GPU" bg slots disable g1:1,1 --why twice
has "$OUT_FILE" '^g1: disabled gpu1$' "gpu1, once"
expect_rc 0 "enable it again" bg slots enable g1:1
expect_rc 2 "an unknown box" bg slots disable nobox:1 --why y
has "$ERR_FILE" "no box 'nobox'" "the error names the box"
expect_rc 2 "an unknown pool" bg slots --pool nope
has "$ERR_FILE" "no pool 'nope'" "the error names the pool"
expect_rc 2 "operands and --pool together" bg slots g1 --pool p
expect_rc 2 "--why without disable" bg slots --why x

# looking never makes a run busy: 20 runs with no wait on one slot, each while the
# agent's slots command reads that slot in a tight loop
A=$BG_ROOT/build/boxgate-agent
LD=$BG_TMP/locks
( end=$(($(date +%s) + 30)); while [ "$(date +%s)" -lt "$end" ] && [ ! -e "$BG_TMP/stop" ]; do
    "$A" slots --lock-dir "$LD" --gpus "" >/dev/null; done ) &
looker=$!
busy=0
for _ in $(seq 1 20); do
  "$A" run --no-stdin --lock-dir "$LD" --lock-wait 0 -- true 2>/dev/null || busy=$((busy + 1))
done
touch "$BG_TMP/stop"; wait $looker
[ "$busy" = 0 ] && ok "20 runs beside a looping slots: none refused as busy" || not_ok "$busy of 20 runs were refused"

finish
