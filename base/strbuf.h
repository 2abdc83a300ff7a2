/* A growable byte buffer, always NUL-terminated after `len` bytes. */
#ifndef BG_STRBUF_H
#define BG_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct strbuf {
	char *buf;
	size_t len;
	size_t cap;
} strbuf;

/* A braced initializer clang-format would spread over four lines. */
/* clang-format off */
#define STRBUF_INIT {NULL, 0, 0}
/* clang-format on */

void strbuf_add(strbuf *sb, const void *data, size_t n);
void strbuf_addstr(strbuf *sb, const char *s);
void strbuf_addch(strbuf *sb, char c);
void strbuf_addf(strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_reset(strbuf *sb);
/* Returns the buffer (owned by the caller, never NULL) and re-initialises sb. */
char *strbuf_detach(strbuf *sb);
void strbuf_release(strbuf *sb);
/* The contents as a C string (borrowed; "" when empty). */
const char *strbuf_str(const strbuf *sb);

#endif
