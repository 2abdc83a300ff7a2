#include "conf/nodeset.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/xmalloc.h"

typedef struct strv {
	char **v;
	size_t n, cap;
} strv;

static void strv_push(strv *s, char *owned)
{
	s->v = xgrow(s->v, &s->cap, s->n + 1, sizeof(*s->v));
	s->v[s->n++] = owned;
}

void nodeset_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

const char *nodeset_scan_item(const char *p, const char *stops, const char **b, const char **e)
{
	int depth = 0;
	*b = p;
	while (*p && !(depth == 0 && strchr(stops, *p))) {
		if (*p == '[')
			depth++;
		else if (*p == ']' && depth > 0)
			depth--;
		p++;
	}
	*e = p;
	while (*b < *e && isspace((unsigned char)**b))
		(*b)++;
	while (*e > *b && isspace((unsigned char)(*e)[-1]))
		(*e)--;
	return p;
}

void nodeset_split(const char *spec, char ***out, size_t *n_out)
{
	strv r = {0};
	const char *p = spec;
	while (*p) {
		const char *b, *e;
		p = nodeset_scan_item(p, ",", &b, &e);
		if (e > b)
			strv_push(&r, xstrndup(b, (size_t)(e - b)));
		if (*p == ',')
			p++;
	}
	*out = r.v;
	*n_out = r.n;
}

/* One number of a range: its value and the width it was written with when it
 * starts with a zero ("01" keeps two digits). */
static bool parse_num(const char **p, const char *end, unsigned long *v, int *width)
{
	const char *s = *p;
	unsigned long x = 0;
	if (s >= end || !isdigit((unsigned char)*s))
		return false;
	const char *b = s;
	while (s < end && isdigit((unsigned char)*s)) {
		x = x * 10 + (unsigned long)(*s - '0');
		if (x > 999999999UL)
			return false;
		s++;
	}
	*width = (*b == '0' && s - b > 1) ? (int)(s - b) : 0;
	*v = x;
	*p = s;
	return true;
}

/* Expands the inside of one bracket group, "1-8,12" or "01-03/2". */
static int expand_group(const char *b, const char *e, strv *out, bg_err *err)
{
	const char *p = b;
	for (;;) {
		while (p < e && isspace((unsigned char)*p))
			p++;
		unsigned long lo, hi, step = 1;
		int width, hw;
		if (!parse_num(&p, e, &lo, &width))
			return bg_fail(err, BG_EUSAGE, "expected a number in '[%.*s]'",
				       (int)(e - b), b);
		hi = lo;
		while (p < e && isspace((unsigned char)*p))
			p++;
		if (p < e && *p == '-') {
			p++;
			while (p < e && isspace((unsigned char)*p))
				p++;
			if (!parse_num(&p, e, &hi, &hw))
				return bg_fail(err, BG_EUSAGE,
					       "expected a number after '-' in '[%.*s]'",
					       (int)(e - b), b);
			if (hi < lo)
				return bg_fail(err, BG_EUSAGE,
					       "range %lu-%lu goes backwards in '[%.*s]'", lo, hi,
					       (int)(e - b), b);
			if (p < e && *p == '/') {
				p++;
				int sw;
				if (!parse_num(&p, e, &step, &sw) || step == 0)
					return bg_fail(err, BG_EUSAGE, "bad step in '[%.*s]'",
						       (int)(e - b), b);
			}
		}
		if ((hi - lo) / step + 1 + out->n > NODESET_MAX)
			return bg_fail(err, BG_EUSAGE, "'[%.*s]' expands to more than %d names",
				       (int)(e - b), b, NODESET_MAX);
		for (unsigned long x = lo; x <= hi; x += step)
			strv_push(out, xasprintf("%0*lu", width, x));
		while (p < e && isspace((unsigned char)*p))
			p++;
		if (p == e)
			return 0;
		if (*p != ',')
			return bg_fail(err, BG_EUSAGE, "unexpected '%c' in '[%.*s]'", *p,
				       (int)(e - b), b);
		p++;
	}
}

/* Expands one item (no top-level commas) into out. */
static int expand_item(const char *item, strv *out, bg_err *err)
{
	int rc = 0;
	strv cur = {0};
	strv_push(&cur, xstrdup(""));
	const char *p = item;
	while (*p) {
		const char *lit = p;
		while (*p && *p != '[' && *p != ']')
			p++;
		if (*p == ']') {
			rc = bg_fail(err, BG_EUSAGE, "'%s': ']' without '['", item);
			goto out;
		}
		if (p > lit) {
			for (size_t i = 0; i < cur.n; i++) {
				char *s = xasprintf("%s%.*s", cur.v[i], (int)(p - lit), lit);
				free(cur.v[i]);
				cur.v[i] = s;
			}
		}
		if (*p != '[')
			break;
		const char *gb = ++p;
		while (*p && *p != ']' && *p != '[')
			p++;
		if (*p != ']') {
			rc = bg_fail(err, BG_EUSAGE, "'%s': '[' without ']'", item);
			goto out;
		}
		strv grp = {0};
		rc = expand_group(gb, p, &grp, err);
		if (rc == 0 && cur.n * grp.n + out->n > NODESET_MAX)
			rc = bg_fail(err, BG_EUSAGE, "'%s' expands to more than %d names", item,
				     NODESET_MAX);
		if (rc) {
			nodeset_free(grp.v, grp.n);
			goto out;
		}
		strv next = {0};
		for (size_t i = 0; i < cur.n; i++)
			for (size_t j = 0; j < grp.n; j++)
				strv_push(&next, xasprintf("%s%s", cur.v[i], grp.v[j]));
		nodeset_free(grp.v, grp.n);
		nodeset_free(cur.v, cur.n);
		cur = next;
		p++;
	}
	for (size_t i = 0; i < cur.n; i++) {
		strv_push(out, cur.v[i]);
		cur.v[i] = NULL;
	}
out:
	nodeset_free(cur.v, cur.n);
	return rc;
}

int nodeset_expand_one(const char *operand, char ***out, size_t *n_out, bg_err *err)
{
	strv r = {0};
	int rc = expand_item(operand, &r, err);
	if (rc) {
		nodeset_free(r.v, r.n);
		r.v = NULL;
		r.n = 0;
	}
	*out = r.v;
	*n_out = r.n;
	return rc;
}
