/* The decision adapter (measure/delta.h) over measure/decide.h: the rule
 * `run`, `campaign`, `report` and `brief` decide with. */
#include "measure/delta.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "gate/client/result.h"
#include "measure/decide.h"
#include "results/points.h"

/* The smallest change called faster or slower: a decided change below it is
 * "same" (as the Mann-Whitney rule of results/stats.h has it). */
#define MIN_CHANGE 0.01

static bool all_positive(const double *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isfinite(x[i]) || !(x[i] > 0))
			return false;
	return n > 0;
}

int results_delta_decide(const double *a, size_t na, const double *b, size_t nb, results_delta *out)
{
	memset(out, 0, sizeof(*out));
	out->lo = out->hi = out->level = NAN;
	if (!all_positive(a, na) || !all_positive(b, nb))
		return BG_EUSAGE;
	stats_compare c;
	if (stats_classify(a, na, b, nb, NULL, &c) < 0)
		return BG_EUSAGE;
	out->ratio = c.ratio;
	out->p = c.mwu.p;
	out->p_exact = c.mwu.exact;
	out->cv_a = c.cv_a;
	out->cv_b = c.cv_b;
	/* before as the baseline, after as the candidate, against a bar of 1: the
	 * decision's ratio before/after is the inverse of the change after/before */
	measure_decision d;
	measure_decide_samples(a, na, b, nb, 1.0, &d);
	if (d.interval) {
		out->lo = 1 / d.hi;
		out->hi = 1 / d.lo;
		out->level = d.level;
	}
	double change = out->ratio - 1;
	if (d.call == MEASURE_PASS && change < -MIN_CHANGE)
		out->call = STATS_FASTER;
	else if (d.call == MEASURE_BELOW && change > MIN_CHANGE)
		out->call = STATS_SLOWER;
	else if (d.call != MEASURE_NOISY || fabs(change) <= fmax(c.noise, MIN_CHANGE))
		out->call = STATS_SAME;
	else
		out->call = STATS_AMBIGUOUS;
	out->decided = out->call == STATS_FASTER || out->call == STATS_SLOWER;
	return 0;
}

const char *results_point_call_name(results_point_call c)
{
	return c == RESULTS_POINT_PASS    ? "PASS_GATE"
	       : c == RESULTS_POINT_BELOW ? "BELOW_BAR"
					  : "NOISY";
}

int results_point_decide(const double *r, size_t n, double bar, results_point_decision *out)
{
	memset(out, 0, sizeof(*out));
	out->estimate = out->lo = out->hi = NAN;
	out->call = RESULTS_POINT_NOISY;
	if (!all_positive(r, n) || !(bar > 0))
		return BG_EUSAGE;
	measure_decision d;
	measure_decide_ratios(r, n, bar, &d);
	out->estimate = d.ratio;
	if (d.interval) {
		out->lo = d.lo;
		out->hi = d.hi;
	}
	out->call = d.call == MEASURE_PASS    ? RESULTS_POINT_PASS
		    : d.call == MEASURE_BELOW ? RESULTS_POINT_BELOW
					      : RESULTS_POINT_NOISY;
	out->leans_above = d.lean >= 0 && out->estimate >= bar;
	out->more = d.call == MEASURE_NOISY ? d.more : 0;
	return 0;
}

void results_point_view_of(const results_point *p, results_point_view *v)
{
	memset(v, 0, sizeof(*v));
	v->bar = isfinite(p->bar) ? p->bar : GATE_DEFAULT_BAR;
	v->d.estimate = v->d.lo = v->d.hi = NAN;
	const char *cand = p->fields[RESULTS_F_CANDIDATE].value;
	if (p->hang)
		v->verdict = "TIMEOUT_HANG";
	else if (!p->n || p->n_bad)
		v->verdict = "INVALID";
	else if (strcmp(cand, "baseline") == 0)
		v->verdict = "baseline";
	else if (p->n_ratio && results_point_decide(p->ratio, p->n_ratio, v->bar, &v->d) == 0) {
		v->have_d = true;
		v->verdict = results_point_call_name(v->d.call);
		v->noisy = v->d.call == RESULTS_POINT_NOISY;
		v->leans_above = v->d.leans_above;
	} else {
		v->verdict = "-";
	}
}
