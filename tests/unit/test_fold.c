/* cli/fold: box names folded into node sets for summaries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ranges),
		cmocka_unit_test(single_and_mixed),
		cmocka_unit_test(zero_padding_kept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
