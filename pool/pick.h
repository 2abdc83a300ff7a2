/* The slot a gate run takes: `run --pool P [--wait S]` (every box of the pool
 * checked before anything connects, then the pool's line and broker,
 * pool/wait.h) or `run BOX` without --gpu on a box of several GPUs (the box's
 * first free one). Nothing prints: the refusal and the note the run says are
 * sentences for the caller. */
#ifndef BG_POOL_PICK_H
#define BG_POOL_PICK_H

#include <signal.h>

#include "base/strbuf.h"
#include "conf/conf.h"
#include "gate/client/agent_install.h"
#include "pool/broker.h"
#include "pool/line.h"
#include "remote/remote.h"

typedef struct pool_pick_in {
	const conf *cf;
	const char *cmd;         /* names the sentences ("run") */
	const char *pool;        /* --pool P (pool_pick_pool) */
	const conf_box *box;     /* BOX (pool_pick_box) */
	const char *gpu;         /* --gpu as given: refused with a pool */
	const char *exclude;     /* boxes left out of the pool (NULL: none) */
	const gate_agent *agent; /* the agent already found; NULL: found here */
	const remote_connect_opts *link;
	int wait_s;                  /* --wait S (0: one look) */
	volatile sig_atomic_t *stop; /* set by a signal: give up at once */
	/* Each box the pick may take, before anything connects: 0, else an exit
	 * code (the refusal is the callback's to say; NULL: none). */
	int (*check_box)(void *ctx, const conf_box *box);
	void (*on_ahead)(void *ctx, int ahead); /* as pool_wait_opts */
	void (*on_first)(void *ctx);
	void *ctx;
} pool_pick_in;

/* --pool: refuses an unknown pool, --gpu beside it, an exclusion that leaves
 * no box and a box check_box refuses, then waits for the first free slot
 * (*line as pool_wait_slot's). Returns an exit code: 0 with *pick filled and
 * `note` the sentence "pool P: BOX:SLOT is free, taking it"; else `refusal`
 * says why when it is not check_box's (empty then). */
int pool_pick_pool(const pool_pick_in *in, pool_line **line, broker_pick *pick, strbuf *refusal,
		   strbuf *note);

/* BOX without --gpu: check_box, then the box's first free GPU asked of its
 * agent. Returns as pool_pick_pool; `note` stays empty when the pick is the
 * box's first GPU. */
int pool_pick_box(const pool_pick_in *in, broker_pick *pick, strbuf *refusal, strbuf *note);

#endif
