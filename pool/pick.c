/* The slot a gate run takes (see the header). */
#include "pool/pick.h"

#include <string.h>

#include "base/exit.h"
#include "pool/slot_probe.h"
#include "pool/wait.h"

/* Why the wait ended without a slot, in the words run has always said. */
static void say_wait_end(const pool_pick_in *in, const pool_wait_result *r, strbuf *refusal)
{
	const char *cmd = in->cmd, *pool = in->pool, *why = r->why.buf ? r->why.buf : "";
	switch (r->end) {
	case POOL_WAIT_TAKEN:
	case POOL_WAIT_STOPPED: break;
	case POOL_WAIT_JOIN_FAILED:
		strbuf_addf(refusal, "%s: pool %s: cannot join the line on %s: %s", cmd, pool,
			    r->line_box, r->err.msg);
		break;
	case POOL_WAIT_LINE_LOST:
		strbuf_addf(refusal, "%s: pool %s: %s", cmd, pool, r->err.msg);
		break;
	case POOL_WAIT_LINE_TIMEOUT:
		if (r->ahead < 0)
			strbuf_addf(refusal,
				    "%s: pool %s: the line on %s gave no place within --wait %d s "
				    "(its queue command said nothing); the slots:%s",
				    cmd, pool, r->line_box, in->wait_s, why);
		else
			strbuf_addf(refusal,
				    "%s: pool %s: still %d waiter%s ahead in line after --wait %d "
				    "s; the slots:%s",
				    cmd, pool, r->ahead, r->ahead == 1 ? "" : "s", in->wait_s, why);
		break;
	case POOL_WAIT_NO_SLOT:
		strbuf_addf(refusal, "%s: no free slot in pool %s%s:%s", cmd, pool,
			    in->wait_s ? " within --wait" : "", why);
		break;
	}
}

/* Every box the pick may take passes check_box (refused before anything
 * connects). */
static int check_pool_boxes(const pool_pick_in *in, const conf_pool *pool, strbuf *refusal)
{
	size_t n = 0;
	bg_err err = {0};
	slot_probe *probe = slot_probe_pool(in->cf, pool->name, in->exclude, &n, &err);
	if (!probe) {
		strbuf_addstr(refusal, err.msg);
		return BG_EXIT_USAGE;
	}
	int code = 0;
	for (size_t i = 0; i < n && !code && in->check_box; i++)
		code = in->check_box(in->ctx, probe[i].box);
	slot_probe_release(probe, n);
	return code;
}

/* Where a pick step puts what it found and says. */
typedef struct pick_step {
	pool_line **line;
	broker_pick *pick;
	strbuf *refusal, *note;
} pick_step;

/* `code` when the checks before it refused, else `step` with the agent the
 * caller found or one found here. */
static int with_agent(const pool_pick_in *in, int code,
		      int (*step)(const pool_pick_in *, const gate_agent *, pick_step *),
		      pick_step *st)
{
	if (code)
		return code;
	gate_agent own;
	const gate_agent *agent = in->agent;
	bg_err err = {0};
	if (!agent) {
		if (gate_agent_locate(&own, &err) < 0) {
			strbuf_addstr(st->refusal, err.msg);
			return BG_EXIT_FAIL;
		}
		agent = &own;
	}
	code = step(in, agent, st);
	if (agent == &own)
		gate_agent_release(&own);
	return code;
}

/* The pool's line (with --wait), then its first free slot. */
static int pick_in_pool(const pool_pick_in *in, const gate_agent *agent, pick_step *st)
{
	pool_wait_opts o = {
		.cf = in->cf,
		.pool = in->pool,
		.exclude = in->exclude,
		.agent = agent,
		.link = in->link,
		.wait_s = in->wait_s,
		.stop = in->stop,
		.on_ahead = in->on_ahead,
		.on_first = in->on_first,
		.ctx = in->ctx,
	};
	pool_wait_result r;
	int code = pool_wait_slot(&o, st->line, st->pick, &r);
	if (code)
		say_wait_end(in, &r, st->refusal);
	else
		strbuf_addf(st->note, "pool %s: %s:%s is free, taking it", in->pool,
			    st->pick->box->name, st->pick->slot);
	strbuf_release(&r.why);
	return code;
}

int pool_pick_pool(const pool_pick_in *in, pool_line **line, broker_pick *pick, strbuf *refusal,
		   strbuf *note)
{
	const conf_pool *pool = conf_find_pool(in->cf, in->pool);
	if (!pool) {
		strbuf_addf(refusal, "%s: no pool '%s' in %s", in->cmd, in->pool,
			    in->cf->path ? in->cf->path : "the configuration (none was loaded)");
		return BG_EXIT_USAGE;
	}
	if (in->gpu) {
		strbuf_addf(refusal,
			    "%s: --gpu and --pool exclude each other: the broker picks the slot",
			    in->cmd);
		return BG_EXIT_USAGE;
	}
	pick_step st = {line, pick, refusal, note};
	return with_agent(in, check_pool_boxes(in, pool, refusal), pick_in_pool, &st);
}

/* Whether `gpus` is the first GPU of the box's list ("3" of "3,5"). */
static bool first_gpu(const conf_box *box, const char *gpus)
{
	size_t n = box->gpus ? strspn(box->gpus, "0123456789") : 0;
	return n && gpus && strlen(gpus) == n && strncmp(box->gpus, gpus, n) == 0;
}

/* The box's first free GPU. */
static int pick_on_box(const pool_pick_in *in, const gate_agent *agent, pick_step *st)
{
	strbuf why = STRBUF_INIT;
	int code = broker_pick_box(in->box, agent, in->link, st->pick, &why);
	if (code)
		strbuf_addf(st->refusal,
			    "%s: no free slot on box %s (give --gpu to wait for one):%s", in->cmd,
			    in->box->name, why.buf ? why.buf : "");
	else if (!first_gpu(in->box, st->pick->gpus))
		strbuf_addf(st->note, "%s: %s is free, taking it%s", in->box->name, st->pick->slot,
			    why.len ? " (the first GPUs are taken)" : "");
	strbuf_release(&why);
	return code;
}

int pool_pick_box(const pool_pick_in *in, broker_pick *pick, strbuf *refusal, strbuf *note)
{
	pick_step st = {NULL, pick, refusal, note};
	return with_agent(in, in->check_box ? in->check_box(in->ctx, in->box) : 0, pick_on_box,
			  &st);
}
