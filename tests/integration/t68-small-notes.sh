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
[ "$(grep -c 'recorded in' "$ERR_FILE")" = 3 ] && ok "all 3 repeats ran and were recorded" || not_ok "repeats: $(cat "$ERR_FILE")"

printf '[box one]\nhost = 127.0.0.1\nport = 1\n\n[pool p]\nslots = one\n' >"$BG_TMP/one.ini"
expect_rc 0 "config check of one box and one pool" "$BOXGATE" --config "$BG_TMP/one.ini" config check
has "$ERR_FILE" '\(--config; 2 boxes, 1 pool\)' "1 pool, singular (the built-in local box makes 2 boxes)"

finish
