#!/usr/bin/env bash
# The same command again a second later (warm): `boxgate exec -n -w h1 -- true` through
# the box's connection master (control_persist_s = 60, made by the untimed warm-up run)
# against OpenSSH's ControlMaster (ControlMaster=auto, ControlPersist=60, its master made
# by the warm-up likewise), at an added one-way delay of 0 and 10 ms. The cold rows (a
# fresh connection every run: boxgate with control_persist_s = 0, plain ssh) show what
# the masters save. Goal: boxgate warm <= 1.0x OpenSSH ControlMaster at both delays.
# Then `boxgate run` of a gate (the fake gate's passing mode: the run's own cost, not the
# gate's) and `boxgate check`, warm and cold, against ssh running the same gate command
# through its ControlMaster and fresh.
source "$(dirname "$0")/lib.sh"
DELAYS=${BENCH_DELAYS:-0 10}
export XDG_RUNTIME_DIR=$BENCH_TMP/run
mkdir -m 700 "$XDG_RUNTIME_DIR" "$BENCH_TMP/runbase"

tool_bgwarm() { "$BOXGATE" --config "$BENCH_TMP/warm.ini" exec -n -w h1 -- true; }
tool_bgcold() { "$BOXGATE" --config "$BG_CONFIG" exec -n -w h1 -- true; }
tool_sshcm() {
  ssh -F "$BG_SSH_CONFIG" -o ControlMaster=auto -o "ControlPath=$BENCH_TMP/cm-%C" \
    -o ControlPersist=60 h1 true
}
tool_ssh() { ssh -F "$BG_SSH_CONFIG" h1 true; }
GATE_CMD='cd /root/repo && ./gate.sh --mode pass'
tool_runwarm() { "$BOXGATE" --config "$BENCH_TMP/warm.ini" run --no-results g1 -- --mode pass; }
tool_runcold() { "$BOXGATE" --config "$BENCH_TMP/cold.ini" run --no-results g1 -- --mode pass; }
tool_sshcmrun() {
  ssh -F "$BG_SSH_CONFIG" -o ControlMaster=auto -o "ControlPath=$BENCH_TMP/cm-%C" \
    -o ControlPersist=60 h1 "$GATE_CMD"
}
tool_sshrun() { ssh -F "$BG_SSH_CONFIG" h1 "$GATE_CMD"; }
# BENCH_BASELINE=PATH: another boxgate binary (an earlier commit's) side by side, its
# masters apart (a runtime directory of its own).
tool_runwarmbase() {
  XDG_RUNTIME_DIR=$BENCH_TMP/runbase "$BENCH_BASELINE" --config "$BENCH_TMP/warm.ini" run --no-results g1 -- --mode pass
}
tool_runcoldbase() { "$BENCH_BASELINE" --config "$BENCH_TMP/cold.ini" run --no-results g1 -- --mode pass; }
tool_checkwarm() { "$BOXGATE" --config "$BENCH_TMP/warm.ini" check g1; }
tool_checkcold() { "$BOXGATE" --config "$BENCH_TMP/cold.ini" check g1; }

bench_label bgwarm "boxgate exec, warm (its master)"
bench_label sshcm "OpenSSH ssh, warm (ControlMaster)"
bench_label bgcold "boxgate exec, cold"
bench_label ssh "OpenSSH ssh, cold"
bench_label runwarm "boxgate run (a gate), warm"
bench_label sshcmrun "ssh the gate's command, ControlMaster"
bench_label runcold "boxgate run (a gate), cold"
bench_label sshrun "ssh the gate's command, cold"
bench_label checkwarm "boxgate check, warm"
bench_label checkcold "boxgate check, cold"
bench_label runwarmbase "boxgate run warm, baseline binary"
bench_label runcoldbase "boxgate run cold, baseline binary"
TOOLS="bgwarm sshcm bgcold ssh"
RUN_TOOLS="runwarm sshcmrun runcold sshrun checkwarm checkcold"
[ -n "${BENCH_BASELINE:-}" ] && RUN_TOOLS="$RUN_TOOLS runwarmbase runcoldbase"
# BENCH_WARM_TOOLS="runwarm sshcmrun ...": only these (a quicker A/B)
if [ -n "${BENCH_WARM_TOOLS:-}" ]; then TOOLS=''; RUN_TOOLS=$BENCH_WARM_TOOLS; fi

keys=''
for d in $DELAYS; do
  key="${d}ms"
  keys="$keys $key"
  bench_up_delayed 1 "$d"
  install -m 755 "$BG_ROOT/tests/integration/gates/fake_gate.sh" "$BG_HOST_1_ROOT/repo/gate.sh"
  { cat "$BG_CONFIG"
    printf '\n[box g1]\nhost = h1\nrepo = /root/repo\ngate = gate.sh\nrequire_gpu = no\nallow = --mode\n'
  } >"$BENCH_TMP/cold.ini"
  sed 's/^control_persist_s = 0$/control_persist_s = 60/' "$BENCH_TMP/cold.ini" >"$BENCH_TMP/warm.ini"
  bench_measure "$key" "$BENCH_RUNS" $TOOLS $RUN_TOOLS
  "$BOXGATE" --config "$BENCH_TMP/warm.ini" disconnect >/dev/null 2>&1
  [ -z "${BENCH_BASELINE:-}" ] || XDG_RUNTIME_DIR=$BENCH_TMP/runbase "$BENCH_BASELINE" --config "$BENCH_TMP/warm.ini" disconnect >/dev/null 2>&1
  bench_down
done

if [ -n "$TOOLS" ]; then
  bench_table "the same command again (warm): median of $BENCH_RUNS runs, seconds (added one-way delay)" "$keys" $TOOLS
  printf '\nratios\n'
  bench_ratio "boxgate warm / OpenSSH ControlMaster warm" bgwarm sshcm "$keys" "<= 1.0x at both"
  bench_ratio "boxgate warm / boxgate cold" bgwarm bgcold "$keys"
  bench_ratio "OpenSSH ControlMaster warm / ssh cold" sshcm ssh "$keys"
fi
bench_table "a gate run and check again (warm): median of $BENCH_RUNS runs, seconds" "$keys" $RUN_TOOLS
printf '\nratios\n'
bench_ratio "boxgate run warm / ssh ControlMaster gate" runwarm sshcmrun "$keys" "<= 1.0x at both"
bench_ratio "boxgate run warm / boxgate run cold" runwarm runcold "$keys"
bench_ratio "boxgate run cold / ssh cold gate" runcold sshrun "$keys"
bench_ratio "boxgate check warm / ssh ControlMaster true" checkwarm sshcm "$keys"
bench_ratio "boxgate check warm / boxgate check cold" checkwarm checkcold "$keys"
if [ -n "${BENCH_BASELINE:-}" ]; then
  bench_ratio "boxgate run warm / baseline binary warm" runwarm runwarmbase "$keys"
  bench_ratio "boxgate run cold / baseline binary cold" runcold runcoldbase "$keys"
  bench_ratio "baseline run warm / ssh ControlMaster gate" runwarmbase sshcmrun "$keys"
fi
bench_note "run: $BOXGATE --config warm.ini run --no-results g1 -- --mode pass (tests/integration/gates/fake_gate.sh as repo/gate.sh; boxgate run also checks the agent, takes the slot's lock, frames and judges the result) vs ssh ... h1 '$GATE_CMD'"
bench_note "command: $BOXGATE --config warm.ini exec -n -w h1 -- true (control_persist_s = 60) vs ssh -F ssh_config -o ControlMaster=auto -o ControlPath=cm-%C -o ControlPersist=60 h1 true"
bench_note "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
bench_notes
