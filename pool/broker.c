#include "pool/broker.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "pool/slot_probe.h"

static const char *str_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : "?";
}

/* "g1:gpu0 held by TAG since T" and the like, for the refusal. */
static void say_why_taken(strbuf *b, const char *box, const cJSON *row)
{
	const char *state = str_of(row, "state");
	strbuf_addf(b, "\n  %s:%s %s", box, str_of(row, "slot"), state);
	if (strcmp(state, "held") == 0)
		strbuf_addf(b, " by %s since %s", str_of(row, "tag"), str_of(row, "since"));
	else if (strcmp(state, "disabled") == 0)
		strbuf_addf(b, ": %s", str_of(row, "why"));
	else if (strcmp(state, "busy") == 0) {
		const cJSON *p =
			cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(row, "procs"), 0);
		const cJSON *pid = cJSON_GetObjectItemCaseSensitive(p, "pid");
		strbuf_addf(b, ": compute process pid %d (%s)",
			    cJSON_IsNumber(pid) ? pid->valueint : -1, str_of(p, "name"));
	}
}

static bool has_free(const slot_probe *p)
{
	const cJSON *row;
	cJSON_ArrayForEach(row, p->rows)
	{
		if (strcmp(str_of(row, "state"), "free") == 0)
			return true;
	}
	return false;
}

int broker_choose(slot_probe *p, size_t n, broker_pick *pick, strbuf *why_out)
{
	int code = BG_EXIT_OK;
	strbuf why = STRBUF_INIT;
	for (size_t i = 0; i < n && !pick->box; i++) {
		if (!p[i].code && !p[i].rows)
			continue; /* not asked: an earlier box had a free slot */
		if (p[i].code) {
			strbuf_addf(&why, "\n  %s: %s", p[i].box->name, p[i].error);
			code = bg_exit_merge(code, p[i].code);
			continue;
		}
		const cJSON *row;
		cJSON_ArrayForEach(row, p[i].rows)
		{
			if (strcmp(str_of(row, "state"), "free") != 0) {
				say_why_taken(&why, p[i].box->name, row);
				continue;
			}
			const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(row, "gpu");
			pick->box = p[i].box;
			pick->slot = xstrdup(str_of(row, "slot"));
			pick->gpus = cJSON_IsNumber(gpu) ? xasprintf("%d", gpu->valueint) : NULL;
			pick->conn = p[i].conn;
			pick->agent_path = p[i].agent_path;
			p[i].conn = NULL;
			p[i].agent_path = NULL;
			break;
		}
	}
	if (!pick->box) {
		bool none_asked = true;
		for (size_t i = 0; i < n; i++)
			none_asked = none_asked && p[i].code;
		strbuf_addstr(why_out, why.len ? why.buf : "\n  (the pool lists no slot)");
		code = none_asked && n ? code : BG_EXIT_FAIL;
	} else {
		/* the slots passed over before the pick, for a caller that says so */
		strbuf_addstr(why_out, why.len ? why.buf : "");
		code = BG_EXIT_OK;
	}
	strbuf_release(&why);
	return code;
}

/* The first free slot of the probes, in order; frees p. */
static int pick_from(slot_probe *p, size_t n, const gate_agent *agent,
		     const remote_connect_opts *link, broker_pick *pick, strbuf *why)
{
	/* The first box alone first: when it has a free slot (the usual case) the
	 * broker costs one command on the connection run needs anyway; only when it
	 * has none are the others asked, in parallel. */
	slot_probe_all(p, n ? 1 : 0, agent, link, true);
	if (n > 1 && !has_free(&p[0]))
		slot_probe_all(p + 1, n - 1, agent, link, true);
	int code = broker_choose(p, n, pick, why);
	slot_probe_release(p, n);
	return code;
}

int broker_pick_slot(const conf *c, const char *pool, const char *exclude, const gate_agent *agent,
		     const remote_connect_opts *link, broker_pick *pick, strbuf *why)
{
	size_t n = 0;
	bg_err err = {0};
	memset(pick, 0, sizeof(*pick));
	slot_probe *p = slot_probe_pool(c, pool, exclude, &n, &err);
	if (!p) {
		strbuf_addf(why, "\n  %s", err.msg);
		return BG_EXIT_USAGE;
	}
	return pick_from(p, n, agent, link, pick, why);
}

int broker_pick_box(const conf_box *box, const gate_agent *agent, const remote_connect_opts *link,
		    broker_pick *pick, strbuf *why)
{
	memset(pick, 0, sizeof(*pick));
	slot_probe *p = xcalloc(1, sizeof(*p));
	p->box = box;
	p->gpus = xstrdup(box->gpus);
	return pick_from(p, 1, agent, link, pick, why);
}

void broker_pick_release(broker_pick *pick)
{
	free(pick->gpus);
	free(pick->slot);
	free(pick->agent_path);
	remote_close(pick->conn);
	memset(pick, 0, sizeof(*pick));
}

void broker_describe(const conf *c, const char *pool, const char *exclude, const gate_agent *agent,
		     const remote_connect_opts *link, strbuf *why)
{
	size_t n = 0;
	bg_err err = {0};
	slot_probe *p = slot_probe_pool(c, pool, exclude, &n, &err);
	if (!p) {
		strbuf_addf(why, "\n  %s", err.msg);
		return;
	}
	slot_probe_all(p, n, agent, link, false);
	for (size_t i = 0; i < n; i++) {
		if (p[i].code) {
			strbuf_addf(why, "\n  %s: %s", p[i].box->name, p[i].error);
			continue;
		}
		const cJSON *row;
		cJSON_ArrayForEach(row, p[i].rows)
		{
			if (strcmp(str_of(row, "state"), "free") == 0)
				strbuf_addf(why, "\n  %s:%s free", p[i].box->name,
					    str_of(row, "slot"));
			else
				say_why_taken(why, p[i].box->name, row);
		}
	}
	slot_probe_release(p, n);
}
