/* Runs one function per index concurrently, a thread per index (bounded), and
 * waits for all of them. Just threads: the caller's fn knows what index i
 * means (a box, a file). */
#ifndef BG_BASE_FANOUT_H
#define BG_BASE_FANOUT_H

#include <stddef.h>

/* Calls fn(ctx, i) for every i in [0, n), at most max_parallel at a time
 * (0 means 64). Returns when every call has returned. */
void bg_fanout(size_t n, size_t max_parallel, void (*fn)(void *ctx, size_t i), void *ctx);

#endif
