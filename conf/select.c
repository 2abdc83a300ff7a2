/* Turning `--boxes a,b200-[1-4]!b200-2,@pool`, `--exclude` and `--all` into boxes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "conf/conf.h"
#include "conf/internal.h"
#include "conf/nodeset.h"

/* "unknown box 'h9' to exclude (from 'h[8-9]') (did you mean 'h1'?)": `role` follows the name. */
static int unknown(const conf *c, const char *what, const char *name, const char *role,
		   const char *from, bool pool, bg_err *err)
{
	size_t n = pool ? c->n_pools : c->n_boxes;
	const char **cands = xcalloc(n ? n : 1, sizeof(*cands));
	for (size_t i = 0; i < n; i++)
		cands[i] = pool ? c->pools[i].name : c->boxes[i].name;
	const char *s = conf_suggest(name, cands, n);
	char extra[400] = "", hint[300] = "", none[700] = "";
	if (from && strcmp(from, name) != 0)
		snprintf(extra, sizeof(extra), " (from '%s')", from);
	if (s)
		snprintf(hint, sizeof(hint), " (did you mean '%s%s'?)", pool ? "@" : "", s);
	/* The likeliest reason of all: the file with the boxes was never found. */
	if (!c->path && c->not_found)
		snprintf(none, sizeof(none), " (no config file was loaded: %s)", c->not_found);
	int rc = bg_fail(err, BG_ENOTFOUND, "unknown %s '%s%s'%s%s%s%s", what, pool ? "@" : "",
			 name, role, extra, hint, none);
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

/* Marks in `in` the boxes one operand names: "@pool" or a node set. */
static int mark_operand(const conf *c, const nodeset_term *t, const char *role, bool *in,
			bg_err *err)
{
	const char *it = t->text;
	char from[300];
	/* A name after '!' shows with its operator, so the error says where it was. */
	if (t->op == NODESET_UNION)
		snprintf(from, sizeof(from), "%s", it);
	else
		snprintf(from, sizeof(from), "%c%s", (char)t->op, it);
	if (it[0] == '@') {
		const conf_pool *p = conf_find_pool(c, it + 1);
		if (!p)
			return unknown(c, "pool", it + 1, role, NULL, true, err);
		for (size_t j = 0; j < p->n_slots; j++) {
			long bi = box_index(c, p->slots[j].box);
			if (bi >= 0)
				in[bi] = true;
		}
		return 0;
	}
	char **names = NULL;
	size_t n_names = 0;
	int rc = nodeset_expand_one(it, &names, &n_names, err);
	for (size_t j = 0; j < n_names && rc == 0; j++) {
		long bi = box_index(c, names[j]);
		if (bi < 0)
			rc = unknown(c, "box", names[j], role, from, false, err);
		else
			in[bi] = true;
	}
	nodeset_free(names, n_names);
	return rc;
}

/* Applies `spec`'s terms, left to right, to `chosen` (what --all gave, or nothing). */
static int apply_spec(const conf *c, const char *spec, const char *role, bool *chosen, bg_err *err)
{
	nodeset_term *terms = NULL;
	size_t n_terms = 0;
	size_t nb = c->n_boxes ? c->n_boxes : 1;
	bool *in = xcalloc(nb, sizeof(*in));
	int rc = nodeset_terms(spec, &terms, &n_terms, err);
	for (size_t i = 0; i < n_terms && rc == 0; i++) {
		memset(in, 0, nb * sizeof(*in));
		rc = mark_operand(c, &terms[i], role, in, err);
		for (size_t b = 0; b < c->n_boxes && rc == 0; b++) {
			switch (terms[i].op) {
			case NODESET_UNION: chosen[b] = chosen[b] || in[b]; break;
			case NODESET_MINUS: chosen[b] = chosen[b] && !in[b]; break;
			case NODESET_AND: chosen[b] = chosen[b] && in[b]; break;
			case NODESET_XOR: chosen[b] = chosen[b] != in[b]; break;
			}
		}
	}
	nodeset_terms_free(terms, n_terms);
	free(in);
	return rc;
}

int conf_select_except(const conf *c, const char *spec, bool all, const char *exclude,
		       const conf_box ***out, size_t *n_out, bg_err *err)
{
	int rc = 0;
	size_t nb = c->n_boxes ? c->n_boxes : 1;
	bool *chosen = xcalloc(nb, sizeof(*chosen));
	bool *gone = xcalloc(nb, sizeof(*gone));
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
		rc = apply_spec(c, spec, "", chosen, err);
	if (rc == 0 && exclude)
		rc = apply_spec(c, exclude, " to exclude", gone, err);
	if (rc == 0) {
		size_t n = 0;
		for (size_t i = 0; i < c->n_boxes; i++)
			n += chosen[i] = chosen[i] && !gone[i];
		const conf_box **v = xcalloc(n ? n : 1, sizeof(*v));
		n = 0;
		for (size_t i = 0; i < c->n_boxes; i++)
			if (chosen[i])
				v[n++] = &c->boxes[i];
		*out = v;
		*n_out = n;
	}
	free(gone);
	free(chosen);
	return rc;
}

int conf_select(const conf *c, const char *spec, bool all, const conf_box ***out, size_t *n_out,
		bg_err *err)
{
	return conf_select_except(c, spec, all, NULL, out, n_out, err);
}

const conf_box *conf_find_box(const conf *c, const char *name)
{
	for (size_t i = 0; name && i < c->n_boxes; i++)
		if (strcmp(c->boxes[i].name, name) == 0)
			return &c->boxes[i];
	return NULL;
}

const conf_pool *conf_find_pool(const conf *c, const char *name)
{
	for (size_t i = 0; name && i < c->n_pools; i++)
		if (strcmp(c->pools[i].name, name) == 0)
			return &c->pools[i];
	return NULL;
}

/* Path rules match the whole repo-relative path; extension rules the end of
 * the file name, the longest matching extension first, configuration order
 * (user rules before the built-ins) breaking ties. An empty command turns
 * verification off for what it matches. */
