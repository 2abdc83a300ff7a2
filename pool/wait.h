/* run --pool --wait S: a place in the pool's first-come line (pool/line.h, on
 * the pool's first box), then, first in line, the broker's first free slot
 * (pool/broker.h) looked for every half second until S seconds have passed.
 * What happens on the way is told through callbacks; the words are the
 * caller's. */
#ifndef BG_POOL_WAIT_H
#define BG_POOL_WAIT_H

#include <signal.h>

#include "base/error.h"
#include "base/strbuf.h"
#include "conf/conf.h"
#include "gate/client/agent_install.h"
#include "pool/broker.h"
#include "pool/line.h"
#include "remote/remote.h"

typedef struct pool_wait_opts {
	const conf *cf;
	const char *pool;    /* a pool of cf */
	const char *exclude; /* boxes left out of the pick (NULL: none) */
	const gate_agent *agent;
	const remote_connect_opts *link;
	int wait_s;                  /* 0: one look, no line */
	volatile sig_atomic_t *stop; /* set by a signal: give up at once */
	/* The line said this many waiters are ahead (each time it says so). */
	void (*on_ahead)(void *ctx, int ahead);
	/* First in line and no slot free yet (once). */
	void (*on_first)(void *ctx);
	void *ctx;
} pool_wait_opts;

typedef enum pool_wait_end {
	POOL_WAIT_TAKEN,        /* *pick holds the slot */
	POOL_WAIT_STOPPED,      /* *stop was set */
	POOL_WAIT_JOIN_FAILED,  /* no place in the line: err */
	POOL_WAIT_LINE_LOST,    /* the line's connection failed: err */
	POOL_WAIT_LINE_TIMEOUT, /* still `ahead` waiters ahead at the end: why */
	POOL_WAIT_NO_SLOT,      /* first in line (or no line) and no slot free: why */
} pool_wait_end;

typedef struct pool_wait_result {
	pool_wait_end end;
	int code;             /* an exit code (base/exit.h): 0 when TAKEN */
	int ahead;            /* LINE_TIMEOUT: waiters still ahead, -1: the line gave no place */
	const char *line_box; /* the box the line is on (borrowed; NULL: no line) */
	strbuf why;           /* the slots and what holds them; release it */
	bg_err err;
} pool_wait_result;

/* Waits for a slot of o->pool as above. *line is the caller's place in the
 * line (NULL when none was taken), to leave once the agent has locked the
 * slot and to free at the end. Returns r->code. */
int pool_wait_slot(const pool_wait_opts *o, pool_line **line, broker_pick *pick,
		   pool_wait_result *r);

/* How many GPUs a `gpus = ` list names; 0 for NULL or a list that does not
 * parse. */
int pool_gpu_count(const char *gpus);

#endif
