/* The one line splitter: turns a byte stream into lines with bounded memory.
 *
 * Bytes pass through unchanged (binary and non-UTF-8 included). A line longer
 * than `max` is delivered in pieces of `max` bytes flagged LINE_PARTIAL; the
 * piece that ends it carries no flag. At lines_finish() a last line without a
 * newline is delivered flagged LINE_NO_EOL. The delivered line excludes '\n'. */
#ifndef BG_LINES_H
#define BG_LINES_H

#include <stddef.h>

enum { LINE_PARTIAL = 1, LINE_NO_EOL = 2 };

typedef void (*lines_cb)(void *ctx, const char *line, size_t len, int flags);

typedef struct lines {
	char *buf;
	size_t len;
	size_t max;
	lines_cb cb;
	void *ctx;
} lines;

#define LINES_DEFAULT_MAX (1024 * 1024)

void lines_init(lines *l, size_t max, lines_cb cb, void *ctx);
void lines_feed(lines *l, const char *data, size_t n);
/* Delivers what is buffered (a last line without newline). */
void lines_finish(lines *l);
void lines_release(lines *l);

#endif
