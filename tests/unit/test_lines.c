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

static void whole_lines(void **state)
{
	(void)state;
	run("a\nbb\n\nccc\n", 64, 100, "0:a|0:bb|0:|0:ccc|", 4);
}

static void byte_at_a_time(void **state)
{
	(void)state;
	run("a\nbb\n\nccc\n", 64, 1, "0:a|0:bb|0:|0:ccc|", 4);
}

static void last_line_without_newline(void **state)
{
	(void)state;
	run("one\ntwo", 64, 3, "0:one|2:two|", 2);
}

static void overlong_line_in_pieces(void **state)
{
	(void)state;
	/* max 4: "abcdefghij" -> abcd (partial) efgh (partial) ij (end). */
	run("abcdefghij\nk\n", 4, 3, "1:abcd|1:efgh|0:ij|0:k|", 4);
}

static void exact_max_line_is_whole(void **state)
{
	(void)state;
	run("abcd\nef\n", 4, 2, "0:abcd|0:ef|", 2);
	run("abcd\nef\n", 4, 100, "0:abcd|0:ef|", 2);
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
		cmocka_unit_test(whole_lines),
		cmocka_unit_test(byte_at_a_time),
		cmocka_unit_test(last_line_without_newline),
		cmocka_unit_test(overlong_line_in_pieces),
		cmocka_unit_test(exact_max_line_is_whole),
		cmocka_unit_test(binary_bytes_pass),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
