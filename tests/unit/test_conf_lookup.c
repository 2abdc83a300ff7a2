/* conf/lookup: what commands take from the configuration beyond a box: the
 * verifier of a file and whether its rule is the built-in one, the built-in
 * local box's interpreter, and the results file in its order (--results, the
 * configuration's, $XDG_DATA_HOME's when absolute, $HOME's, else none). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "conf/conf.h"
#include "unit.h"
#include "unit_conf.h"

UNIT_CONF_GROUP("conf-lookup")

static const char ini[] = "[box g1]\nhost = 127.0.0.1\nrepo = /r\npython = /opt/py3\n"
			  "[verify]\n.py = mycheck {}\nsrc/x.sh =\n";

static void verifier(void **state)
{
	(void)state;
	conf c;
	unit_conf_load(&c, ini);
	bool builtin = true;
	/* the file's rule wins over the built-in one of the same extension */
	assert_string_equal(conf_verifier_for(&c, "a/b.py", &builtin), "mycheck {}");
	assert_false(builtin);
	assert_string_equal(conf_verifier_for(&c, "./b.py", &builtin), "mycheck {}");
	assert_false(builtin);
	/* no rule of the file: the built-in one */
	assert_string_equal(conf_verifier_for(&c, "run.sh", &builtin), "bash -n {}");
	assert_true(builtin);
	assert_non_null(conf_verifier_for(&c, "deep/er/x.json", &builtin));
	assert_true(builtin);
	/* an empty path rule: no verifier for that file, builtin false */
	builtin = true;
	assert_null(conf_verifier_for(&c, "src/x.sh", &builtin));
	assert_false(builtin);
	builtin = true;
	assert_null(conf_verifier_for(&c, "kernel.cu", &builtin));
	assert_false(builtin);
	assert_null(conf_verifier_for(&c, "", &builtin));
	assert_null(conf_verifier_for(&c, "py", &builtin));
	/* the built-in local box's interpreter, not another box's */
	assert_string_equal(conf_local_python(&c), "python3");
	conf_release(&c);
}

static void local_python(void **state)
{
	(void)state;
	conf c;
	memset(&c, 0, sizeof(c));
	assert_string_equal(conf_local_python(&c), "python3");
	conf_box boxes[2];
	memset(boxes, 0, sizeof(boxes));
	boxes[0].python = "/opt/other";
	boxes[1].builtin = true;
	boxes[1].python = "/usr/bin/python3.12";
	c.boxes = boxes;
	c.n_boxes = 2;
	assert_string_equal(conf_local_python(&c), "/usr/bin/python3.12");
	boxes[1].python = NULL;
	assert_string_equal(conf_local_python(&c), "python3");
}

static void expect_path(const conf *c, const char *given, const char *xdg, const char *h,
			const char *want)
{
	bg_err err = {0};
	char *p = conf_results_path(c, given, xdg, h, &err);
	if (!want) {
		assert_null(p);
		assert_int_equal(err.code, BG_EUSAGE);
		assert_non_null(strstr(err.msg, "HOME is not set (give --results FILE)"));
		return;
	}
	assert_non_null(p);
	assert_string_equal(p, want);
	free(p);
}

static void results_path(void **state)
{
	(void)state;
	conf c;
	memset(&c, 0, sizeof(c));
	expect_path(NULL, "given.jsonl", NULL, NULL, "given.jsonl");
	expect_path(&c, "", "/x", "/h", "");
	expect_path(&c, NULL, "/x", "/h", "/x/boxgate/results.jsonl");
	/* a relative $XDG_DATA_HOME is invalid and ignored */
	expect_path(&c, NULL, "rel/x", "/h", "/h/.local/share/boxgate/results.jsonl");
	expect_path(&c, NULL, "", "/h", "/h/.local/share/boxgate/results.jsonl");
	expect_path(NULL, NULL, NULL, "/h", "/h/.local/share/boxgate/results.jsonl");
	expect_path(&c, NULL, NULL, "", NULL);
	expect_path(&c, NULL, "rel", NULL, NULL);
	expect_path(NULL, NULL, NULL, NULL, NULL);
	/* the configuration's results wins over the environment */
	c.results = "/conf/r.jsonl";
	expect_path(&c, NULL, "/x", "/h", "/conf/r.jsonl");
	expect_path(&c, "g", "/x", "/h", "g");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(verifier),
		cmocka_unit_test(local_python),
		cmocka_unit_test(results_path),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
