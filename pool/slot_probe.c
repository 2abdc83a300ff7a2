#include "pool/slot_probe.h"

#include <cjson/cJSON.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/exit.h"
#include "base/fanout.h"
#include "base/quote.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "gate/agent_proto.h"

char *slot_probe_who(void)
{
	char host[256] = "?";
	const char *user = getenv("USER");
	const struct passwd *pw = user && *user ? NULL : getpwuid(getuid());
	if (pw)
		user = pw->pw_name;
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	return xasprintf("%s@%s", user && *user ? user : "?", host);
}

struct probe_run {
	slot_probe *p;
	const gate_agent *agent;
	const remote_connect_opts *link;
	bool keep;
};

char *slot_probe_agent_args(const slot_probe *j, const char *who)
{
	strbuf cmd = STRBUF_INIT;
	strbuf_addstr(&cmd, j->action ? j->action : AGENT_CMD_SLOTS);
	if (j->gpus) {
		strbuf_addf(&cmd, " %s ", AGENT_OPT_GPUS);
		bg_quote(&cmd, j->gpus);
	}
	if (j->why) {
		strbuf_addf(&cmd, " %s ", AGENT_OPT_WHY);
		bg_quote(&cmd, j->why);
		strbuf_addf(&cmd, " %s ", AGENT_OPT_BY);
		bg_quote(&cmd, who);
	}
	return strbuf_detach(&cmd);
}

static cJSON *parse_rows(char *out)
{
	cJSON *rows = cJSON_CreateArray();
	for (char *l = out, *e; l && *l; l = e ? e + 1 : NULL) {
		e = strchr(l, '\n');
		if (e)
			*e = '\0';
		cJSON *o = cJSON_Parse(l);
		if (cJSON_IsObject(o))
			cJSON_AddItemToArray(rows, o);
		else
			cJSON_Delete(o);
	}
	return rows;
}

/* The pool's configuration disables some slots for its users: a free one reads
 * disabled, with the configured reason. */
static void mark_config_disabled(const slot_probe *j, cJSON *rows)
{
	const conf_pool *pool = j->pool;
	cJSON *row;
	cJSON_ArrayForEach(row, rows)
	{
		const cJSON *slot = cJSON_GetObjectItemCaseSensitive(row, "slot");
		if (!cJSON_IsString(slot))
			continue;
		bool off = false;
		for (size_t i = 0; pool && i < pool->n_disabled && !off; i++) {
			/* "BOX:GPU" names gpuGPU of BOX, a bare "BOX" its cpu slot */
			const char *e = pool->disabled[i], *colon = strchr(e, ':');
			size_t blen = colon ? (size_t)(colon - e) : strlen(e);
			const char *s = slot->valuestring;
			off = strlen(j->box->name) == blen && strncmp(e, j->box->name, blen) == 0 &&
			      (colon ? strncmp(s, "gpu", 3) == 0 && strcmp(s + 3, colon + 1) == 0
				     : strcmp(s, "cpu") == 0);
		}
		if (!off || cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(row, "disabled")))
			continue;
		char *by = xasprintf("pool %s in %s:%d", pool->name, pool->file, pool->line);
		cJSON_AddStringToObject(row, "why", pool->disabled_why);
		cJSON_AddStringToObject(row, "disabled_by", by);
		cJSON_AddBoolToObject(row, "disabled", 1);
		free(by);
		cJSON *state = cJSON_GetObjectItemCaseSensitive(row, "state");
		if (cJSON_IsString(state) && strcmp(state->valuestring, "free") == 0)
			cJSON_SetValuestring(state, "disabled");
	}
}

cJSON *slot_probe_rows(char *out, const slot_probe *p)
{
	cJSON *rows = parse_rows(out);
	mark_config_disabled(p, rows);
	return rows;
}

cJSON *slot_probe_slurm_rows(const remote_slurm_job *jobs, size_t n, int max_jobs)
{
	cJSON *rows = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		const remote_slurm_job *f = &jobs[i];
		cJSON *o = cJSON_CreateObject();
		char *slot = xasprintf("slurm:%s", f->id);
		cJSON_AddStringToObject(o, "slot", slot);
		free(slot);
		cJSON_AddStringToObject(o, "state",
					strcmp(f->state, "RUNNING") == 0   ? "held"
					: strcmp(f->state, "PENDING") == 0 ? "pending"
									   : f->state);
		cJSON_AddStringToObject(o, "slurm_job", f->id);
		cJSON_AddStringToObject(o, "slurm_state", f->state);
		cJSON_AddStringToObject(o, "gres", f->gres);
		cJSON_AddStringToObject(o, "node", f->node);
		cJSON_AddStringToObject(o, "since", f->elapsed);
		cJSON_AddStringToObject(o, "tag", f->user);
		cJSON_AddItemToArray(rows, o);
	}
	for (int k = (int)n; k < max_jobs; k++) {
		cJSON *o = cJSON_CreateObject();
		char *slot = xasprintf("slurm%d", k);
		cJSON_AddStringToObject(o, "slot", slot);
		free(slot);
		cJSON_AddStringToObject(o, "state", "free");
		cJSON_AddItemToArray(rows, o);
	}
	return rows;
}

static int slurm_rows(remote_conn *c, const conf_box *b, cJSON **rows, bg_err *err)
{
	char *text = NULL;
	remote_slurm_job *jobs = NULL;
	size_t n = 0;
	int rc = remote_slurm_queue(c, b->target.slurm, &text, &jobs, &n, err);
	if (rc == 0)
		*rows = slot_probe_slurm_rows(jobs, n, b->max_jobs);
	free(jobs);
	free(text);
	return rc;
}

static void probe_box(void *arg, size_t i)
{
	struct probe_run *pr = arg;
	slot_probe *j = &pr->p[i];
	remote_conn *c = NULL;
	bg_err err = {0};
	char *out = NULL;
	int rc = remote_connect(&j->box->target, pr->link, &c, &err);
	if (rc == 0) {
		/* the presence check and the call in one command */
		char *who = j->why ? slot_probe_who() : NULL;
		char *args = slot_probe_agent_args(j, who);
		free(who);
		rc = gate_agent_capture(c, pr->agent, args, &j->agent_path, &out, &err);
		free(args);
	}
	if (rc < 0) {
		size_t n = strlen(err.msg);
		while (n && err.msg[n - 1] == '\n')
			err.msg[--n] = '\0';
		j->error = xstrdup(err.msg);
		j->code = bg_exit_code(rc);
	} else if (!j->action && j->box->target.slurm) {
		rc = slurm_rows(c, j->box, &j->rows, &err);
		if (rc < 0) {
			j->error = xstrdup(err.msg);
			j->code = bg_exit_code(rc);
		}
	} else if (!j->action) {
		j->rows = slot_probe_rows(out, j);
	} else {
		j->out = out;
		out = NULL;
	}
	free(out);
	if (pr->keep && rc == 0)
		j->conn = c;
	else
		remote_close(c);
}

void slot_probe_all(slot_probe *p, size_t n, const gate_agent *agent,
		    const remote_connect_opts *link, bool keep)
{
	struct probe_run pr = {.p = p, .agent = agent, .link = link, .keep = keep};
	bg_fanout(n, 0, probe_box, &pr);
}

void slot_probe_release(slot_probe *p, size_t n)
{
	for (size_t i = 0; p && i < n; i++) {
		cJSON_Delete(p[i].rows);
		free(p[i].gpus);
		free(p[i].out);
		free(p[i].agent_path);
		free(p[i].error);
		remote_close(p[i].conn);
	}
	free(p);
}

/* The pool's boxes less those `exclude` names (owned; error printed, NULL, when
 * the exclusion names an unknown box or leaves nothing). */
static const conf_box **boxes_kept(const conf *c, const char *pool, const char *exclude,
				   size_t *n_kept, bg_err *err)
{
	const conf_box **kept = NULL;
	char *spec = xasprintf("@%s", pool);
	int rc = conf_select_except(c, spec, false, exclude, &kept, n_kept, err);
	free(spec);
	if (rc < 0)
		return NULL;
	if (*n_kept == 0) {
		free(kept);
		bg_fail(err, BG_EUSAGE,
			"the selection matched no box (--exclude took every box of pool '%s')",
			pool);
		return NULL;
	}
	return kept;
}

slot_probe *slot_probe_pool(const conf *c, const char *name, const char *exclude, size_t *n,
			    bg_err *err)
{
	const conf_pool *pool = conf_find_pool(c, name);
	if (!pool) {
		bg_fail(err, BG_EUSAGE, "no pool '%s' in %s", name,
			c->path ? c->path : "the configuration (none was loaded)");
		return NULL;
	}
	const conf_box **kept = NULL;
	size_t n_kept = 0;
	if (exclude && !(kept = boxes_kept(c, name, exclude, &n_kept, err)))
		return NULL;
	slot_probe *p = xcalloc(pool->n_slots ? pool->n_slots : 1, sizeof(*p));
	size_t k = 0;
	for (size_t i = 0; i < pool->n_slots; i++) {
		const conf_box *b = conf_find_box(c, pool->slots[i].box);
		bool keep = !exclude;
		for (size_t x = 0; x < n_kept; x++)
			keep = keep || kept[x] == b;
		if (!keep)
			continue;
		size_t j = 0;
		while (j < k && p[j].box != b)
			j++;
		const char *g = pool->slots[i].gpus ? pool->slots[i].gpus : b->gpus;
		if (j == k) {
			p[k].pool = pool;
			p[k].box = b;
			p[k++].gpus = g ? xstrdup(g) : NULL;
		} else if (g && p[j].gpus) {
			char *both = xasprintf("%s,%s", p[j].gpus, g);
			free(p[j].gpus);
			p[j].gpus = both;
		}
	}
	free(kept);
	*n = k;
	return p;
}
