/* measure/compare: results compare's engine. --pair read (a key, a mapping,
 * refusals, the key inferred from the selectors), the two sides read through
 * their selectors, points paired (and two partners refused), each row called. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tests/unit/unit.h"
#include "base/strbuf.h"
#include "measure/compare.h"

UNIT_SCRATCH_GROUP("measure-compare")

static results_selector sel_of(const char *const *terms)
{
	results_selector s = RESULTS_SELECTOR_INIT;
	for (; terms && *terms; terms++) {
		bg_err err = {0};
		if (results_selector_add(&s, *terms, &err) < 0)
			fail_msg("selector %s: %s", *terms, err.msg);
	}
	return s;
}

static void pairing(void **state)
{
	(void)state;
	static const struct {
		const char *given;
		const char *before[3], *after[3];
		int rc;
		const char *skip, *from, *to;
		bool inferred;
	} cases[] = {
		{"variant", {NULL}, {NULL}, 0, "variant", NULL, NULL, false},
		{"num_workers", {NULL}, {NULL}, 0, "num-workers", NULL, NULL, false},
		{"box", {NULL}, {NULL}, 0, "box", NULL, NULL, false},
		{"k1=k2", {NULL}, {NULL}, 0, NULL, "k1", "k2", false},
		{"=k2", {NULL}, {NULL}, BG_EUSAGE, NULL, NULL, NULL, false},
		{"k1=", {NULL}, {NULL}, BG_EUSAGE, NULL, NULL, NULL, false},
		{"a=b=c", {NULL}, {NULL}, BG_EUSAGE, NULL, NULL, NULL, false},
		{"Variant", {NULL}, {NULL}, BG_EUSAGE, NULL, NULL, NULL, false},
		{"", {NULL}, {NULL}, BG_EUSAGE, NULL, NULL, NULL, false},
		{"a b", {NULL}, {NULL}, BG_EUSAGE, NULL, NULL, NULL, false},
		/* not given: the one point field the two selectors set apart */
		{NULL,
		 {"variant=nosplit", NULL},
		 {"variant=split", NULL},
		 0,
		 "variant",
		 NULL,
		 NULL,
		 true},
		{NULL,
		 {"num_workers=64", NULL},
		 {"num_workers=128", NULL},
		 0,
		 "num-workers",
		 NULL,
		 NULL,
		 true},
		{NULL,
		 {"variant=a", "shape=x", NULL},
		 {"variant=b", "shape=y", NULL},
		 0,
		 NULL,
		 NULL,
		 NULL,
		 false},
		{NULL, {"variant=a", NULL}, {"variant=a", NULL}, 0, NULL, NULL, NULL, false},
		{NULL, {"box=h1", NULL}, {"box=h2", NULL}, 0, NULL, NULL, NULL, false},
		{NULL, {"run=ab12", NULL}, {"run=cd34", NULL}, 0, NULL, NULL, NULL, false},
		{NULL, {NULL}, {NULL}, 0, NULL, NULL, NULL, false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		results_selector b = sel_of(cases[i].before), a = sel_of(cases[i].after);
		measure_pairing pr;
		bg_err err = {0};
		int rc = measure_pairing_parse(cases[i].given, &b, &a, &pr, &err);
		if (rc != cases[i].rc)
			fail_msg("case %zu (%s): rc %d, wanted %d (%s)", i,
				 cases[i].given ? cases[i].given : "-", rc, cases[i].rc, err.msg);
		if (rc == 0) {
			const char *got[3] = {pr.skip, pr.from, pr.to},
				   *want[3] = {cases[i].skip, cases[i].from, cases[i].to};
			for (int k = 0; k < 3; k++)
				if ((got[k] == NULL) != (want[k] == NULL) ||
				    (got[k] && strcmp(got[k], want[k]) != 0))
					fail_msg("case %zu: field %d: %s, wanted %s", i, k,
						 got[k] ? got[k] : "NULL",
						 want[k] ? want[k] : "NULL");
			assert_int_equal(pr.inferred, cases[i].inferred);
		} else {
			assert_non_null(strstr(err.msg, "--pair"));
		}
		measure_pairing_release(&pr);
		results_selector_release(&b);
		results_selector_release(&a);
	}
}

/* One record of point (variant, shape) whose candidate took `us`. */
static void add_rec(strbuf *b, const char *variant, const char *shape, double us,
		    const char *verdict)
{
	strbuf_addf(b,
		    "{\"run_id\":\"r\",\"box\":\"h1\",\"gpu_name\":\"G\",\"device\":\"cuda\","
		    "\"verdict\":\"%s\",\"gate_args\":[\"--kind\",\"demo\",\"--shape\",\"%s\","
		    "\"--variant\",\"%s\"],\"point\":{\"kind\":\"demo\",\"shape\":\"%s\"},"
		    "\"result\":{\"candidate\":{\"slowCTA_us\":%.17g}}}\n",
		    verdict, shape, variant, shape, us);
}

static void read_pair_decide(void **state)
{
	(void)state;
	strbuf b = STRBUF_INIT;
	for (int i = 0; i < 10; i++) {
		add_rec(&b, "old", "q_a", 100 + (i % 3) * 0.1, "PASS_GATE");
		add_rec(&b, "new", "q_a", 80 + (i % 3) * 0.1, "PASS_GATE"); /* faster */
		add_rec(&b, "old", "q_b", 50 + (i % 3) * 0.1, "PASS_GATE");
		add_rec(&b, "new", "q_b", 60 + (i % 3) * 0.1, "PASS_GATE"); /* slower */
		add_rec(&b, "old", "q_c", 70 + (i % 3) * 0.1, "PASS_GATE"); /* only before */
	}
	add_rec(&b, "new", "q_d", 1, "INVALID"); /* only after, and no sample */
	char *path = unit_file("store", ".jsonl", b.buf);
	strbuf_release(&b);
	measure_side s[2] = {{0}, {0}};
	s[MEASURE_BEFORE].sel = sel_of((const char *const[]){"variant=old", NULL});
	s[MEASURE_AFTER].sel = sel_of((const char *const[]){"variant=new", NULL});
	results_read_stats st = {0};
	bg_err err = {0};
	for (int k = 0; k < 2; k++) {
		s[k].path = path;
		assert_int_equal(measure_side_read(&s[k], &st, &err), 0);
	}
	assert_int_equal(s[MEASURE_BEFORE].matched, 30);
	assert_int_equal(s[MEASURE_AFTER].matched, 21);
	assert_int_equal(s[MEASURE_AFTER].skipped, 1);
	measure_pairing pr;
	assert_int_equal(measure_pairing_parse(NULL, &s[0].sel, &s[1].sel, &pr, &err), 0);
	assert_string_equal(pr.skip, "variant");
	measure_row *rows = NULL;
	size_t n = 0;
	assert_int_equal(measure_pair_rows(&s[0].pts, &s[1].pts, &pr, &rows, &n, &err), 0);
	assert_int_equal(n, 4);
	int want[4] = {STATS_FASTER, STATS_SLOWER, MEASURE_ONLY_BEFORE, MEASURE_ONLY_AFTER};
	for (size_t i = 0; i < n; i++) {
		measure_row_decide(&rows[i]);
		if (rows[i].call != want[i])
			fail_msg("row %zu (%s): %s, wanted %s", i, rows[i].label,
				 measure_row_call_name(rows[i].call),
				 measure_row_call_name(want[i]));
		assert_int_equal(measure_row_has_both(&rows[i]), i < 2);
		if (i < 2)
			assert_true(isfinite(rows[i].d.ratio));
		else
			assert_true(isnan(rows[i].d.ratio));
	}
	assert_string_equal(measure_row_call_key(MEASURE_ONLY_BEFORE), "only_before");
	assert_string_equal(measure_row_call_name(MEASURE_ONLY_AFTER), "only in after");
	for (size_t i = 0; i < n; i++)
		free(rows[i].label);
	free(rows);
	measure_pairing_release(&pr);
	/* paired on nothing but the full key: no pair, every point alone */
	measure_pairing none = {0};
	assert_int_equal(measure_pair_rows(&s[0].pts, &s[1].pts, &none, &rows, &n, &err), 0);
	assert_int_equal(n, 6);
	for (size_t i = 0; i < n; i++)
		free(rows[i].label);
	free(rows);
	/* two points of one side pair with one of the other: refused */
	measure_pairing shape = {.skip = (char *)"shape"};
	assert_int_equal(measure_pair_rows(&s[0].pts, &s[0].pts, &shape, &rows, &n, &err),
			 BG_EUSAGE);
	assert_non_null(strstr(err.msg, "both pair with"));
	for (size_t i = 0; i < n; i++)
		free(rows[i].label);
	free(rows);
	for (int k = 0; k < 2; k++) {
		results_selector_release(&s[k].sel);
		results_points_release(&s[k].pts);
	}
	free(path);
}

/* results show --by point's verdict on a point of records. */
static void point_view(void **state)
{
	(void)state;
	static const struct {
		const char *recs[6];
		const char *verdict;
		bool have_d;
	} cases[] = {
		/* ratios well above the bar */
		{{"{\"verdict\":\"PASS_GATE\",\"point\":{\"shape\":\"a\"},\"result\":{"
		  "\"candidate\":{\"slowCTA_us\":10},\"slowCTA_ratio_base_over_cand\":%s}}",
		  "1.5", "1.51", "1.49", "1.52", "1.5"},
		 "PASS_GATE",
		 true},
		/* well below */
		{{"{\"verdict\":\"BELOW_BAR\",\"point\":{\"shape\":\"a\"},\"result\":{"
		  "\"candidate\":{\"slowCTA_us\":10},\"slowCTA_ratio_base_over_cand\":%s}}",
		  "0.5", "0.51", "0.49", "0.52", "0.5"},
		 "BELOW_BAR",
		 true},
		/* one hang makes the point's verdict */
		{{"{\"verdict\":\"%s\",\"point\":{\"shape\":\"a\"},\"result\":{"
		  "\"candidate\":{\"slowCTA_us\":10},\"slowCTA_ratio_base_over_cand\":1.5}}",
		  "PASS_GATE", "TIMEOUT_HANG", NULL},
		 "TIMEOUT_HANG",
		 false},
		/* a record without a sample */
		{{"{\"verdict\":\"%s\",\"point\":{\"shape\":\"a\"}}", "INVALID", NULL},
		 "INVALID",
		 false},
		/* samples but no ratio */
		{{"{\"verdict\":\"%s\",\"point\":{\"shape\":\"a\"},\"result\":{"
		  "\"candidate\":{\"slowCTA_us\":10}}}",
		  "MEASURED", NULL},
		 "-",
		 false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		results_points ps = RESULTS_POINTS_INIT;
		for (int k = 1; k < 6 && cases[i].recs[k]; k++) {
			char *text = xasprintf(cases[i].recs[0], cases[i].recs[k]);
			cJSON *r = cJSON_Parse(text);
			assert_non_null(r);
			results_points_add(&ps, r);
			cJSON_Delete(r);
			free(text);
		}
		assert_int_equal(ps.n, 1);
		results_point_view v;
		results_point_view_of(&ps.v[0], &v);
		if (strcmp(v.verdict, cases[i].verdict) != 0)
			fail_msg("case %zu: %s, wanted %s", i, v.verdict, cases[i].verdict);
		assert_int_equal(v.have_d, cases[i].have_d);
		assert_true(v.bar > 0);
		if (!v.have_d)
			assert_true(isnan(v.d.estimate));
		results_points_release(&ps);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pairing),
		cmocka_unit_test(read_pair_decide),
		cmocka_unit_test(point_view),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
