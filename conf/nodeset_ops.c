/* clush's operators between node sets: splitting an expression into terms
 * and evaluating it on names. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "conf/nodeset.h"

void nodeset_terms_free(nodeset_term *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(t[i].text);
	free(t);
}

int nodeset_terms(const char *spec, nodeset_term **out, size_t *n_out, bg_err *err)
{
	nodeset_term *t = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	nodeset_op op = NODESET_UNION;
	bool prev_empty = false; /* the segment before `op` was blank */
	const char *p = spec;
	*out = NULL;
	*n_out = 0;
	for (;;) {
		const char *b, *e;
		p = nodeset_scan_item(p, NODESET_OPS, &b, &e);
		if (e > b) {
			if (op != NODESET_UNION && (n == 0 || prev_empty)) {
				rc = bg_fail(err, BG_EUSAGE,
					     "'%c' needs a node set before it in '%s'", (char)op,
					     spec);
				goto out;
			}
			t = xgrow(t, &cap, n + 1, sizeof(*t));
			t[n].op = op;
			t[n++].text = xstrndup(b, (size_t)(e - b));
		} else if (op != NODESET_UNION) {
			rc = bg_fail(err, BG_EUSAGE, "'%c' needs a node set after it in '%s'",
				     (char)op, spec);
			goto out;
		} /* else an empty comma item, skipped as boxgate always did (clush refuses it) */
		prev_empty = e == b;
		if (!*p)
			break;
		op = (nodeset_op)*p++;
	}
	*out = t;
	*n_out = n;
	t = NULL;
	n = 0;
out:
	nodeset_terms_free(t, n);
	return rc;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Which names of `v` the other list holds (sorted lookups: a set may hold
 * NODESET_MAX names). Owned. */
static bool *marks(char *const *v, size_t n, char *const *other, size_t n_other)
{
	bool *m = xcalloc(n ? n : 1, sizeof(*m));
	char **sorted = xcalloc(n_other ? n_other : 1, sizeof(*sorted));
	if (n_other)
		memcpy(sorted, other, n_other * sizeof(*sorted));
	qsort(sorted, n_other, sizeof(*sorted), cmp_names);
	for (size_t i = 0; i < n; i++)
		m[i] = bsearch(&v[i], sorted, n_other, sizeof(*sorted), cmp_names) != NULL;
	free(sorted);
	return m;
}

/* Keeps the names of *v whose mark is `keep`, in order; frees the rest. */
static void filter(char **v, size_t *n, const bool *m, bool keep)
{
	size_t k = 0;
	for (size_t i = 0; i < *n; i++) {
		if (m[i] == keep)
			v[k++] = v[i];
		else
			free(v[i]);
	}
	*n = k;
}

/* acc OP rhs into acc; rhs is left holding what still joins acc. */
static void apply(nodeset_op op, char **acc, size_t *n, char **rhs, size_t *n_rhs)
{
	if (op == NODESET_UNION)
		return;
	bool *in_rhs = marks(acc, *n, rhs, *n_rhs);
	bool *in_acc = marks(rhs, *n_rhs, acc, *n);
	filter(acc, n, in_rhs, op == NODESET_AND);
	if (op == NODESET_XOR) {
		/* What only the right side holds joins after what only the left holds. */
		filter(rhs, n_rhs, in_acc, false);
	} else {
		for (size_t i = 0; i < *n_rhs; i++)
			free(rhs[i]);
		*n_rhs = 0;
	}
	free(in_rhs);
	free(in_acc);
}

int nodeset_expand(const char *spec, char ***out, size_t *n_out, bg_err *err)
{
	nodeset_term *terms = NULL;
	size_t n_terms = 0, n = 0, cap = 0;
	char **acc = NULL;
	*out = NULL;
	*n_out = 0;
	int rc = nodeset_terms(spec, &terms, &n_terms, err);
	for (size_t i = 0; i < n_terms && rc == 0; i++) {
		char **rhs = NULL;
		size_t n_rhs = 0;
		rc = nodeset_expand_one(terms[i].text, &rhs, &n_rhs, err);
		if (rc == 0)
			apply(terms[i].op, acc, &n, rhs, &n_rhs);
		if (rc == 0 && n + n_rhs > NODESET_MAX)
			rc = bg_fail(err, BG_EUSAGE, "'%s' expands to more than %d names", spec,
				     NODESET_MAX);
		if (rc) {
			nodeset_free(rhs, n_rhs);
			break;
		}
		acc = xgrow(acc, &cap, n + n_rhs + 1, sizeof(*acc));
		memcpy(acc + n, rhs, n_rhs * sizeof(*rhs));
		n += n_rhs;
		free(rhs);
	}
	nodeset_terms_free(terms, n_terms);
	if (rc) {
		nodeset_free(acc, n);
		return rc;
	}
	*out = acc;
	*n_out = n;
	return 0;
}
