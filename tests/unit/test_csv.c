/* base/csv: fields as RFC 4180 quotes them with formula cells neutralised, and
 * numbers in their shortest exact text (the expected texts are Python's repr). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/csv.h"
#include "unit.h"

static void fields_and_numbers(void **state)
{
	(void)state;
	static const char *const cases[][2] = {
		{"plain", "plain"},
		{"=1+1", "'=1+1"},
		{"+cmd", "'+cmd"},
		{"-2+3", "'-2+3"},
		{"@SUM(A1)", "'@SUM(A1)"},
		{"\tx", "'\tx"},
		{"-10.5", "-10.5"},
		{"+1e3", "+1e3"},
		{"-0x10", "'-0x10"},
		{"=a,b", "\"'=a,b\""},
		{"say \"hi\"", "\"say \"\"hi\"\"\""},
		{"", ""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		strbuf b = STRBUF_INIT;
		bg_csv_field(&b, cases[i][0]);
		if (strcmp(b.buf ? b.buf : "", cases[i][1]) != 0)
			fail_msg("[%s] -> [%s], wanted [%s]", cases[i][0], b.buf, cases[i][1]);
		strbuf_release(&b);
	}
	static const struct {
		double v;
		const char *want;
	} nums[] = {{28709.151, "28709.151"},        {0.1, "0.1"},          {64, "64"},
		    {1.0 / 3, "0.3333333333333333"}, {-2.5e-7, "-2.5e-07"}, {110, "110"},
		    {1.5e14, "150000000000000"},     {2e20, "2e+20"},       {NAN, ""}};
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		char *t = bg_num_text(nums[i].v);
		unit_expect_str(t, nums[i].want, "bg_num_text", nums[i].want);
	}
}

static void big_fields(void **state)
{
	(void)state;
	/* a long field of quotes doubles each one; a field of 1 MiB stays whole */
	size_t n = 1 << 20;
	char *s = malloc(n + 1);
	assert_non_null(s);
	memset(s, '"', n);
	s[n] = '\0';
	strbuf b = STRBUF_INIT;
	bg_csv_field(&b, s);
	assert_int_equal(b.len, 2 * n + 2);
	assert_int_equal(b.buf[0], '"');
	assert_int_equal(b.buf[b.len - 1], '"');
	strbuf_release(&b);
	free(s);
	char *t = bg_num_text(-0.0);
	assert_string_equal(t, "-0");
	free(t);
	t = bg_num_text(INFINITY);
	assert_string_equal(t, "");
	free(t);
	t = bg_num_text(5e-324);
	assert_string_equal(t, "5e-324");
	free(t);
	t = bg_num_text(1.7976931348623157e308);
	assert_string_equal(t, "1.7976931348623157e+308");
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fields_and_numbers),
		cmocka_unit_test(big_fields),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
