#!/usr/bin/env bash
# Host-key checking against the real OpenSSH client as the oracle, StrictHostKeyChecking
# yes (t94: accept-new): for every known_hosts case ssh and boxgate must both connect or
# both refuse, for the same reason, and leave the same bytes (hostkeys_oracle.sh); then
# what boxgate says when it refuses.
source "$(dirname "$0")/lib.sh"
MODES=(yes)
source "$(dirname "$0")/hostkeys_oracle.sh"

# ---- what boxgate says ----
bgcase() { # CASE MODE ARGS...: boxgate ARGS on a fresh copy of CASE
  local name=$1 mode=$2; shift 2
  prepare bg "$name" "$mode"
  "$BOXGATE" --config "$W/boxgate.ini" "$@" >"$OUT_FILE" 2>"$ERR_FILE"
}
bgcase revoked-only yes check h1; rc=$?
[ $rc = 3 ] && ok "check on a revoked key exits 3" || not_ok "check on a revoked key exits $rc"
has "$OUT_FILE" '^h1 +yes +REVOKED ' "check shows REVOKED in the HOSTKEY column"
has "$ERR_FILE" "WARNING: REVOKED HOST KEY DETECTED! @ The ED25519 host key for $A is marked as revoked \(SHA256:[A-Za-z0-9+/]{43}; @revoked in [^ ]*/u1:1\)" \
  "the refusal uses OpenSSH's words, the fingerprint and FILE:LINE"
has "$ERR_FILE" 'Host key verification failed' "the refusal ends as ssh's does"
bgcase revoked-only accept-new check --json h1
has "$OUT_FILE" '"host_key": *"REVOKED"' "check --json says REVOKED, under accept-new too"
bgcase other-rsa yes check h1
has "$OUT_FILE" '^h1 +yes +CHANGED ' "check shows CHANGED for a changed key"
has "$ERR_FILE" "REMOTE HOST IDENTIFICATION HAS CHANGED.*offending RSA key in [^ ]*/u1:1" "the changed-key refusal names the offending entry"
bgcase empty yes check h1
has "$OUT_FILE" '^h1 +yes +UNKNOWN ' "check shows UNKNOWN for an unknown key"
has "$ERR_FILE" "h1: host key for $A is not known \(ED25519 key SHA256:[A-Za-z0-9+/]{43}\)" "the unknown-key refusal keeps its words"
has "$ERR_FILE" "No ED25519 host key is known for $A and you have requested strict checking" "... and says it in OpenSSH's words"
bgcase second-file-pin accept-new exec --boxes h1 -- true; rc=$?
[ $rc = 3 ] && ok "a pin in the second user file: exec exits 3 (BG_EHOSTKEY)" || not_ok "second-file pin: exit $rc"
has "$ERR_FILE" "offending ED25519 key in [^ ]*/u2:1" "the pin in the second file is named"
bgcase ca-only yes exec --boxes h1 -- true
has "$ERR_FILE" '@cert-authority line names this host .*/u1:1.*boxgate does not do host certificates' \
  "a host known only by @cert-authority: boxgate says it does not do certificates"
bgcase garbage-only yes exec --boxes h1 -- true
[ "$(grep -c 'cannot parse this known_hosts line' "$ERR_FILE")" = 10 ] \
  && has "$ERR_FILE" 'u1:4: cannot parse this known_hosts line \(.*\); skipped' "every unparsable line is named FILE:LINE" \
  || { not_ok "unparsable lines warned: $(grep -c 'cannot parse' "$ERR_FILE")"; diag "$(cat "$ERR_FILE")"; }
bgcase port-empty accept-new exec --boxes h1 -- true
has "$ERR_FILE" "Permanently added '\[$A\]:$P' \(ED25519\)" "accept-new says what it recorded, as ssh does"
# A FIFO named as a known_hosts file is skipped with a warning (ssh would wait
# on it for ever); the key in the other file still decides.
prepare bg second-file-match yes
rm -f "$W/u1" && mkfifo "$W/u1"
rc=0; timeout 60 "$BOXGATE" --config "$W/boxgate.ini" exec --boxes h1 -- true </dev/null >"$OUT_FILE" 2>"$ERR_FILE" || rc=$?
[ $rc = 0 ] && ok "a FIFO as the first known_hosts file: no hang, the second file's key admits the host" \
  || { not_ok "a FIFO as a known_hosts file: exit $rc"; diag "$(cat "$ERR_FILE")"; }
has "$ERR_FILE" "$W/u1: not a regular file; skipped" "... and the FIFO is named in a warning"

if [ $DFLT_OK = 1 ]; then
  DFLT=1; prepare bg d-second-pin yes
  in_home env HOME="$PW_HOME" "$BOXGATE" --config "$W/boxgate.ini" exec --boxes h1 -- true >"$OUT_FILE" 2>"$ERR_FILE"
  has "$ERR_FILE" "REMOTE HOST IDENTIFICATION HAS CHANGED.*offending ED25519 key in $PW_HOME/.ssh/known_hosts2:1" \
    "no known_hosts setting: a pin in ~/.ssh/known_hosts2 is refused as CHANGED and named"
  DFLT=0
fi

finish
