/* libFuzzer target for shim/: the input, split on NUL, is an argument vector.
 *
 * Invariants checked:
 *   - bg_quote_argv output parses back (with the few rules a POSIX shell
 *     applies to it: blanks between words, '...' literal, \' a quote, bare
 *     bytes) to exactly the input words, and every byte outside quotes is a
 *     bare-safe byte: no metacharacter, blank, glob, `~`, `#`, `$` or
 *     non-ASCII byte is ever left unquoted;
 *   - a bare word is never an assignment, a reserved word or a job spec;
 *   - shim_translate never crashes, returns 0 or BG_EUSAGE with a message,
 *     accounts for every argument in `words`, keeps argv a subsequence of the
 *     input, and emits only valid env names; on failure the result is empty;
 *   - the command line of a translation parses back to `env`, the
 *     assignments, the entry and argv.
 *
 * Build and run (coverage of shim/ and base/, sanitizers on):
 *   clang -g -O1 -std=c11 -D_GNU_SOURCE -I. -fsanitize=fuzzer,address,undefined \
 *     tests/fuzz/fuzz_shim.c shim/quote.c shim/translate.c base/strbuf.c base/xmalloc.c
 * base/error.c \ -o build/fuzz_shim build/fuzz_shim -max_total_time=60 -max_len=4096 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "shim/shim.h"
#include "tests/shim_fixture.h"

static bool bare_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c != '\0' && strchr("_@%+=:,./-", c));
}

/* Parses a line of words as a shell would for the subset bg_quote emits;
 * aborts on anything else (an unquoted byte outside the bare set). Fills
 * words (owned) and, per word, whether it was entirely bare. */
static size_t parse_words(const char *s, char ***out, bool **bare)
{
	size_t n = 0, cap = 0, bcap = 0;
	char **words = NULL;
	bool *isbare = NULL;
	const char *p = s;
	while (*p) {
		strbuf w = STRBUF_INIT;
		bool all_bare = true, any = false;
		while (*p && *p != ' ') {
			any = true;
			if (*p == '\'') {
				all_bare = false;
				const char *q = strchr(p + 1, '\'');
				CHECK(q != NULL);
				strbuf_add(&w, p + 1, (size_t)(q - p - 1));
				p = q + 1;
			} else if (*p == '\\') {
				all_bare = false;
				CHECK(p[1] == '\'');
				strbuf_addch(&w, '\'');
				p += 2;
			} else {
				CHECK(bare_byte((unsigned char)*p));
				strbuf_addch(&w, *p);
				p++;
			}
		}
		CHECK(any);
		words = xgrow(words, &cap, n + 1, sizeof(*words));
		isbare = xgrow(isbare, &bcap, n + 1, sizeof(*isbare));
		words[n] = strbuf_detach(&w);
		isbare[n] = all_bare;
		n++;
		if (*p == ' ') {
			p++;
			CHECK(*p != '\0' && *p != ' ');
		}
	}
	*out = words;
	*bare = isbare;
	return n;
}

static void free_words(char **w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(w[i]);
	free(w);
}

static void check_bare_word(const char *w)
{
	static const char *const reserved[] = {
		"case",     "coproc", "do", "done",   "elif", "else", "esac",  "fi",   "for",
		"function", "if",     "in", "select", "then", "time", "until", "while"};
	CHECK(w[0] != '\0' && w[0] != '%' && w[0] != '=');
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		CHECK(strcmp(w, reserved[i]) != 0);
	const char *eq = strchr(w, '=');
	if (eq) {
		char *name = xstrndup(w, (size_t)(eq - w));
		CHECK(!bg_env_name_ok(name));
		free(name);
	}
}

static void check_quote(char **argv, size_t argc)
{
	strbuf sb = STRBUF_INIT;
	bg_quote_argv(&sb, (const char *const *)argv, argc);
	char **words;
	bool *bare;
	size_t n = parse_words(strbuf_str(&sb), &words, &bare);
	CHECK(n == argc);
	for (size_t i = 0; i < n; i++) {
		CHECK(strcmp(words[i], argv[i]) == 0);
		if (bare[i])
			check_bare_word(words[i]);
	}
	free_words(words, n);
	free(bare);
	strbuf_release(&sb);
}

static shim_env_rule rules[] = {
	{"--decode-m1", "MPK_GG_DECODE_M1", "1", "fuzz.ini", 3},
	{"--gate-timeout", "MPK_GATE_TIMEOUT_S", "{}", "fuzz.ini", 4},
	{"--tag", "TAG", "<{}>{}", "fuzz.ini", 5},
	{"--kind", "KIND_TOO", "{}", "fuzz.ini", 6},
	{"--alias", "MPK_GATE_TIMEOUT_S", "{}", "fuzz.ini", 7},
};
static char *allow[] = {"--kind", "--shape", "--num-workers", "--configs", "--baseline", "-k"};

static bool is_subsequence(char **sub, size_t nsub, char **all, size_t nall)
{
	size_t j = 0;
	for (size_t i = 0; i < nall && j < nsub; i++)
		if (strcmp(sub[j], all[i]) == 0)
			j++;
	return j == nsub;
}

static void check_translate(char **argv, size_t argc, bool nw_env)
{
	shim_rules box = SHIM_FIXTURE_BOX("fuzz", "gate.sh", "fuzz.ini", 2, allow, rules);
	box.num_workers_env = nw_env ? "MPK_TEST_NUM_WORKERS" : NULL;
	shim_result r;
	bg_err err;
	memset(&err, 0, sizeof(err));
	int rc = shim_translate(&box, (const char *const *)argv, argc, &r, &err);
	if (rc < 0) {
		CHECK(rc == BG_EUSAGE && err.code == rc && err.msg[0] != '\0');
		CHECK(r.n_argv == 0 && r.n_env == 0 && r.n_words == 0 && !r.argv && !r.env &&
		      !r.words);
		return;
	}
	CHECK(rc == 0);
	CHECK(r.n_words == argc);
	for (size_t i = 0; i < argc; i++)
		CHECK(strcmp(r.words[i].arg, argv[i]) == 0);
	CHECK(r.n_argv <= argc);
	CHECK(is_subsequence(r.argv, r.n_argv, argv, argc));
	for (size_t i = 0; i < r.n_env; i++) {
		const char *eq = strchr(r.env[i], '=');
		CHECK(eq != NULL);
		char *name = xstrndup(r.env[i], (size_t)(eq - r.env[i]));
		CHECK(bg_env_name_ok(name));
		for (size_t j = 0; j < i; j++)
			CHECK(strncmp(r.env[j], r.env[i], (size_t)(eq - r.env[i]) + 1) != 0);
		free(name);
	}
	char *cmd = shim_command_line(&r, "gate.sh");
	CHECK(cmd != NULL);
	char **words;
	bool *bare;
	size_t n = parse_words(cmd, &words, &bare);
	size_t k = 0;
	if (r.n_env) {
		CHECK(n > 0 && strcmp(words[k++], "env") == 0);
		for (size_t i = 0; i < r.n_env; i++, k++)
			CHECK(k < n && strcmp(words[k], r.env[i]) == 0);
	}
	CHECK(k < n && strcmp(words[k++], "gate.sh") == 0);
	CHECK(n - k == r.n_argv);
	for (size_t i = 0; i < r.n_argv; i++)
		CHECK(strcmp(words[k + i], r.argv[i]) == 0);
	free_words(words, n);
	free(bare);
	free(cmd);
	shim_result_release(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536)
		return 0;
	/* Split on NUL: "a\0b" is {"a","b"}, a trailing NUL ends the last word. */
	char *copy = xmalloc(size + 1);
	memcpy(copy, data, size);
	copy[size] = '\0';
	size_t cap = 0, argc = 0;
	char **argv = NULL;
	size_t start = 0;
	for (size_t i = 0; i <= size; i++) {
		if (i == size && start == size && size > 0 && data[size - 1] == '\0')
			break;
		if (i == size || copy[i] == '\0') {
			argv = xgrow(argv, &cap, argc + 1, sizeof(*argv));
			argv[argc++] = copy + start;
			start = i + 1;
		}
	}
	check_quote(argv, argc);
	check_translate(argv, argc, false);
	check_translate(argv, argc, true);
	free(argv);
	free(copy);
	return 0;
}
