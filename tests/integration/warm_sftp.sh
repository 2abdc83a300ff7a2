# Sourced by the warm file-transfer tests (t84, t92, t93): one test host, a box g1 on it,
# cold() and warm() (the same configuration without and with connection masters), the
# masters' helpers (masters.sh), R (the box's repo seen from here), ntemps (temporary files
# left there), and the current directory L with sub/ to push from; through DESC checks the
# last command's trace says its file transfer went through the master.
HOSTS=$BG_ROOT/tests/hosts/hosts
hosts_up 1
PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '/\.pyenv/' | paste -sd:)
COLD=$BG_TMP/cold.ini WARM=$BG_TMP/warm.ini
cat "$BG_CONFIG" >"$COLD"
printf '\n[box g1]\nhost = h1\nrepo = /root/repo\nrequire_gpu = no\nkeepalive_s = 1\n' >>"$COLD"
sed 's/^control_persist_s = 0$/control_persist_s = 60/' "$COLD" >"$WARM"
check "the warm config turns masters on" grep -q '^control_persist_s = 60$' "$WARM"
cold() { "$BOXGATE" --config "$COLD" "$@"; }
warm() { "$BOXGATE" --config "$WARM" "$@"; }
source "$(dirname "$0")/masters.sh"
R=$BG_HOST_1_ROOT/repo
ntemps() { find "$R" -name '.*.boxgate-*.tmp*' 2>/dev/null | wc -l; }
L=$BG_TMP/l
mkdir -p "$L/sub"
cd "$L" || exit 1
through() { has "$ERR_FILE" "g1 file transfer \(SFTP\) through the connection master" "$1"; }

# norm FILE: its lines as cold_warm_same compares them, without what differs by nature
# between cold and warm (timings, digests, temporary names).
norm() { sed -E 's/[0-9]+(\.[0-9]+)? ?(ms|s|MB\/s|MiB\/s)\b/T/g; s/"(elapsed_ms|ms|ts|time|sha256|bak_sha256|pushed_at)":[^,}]*/"\1":X/g; s/[0-9a-f]{64}/H/g; s/[0-9a-f]{12}(\.\.\.)?/H/g; s/boxgate-[^.]*\.tmp/boxgate-T.tmp/g' "$1"; }
