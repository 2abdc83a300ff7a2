/* conf/nodeset: ClusterShell-style node set expansion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "conf/nodeset.h"

/* Expands and joins with blanks, for compact comparisons. */
static char *expand_joined(const char *spec)
{
	char **v;
	size_t n;
	bg_err e = {0};
	int rc = nodeset_expand(spec, &v, &n, &e);
	if (rc)
		print_error("%s: %s\n", spec, e.msg);
	assert_int_equal(rc, 0);
	strbuf sb = STRBUF_INIT;
	for (size_t i = 0; i < n; i++)
		strbuf_addf(&sb, "%s%s", i ? " " : "", v[i]);
	nodeset_free(v, n);
	return strbuf_detach(&sb);
}

static void check(const char *spec, const char *want)
{
	char *got = expand_joined(spec);
	assert_string_equal(got, want);
	free(got);
}

static void check_error(const char *spec, const char *want)
{
	char **v = (char **)1;
	size_t n = 7;
	bg_err e = {0};
	assert_int_equal(nodeset_expand(spec, &v, &n, &e), BG_EUSAGE);
	assert_string_equal(e.msg, want);
	assert_null(v);
	assert_int_equal(n, 0);
}

static void test_plain(void **state)
{
	(void)state;
	check("a", "a");
	check("a,b , c", "a b c");
	check("", "");
	check(" , ,", "");
	check("b200-a", "b200-a");
}

static void test_ranges(void **state)
{
	(void)state;
	check("b200-[1-8,12]", "b200-1 b200-2 b200-3 b200-4 b200-5 b200-6 b200-7 b200-8 b200-12");
	check("h[01-03]", "h01 h02 h03");
	check("h[8-10]", "h8 h9 h10");
	check("h[08-10]", "h08 h09 h10");
	check("h[001-002,5]", "h001 h002 h5");
	check("n[1-9/4]", "n1 n5 n9");
	check("[1-2]x", "1x 2x");
	check("h[ 1 - 2 , 4 ]", "h1 h2 h4");
	check("h[3]", "h3");
	check("r[1-2]n[1-2]", "r1n1 r1n2 r2n1 r2n2");
	check("r[1-2]-s[01-02].lab", "r1-s01.lab r1-s02.lab r2-s01.lab r2-s02.lab");
	check("a,h[1-2,4],b", "a h1 h2 h4 b");
	check("h[2,1,2]", "h2 h1 h2"); /* order and duplicates kept */
}

/* clush's operators, left to right with equal precedence. The expected sets
 * are what ClusterShell 1.9's `nodeset -e` prints for the same spec (it
 * sorts; boxgate keeps the order of appearance). */
static void test_operators(void **state)
{
	(void)state;
	check("h[1-8]!h3", "h1 h2 h4 h5 h6 h7 h8");
	check("h[1-8]!h[2-3],x1", "h1 h4 h5 h6 h7 h8 x1");
	check("h[1-3],x1!h2", "h1 h3 x1");
	check("h[1-4]!h2!h3", "h1 h4");
	check("h1!h9", "h1"); /* removing what is not there removes nothing */
	check("h[1-4]!h[2-3]&h4", "h4");
	check("h[1-4]&h[2-6]", "h2 h3 h4");
	check("h[1-4]^h[3-6]", "h1 h2 h5 h6");
	check("h[1-4]!h2,h5!h5", "h1 h3 h4");
	check("h[01-04]!h2", "h01 h02 h03 h04"); /* names, not numbers */
	check("h[1-3]! h2", "h1 h3");
	check("h1,h1,h2!h1", "h2"); /* '!' removes every copy */
	check("r[1-2]n[1-2]!r1n2", "r1n1 r2n1 r2n2");
	check("h[1-65536]!h[1-65535]", "h65536");
}

static void test_terms(void **state)
{
	(void)state;
	nodeset_term *t;
	size_t n;
	bg_err e = {0};
	assert_int_equal(nodeset_terms(" h[1-2,4]!h2 ,, x&@p^y", &t, &n, &e), 0);
	assert_int_equal(n, 5);
	assert_int_equal(t[0].op, NODESET_UNION);
	assert_string_equal(t[0].text, "h[1-2,4]");
	assert_int_equal(t[1].op, NODESET_MINUS);
	assert_string_equal(t[1].text, "h2");
	assert_int_equal(t[2].op, NODESET_UNION);
	assert_string_equal(t[2].text, "x");
	assert_int_equal(t[3].op, NODESET_AND);
	assert_string_equal(t[3].text, "@p");
	assert_int_equal(t[4].op, NODESET_XOR);
	nodeset_terms_free(t, n);
}

static void test_split(void **state)
{
	(void)state;
	char **v;
	size_t n;
	nodeset_split(" a[1,2] , b,,c[3-4,5]x ", &v, &n);
	assert_int_equal(n, 3);
	assert_string_equal(v[0], "a[1,2]");
	assert_string_equal(v[1], "b");
	assert_string_equal(v[2], "c[3-4,5]x");
	nodeset_free(v, n);
}

static void test_errors(void **state)
{
	(void)state;
	check_error("h[1-", "'h[1-': '[' without ']'");
	check_error("h1]", "'h1]': ']' without '['");
	check_error("h[[1]]", "'h[[1]]': '[' without ']'");
	check_error("h[]", "expected a number in '[]'");
	check_error("h[a-b]", "expected a number in '[a-b]'");
	check_error("h[3-1]", "range 3-1 goes backwards in '[3-1]'");
	check_error("h[1-]", "expected a number after '-' in '[1-]'");
	check_error("h[1-4/0]", "bad step in '[1-4/0]'");
	check_error("h[1;2]", "unexpected ';' in '[1;2]'");
	check_error("ok,h[1-", "'h[1-': '[' without ']'");
	check_error("h[0-99999999]", "'[0-99999999]' expands to more than 65536 names");
	check_error("a[0-999]b[0-999]", "'a[0-999]b[0-999]' expands to more than 65536 names");
	check_error("h[9999999999]", "expected a number in '[9999999999]'");
	/* clush refuses these too ("missing nodeset operand"). */
	check_error("!h2", "'!' needs a node set before it in '!h2'");
	check_error("h[1-4]!", "'!' needs a node set after it in 'h[1-4]!'");
	check_error("h1!!h2", "'!' needs a node set after it in 'h1!!h2'");
	check_error("h[1-4],!h2", "'!' needs a node set before it in 'h[1-4],!h2'");
	check_error("h1&", "'&' needs a node set after it in 'h1&'");
	check_error("h[1-4]!h[5-", "'h[5-': '[' without ']'");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),     cmocka_unit_test(test_ranges),
		cmocka_unit_test(test_operators), cmocka_unit_test(test_terms),
		cmocka_unit_test(test_split),     cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests_name("nodeset", tests, NULL, NULL);
}
