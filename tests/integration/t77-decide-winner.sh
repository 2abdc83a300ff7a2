#!/usr/bin/env bash
# The decision end to end through the binary: a campaign's results file written here as a
# CPU twin under load gives it (the baseline near 28.7 ms with CV 36%, two candidates 5x
# and 6x faster with CV 4-36%, 3 repeats): every cell's CV is over max_cv, yet `report`
# and `brief --shape kv_a` name the faster candidate the (provisional) winner at every
# worker count, never "none". And brief's suggested command is checked against the
# configuration: a box with no kernel path gets no --kernel, one that refuses the gate's
# arguments gets no command, a box that can place the candidate gets --kernel.
source "$(dirname "$0")/lib.sh"
cd "$BG_TMP" || exit 1
unset BOXGATE_CONFIG
export XDG_CONFIG_HOME=$BG_TMP/xdg HOME=$BG_TMP/home
mkdir -p "$HOME" repo/kernels

# results.jsonl: campaign "load", pool $1, shape kv_a at num_workers 8, 64, 132.
write_results() {
  python3 - "$1" "$2" <<'PY'
import json, sys
pool, out = sys.argv[1], sys.argv[2]
# slowCTA per repeat (us): the baseline near 28709 us spread 17000-39000 (CV ~36%),
# cand_a 5x faster (CV ~4%), cand_b 6x faster (CV ~20-36%)
CELLS = {"baseline": [28709.151000000002, 17000.0, 39000.0],
         "cand_a": [5741.8, 5500.0, 5950.0],
         "cand_b": [4785.0, 3100.0, 6500.0]}
seq = 0
with open(out, "w") as f:
    for nw in (8, 64, 132):
        for cand, xs in CELLS.items():
            for rep, slow in enumerate(xs):
                seq += 1
                res = {"kind": "demo", "shape": "kv_a", "num_workers": nw, "device": "cpu",
                       "candidate": {"slowCTA_us": slow * (1 + nw / 1000), "wall_us": slow * 1.2,
                                     "sumCTA_us": 1000.0, "cos": 0.99999, "status": "PASS"},
                       "verdict": "PASS_GATE"}
                f.write(json.dumps({
                    "schema": 1, "run_id": "%016x" % seq, "seq": 0, "box": "local", "gpus": None,
                    "start": "2026-12-05T07:%02d:00.000Z" % (seq % 60),
                    "end": "2026-12-05T07:%02d:01.000Z" % (seq % 60),
                    "exit": 0, "verdict": "PASS_GATE", "result": res,
                    "campaign": {"name": "load", "pool": pool, "gate_args": ["--kind", "demo"],
                                 "job": "load/kv_a/%d/%s/%d" % (nw, cand, rep), "shape": "kv_a",
                                 "num_workers": nw, "candidate": cand, "repeat": rep,
                                 "repeats": 3, "jobs": 27, "attempt": 1, "final": True,
                                 "bar": 1.2, "max_cv": 2.0, "sum_tolerance": 10.0}}) + "\n")
PY
}
write_results cpu results.jsonl
[ -s results.jsonl ] && ok "the campaign's results file written" || not_ok "no results file"

printf '[pool cpu]\nslots = local\n' >boxgate.ini
expect_rc 0 "brief FILE --shape kv_a" "$BOXGATE" --config boxgate.ini brief results.jsonl --shape kv_a
for nw in 8 64 132; do
  has "$OUT_FILE" "^  num_workers $nw: cand_b, slowCTA [0-9.]+ us, ratio [0-9.]+ \(PASS_GATE, 90% interval [0-9.]+-[0-9.]+; provisional: not measurably faster than cand_a\)$" \
    "brief names cand_b (the faster median) the provisional winner at num_workers $nw, with its verdict and interval"
done
hasnt "$OUT_FILE" "none: the in-tree baseline is the best" "brief never says none while the candidates are 5-6x faster"
# item: the local box names no kernel path for --kind demo: no --kernel, and why
hasnt "$OUT_FILE" "boxgate run .*--kernel" "no --kernel suggestion for a pool whose box has no kernel path"
has "$OUT_FILE" "^  boxgate run --pool cpu -- --kind demo --shape kv_a --configs kv_a --num-workers 8$" "the command without --kernel"
has "$OUT_FILE" "^\(no --kernel: box local names no kernel path for --kind demo \(add demo:PATH to kernel_paths under \[box local\]" "brief says why it suggests no --kernel"

expect_rc 0 "report FILE" "$BOXGATE" report results.jsonl
has results.report.md "^Best per point: 8 cand\\\\_b \(provisional\), 64 cand\\\\_b \(provisional\), 132 cand\\\\_b \(provisional\)$" \
  "report names cand_b the provisional best at every worker count"
has results.report.md "\| \*\*cand\\\\_b\*\* \| .* \| PASS_GATE \(90% interval [0-9.]+-[0-9.]+\) \(CV [0-9.]+% > 2\.0%: a warning\) \| 3 \|" \
  "the winner's verdict is PASS_GATE with its interval; its CV is a warning"
hasnt results.report.md "Best per point: .*none" "report's best per point is never none here"
"$BOXGATE" report results.jsonl --json >report.json 2>/dev/null
pycheck "report --json: cand_b best and provisional at every point, each cell decided" '
import json, sys
o = json.load(open(sys.argv[1]))
pts = o["points"] if "points" in o else o["campaign"]["points"]
assert len(pts) == 3, pts
for p in pts:
    assert p["best"] == "cand_b" and p["best_provisional"] is True, p
    for c in p["cells"]:
        if c["candidate"] == "baseline":
            assert c["verdict"] == "baseline" and c["decision"] is None, c
            continue
        d = c["decision"]
        assert c["verdict"] == "PASS_GATE" and d["call"] == "PASS_GATE" and d["lo"] > 1.2, c
        assert d["method"] == "rank-sum" and d["n_baseline"] == 3 and d["n_candidate"] == 3, d
        assert c["cv_warning"] is True, c
' report.json

# --strict-noise in the campaign's records: every cell NOISY, the winner still named.
sed 's/"sum_tolerance": 10.0}/"sum_tolerance": 10.0, "strict_noise": true}/' results.jsonl >strict.jsonl
expect_rc 0 "brief on a strict_noise campaign" "$BOXGATE" --config boxgate.ini brief strict.jsonl --shape kv_a
has "$OUT_FILE" "^  num_workers 8: cand_b, slowCTA [0-9.]+ us, ratio [0-9.]+ \(NOISY, CV [0-9.]+% > 2\.0% \(strict\), 90% interval [0-9.]+-[0-9.]+; provisional" "strict: the NOISY faster candidate is still the provisional winner"

# A box that can place the candidate (kernel_paths and a repo): --kernel is suggested.
cat >kp.ini <<EOF2
[box kbox]
transport = local
gate = gate.sh
repo = $BG_TMP/repo
kernel_paths = demo:kernels/k.cuh
allow = --kind --shape --configs --num-workers
[pool kp]
slots = kbox
[box strict]
transport = local
gate = gate.sh
repo = $BG_TMP/repo
kernel_paths = demo:kernels/k.cuh
allow = --kind
[pool sp]
slots = strict
EOF2
write_results kp kp.jsonl
expect_rc 0 "brief with a pool that can place the candidate" "$BOXGATE" --config kp.ini brief kp.jsonl --shape kv_a --kernel mine.cuh
has "$OUT_FILE" "^  boxgate run --pool kp --kernel mine\.cuh -- --kind demo --shape kv_a --configs kv_a --num-workers 8$" "--kernel suggested where every box has a kernel path"
hasnt "$OUT_FILE" "no --kernel|not checked" "and nothing said against it"
write_results sp sp.jsonl
expect_rc 0 "brief with a pool whose box refuses --shape" "$BOXGATE" --config kp.ini brief sp.jsonl --shape kv_a
hasnt "$OUT_FILE" "boxgate run" "no command is suggested where the box's shim refuses the arguments"
has "$OUT_FILE" "^Gate command: none that works on this configuration: box strict of pool sp refuses the gate's arguments" "brief says the configuration refuses it"
has "$ERR_FILE" "shape" "the refusal names the flag (as explain would)"
# A tie (baseline and candidate alike): the baseline leads only provisionally, and says so.
python3 - <<'PY'
import json
with open("tie.jsonl", "w") as f:
    for i, cand in enumerate(["baseline"] * 4 + ["cand"] * 4):
        f.write(json.dumps({"schema": 1, "box": "local", "verdict": "PASS_GATE",
            "result": {"candidate": {"slowCTA_us": 100, "wall_us": 1, "sumCTA_us": 1, "cos": 1}},
            "campaign": {"name": "tie", "pool": "p\u001b[31m'x", "gate_args": ["--kind"],
                         "job": "tie/kv_a/8/%s/%d" % (cand, i), "shape": "kv_a", "num_workers": 8,
                         "candidate": cand, "final": True, "bar": 1.0}}) + "\n")
PY
expect_rc 0 "brief on a tie" "$BOXGATE" --config boxgate.ini brief tie.jsonl --shape kv_a
has "$OUT_FILE" "^  none measurably faster: the in-tree baseline leads at every worker count, provisionally \(not measurably faster than the next\) at num_workers 8 \(cand\)$" \
  "a tie: the baseline leads only provisionally, and brief says so"
if grep -q "$(printf '\033')" "$OUT_FILE"; then not_ok "a pool name from the records with an escape reaches the terminal raw"
else ok "no escape byte from the records' pool name reaches the output"; fi
expect_rc 2 "explain refuses the same arguments on that box" "$BOXGATE" --config kp.ini explain strict -- --kind demo --shape kv_a
finish
