/* base/lines: the one line splitter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "base/lines.h"
#include "base/strbuf.h"

struct got {
	strbuf text; /* each line as "flags:bytes|" */
	int n;
};

static void collect(void *ctx, const char *line, size_t len, int flags)
{
	struct got *g = ctx;
	strbuf_addf(&g->text, "%d:", flags);
	strbuf_add(&g->text, line, len);
	strbuf_addch(&g->text, '|');
	g->n++;
}

static void run(const char *input, size_t max, size_t chunk, const char *want, int want_n)
{
	struct got g = {STRBUF_INIT, 0};
	lines l;
	lines_init(&l, max, collect, &g);
	size_t n = strlen(input);
	for (size_t i = 0; i < n; i += chunk)
		lines_feed(&l, input + i, i + chunk > n ? n - i : chunk);
	lines_finish(&l);
	assert_string_equal(strbuf_str(&g.text), want);
	assert_int_equal(g.n, want_n);
	lines_release(&l);
	strbuf_release(&g.text);
}

/* Inputs fed `chunk` bytes at a time to a splitter of lines up to `max`
 * bytes, and the lines it must give, as "flags:bytes|". */
static const struct split_case {
	const char *what, *input;
	size_t max, chunk;
	const char *want;
	int want_n;
} split_cases[] = {
	{"whole lines", "a\nbb\n\nccc\n", 64, 100, "0:a|0:bb|0:|0:ccc|", 4},
	{"a byte at a time", "a\nbb\n\nccc\n", 64, 1, "0:a|0:bb|0:|0:ccc|", 4},
	{"last line without newline", "one\ntwo", 64, 3, "0:one|2:two|", 2},
	/* max 4: "abcdefghij" -> abcd (partial) efgh (partial) ij (end). */
	{"overlong line in pieces", "abcdefghij\nk\n", 4, 3, "1:abcd|1:efgh|0:ij|0:k|", 4},
	{"exact max line is whole", "abcd\nef\n", 4, 2, "0:abcd|0:ef|", 2},
	{"exact max line is whole, one chunk", "abcd\nef\n", 4, 100, "0:abcd|0:ef|", 2},
};

static void split_lines(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(split_cases) / sizeof(split_cases[0]); i++) {
		const struct split_case *c = &split_cases[i];
		print_message("# %s\n", c->what);
		run(c->input, c->max, c->chunk, c->want, c->want_n);
	}
}

static void binary_bytes_pass(void **state)
{
	(void)state;
	struct got g = {STRBUF_INIT, 0};
	lines l;
	const char in[] = {'\xff', '\0', '\x80', '\n', 'x'};
	lines_init(&l, 16, collect, &g);
	lines_feed(&l, in, sizeof(in));
	lines_finish(&l);
	assert_int_equal(g.n, 2);
	assert_memory_equal(g.text.buf, "0:\xff\0\x80|2:x|", 10);
	lines_release(&l);
	strbuf_release(&g.text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(split_lines),
		cmocka_unit_test(binary_bytes_pass),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
