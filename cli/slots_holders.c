/* boxgate slots: the campaigns holding slots and the pools' first-come lines
 * (cli/slots_holders.h). */
#include "cli/slots_holders.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "campaign/state.h"
#include "cli/output.h"
#include "pool/line.h"

#define CAMPAIGN_TAG "campaign:"

static const char *str_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The campaign name of a holder tag "campaign:NAME user@host:pid" (owned),
 * NULL when the tag is no campaign's. */
static char *campaign_of(const char *tag)
{
	size_t k = strlen(CAMPAIGN_TAG);
	if (!tag || strncmp(tag, CAMPAIGN_TAG, k) != 0 || !tag[k] || tag[k] == ' ')
		return NULL;
	return xstrndup(tag + k, strcspn(tag + k, " "));
}

/* The job a detached campaign of this client runs on slot LABEL ("box:slot"),
 * from its state file; NULL when it is not running here or names none. */
static char *detached_job(const char *dir, const char *name, const char *label, bool *detached)
{
	cJSON *st = NULL;
	bg_err err = {0};
	*detached = false;
	/* a name from a lock file on the box is never a path here */
	if (!dir || strchr(name, '/') || name[0] == '.' || !campaign_state_running(dir, name) ||
	    campaign_state_read(dir, name, &st, &err) < 0)
		return NULL;
	*detached = true;
	char *job = NULL;
	const cJSON *r;
	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(st, "running"))
	{
		const char *slot = str_of(r, "slot"), *j = str_of(r, "job");
		if (slot && j && strcmp(slot, label) == 0 && !job)
			job = xstrdup(j);
	}
	cJSON_Delete(st);
	return job;
}

void slots_note_campaigns(slot_probe *jobs, size_t n)
{
	char *dir = campaign_state_dir_peek();
	for (size_t i = 0; i < n; i++) {
		cJSON *row;
		cJSON_ArrayForEach(row, jobs[i].rows)
		{
			const char *state = str_of(row, "state"), *slot = str_of(row, "slot");
			char *name = state && strcmp(state, "held") == 0
					     ? campaign_of(str_of(row, "tag"))
					     : NULL;
			if (!name)
				continue;
			cJSON_AddStringToObject(row, "campaign", name);
			char *label = xasprintf("%s:%s", jobs[i].box->name, slot ? slot : "?");
			bool detached;
			char *job = detached_job(dir, name, label, &detached);
			if (detached)
				cJSON_AddBoolToObject(row, "campaign_detached", 1);
			if (job)
				cJSON_AddStringToObject(row, "campaign_job", job);
			free(job);
			free(label);
			free(name);
		}
	}
	free(dir);
}

static slot_probe *probe_of(slot_probe *jobs, size_t n, const char *box)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(jobs[i].box->name, box) == 0)
			return &jobs[i];
	return NULL;
}

static void add_line(cJSON *out, const conf_pool *p, slot_probe *j, const gate_agent *agent)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "pool", p->name);
	cJSON_AddStringToObject(o, "box", p->slots[0].box);
	if (!j) {
		cJSON_AddStringToObject(o, "error", "its first box was not listed");
	} else if (j->box->target.slurm) {
		cJSON_Delete(o); /* a Slurm box keeps no boxgate line: squeue is the queue */
		return;
	} else if (j->code || !j->conn) {
		cJSON_AddStringToObject(o, "error", j->error ? j->error : "not reached");
	} else {
		char *args = pool_line_list_args(p->name), *path = NULL, *text = NULL;
		bg_err err = {0};
		if (gate_agent_capture(j->conn, agent, args, &path, &text, &err) < 0) {
			size_t k = strlen(err.msg);
			while (k && err.msg[k - 1] == '\n')
				err.msg[--k] = '\0';
			cJSON_AddStringToObject(o, "error", err.msg);
		} else {
			cJSON_AddItemToObject(o, "waiters", pool_line_waiters(text));
		}
		free(args);
		free(path);
		free(text);
	}
	cJSON_AddItemToArray(out, o);
}

cJSON *slots_lines(const conf *c, const char *pool, slot_probe *jobs, size_t n,
		   const gate_agent *agent)
{
	cJSON *out = cJSON_CreateArray();
	for (size_t i = 0; i < c->n_pools; i++) {
		const conf_pool *p = &c->pools[i];
		if (!p->n_slots || (pool && strcmp(p->name, pool) != 0))
			continue;
		slot_probe *j = probe_of(jobs, n, p->slots[0].box);
		if (!pool && (!j || j->code))
			continue; /* not asked about this pool, its line box not reached */
		add_line(out, p, j, agent);
	}
	return out;
}

/* Text from a box, shown on a terminal: controls as '?'. */
static void add_clean(strbuf *b, const char *s)
{
	for (; s && *s; s++)
		strbuf_addch(b, (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s);
}

void slots_print_lines(const cJSON *lines, bool always)
{
	const cJSON *l;
	cJSON_ArrayForEach(l, lines)
	{
		const cJSON *w = cJSON_GetObjectItemCaseSensitive(l, "waiters"), *x;
		int nw = cJSON_GetArraySize(w);
		strbuf b = STRBUF_INIT;
		if (str_of(l, "error")) {
			strbuf_addf(&b, "\nline of pool %s (on %s): not read: ", str_of(l, "pool"),
				    str_of(l, "box"));
			add_clean(&b, str_of(l, "error"));
			strbuf_addch(&b, '\n');
		} else if (!nw && always) {
			strbuf_addf(&b, "\nline of pool %s (on %s): no one waits\n",
				    str_of(l, "pool"), str_of(l, "box"));
		} else if (nw) {
			strbuf_addf(
				&b,
				"\nline of pool %s (on %s): %d waiting, first come first served\n",
				str_of(l, "pool"), str_of(l, "box"), nw);
			cJSON_ArrayForEach(x, w)
			{
				const cJSON *pos = cJSON_GetObjectItemCaseSensitive(x, "position");
				const cJSON *t = cJSON_GetObjectItemCaseSensitive(x, "ticket");
				const cJSON *pid = cJSON_GetObjectItemCaseSensitive(x, "pid");
				const char *tag = str_of(x, "tag"), *since = str_of(x, "since");
				strbuf_addf(&b, "%3d  ", cJSON_IsNumber(pos) ? pos->valueint : 0);
				add_clean(&b, tag && *tag ? tag : "?");
				strbuf_addstr(&b, "  since ");
				add_clean(&b, since && *since ? since : "?");
				strbuf_addf(&b, "  (ticket %.0f",
					    cJSON_IsNumber(t) ? t->valuedouble : 0);
				if (cJSON_IsNumber(pid))
					strbuf_addf(&b, ", agent pid %d", pid->valueint);
				strbuf_addch(&b, ')');
				strbuf_addch(&b, '\n');
			}
		}
		if (b.len)
			cli_write(stdout, b.buf, b.len);
		strbuf_release(&b);
	}
}

void slots_print_lines_json(const cJSON *lines)
{
	const cJSON *l, *x;
	cJSON_ArrayForEach(l, lines)
	{
		if (str_of(l, "error")) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "line", str_of(l, "pool"));
			cJSON_AddStringToObject(o, "box", str_of(l, "box"));
			cJSON_AddStringToObject(o, "error", str_of(l, "error"));
			cli_print_json(o);
			cJSON_Delete(o);
			continue;
		}
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(l, "waiters"))
		{
			cJSON *o = cJSON_Duplicate(x, 1);
			cJSON_AddStringToObject(o, "line", str_of(l, "pool"));
			cJSON_AddStringToObject(o, "box", str_of(l, "box"));
			cli_print_json(o);
			cJSON_Delete(o);
		}
	}
}
