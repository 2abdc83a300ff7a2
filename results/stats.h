/* Statistics over repeated measurements of a latency (lower is better):
 * summaries, the two-sided Mann-Whitney U test, and the rule `results
 * compare` uses to call a point same, faster, slower or ambiguous. Pure
 * functions: no allocation visible to the caller, no printing.
 *
 * The rule (the approach of google-benchmark's tools/compare.py, which runs
 * a Mann-Whitney U test over the repetitions, and of Go's benchstat, which
 * does the same and reports "~" when the difference is not significant):
 *
 *   ratio = median(B) / median(A)          A: before, B: after
 *   p     = two-sided Mann-Whitney U p-value of A against B
 *   noise = max(CV(A), CV(B))              CV: sample stddev / mean
 *
 *   n(A) < 3 or n(B) < 3: AMBIGUOUS (too few samples for the test), unless
 *       both sides have at least 2 samples and |ratio - 1| exceeds both
 *       10 x noise and min_change: then SLOWER or FASTER by the sign;
 *   p < alpha and ratio > 1 + min_change: SLOWER;
 *   p < alpha and ratio < 1 - min_change: FASTER;
 *   p >= alpha and |ratio - 1| <= noise:  SAME (the change is within the noise);
 *   anything else: AMBIGUOUS.
 *
 * Defaults: alpha 0.05, min_change 0.01. Note that with 3 samples a side the
 * smallest two-sided p is 0.1: a significant call needs 4 + 4 (or 3 + 5). */
#ifndef BG_RESULTS_STATS_H
#define BG_RESULTS_STATS_H

#include <stdbool.h>
#include <stddef.h>

/* Each takes n >= 1 values (NaN for n == 0); the input is not modified. */
double stats_median(const double *x, size_t n);
double stats_min(const double *x, size_t n);
double stats_max(const double *x, size_t n);
double stats_mean(const double *x, size_t n);
/* The coefficient of variation: the sample standard deviation (n - 1) over
 * the mean; 0 for n < 2 and NaN when the mean is 0. */
double stats_cv(const double *x, size_t n);

typedef struct stats_mwu {
	double u_a; /* U of A: the pairs (a, b) with a > b, ties counting 1/2 */
	double u_b; /* U of B: na * nb - u_a */
	double p;   /* two-sided p-value, in [0, 1] */
	bool exact; /* p from the exact distribution (else the normal approximation) */
	bool ties;  /* some value occurs more than once across both samples */
} stats_mwu;

/* The two-sided Mann-Whitney U test of A against B (na, nb >= 1). Ranks of
 * tied values are averaged. The p-value is exact (the distribution of U
 * counted over every arrangement) when there are no ties and na, nb <= 10;
 * otherwise the normal approximation with the tie correction of the
 * variance and a continuity correction of 0.5. Returns 0, or BG_EUSAGE for
 * an empty sample or a non-finite value. */
int stats_mann_whitney(const double *a, size_t na, const double *b, size_t nb, stats_mwu *out);

typedef enum stats_call { STATS_SAME, STATS_FASTER, STATS_SLOWER, STATS_AMBIGUOUS } stats_call;

/* "same", "faster", "slower", "ambiguous". */
const char *stats_call_name(stats_call c);

typedef struct stats_rule {
	double alpha;      /* significance level (default 0.05) */
	double min_change; /* smallest relative change called faster or slower (0.01) */
} stats_rule;

#define STATS_RULE_DEFAULT                                                                         \
	{                                                                                          \
		0.05, 0.01                                                                         \
	}

typedef struct stats_compare {
	double median_a, median_b;
	double ratio; /* median_b / median_a */
	double cv_a, cv_b, noise;
	stats_mwu mwu;
	stats_call call;
} stats_compare;

/* Compares before-samples A with after-samples B under `rule` (NULL: the
 * defaults), filling *out. Returns 0, or BG_EUSAGE for an empty sample, a
 * non-finite value or a median of A that is not above 0. */
int stats_classify(const double *a, size_t na, const double *b, size_t nb, const stats_rule *rule,
		   stats_compare *out);

#endif
