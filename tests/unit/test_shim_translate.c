/* shim_translate and shim_command_line against hand-built boxes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "shim/shim.h"
#include "tests/shim_fixture.h"

#define INI "/etc/boxgate/boxgate.ini"

static shim_env_rule rules[] = {
	{"--decode-m1", "MPK_GG_DECODE_M1", "1", INI, 14},
	{"--gate-timeout", "MPK_GATE_TIMEOUT_S", "{}", INI, 15},
	{"--tag", "TAG", "x{}y{}", INI, 16},
	{"--both", "BOTH", "1", INI, 17},
	{"--timeout-alias", "MPK_GATE_TIMEOUT_S", "{}", INI, 18},
	{"--multi", "M_ONE", "a", INI, 19},
	{"--multi", "M_TWO", "{}", INI, 20},
};

static char *allow[] = {"--kind",     "--shape",  "--num-workers", "--configs",
			"--baseline", "--kernel", "--both",        "-v"};

static shim_rules make_box(void)
{
	return SHIM_FIXTURE_BOX("b200-a", "scripts/faithful_eval.sh", INI, 10, allow, rules);
}

/* Translates the arguments in `ap` up to a NULL. */
static int translate_va(const shim_rules *box, shim_result *r, bg_err *err, va_list ap)
{
	const char *args[64];
	size_t n = 0;
	const char *a;
	while ((a = va_arg(ap, const char *)))
		args[n++] = a;
	memset(err, 0, sizeof(*err));
	return shim_translate(box, args, n, r, err);
}

static int tr(const shim_rules *box, shim_result *r, bg_err *err, ...)
{
	va_list ap;
	va_start(ap, err);
	int rc = translate_va(box, r, err, ap);
	va_end(ap);
	return rc;
}

static void expect_argv(const shim_result *r, const char *const *want, size_t n)
{
	if (r->n_argv != n)
		fail_msg("argv has %zu words, wanted %zu", r->n_argv, n);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(r->argv[i], want[i]);
}

static void expect_has(const char *msg, const char *needle)
{
	if (!strstr(msg, needle))
		fail_msg("message [%s] lacks [%s]", msg, needle);
}

/* Translating the arguments (up to a NULL) is refused, saying `why`. */
static void expect_refused(const shim_rules *box, const char *why, ...)
{
	shim_result r;
	bg_err err;
	va_list ap;
	va_start(ap, why);
	int rc = translate_va(box, &r, &err, ap);
	va_end(ap);
	assert_int_equal(rc, BG_EUSAGE);
	expect_has(err.msg, why);
}

static void test_pass_through(void **state)
{
	(void)state;
	shim_rules box = make_box();
	shim_result r;
	bg_err err;
	assert_int_equal(tr(&box, &r, &err, "--kind", "gemv_m1", "--shape", "q_b", "--num-workers",
			    "128", "--configs=q_b", "--baseline", "pos", "-v", NULL),
			 0);
	const char *want[] = {"--kind", "gemv_m1",       "--shape",    "q_b", "--num-workers",
			      "128",    "--configs=q_b", "--baseline", "pos", "-v"};
	expect_argv(&r, want, 10);
	assert_int_equal(r.n_env, 0);
	assert_int_equal(r.n_words, 10);
	assert_int_equal(r.words[0].route, SHIM_PASS);
	assert_int_equal(r.words[1].route, SHIM_VALUE);
	assert_int_equal(r.words[6].route, SHIM_PASS);
	/* An allowed flag of unknown arity takes the next non-flag word along. */
	assert_int_equal(r.words[8].route, SHIM_VALUE);
	assert_string_equal(r.words[8].arg, "pos");
	shim_result_release(&r);
	assert_int_equal(r.n_argv, 0);
	assert_null(r.argv);
}

static void test_positional_and_negative(void **state)
{
	(void)state;
	shim_rules box = make_box();
	shim_result r;
	bg_err err;
	assert_int_equal(tr(&box, &r, &err, "first", "-", "--kernel", "-5", "-.5", NULL), 0);
	const char *want[] = {"first", "-", "--kernel", "-5", "-.5"};
	expect_argv(&r, want, 5);
	assert_int_equal(r.words[0].route, SHIM_PASS);
	assert_int_equal(r.words[1].route, SHIM_PASS);
	assert_int_equal(r.words[3].route, SHIM_VALUE);
	assert_int_equal(r.words[4].route, SHIM_PASS);
	shim_result_release(&r);
}

static void test_env_boolean(void **state)
{
	(void)state;
	shim_rules box = make_box();
	shim_result r;
	bg_err err;
	assert_int_equal(tr(&box, &r, &err, "--kind", "gemv_m1", "--decode-m1", "pos", NULL), 0);
	const char *want[] = {"--kind", "gemv_m1", "pos"};
	expect_argv(&r, want, 3);
	assert_int_equal(r.n_env, 1);
	assert_string_equal(r.env[0], "MPK_GG_DECODE_M1=1");
	assert_int_equal(r.words[2].route, SHIM_ENV);
	assert_string_equal(r.words[2].env, "MPK_GG_DECODE_M1=1");
	assert_ptr_equal(r.words[2].rule, &rules[0]);
	/* A boolean rule does not consume the next word. */
	assert_int_equal(r.words[3].route, SHIM_PASS);
	shim_result_release(&r);

	assert_int_equal(tr(&box, &r, &err, "--decode-m1=0", NULL), BG_EUSAGE);
	expect_has(err.msg, "--decode-m1 takes no value");
	expect_has(err.msg, INI ":14");
	assert_int_equal(r.n_argv, 0);
	assert_int_equal(r.n_env, 0);
}

static void test_env_valued(void **state)
{
	(void)state;
	shim_rules box = make_box();
	shim_result r;
	bg_err err;
	assert_int_equal(tr(&box, &r, &err, "--gate-timeout", "30", "--tag=v w", NULL), 0);
	assert_int_equal(r.n_argv, 0);
	assert_int_equal(r.n_env, 2);
	assert_string_equal(r.env[0], "MPK_GATE_TIMEOUT_S=30");
	assert_string_equal(r.env[1], "TAG=xv wyv w");
	assert_int_equal(r.n_words, 3);
	assert_int_equal(r.words[0].route, SHIM_ENV);
	assert_int_equal(r.words[1].route, SHIM_VALUE);
	assert_ptr_equal(r.words[1].rule, &rules[1]);
	assert_int_equal(r.words[2].route, SHIM_ENV);
	shim_result_release(&r);

	assert_int_equal(tr(&box, &r, &err, "--gate-timeout=", NULL), 0);
	assert_string_equal(r.env[0], "MPK_GATE_TIMEOUT_S=");
	shim_result_release(&r);

	/* A value that starts with `-` only in the = form. */
	assert_int_equal(tr(&box, &r, &err, "--gate-timeout=--x", NULL), 0);
	assert_string_equal(r.env[0], "MPK_GATE_TIMEOUT_S=--x");
	shim_result_release(&r);

	expect_refused(&box, "--gate-timeout needs a value", "--gate-timeout", NULL);
	expect_refused(&box, "--gate-timeout needs a value", "--gate-timeout", "--kind", "x", NULL);

	assert_int_equal(tr(&box, &r, &err, "--multi", "v", NULL), 0);
	assert_int_equal(r.n_env, 2);
	assert_string_equal(r.env[0], "M_ONE=a");
	assert_string_equal(r.env[1], "M_TWO=v");
	shim_result_release(&r);
}

static void test_repeats(void **state)
{
	(void)state;
	shim_rules box = make_box();
	shim_result r;
	bg_err err;
	assert_int_equal(tr(&box, &r, &err, "--decode-m1", "--decode-m1", "--gate-timeout", "5",
			    "--gate-timeout=5", "--timeout-alias", "5", NULL),
			 0);
	assert_int_equal(r.n_env, 2);
	assert_string_equal(r.env[0], "MPK_GG_DECODE_M1=1");
	assert_string_equal(r.env[1], "MPK_GATE_TIMEOUT_S=5");
	assert_int_equal(r.n_words, 7);
	shim_result_release(&r);

	assert_int_equal(tr(&box, &r, &err, "--gate-timeout", "5", "--gate-timeout=6", NULL),
			 BG_EUSAGE);
	expect_has(err.msg, "b200-a");
	expect_has(err.msg, "MPK_GATE_TIMEOUT_S=5");
	expect_has(err.msg, "from --gate-timeout 5");
	expect_has(err.msg, "MPK_GATE_TIMEOUT_S=6");
	expect_has(err.msg, "from --gate-timeout=6");

	expect_refused(&box, "from --timeout-alias 7", "--gate-timeout", "5", "--timeout-alias",
		       "7", NULL);
}

static void test_unknown_flag(void **state)
{
	(void)state;
	shim_rules box = make_box();
	shim_result r;
	bg_err err;
	assert_int_equal(tr(&box, &r, &err, "--kind", "x", "--frobnicate", "1", NULL), BG_EUSAGE);
	expect_has(err.msg, "box b200-a: flag --frobnicate is not in the allowlist of "
			    "scripts/faithful_eval.sh (" INI ":10)");
	expect_has(err.msg, "env --frobnicate = FROBNICATE=1");
	expect_has(err.msg, "under [box b200-a] in " INI);
	/* No `allow =` line known: where one would go. */
	expect_has(err.msg, "if the gate takes it, add  allow = --frobnicate  under [box b200-a]");
	assert_null(strstr(err.msg, "did you mean"));
	assert_int_equal(r.n_argv, 0);
	assert_null(r.words);

	/* With the line of `allow =`: the file and that line. */
	box.allow_line = 14;
	assert_int_equal(tr(&box, &r, &err, "--frobnicate", NULL), BG_EUSAGE);
	expect_has(err.msg, "if the gate takes it, add it to  allow =  at " INI ":14");
	box.allow_line = 0;

	assert_int_equal(tr(&box, &r, &err, "--num-worker", "128", NULL), BG_EUSAGE);
	expect_has(err.msg, "flag --num-worker is not");
	expect_has(err.msg, "did you mean --num-workers?");

	expect_refused(&box, "did you mean --decode-m1?", "--decode-m2", NULL);

	/* The flag name is the part before `=`. */
	assert_int_equal(tr(&box, &r, &err, "--shap=q_b", NULL), BG_EUSAGE);
	expect_has(err.msg, "flag --shap is not");
	expect_has(err.msg, "did you mean --shape?");

	shim_rules local = make_box();
	local.name = "local";
	local.builtin = true;
	local.file = "(built-in)";
	local.line = 0;
	local.gate = NULL;
	assert_int_equal(tr(&local, &r, &err, "--zz", NULL), BG_EUSAGE);
	expect_has(err.msg, "box local: flag --zz");
	expect_has(err.msg, "gate (built in)");
	assert_null(strstr(err.msg, "((built-in))"));
	expect_has(err.msg, "[box local]");
}

static void test_allow_wins(void **state)
{
	(void)state;
	shim_rules box = make_box();
	shim_result r;
	bg_err err;
	assert_int_equal(tr(&box, &r, &err, "--both", NULL), 0);
	assert_int_equal(r.n_env, 0);
	assert_int_equal(r.n_argv, 1);
	assert_int_equal(r.words[0].route, SHIM_PASS);
	shim_result_release(&r);
}

static void test_end_of_flags(void **state)
{
	(void)state;
	shim_rules box = make_box();
	shim_result r;
	bg_err err;
	assert_int_equal(tr(&box, &r, &err, "--kind", "x", "--", "--frob", "--decode-m1",
			    "--configs", "other", "--", NULL),
			 0);
	const char *want[] = {"--kind",      "x",         "--",    "--frob",
			      "--decode-m1", "--configs", "other", "--"};
	expect_argv(&r, want, 8);
	assert_int_equal(r.n_env, 0);
	for (size_t i = 2; i < r.n_words; i++)
		assert_int_equal(r.words[i].route, SHIM_PASS);
	shim_result_release(&r);
}

static void test_shape_policy(void **state)
{
	(void)state;
	shim_rules box = make_box();
	shim_result r;
	bg_err err;
	assert_int_equal(tr(&box, &r, &err, "--shape", "q_b", "--configs", "q_b", NULL), 0);
	shim_result_release(&r);
	assert_int_equal(tr(&box, &r, &err, "--configs=q_b", "--shape=q_b", NULL), 0);
	shim_result_release(&r);
	assert_int_equal(tr(&box, &r, &err, "--shape", "q_b", NULL), 0);
	shim_result_release(&r);

	assert_int_equal(tr(&box, &r, &err, "--shape", "q_b", "--configs", "kv_b", NULL),
			 BG_EUSAGE);
	expect_has(err.msg, "--configs kv_b does not match --shape q_b");
	expect_has(err.msg, "one shape per invocation");
	expect_refused(&box, "one shape per invocation", "--shape", "q_b", "--configs", "q_b,kv_b",
		       NULL);
	expect_refused(&box, "without --shape", "--configs", "q_b", NULL);
	expect_refused(&box, "--shape given twice", "--shape", "q_b", "--shape", "kv_b", NULL);
	expect_refused(&box, "--shape needs a value", "--shape", NULL);
	assert_int_equal(tr(&box, &r, &err, "--shape=", NULL), BG_EUSAGE);
	expect_has(err.msg, "non-empty");
	assert_null(r.argv);
}

static void test_num_workers(void **state)
{
	(void)state;
	shim_rules box = make_box();
	box.num_workers_env = "MPK_TEST_NUM_WORKERS";
	shim_result r;
	bg_err err;
	assert_int_equal(tr(&box, &r, &err, "--num-workers", "128", "--decode-m1", NULL), 0);
	const char *want[] = {"--num-workers", "128"};
	expect_argv(&r, want, 2);
	assert_int_equal(r.n_env, 2);
	assert_string_equal(r.env[0], "MPK_TEST_NUM_WORKERS=128");
	assert_int_equal(r.words[0].route, SHIM_PASS);
	assert_string_equal(r.words[0].env, "MPK_TEST_NUM_WORKERS=128");
	shim_result_release(&r);

	/* Not allowed, but the box exports it: env only. */
	box.n_allow = 2; /* --kind, --shape */
	assert_int_equal(tr(&box, &r, &err, "--num-workers=64", NULL), 0);
	assert_int_equal(r.n_argv, 0);
	assert_int_equal(r.n_env, 1);
	assert_string_equal(r.env[0], "MPK_TEST_NUM_WORKERS=64");
	assert_int_equal(r.words[0].route, SHIM_ENV);
	shim_result_release(&r);

	/* Neither allowed nor exported: an unknown flag. */
	box.num_workers_env = NULL;
	expect_refused(&box, "flag --num-workers is not in the allowlist", "--num-workers", "64",
		       NULL);

	box = make_box();
	const char *bad[] = {"0", "-3", "abc", "12x", "+5", "99999999999", ""};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *args[] = {"--num-workers", bad[i]};
		assert_int_equal(shim_translate(&box, args, 2, &r, &err), BG_EUSAGE);
		char *eqform = xasprintf("--num-workers=%s", bad[i]);
		assert_int_equal(shim_translate(&box, (const char *const *)&eqform, 1, &r, &err),
				 BG_EUSAGE);
		free(eqform);
	}
	expect_refused(&box, "given twice", "--num-workers", "64", "--num-workers", "128", NULL);
}

static void test_bad_env_names(void **state)
{
	(void)state;
	shim_rules box = make_box();
	shim_env_rule bad[] = {{"--x", "1BAD", "1", INI, 30}};
	box.env = bad;
	box.n_env = 1;
	shim_result r;
	bg_err err;
	assert_int_equal(tr(&box, &r, &err, "--kind", "k", NULL), BG_ECONFIG);
	expect_has(err.msg, INI ":30");
	expect_has(err.msg, "1BAD");

	box = make_box();
	box.num_workers_env = "MPK-NW";
	assert_int_equal(tr(&box, &r, &err, "--kind", "k", NULL), BG_ECONFIG);
	expect_has(err.msg, "MPK-NW");

	/* shim_command_line refuses a bad name it is handed. */
	char *env[] = {"A B=1"};
	shim_result hand = {.env = env, .n_env = 1};
	assert_null(shim_command_line(&hand, "gate"));
	char *env2[] = {"NOEQUALS"};
	hand.env = env2;
	assert_null(shim_command_line(&hand, "gate"));
}

static void test_command_line(void **state)
{
	(void)state;
	shim_rules box = make_box();
	shim_result r;
	bg_err err;
	assert_int_equal(tr(&box, &r, &err, "--kind", "gemv_m1", "--shape", "q_b", "--kernel",
			    "my cand.cuh", NULL),
			 0);
	char *cmd = shim_command_line(&r, "scripts/faithful_eval.sh");
	assert_string_equal(cmd, "scripts/faithful_eval.sh --kind gemv_m1 --shape q_b --kernel "
				 "'my cand.cuh'");
	free(cmd);
	shim_result_release(&r);

	assert_int_equal(tr(&box, &r, &err, "--decode-m1", "--gate-timeout", "it's", "--kind",
			    "gemv_m1", NULL),
			 0);
	cmd = shim_command_line(&r, "scripts/faithful_eval.sh");
	assert_string_equal(cmd, "env 'MPK_GG_DECODE_M1=1' 'MPK_GATE_TIMEOUT_S=it'\\''s' "
				 "scripts/faithful_eval.sh --kind gemv_m1");
	free(cmd);
	const char *entry[] = {"python3", "scripts/faithful eval.py"};
	cmd = shim_command_line_argv(&r, entry, 2);
	assert_string_equal(cmd, "env 'MPK_GG_DECODE_M1=1' 'MPK_GATE_TIMEOUT_S=it'\\''s' "
				 "python3 'scripts/faithful eval.py' --kind gemv_m1");
	free(cmd);
	/* env(1) would take an entry with `=` for an assignment. */
	assert_null(shim_command_line(&r, "./a=b.sh"));
	assert_null(shim_command_line(&r, ""));
	shim_result_release(&r);

	shim_result none = {0};
	cmd = shim_command_line(&none, "%gate");
	assert_string_equal(cmd, "env '%gate'");
	free(cmd);
	cmd = shim_command_line(&none, "./a=b.sh");
	assert_string_equal(cmd, "./a=b.sh");
	free(cmd);
}

/* The command line, run by bash, really runs an entry called `%gate` with the
 * environment and arguments. */
static void test_command_line_runs(void **state)
{
	(void)state;
	char dir[] = "/tmp/bgshimXXXXXX";
	assert_non_null(mkdtemp(dir));
	char *path = xasprintf("%s/%%gate", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\nprintf '%%s|' \"$MPK_GATE_TIMEOUT_S\" \"$@\"\n");
	fclose(f);
	assert_int_equal(chmod(path, 0755), 0);
	shim_rules box = make_box();
	shim_result r;
	bg_err err;
	const char *shells[] = {"/bin/sh", "/bin/dash", "/bin/bash"};
	for (int with_env = 0; with_env < 2; with_env++) {
		if (with_env)
			assert_int_equal(
				tr(&box, &r, &err, "--gate-timeout", "$x `y`", "a'b", NULL), 0);
		else
			assert_int_equal(tr(&box, &r, &err, "a'b", NULL), 0);
		/* Found through PATH: bash alone would run `fg` for it. */
		char *cmd = shim_command_line(&r, "%gate");
		char *pathenv = xasprintf("PATH=%s:/usr/bin:/bin", dir);
		for (size_t s = 0; s < 3; s++) {
			int fds[2];
			assert_int_equal(pipe(fds), 0);
			pid_t pid = fork();
			if (pid == 0) {
				dup2(fds[1], 1);
				close(fds[0]);
				close(fds[1]);
				char *envp[] = {pathenv, NULL};
				char *argv[] = {(char *)shells[s], "-c", cmd, NULL};
				execve(shells[s], argv, envp);
				_exit(126);
			}
			close(fds[1]);
			char buf[256];
			size_t len = 0;
			ssize_t n;
			while ((n = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0)
				len += (size_t)n;
			buf[len] = '\0';
			close(fds[0]);
			waitpid(pid, NULL, 0);
			assert_string_equal(buf, with_env ? "$x `y`|a'b|" : "|a'b|");
		}
		free(pathenv);
		free(cmd);
		shim_result_release(&r);
	}
	unlink(path);
	free(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pass_through),
		cmocka_unit_test(test_positional_and_negative),
		cmocka_unit_test(test_env_boolean),
		cmocka_unit_test(test_env_valued),
		cmocka_unit_test(test_repeats),
		cmocka_unit_test(test_unknown_flag),
		cmocka_unit_test(test_allow_wins),
		cmocka_unit_test(test_end_of_flags),
		cmocka_unit_test(test_shape_policy),
		cmocka_unit_test(test_num_workers),
		cmocka_unit_test(test_bad_env_names),
		cmocka_unit_test(test_command_line),
		cmocka_unit_test(test_command_line_runs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
