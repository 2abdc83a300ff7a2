/* Each pool's first-come line read from its first box (pool/lines.h). */
#include "pool/lines.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "pool/line.h"

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

cJSON *pool_lines_read(const conf *c, const char *pool, slot_probe *jobs, size_t n,
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
