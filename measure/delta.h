/* The decision `results compare`, `results show --by point` and the report
 * ask for: is this change (or this ratio) decided, and what is its interval.
 *
 * THIN ADAPTER: everything that decides lives behind the two functions
 * below, so the rule can be swapped for another without touching the
 * callers. Both ask measure/decide.h, the rule `run`, `campaign`, `report`
 * and `brief` decide with (a Hodges-Lehmann interval of the ratio at 90%
 * two-sided, 5% a side, with exact critical values):
 *
 *   results_delta_decide  two independent samples (before A, after B): the
 *       interval of after/before is the inverse of measure_decide_samples'
 *       before/after against a bar of 1. faster when it lies below 1 and the
 *       median change is more than 1%, slower when it lies above 1 and the
 *       change is more than +1%, same when it is decided smaller than that
 *       or undecided within the noise (the larger CV), else ambiguous. The
 *       two-sided Mann-Whitney U p-value (results/stats.h) is reported
 *       beside it.
 *   results_point_decide  one sample of ratios baseline/candidate against the
 *       bar: measure_decide_ratios (signed-rank); PASS_GATE when the interval
 *       lies above the bar, BELOW_BAR when below, else NOISY, leaning to the
 *       side of the estimate, with the repeats likely to decide it.
 *
 * Pure: no allocation visible to the caller, no printing. */
#ifndef BG_RESULTS_DELTA_H
#define BG_RESULTS_DELTA_H

#include <stdbool.h>
#include <stddef.h>

#include "results/stats.h"

struct results_point;

typedef struct results_delta {
	double ratio;  /* median(after) / median(before) */
	double lo, hi; /* the interval of after/before, NAN when the samples are too few */
	double level;  /* its two-sided confidence, NAN when none */
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
	int more;         /* NOISY: further repeats likely to decide it, -1: many or never */
} results_point_decision;

/* "PASS_GATE", "BELOW_BAR", "NOISY". */
const char *results_point_call_name(results_point_call c);

/* Ratios baseline/candidate r[0..n) (each above 0 and finite) against `bar`.
 * Returns 0, or BG_EUSAGE for n == 0 or a value that is not. */
int results_point_decide(const double *r, size_t n, double bar, results_point_decision *out);

/* What results show --by point says of a point of records. */
typedef struct results_point_view {
	const char *verdict; /* static: TIMEOUT_HANG, INVALID, baseline, a call's name, "-" */
	bool leans_above, noisy;
	results_point_decision d; /* when have_d */
	bool have_d;
	double bar; /* the point's bar, else the gate's default */
} results_point_view;

/* A hang anywhere makes the point TIMEOUT_HANG; a record without a sample
 * INVALID; the baseline's own point "baseline"; else the ratios decided
 * against the bar, "-" when it has none. */
void results_point_view_of(const struct results_point *p, results_point_view *v);

#endif
