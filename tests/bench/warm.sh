#!/usr/bin/env bash
# The same command again a second later (warm): `boxgate exec -n -w h1 -- true` through
# the box's connection master (control_persist_s = 60, made by the untimed warm-up run)
# against OpenSSH's ControlMaster (ControlMaster=auto, ControlPersist=60, its master made
# by the warm-up likewise), at an added one-way delay of 0 and 10 ms. The cold rows (a
# fresh connection every run: boxgate with control_persist_s = 0, plain ssh) show what
# the masters save. Goal: boxgate warm <= 1.0x OpenSSH ControlMaster at both delays.
source "$(dirname "$0")/lib.sh"
DELAYS=${BENCH_DELAYS:-0 10}
export XDG_RUNTIME_DIR=$BENCH_TMP/run
mkdir -m 700 "$XDG_RUNTIME_DIR"

tool_bgwarm() { "$BOXGATE" --config "$BENCH_TMP/warm.ini" exec -n -w h1 -- true; }
tool_bgcold() { "$BOXGATE" --config "$BG_CONFIG" exec -n -w h1 -- true; }
tool_sshcm() {
  ssh -F "$BG_SSH_CONFIG" -o ControlMaster=auto -o "ControlPath=$BENCH_TMP/cm-%C" \
    -o ControlPersist=60 h1 true
}
tool_ssh() { ssh -F "$BG_SSH_CONFIG" h1 true; }

bench_label bgwarm "boxgate exec, warm (its master)"
bench_label sshcm "OpenSSH ssh, warm (ControlMaster)"
bench_label bgcold "boxgate exec, cold"
bench_label ssh "OpenSSH ssh, cold"
TOOLS="bgwarm sshcm bgcold ssh"

keys=''
for d in $DELAYS; do
  key="${d}ms"
  keys="$keys $key"
  bench_up_delayed 1 "$d"
  sed 's/^control_persist_s = 0$/control_persist_s = 60/' "$BG_CONFIG" >"$BENCH_TMP/warm.ini"
  bench_measure "$key" "$BENCH_RUNS" $TOOLS
  "$BOXGATE" --config "$BENCH_TMP/warm.ini" disconnect >/dev/null 2>&1
  bench_down
done

bench_table "the same command again (warm): median of $BENCH_RUNS runs, seconds (added one-way delay)" "$keys" $TOOLS
printf '\nratios\n'
bench_ratio "boxgate warm / OpenSSH ControlMaster warm" bgwarm sshcm "$keys" "<= 1.0x at both"
bench_ratio "boxgate warm / boxgate cold" bgwarm bgcold "$keys"
bench_ratio "OpenSSH ControlMaster warm / ssh cold" sshcm ssh "$keys"
bench_note "command: $BOXGATE --config warm.ini exec -n -w h1 -- true (control_persist_s = 60) vs ssh -F ssh_config -o ControlMaster=auto -o ControlPath=cm-%C -o ControlPersist=60 h1 true"
bench_note "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
bench_notes
