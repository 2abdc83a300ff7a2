#!/usr/bin/env bash
# Output in box-name order whatever order the boxes finish in, against 3 real sshd test
# hosts (and h10, a second name for h1, so that h2 must come before h10): exec -b groups
# and its summary, exec -b --json, check's rows and reasons, push's summary; push's
# identical verifier output printed once under the box set, differing output per group.
source "$(dirname "$0")/lib.sh"

hosts_up 3
CONF=$BG_TMP/boxgate.ini
# h10 and n10 come first in the file: name order is not the configuration's order.
cat >"$CONF" <<'EOF'
[box h10]
host = h1
repo = /root/repo
python = /usr/bin/python3
require_gpu = no

[box n10]
host = h3
repo = /root/no-such-repo
require_gpu = no

EOF
cat "$BG_CONFIG" >>"$CONF"
cat >>"$CONF" <<'EOF'

[box n2]
host = h2
repo = /root/no-such-repo
require_gpu = no

[verify]
.chk = sleep "$(cat /root/delay)"; cat /root/kind; exit 1
EOF
bg() { "$BOXGATE" --config "$CONF" "$@"; }
hroot() { local v=BG_HOST_${1}_ROOT; printf '%s' "${!v}"; }
# h3 finishes first, then h2, then h1 (and h10, the same host): not name order.
for i in 1 2 3; do echo "h$i" >"$(hroot "$i")/id"; done
echo 1.2 >"$(hroot 1)/delay"
echo 0.6 >"$(hroot 2)/delay"
echo 0 >"$(hroot 3)/delay"
DELAYED='sleep "$(cat /root/delay)"'

# order_of FILE REGEX: the matching lines, joined by '|'.
order_of() { grep -E -- "$2" "$1" | paste -sd'|'; }

# --- exec: the boxes finish out of order ---
expect_rc 0 "exec streams lines as boxes finish" bg exec -n --boxes 'h10,h3,h1,h2' -- "$DELAYED; cat /root/id"
[ "$(head -1 "$OUT_FILE")" = "h3: h3" ] && ok "h3 finished first (the test's order is not name order)" \
  || { not_ok "h3 first"; diag "$(cat "$OUT_FILE")"; }
expect_rc 0 "exec -b" bg exec -b -n --boxes 'h10,h3,h1,h2' -- "$DELAYED; cat /root/id"
got=$(order_of "$OUT_FILE" '^h.* \([0-9]+\)$')
[ "$got" = 'h[1,10] (2)|h2 (1)|h3 (1)' ] && ok "-b: groups in box-name order by their first box, h2 before h10" \
  || { not_ok "-b group order: $got"; diag "$(cat "$OUT_FILE")"; }
expect_rc 1 "exec where every box fails" bg exec -n --boxes 'h10,h3,h1,h2' -- "$DELAYED; exit 1"
has "$ERR_FILE" '4 of 4 boxes failed: h1 \(exit 1\), h2 \(exit 1\), h3 \(exit 1\), h10 \(exit 1\)$' \
  "the failure summary is in box-name order (h2 before h10), not finishing order"

# --- exec -b --json: one object per group ---
expect_rc 1 "exec -b --json" bg exec -b --json -n --boxes 'h10,h3,h1,h2' -- \
  "$DELAYED; echo same; echo note >&2; [ \$(cat /root/id) = h2 ] && exit 2; printf 'last'"
if python3 - "$OUT_FILE" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
groups = [e for e in ev if e.get('event') == 'group']
assert [g['boxes'] for g in groups] == [['h1', 'h3', 'h10'], ['h2']], groups
assert [g['nodeset'] for g in groups] == ['h[1,3,10]', 'h2'], groups
assert groups[0]['stdout'] == 'same\nlast' and groups[0]['status'] == 0, groups
assert groups[1]['stdout'] == 'same\n' and groups[1]['status'] == 2, groups
assert not [e for e in ev if e.get('stream') == 'stdout'], 'stdout lines are in the groups'
assert len([e for e in ev if e.get('stream') == 'stderr' and e['line'] == 'note']) == 4, ev
assert [e['box'] for e in ev if e.get('event') == 'exit'] == ['h1', 'h2', 'h3', 'h10'], ev
assert ev.index(groups[-1]) < min(i for i, e in enumerate(ev) if e.get('event') == 'exit')
PY
then ok "-b --json: a group object per stdout and exit, in box-name order; stderr lines and exits as without -b"
else not_ok "-b --json groups"; diag "$(cat "$OUT_FILE")"; fi
expect_rc 0 "-b --json on one box" bg exec -b --json -n --boxes h2 -- 'printf "\377\n"'
has "$OUT_FILE" '"boxes":\["h2"\],"nodeset":"h2","stdout_b64":"/wo=","status":0' "-b --json: bytes that are not UTF-8 travel as stdout_b64"

# --- check: rows and reasons in name order ---
expect_rc 1 "check with two broken boxes" bg check n10 h3 h10 n2 h2 h1
got=$(awk 'NR > 1 { print $1 }' "$OUT_FILE" | paste -sd'|')
[ "$got" = 'h1|h2|h3|h10|n2|n10' ] && ok "check: rows in box-name order" || { not_ok "check rows: $got"; diag "$(cat "$OUT_FILE")"; }
got=$(grep 'does not exist' "$ERR_FILE" | sed 's/^boxgate: \([^:]*\):.*/\1/' | paste -sd'|')
[ "$got" = 'n2|n10' ] && ok "check: the reasons in box-name order" || { not_ok "check reasons: $got"; diag "$(cat "$ERR_FILE")"; }

# --- push: summary in name order; verifier output once per distinct text ---
L=$BG_TMP/repo
mkdir -p "$L/scripts"
cd "$L" || exit 1
for i in 1 2 3; do mkdir -p "$(hroot "$i")/repo/scripts"; done
printf 'def broken(:\n    pass\n' >"$L/scripts/bad.py"
expect_rc 4 "push a syntax error to 3 hosts (--no-local-check)" bg push --root "$L" --boxes 'h[1-3]' --no-local-check scripts/bad.py
[ "$(grep -c 'SyntaxError' "$ERR_FILE")" = 1 ] && ok "the same SyntaxError on 3 boxes is printed once" \
  || { not_ok "SyntaxError once"; diag "$(cat "$ERR_FILE")"; }
has "$ERR_FILE" '^boxgate: h\[1-3\]: scripts/bad.py: the verifier.s output, the same on 3 boxes:$' "... headed by the box set h[1-3]"
has "$ERR_FILE" '^h\[1-3\]:     SyntaxError: invalid syntax$' "... each line led by the box set"
[ "$(grep -c 'refused by the verifier' "$ERR_FILE")" = 1 ] && has "$ERR_FILE" '^boxgate: h\[1-3\]: scripts/bad.py: refused by the verifier' "the 3 boxes' refusals fold into one line led by h[1-3]" || not_ok "refused lines"
has "$ERR_FILE" 'push: 3 of 3 boxes had failures: h1, h2, h3$' "push's summary names the boxes in name order"

for i in 1 3; do echo alpha >"$(hroot "$i")/kind"; done
echo beta >"$(hroot 2)/kind"
echo x >"$L/scripts/a.chk"
expect_rc 4 "push a file refused with differing output" bg push --root "$L" --boxes 'h[1-3]' scripts/a.chk
has "$ERR_FILE" '^boxgate: h\[1-3\]: scripts/a.chk: refused by the verifier' "the refusals fold though h3 finished first"
expect_rc 4 "push --no-fold" bg push --root "$L" --no-fold --boxes 'h[1-3]' scripts/a.chk
got=$(grep 'refused by the verifier' "$ERR_FILE" | sed 's/^boxgate: \([^:]*\):.*/\1/' | paste -sd'|')
[ "$got" = 'h1|h2|h3' ] && ok "--no-fold: a line per box, in box-name order though h3 finished first" \
  || { not_ok "--no-fold order: $got"; diag "$(cat "$ERR_FILE")"; }
got=$(order_of "$ERR_FILE" '^h[^ ]*:     ')
[ "$got" = 'h[1,3]:     alpha|h2:     beta' ] && ok "differing verifier output: one block per group, in box-name order" \
  || { not_ok "groups: $got"; diag "$(cat "$ERR_FILE")"; }
has "$ERR_FILE" '^boxgate: h2: scripts/a.chk: the verifier.s output:$' "a box alone is headed by its name"
has "$ERR_FILE" 'push: 3 of 3 boxes had failures: h1, h2, h3$' "the summary is in name order though h3 finished first"
expect_rc 4 "push --json keeps the output per box" bg push --root "$L" --json --boxes 'h[1-3]' scripts/a.chk
[ "$(grep -c '"verify_output":"alpha"' "$OUT_FILE")" = 2 ] && [ "$(grep -c '"verify_output":"beta"' "$OUT_FILE")" = 1 ] \
  && ok "push --json: each box's object has its own verifier output" || { not_ok "push --json"; diag "$(cat "$OUT_FILE")"; }

finish
