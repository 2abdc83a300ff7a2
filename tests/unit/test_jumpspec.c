/* ProxyJump lists as ssh's parse_user_host_port() reads them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "conf/jumpspec.h"

static void expect_hop(const conf_jump_hop *h, const char *user, const char *host, int port)
{
	if (user)
		assert_string_equal(h->user, user);
	else
		assert_null(h->user);
	assert_string_equal(h->host, host);
	assert_int_equal(h->port, port);
}

static void test_forms(void **state)
{
	(void)state;
	conf_jump_hop *v;
	size_t n;
	char why[200];
	assert_int_equal(conf_jumpspec_parse("bastion", &v, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 1);
	expect_hop(&v[0], NULL, "bastion", 0);
	conf_jumpspec_free(v, n);

	assert_int_equal(conf_jumpspec_parse("ops@b1:2222,ssh://root@b2,[fe80::1]:22,x@[::1]", &v,
					     &n, why, sizeof(why)),
			 0);
	assert_int_equal(n, 4);
	expect_hop(&v[0], "ops", "b1", 2222);
	expect_hop(&v[1], "root", "b2", 0);
	expect_hop(&v[2], NULL, "fe80::1", 22);
	expect_hop(&v[3], "x", "::1", 0);
	conf_jumpspec_free(v, n);

	/* the last '@' splits, as ssh's strrchr: a user may hold one */
	assert_int_equal(conf_jumpspec_parse("me@lab@c", &v, &n, why, sizeof(why)), 0);
	expect_hop(&v[0], "me@lab", "c", 0);
	conf_jumpspec_free(v, n);
}

static void test_refused(void **state)
{
	(void)state;
	static const char *const bad[][2] = {
		{"", "an empty hop"},
		{"a,,b", "an empty hop"},
		{"a,", "an empty hop"},
		{"h:0", "port '0' is not 1-65535"},
		{"h:70000", "port '70000' is not 1-65535"},
		{"h:22x", "port '22x'"},
		{"h:", "port ''"},
		{"@h", "an empty user"},
		{"u@", "no host"},
		{"[::1", "unclosed"},
		{"[::1]x", "misplaced"},
		{"h st", "' ' in the host name"},
		{"h/x", "'/' in the host name"},
		{"h'x", "''' in the host name"},
		{"a;b@h", "';' in the user name"},
		{"a b@h", "' ' in the user name"},
		{"-oProxyCommand=x@h", "a user name starting with '-'"},
		{"-oProxyCommand=x", "a host name starting with '-'"},
		{"h#x", "'#' in the host name"},
		{"; me@j1:2222", "';' in the user name"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		conf_jump_hop *v = (void *)1;
		size_t n = 9;
		char why[200] = "";
		assert_int_equal(conf_jumpspec_parse(bad[i][0], &v, &n, why, sizeof(why)), -1);
		assert_null(v);
		assert_int_equal(n, 0);
		if (!strstr(why, bad[i][1]))
			fail_msg("'%s': '%s' does not say '%s'", bad[i][0], why, bad[i][1]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
