/* A campaign's slots (campaign/slots.h). */
#include "campaign/slots.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "base/parse.h"
#include "base/xmalloc.h"

sched_box *campaign_pool_boxes(const conf *c, const char *pool, size_t *n)
{
	const conf_pool *pl = conf_find_pool(c, pool);
	sched_box *b = xcalloc(pl->n_slots ? pl->n_slots : 1, sizeof(*b));
	size_t k = 0;
	for (size_t i = 0; i < pl->n_slots; i++) {
		const conf_box *box = conf_find_box(c, pl->slots[i].box);
		size_t j = 0;
		while (j < k && b[j].box != box)
			j++;
		if (j == k)
			b[k++].box = box;
	}
	*n = k;
	return b;
}

/* One worker's slot (gpus and label owned). `held[k]`: it gets no staging
 * partner. The box's first slot keeps the connection that asked. */
static void add_slot(sched *s, bool **held, sched_box *sb, slot_probe *p, char *gpus, char *label,
		     bool no_partner)
{
	*held = xrealloc(*held, (s->n_slots + 1) * sizeof(**held));
	(*held)[s->n_slots] = no_partner;
	s->slots = xrealloc(s->slots, (s->n_slots + 1) * sizeof(*s->slots));
	sched_slot *w = &s->slots[s->n_slots++];
	memset(w, 0, sizeof(*w));
	w->b = sb;
	w->gpus = gpus;
	w->label = label;
	if (p->conn) {
		w->conn = p->conn;
		w->agent_path = p->agent_path;
		p->conn = NULL;
		p->agent_path = NULL;
	}
}

static const char *row_string(const cJSON *row, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The slots of one box that answered. */
static void take_box(sched *s, bool **held, sched_box *sb, slot_probe *p,
		     const campaign_slots_cb *cb)
{
	if (p->box->slurm) {
		/* Slurm owns the GPUs: max_jobs steps at once, each given its GPU by
		 * Slurm; no second worker (a staged srun would only wait in Slurm's
		 * queue, holding a place another job could use). */
		for (int k = 0; k < p->box->max_jobs; k++)
			add_slot(s, held, sb, p, NULL, xasprintf("%s:slurm%d", p->box->name, k),
				 true);
		return;
	}
	const cJSON *row;
	cJSON_ArrayForEach(row, p->rows)
	{
		const char *state = row_string(row, "state");
		const char *sl = row_string(row, "slot");
		const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(row, "gpu");
		if (!state)
			state = "?";
		if (!sl)
			sl = "?";
		bool is_held = strcmp(state, "held") == 0;
		if (strcmp(state, "free") != 0 && !is_held) {
			if (cb && cb->slot_left_out)
				cb->slot_left_out(cb->ctx, p->box, sl, state,
						  row_string(row, "why"));
			continue;
		}
		if (is_held && cb && cb->slot_held)
			cb->slot_held(cb->ctx, p->box, sl, row_string(row, "tag"));
		add_slot(s, held, sb, p,
			 cJSON_IsNumber(gpu) ? xasprintf("%d", gpu->valueint) : NULL,
			 xasprintf("%s:%s", p->box->name, sl), is_held);
	}
}

/* Every slot nobody else held gets a second worker (its own connection,
 * opened by its thread) that stages the next job while the first runs one;
 * a slot another run holds gets none, so no job waits long behind a
 * stranger's run. */
static void add_partners(sched *s, const bool *held)
{
	size_t n = s->n_slots, k = n;
	s->n_groups = n;
	s->slots = xrealloc(s->slots, (n ? 2 * n : 1) * sizeof(*s->slots));
	for (size_t i = 0; i < n; i++) {
		if (held[i])
			continue;
		sched_slot *a = &s->slots[i], *b = &s->slots[k++];
		memset(b, 0, sizeof(*b));
		b->b = a->b;
		b->gpus = a->gpus ? xstrdup(a->gpus) : NULL;
		b->label = xstrdup(a->label);
	}
	s->n_slots = k;
	for (size_t i = 0, j = n; i < n; i++) {
		if (held[i])
			continue;
		s->slots[i].partner = &s->slots[j];
		s->slots[j++].partner = &s->slots[i];
	}
}

int campaign_slots_take(sched *s, slot_probe *p, size_t np, const campaign_slots_cb *cb)
{
	int code = 0;
	size_t reached = 0;
	bool *held = NULL; /* per slot: another run held it when asked */
	for (size_t i = 0; i < np; i++) {
		sched_box *sb = NULL;
		for (size_t b = 0; b < s->n_boxes && !sb; b++)
			if (s->boxes[b].box == p[i].box)
				sb = &s->boxes[b];
		if (!sb)
			continue; /* not a box of this campaign */
		if (p[i].code) {
			if (cb && cb->box_left_out)
				cb->box_left_out(cb->ctx, p[i].box, p[i].error ? p[i].error : "");
			code = bg_exit_merge(code, p[i].code);
			sb->quarantined = true;
			continue;
		}
		reached++;
		take_box(s, &held, sb, &p[i], cb);
	}
	add_partners(s, held);
	free(held);
	if (!reached)
		return code ? code : BG_EXIT_CONNECT;
	return 0;
}

void campaign_slots_release(sched *s)
{
	for (size_t i = 0; i < s->n_slots; i++) {
		remote_close(s->slots[i].conn);
		free(s->slots[i].agent_path);
		free(s->slots[i].gpus);
		free(s->slots[i].label);
	}
	free(s->slots);
	s->slots = NULL;
	s->n_slots = s->n_groups = 0;
}

static void push_label(char ***v, size_t *n, char *label)
{
	*v = xrealloc(*v, (*n + 1) * sizeof(**v));
	(*v)[(*n)++] = label;
}

char **campaign_slots_configured(const conf *c, const char *pool, size_t *n)
{
	const conf_pool *pl = conf_find_pool(c, pool);
	char **slots = NULL;
	*n = 0;
	for (size_t i = 0; pl && i < pl->n_slots; i++) {
		const conf_box *b = conf_find_box(c, pl->slots[i].box);
		const char *g = pl->slots[i].gpus ? pl->slots[i].gpus : b->gpus;
		bool set[BG_MAX_GPUS];
		const char *why;
		if (b->slurm) {
			for (int k = 0; k < b->max_jobs; k++)
				push_label(&slots, n, xasprintf("%s:slurm%d", b->name, k));
			continue;
		}
		if (!g || !bg_gpus_parse(g, set, &why)) {
			push_label(&slots, n, xasprintf("%s:cpu", b->name));
			continue;
		}
		for (int k = 0; k < BG_MAX_GPUS; k++)
			if (set[k])
				push_label(&slots, n, xasprintf("%s:gpu%d", b->name, k));
	}
	return slots;
}
