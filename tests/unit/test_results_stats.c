/* results/stats: summaries, the Mann-Whitney U test and the compare rule;
 * and cli_results_compare (cli/results_compare.h) driven on files written
 * with results_append. Expected values were computed with Python's
 * statistics module and a brute-force enumeration of every arrangement of
 * the pooled samples (the exact U distribution), independently of this code. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <math.h>

#include "base/exit.h"
#include "cli/results_compare.h"
#include "results/stats.h"
#include "results/store.h"
#include "tests/capture.h"
#include "unit.h"

#define N(x) (sizeof(x) / sizeof((x)[0]))

static void assert_near(double got, double want, double tol)
{
	if (!(fabs(got - want) <= tol))
		fail_msg("got %.12g, wanted %.12g (+-%g)", got, want, tol);
}

static void summaries(void **state)
{
	(void)state;
	/* statistics.median/mean/stdev: 100, 100, stdev sqrt(2.5) -> CV 0.0158113883 */
	const double x[] = {100, 102, 98, 101, 99};
	assert_near(stats_median(x, N(x)), 100, 0);
	assert_near(stats_mean(x, N(x)), 100, 1e-12);
	assert_near(stats_min(x, N(x)), 98, 0);
	assert_near(stats_max(x, N(x)), 102, 0);
	/* negatives, infinities, one value, none (Python's min and max agree) */
	const double z[] = {-1, -INFINITY, 3, INFINITY, -0.5};
	assert_true(isinf(stats_min(z, N(z))) && stats_min(z, N(z)) < 0);
	assert_true(isinf(stats_max(z, N(z))) && stats_max(z, N(z)) > 0);
	assert_near(stats_min(z, 1), -1, 0);
	assert_near(stats_max(z + 2, 1), 3, 0);
	assert_near(stats_max(z, 2), -1, 0);
	assert_true(isnan(stats_min(z, 0)) && isnan(stats_max(z, 0)));
	assert_near(stats_cv(x, N(x)), 0.0158113883008419, 1e-12);
	/* even count: the mean of the middle two; stdev(1,2,3,4) = 1.2909944 over 2.5 */
	const double y[] = {4, 1, 3, 2};
	assert_near(stats_median(y, N(y)), 2.5, 0);
	assert_near(stats_cv(y, N(y)), 0.5163977794943222, 1e-12);
	assert_true(y[0] == 4); /* the input is not sorted in place */
	const double one[] = {7};
	assert_near(stats_median(one, 1), 7, 0);
	assert_near(stats_cv(one, 1), 0, 0);
	assert_true(isnan(stats_median(one, 0)));
}

/* The textbook example (Wikipedia, "Mann-Whitney U test", the tortoise and
 * the hare): 6 tortoises and 6 hares finish in the order T H H H H H T T T
 * T T H. As finishing places, tortoises 1,7,8,9,10,11 and hares
 * 2,3,4,5,6,12: U = 11 for the tortoises' wins and 25 for the hares', and
 * the exact two-sided p-value is 2 * 143 / 924 = 0.3095238. */
static void mann_whitney_textbook(void **state)
{
	(void)state;
	const double t[] = {1, 7, 8, 9, 10, 11}, h[] = {2, 3, 4, 5, 6, 12};
	stats_mwu m;
	assert_int_equal(stats_mann_whitney(t, N(t), h, N(h), &m), 0);
	assert_near(m.u_a, 25,
		    0); /* pairs with the tortoise's place above (later than) the hare's */
	assert_near(m.u_b, 11, 0);
	assert_true(m.exact);
	assert_false(m.ties);
	assert_near(m.p, 0.30952380952380953, 1e-12);
	/* symmetric in its arguments */
	assert_int_equal(stats_mann_whitney(h, N(h), t, N(t), &m), 0);
	assert_near(m.p, 0.30952380952380953, 1e-12);
}

static void mann_whitney_exact_and_normal(void **state)
{
	(void)state;
	stats_mwu m;
	/* fully separated 5 + 5: p = 2 / C(10,5) = 2 / 252 */
	const double a[] = {1, 2, 3, 4, 5}, b[] = {6, 7, 8, 9, 10};
	assert_int_equal(stats_mann_whitney(a, N(a), b, N(b), &m), 0);
	assert_true(m.exact);
	assert_near(m.u_a, 0, 0);
	assert_near(m.p, 0.007936507936507936, 1e-12);
	/* ties: the normal approximation, tie-corrected variance, continuity 0.5:
	 * U = 4.5, sum(t^3 - t) = 6 + 6, p = 0.06476896969888779 */
	const double c[] = {10, 12, 12, 15, 11}, d[] = {13, 14, 12, 16, 17, 15};
	assert_int_equal(stats_mann_whitney(c, N(c), d, N(d), &m), 0);
	assert_false(m.exact);
	assert_true(m.ties);
	assert_near(m.u_a, 4.5, 0);
	assert_near(m.p, 0.06476896969888779, 1e-9);
	/* 11 + 11 without ties is past the exact table: normal, p = 8.1515e-05 */
	double e[11], f[11];
	for (int i = 0; i < 11; i++) {
		e[i] = i + 1;
		f[i] = i + 12;
	}
	assert_int_equal(stats_mann_whitney(e, 11, f, 11, &m), 0);
	assert_false(m.exact);
	assert_near(m.p, 8.151536127742887e-05, 1e-9);
	/* every value equal: no evidence, p = 1 */
	const double g[] = {5, 5, 5}, h[] = {5, 5, 5};
	assert_int_equal(stats_mann_whitney(g, 3, h, 3, &m), 0);
	assert_near(m.p, 1, 0);
	/* empty or non-finite input is refused */
	assert_true(stats_mann_whitney(g, 0, h, 3, &m) < 0);
	const double bad[] = {1, NAN};
	assert_true(stats_mann_whitney(bad, 2, h, 3, &m) < 0);
}

static const double base5[] = {100, 101, 99, 100.5, 99.5};

static stats_call call_of(const double *b, size_t nb, stats_compare *c)
{
	assert_int_equal(stats_classify(base5, N(base5), b, nb, NULL, c), 0);
	return c->call;
}

static void classify(void **state)
{
	(void)state;
	stats_compare c;
	/* ratio 1.001, p = 1, noise 0.0079: within the noise */
	const double same[] = {100.2, 99.8, 100.6, 99.4, 100.1};
	assert_int_equal(call_of(same, 5, &c), STATS_SAME);
	assert_near(c.ratio, 1.001, 1e-12);
	assert_near(c.noise, 0.00790569415042095, 1e-12);
	/* ratio 1.1, p = 0.0079 */
	const double slower[] = {110, 111, 109, 110.5, 109.5};
	assert_int_equal(call_of(slower, 5, &c), STATS_SLOWER);
	assert_near(c.ratio, 1.1, 1e-12);
	assert_near(c.mwu.p, 0.007936507936507936, 1e-12);
	/* ratio 0.9, p = 0.0079 */
	const double faster[] = {90, 91, 89, 90.5, 89.5};
	assert_int_equal(call_of(faster, 5, &c), STATS_FASTER);
	assert_near(c.ratio, 0.9, 1e-12);
	/* ratio 1.06 beyond the noise (0.0398) but p = 0.31: ambiguous */
	const double amb[] = {100.3, 106, 98.9, 107, 108};
	assert_int_equal(call_of(amb, 5, &c), STATS_AMBIGUOUS);
	assert_near(c.mwu.p, 0.30952380952380953, 1e-12);
	assert_near(c.cv_b, 0.0398311404571264, 1e-12);
	/* significant but under min_change: ambiguous; with min_change 0 it is slower */
	const double tiny[] = {100.6, 101.6, 99.6, 101.1,
			       100.1}; /* +0.6% within the noise 0.0079, p = 0.22 */
	assert_int_equal(call_of(tiny, 5, &c), STATS_SAME);
	const double a9[] = {100.0, 100.1, 100.2, 100.3, 100.4},
		     b9[] = {100.5, 100.6, 100.7, 100.8, 100.9};
	assert_int_equal(stats_classify(a9, 5, b9, 5, NULL, &c), 0);
	assert_int_equal(c.call, STATS_AMBIGUOUS); /* p 0.0079, ratio 1.005 < 1.01 */
	stats_rule loose = {0.05, 0};
	assert_int_equal(stats_classify(a9, 5, b9, 5, &loose, &c), 0);
	assert_int_equal(c.call, STATS_SLOWER);
	/* 5 + 3 reaches p = 2 / C(8,3) = 0.0357; 3 + 3 never goes below 0.1 */
	assert_int_equal(call_of(slower, 3, &c), STATS_SLOWER);
	assert_near(c.mwu.p, 2.0 / 56, 1e-12);
	assert_int_equal(stats_classify(base5, 3, slower, 3, NULL, &c), 0);
	assert_near(c.mwu.p, 0.1, 1e-12);
	assert_int_equal(c.call, STATS_AMBIGUOUS);
	/* too few samples: 2 + 2 far beyond 10 x the noise is called; 1 + 5 never */
	const double a2[] = {100, 100.1}, b2[] = {150, 150.1};
	assert_int_equal(stats_classify(a2, 2, b2, 2, NULL, &c), 0);
	assert_int_equal(c.call, STATS_SLOWER);
	assert_int_equal(stats_classify(a2, 1, slower, 5, NULL, &c), 0);
	assert_int_equal(c.call, STATS_AMBIGUOUS);
	assert_int_equal(stats_classify(a2, 2, base5, 5, NULL, &c), 0);
	assert_int_equal(c.call, STATS_AMBIGUOUS); /* n 2: not beyond 10 x noise */
	assert_string_equal(stats_call_name(STATS_SLOWER), "slower");
	assert_string_equal(stats_call_name(STATS_AMBIGUOUS), "ambiguous");
	assert_non_null(strstr(cli_cmd_results.help,
			       "boxgate results compare [--json | --csv] BEFORE AFTER"));
}

/* ---- cli_results_compare ---- */

static void add_rec(const char *path, const char *verdict, const char *gpu, const char *shape,
		    int nw, const char *cand, double slow)
{
	cJSON *r = cJSON_CreateObject();
	cJSON_AddNumberToObject(r, "schema", 1);
	cJSON_AddStringToObject(r, "box", "local");
	if (gpu)
		cJSON_AddStringToObject(r, "gpu_name", gpu);
	else
		cJSON_AddNullToObject(r, "gpu_name");
	cJSON_AddStringToObject(r, "verdict", verdict);
	cJSON *p = cJSON_AddObjectToObject(r, "point");
	cJSON_AddStringToObject(p, "kind", "demo");
	cJSON_AddStringToObject(p, "shape", shape);
	cJSON_AddNumberToObject(p, "num_workers", nw);
	cJSON_AddStringToObject(p, "candidate", cand);
	cJSON *res = cJSON_AddObjectToObject(r, "result");
	cJSON *c = cJSON_AddObjectToObject(res, "candidate");
	cJSON_AddNumberToObject(c, "slowCTA_us", slow);
	bg_err err = {0};
	assert_int_equal(results_append_json(path, r, &err), 0);
	cJSON_Delete(r);
}

static void add_samples(const char *path, const char *gpu, int nw, const double *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		add_rec(path, "PASS_GATE", gpu, "q_b", nw, "cand", s[i]);
}

/* Runs cli_results_compare on (before, after); returns its exit code and
 * what it wrote to stdout and stderr (owned). */
static int run_compare(const char *before, const char *after, bool json, char **out, char **err)
{
	char *op = xasprintf("%s/out%d", tmpdir, ++counter),
	     *ep = xasprintf("%s/err%d", tmpdir, counter);
	fflush(stdout);
	fflush(stderr);
	int so = dup(1), se = dup(2);
	int fo = open(op, O_WRONLY | O_CREAT | O_TRUNC, 0600),
	    fe = open(ep, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(fo, 1);
	dup2(fe, 2);
	char *v[] = {"compare", (char *)before, (char *)after};
	cli_args args = {.v = v, .n = after ? 3 : 2};
	cli_ctx ctx = {0};
	cli_compare_opts o = {.json = json};
	int rc = cli_results_compare(&ctx, &args, &o);
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(so), close(se), close(fo), close(fe);
	size_t len;
	int fd = open(op, O_RDONLY);
	*out = capture_fd(fd, &len);
	close(fd);
	fd = open(ep, O_RDONLY);
	*err = capture_fd(fd, &len);
	close(fd);
	free(op);
	free(ep);
	return rc;
}

/* The row of the table whose point is `label` (owned), failing if none. */
static char *row_of(const char *out, const char *label)
{
	size_t l = strlen(label);
	for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, label, l) == 0 && p[l] == ' ') {
			const char *e = strchr(p, '\n');
			return strndup(p, e ? (size_t)(e - p) : strlen(p));
		}
	fail_msg("no row for %s in:\n%s", label, out);
	return NULL;
}

static void expect_row(const char *out, const char *label, const char *want_sub)
{
	char *row = row_of(out, label);
	if (!strstr(row, want_sub))
		fail_msg("row [%s] lacks [%s]", row, want_sub);
	free(row);
}

static void compare_files(void **state)
{
	(void)state;
	char *a = xasprintf("%s/before.jsonl", tmpdir), *b = xasprintf("%s/after.jsonl", tmpdir);
	const double same[] = {100.2, 99.8, 100.6, 99.4, 100.1},
		     slower[] = {110, 111, 109, 110.5, 109.5}, faster[] = {90, 91, 89, 90.5, 89.5},
		     amb[] = {100.3, 106, 98.9, 107, 108};
	add_samples(a, NULL, 8, base5, 5);
	add_samples(b, NULL, 8, same, 5);
	add_samples(a, "NVIDIA H200", 64, base5, 5);
	add_samples(b, "NVIDIA H200", 64, slower, 5);
	add_samples(a, NULL, 128, base5, 5);
	add_samples(b, NULL, 128, faster, 5);
	add_samples(a, NULL, 136, base5, 5);
	add_samples(b, NULL, 136, amb, 5);
	add_samples(a, NULL, 68, base5, 3);
	add_samples(b, NULL, 4, base5, 2);
	/* INVALID and TIMEOUT_HANG records never count, however fast they look */
	add_rec(b, "INVALID", NULL, "q_b", 8, "cand", 1);
	add_rec(b, "TIMEOUT_HANG", NULL, "q_b", 8, "cand", 1);
	/* a line that is not a record in the before file, a torn last line in the after file */
	FILE *f = fopen(a, "a");
	fputs("not json\n", f);
	fclose(f);
	f = fopen(b, "a");
	fputs("{\"schema\":1,\"verd", f);
	fclose(f);

	char *out, *err;
	int rc = run_compare(a, b, false, &out, &err);
	if (rc != BG_EXIT_FAIL)
		fail_msg("exit %d\n%s%s", rc, out, err);
	expect_row(out, "local demo q_b nw8 cand", "same");
	expect_row(out, "local demo q_b nw8 cand",
		   "100.00 \xc2\xb1 0.8%  5  100.10 \xc2\xb1 0.4%  5 ");
	expect_row(out, "local demo q_b nw8 cand", "  ~  ");
	expect_row(out, "NVIDIA H200 demo q_b nw64 cand", "slower");
	expect_row(out, "NVIDIA H200 demo q_b nw64 cand", "+10.00%");
	expect_row(out, "NVIDIA H200 demo q_b nw64 cand", "p=0.0079");
	expect_row(out, "local demo q_b nw128 cand", "faster");
	expect_row(out, "local demo q_b nw128 cand", "-10.00%");
	expect_row(out, "local demo q_b nw136 cand", "ambiguous");
	expect_row(out, "local demo q_b nw68 cand", "only in before");
	expect_row(out, "local demo q_b nw4 cand", "only in after");
	assert_non_null(strstr(out, "6 points: 1 same, 1 faster, 1 slower, 1 ambiguous, 1 only in "
				    "before, 1 only in after"));
	assert_non_null(strstr(out, "0 before, 2 after"));
	assert_non_null(strstr(err, "a torn last line skipped"));
	assert_non_null(strstr(err,
			       "before.jsonl: 1 line that is not a JSON object skipped (the first: "
			       "line 24)"));
	/* the columns line up: every row's call column starts at the same column
	 * (the two '\xc2\xb1' of a row take two bytes a column) */
	char *h = row_of(out, "point"), *r = row_of(out, "local demo q_b nw8 cand");
	assert_int_equal(strstr(h, " call") - h, strstr(r, " same") - r - 2);
	free(h);
	free(r);
	free(out);
	free(err);

	/* --json: one object per point, then the summary */
	assert_int_equal(run_compare(a, b, true, &out, &err), BG_EXIT_FAIL);
	size_t lines = 0;
	cJSON *last = NULL;
	for (char *p = out, *nl; (nl = strchr(p, '\n')); p = nl + 1) {
		*nl = '\0';
		cJSON_Delete(last);
		last = cJSON_Parse(p);
		assert_non_null(last);
		lines++;
		const cJSON *pt = cJSON_GetObjectItem(last, "point");
		if (cJSON_IsString(pt) &&
		    strcmp(pt->valuestring, "NVIDIA H200 demo q_b nw64 cand") == 0) {
			assert_string_equal(cJSON_GetObjectItem(last, "call")->valuestring,
					    "slower");
			assert_near(cJSON_GetObjectItem(last, "ratio")->valuedouble, 1.1, 1e-12);
			assert_int_equal(cJSON_GetObjectItem(last, "num_workers")->valueint, 64);
			assert_true(cJSON_IsTrue(cJSON_GetObjectItem(last, "p_exact")));
		}
		if (cJSON_IsString(pt) &&
		    strcmp(pt->valuestring, "local demo q_b nw68 cand") == 0) {
			assert_true(cJSON_IsNull(cJSON_GetObjectItem(last, "ratio")));
			assert_string_equal(cJSON_GetObjectItem(last, "call")->valuestring,
					    "only_before");
		}
	}
	assert_int_equal(lines, 7);
	assert_string_equal(cJSON_GetObjectItem(last, "summary")->valuestring, "compare");
	assert_int_equal(cJSON_GetObjectItem(last, "slower")->valueint, 1);
	assert_int_equal(cJSON_GetObjectItem(last, "exit")->valueint, 1);
	cJSON_Delete(last);
	free(out);
	free(err);

	/* no slower point: exit 0 */
	assert_int_equal(run_compare(a, a, false, &out, &err), BG_EXIT_OK);
	assert_non_null(strstr(out, "0 slower"));
	free(out);
	free(err);

	/* a missing file is a usage error naming it; so is a wrong operand count */
	char *missing = xasprintf("%s/nope.jsonl", tmpdir);
	assert_int_equal(run_compare(a, missing, false, &out, &err), BG_EXIT_USAGE);
	assert_non_null(strstr(err, missing));
	assert_string_equal(out, "");
	free(out);
	free(err);
	assert_int_equal(run_compare(a, NULL, false, &out, &err), BG_EXIT_USAGE);
	assert_non_null(strstr(err, "two files"));
	free(out);
	free(err);
	free(missing);
	free(a);
	free(b);
}

UNIT_SCRATCH_GROUP("stats")

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(summaries),
		cmocka_unit_test(mann_whitney_textbook),
		cmocka_unit_test(mann_whitney_exact_and_normal),
		cmocka_unit_test(classify),
		cmocka_unit_test(compare_files),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
