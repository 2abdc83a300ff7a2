#!/usr/bin/env python3
"""The oracle for boxgate's --json output: Python's json module reads every
line of each FILE, no key holds a space or an upper-case letter (the gate's own
metric names, and the gate's result object under "result", are the gate's
words and pass as they are), no value is a yes/no word written as a string,
and each KEY given with --bool is a JSON boolean wherever it appears.

usage: json_lines.py [--bool KEY,...] [--min N] FILE..."""
import json
import re
import sys

# Named by the gate protocol (FAITHFUL_RESULT), kept verbatim everywhere.
GATE_WORDS = {"slowCTA_us", "sumCTA_us", "baseline_slowCTA_us",
              "slowCTA_ratio_base_over_cand", "sumCTA_ratio_cand_over_base"}
KEY = re.compile(r"^[a-z0-9_]+$")
YES_NO = {"yes", "no", "true", "false"}


def walk(v, where, bools, errs):
    if isinstance(v, dict):
        for k, x in v.items():
            if not KEY.match(k) and k not in GATE_WORDS:
                errs.append(f"{where}: key {k!r} is not snake_case")
            if k in bools and x is not None and not isinstance(x, bool):
                errs.append(f"{where}: {k!r} is {x!r}, not a JSON boolean")
            if k == "result":
                continue  # the gate's own object
            walk(x, f"{where}.{k}", bools, errs)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            walk(x, f"{where}[{i}]", bools, errs)
    elif isinstance(v, str) and v.lower() in YES_NO:
        errs.append(f"{where}: {v!r} is a yes/no word as a string")


def main(argv):
    bools, need, files = set(), 1, []
    i = 0
    while i < len(argv):
        if argv[i] == "--bool":
            bools |= set(argv[i + 1].split(","))
            i += 2
        elif argv[i] == "--min":
            need = int(argv[i + 1])
            i += 2
        else:
            files.append(argv[i])
            i += 1
    errs = []
    for f in files:
        n = 0
        with open(f, encoding="utf-8") as fh:
            for no, line in enumerate(fh, 1):
                try:
                    v = json.loads(line)
                except ValueError as e:
                    errs.append(f"{f}:{no}: not JSON ({e}): {line[:120]!r}")
                    continue
                n += 1
                walk(v, f"{f}:{no}", bools, errs)
        if n < need:
            errs.append(f"{f}: {n} JSON lines, expected at least {need}")
    for e in errs[:20]:
        print(e, file=sys.stderr)
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
