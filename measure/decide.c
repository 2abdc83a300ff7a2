/* The interval of the ratio and the call against the bar (measure/decide.h). */
#include "measure/decide.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/xmalloc.h"

/* The largest n (pairs) and m x n (two samples) with exact distributions. */
#define SIGNRANK_EXACT_MAX    100
#define MANNWHITNEY_EXACT_MAX 2500
/* z of one-sided 5%, and of 5% plus 80% power for "likely to decide". */
#define Z_ALPHA  1.6448536269514722
#define Z_LIKELY (1.6448536269514722 + 0.8416212335729143)
/* The variance of the Hodges-Lehmann estimate over the mean's (normal noise). */
#define HL_VAR_FACTOR 1.0472
/* A probability equal to alpha up to rounding counts as alpha. */
#define P_SLACK 1e-12

const char *measure_call_name(measure_call c)
{
	switch (c) {
	case MEASURE_PASS: return "PASS_GATE";
	case MEASURE_BELOW: return "BELOW_BAR";
	case MEASURE_NOISY: return "NOISY";
	}
	return "?";
}

static int cmp_double(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;
	return (a > b) - (a < b);
}

static double median_sorted(const double *s, size_t n)
{
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static double normal_cdf(double z)
{
	return 0.5 * erfc(-z / sqrt(2.0));
}

/* Counts of the signed-rank sum 0..n(n+1)/2 over the 2^n sign choices (owned). */
static double *signrank_counts(size_t n, size_t *top)
{
	*top = n * (n + 1) / 2;
	double *c = xcalloc(*top + 1, sizeof(*c));
	c[0] = 1;
	for (size_t i = 1; i <= n; i++)
		for (size_t s = i * (i + 1) / 2; s >= i; s--)
			c[s] += c[s - i];
	return c;
}

double measure_signrank_cdf(size_t n, double t)
{
	if (n > SIGNRANK_EXACT_MAX || isnan(t))
		return NAN;
	if (t < 0)
		return 0;
	size_t top;
	double *c = signrank_counts(n, &top);
	double sum = 0, all = ldexp(1.0, (int)n);
	for (size_t s = 0; s <= top && (double)s <= t; s++)
		sum += c[s];
	free(c);
	return sum / all;
}

/* Counts of U = 0..m*n over the C(m+n, m) arrangements of m and n values (owned):
 * f(i,j,u) = f(i-1,j,u-j) + f(i,j-1,u), the largest value from either sample. */
static double *mannwhitney_counts(size_t m, size_t n)
{
	if (m > n) {
		size_t t = m;
		m = n;
		n = t;
	}
	/* rows[j]: f(i, j, .) of length i*j + 1, for the current i */
	double **prev = xcalloc(n + 1, sizeof(*prev)), **cur = xcalloc(n + 1, sizeof(*cur));
	for (size_t j = 0; j <= n; j++) {
		prev[j] = xcalloc(1, sizeof(double));
		prev[j][0] = 1; /* i = 0: one arrangement, U = 0 */
	}
	for (size_t i = 1; i <= m; i++) {
		for (size_t j = 0; j <= n; j++) {
			size_t len = i * j + 1;
			cur[j] = xcalloc(len, sizeof(double));
			for (size_t u = 0; u < len; u++) {
				double a = u >= j && u - j <= (i - 1) * j ? prev[j][u - j] : 0;
				double b = j && u <= i * (j - 1) ? cur[j - 1][u] : 0;
				cur[j][u] = j ? a + b : (u == 0);
			}
		}
		for (size_t j = 0; j <= n; j++) {
			free(prev[j]);
			prev[j] = cur[j];
			cur[j] = NULL;
		}
	}
	double *out = prev[n];
	for (size_t j = 0; j < n; j++)
		free(prev[j]);
	free(prev);
	free(cur);
	return out;
}

double measure_mannwhitney_cdf(size_t m, size_t n, double u)
{
	if (!m || !n || m * n > MANNWHITNEY_EXACT_MAX || isnan(u))
		return NAN;
	if (u < 0)
		return 0;
	double *c = mannwhitney_counts(m, n);
	double sum = 0, all = 0;
	for (size_t k = 0; k <= m * n; k++) {
		all += c[k];
		if ((double)k <= u)
			sum += c[k];
	}
	free(c);
	return sum / all;
}

/* The null distribution of one statistic: its cdf, exact or normal. */
typedef struct null_dist {
	bool paired;
	size_t m, n; /* pairs: n */
	double mean, sd;
	bool exact;
	double *cdf; /* exact: P(S <= s) for s = 0..top (owned) */
	size_t top;
} null_dist;

static void dist_init(null_dist *d, bool paired, size_t m, size_t n)
{
	memset(d, 0, sizeof(*d));
	d->paired = paired;
	d->m = m;
	d->n = n;
	double nn = (double)n, mm = (double)m;
	if (paired) {
		d->mean = nn * (nn + 1) / 4;
		d->sd = sqrt(nn * (nn + 1) * (2 * nn + 1) / 24);
		d->exact = n <= SIGNRANK_EXACT_MAX;
	} else {
		d->mean = mm * nn / 2;
		d->sd = sqrt(mm * nn * (mm + nn + 1) / 12);
		d->exact = m * n <= MANNWHITNEY_EXACT_MAX;
	}
	if (!d->exact)
		return;
	double *c, all = 0;
	if (paired) {
		c = signrank_counts(n, &d->top);
	} else {
		c = mannwhitney_counts(m, n);
		d->top = m * n;
	}
	for (size_t s = 0; s <= d->top; s++)
		all += c[s];
	double run = 0;
	for (size_t s = 0; s <= d->top; s++) {
		run += c[s];
		c[s] = run / all;
	}
	d->cdf = c;
}

static void dist_release(null_dist *d)
{
	free(d->cdf);
	d->cdf = NULL;
}

/* P(S <= s); a fractional s (tied ranks) counts down to the whole number. */
static double dist_cdf(const null_dist *d, double s)
{
	if (s < 0)
		return 0;
	if (d->exact) {
		double f = floor(s + 1e-9);
		return f >= (double)d->top ? 1 : d->cdf[(size_t)f];
	}
	if (d->sd <= 0)
		return 1;
	return fmin(1, normal_cdf((s + 0.5 - d->mean) / d->sd));
}

/* k: the interval runs from the k-th smallest to the k-th largest; 0: none. */
static size_t dist_k(const null_dist *d, double alpha)
{
	if (d->exact) {
		size_t k = 0;
		while (k <= d->top && d->cdf[k] <= alpha + P_SLACK)
			k++;
		return k;
	}
	double t = floor(d->mean - Z_ALPHA * d->sd - 0.5);
	return t < 0 ? 0 : (size_t)t + 1;
}

/* The most samples a side (or ratios) the interval is computed over: the
 * Walsh averages and pairwise differences grow as n^2. Beyond it, evenly
 * spaced order statistics of the sorted sample stand for it (its quantiles),
 * so a results file of many thousand runs takes milliseconds, not gigabytes. */
#define SAMPLES_MAX 1000

/* Thins sorted-or-not x[0..n) to SAMPLES_MAX quantiles in place; returns the new n. */
static size_t thin(double *x, size_t n)
{
	if (n <= SAMPLES_MAX)
		return n;
	qsort(x, n, sizeof(*x), cmp_double);
	for (size_t i = 0; i < SAMPLES_MAX; i++)
		x[i] = x[(size_t)(((double)i + 0.5) * (double)n / SAMPLES_MAX)];
	return SAMPLES_MAX;
}

/* Keeps the finite values above 0, as logs; counts the others. */
static size_t logs_of(const double *x, size_t n, double *out, size_t *dropped)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (isfinite(x[i]) && x[i] > 0)
			out[k++] = log(x[i]);
		else
			(*dropped)++;
	}
	return k;
}

static void decision_clear(measure_decision *out, bool paired)
{
	memset(out, 0, sizeof(*out));
	out->paired = paired;
	out->ratio = out->lo = out->hi = out->level = NAN;
	out->stat = out->p_above = out->p_below = NAN;
	out->call = MEASURE_NOISY;
	out->more = -1;
	out->need = paired ? 5 : 3;
}

static double sample_var(const double *x, size_t n)
{
	if (n < 2)
		return NAN;
	double mean = 0, ss = 0;
	for (size_t i = 0; i < n; i++)
		mean += x[i];
	mean /= (double)n;
	for (size_t i = 0; i < n; i++)
		ss += (x[i] - mean) * (x[i] - mean);
	return ss / (double)(n - 1);
}

/* The call from the interval, the lean, and the repeats likely to decide:
 * n' with (z_alpha + z_power) x SE(n') = |estimate - log bar|. var: the
 * variance of one d (pairs) or the pooled one of a log sample; have: n now
 * (pairs, or the smaller side). */
static void conclude(measure_decision *out, double est, double lo, double hi, double lbar,
		     double var, size_t have)
{
	if (out->interval && lo > lbar)
		out->call = MEASURE_PASS;
	else if (out->interval && hi < lbar)
		out->call = MEASURE_BELOW;
	else
		out->call = MEASURE_NOISY;
	if (out->call != MEASURE_NOISY) {
		out->more = 0;
		return;
	}
	double delta = fabs(est - lbar);
	out->lean = est > lbar ? 1 : est < lbar ? -1 : 0;
	out->more = -1;
	if (!isfinite(est) || delta <= 0)
		return;
	double want = (double)out->need;
	out->at_least = isnan(var);
	if (var > 0 && !out->at_least) {
		double f = Z_LIKELY * Z_LIKELY * var * HL_VAR_FACTOR / (delta * delta);
		want = fmax(want, ceil(out->paired ? f : 2 * f));
	}
	if (want <= (double)have)
		want = (double)have + 1;
	double more = want - (double)have;
	out->more = more > MEASURE_MORE_MAX ? -1 : (int)more;
}

void measure_decide_ratios(const double *ratio, size_t n, double bar, measure_decision *out)
{
	decision_clear(out, true);
	double *d = xmalloc((n ? n : 1) * sizeof(*d));
	n = logs_of(ratio, n, d, &out->dropped);
	out->n_a = out->n_b = n;
	n = thin(d, n);
	double lbar = log(bar);
	if (!n || !(bar > 0) || !isfinite(bar)) {
		free(d);
		return;
	}
	/* the Walsh averages, sorted */
	size_t nw = n * (n + 1) / 2, w = 0;
	double *walsh = xmalloc(nw * sizeof(*walsh));
	for (size_t i = 0; i < n; i++)
		for (size_t j = i; j < n; j++)
			walsh[w++] = (d[i] + d[j]) / 2;
	qsort(walsh, nw, sizeof(*walsh), cmp_double);
	double est = median_sorted(walsh, nw);
	out->ratio = exp(est);

	null_dist nd;
	dist_init(&nd, true, 0, n);
	out->exact = nd.exact;
	size_t k = dist_k(&nd, MEASURE_ALPHA);
	double lo = NAN, hi = NAN;
	if (k >= 1 && k <= nw) {
		out->interval = true;
		lo = walsh[k - 1];
		hi = walsh[nw - k];
		out->lo = exp(lo);
		out->hi = exp(hi);
		out->level = 1 - 2 * dist_cdf(&nd, (double)(k - 1));
	}
	dist_release(&nd);

	/* W+ and W- of d - log(bar), zeros left out (Wilcoxon's treatment) */
	double *a = xmalloc(n * sizeof(*a));
	size_t nz = 0;
	for (size_t i = 0; i < n; i++)
		if (d[i] - lbar != 0)
			a[nz++] = d[i] - lbar;
	double wplus = 0, wminus = 0;
	for (size_t i = 0; i < nz; i++) {
		/* the average rank of |a_i| among the |a| */
		double below = 0, same = 0;
		for (size_t j = 0; j < nz; j++) {
			if (fabs(a[j]) < fabs(a[i]))
				below++;
			else if (fabs(a[j]) == fabs(a[i]))
				same++;
		}
		double rank = below + (same + 1) / 2;
		if (a[i] > 0)
			wplus += rank;
		else
			wminus += rank;
	}
	out->stat = wplus;
	if (nz) {
		null_dist pd;
		dist_init(&pd, true, 0, nz);
		out->p_above = dist_cdf(&pd, wminus);
		out->p_below = dist_cdf(&pd, wplus);
		dist_release(&pd);
	} else {
		out->p_above = out->p_below = 1;
	}
	conclude(out, est, lo, hi, lbar, sample_var(d, n), n);
	free(a);
	free(walsh);
	free(d);
}

/* Pairs below this many are judged as two samples: the signed-rank test has
 * no interval under 5 pairs, the rank-sum one has from 3 + 3. */
#define PAIRS_SIGNRANK_MIN 5

void measure_decide_pairs(const double *base, const double *cand, size_t n, double bar,
			  measure_decision *out)
{
	double *r = xmalloc((n ? n : 1) * sizeof(*r));
	double *b = xmalloc((n ? n : 1) * sizeof(*b)), *c = xmalloc((n ? n : 1) * sizeof(*c));
	size_t k = 0, dropped = 0;
	for (size_t i = 0; i < n; i++) {
		if (isfinite(base[i]) && base[i] > 0 && isfinite(cand[i]) && cand[i] > 0) {
			b[k] = base[i];
			c[k] = cand[i];
			r[k++] = base[i] / cand[i];
		} else {
			dropped++;
		}
	}
	if (k < PAIRS_SIGNRANK_MIN) {
		measure_decide_samples(b, k, c, k, bar, out);
		out->pairs_as_samples = true;
	} else {
		measure_decide_ratios(r, k, bar, out);
	}
	out->dropped += dropped;
	free(r);
	free(b);
	free(c);
}

void measure_decide_samples(const double *base, size_t nb, const double *cand, size_t nc,
			    double bar, measure_decision *out)
{
	decision_clear(out, false);
	double *x = xmalloc((nb ? nb : 1) * sizeof(*x));
	double *y = xmalloc((nc ? nc : 1) * sizeof(*y));
	nb = logs_of(base, nb, x, &out->dropped);
	nc = logs_of(cand, nc, y, &out->dropped);
	out->n_a = nb;
	out->n_b = nc;
	nb = thin(x, nb);
	nc = thin(y, nc);
	double lbar = log(bar);
	if (!nb || !nc || !(bar > 0) || !isfinite(bar)) {
		free(x);
		free(y);
		return;
	}
	size_t nd_ = nb * nc, w = 0;
	double *diff = xmalloc(nd_ * sizeof(*diff));
	double u = 0;
	for (size_t i = 0; i < nb; i++)
		for (size_t j = 0; j < nc; j++) {
			double dij = x[i] - y[j];
			diff[w++] = dij;
			u += dij > lbar ? 1 : dij == lbar ? 0.5 : 0;
		}
	qsort(diff, nd_, sizeof(*diff), cmp_double);
	double est = median_sorted(diff, nd_);
	out->ratio = exp(est);
	out->stat = u;

	null_dist nd;
	dist_init(&nd, false, nb, nc);
	out->exact = nd.exact;
	size_t k = dist_k(&nd, MEASURE_ALPHA);
	double lo = NAN, hi = NAN;
	if (k >= 1 && k <= nd_) {
		out->interval = true;
		lo = diff[k - 1];
		hi = diff[nd_ - k];
		out->lo = exp(lo);
		out->hi = exp(hi);
		out->level = 1 - 2 * dist_cdf(&nd, (double)(k - 1));
	}
	/* U counts the pairs above the bar: few of them speak against "above" */
	out->p_above = dist_cdf(&nd, (double)nd_ - u);
	out->p_below = dist_cdf(&nd, u);
	dist_release(&nd);

	double vx = sample_var(x, nb), vy = sample_var(y, nc), var = NAN;
	if (nb >= 2 && nc >= 2)
		var = ((double)(nb - 1) * vx + (double)(nc - 1) * vy) / (double)(nb + nc - 2);
	else if (nb >= 2)
		var = vx;
	else if (nc >= 2)
		var = vy;
	conclude(out, est, lo, hi, lbar, var, nb < nc ? nb : nc);
	free(diff);
	free(x);
	free(y);
}

void measure_decision_text(const measure_decision *d, double bar, strbuf *out)
{
	char what[96];
	if (d->pairs_as_samples)
		snprintf(what, sizeof(what), "rank-sum, %zu pairs as two samples", d->n_a);
	else if (d->paired)
		snprintf(what, sizeof(what), "signed-rank, %zu pair%s", d->n_a,
			 d->n_a == 1 ? "" : "s");
	else
		snprintf(what, sizeof(what), "rank-sum, %zu baseline and %zu candidate runs",
			 d->n_a, d->n_b);
	if (!isfinite(d->ratio)) {
		strbuf_addf(out, "no ratio (%s)", what);
		return;
	}
	strbuf_addf(out, "estimated ratio %.3f", d->ratio);
	if (d->interval)
		strbuf_addf(out, ", %.1f%% interval %.3f-%.3f (%s)", 100 * d->level, d->lo, d->hi,
			    what);
	else
		strbuf_addf(out, " (%s): no interval at %.0f%% below %zu %s", what,
			    100 * (1 - 2 * MEASURE_ALPHA), d->need,
			    d->paired ? "pairs" : "runs a side");
	if (d->call != MEASURE_NOISY)
		return;
	if (d->interval)
		strbuf_addf(out, " straddles the bar %.2f", bar);
	strbuf_addf(out, "; leans %s",
		    d->lean > 0   ? "above the bar"
		    : d->lean < 0 ? "below the bar"
				  : "nowhere (at the bar)");
	if (d->more > 0)
		strbuf_addf(out, "; %s %d more %s would likely decide it",
			    d->at_least ? "at least" : "about", d->more,
			    d->paired ? (d->more == 1 ? "pair" : "pairs")
				      : (d->more == 1 ? "run a side" : "runs a side"));
	else if (d->lean)
		strbuf_addf(out, "; more repeats are unlikely to decide it soon (over %d)",
			    MEASURE_MORE_MAX);
}

static void json_num(cJSON *o, const char *key, double v)
{
	if (isfinite(v))
		cJSON_AddNumberToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

cJSON *measure_decision_json(const measure_decision *d)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "call", measure_call_name(d->call));
	cJSON_AddStringToObject(o, "method", d->paired ? "signed-rank" : "rank-sum");
	cJSON_AddNumberToObject(o, "n_baseline", (double)d->n_a);
	cJSON_AddNumberToObject(o, "n_candidate", (double)d->n_b);
	if (d->dropped)
		cJSON_AddNumberToObject(o, "dropped", (double)d->dropped);
	json_num(o, "ratio", d->ratio);
	json_num(o, "lo", d->lo);
	json_num(o, "hi", d->hi);
	json_num(o, "level", d->level);
	json_num(o, "p_above", d->p_above);
	json_num(o, "p_below", d->p_below);
	if (d->call == MEASURE_NOISY) {
		cJSON_AddStringToObject(o, "lean",
					d->lean > 0   ? "above"
					: d->lean < 0 ? "below"
						      : "none");
		if (d->more > 0)
			cJSON_AddNumberToObject(o, "more", d->more);
		else
			cJSON_AddNullToObject(o, "more");
		cJSON_AddBoolToObject(o, "more_at_least", d->at_least);
	}
	return o;
}
