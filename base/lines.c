#include "base/lines.h"
#include "base/xmalloc.h"

#include <stdlib.h>
#include <string.h>

void lines_init(lines *l, size_t max, lines_cb cb, void *ctx)
{
	l->max = max ? max : LINES_DEFAULT_MAX;
	l->buf = xmalloc(l->max);
	l->len = 0;
	l->cb = cb;
	l->ctx = ctx;
}

void lines_feed(lines *l, const char *data, size_t n)
{
	while (n > 0) {
		/* A full buffer waits for one more byte: a newline makes it a whole line. */
		if (l->len == l->max) {
			int flags = data[0] == '\n' ? 0 : LINE_PARTIAL;
			l->cb(l->ctx, l->buf, l->len, flags);
			l->len = 0;
			if (!flags) {
				data++;
				n--;
				continue;
			}
		}
		const char *nl = memchr(data, '\n', n);
		size_t take = nl ? (size_t)(nl - data) : n;
		/* A complete line straight from the input needs no copy. */
		if (nl && l->len == 0 && take <= l->max) {
			l->cb(l->ctx, data, take, 0);
			data += take + 1;
			n -= take + 1;
			continue;
		}
		size_t room = l->max - l->len;
		if (take > room)
			take = room;
		memcpy(l->buf + l->len, data, take);
		l->len += take;
		data += take;
		n -= take;
		if (n > 0 && data[0] == '\n' && l->len < l->max) {
			l->cb(l->ctx, l->buf, l->len, 0);
			l->len = 0;
			data++;
			n--;
		}
	}
}

void lines_finish(lines *l)
{
	if (l->len > 0)
		l->cb(l->ctx, l->buf, l->len, LINE_NO_EOL);
	l->len = 0;
}

void lines_release(lines *l)
{
	free(l->buf);
	l->buf = NULL;
	l->len = 0;
}
