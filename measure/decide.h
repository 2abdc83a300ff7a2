/* The decision on a point's speed-up: a confidence interval for the ratio
 * baseline / candidate of slowCTA (higher is better for the candidate),
 * judged against the bar. Pure functions: no printing; what they return is
 * owned by the caller's struct.
 *
 * The interval is the Hodges-Lehmann interval on the log scale, with exact
 * critical values (a distribution-free method: it assumes no shape of the
 * noise, only symmetry for pairs and a common shape for two samples):
 *
 *   pairs (B_i, C_i), or the gate's own per-run ratios r_i = B_i / C_i:
 *     d_i = log r_i; the estimate is the median of the Walsh averages
 *     (d_i + d_j) / 2, i <= j; the interval runs from the k-th smallest to the
 *     k-th largest of them, k - 1 the largest t with P(T <= t) <= alpha for
 *     the Wilcoxon signed-rank statistic T under the null (exact up to 100
 *     pairs, the normal approximation beyond);
 *   two unpaired samples (a campaign's baseline cell and a candidate cell):
 *     D_ij = log B_i - log C_j; the estimate is their median, the interval the
 *     k-th smallest to the k-th largest, k - 1 the largest u with
 *     P(U <= u) <= alpha for the Mann-Whitney U (exact up to m x n = 2500).
 *
 * alpha is one-sided (MEASURE_ALPHA, 0.05): the interval is a two-sided
 * (1 - 2 alpha) interval, so a candidate whose true ratio is at or under the
 * bar is called PASS_GATE at most 5% of the time, and one at or over it
 * BELOW_BAR at most 5% of the time. The call:
 *
 *   lo > bar            MEASURE_PASS  (the whole interval above the bar)
 *   hi < bar            MEASURE_BELOW (the whole interval below it)
 *   otherwise, or no interval exists at this n
 *                       MEASURE_NOISY, leaning to the side of the estimate,
 *                       with the repeats likely to decide it
 *
 * The smallest n with an interval: 5 pairs (P(T = 0) = 1/32), 3 + 3 unpaired
 * samples (P(U = 0) = 1/20); fewer can never decide, which is said, not
 * hidden. Samples that are not finite and above 0 are left out and counted;
 * over 1000 a side, 1000 evenly spaced quantiles of the side stand for it. */
#ifndef BG_MEASURE_DECIDE_H
#define BG_MEASURE_DECIDE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/strbuf.h"

struct cJSON;

#define MEASURE_ALPHA 0.05
/* More repeats than this is said as "more than MEASURE_MORE_MAX". */
#define MEASURE_MORE_MAX 100

typedef enum measure_call { MEASURE_PASS, MEASURE_BELOW, MEASURE_NOISY } measure_call;

typedef struct measure_decision {
	measure_call call;
	bool paired;           /* pairs (signed-rank) or two samples (Mann-Whitney) */
	bool pairs_as_samples; /* under 5 pairs, judged as their two samples */
	size_t n_a, n_b;       /* samples used: pairs (n_a == n_b), or baseline and candidate */
	size_t dropped;        /* samples left out: not finite or not above 0 */
	bool interval;         /* an interval exists at this n */
	double ratio;          /* the Hodges-Lehmann estimate of baseline / candidate; NAN: none */
	double lo, hi;         /* the interval of the ratio; NAN when !interval */
	double level;          /* its two-sided confidence (>= 1 - 2 alpha), NAN when !interval */
	double stat;    /* W+ of d_i - log(bar), or U of the baseline against bar x candidate */
	double p_above; /* one-sided p-value against "ratio <= bar" */
	double p_below; /* one-sided p-value against "ratio >= bar" */
	bool exact;     /* the critical values and p-values are exact */
	int lean;       /* NOISY: +1 the estimate is above the bar, -1 below, 0 at it */
	size_t need;    /* the smallest n (pairs, or per side) that can have an interval */
	int more;       /* NOISY: further repeats likely to decide it (pairs, or per side);
			   -1: more than MEASURE_MORE_MAX, or never (the estimate is at the bar) */
	bool at_least;  /* `more` is only the least (no spread yet to go by) */
} measure_decision;

/* Pairs: base[i] and cand[i] measured together (n pairs). From 5 pairs on,
 * the signed-rank interval of their ratios; fewer pairs are judged as their
 * two samples (rank-sum: 3 + 3 can decide, 3 pairs cannot); 1 or 2 pairs have
 * no interval. */
void measure_decide_pairs(const double *base, const double *cand, size_t n, double bar,
			  measure_decision *out);

/* The gate's own per-run ratios baseline / candidate. */
void measure_decide_ratios(const double *ratio, size_t n, double bar, measure_decision *out);

/* Two unpaired samples: nb baseline and nc candidate slowCTAs. */
void measure_decide_samples(const double *base, size_t nb, const double *cand, size_t nc,
			    double bar, measure_decision *out);

/* "PASS_GATE", "BELOW_BAR", "NOISY". */
const char *measure_call_name(measure_call c);

/* Appends the decision as one phrase without newline, e.g.
 * "ratio 5.21, 90% interval 4.80-5.70 (signed-rank, 5 pairs)" or
 * "ratio 1.18, 90% interval 1.02-1.37 straddles the bar 1.20: leans below;
 * about 6 more repeats would likely decide it". */
void measure_decision_text(const measure_decision *d, double bar, strbuf *out);

/* The decision as one JSON object (owned by the caller): call, method
 * ("signed-rank" or "rank-sum"), n, ratio, lo, hi, level, p_above, p_below,
 * lean and more (null where not known). */
struct cJSON *measure_decision_json(const measure_decision *d);

/* Exact null distributions, exposed for tests: P(T <= t) of the Wilcoxon
 * signed-rank statistic for n pairs (n <= 100), and P(U <= u) of the
 * Mann-Whitney U for sizes m and n (m x n <= 2500); NAN beyond. */
double measure_signrank_cdf(size_t n, double t);
double measure_mannwhitney_cdf(size_t m, size_t n, double u);

#endif
