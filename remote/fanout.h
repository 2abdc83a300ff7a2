/* Runs one function per box concurrently, a thread per box (bounded), and
 * waits for all of them. Each call owns its own connection: a session never
 * crosses threads. */
#ifndef BG_REMOTE_FANOUT_H
#define BG_REMOTE_FANOUT_H

#include <stddef.h>

#include "conf/conf.h"

typedef void (*remote_box_fn)(void *ctx, const conf_box *box, size_t index);

/* max_parallel 0 means 64. Returns when every call has returned. */
void remote_fanout(const conf_box *const *boxes, size_t n, size_t max_parallel, remote_box_fn fn,
		   void *ctx);

#endif
