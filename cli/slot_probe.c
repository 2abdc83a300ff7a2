#include "cli/slot_probe.h"

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
#include "gate/run.h"

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
	bool accept_new, keep, quiet;
};

/* The agent's words for the probe: its slots command, or the probe's action. */
static char *agent_args(const slot_probe *j)
{
	strbuf cmd = STRBUF_INIT;
	strbuf_addstr(&cmd, j->action ? j->action : AGENT_CMD_SLOTS);
	if (j->gpus) {
		strbuf_addf(&cmd, " %s ", AGENT_OPT_GPUS);
		bg_quote(&cmd, j->gpus);
	}
	if (j->why) {
		char *me = slot_probe_who();
		strbuf_addf(&cmd, " %s ", AGENT_OPT_WHY);
		bg_quote(&cmd, j->why);
		strbuf_addf(&cmd, " %s ", AGENT_OPT_BY);
		bg_quote(&cmd, me);
		free(me);
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

/* A Slurm box: boxgate's jobs (named boxgate-ID) from squeue (held: running; pending: queued),
 * then its free places up to max_jobs. */
static int slurm_rows(remote_conn *c, const conf_box *b, cJSON **rows, bg_err *err)
{
	strbuf cmd = STRBUF_INIT;
	gate_slurm_env(&cmd, b);
	strbuf_addstr(&cmd, "squeue -h -o '%i|%T|%b|%N|%M|%u|%j'");
	char *out = NULL;
	size_t len = 0;
	remote_status st;
	int rc = remote_capture(c, cmd.buf, 1 << 20, 30000, &out, &len, &st, err);
	strbuf_release(&cmd);
	if (rc == 0 && (st.how != REMOTE_EXITED || st.code != 0))
		rc = bg_fail(err, BG_EREMOTE, "%s: squeue failed (%s)", b->name,
			     st.how == REMOTE_EXITED ? "non-zero exit" : "no exit status");
	if (rc < 0) {
		free(out);
		return rc;
	}
	*rows = cJSON_CreateArray();
	int used = 0;
	for (char *l = out, *e; l && *l; l = e ? e + 1 : NULL) {
		e = strchr(l, '\n');
		if (e)
			*e = '\0';
		char *f[7] = {0};
		int nf = 0;
		for (char *p = l; nf < 7; nf++) {
			f[nf] = p;
			p = strchr(p, '|');
			if (!p) {
				nf++;
				break;
			}
			*p++ = '\0';
		}
		if (nf < 7 ||
		    strncmp(f[6], GATE_SLURM_JOB_PREFIX, strlen(GATE_SLURM_JOB_PREFIX)) != 0)
			continue; /* not boxgate's */
		cJSON *o = cJSON_CreateObject();
		char *slot = xasprintf("slurm:%s", f[0]);
		cJSON_AddStringToObject(o, "slot", slot);
		free(slot);
		cJSON_AddStringToObject(o, "state",
					strcmp(f[1], "RUNNING") == 0   ? "held"
					: strcmp(f[1], "PENDING") == 0 ? "pending"
								       : f[1]);
		cJSON_AddStringToObject(o, "slurm_job", f[0]);
		cJSON_AddStringToObject(o, "slurm_state", f[1]);
		cJSON_AddStringToObject(o, "gres", f[2]);
		cJSON_AddStringToObject(o, "node", f[3]);
		cJSON_AddStringToObject(o, "since", f[4]);
		cJSON_AddStringToObject(o, "tag", f[5]);
		cJSON_AddItemToArray(*rows, o);
		used++;
	}
	free(out);
	for (int k = used; k < b->max_jobs; k++) {
		cJSON *o = cJSON_CreateObject();
		char *slot = xasprintf("slurm%d", k);
		cJSON_AddStringToObject(o, "slot", slot);
		free(slot);
		cJSON_AddStringToObject(o, "state", "free");
		cJSON_AddItemToArray(*rows, o);
	}
	return 0;
}

static void probe_box(void *arg, size_t i)
{
	struct probe_run *pr = arg;
	slot_probe *j = &pr->p[i];
	remote_conn *c = NULL;
	bg_err err = {0};
	char *out = NULL;
	int rc = cli_connect(j->box, pr->accept_new, &c, &err);
	if (rc == 0) {
		/* the presence check and the call in one command */
		char *args = agent_args(j);
		rc = gate_agent_capture(c, pr->agent, args, &j->agent_path, &out, &err);
		free(args);
	}
	if (rc < 0) {
		size_t n = strlen(err.msg);
		while (n && err.msg[n - 1] == '\n')
			err.msg[--n] = '\0';
		j->error = xstrdup(err.msg);
		if (!pr->quiet)
			cli_error("%s", err.msg);
		j->code = bg_exit_code(rc);
	} else if (!j->action && j->box->slurm) {
		rc = slurm_rows(c, j->box, &j->rows, &err);
		if (rc < 0) {
			j->error = xstrdup(err.msg);
			if (!pr->quiet)
				cli_error("%s", err.msg);
			j->code = bg_exit_code(rc);
		}
	} else if (!j->action) {
		j->rows = parse_rows(out);
		mark_config_disabled(j, j->rows);
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

void slot_probe_all(slot_probe *p, size_t n, const gate_agent *agent, bool accept_new, bool keep,
		    bool quiet)
{
	struct probe_run pr = {
		.p = p, .agent = agent, .accept_new = accept_new, .keep = keep, .quiet = quiet};
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
				   size_t *n_kept)
{
	bg_err err = {0};
	const conf_box **kept = NULL;
	char *spec = xasprintf("@%s", pool);
	int rc = conf_select_except(c, spec, false, exclude, &kept, n_kept, &err);
	free(spec);
	if (rc < 0) {
		cli_error("%s", err.msg);
		return NULL;
	}
	if (*n_kept == 0) {
		free(kept);
		cli_error("the selection matched no box (--exclude took every box of pool '%s')",
			  pool);
		return NULL;
	}
	return kept;
}

slot_probe *slot_probe_pool(const conf *c, const char *name, const char *exclude, size_t *n)
{
	const conf_pool *pool = conf_find_pool(c, name);
	if (!pool) {
		cli_error("no pool '%s' in %s", name,
			  c->path ? c->path : "the configuration (none was loaded)");
		return NULL;
	}
	const conf_box **kept = NULL;
	size_t n_kept = 0;
	if (exclude && !(kept = boxes_kept(c, name, exclude, &n_kept)))
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
