#!/usr/bin/env bash
# The decision's statistics against SciPy (Debian python3-scipy) as the oracle, on a
# few hundred random inputs: the Wilcoxon signed-rank W+ and its exact one-sided
# p-values (scipy.stats.wilcoxon), the Mann-Whitney U and its exact p-values
# (scipy.stats.mannwhitneyu), and the Hodges-Lehmann estimate and interval computed
# independently in Python (Walsh averages / pairwise differences, the critical value
# from SciPy's own exact p-values). measure/decide.c is driven through a small
# program built against libboxgate.a.
. "$(dirname "$0")/lib.sh"

if ! /usr/bin/python3 -c 'import scipy.stats' 2>/dev/null; then
  echo "1..0 # SKIP SciPy (python3-scipy) is not installed"; exit 0
fi
BUILD=${BG_BUILD:-$BG_ROOT/build}
ORACLE=$BG_TMP/measure_oracle
SAN=
nm "$BUILD/libboxgate.a" 2>/dev/null | grep -q __asan_ && SAN="-fsanitize=address,undefined"
# shellcheck disable=SC2086 # SAN is zero or one word
if cc $SAN -std=c11 -D_GNU_SOURCE -I"$BG_ROOT" $(pkg-config --cflags libcjson 2>/dev/null) -o "$ORACLE" \
    "$BG_ROOT/tests/integration/measure_oracle/measure_oracle.c" "$BUILD/libboxgate.a" -lcjson -lm 2>"$BG_TMP/cc.err"; then
  ok "the oracle driver builds against libboxgate.a"
else not_ok "the oracle driver does not build"; diag "$(cat "$BG_TMP/cc.err")"; fi

/usr/bin/python3 - "$BG_TMP/cases" <<'PY'
import random, math, sys
random.seed(25)
out = open(sys.argv[1], "w")
def draw(med, cv):
    s = math.sqrt(math.log(1 + cv * cv))
    return med * math.exp(random.gauss(0, s))
for i in range(300):
    bar = random.choice([1.0, 1.2, 1.5])
    cv = random.choice([0.02, 0.05, 0.1, 0.3])
    true = bar * random.choice([0.8, 0.95, 1.0, 1.05, 1.3, 2.0])
    if i % 2 == 0:
        n = random.randint(5, 25)
        r = [draw(100, cv) / draw(100 / true, cv) for _ in range(n)]
        out.write("R %r %d %s\n" % (bar, n, " ".join("%.17g" % x for x in r)))
    else:
        nb, nc = random.randint(3, 15), random.randint(3, 15)
        b = [draw(100, cv) for _ in range(nb)]
        c = [draw(100 / true, cv) for _ in range(nc)]
        out.write("S %r %d %d %s\n" % (bar, nb, nc, " ".join("%.17g" % x for x in b + c)))
PY
"$ORACLE" <"$BG_TMP/cases" >"$BG_TMP/got" 2>"$BG_TMP/oracle.err"
[ "$(nlines "$BG_TMP/got")" = 300 ] && ok "the driver answered all 300 cases" || not_ok "the driver answered $(nlines "$BG_TMP/got") cases: $(cat "$BG_TMP/oracle.err")"

# SciPy is Debian's: /usr/bin/python3, whatever python3 comes first in PATH.
scipycheck() {
  local desc=$1 script=$2; shift 2
  local out
  if out=$(/usr/bin/python3 -c "$script" "$@" 2>&1); then ok "$desc"; diag "$out"; else not_ok "$desc"; diag "$out"; fi
}
scipycheck "300 random cases agree with SciPy (statistics, exact p-values) and an independent Hodges-Lehmann interval" '
import json, math, sys
import numpy as np
from scipy import stats
cases = [l.split() for l in open(sys.argv[1])]
got = [json.loads(l) for l in open(sys.argv[2])]
assert len(cases) == len(got) == 300
def close(a, b, tol=1e-9):
    return abs(a - b) <= tol * max(1.0, abs(b))
ALPHA = 0.05
def crit_k(pvalue_at):
    # k - 1: the largest statistic whose exact lower-tail probability is <= alpha
    k = 0
    while pvalue_at(k) <= ALPHA + 1e-12:
        k += 1
    return k
bad = []
npaired = nunpaired = ndecided = 0
for c, g in zip(cases, got):
    bar = float(c[1])
    if c[0] == "R":
        n = int(c[2]); r = np.array([float(x) for x in c[3:3 + n]])
        d = np.log(r); a = d - math.log(bar)
        w = stats.wilcoxon(a, alternative="greater", method="exact")
        wl = stats.wilcoxon(a, alternative="less", method="exact")
        walsh = np.sort([(d[i] + d[j]) / 2 for i in range(n) for j in range(i, n)])
        est = math.exp(np.median(walsh))
        # P(T <= t) from SciPy: the "less" p-value of data whose W+ is t: signs
        # chosen so the positive ranks sum to t (a greedy pick of ranks)
        def cdf(t):
            ranks = list(range(n, 0, -1)); x = []; left = t
            for rk in ranks:
                if rk <= left: x.append(rk); left -= rk
                else: x.append(-rk)
            return stats.wilcoxon(np.array(x, float), alternative="less", method="exact").pvalue
        k = crit_k(cdf)
        M = len(walsh)
        lo, hi = (math.exp(walsh[k - 1]), math.exp(walsh[M - k])) if k >= 1 else (None, None)
        npaired += 1
        checks = [("W+", g["stat"], w.statistic), ("p_above", g["p_above"], w.pvalue),
                  ("p_below", g["p_below"], wl.pvalue), ("ratio", g["ratio"], est)]
    else:
        nb, nc = int(c[2]), int(c[3]); v = [float(x) for x in c[4:]]
        b = np.log(v[:nb]); cc = np.log(v[nb:])
        m = stats.mannwhitneyu(b - math.log(bar), cc, alternative="greater", method="exact")
        ml = stats.mannwhitneyu(b - math.log(bar), cc, alternative="less", method="exact")
        diff = np.sort([x - y for x in b for y in cc])
        est = math.exp(np.median(diff))
        # P(U <= u) from SciPy: the "less" p-value of two samples whose U is u
        def cdf(u):
            xs = []; ys = list(range(nc))
            # x values placed so exactly u (x, y) pairs have x > y
            left = u
            for i in range(nb):
                above = min(left, nc); left -= above
                xs.append(above - 0.5)
            return stats.mannwhitneyu(np.array(xs), np.array(ys, float), alternative="less", method="exact").pvalue
        k = crit_k(cdf)
        M = len(diff)
        lo, hi = (math.exp(diff[k - 1]), math.exp(diff[M - k])) if k >= 1 else (None, None)
        nunpaired += 1
        checks = [("U", g["stat"], m.statistic), ("p_above", g["p_above"], m.pvalue),
                  ("p_below", g["p_below"], ml.pvalue), ("ratio", g["ratio"], est)]
    if lo is None:
        if g["interval"]: bad.append((c[:4], "interval where none exists"))
    else:
        checks += [("lo", g["lo"], lo), ("hi", g["hi"], hi)]
        call = "PASS_GATE" if lo > bar else "BELOW_BAR" if hi < bar else "NOISY"
        ndecided += call != "NOISY"
        if g["call"] != call: bad.append((c[:4], "call", g["call"], call))
    for name, mine, ref in checks:
        if mine is None or not close(mine, float(ref)):
            bad.append((c[:4], name, mine, float(ref)))
print("paired %d, unpaired %d, decided %d" % (npaired, nunpaired, ndecided))
assert not bad, bad[:10]
' "$BG_TMP/cases" "$BG_TMP/got"

finish
