/* Turning `--boxes a,b200-[1-4],@pool` and `--all` into boxes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "conf/conf.h"
#include "conf/internal.h"
#include "conf/nodeset.h"

static int unknown(const conf *c, const char *what, const char *name, const char *from, bool pool,
		   bg_err *err)
{
	size_t n = pool ? c->n_pools : c->n_boxes;
	const char **cands = xcalloc(n ? n : 1, sizeof(*cands));
	for (size_t i = 0; i < n; i++)
		cands[i] = pool ? c->pools[i].name : c->boxes[i].name;
	const char *s = conf_suggest(name, cands, n);
	char extra[400] = "";
	if (from && strcmp(from, name) != 0)
		snprintf(extra, sizeof(extra), " (from '%s')", from);
	int rc;
	if (s)
		rc = bg_fail(err, BG_ENOTFOUND, "unknown %s '%s%s'%s (did you mean '%s%s'?)", what,
			     pool ? "@" : "", name, extra, pool ? "@" : "", s);
	else
		rc = bg_fail(err, BG_ENOTFOUND, "unknown %s '%s%s'%s", what, pool ? "@" : "", name,
			     extra);
	free(cands);
	return rc;
}

static long box_index(const conf *c, const char *name)
{
	for (size_t i = 0; i < c->n_boxes; i++)
		if (strcmp(c->boxes[i].name, name) == 0)
			return (long)i;
	return -1;
}

int conf_select(const conf *c, const char *spec, bool all, const conf_box ***out, size_t *n_out,
		bg_err *err)
{
	int rc = 0;
	bool *chosen = xcalloc(c->n_boxes ? c->n_boxes : 1, sizeof(*chosen));
	char **items = NULL;
	size_t n_items = 0;
	*out = NULL;
	*n_out = 0;
	if (all) {
		size_t real = 0;
		for (size_t i = 0; i < c->n_boxes; i++)
			if (!c->boxes[i].builtin)
				chosen[i] = true, real++;
		if (real == 0)
			for (size_t i = 0; i < c->n_boxes; i++)
				chosen[i] = true;
	}
	if (spec)
		nodeset_split(spec, &items, &n_items);
	for (size_t i = 0; i < n_items && rc == 0; i++) {
		const char *it = items[i];
		if (it[0] == '@') {
			const conf_pool *p = conf_find_pool(c, it + 1);
			if (!p) {
				rc = unknown(c, "pool", it + 1, NULL, true, err);
				break;
			}
			for (size_t j = 0; j < p->n_slots; j++) {
				long bi = box_index(c, p->slots[j].box);
				if (bi >= 0)
					chosen[bi] = true;
			}
			continue;
		}
		char **names = NULL;
		size_t n_names = 0;
		rc = nodeset_expand(it, &names, &n_names, err);
		for (size_t j = 0; j < n_names && rc == 0; j++) {
			long bi = box_index(c, names[j]);
			if (bi < 0)
				rc = unknown(c, "box", names[j], it, false, err);
			else
				chosen[bi] = true;
		}
		nodeset_free(names, n_names);
	}
	if (rc == 0) {
		size_t n = 0;
		for (size_t i = 0; i < c->n_boxes; i++)
			n += chosen[i];
		const conf_box **v = xcalloc(n ? n : 1, sizeof(*v));
		n = 0;
		for (size_t i = 0; i < c->n_boxes; i++)
			if (chosen[i])
				v[n++] = &c->boxes[i];
		*out = v;
		*n_out = n;
	}
	nodeset_free(items, n_items);
	free(chosen);
	return rc;
}
