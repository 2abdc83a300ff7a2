#!/usr/bin/env bash
# Small things that read wrong, against a real sshd test host: a flag missing from the
# allowlist points at the `allow =` line (FILE:LINE) as well as at an env rule; the agent's
# "no GPU check" note on a GPU-less box shows once per run, not once per repeat; counts are
# singular for one ("1 box, 1 pool", "1 worker"); no "((built-in))".
source "$(dirname "$0")/lib.sh"
hosts_up 1
fake_gate_on 1
CONF=$BG_TMP/boxgate.ini
# h1 as the test hosts configure it, with the fake gate, one GPU and an allowlist.
sed 's/^\[box h1\]$/[box h1]\ngate = gate.sh\ngpus = 0\nallow = --mode --kind/' "$BG_CONFIG" >"$CONF"
allow_line=$(grep -n '^allow = --mode --kind$' "$CONF" | cut -d: -f1)
bg() { "$BOXGATE" --config "$CONF" "$@"; }

expect_rc 2 "a flag not on the allowlist" bg run h1 -- --mode pass --frob 1
has "$ERR_FILE" "if the gate takes it, add it to  allow =  at $CONF:$allow_line" "the error names the allow = line"
has "$ERR_FILE" "env --frob = FROB=1" "... and still the env translation"
expect_rc 2 "the same on the built-in local box" bg run local -- --frob 1
has "$ERR_FILE" "add  allow = --frob  in a \[box local\] section" "the local box: where an allow = would go"
hasnt "$ERR_FILE" '\(\(built-in\)\)' "no ((built-in))"

expect_rc 0 "run --repeat 3 on a box without NVML (require_gpu = no)" bg run h1 --repeat 3 -- --mode pass
n=$(grep -c 'no GPU check' "$ERR_FILE")
[ "$n" = 1 ] && ok "the agent's no-GPU note shows once per run, not per repeat" || { not_ok "shown $n times"; diag "$(cat "$ERR_FILE")"; }
grep -Eq '^boxgate: h1: 3 records \(run [0-9a-f]{16}\) in ' "$ERR_FILE" && [ "$(grep -c '^  run [1-3]/3  ' "$OUT_FILE")" = 3 ] \
  && ok "all 3 repeats ran (a line each) and were recorded" || not_ok "repeats: $(cat "$OUT_FILE" "$ERR_FILE")"

# run --pull: what the gate left in the repo comes back beside the results file, and the
# record names each file with its SHA-256.
mkdir -p "$BG_HOST_1_ROOT/repo/profiles"
echo one >"$BG_HOST_1_ROOT/repo/profiles/a.ncu-rep"
echo two >"$BG_HOST_1_ROOT/repo/profiles/b.ncu-rep"
echo no >"$BG_HOST_1_ROOT/repo/profiles/c.txt"
ln -s /etc/passwd "$BG_HOST_1_ROOT/repo/profiles/evil.ncu-rep"
RES=$BG_TMP/res/r.jsonl
expect_rc 0 "run --pull 'profiles/*.ncu-rep'" bg run h1 --results "$RES" --pull 'profiles/*.ncu-rep' -- --mode pass
has "$ERR_FILE" 'h1: pulled 2 files into .*/res/pulled/[0-9a-f]{16}-0$' "it says how many and where"
has "$ERR_FILE" 'evil.ncu-rep: a symlink leading out of the repo' "a link out of the repo is refused (a warning; the run stands)"
pycheck "the record lists the 2 files with their SHA-256" '
import json, sys, hashlib, os
r = [json.loads(l) for l in open(sys.argv[1])][-1]
p = r["pulled"]
assert [f["path"] for f in p] == ["profiles/a.ncu-rep", "profiles/b.ncu-rep"], p
for f in p:
    data = open(f["local"], "rb").read()
    assert hashlib.sha256(data).hexdigest() == f["sha256"] and f["size"] == len(data), f
    assert os.path.dirname(os.path.dirname(f["local"])).startswith(os.path.dirname(sys.argv[1]) + "/pulled/"), f
' "$RES"

printf '[box one]\nhost = 127.0.0.1\nport = 1\n\n[pool p]\nslots = one\n' >"$BG_TMP/one.ini"
expect_rc 0 "config check of one box and one pool" "$BOXGATE" --config "$BG_TMP/one.ini" config check
has "$ERR_FILE" '\(--config; 2 boxes, 1 pool\)' "1 pool, singular (the built-in local box makes 2 boxes)"

finish
