/* run --pool: the first free slot of a pool, asked of each box's agent: the
 * first box alone (one command on the connection run makes anyway), then, when it
 * has no free slot, every other box in parallel. */
#ifndef BG_CLI_BROKER_H
#define BG_CLI_BROKER_H

#include "base/strbuf.h"
#include "cli/cli.h"
#include "gate/agent_install.h"

typedef struct broker_pick {
	const conf_box *box;
	char *gpus;        /* the slot's GPU ("3"), NULL for a CPU slot (owned) */
	char *slot;        /* "gpu3" or "cpu" (owned) */
	remote_conn *conn; /* the chosen box's connection, still open (owned) */
	char *agent_path;  /* the agent's command word there (owned) */
} broker_pick;

/* Fills *pick with the first free slot of `pool` in the pool's order (a box's
 * slots in its agent's order). A slot is free when no run holds its lock, it is
 * not disabled and NVML lists no compute process on it. Returns 0, or
 * BG_EXIT_FAIL when none is free, or the most serious box error when no box
 * could be asked; then `why` gets one line per slot or box and what holds it. */
int broker_pick_slot(cli_ctx *ctx, const char *pool, const gate_agent *agent, broker_pick *pick,
		     strbuf *why);
/* The same over one box's `gpus` (run BOX without --gpu on a box of several). */
int broker_pick_box(cli_ctx *ctx, const conf_box *box, const gate_agent *agent, broker_pick *pick,
		    strbuf *why);
void broker_pick_release(broker_pick *pick);
/* One line per slot of the pool and what holds it (for a wait that ran out). */
void broker_describe(cli_ctx *ctx, const char *pool, const gate_agent *agent, strbuf *why);

#endif
