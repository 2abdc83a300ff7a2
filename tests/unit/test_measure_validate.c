/* measure/validate: validate's three checks judged on one invocation each:
 * the reference passes with cos >= 0.99 (PASS_GATE, a result of the
 * candidate alone, or BELOW_BAR), the stub is INVALID with cos 0 or no
 * result, the drop-the-feature variant is INVALID with a cos under 0.99;
 * the candidate's cos read only from a parsed line of the gate's own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <string.h>

#include "base/exit.h"
#include "measure/validate.h"

/* A parsed result line of the gate's saying the candidate's cos `json`. */
static gate_result line(const char *json)
{
	gate_result r = {0};
	r.parsed = true;
	r.source = GATE_FROM_GATE;
	r.json = cJSON_Parse(json);
	assert_non_null(r.json);
	return r;
}

static validate_call judge(validate_check which, int code, gate_verdict outv, gate_result *r)
{
	gate_outcome out = {0};
	out.verdict = outv;
	validate_call c;
	measure_validate_judge(which, code, &out, r, "the gate said so", &c);
	return c;
}

static void the_reference(void **state)
{
	(void)state;
	gate_result good = line("{\"candidate\":{\"cos\":0.995}}");
	gate_result low = line("{\"candidate\":{\"cos\":0.98}}");
	validate_call c = judge(VALIDATE_REF, BG_EXIT_OK, VERDICT_PASS_GATE, &good);
	assert_true(c.holds && c.usable);
	assert_int_equal(c.verdict, VERDICT_PASS_GATE);
	assert_string_equal(c.fail, "");
	/* the candidate alone (MEASURED) is a pass here; BELOW_BAR too */
	c = judge(VALIDATE_REF, BG_EXIT_OK, VERDICT_MEASURED, &good);
	assert_true(c.holds);
	assert_int_equal(c.verdict, VERDICT_PASS_GATE);
	c = judge(VALIDATE_REF, BG_EXIT_FAIL, VERDICT_BELOW_BAR, &good);
	assert_true(c.holds);
	assert_int_equal(c.verdict, VERDICT_BELOW_BAR);
	/* a low cos, an INVALID, a failure with no verdict: the check fails, saying why */
	c = judge(VALIDATE_REF, BG_EXIT_OK, VERDICT_PASS_GATE, &low);
	assert_false(c.holds);
	assert_string_equal(c.fail, "the reference must pass with cos >= 0.99, got PASS cos "
				    "0.98000 (the gate said so)");
	c = judge(VALIDATE_REF, BG_EXIT_INVALID, VERDICT_INVALID, &good);
	assert_false(c.holds);
	c = judge(VALIDATE_REF, BG_EXIT_FAIL, VERDICT_NONE, NULL);
	assert_false(c.holds || c.usable);
	assert_int_equal(c.verdict, VERDICT_NONE);
	assert_non_null(strstr(c.fail, "got FAILED without a usable result"));
	cJSON_Delete(good.json);
	cJSON_Delete(low.json);
}

static void the_stub_and_the_drop(void **state)
{
	(void)state;
	gate_result zero = line("{\"candidate\":{\"cos\":0}}");
	gate_result tiny = line("{\"candidate\":{\"cos\":-1e-7}}");
	gate_result half = line("{\"candidate\":{\"cos\":0.5}}");
	gate_result good = line("{\"candidate\":{\"cos\":0.999}}");
	assert_true(judge(VALIDATE_STUB, BG_EXIT_INVALID, VERDICT_INVALID, &zero).holds);
	assert_true(judge(VALIDATE_STUB, BG_EXIT_INVALID, VERDICT_INVALID, &tiny).holds);
	assert_true(judge(VALIDATE_STUB, BG_EXIT_INVALID, VERDICT_INVALID, NULL).holds);
	validate_call c = judge(VALIDATE_STUB, BG_EXIT_INVALID, VERDICT_INVALID, &half);
	assert_false(c.holds);
	assert_string_equal(c.fail, "the stub must be rejected with score 0 (INVALID, cos 0), got "
				    "INVALID cos 0.50000");
	assert_false(judge(VALIDATE_STUB, BG_EXIT_OK, VERDICT_PASS_GATE, &zero).holds);

	assert_true(judge(VALIDATE_DROP, BG_EXIT_INVALID, VERDICT_INVALID, &half).holds);
	assert_false(judge(VALIDATE_DROP, BG_EXIT_INVALID, VERDICT_INVALID, &good).holds);
	c = judge(VALIDATE_DROP, BG_EXIT_INVALID, VERDICT_INVALID, NULL);
	assert_false(c.holds); /* the cos gate must be what rejected it */
	assert_non_null(strstr(c.fail, "got INVALID without a usable result"));
	assert_false(judge(VALIDATE_DROP, BG_EXIT_OK, VERDICT_PASS_GATE, &half).holds);
	cJSON_Delete(zero.json);
	cJSON_Delete(tiny.json);
	cJSON_Delete(half.json);
	cJSON_Delete(good.json);
}

static void a_cos_that_cannot_be_read(void **state)
{
	(void)state;
	static const char *const bad[] = {"{\"candidate\":{\"cos\":1.5}}",
					  "{\"candidate\":{\"cos\":\"0.5\"}}", "{\"candidate\":{}}",
					  "{\"cos\":0.5}", "{\"candidate\":[0.5]}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		gate_result r = line(bad[i]);
		validate_call c = judge(VALIDATE_DROP, BG_EXIT_INVALID, VERDICT_INVALID, &r);
		if (c.usable)
			fail_msg("%s read as cos %g", bad[i], c.cos);
		cJSON_Delete(r.json);
	}
	/* the agent's own line, or a line that did not parse: no cos */
	gate_result r = line("{\"candidate\":{\"cos\":0.5}}");
	r.source = GATE_FROM_AGENT;
	assert_false(judge(VALIDATE_DROP, BG_EXIT_INVALID, VERDICT_INVALID, &r).usable);
	r.source = GATE_FROM_GATE;
	r.parsed = false;
	assert_false(judge(VALIDATE_DROP, BG_EXIT_INVALID, VERDICT_INVALID, &r).usable);
	cJSON_Delete(r.json);
	assert_string_equal(measure_validate_short(VERDICT_PASS_GATE), "PASS");
	assert_string_equal(measure_validate_short(VERDICT_NONE), "FAILED");
	assert_string_equal(measure_validate_short(VERDICT_INVALID), "INVALID");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_reference),
		cmocka_unit_test(the_stub_and_the_drop),
		cmocka_unit_test(a_cos_that_cannot_be_read),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
