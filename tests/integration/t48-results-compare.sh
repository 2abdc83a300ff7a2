#!/usr/bin/env bash
# boxgate results compare: two results files (schema 1 records written here with Python)
# with known samples per point: one unchanged, one clearly slower, one clearly faster, one
# noisy (ambiguous), one only in the before file. Checks each call, the ratios, --json
# (parsed by Python) and the exit codes: 1 when a point is slower, 2 for a missing file.
source "$(dirname "$0")/lib.sh"
cd "$BG_TMP" || exit 1

python3 - <<'PY'
import json
A = [100, 101, 99, 100.5, 99.5]
points = {  # (gpu_name, num_workers, candidate): (before, after)
    (None, 8, "baseline"): (A, [100.2, 99.8, 100.6, 99.4, 100.1]),     # same: ratio 1.001, p 1
    ("NVIDIA H200", 64, "k1"): (A, [110, 111, 109, 110.5, 109.5]),     # slower: 1.1, p 0.0079
    (None, 128, "k1"): (A, [90, 91, 89, 90.5, 89.5]),                  # faster: 0.9, p 0.0079
    (None, 136, "k1"): (A, [100.3, 106, 98.9, 107, 108]),              # ambiguous: 1.06, p 0.31
    (None, 68, "k1"): (A, []),                                         # only in before
}
def rec(seq, gpu, nw, cand, slow, verdict="PASS_GATE", extra=()):
    res = {"kind": "demo", "shape": "q_b", "num_workers": nw, "device": "cpu",
           "candidate": {"variant": cand, "slowCTA_us": slow, "wall_us": slow * 2,
                         "sumCTA_us": slow * nw, "cos": 1.0},
           "slowCTA_ratio_base_over_cand": 1.0, "verdict": verdict}
    return {"schema": 1, "run_id": "0123456789abcdef", "seq": seq, "boxgate": "0.1.0",
            "box": "local", "host": "localhost", "transport": "local", "gpus": "0",
            "gpu_name": gpu, "device": "cpu", "command": "gate --kind demo",
            "gate_args": ["--kind", "demo", "--shape", "q_b", "--num-workers", str(nw), *extra],
            "start": "2026-12-03T14:50:01.123Z", "end": "2026-12-03T14:50:02.456Z",
            "exit": 0, "agent": {"rc": 0, "why": None, "gate_exit": 0, "gate_signal": None},
            "verdict": verdict, "stated": verdict, "why": "test",
            "point": {"kind": "demo", "shape": "q_b", "num_workers": nw, "candidate": cand},
            "result": res, "raw": "FAITHFUL_RESULT " + json.dumps(res)}
for side, name in ((0, "before.jsonl"), (1, "after.jsonl")):
    with open(name, "w") as f:
        seq = 0
        for (gpu, nw, cand), samples in points.items():
            for s in samples[side]:
                f.write(json.dumps(rec(seq, gpu, nw, cand, s)) + "\n"); seq += 1
        if side == 1:  # an INVALID record never counts, however fast it looks
            f.write(json.dumps(rec(seq, None, 8, "baseline", 1.0, "INVALID")) + "\n")
            # the same point at another dtype is another point: never pooled with bf16
            for s in (50, 51, 49, 50.5, 49.5):
                seq += 1
                f.write(json.dumps(rec(seq, "NVIDIA H200", 64, "k1", s, extra=("--dtype", "fp8"))) + "\n")
PY
[ -s before.jsonl ] && [ -s after.jsonl ] && ok "two results files written" || not_ok "no results files"

expect_rc 1 "compare exits 1: one point is slower" "$BOXGATE" results compare before.jsonl after.jsonl
has "$OUT_FILE" '^point +before us +n +after us +n +delta +interval \(90%\) +p +call$' "the table has its header"
has "$OUT_FILE" '^local demo q_b nw8 baseline +100\.00 ± 0\.8% +5 +100\.10 ± 0\.4% +5 +~ +\[-0\.79%, \+0\.81%\] +p=1\.0000 +same$' \
  "unchanged point: same, ~ (not decided), its interval holds 0"
has "$OUT_FILE" '^NVIDIA H200 demo q_b nw64 k1 +100\.00 ± 0\.8% +5 +110\.00 ± 0\.7% +5 +\+10\.00% +\[\+8\.96%, \+11\.06%\] +p=0\.0079 +slower$' \
  "slower point: slower, +10.00%, p 0.0079 (exact)"
has "$OUT_FILE" '^local demo q_b nw128 k1 +.* -10\.00% +\[.*\] +p=0\.0079 +faster$' \
  "faster point: faster, -10.00%"
has "$OUT_FILE" '^local demo q_b nw136 k1 +.* ~ +\[-0\.60%, \+7\.54%\] +p=0\.3095 +ambiguous$' \
  "noisy point: ambiguous (6% change, not significant)"
has "$OUT_FILE" '^local demo q_b nw68 k1 +100\.00 ± 0\.8% +5 +- +0 .* only in before$' "a point only in before is listed as such"
has "$OUT_FILE" '^NVIDIA H200 demo q_b nw64 k1 --dtype fp8 +- +0 +50\.00 ± 1\.6% +5 .* only in after$' \
  "the same point at another dtype is its own point, never pooled"
has "$OUT_FILE" '^6 points: 1 same, 1 faster, 1 slower, 1 ambiguous, 1 only in before, 1 only in after' \
  "the summary line counts each call"

expect_rc 1 "compare --json exits 1 too" "$BOXGATE" results compare --json before.jsonl after.jsonl
if python3 - "$OUT_FILE" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
pts, summ = rows[:-1], rows[-1]
by = {p["point"]: p for p in pts}
A = [100, 101, 99, 100.5, 99.5]
want = {"local demo q_b nw8 baseline": "same", "NVIDIA H200 demo q_b nw64 k1": "slower",
        "local demo q_b nw128 k1": "faster", "local demo q_b nw136 k1": "ambiguous",
        "local demo q_b nw68 k1": "only_before",
        "NVIDIA H200 demo q_b nw64 k1 --dtype fp8": "only_after"}
assert {k: by[k]["call"] for k in by} == want, by
s = by["NVIDIA H200 demo q_b nw64 k1"]
assert abs(s["ratio"] - statistics.median([110, 111, 109, 110.5, 109.5]) / statistics.median(A)) < 1e-12
assert abs(s["p"] - 2 / 252) < 1e-12 and s["p_exact"] is True
assert s["num_workers"] == 64 and s["device"] == "NVIDIA H200" and s["n_before"] == 5
assert s["kind"] == "demo" and s["args"] == ""
assert by["NVIDIA H200 demo q_b nw64 k1 --dtype fp8"]["args"] == "--dtype fp8"
assert by["local demo q_b nw8 baseline"]["n_after"] == 5  # the INVALID record did not count
assert by["local demo q_b nw68 k1"]["ratio"] is None and by["local demo q_b nw68 k1"]["median_after"] is None
assert summ["summary"] == "compare" and summ["slower"] == 1 and summ["points"] == 6
assert summ["skipped_after"] == 1 and summ["exit"] == 1
PY
then ok "--json: one object per point and a summary, as Python's json reads them"
else not_ok "--json output"; diag "$(cat "$OUT_FILE")"; fi

expect_rc 0 "a file compared with itself: nothing slower, exit 0" "$BOXGATE" results compare before.jsonl before.jsonl
has "$OUT_FILE" '^5 points: 5 same' "every point is the same"

expect_rc 2 "a missing file is exit 2" "$BOXGATE" results compare before.jsonl nope.jsonl
has "$ERR_FILE" 'nope\.jsonl' "the error names the missing file"
expect_rc 2 "one file alone is a usage error" "$BOXGATE" results compare before.jsonl

printf '{"schema":1,"verd' >>after.jsonl
expect_rc 1 "a torn last line is skipped" "$BOXGATE" results compare before.jsonl after.jsonl
has "$ERR_FILE" 'after\.jsonl: a torn last line skipped' "and warned about on stderr"
finish
