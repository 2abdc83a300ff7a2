/* run --repeat and sweeps: the record's "repeat" object, the worker-count
 * list of a sweep (gate_sweep_parse, gate_sweep_args) and the percentage
 * [defaults] max_cv and --max-cv take (conf_parse_percent). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "cli/gate_args.h"
#include "conf/conf.h"
#include "results/record.h"

static cJSON *build(int repeat_i, int repeat_n)
{
	gate_outcome o = {0};
	const char *args[] = {"--num-workers", "8"};
	results_record_in in = {
		.run_id = "0123456789abcdef",
		.seq = 3,
		.version = "0.1.0",
		.box = "b",
		.host = "h",
		.transport = "ssh",
		.command = "agent run -- gate",
		.gate_args = args,
		.n_gate_args = 2,
		.exit_code = BG_EXIT_FAIL,
		.outcome = &o,
		.repeat_i = repeat_i,
		.repeat_n = repeat_n,
	};
	return results_record_build(&in);
}

static void record_repeat(void **state)
{
	(void)state;
	cJSON *rec = build(2, 5);
	const cJSON *rp = cJSON_GetObjectItemCaseSensitive(rec, "repeat");
	assert_true(cJSON_IsObject(rp));
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(rp, "i")->valueint, 2);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(rp, "n")->valueint, 5);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(rec, "seq")->valueint, 3);
	cJSON_Delete(rec);
	rec = build(0, 0);
	assert_null(cJSON_GetObjectItemCaseSensitive(rec, "repeat"));
	cJSON_Delete(rec);
}

static int sweep(const char **words, size_t n, gate_sweep *sw)
{
	cli_args a = {.v = (char **)words, .n = n, .n_before_dash = 0};
	return gate_sweep_parse("run", &a, sw);
}

static void sweep_lists(void **state)
{
	(void)state;
	gate_sweep sw;
	const char *w1[] = {"--kind", "demo", "--num-workers", "8,64,68", "--shape", "q_b"};
	assert_int_equal(sweep(w1, 6, &sw), 0);
	assert_int_equal(sw.n, 3);
	assert_int_equal(sw.counts[0], 8);
	assert_int_equal(sw.counts[2], 68);
	assert_int_equal(sw.at, 3);
	assert_false(sw.equals);
	cli_args a = {.v = (char **)w1, .n = 6}, out;
	char *word;
	gate_sweep_args(&a, &sw, 1, &out, &word);
	assert_int_equal(out.n, 6);
	assert_string_equal(out.v[3], "64");
	assert_string_equal(out.v[2], "--num-workers");
	assert_string_equal(w1[3], "8,64,68"); /* the user's words are left alone */
	free(out.v);
	free(word);

	const char *w2[] = {"--num-workers=4,65536"};
	assert_int_equal(sweep(w2, 1, &sw), 0);
	assert_int_equal(sw.n, 2);
	assert_true(sw.equals);
	a = (cli_args){.v = (char **)w2, .n = 1};
	gate_sweep_args(&a, &sw, 1, &out, &word);
	assert_string_equal(out.v[0], "--num-workers=65536");
	free(out.v);
	free(word);

	const char *w3[] = {"--kind", "demo"};
	assert_int_equal(sweep(w3, 2, &sw), 0);
	assert_int_equal(sw.n, 0);
	const char *w4[] = {"--num-workers", "12"};
	assert_int_equal(sweep(w4, 2, &sw), 0);
	assert_int_equal(sw.n, 1);

	static const char *bad[] = {"8,x", "8,8",   "0",  "",     "8,",
				    ",8",  "65537", "-8", "8 ,9", "1000000"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *w[] = {"--num-workers", bad[i]};
		assert_int_equal(sweep(w, 2, &sw), BG_EXIT_USAGE);
		assert_int_equal(sw.n, 0);
	}
}

static void percent(void **state)
{
	(void)state;
	double x = -1;
	assert_true(conf_parse_percent("2", &x));
	assert_true(x == 2.0);
	assert_true(conf_parse_percent("0.5", &x));
	assert_true(x == 0.5);
	assert_true(conf_parse_percent("0", &x));
	assert_true(conf_parse_percent("1000", &x));
	static const char *bad[] = {"",      "-1",   "2%", "1e1", ".5",  "5.",
				    "1.2.3", "1001", " 2", "nan", "inf", "0x10"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(conf_parse_percent(bad[i], &x));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(record_repeat),
		cmocka_unit_test(sweep_lists),
		cmocka_unit_test(percent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
