/* The decision `results compare`, `results show --by point` and the report
 * ask for: is this change (or this ratio) decided, and what is its interval.
 *
 * THIN ADAPTER: everything that decides lives behind the two functions
 * below, so the rule can be swapped for another without touching the
 * callers. Today:
 *
 *   results_delta_decide  two independent samples (before A, after B): the
 *       call of results/stats.h (Mann-Whitney U, alpha 0.05, 1% smallest
 *       change) and the Hodges-Lehmann interval of the ratio after/before:
 *       the median of every log(b/a) and the order statistics the exact
 *       Mann-Whitney distribution (normal past 20 a side) puts at 95%.
 *   results_point_decide  one sample of ratios baseline/candidate against the
 *       bar: the Hodges-Lehmann estimate over the Walsh averages of the log
 *       ratios and its Wilcoxon signed-rank interval at 90% two-sided (5% a
 *       side: a false PASS_GATE at most 5%); PASS_GATE when the interval lies
 *       at or above the bar, BELOW_BAR when it lies below, else NOISY.
 *
 * Pure: no allocation visible to the caller, no printing. */
#ifndef BG_RESULTS_DELTA_H
#define BG_RESULTS_DELTA_H

#include <stdbool.h>
#include <stddef.h>

#include "results/stats.h"

typedef struct results_delta {
	double ratio;  /* median(after) / median(before) */
	double lo, hi; /* the interval of after/before, NAN when the samples are too few */
	double p;      /* two-sided Mann-Whitney U p-value */
	bool p_exact;
	double cv_a, cv_b; /* each side's CV (a fraction) */
	stats_call call;
	bool decided; /* faster or slower */
} results_delta;

/* Before-samples a[0..na) against after-samples b[0..nb), every value
 * finite and above 0. Returns 0, or BG_EUSAGE for an empty sample or a value
 * that is not. */
int results_delta_decide(const double *a, size_t na, const double *b, size_t nb,
			 results_delta *out);

typedef enum results_point_call {
	RESULTS_POINT_PASS,  /* PASS_GATE: the interval lies at or above the bar */
	RESULTS_POINT_BELOW, /* BELOW_BAR: the interval lies below the bar */
	RESULTS_POINT_NOISY  /* the interval straddles the bar (or there is none) */
} results_point_call;

typedef struct results_point_decision {
	double estimate; /* the ratio's Hodges-Lehmann estimate */
	double lo, hi;   /* its interval, NAN when the samples are too few for one */
	results_point_call call;
	bool leans_above; /* NOISY: the estimate is at or above the bar */
} results_point_decision;

/* "PASS_GATE", "BELOW_BAR", "NOISY". */
const char *results_point_call_name(results_point_call c);

/* Ratios baseline/candidate r[0..n) (each above 0 and finite) against `bar`.
 * Returns 0, or BG_EUSAGE for n == 0 or a value that is not. */
int results_point_decide(const double *r, size_t n, double bar, results_point_decision *out);

#endif
