# Sourced by the run-trust tests (t46, t90, t91): one test host with the trust gate
# (gates/trust_gate.sh) and the nonce thief, and $INI with three boxes: t1 (gpus 0-1, a
# 2 s heartbeat, a 0.5 s grace), nogpus, and far (a closed address: whatever is refused
# there was refused before connecting). bg runs boxgate with it.
source "$(dirname "$0")/wait.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts

hosts_up 1
GATE=$BG_ROOT/tests/integration/gates/trust_gate.sh
cp "$GATE" "$BG_HOST_1_ROOT/repo/trust.sh"
cp "$BG_ROOT/tests/integration/gates/nonce_thief.py" "$BG_HOST_1_ROOT/repo/"
INI=$BG_TMP/run.ini
cat "$BG_CONFIG" >"$INI"
cat >>"$INI" <<EOF2

[box t1]
host = h1
repo = /root/repo
gate = trust.sh
gpus = 0-1
require_gpu = no
heartbeat_timeout_s = 2
kill_grace_s = 0.5
keepalive_s = 1
allow = --mode --lines
env --gate-timeout = MPK_GATE_TIMEOUT_S={}

[box nogpus]
host = h1
repo = /root/repo
gate = trust.sh
require_gpu = no
allow = --mode
EOF2
printf '[box far]\nhost = %s\nport = %s\nconnect_timeout_s = 30\nrepo = /root/repo\ngate = trust.sh\ngpus = 0-1\nrequire_gpu = no\nallow = --mode\nenv --gate-timeout = MPK_GATE_TIMEOUT_S={}\n' \
  "$BG_CLOSED_ADDR" "$BG_CLOSED_PORT" >>"$INI"
bg() { "$BOXGATE" --config "$INI" "$@"; }

