/* gate/result: the FAITHFUL_RESULT contract and boxgate's own verdict. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "gate/result.h"

#define SIDE(slow, wall, sum, cos) \
	"{\"slowCTA_us\":" #slow ",\"wall_us\":" #wall ",\"sumCTA_us\":" #sum ",\"cos\":" #cos ",\"status\":\"PASS\"}"

static gate_verdict judge(const char *line, gate_result *r)
{
	gate_result_parse(r, line, strlen(line), NULL);
	return r->verdict;
}

static void pass_gate(void **state)
{
	(void)state;
	gate_result r;
	const char *l = "FAITHFUL_RESULT {\"kind\":\"gemv_m1\",\"shape\":\"q_b\",\"candidate\":" SIDE(4.1, 5.0, 410.2, 0.9999)
			",\"baseline_in_tree\":" SIDE(5.2, 6.1, 402.0, 1.0)
			",\"slowCTA_ratio_base_over_cand\":1.27,\"verdict\":\"PASS_GATE\"}";
	assert_true(gate_is_result_line(l, strlen(l)));
	assert_int_equal(judge(l, &r), VERDICT_PASS_GATE);
	assert_false(r.disagrees);
	assert_true(r.parsed);
	gate_result_release(&r);
}

static void below_bar(void **state)
{
	(void)state;
	gate_result r;
	const char *l = "FAITHFUL_RESULT {\"candidate\":" SIDE(6.0, 7.0, 400, 0.9999) ",\"baseline_in_tree\":" SIDE(5.2, 6.1, 402.0, 1.0)
			",\"slowCTA_ratio_base_over_cand\":0.8667,\"verdict\":\"BELOW_BAR\"}";
	assert_int_equal(judge(l, &r), VERDICT_BELOW_BAR);
	assert_non_null(strstr(r.problems, "below the bar"));
	gate_result_release(&r);
}

static void bad_cos_is_invalid(void **state)
{
	(void)state;
	gate_result r;
	const char *l = "FAITHFUL_RESULT {\"candidate\":" SIDE(1.0, 2.0, 100, 0.0) ",\"baseline_in_tree\":" SIDE(5.2, 6.1, 402.0, 1.0)
			",\"verdict\":\"INVALID\"}";
	assert_int_equal(judge(l, &r), VERDICT_INVALID);
	gate_result_release(&r);
	/* The same numbers claimed as a pass: disagreement, INVALID. */
	l = "FAITHFUL_RESULT {\"candidate\":" SIDE(1.0, 2.0, 100, 0.5) ",\"baseline_in_tree\":" SIDE(5.2, 6.1, 402.0, 1.0)
	    ",\"verdict\":\"PASS_GATE\"}";
	assert_int_equal(judge(l, &r), VERDICT_INVALID);
	assert_true(r.disagrees);
	assert_non_null(strstr(r.problems, "cos"));
	gate_result_release(&r);
}

static void sloughing_rejected(void **state)
{
	(void)state;
	gate_result r;
	/* slowCTA halves but total CTA time doubles: the work was only spread. */
	const char *l = "FAITHFUL_RESULT {\"candidate\":" SIDE(2.6, 3.0, 804, 0.9999) ",\"baseline_in_tree\":" SIDE(5.2, 6.1, 402.0, 1.0)
			",\"verdict\":\"PASS_GATE\"}";
	assert_int_equal(judge(l, &r), VERDICT_INVALID);
	assert_non_null(strstr(r.problems, "sumCTA rose"));
	gate_result_release(&r);
}

static void stated_ratio_checked(void **state)
{
	(void)state;
	gate_result r;
	const char *l = "FAITHFUL_RESULT {\"candidate\":" SIDE(4.0, 5.0, 400, 0.9999) ",\"baseline_in_tree\":" SIDE(5.2, 6.1, 402.0, 1.0)
			",\"slowCTA_ratio_base_over_cand\":2.5,\"verdict\":\"PASS_GATE\"}";
	assert_int_equal(judge(l, &r), VERDICT_INVALID);
	assert_non_null(strstr(r.problems, "stated slowCTA ratio"));
	gate_result_release(&r);
}

static void stated_bar_used(void **state)
{
	(void)state;
	gate_result r;
	/* ratio 1.1 against the gate's own bar 1.2: BELOW_BAR, agreeing with the gate. */
	const char *l = "FAITHFUL_RESULT {\"bar\":1.2,\"candidate\":" SIDE(5.0, 6.0, 400, 0.9999) ",\"baseline_in_tree\":" SIDE(5.5, 6.1, 402.0, 1.0)
			",\"verdict\":\"BELOW_BAR\"}";
	assert_int_equal(judge(l, &r), VERDICT_BELOW_BAR);
	assert_false(r.disagrees);
	gate_result_release(&r);
}

static void garbage_kept_verbatim(void **state)
{
	(void)state;
	const char *bad[] = {
		"FAITHFUL_RESULT {not json",
		"FAITHFUL_RESULT []",
		"FAITHFUL_RESULT {\"verdict\":\"PASS_GATE\"}",
		"FAITHFUL_RESULT {\"verdict\":\"PASS_GATE\",\"candidate\":{\"slowCTA_us\":\"fast\"}}",
		"FAITHFUL_RESULT {\"verdict\":\"WHATEVER\",\"candidate\":" SIDE(1, 2, 3, 1) "}",
		"FAITHFUL_RESULT {\"verdict\":\"PASS_GATE\",\"candidate\":" SIDE(9, 2, 3, 1) "}",
		"FAITHFUL_RESULT {\"verdict\":\"PASS_GATE\",\"candidate\":" SIDE(-1, 2, 3, 1) "}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		gate_result r;
		assert_int_equal(judge(bad[i], &r), VERDICT_INVALID);
		assert_string_equal(r.raw, bad[i]);
		assert_true(strlen(r.problems) > 0);
		gate_result_release(&r);
	}
	gate_result r;
	const char nul[] = "FAITHFUL_RESULT {\"a\":1}\0tail";
	gate_result_parse(&r, nul, sizeof(nul) - 1, NULL);
	assert_int_equal(r.verdict, VERDICT_INVALID);
	gate_result_release(&r);
}

static void agent_lines(void **state)
{
	(void)state;
	gate_result r;
	const char *l = "FAITHFUL_RESULT {\"verdict\":\"TIMEOUT_HANG\",\"timeout_s\":2,\"killed\":3,\"gpu_freed\":null}";
	assert_int_equal(judge(l, &r), VERDICT_TIMEOUT_HANG);
	assert_int_equal(gate_verdict_exit_code(r.verdict), 124);
	gate_result_release(&r);
	l = "FAITHFUL_RESULT {\"verdict\":\"INVALID\",\"reason\":\"gpu_busy\",\"gpu\":0,\"pid\":42,\"process\":\"python3\"}";
	assert_int_equal(judge(l, &r), VERDICT_INVALID);
	assert_non_null(strstr(r.problems, "gpu_busy"));
	assert_int_equal(gate_verdict_exit_code(r.verdict), 125);
	gate_result_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pass_gate),          cmocka_unit_test(below_bar),
		cmocka_unit_test(bad_cos_is_invalid), cmocka_unit_test(sloughing_rejected),
		cmocka_unit_test(stated_ratio_checked), cmocka_unit_test(stated_bar_used),
		cmocka_unit_test(garbage_kept_verbatim), cmocka_unit_test(agent_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
