/* Summaries, the Mann-Whitney U test and the compare rule (results/stats.h). */
#include "results/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/xmalloc.h"

static int cmp_double(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;
	return (a > b) - (a < b);
}

double stats_median(const double *x, size_t n)
{
	if (n == 0)
		return NAN;
	double *s = xmalloc(n * sizeof(*s));
	memcpy(s, x, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	double m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return m;
}

/* The least of x[0..n) (sign 1) or the greatest (sign -1); NAN for none. */
static double extreme(const double *x, size_t n, double sign)
{
	if (n == 0)
		return NAN;
	double m = x[0];
	for (size_t i = 1; i < n; i++)
		if (sign * x[i] < sign * m)
			m = x[i];
	return m;
}

double stats_min(const double *x, size_t n)
{
	return extreme(x, n, 1);
}

double stats_max(const double *x, size_t n)
{
	return extreme(x, n, -1);
}

double stats_mean(const double *x, size_t n)
{
	if (n == 0)
		return NAN;
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += x[i];
	return s / (double)n;
}

double stats_cv(const double *x, size_t n)
{
	if (n == 0)
		return NAN;
	if (n < 2)
		return 0;
	double m = stats_mean(x, n), ss = 0;
	if (m == 0)
		return NAN;
	for (size_t i = 0; i < n; i++)
		ss += (x[i] - m) * (x[i] - m);
	return sqrt(ss / (double)(n - 1)) / fabs(m);
}

struct tagged {
	double v;
	int from_a;
};

static int cmp_tagged(const void *pa, const void *pb)
{
	return cmp_double(&((const struct tagged *)pa)->v, &((const struct tagged *)pb)->v);
}

#define EXACT_MAX 10

/* P(U <= u) for U of samples of na and nb values without ties, every one of
 * the C(na + nb, na) arrangements equally likely. f[m][n][k] counts the
 * arrangements of m and n values with U = k: the largest value is either one
 * of the m (above all n: U grows by n) or one of the n. */
static double exact_cdf(size_t na, size_t nb, double u)
{
	enum { K = EXACT_MAX * EXACT_MAX + 1 };
	double(*f)[EXACT_MAX + 1][K] = xcalloc(EXACT_MAX + 1, sizeof(*f));
	for (size_t m = 0; m <= na; m++) {
		for (size_t n = 0; n <= nb; n++) {
			if (m == 0 || n == 0) {
				f[m][n][0] = 1;
				continue;
			}
			for (size_t k = 0; k <= m * n; k++)
				f[m][n][k] = (k >= n ? f[m - 1][n][k - n] : 0) + f[m][n - 1][k];
		}
	}
	double below = 0, total = 0;
	for (size_t k = 0; k <= na * nb; k++) {
		total += f[na][nb][k];
		if ((double)k <= u)
			below += f[na][nb][k];
	}
	free(f);
	return below / total;
}

int stats_mann_whitney(const double *a, size_t na, const double *b, size_t nb, stats_mwu *out)
{
	memset(out, 0, sizeof(*out));
	if (na == 0 || nb == 0)
		return BG_EUSAGE;
	size_t n = na + nb;
	struct tagged *t = xmalloc(n * sizeof(*t));
	for (size_t i = 0; i < n; i++) {
		t[i].v = i < na ? a[i] : b[i - na];
		t[i].from_a = i < na;
		if (!isfinite(t[i].v)) {
			free(t);
			return BG_EUSAGE;
		}
	}
	qsort(t, n, sizeof(*t), cmp_tagged);
	/* Rank sum of A, each run of equal values given the mean of its ranks;
	 * tie_sum is the sum of (t^3 - t) over the runs, for the variance. */
	double rank_a = 0, tie_sum = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && t[j].v == t[i].v)
			j++;
		double run = (double)(j - i), mid = (double)(i + 1 + j) / 2;
		for (size_t k = i; k < j; k++)
			if (t[k].from_a)
				rank_a += mid;
		tie_sum += run * run * run - run;
		i = j;
	}
	free(t);
	double dna = (double)na, dnb = (double)nb, dn = (double)n;
	out->u_a = rank_a - dna * (dna + 1) / 2;
	out->u_b = dna * dnb - out->u_a;
	out->ties = tie_sum > 0;
	double umin = fmin(out->u_a, out->u_b), umax = fmax(out->u_a, out->u_b);
	if (!out->ties && na <= EXACT_MAX && nb <= EXACT_MAX) {
		out->exact = true;
		out->p = fmin(1, 2 * exact_cdf(na, nb, umin));
		return 0;
	}
	double mu = dna * dnb / 2;
	double var = dna * dnb / 12 * ((dn + 1) - tie_sum / (dn * (dn - 1)));
	if (var <= 0) {
		out->p = 1; /* every value equal: no evidence of a difference */
		return 0;
	}
	double z = (umax - mu - 0.5) / sqrt(var);
	out->p = fmax(0, fmin(1, erfc(z / sqrt(2))));
	return 0;
}

const char *stats_call_name(stats_call c)
{
	switch (c) {
	case STATS_SAME: return "same";
	case STATS_FASTER: return "faster";
	case STATS_SLOWER: return "slower";
	case STATS_AMBIGUOUS: break;
	}
	return "ambiguous";
}

int stats_classify(const double *a, size_t na, const double *b, size_t nb, const stats_rule *rule,
		   stats_compare *out)
{
	static const stats_rule dflt = STATS_RULE_DEFAULT;
	memset(out, 0, sizeof(*out));
	out->call = STATS_AMBIGUOUS;
	if (!rule)
		rule = &dflt;
	if (stats_mann_whitney(a, na, b, nb, &out->mwu) < 0)
		return BG_EUSAGE;
	out->median_a = stats_median(a, na);
	out->median_b = stats_median(b, nb);
	if (!(out->median_a > 0))
		return BG_EUSAGE;
	out->ratio = out->median_b / out->median_a;
	out->cv_a = stats_cv(a, na);
	out->cv_b = stats_cv(b, nb);
	out->noise = fmax(out->cv_a, out->cv_b); /* fmax ignores a NaN side */
	double change = out->ratio - 1, p = out->mwu.p;
	if (na < 3 || nb < 3) {
		if (na >= 2 && nb >= 2 && fabs(change) > 10 * out->noise &&
		    fabs(change) > rule->min_change)
			out->call = change > 0 ? STATS_SLOWER : STATS_FASTER;
	} else if (p < rule->alpha && change > rule->min_change) {
		out->call = STATS_SLOWER;
	} else if (p < rule->alpha && change < -rule->min_change) {
		out->call = STATS_FASTER;
	} else if (p >= rule->alpha && fabs(change) <= out->noise) {
		out->call = STATS_SAME;
	}
	return 0;
}
