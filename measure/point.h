/* One point of repeated gate invocations (run --repeat N, a sweep's count):
 * the numbers each invocation gives, and the point's judgement on them. The
 * rule `run` and `validate` share; campaigns judge their cells with the same
 * decision (measure/decide.h) in campaign/points.c. Pure: no printing.
 *
 * The judgement (the verdict on the point):
 *   an invocation INVALID, TIMEOUT_HANG or failed   no verdict on the point
 *   every run MEASURED (the candidate alone)        MEASURED
 *   sumCTA median above the baseline's by the tolerance
 *                                                   BELOW_BAR (sloughed)
 *   no ratio at all (the gate states none)          PASS_GATE when every run
 *                                                   passed, else BELOW_BAR
 *   one ratio (one run or one pair)                 the ratio against the bar
 *                                                   (single: no interval)
 *   otherwise                                       the decision on the ratios:
 *     apart (C B C B ...): the pairs (B_i, C_i); measured by the gate in one
 *     process: each run's baseline and candidate slowCTA as a pair, or, when
 *     a run states only its ratio, each run's ratio
 *   strict_noise and a slowCTA CV (the candidate's or, apart, the baseline's)
 *   over max_cv                                     NOISY, whatever the rest
 * NOISY exits 1; without strict_noise a CV over max_cv is a warning. */
#ifndef BG_MEASURE_POINT_H
#define BG_MEASURE_POINT_H

#include <stdbool.h>
#include <stddef.h>

#include "gate/client/result.h"
#include "measure/decide.h"

#define MEASURE_REPEAT_MAX 100

typedef struct measure_point {
	/* The candidate's numbers of the invocations judged PASS_GATE or BELOW_BAR. */
	double slow[MEASURE_REPEAT_MAX], wall[MEASURE_REPEAT_MAX], sum[MEASURE_REPEAT_MAX];
	double ratio[MEASURE_REPEAT_MAX];
	double base_sum[MEASURE_REPEAT_MAX];  /* the baseline's sumCTA, when measured */
	double base_slow[MEASURE_REPEAT_MAX]; /* the baseline's slowCTA, when measured */
	size_t n_res, n_ratio, n_base, n_base_slow;
	size_t n_pass;     /* of them PASS_GATE */
	size_t n_measured; /* of them MEASURED (the candidate alone) */
	/* Apart: the baseline invocations' numbers, judged ones. */
	bool apart;
	double b_slow[MEASURE_REPEAT_MAX], b_sum[MEASURE_REPEAT_MAX];
	size_t n_b;
	double bar; /* the bar the last result was judged against, 0 if none */
	/* Settings. */
	double max_cv; /* percent */
	bool strict_noise;
	/* The judgement (measure_point_judge). */
	gate_verdict verdict; /* PASS_GATE, BELOW_BAR or MEASURED; NONE: no verdict */
	bool noisy;           /* NOISY: undecided, or (strict) a CV over max_cv */
	bool cv_warn;         /* the candidate's slowCTA CV exceeds max_cv */
	bool cv_warn_b;       /* apart: the baseline's slowCTA CV exceeds max_cv */
	bool sloughed;        /* the median sumCTA rose beyond the tolerance over the baseline's */
	bool single;          /* judged on one ratio: no interval */
	bool decided;         /* dec holds the decision on the ratios */
	measure_decision dec;
	double bar_used; /* the bar judged against */
} measure_point;

/* Keeps what one judged invocation says: `v` its verdict, `last` its last
 * result line (NULL: none), `baseline` an apart baseline run. Returns false
 * when the invocation gives no sample (not PASS_GATE or BELOW_BAR, or no
 * candidate side): the caller counts it as failed. */
bool measure_point_add(measure_point *p, gate_verdict v, const gate_result *last, bool baseline);

/* The apart pairs run so far: min(candidate runs, baseline runs). */
size_t measure_point_pairs(const measure_point *p);

/* Judges the point; `bar` the user's (0: the result's, else GATE_DEFAULT_BAR). */
void measure_point_judge(measure_point *p, double bar);

/* What the invocations of one point (run, validate) said beside their
 * numbers, and the point's exit code once judged. */
typedef struct measure_tally {
	int runs;                 /* invocations finished, warm-ups left out */
	int bad;                  /* the merged exit of the failed ones, 0 when none */
	gate_verdict bad_verdict; /* the first INVALID or TIMEOUT_HANG among them */
	bool record_failed;       /* a record of the point was not kept */
	bool judged;              /* the point's measure_point holds its judgement */
	char device[16];          /* the last result's "device", "" when none */
	char device_name[96];     /* the last result's "device_name", "" when none */
	int cpus, workers;        /* its "cpus" and "num_workers", -1 when absent */
	int code;                 /* the point's exit code (measure_tally_judge) */
} measure_tally;

/* Keeps what one judged invocation of the point says: `code` its exit code,
 * `v` its verdict, `last` its last result line (NULL: none), `baseline` an
 * apart baseline run. The numbers go to m (measure_point_add); one that gives
 * none counts as failed. */
void measure_tally_note(measure_tally *t, measure_point *m, int code, gate_verdict v,
			const gate_result *last, bool baseline);

/* Judges the point against `bar` (as measure_point_judge), unless an
 * invocation failed or none gave a sample (then its failure is the verdict),
 * and sets t->code: a failure's exit, NOISY's 1, else the verdict's; a record
 * not kept makes it at least 1. */
void measure_tally_judge(measure_tally *t, measure_point *m, double bar);

/* The slowCTA CV of x[0..n) in percent. */
double measure_cv_pct(const double *x, size_t n);

#endif
