#!/usr/bin/env bash
# boxgate exec and check against 8 real sshd test hosts: per-host output and exit
# codes, host-key policy, auth errors, unreachable hosts, streaming, timeouts.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/wait.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts

hosts_up 8
bg() { "$BOXGATE" --config "$BG_CONFIG" "$@"; }

for i in $(seq 1 8); do
  root_var=BG_HOST_${i}_ROOT
  echo "h$i" >"${!root_var}/id"
done

# --- each host's own output and exit code ---
expect_rc 1 "exec on 8 hosts: a failing host makes the run fail" \
  bg exec --all -- 'cat /root/id; case $(cat /root/id) in h3) exit 3;; h6) exit 6;; esac'
all_own=1
for i in $(seq 1 8); do grep -qx "h$i: h$i" "$OUT_FILE" || all_own=0; done
[ $all_own = 1 ] && ok "every host printed its own id, prefixed by its name" || { not_ok "own output"; diag "$(cat "$OUT_FILE")"; }
has "$ERR_FILE" '2 of 8 boxes failed: .*h3 \(exit 3\).*h6 \(exit 6\)' "summary names the failed boxes with their exit codes"
expect_rc 0 "exec --all -- true exits 0 on 8 hosts" bg exec --all -- true

# --- stdout and stderr stay separate; a last line without newline arrives ---
expect_rc 0 "stdout/stderr command runs" bg exec --boxes h1 -- 'echo to-out; echo to-err >&2; printf no-newline-at-end'
has "$OUT_FILE" '^h1: to-out$' "stdout line on stdout"
hasnt "$OUT_FILE" 'to-err' "no stderr line on stdout"
has "$ERR_FILE" '^h1: to-err$' "stderr line on stderr, prefixed"
has "$OUT_FILE" '^h1: no-newline-at-end$' "a last line without a newline arrives"

# --- node sets, pools, gather, json ---
expect_rc 0 "node-set selection h[2-4]" bg exec --boxes 'h[2-4]' -- cat /root/id
[ "$(wc -l <"$OUT_FILE")" = 3 ] && has "$OUT_FILE" '^h4: h4$' "h[2-4] selects three boxes" || { not_ok "h[2-4] selects three boxes"; diag "$(cat "$OUT_FILE")"; }
expect_rc 0 "-b gathers identical output" bg exec -b --pool all -- 'echo same; cat /root/id | grep -q h8 && echo odd || true'
has "$OUT_FILE" '^h\[1-7\] \(7\)$' "-b groups the seven identical boxes as h[1-7]"
has "$OUT_FILE" '^h8 \(1\)$' "-b shows the odd box alone"
expect_rc 0 "--json events" bg exec --json --boxes h1,h2 -- 'echo hi; printf "\377\n"'
if python3 - "$OUT_FILE" <<'PY'
import json, sys, base64
ev = [json.loads(l) for l in open(sys.argv[1], 'rb')]
lines = [e for e in ev if e.get('stream') == 'stdout' and e.get('line') == 'hi']
raw = [e for e in ev if 'line_b64' in e and base64.b64decode(e['line_b64']) == b'\xff']
exits = [e for e in ev if e.get('event') == 'exit' and e.get('status') == 0]
assert len(lines) == 2 and len(raw) == 2 and len(exits) == 2, ev
PY
then ok "--json: every line and exit is a JSON event; non-UTF-8 bytes travel as base64"; else not_ok "--json events"; fi
# Overlong forms, surrogates and code points above U+10FFFF are not UTF-8 to a
# strict reader (Python's json on bytes decoded strictly): they travel as base64 too.
expect_rc 0 "--json with near-UTF-8 bytes" bg exec --json --boxes h1 -- \
  'printf "\300\257\n\355\240\200\n\364\220\200\200\nok \303\251\n"'
if python3 - "$OUT_FILE" <<'PY'
import json, sys, base64
ev = [json.loads(l.decode('utf-8', 'strict')) for l in open(sys.argv[1], 'rb')]
got = [base64.b64decode(e['line_b64']) for e in ev if 'line_b64' in e]
assert got == [b'\xc0\xaf', b'\xed\xa0\x80', b'\xf4\x90\x80\x80'], ev
assert [e['line'] for e in ev if 'line' in e] == ['ok \u00e9'], ev
PY
then ok "--json: overlong, surrogate and out-of-range sequences travel as base64 (strict JSON)"; else not_ok "--json strict UTF-8"; fi

# --- bad selections ---
expect_rc 2 "unknown box is a usage error" bg exec --boxes h1,hh9 -- true
has "$ERR_FILE" "hh9" "the unknown box is named"
expect_rc 2 "no command is a usage error" bg exec --all
expect_rc 2 "bad --timeout is a usage error" bg exec --all --timeout soon -- true
# Seconds go through one strict parser: no shell text, fractions, overflow, sign, nothing.
for v in '1;id' 2.5 99999999999 -5 ''; do
  expect_rc 2 "exec --timeout '$v' is refused (exit 2)" bg exec --all --timeout "$v" -- true
  grep -qF -- "exec: --timeout wants whole seconds" "$ERR_FILE" && grep -qF -- "got '$v'" "$ERR_FILE" \
    && ok "... naming the flag and the value '$v'" || { not_ok "... naming the flag and the value '$v'"; diag "$(cat "$ERR_FILE")"; }
done

# --- big output streams with bounded memory; long lines in pieces ---
# Bounded memory: the client's peak RSS must not grow with the output
# (5 MB against 50 MB; sanitizer builds have a larger but equally flat floor).
# Under ASan the freed-memory quarantine fills as output flows, which is ASan's
# memory, not boxgate's: a 1 MB quarantine keeps it out of the comparison.
rss_for() {
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1" python3 - "$BOXGATE" "$BG_CONFIG" "$BG_TMP/big" "$1" <<'PY'
import resource, subprocess, sys
with open(sys.argv[3], 'wb') as out:
    subprocess.run([sys.argv[1], '--config', sys.argv[2], 'exec', '--boxes', 'h1', '--',
                    "head -c %s /dev/zero | tr '\\0' x | fold -w 99" % sys.argv[4]], stdout=out, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
}
small=$(rss_for 5000000)
maxrss=$(rss_for 50000000)
lines=$(wc -l <"$BG_TMP/big")
[ "$lines" = 505051 ] && ok "50 MB of output arrived whole ($lines lines)" || not_ok "50 MB output: $lines lines"
[ -n "$maxrss" ] && [ -n "$small" ] && [ $((maxrss - small)) -lt 16384 ] \
  && ok "client memory stays flat while streaming: peak RSS ${small} KiB for 5 MB, ${maxrss} KiB for 50 MB" \
  || not_ok "client peak RSS ${small:-?} KiB for 5 MB but ${maxrss:-?} KiB for 50 MB"
rm -f "$BG_TMP/big"
expect_rc 0 "a 3 MiB line" bg exec --boxes h1 -- "head -c 3145728 /dev/zero | tr '\\0' y; echo; echo after"
[ "$(grep -c 'boxgate: line continues' "$OUT_FILE")" = 2 ] && [ "$(grep -c '^h1: yyyy' "$OUT_FILE")" = 3 ] && ok "a 3 MiB line arrives in 1 MiB pieces, marked" \
  || { not_ok "long line pieces"; diag "$(cut -c1-80 "$OUT_FILE" | head)"; }
has "$OUT_FILE" '^h1: after$' "the line after the long one arrives"

# --- timeouts ---
expect_rc 124 "--timeout stops a long command" bg exec --boxes h1,h2 --timeout 2 -- 'sleep 61.25'
has "$ERR_FILE" 'timed out' "the summary says timed out"
# gone (lib.sh) looks in this test's hosts only: a second suite beside it runs the same command
wait_until 10 gone 'sleep.61\.25' && ok "the remote command is gone after the timeout" || not_ok "the remote command is left 10 s after the timeout"

# --- check ---
expect_rc 0 "check on all test hosts" bg check
[ "$(grep -cE '^h[1-8] +yes +ok +ok +3\.[0-9.]+ +yes +none$' "$OUT_FILE")" = 8 ] && ok "check: a row per box with python, repo, GPUs" \
  || { not_ok "check rows"; diag "$(cat "$OUT_FILE")"; }
printf '[box dead]\nhost = %s\nport = %s\nconnect_timeout_s = 2\nrepo = /root/repo\nrequire_gpu = no\n' "$BG_BLACKHOLE_ADDR" "$BG_BLACKHOLE_PORT" >"$BG_TMP/dead.ini"
cat "$BG_CONFIG" "$BG_TMP/dead.ini" >"$BG_TMP/withdead.ini"
expect_rc 3 "check reports an unreachable box" "$BOXGATE" --config "$BG_TMP/withdead.ini" check dead h1
has "$OUT_FILE" '^dead +no ' "check: the dead box's row says not reachable"
# --- host keys ---
cp "$BG_KNOWN_HOSTS" "$BG_TMP/kh.good"
: >"$BG_TMP/kh.empty"
# A box's known_hosts wins over the test hosts' ssh_config (UserKnownHostsFile).
sed "/^host = h[12]\$/a known_hosts = $BG_TMP/kh.empty" "$BG_CONFIG" >"$BG_TMP/empty.ini"
expect_rc 3 "an unknown host key is refused (strict)" "$BOXGATE" --config "$BG_TMP/empty.ini" exec --boxes h1 -- true
has "$ERR_FILE" 'h1: host key for .* is not known \(ED25519 key SHA256:[A-Za-z0-9+/]{43}\)' "the refusal shows the SHA256 fingerprint"
has "$ERR_FILE" 'boxgate check --accept-new h1' "the refusal says how to accept it"
fp=$(ssh-keygen -lf "$BG_TMP/kh.good" -E sha256 2>/dev/null | grep -c SHA256)
[ "$fp" -ge 8 ] && ok "known_hosts fingerprints readable by ssh-keygen" || not_ok "ssh-keygen reads known_hosts"
expect_rc 0 "--accept-new records the unknown key" "$BOXGATE" --config "$BG_TMP/empty.ini" exec --accept-new --boxes h1,h2 -- true
[ "$(grep -c . "$BG_TMP/kh.empty")" = 2 ] && ok "two new known_hosts lines were recorded" || not_ok "recorded lines: $(cat "$BG_TMP/kh.empty")"
expect_rc 0 "the recorded key is then accepted under strict" "$BOXGATE" --config "$BG_TMP/empty.ini" exec --boxes h1,h2 -- true
ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$BG_TMP/kh.empty" -F "$BG_SSH_CONFIG" h1 true 2>/dev/null \
  && ok "OpenSSH accepts the line boxgate recorded" || not_ok "OpenSSH accepts the recorded line"
sed 's/^host_key_check = strict/host_key_check = accept-new/' "$BG_TMP/empty.ini" >"$BG_TMP/acceptnew.ini"
{ echo "only-one-field"; cat "$BG_TMP/kh.good"; } >"$BG_TMP/kh.bad"
sed "/^host = h1\$/a known_hosts = $BG_TMP/kh.bad" "$BG_CONFIG" >"$BG_TMP/bad.ini"
expect_rc 0 "a known_hosts line that cannot be parsed is skipped" "$BOXGATE" --config "$BG_TMP/bad.ini" exec --boxes h1 -- true
has "$ERR_FILE" "kh.bad:1: cannot parse" "the skipped line is named file:line"
"$HOSTS" rekey "$D" 2 >/dev/null
expect_rc 3 "a changed host key is refused" bg exec --boxes h1,h2 -- cat /root/id
has "$ERR_FILE" 'h2: WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED' "the changed key is refused loudly"
has "$OUT_FILE" '^h1: h1$' "h1 still ran beside the refused box"
expect_rc 3 "accept-new still refuses a changed key" "$BOXGATE" --config "$BG_TMP/acceptnew.ini" exec --boxes h2 -- true
has "$ERR_FILE" 'HAS CHANGED' "accept-new: changed key refused"

# --- authentication ---
ssh-keygen -q -t ed25519 -N '' -f "$BG_TMP/other" >/dev/null
printf '[box wrongkey]\nhost = h1\nidentity = %s\nrepo = /root/repo\nrequire_gpu = no\n' "$BG_TMP/other" >"$BG_TMP/wrong.ini"
cat "$BG_CONFIG" "$BG_TMP/wrong.ini" >"$BG_TMP/auth.ini"
expect_rc 3 "a wrong user key is refused" env -u SSH_AUTH_SOCK "$BOXGATE" --config "$BG_TMP/auth.ini" exec --boxes wrongkey -- true
has "$ERR_FILE" "wrongkey: permission denied for root@.*tried $BG_TMP/other" "the auth error lists what was tried"
ssh-keygen -q -t rsa -b 2048 -N '' -f "$BG_TMP/rsa" >/dev/null
cat "$BG_TMP/rsa.pub" >>"$BG_HOST_1_ROOT/.ssh/authorized_keys"
printf '[box rsaonly]\nhost = h1\nidentity = %s\nrepo = /root/repo\nrequire_gpu = no\n' "$BG_TMP/rsa" >"$BG_TMP/rsa.ini"
cat "$BG_CONFIG" "$BG_TMP/rsa.ini" >"$BG_TMP/auth2.ini"
expect_rc 3 "an RSA-only key is refused" env -u SSH_AUTH_SOCK "$BOXGATE" --config "$BG_TMP/auth2.ini" exec --boxes rsaonly -- true
has "$ERR_FILE" 'rsa-sha2.*ed25519' "the RSA error says why and suggests ed25519"

# --- unreachable hosts ---
printf '[box dead]\nhost = %s\nport = %s\nconnect_timeout_s = 2\nrepo = /root/repo\nrequire_gpu = no\n' "$BG_BLACKHOLE_ADDR" "$BG_BLACKHOLE_PORT" >"$BG_TMP/dead.ini"
cat "$BG_CONFIG" "$BG_TMP/dead.ini" >"$BG_TMP/withdead.ini"
start=$(date +%s%N)
expect_rc 3 "an unreachable host fails the run" "$BOXGATE" --config "$BG_TMP/withdead.ini" exec --boxes 'dead,h[3-5]' -- cat /root/id
ms=$(( ($(date +%s%N) - start) / 1000000 ))
has "$ERR_FILE" 'dead: connect to .* timed out after 2 s' "the unreachable box times out at its connect timeout"
[ "$(grep -c '^h[345]: h[345]$' "$OUT_FILE")" = 3 ] && ok "the other hosts still ran" || not_ok "other hosts ran"
[ "$ms" -lt 10000 ] && ok "the run ended within the connect timeout bound (${ms} ms)" || not_ok "took ${ms} ms"
printf '[box refused]\nhost = %s\nport = %s\nrepo = /root/repo\nrequire_gpu = no\n' "$BG_REFUSED_ADDR" "$BG_REFUSED_PORT" >"$BG_TMP/ref.ini"
cat "$BG_CONFIG" "$BG_TMP/ref.ini" >"$BG_TMP/withref.ini"
expect_rc 3 "a closed port is a connection error" "$BOXGATE" --config "$BG_TMP/withref.ini" exec --boxes refused -- true
has "$ERR_FILE" 'refused: connect to .*: Connection refused' "the refused connection is named"

# A server that stops in the middle of key exchange: libssh2 keeps the key material of an
# abandoned exchange; boxgate must fail by name at the connect timeout and free it all
# (under ASan a leak would make the exit 1, not 3).
python3 "$BG_ROOT/tests/integration/stallkex.py" --seconds 30 >"$BG_TMP/stall.port" &
stall_pid=$!
for _ in $(seq 1 50); do [ -s "$BG_TMP/stall.port" ] && break; sleep 0.1; done
printf '[box stall]\nhost = 127.0.0.1\nport = %s\nconnect_timeout_s = 1\nrepo = /root/repo\nrequire_gpu = no\n' "$(cat "$BG_TMP/stall.port")" >"$BG_TMP/stall.ini"
cat "$BG_CONFIG" "$BG_TMP/stall.ini" >"$BG_TMP/withstall.ini"
expect_rc 3 "a server that stalls mid key exchange is a connection error" "$BOXGATE" --config "$BG_TMP/withstall.ini" exec --boxes stall -- true
has "$ERR_FILE" 'stall: SSH handshake with 127.0.0.1 port [0-9]* failed: Timed out' "the stalled handshake is named"
hasnt "$ERR_FILE" 'Sanitizer' "an abandoned handshake leaves nothing allocated"
kill "$stall_pid" 2>/dev/null; wait "$stall_pid" 2>/dev/null

# --- a lost connection is never exit 0 ---
printf '[box h7k]\nhost = h7\nkeepalive_s = 1\nrepo = /root/repo\nrequire_gpu = no\n' >"$BG_TMP/ka.ini"
cat "$BG_CONFIG" "$BG_TMP/ka.ini" >"$BG_TMP/withka.ini"
# the link is cut once the command runs (it says so in a file): a cut before the connect
# would be a connect failure, another message
rm -f "$BG_HOST_7_ROOT/cut.me"
( wait_until 60 test -e "$BG_HOST_7_ROOT/cut.me"; "$HOSTS" link "$D" 7 down ) &
expect_rc 3 "a command whose link is cut is a connection failure, not success" "$BOXGATE" --config "$BG_TMP/withka.ini" exec --boxes h7k -- ': >~/cut.me; sleep 20; echo finished'
wait
"$HOSTS" link "$D" 7 up >/dev/null 2>&1
has "$ERR_FILE" 'h7k: no reply from the box for 3 s: connection lost' "the cut link is reported as a lost connection"
has "$ERR_FILE" 'h7k \(connection lost\)' "the summary says connection lost"
hasnt "$OUT_FILE" finished "no output claims the command finished"

finish
