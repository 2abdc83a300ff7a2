#!/usr/bin/env python3
"""Summarises demo-gate runs: FAITHFUL_RESULT lines (the sweep) and TUNE lines (plans).

usage: sweep_table.py [--tune | --wide] FILE...

For the sweep, one row per (dtype, shape, num_workers) over the repeats: medians of
slowCTA, wall, sumCTA and GB/s for baseline and candidate, the coefficient of variation
of slowCTA across repeats (sample std / mean), the lowest cos, and the median ratio.
With --tune, for each (dtype, shape, nw) the best plan by slowCTA against the automatic one.
"""
import json
import statistics as st
import sys


def lines(paths, tag):
    for p in paths:
        with open(p, encoding="utf-8", errors="replace") as f:
            for ln in f:
                i = ln.find(tag + " {")
                if i >= 0:
                    try:
                        yield json.loads(ln[i + len(tag) + 1:])
                    except json.JSONDecodeError:
                        pass


def cv(v):
    return 100.0 * st.stdev(v) / st.mean(v) if len(v) > 1 and st.mean(v) > 0 else 0.0


ORDER = {"q_a": 0, "q_b": 1, "kv_a": 2, "o_proj": 3, "tiny": 4}


def sweep(paths):
    groups = {}
    for d in lines(paths, "FAITHFUL_RESULT"):
        key = (d.get("dtype", "bf16"), d["shape"], d["num_workers"])
        groups.setdefault(key, []).append(d)
    print("| dtype | shape | nw | impl | slowCTA us | wall us | sumCTA us | GB/s | of copy BW | cos (min) | CV slowCTA % | runs |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    ratios = []
    for key in sorted(groups, key=lambda k: (k[0], ORDER.get(k[1], 9), k[2])):
        runs = groups[key]
        for impl, name in (("baseline_in_tree", "baseline"), ("candidate", "candidate")):
            xs = [r[impl] for r in runs]
            slow = [x["slowCTA_us"] for x in xs]
            extra = ""
            if impl == "candidate" and xs[0].get("rows_per_warp"):
                extra = " (R%d S%d D%d)" % (xs[0]["rows_per_warp"], xs[0]["split_k"], xs[0].get("load_depth", 8))
            print("| %s | %s | %d | %s%s | %.2f | %.2f | %.1f | %.0f | %.0f%% | %.6f | %.2f | %d |" % (
                key[0], key[1], key[2], name, extra, st.median(slow),
                st.median([x["wall_us"] for x in xs]), st.median([x["sumCTA_us"] for x in xs]),
                st.median([x["gbps"] for x in xs]), 100 * st.median([x["bw_frac"] for x in xs]),
                min(min(x["cos"], x.get("cos_after", 1)) for x in xs), cv(slow), len(xs)))
        r = st.median([r["slowCTA_ratio_base_over_cand"] for r in runs])
        verdicts = sorted({r["verdict"] for r in runs})
        thr = sum(1 for r in runs if r.get("throttled"))
        ratios.append((key, r, verdicts, thr, st.median([r.get("cos_base_cand", 0) for r in runs])))
    print()
    print("| dtype | shape | nw | slowCTA ratio base/cand | verdicts | throttled runs | cos(base, cand) |")
    print("|---|---|---|---|---|---|---|")
    for key, r, v, thr, cbc in ratios:
        print("| %s | %s | %d | %.2fx | %s | %d | %.7f |" % (key[0], key[1], key[2], r, ",".join(v), thr, cbc))


def wide(paths):
    """One row per point: baseline and candidate side by side."""
    groups = {}
    for d in lines(paths, "FAITHFUL_RESULT"):
        groups.setdefault((d.get("dtype", "bf16"), d["shape"], d["num_workers"]), []).append(d)
    print("| shape | nw | base slowCTA | base wall | base sumCTA | cand plan | cand slowCTA | cand wall | cand sumCTA | cand GB/s | of copy | cos min | CV base | CV cand | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(groups, key=lambda k: (k[0], ORDER.get(k[1], 9), k[2])):
        runs = groups[key]
        b = [r["baseline_in_tree"] for r in runs]
        c = [r["candidate"] for r in runs]
        plan = "R%d S%d D%d" % (c[0].get("rows_per_warp", 0), c[0].get("split_k", 0), c[0].get("load_depth", 8))
        med = lambda xs, f: st.median([x[f] for x in xs])
        cmin = min(min(x["cos"], x.get("cos_after", 1)) for x in b + c)
        print("| %s | %d | %.2f | %.2f | %.0f | %s | %.2f | %.2f | %.0f | %.0f | %.0f%% | %.6f | %.2f%% | %.2f%% | %.2fx |" % (
            key[1], key[2], med(b, "slowCTA_us"), med(b, "wall_us"), med(b, "sumCTA_us"), plan,
            med(c, "slowCTA_us"), med(c, "wall_us"), med(c, "sumCTA_us"), med(c, "gbps"),
            100 * med(c, "bw_frac"), cmin, cv([x["slowCTA_us"] for x in b]), cv([x["slowCTA_us"] for x in c]),
            st.median([r["slowCTA_ratio_base_over_cand"] for r in runs])))


def tune(paths):
    groups = {}
    for d in lines(paths, "TUNE"):
        groups.setdefault((d["dtype"], d["shape"], d["nw"]), []).append(d)
    print("| dtype | shape | nw | best plan (R S depth) | best slowCTA us | auto plan | auto slowCTA us | auto/best |")
    print("|---|---|---|---|---|---|---|---|")
    for key in sorted(groups, key=lambda k: (k[0], ORDER.get(k[1], 9), k[2])):
        g = [d for d in groups[key] if d["cos"] >= 0.99]
        if not g:
            continue
        best = min(g, key=lambda d: d["slowCTA_us"])
        auto = [d for d in g if d["auto"]]
        a = auto[0] if auto else None
        print("| %s | %s | %d | %d %d %d | %.2f | %s | %s | %s |" % (
            key[0], key[1], key[2], best["rows"], best["split"], best.get("depth", 8), best["slowCTA_us"],
            "%d %d %d" % (a["rows"], a["split"], a.get("depth", 8)) if a else "-",
            "%.2f" % a["slowCTA_us"] if a else "-",
            "%.2f" % (a["slowCTA_us"] / best["slowCTA_us"]) if a else "-"))


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--tune":
        tune(args[1:])
    elif args and args[0] == "--wide":
        wide(args[1:])
    else:
        sweep(args)
