/* run --pool --wait: the line, then the first free slot (see the header). */
#include "pool/wait.h"

#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/exit.h"
#include "base/parse.h"
#include "base/timer.h"
#include "base/xmalloc.h"
#include "pool/slot_probe.h"

/* The line on the pool's first box: a ticket, then waiting to be first. */
static int wait_in_line(const pool_wait_opts *o, const conf_box *qbox, int64_t deadline,
			pool_line **line, pool_wait_result *r)
{
	char *who = slot_probe_who();
	char *tag = xasprintf("%s:%d", who, (int)getpid());
	int rc = pool_line_join(qbox, o->pool, tag, o->agent, o->link, line, &r->err);
	free(tag);
	free(who);
	if (rc < 0) {
		r->end = POOL_WAIT_JOIN_FAILED;
		return bg_exit_code(rc);
	}
	for (;;) {
		rc = pool_line_wait_head(*line, deadline, o->stop, &r->ahead, &r->err);
		if (rc == 1)
			return 0;
		if (rc == 2) {
			if (o->on_ahead)
				o->on_ahead(o->ctx, r->ahead);
			continue;
		}
		if (rc < 0) {
			r->end = *o->stop ? POOL_WAIT_STOPPED : POOL_WAIT_LINE_LOST;
			return *o->stop ? BG_EXIT_INTERRUPTED : BG_EXIT_CONNECT;
		}
		if (bg_now_ms() >= deadline) {
			broker_describe(o->cf, o->pool, o->exclude, o->agent, o->link, &r->why);
			r->end = POOL_WAIT_LINE_TIMEOUT;
			return BG_EXIT_FAIL;
		}
	}
}

int pool_wait_slot(const pool_wait_opts *o, pool_line **line, broker_pick *pick,
		   pool_wait_result *r)
{
	*r = (pool_wait_result){.end = POOL_WAIT_TAKEN, .ahead = -1, .why = STRBUF_INIT};
	const conf_pool *cp = conf_find_pool(o->cf, o->pool);
	int64_t deadline = bg_now_ms() + (int64_t)o->wait_s * 1000;
	if (cp && o->wait_s > 0 && cp->n_slots) {
		const conf_box *qbox = conf_find_box(o->cf, cp->slots[0].box);
		r->line_box = qbox ? qbox->name : NULL;
		if ((r->code = wait_in_line(o, qbox, deadline, line, r)))
			return r->code;
	}
	bool said_first = false;
	for (;;) {
		strbuf_reset(&r->why);
		r->code = broker_pick_slot(o->cf, o->pool, o->exclude, o->agent, o->link, pick,
					   &r->why);
		if (r->code != BG_EXIT_FAIL || bg_now_ms() >= deadline || *o->stop)
			break;
		if (!said_first && o->on_first)
			o->on_first(o->ctx);
		said_first = true;
		for (int i = 0; i < 5 && !*o->stop; i++)
			poll(NULL, 0, 100);
	}
	if (*o->stop && r->code) {
		r->end = POOL_WAIT_STOPPED;
		r->code = BG_EXIT_INTERRUPTED;
	} else if (r->code) {
		r->end = POOL_WAIT_NO_SLOT;
	}
	return r->code;
}

int pool_gpu_count(const char *gpus)
{
	static bool set[BG_MAX_GPUS];
	const char *why;
	int n = 0;
	if (!gpus || !bg_gpus_parse(gpus, set, &why))
		return 0;
	for (int g = 0; g < BG_MAX_GPUS; g++)
		n += set[g];
	return n;
}
