/* cli/fold: box names folded into node sets for summaries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "cli/cli.h"

static void fold(const char *const *names, size_t n, const char *want)
{
	char *got = cli_fold_names(names, n);
	assert_string_equal(got, want);
	free(got);
}

static void ranges(void **state)
{
	(void)state;
	const char *n[] = {"h3", "h1", "h2", "h5", "h10"};
	fold(n, 5, "h[1-3,5,10]");
}

static void single_and_mixed(void **state)
{
	(void)state;
	const char *a[] = {"local"};
	fold(a, 1, "local");
	const char *b[] = {"b200-a", "h1", "h2", "gpu"};
	fold(b, 4, "b200-a,gpu,h[1-2]");
}

static void zero_padding_kept(void **state)
{
	(void)state;
	const char *n[] = {"n01", "n02", "n03"};
	fold(n, 3, "n[01-03]");
}

static int by_name(const void *a, const void *b)
{
	return cli_box_name_cmp(*(const char *const *)a, *(const char *const *)b);
}

/* The order -b groups and summaries print in: as node sets read. */
static void name_order(void **state)
{
	(void)state;
	const char *n[] = {"h10", "local", "h2", "b200-12", "h1", "b200-3", "n01", "h", "n1"};
	const char *want[] = {"b200-3", "b200-12", "h", "h1", "h2", "h10", "local", "n1", "n01"};
	qsort(n, 9, sizeof(*n), by_name);
	for (size_t i = 0; i < 9; i++)
		assert_string_equal(n[i], want[i]);
	assert_true(cli_box_name_cmp("h2", "h10") < 0);
	assert_true(cli_box_name_cmp("h10", "h2") > 0);
	assert_int_equal(cli_box_name_cmp("h2", "h2"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ranges),
		cmocka_unit_test(single_and_mixed),
		cmocka_unit_test(zero_padding_kept),
		cmocka_unit_test(name_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
