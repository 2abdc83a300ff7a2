/* run --pool: the first free slot of a pool, asked of each box's agent: the
 * first box alone (one command on the connection run makes anyway), then, when it
 * has no free slot, every other box in parallel. */
#ifndef BG_POOL_BROKER_H
#define BG_POOL_BROKER_H

#include "base/strbuf.h"
#include "conf/conf.h"
#include "gate/client/agent_install.h"
#include "remote/remote.h"

typedef struct broker_pick {
	const conf_box *box;
	char *gpus;        /* the slot's GPU ("3"), NULL for a CPU slot (owned) */
	char *slot;        /* "gpu3" or "cpu" (owned) */
	remote_conn *conn; /* the chosen box's connection, still open (owned) */
	char *agent_path;  /* the agent's command word there (owned) */
} broker_pick;

/* Fills *pick with the first free slot of `pool` (less the boxes `exclude`
 * names, NULL: none) in the pool's order (a box's slots in its agent's
 * order), connecting with `link`. A slot is free when no run holds its lock,
 * it is not disabled and NVML lists no compute process on it. Returns 0, or
 * BG_EXIT_FAIL when none is free, or the most serious box error when no box
 * could be asked; `why` gets one line per slot or box passed over and what
 * holds it (BG_EXIT_USAGE: the pool cannot be listed, `why` says why). */
int broker_pick_slot(const conf *c, const char *pool, const char *exclude, const gate_agent *agent,
		     const remote_connect_opts *link, broker_pick *pick, strbuf *why);
/* The same over one box's `gpus` (run BOX without --gpu on a box of several). */
int broker_pick_box(const conf_box *box, const gate_agent *agent, const remote_connect_opts *link,
		    broker_pick *pick, strbuf *why);
void broker_pick_release(broker_pick *pick);
/* One line per slot of the pool and what holds it (for a wait that ran out). */
void broker_describe(const conf *c, const char *pool, const char *exclude, const gate_agent *agent,
		     const remote_connect_opts *link, strbuf *why);

/* The broker's choice among probes already asked: the first free row in
 * order (moving its connection and agent path into *pick), else `why` gets
 * one line per slot or box. Returns as broker_pick_slot. Probes with neither
 * rows nor an error were not asked and are passed over. */
struct slot_probe;
int broker_choose(struct slot_probe *p, size_t n, broker_pick *pick, strbuf *why);

#endif
