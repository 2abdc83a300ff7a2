/* results/select (selectors), results/points (grouping and pairing),
 * results/delta (the decision adapter over measure/decide.h).
 * The intervals were computed independently with Python: every arrangement
 * of the pooled samples enumerated for the Mann-Whitney critical value, every
 * subset for the signed-rank one, and SciPy's mannwhitneyu(method="exact")
 * for p. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <math.h>

#include "measure/delta.h"
#include "results/points.h"
#include "results/select.h"
#include "unit.h"

static cJSON *rec_of(const char *json)
{
	cJSON *r = cJSON_Parse(json);
	assert_non_null(r);
	return r;
}

static const char rec1[] =
	"{\"run_id\":\"ab12cd34ef567890\",\"box\":\"h200-a\",\"gpu_name\":\"NVIDIA H200\","
	"\"device\":\"cuda\",\"start\":\"2026-12-03T14:50:01.123Z\",\"verdict\":\"PASS_GATE\","
	"\"gate_args\":[\"--kind\",\"demo\",\"--shape\",\"q_a\",\"--num-workers\",\"64\","
	"\"--variant\",\"nosplit\",\"--configs=a,b\",\"--M\",\"4096\"],"
	"\"point\":{\"kind\":\"demo\",\"shape\":\"q_a\",\"num_workers\":64,\"candidate\":\"k1\"},"
	"\"campaign\":{\"name\":\"w13\"},"
	"\"result\":{\"candidate\":{\"slowCTA_us\":10.5},\"slowCTA_ratio_base_over_cand\":1.5}}";

static bool sel_matches(const char *text, const cJSON *rec)
{
	results_selector s = RESULTS_SELECTOR_INIT;
	bg_err err = {0};
	if (results_selector_add(&s, text, &err) < 0)
		fail_msg("selector %s: %s", text, err.msg);
	bool m = results_selector_match(&s, rec);
	results_selector_release(&s);
	return m;
}

static void selectors(void **state)
{
	(void)state;
	cJSON *r = rec_of(rec1);
	static const char *const yes[] = {
		"run=ab12",
		"run=ab12cd34ef567890",
		"campaign=w13",
		"candidate=k1",
		"kind=demo",
		"shape=q_a",
		"num-workers=64",
		"num_workers=64",
		"box=h200-a",
		"device=h200",
		"device=NVIDIA H200",
		"device=cuda",
		"verdict=PASS_GATE",
		"since=2026-12-03",
		"until=2026-12-03",
		"since=2026-12-03T14:50",
		"until=2026-12-03T14:50:01",
		"variant=nosplit",
		"configs=a,b",
		"variant=nosplit,shape=q_a",
		"since=2026-12-03T14:50:01.123Z",
	};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!sel_matches(yes[i], r))
			fail_msg("%s should match", yes[i]);
	static const char *const no[] = {
		"run=ab13",         "campaign=w1",      "candidate=baseline",
		"num-workers=6",    "box=h200",         "device=h100",
		"since=2026-12-04", "until=2026-12-02", "until=2026-12-03T14:49",
		"variant=split",    "dtype=fp8",        "variant=nosplit,shape=q_b",
	};
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (sel_matches(no[i], r))
			fail_msg("%s should not match", no[i]);
	/* bad selectors: each error names the term */
	static const char *const bad[][2] = {
		{"", "empty selector"},
		{"run", "'run': not KEY=VALUE"},
		{"=x", "'=x': not KEY=VALUE"},
		{"r un=ab", "'r un=ab': not KEY=VALUE"},
		{"run=", "'run=': an empty value"},
		{"run=XYZ", "'run=XYZ': a run id is lowercase hex"},
		{"since=yesterday", "'since=yesterday': not an ISO 8601 date"},
		{"until=2026-02-30T25", "'until=2026-02-30T25': not an ISO 8601 date"},
		{"since=2026-1-3", "not an ISO 8601 date"},
		{"num-workers=-1", "num-workers is a whole number"},
		{"num-workers=99999999999", "num-workers is a whole number"},
		{"variant=a\tb", "a control character"},
		{"shape=q_a,variant=", "'variant=': an empty value"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		results_selector s = RESULTS_SELECTOR_INIT;
		bg_err err = {0};
		if (results_selector_add(&s, bad[i][0], &err) != BG_EUSAGE)
			fail_msg("'%s' was accepted", bad[i][0]);
		if (!strstr(err.msg, bad[i][1]))
			fail_msg("'%s': [%s] lacks [%s]", bad[i][0], err.msg, bad[i][1]);
		results_selector_release(&s);
	}
	/* the text form, and a ',' inside a value */
	results_selector s = RESULTS_SELECTOR_INIT;
	assert_int_equal(results_selector_add(&s, "configs=a,b,run=ab", NULL), 0);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.t[0].value, "a,b");
	char *t = results_selector_text(&s);
	assert_string_equal(t, "configs=a,b,run=ab");
	free(t);
	results_selector_release(&s);
	assert_string_equal(results_gate_arg(r, "variant"), "nosplit");
	assert_string_equal(results_gate_arg(r, "configs"), "a,b");
	assert_null(results_gate_arg(r, "dtype"));
	cJSON_Delete(r);
}

static void points_and_pairs(void **state)
{
	(void)state;
	results_points ps = RESULTS_POINTS_INIT;
	cJSON *r = rec_of(rec1);
	results_points_add(&ps, r);
	results_points_add(&ps, r);
	cJSON_ReplaceItemInArray(cJSON_GetObjectItem(r, "gate_args"), 7,
				 cJSON_CreateString("split"));
	results_points_add(&ps, r);
	cJSON_Delete(r);
	r = rec_of("{\"verdict\":\"INVALID\",\"point\":{\"shape\":\"q_a\"}}");
	results_points_add(&ps, r);
	cJSON_Delete(r);
	assert_int_equal(ps.n, 3);
	assert_int_equal(ps.v[0].n, 2);
	assert_int_equal(ps.v[0].n_ratio, 2);
	assert_int_equal(ps.v[2].n, 0);
	assert_int_equal(ps.v[2].n_bad, 1);
	char *l = results_point_label(&ps.v[0], NULL);
	assert_string_equal(l, "NVIDIA H200 demo q_a nw64 k1 --variant nosplit --M 4096");
	free(l);
	l = results_point_label(&ps.v[1], "variant");
	assert_string_equal(l, "NVIDIA H200 demo q_a nw64 k1 --M 4096");
	free(l);
	l = results_point_label(&ps.v[2], NULL);
	assert_string_equal(l, "- - q_a - -");
	free(l);
	assert_string_equal(results_point_field(&ps.v[1], "variant"), "split");
	assert_false(results_point_pairs(&ps.v[0], &ps.v[1], NULL, NULL, NULL));
	assert_true(results_point_pairs(&ps.v[0], &ps.v[1], "variant", NULL, NULL));
	assert_true(results_point_pairs(&ps.v[0], &ps.v[1], NULL, "nosplit", "split"));
	assert_false(results_point_pairs(&ps.v[0], &ps.v[1], "shape", NULL, NULL));
	assert_false(results_point_pairs(&ps.v[0], &ps.v[2], "variant", NULL, NULL));
	results_points_release(&ps);
}

static void assert_near(double got, double want, double tol)
{
	if (!(fabs(got - want) <= tol))
		fail_msg("got %.12g, wanted %.12g (+-%g)", got, want, tol);
}

static void delta(void **state)
{
	(void)state;
	const double a[] = {100, 101, 99, 100.5, 99.5}, b[] = {110, 111, 109, 110.5, 109.5};
	results_delta d;
	assert_int_equal(results_delta_decide(a, 5, b, 5, &d), 0);
	assert_int_equal(d.call, STATS_SLOWER);
	assert_true(d.decided);
	assert_near(d.ratio, 1.1, 1e-12);
	/* the 90% interval: every b/a, from the 5th smallest to the 5th largest */
	assert_near(d.lo, 1.089552238806, 1e-9);
	assert_near(d.hi, 1.110552763819, 1e-9);
	assert_true(d.level >= 0.9);
	assert_near(d.p, 0.007936507936507936, 1e-12);
	/* 3 + 3: the fewest with an interval (P(U = 0) = 1/20), the whole range */
	assert_int_equal(results_delta_decide(a, 3, b, 3, &d), 0);
	assert_near(d.lo, 1.079207920792, 1e-9);
	assert_near(d.hi, 1.121212121212, 1e-9);
	assert_true(d.decided);
	assert_int_equal(d.call, STATS_SLOWER);
	/* 2 + 2: none */
	assert_int_equal(results_delta_decide(a, 2, b, 2, &d), 0);
	assert_true(isnan(d.lo) && isnan(d.hi));
	assert_false(d.decided);
	/* a decided change under 1% is the same */
	const double c[] = {100.5, 101.5, 99.5, 101, 100};
	assert_int_equal(results_delta_decide(a, 5, c, 5, &d), 0);
	assert_int_equal(d.call, STATS_SAME);
	const double zero[] = {1, 0};
	assert_int_equal(results_delta_decide(zero, 2, b, 5, &d), BG_EUSAGE);

	const double r[] = {1.25, 1.3, 1.28, 1.31, 1.27};
	results_point_decision pd;
	assert_int_equal(results_point_decide(r, 5, 1.2, &pd), 0);
	assert_near(pd.estimate, 1.28, 1e-12);
	assert_near(pd.lo, 1.25, 1e-12);
	assert_near(pd.hi, 1.31, 1e-12);
	assert_int_equal(pd.call, RESULTS_POINT_PASS);
	assert_int_equal(results_point_decide(r, 5, 1.4, &pd), 0);
	assert_int_equal(pd.call, RESULTS_POINT_BELOW);
	assert_int_equal(results_point_decide(r, 5, 1.29, &pd), 0);
	assert_int_equal(pd.call, RESULTS_POINT_NOISY);
	assert_false(pd.leans_above);
	assert_int_equal(results_point_decide(r, 4, 1.2, &pd), 0);
	assert_int_equal(pd.call, RESULTS_POINT_NOISY); /* 4 ratios: no 90% interval */
	assert_int_equal(results_point_decide(r, 0, 1.2, &pd), BG_EUSAGE);
}

UNIT_SCRATCH_GROUP("select")

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(selectors),
		cmocka_unit_test(points_and_pairs),
		cmocka_unit_test(delta),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
