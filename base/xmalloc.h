/* Allocation that never returns NULL: failure aborts, so error paths exist
 * only for real failures. */
#ifndef BG_XMALLOC_H
#define BG_XMALLOC_H

#include <stdarg.h>
#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
/* Grows an array of `size`-byte elements so index `need-1` fits; updates *cap. */
void *xgrow(void *p, size_t *cap, size_t need, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Wipes a secret before freeing it; accepts NULL. */
void xfree_secret(char *s);

#endif
