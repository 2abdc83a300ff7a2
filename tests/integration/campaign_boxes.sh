# Sourced by the campaign tests. campaign_boxes N: the deterministic campaign gate installed
# as gate.sh in the repo of test hosts 1..N, and a [box cI] for each appended to $INI.
campaign_boxes() {
  local i
  for ((i = 1; i <= $1; i++)); do
    install -m 755 "$BG_ROOT/tests/integration/gates/campaign_gate.sh" "$(eval echo "\$BG_HOST_${i}_ROOT")/repo/gate.sh"
    cat >>"$INI" <<EOF2

[box c$i]
host = h$i
repo = /root/repo
gate = gate.sh
require_gpu = no
keepalive_s = 1
heartbeat_timeout_s = 3
kill_grace_s = 1
allow = --kind --shape --configs --num-workers --speed --sleep --hang --poison --baseline --until
kernel_paths = fake:kernels/k.cuh
EOF2
  done
}
