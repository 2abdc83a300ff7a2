/* bg_quote: exact output for each byte class, and the real shells (sh,
 * dash, bash) reconstructing random words byte for byte. */
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
#include "tests/capture.h"
#include "tests/splitmix.h"
#include "tests/unit/unit.h"

static char *quoted(const char *w)
{
	strbuf sb = STRBUF_INIT;
	bg_quote(&sb, w);
	return strbuf_detach(&sb);
}

static void expect_quote(const char *w, const char *want)
{
	unit_expect_str(quoted(w), want, "bg_quote", w);
}

static void test_bare_words(void **state)
{
	(void)state;
	expect_quote("abc", "abc");
	expect_quote("--kind", "--kind");
	expect_quote("--shape=q_b", "--shape=q_b");
	expect_quote("scripts/faithful_eval.sh", "scripts/faithful_eval.sh");
	expect_quote("a,b:c@d+e%f", "a,b:c@d+e%f");
	expect_quote("-", "-");
	expect_quote("1.5e-3", "1.5e-3");
	expect_quote("/abs/path-1_2", "/abs/path-1_2");
	expect_quote("9A=b", "9A=b"); /* not a name before `=`: no assignment */
	expect_quote("a-b=c", "a-b=c");
}

static void test_quoted_words(void **state)
{
	(void)state;
	expect_quote("", "''");
	expect_quote("a b", "'a b'");
	expect_quote("it's", "'it'\\''s'");
	expect_quote("'", "''\\'''");
	expect_quote("''", "''\\'''\\'''");
	expect_quote("$HOME", "'$HOME'");
	expect_quote("`id`", "'`id`'");
	expect_quote("$(id)", "'$(id)'");
	expect_quote("a\\b", "'a\\b'");
	expect_quote("\"", "'\"'");
	expect_quote("line1\nline2", "'line1\nline2'");
	expect_quote("tab\there", "'tab\there'");
	expect_quote("!x", "'!x'");
	expect_quote("~", "'~'");
	expect_quote("~root/x", "'~root/x'");
	expect_quote("#comment", "'#comment'");
	expect_quote("a#b", "'a#b'");
	expect_quote("*", "'*'");
	expect_quote("a?", "'a?'");
	expect_quote("[ab]", "'[ab]'");
	expect_quote("{a,b}", "'{a,b}'");
	expect_quote("a;b", "'a;b'");
	expect_quote("a&b|c", "'a&b|c'");
	expect_quote("<x>", "'<x>'");
	expect_quote("(x)", "'(x)'");
	expect_quote("\x80\xff", "'\x80\xff'");
	expect_quote("caf\xc3\xa9", "'caf\xc3\xa9'");
	expect_quote("\x01\x7f", "'\x01\x7f'");
	/* Command-position hazards. */
	expect_quote("NAME=value", "'NAME=value'");
	expect_quote("_x=1", "'_x=1'");
	expect_quote("=x", "'=x'");
	expect_quote("%1", "'%1'");
	expect_quote("if", "'if'");
	expect_quote("time", "'time'");
	expect_quote("coproc", "'coproc'");
	expect_quote("function", "'function'");
}

static void test_quote_argv(void **state)
{
	(void)state;
	const char *argv[] = {"printf", "%s\\0", "a b", "", "x"};
	strbuf sb = STRBUF_INIT;
	bg_quote_argv(&sb, argv, 5);
	assert_string_equal(strbuf_str(&sb), "printf '%s\\0' 'a b' '' x");
	strbuf_release(&sb);
}

static void test_env_names(void **state)
{
	(void)state;
	assert_true(bg_env_name_ok("A"));
	assert_true(bg_env_name_ok("_"));
	assert_true(bg_env_name_ok("MPK_GG_DECODE_M1"));
	assert_true(bg_env_name_ok("a9_"));
	assert_false(bg_env_name_ok(""));
	assert_false(bg_env_name_ok(NULL));
	assert_false(bg_env_name_ok("9A"));
	assert_false(bg_env_name_ok("A-B"));
	assert_false(bg_env_name_ok("A=B"));
	assert_false(bg_env_name_ok("A B"));
	assert_false(bg_env_name_ok("\xc3\xa9"));
}

/* Runs `shell -c cmd` with PATH=path, returns its stdout (owned) and exit status. */
static char *run_shell(const char *shell, const char *cmd, const char *path, size_t *len,
		       int *status)
{
	char *pathenv = xasprintf("PATH=%s", path);
	char *envp[] = {pathenv, "LC_ALL=C.UTF-8", NULL};
	*status = 0;
	char *out = capture_shell(shell, cmd, NULL, envp, len, status);
	free(pathenv);
	assert_non_null(out);
	return out;
}

static const char *const shells[] = {"/bin/sh", "/bin/dash", "/bin/bash"};

static uint64_t rng_state;
static uint64_t rnd(void)
{
	return splitmix64(&rng_state);
}

static char *random_word(void)
{
	static const char special[] = "'\"$`\\\n\t !~#*?[]{}()<>|&;=%^,:@+-./ ";
	size_t len = rnd() % 6 == 0 ? 0 : rnd() % 24;
	char *w = xmalloc(len + 1);
	int mode = (int)(rnd() % 4);
	for (size_t i = 0; i < len; i++) {
		unsigned char c;
		if (mode == 0)
			c = (unsigned char)(1 + rnd() % 255);
		else if (mode == 1)
			c = (unsigned char)special[rnd() % (sizeof(special) - 1)];
		else if (mode == 2)
			c = (unsigned char)(0x80 + rnd() % 128);
		else
			c = (unsigned char)"abcXYZ019_-=./"[rnd() % 14];
		w[i] = (char)c;
	}
	w[len] = '\0';
	return w;
}

/* A few hundred random words per shell, in batches of one printf each. */
static void test_shells_reconstruct(void **state)
{
	(void)state;
	const char *seed_env = getenv("BG_SEED");
	uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : 0x5eed;
	rng_state = seed;
	for (int batch = 0; batch < 6; batch++) {
		size_t n = 64;
		char **words = xcalloc(n, sizeof(*words));
		strbuf cmd = STRBUF_INIT, want = STRBUF_INIT;
		bg_quote(&cmd, "printf");
		strbuf_addch(&cmd, ' ');
		bg_quote(&cmd, "%s\\0");
		for (size_t i = 0; i < n; i++) {
			words[i] = random_word();
			strbuf_addch(&cmd, ' ');
			bg_quote(&cmd, words[i]);
			strbuf_add(&want, words[i], strlen(words[i]) + 1);
		}
		for (size_t s = 0; s < sizeof(shells) / sizeof(shells[0]); s++) {
			size_t len;
			int st;
			char *got = run_shell(shells[s], cmd.buf, "/usr/bin:/bin", &len, &st);
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || len != want.len ||
			    memcmp(got, want.buf, len) != 0)
				fail_msg("%s (seed %#llx, batch %d): got %zu bytes, wanted %zu, "
					 "status %d",
					 shells[s], (unsigned long long)seed, batch, len, want.len,
					 st);
			free(got);
		}
		for (size_t i = 0; i < n; i++)
			free(words[i]);
		free(words);
		strbuf_release(&cmd);
		strbuf_release(&want);
	}
}

/* A quoted word in command position is a command name, never an assignment,
 * a reserved word or a comment: each is run from PATH. (bash takes any
 * command word starting with `%`, quoted or not, for a job spec; that is
 * shim_command_line's business, see test_shim_translate.) */
static void test_command_position(void **state)
{
	(void)state;
	char dir[] = "/tmp/bgshimXXXXXX";
	assert_non_null(mkdtemp(dir));
	const char *names[] = {"if", "time", "coproc", "A=b", "!",    "{",
			       "~",  "#x",   "a b",    "$x",  "it's", "do"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *path = xasprintf("%s/%s", dir, names[i]);
		FILE *f = fopen(path, "w");
		assert_non_null(f);
		fprintf(f, "#!/bin/sh\nprintf 'ran:%%s' \"$1\"\n");
		fclose(f);
		assert_int_equal(chmod(path, 0755), 0);
		strbuf cmd = STRBUF_INIT;
		const char *argv[] = {names[i], "arg"};
		bg_quote_argv(&cmd, argv, 2);
		for (size_t s = 0; s < sizeof(shells) / sizeof(shells[0]); s++) {
			char *p = xasprintf("%s:/usr/bin:/bin", dir);
			size_t len;
			int st;
			char *got = run_shell(shells[s], cmd.buf, p, &len, &st);
			if (len != 7 || memcmp(got, "ran:arg", 7) != 0)
				fail_msg("%s -c [%s]: got [%.*s]", shells[s], cmd.buf, (int)len,
					 got);
			free(got);
			free(p);
		}
		strbuf_release(&cmd);
		unlink(path);
		free(path);
	}
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bare_words),         cmocka_unit_test(test_quoted_words),
		cmocka_unit_test(test_quote_argv),         cmocka_unit_test(test_env_names),
		cmocka_unit_test(test_shells_reconstruct), cmocka_unit_test(test_command_position),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
