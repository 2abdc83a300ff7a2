/* A campaign's slots: the pool's boxes, the slots a worker runs on picked
 * from what each box's agent said (free or held ones; a held slot gets no
 * staging partner), and where a dry run would place jobs. The probes
 * themselves (connecting, asking the agent) are pool/slot_probe.c's. */
#ifndef BG_CAMPAIGN_SLOTS_H
#define BG_CAMPAIGN_SLOTS_H

#include <stddef.h>

#include "campaign/sched.h"
#include "conf/conf.h"
#include "pool/slot_probe.h"

/* What the picking leaves out or notes, said through callbacks (each may
 * be NULL). */
typedef struct campaign_slots_cb {
	/* A box whose probe failed: quarantined, none of its slots used. */
	void (*box_left_out)(void *ctx, const conf_box *box, const char *why);
	/* A slot neither free nor held (busy, disabled, ...); why may be NULL. */
	void (*slot_left_out)(void *ctx, const conf_box *box, const char *slot, const char *state,
			      const char *why);
	/* A slot another run holds: its jobs wait for it; tag may be NULL. */
	void (*slot_held)(void *ctx, const conf_box *box, const char *slot, const char *tag);
	void *ctx;
} campaign_slots_cb;

/* The pool's boxes in its order, each once (owned array, *n set); the pool
 * must exist. */
sched_box *campaign_pool_boxes(const conf *c, const char *pool, size_t *n);

/* Fills s->slots, s->n_slots and s->n_groups from the probes p[0..np) of
 * s->boxes' boxes: a slot per free or held row (a Slurm box: max_jobs slots,
 * Slurm gives each its GPU), then a staging partner per slot nobody else
 * held. A box's first slot takes the probe's open connection and agent path.
 * A failed probe quarantines its box. Returns 0 when some box answered,
 * else the merged exit code of the failures (BG_EXIT_CONNECT when none). */
int campaign_slots_take(sched *s, slot_probe *p, size_t np, const campaign_slots_cb *cb);

/* Frees the slots (closing their connections). */
void campaign_slots_release(sched *s);

/* The pool's configured slots in order ("h1:gpu0", "h1:cpu", "h2:slurm0"),
 * where a dry run places jobs in turn (owned strings in an owned array). */
char **campaign_slots_configured(const conf *c, const char *pool, size_t *n);

#endif
