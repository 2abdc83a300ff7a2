#!/usr/bin/env bash
# The README's main job: boxgate run on the built-in local box with the demo gate (the
# watchdog through the local transport is t75). Nothing here is judged on speed: it runs
# beside other tests.
source "$(dirname "$0")/lib.sh"
cd "$BG_TMP"
unset BOXGATE_CONFIG
export XDG_CONFIG_HOME=$BG_TMP/xdg

# The main job exactly as README.md gives it. The verdict of a timed run depends on the
# machine (a loaded CPU can make the candidate lose or the repeats disagree): the test checks
# the run is judged and says where its number came from, not who wins.
main_job=$(sed -n 's|^make deps all && build/boxgate \(run local .*\)$|\1|p' "$BG_ROOT/README.md")
[ -n "$main_job" ] || main_job='README main job not found'
rc=0
# shellcheck disable=SC2086 # the README's words, split as a shell would
"$BOXGATE" $main_job >"$OUT_FILE" 2>"$ERR_FILE" || rc=$?
case $rc in 0|1) ok "the main job ran: boxgate $main_job (exit $rc)" ;;
  *) not_ok "the main job exited $rc"; diag "$(cat "$ERR_FILE")" ;; esac
# Without -v the gate's own lines are not shown: one line per run, then the point; the
# records keep every result line.
REC=$XDG_DATA_HOME/boxgate/results.jsonl
[ "$(grep -c '^  run [1-3]/3  slowCTA [0-9.]* us  ratio [0-9.]*  ' "$OUT_FILE")" = 3 ] && ok "the main job ran the gate three times (--repeat 3), a line each" \
  || not_ok "the main job printed $(grep -c '^  run ' "$OUT_FILE") run lines, not 3: $(cat "$OUT_FILE")"
hasnt "$OUT_FILE" '^FAITHFUL_RESULT ' "... and no raw result line without -v"
[ "$(grep -c '"raw":"FAITHFUL_RESULT {' "$REC")" = 3 ] && ok "the three records keep the raw result lines" || not_ok "records: $(nlines "$REC")"
has "$REC" '"verdict":"(PASS_GATE|BELOW_BAR)"' "the demo gate printed its result line"
has "$OUT_FILE" '^(PASS_GATE|BELOW_BAR|NOISY) +median of 3: slowCTA' "boxgate judged the medians of the three runs"
# The launcher's own test: the CUDA build runs when its probe ran a kernel on a GPU.
cuda=$(dirname "$BOXGATE")/boxgate-demo-gate-cuda
if [ -x "$cuda" ] && "$cuda" --probe >/dev/null 2>&1; then
  has "$REC" '"backend":"cuda"' "a usable GPU here: the CUDA build ran"; else
  has "$REC" '"device":"cpu"' "no GPU here: the CPU twin ran, labelled device cpu"; fi
# No --num-workers: the twin leaves one cpu free, so its workers never outnumber the cpus.
cpus=$(getconf _NPROCESSORS_ONLN); want=$((cpus > 1 ? cpus - 1 : 1))
if grep -q '"device":"cpu"' "$REC"; then
  has "$REC" "\"result\":\\{.*\"num_workers\":$want[,}]" "the twin's default is the online cpus less one ($want of $cpus)"
  has "$OUT_FILE" "-- CPU twin \\(.+\\), $want workers? on $cpus cpus\$" "the summary names the CPU twin and its model, its workers and cpus, and no oversubscription"
  model=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -n1)
  expect_rc_in_01() { local rc=0; "$@" >"$OUT_FILE" 2>"$ERR_FILE" || rc=$?; [ "$rc" -le 1 ]; }
  if expect_rc_in_01 "$BOXGATE" run local --results "$BG_TMP/one.jsonl" -- --kind demo --shape q_b --num-workers 1 --iters 5 --warmup 1; then
    ok "one run of the demo gate on the local box"; else not_ok "one run of the demo gate"; diag "$(tail -3 "$ERR_FILE")"; fi
  has "$OUT_FILE" "^(PASS_GATE|BELOW_BAR)  slowCTA .*  on CPU twin \\(.+\\)\$" "a single run's result line ends with the CPU twin and its model"
  [ -n "$model" ] && grep -qF "on CPU twin ($model" "$OUT_FILE" && ok "... the model /proc/cpuinfo names ($model)" || not_ok "model: $(grep -o 'on CPU twin.*' "$OUT_FILE")"
fi
expect_rc 0 "config check works with no configuration file" "$BOXGATE" config check
has "$OUT_FILE" '\[box local\]' "the built-in local box is listed"
expect_rc 2 "a flag the demo gate does not take is refused" "$BOXGATE" run local -- --kind demo --frobnicate
has "$ERR_FILE" 'local.*--frobnicate' "the refusal names the box and the flag"
expect_rc 125 "the stub variant is judged INVALID" "$BOXGATE" run local -- --kind demo --shape q_b --num-workers 4 --variant stub --iters 2 --warmup 0
expect_rc 0 "exec on the local box" "$BOXGATE" exec --boxes local -- 'echo hello; echo oops >&2; exit 0'
has "$OUT_FILE" '^local: hello$' "local exec output is prefixed"
has "$ERR_FILE" '^local: oops$' "local exec stderr is prefixed"
finish
