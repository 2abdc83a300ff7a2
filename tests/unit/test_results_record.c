/* run --repeat: the record's "repeat" object and the percentage [defaults]
 * max_cv and --max-cv take (conf_parse_percent). A sweep's worker-count list
 * is tests/unit/test_measure_gate_args.c's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
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
		cmocka_unit_test(percent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
