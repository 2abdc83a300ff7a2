/* The decision adapter (results/delta.h): Mann-Whitney and Hodges-Lehmann. */
#include "results/delta.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/xmalloc.h"

enum { EXACT_SIDE_MAX = 20, EXACT_SIGNED_MAX = 60 };

static int cmp_double(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;
	return (a > b) - (a < b);
}

static bool all_positive(const double *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isfinite(x[i]) || !(x[i] > 0))
			return false;
	return n > 0;
}

/* The largest k with P(U <= k) <= tail under the null (U of na and nb values
 * without ties), -1 when even P(U <= 0) exceeds it. Exact by counting
 * arrangements when both sides are small, else the normal approximation. */
static long mwu_critical(size_t na, size_t nb, double tail)
{
	if (na > EXACT_SIDE_MAX || nb > EXACT_SIDE_MAX) {
		double m = (double)na * (double)nb, sd = sqrt(m * (double)(na + nb + 1) / 12);
		/* z for the tail: 1.959964 at 0.025, 1.644854 at 0.05 */
		double z = tail <= 0.025 ? 1.959964 : 1.644854;
		return (long)floor(m / 2 - z * sd - 0.5);
	}
	size_t K = na * nb + 1;
	/* f[m][n][k], m <= na, n <= nb: arrangements of m and n values with U = k */
	double *f = xcalloc((na + 1) * (nb + 1) * K, sizeof(*f));
#define F(m, n, k) f[((m) * (nb + 1) + (n)) * K + (k)]
	for (size_t m = 0; m <= na; m++)
		for (size_t n = 0; n <= nb; n++) {
			if (m == 0 || n == 0) {
				F(m, n, 0) = 1;
				continue;
			}
			for (size_t k = 0; k <= m * n; k++)
				F(m, n, k) = (k >= n ? F(m - 1, n, k - n) : 0) + F(m, n - 1, k);
		}
	double total = 0, below = 0;
	for (size_t k = 0; k < K; k++)
		total += F(na, nb, k);
	long crit = -1;
	for (size_t k = 0; k < K; k++) {
		below += F(na, nb, k);
		if (below / total > tail + 1e-12)
			break;
		crit = (long)k;
	}
#undef F
	free(f);
	return crit;
}

/* The same for the Wilcoxon signed-rank statistic of n values. */
static long signed_rank_critical(size_t n, double tail)
{
	size_t M = n * (n + 1) / 2;
	if (n > EXACT_SIGNED_MAX) {
		double sd = sqrt((double)n * (double)(n + 1) * (double)(2 * n + 1) / 24);
		double z = tail <= 0.025 ? 1.959964 : 1.644854;
		return (long)floor((double)M / 2 - z * sd - 0.5);
	}
	double *c = xcalloc(M + 1, sizeof(*c));
	c[0] = 1;
	for (size_t r = 1; r <= n; r++)
		for (size_t s = M; s >= r; s--)
			c[s] += c[s - r];
	double total = ldexp(1, (int)n), below = 0;
	long crit = -1;
	for (size_t k = 0; k <= M; k++) {
		below += c[k];
		if (below / total > tail + 1e-12)
			break;
		crit = (long)k;
	}
	free(c);
	return crit;
}

int results_delta_decide(const double *a, size_t na, const double *b, size_t nb, results_delta *out)
{
	memset(out, 0, sizeof(*out));
	out->lo = out->hi = NAN;
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
	out->call = c.call;
	out->decided = c.call == STATS_FASTER || c.call == STATS_SLOWER;
	size_t m = na * nb;
	long k = mwu_critical(na, nb, 0.025);
	if (k < 0 || (size_t)k >= (m + 1) / 2)
		return 0;
	double *d = xmalloc(m * sizeof(*d));
	for (size_t i = 0; i < na; i++)
		for (size_t j = 0; j < nb; j++)
			d[i * nb + j] = log(b[j]) - log(a[i]);
	qsort(d, m, sizeof(*d), cmp_double);
	out->lo = exp(d[k]);
	out->hi = exp(d[m - 1 - (size_t)k]);
	free(d);
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
	size_t M = n * (n + 1) / 2, w = 0;
	double *walsh = xmalloc(M * sizeof(*walsh));
	for (size_t i = 0; i < n; i++)
		for (size_t j = i; j < n; j++)
			walsh[w++] = (log(r[i]) + log(r[j])) / 2;
	qsort(walsh, M, sizeof(*walsh), cmp_double);
	out->estimate = exp(M % 2 ? walsh[M / 2] : (walsh[M / 2 - 1] + walsh[M / 2]) / 2);
	long k = signed_rank_critical(n, 0.05);
	if (k >= 0 && (size_t)k < (M + 1) / 2) {
		out->lo = exp(walsh[k]);
		out->hi = exp(walsh[M - 1 - (size_t)k]);
		if (out->lo >= bar)
			out->call = RESULTS_POINT_PASS;
		else if (out->hi < bar)
			out->call = RESULTS_POINT_BELOW;
	}
	out->leans_above = out->estimate >= bar;
	free(walsh);
	return 0;
}
