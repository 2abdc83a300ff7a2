/* Records grouped into points (results/points.h). */
#include "results/points.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "gate/client/result.h"
#include "results/record.h"

static const char *const fixed_names[RESULTS_FIXED_FIELDS] = {"device", "kind", "shape",
							      "num-workers", "candidate"};

/* The point's own flags, held in the fixed fields (value-taking ones first). */
static const char *const own_flags[] = {"--kind",   "--shape",     "--configs", "--num-workers",
					"--kernel", "--candidate", "--baseline"};
enum { OWN_FLAGS_WITH_VALUE = 6 };

static const cJSON *get(const cJSON *o, const char *key)
{
	return o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

static const char *str_of(const cJSON *o, const char *key)
{
	const cJSON *v = get(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void add_field(results_field **f, size_t *n, size_t *cap, const char *name,
		      const char *value)
{
	*f = xgrow(*f, cap, *n + 1, sizeof(**f));
	(*f)[*n].name = xstrdup(name);
	(*f)[*n].value = xstrdup(value && *value ? value : "-");
	(*n)++;
}

/* The record's key fields (owned array). */
static results_field *key_of(const cJSON *rec, size_t *n_out)
{
	results_field *f = NULL;
	size_t n = 0, cap = 0;
	const cJSON *pt = get(rec, "point"), *camp = get(rec, "campaign"),
		    *res = get(rec, "result");
	const char *device = str_of(rec, "gpu_name");
	if (!device)
		device = str_of(rec, "box");
	add_field(&f, &n, &cap, fixed_names[0], device);
	const char *v = str_of(pt, "kind");
	add_field(&f, &n, &cap, fixed_names[1], v ? v : str_of(res, "kind"));
	v = str_of(pt, "shape");
	if (!v)
		v = str_of(camp, "shape");
	add_field(&f, &n, &cap, fixed_names[2], v ? v : str_of(res, "shape"));
	const cJSON *nw = get(pt, "num_workers");
	if (!cJSON_IsNumber(nw))
		nw = get(camp, "num_workers");
	char nwbuf[32] = "-";
	if (cJSON_IsNumber(nw) && nw->valuedouble == floor(nw->valuedouble) &&
	    fabs(nw->valuedouble) < 1e15)
		snprintf(nwbuf, sizeof(nwbuf), "%lld", (long long)nw->valuedouble);
	add_field(&f, &n, &cap, fixed_names[3], nwbuf);
	v = str_of(pt, "candidate");
	add_field(&f, &n, &cap, fixed_names[4], v ? v : str_of(camp, "candidate"));

	const cJSON *ga = get(rec, "gate_args");
	for (const cJSON *a = cJSON_IsArray(ga) ? ga->child : NULL; a;) {
		const char *w = cJSON_IsString(a) ? a->valuestring : "";
		size_t i = 0, len = strcspn(w, "=");
		while (i < sizeof(own_flags) / sizeof(own_flags[0]) &&
		       !(strlen(own_flags[i]) == len && strncmp(own_flags[i], w, len) == 0))
			i++;
		a = a->next;
		if (i < sizeof(own_flags) / sizeof(own_flags[0])) {
			if (i < OWN_FLAGS_WITH_VALUE && !w[len] && a)
				a = a->next; /* the flag's value */
			continue;
		}
		if (strncmp(w, "--", 2) != 0 || !w[2]) {
			add_field(&f, &n, &cap, "", w); /* a word of its own */
			continue;
		}
		char *name = xstrndup(w + 2, len - 2);
		const char *value = w[len] ? w + len + 1 : NULL;
		if (!value && a && cJSON_IsString(a) && strncmp(a->valuestring, "--", 2) != 0) {
			value = a->valuestring;
			a = a->next;
		}
		add_field(&f, &n, &cap, name, value ? value : "");
		free(name);
	}
	*n_out = n;
	return f;
}

static void free_fields(results_field *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(f[i].name);
		free(f[i].value);
	}
	free(f);
}

static bool same_fields(const results_field *a, size_t na, const results_field *b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i].name, b[i].name) != 0 || strcmp(a[i].value, b[i].value) != 0)
			return false;
	return true;
}

static void push(double **v, size_t *n, size_t *cap, double x)
{
	*v = xgrow(*v, cap, *n + 1, sizeof(**v));
	(*v)[(*n)++] = x;
}

static void keep_min(char **dst, const char *s, bool min)
{
	if (!s || (*dst && (min ? strcmp(s, *dst) >= 0 : strcmp(s, *dst) <= 0)))
		return;
	free(*dst);
	*dst = xstrdup(s);
}

void results_points_add(results_points *ps, const cJSON *rec)
{
	if (results_record_is_warmup(rec))
		return; /* outside every point's numbers */
	size_t nf = 0;
	results_field *f = key_of(rec, &nf);
	results_point *p = NULL;
	for (size_t i = 0; i < ps->n && !p; i++)
		if (same_fields(ps->v[i].fields, ps->v[i].n_fields, f, nf))
			p = &ps->v[i];
	if (p) {
		free_fields(f, nf);
	} else {
		ps->v = xgrow(ps->v, &ps->cap, ps->n + 1, sizeof(*ps->v));
		p = &ps->v[ps->n++];
		memset(p, 0, sizeof(*p));
		p->fields = f;
		p->n_fields = nf;
		p->bar = NAN;
	}
	const char *run = str_of(rec, "run_id");
	bool seen = !run;
	for (size_t i = 0; i < p->n_runs && !seen; i++)
		seen = strcmp(p->runs[i], run) == 0;
	if (!seen) {
		p->runs = xgrow(p->runs, &p->cap_runs, p->n_runs + 1, sizeof(*p->runs));
		p->runs[p->n_runs++] = xstrdup(run);
	}
	keep_min(&p->first_start, str_of(rec, "start"), true);
	keep_min(&p->last_start, str_of(rec, "start"), false);

	const char *verdict = str_of(rec, "verdict");
	const cJSON *res = get(rec, "result");
	const cJSON *slow = get(get(res, "candidate"), "slowCTA_us");
	bool hang = verdict && strcmp(verdict, "TIMEOUT_HANG") == 0;
	p->hang = p->hang || hang;
	/* a span no clock measures (an old or edited record) is no sample either */
	if (hang || (verdict && strcmp(verdict, "INVALID") == 0) || !cJSON_IsNumber(slow) ||
	    !(slow->valuedouble >= GATE_SPAN_MIN_US && slow->valuedouble <= GATE_SPAN_MAX_US)) {
		p->n_bad++;
		return;
	}
	push(&p->slow, &p->n, &p->cap, slow->valuedouble);
	const cJSON *r = get(res, "slowCTA_ratio_base_over_cand");
	if (cJSON_IsNumber(r) && isfinite(r->valuedouble) && r->valuedouble > 0)
		push(&p->ratio, &p->n_ratio, &p->cap_ratio, r->valuedouble);
	const cJSON *bar = get(get(rec, "campaign"), "bar");
	if (!cJSON_IsNumber(bar))
		bar = get(res, "bar");
	if (cJSON_IsNumber(bar) && isfinite(bar->valuedouble) && bar->valuedouble > 0)
		p->bar = bar->valuedouble;
}

void results_points_release(results_points *ps)
{
	for (size_t i = 0; i < ps->n; i++) {
		results_point *p = &ps->v[i];
		free_fields(p->fields, p->n_fields);
		free(p->slow);
		free(p->ratio);
		for (size_t k = 0; k < p->n_runs; k++)
			free(p->runs[k]);
		free(p->runs);
		free(p->first_start);
		free(p->last_start);
	}
	free(ps->v);
	memset(ps, 0, sizeof(*ps));
}

char *results_point_label(const results_point *p, const char *skip)
{
	strbuf b = STRBUF_INIT;
	for (size_t i = 0; i < p->n_fields; i++) {
		const results_field *f = &p->fields[i];
		if (skip && strcmp(f->name, skip) == 0)
			continue;
		if (b.len)
			strbuf_addch(&b, ' ');
		if (i == RESULTS_F_NW && strcmp(f->value, "-") != 0)
			strbuf_addf(&b, "nw%s", f->value);
		else if (i < RESULTS_FIXED_FIELDS || !*f->name)
			strbuf_addstr(&b, f->value);
		else if (strcmp(f->value, "-") == 0)
			strbuf_addf(&b, "--%s", f->name);
		else
			strbuf_addf(&b, "--%s %s", f->name, f->value);
	}
	char *s = strbuf_detach(&b);
	return s ? s : xstrdup("");
}

char *results_record_other_args(const cJSON *rec)
{
	size_t n = 0;
	results_field *f = key_of(rec, &n);
	strbuf b = STRBUF_INIT;
	for (size_t i = RESULTS_FIXED_FIELDS; i < n; i++) {
		if (b.len)
			strbuf_addch(&b, ' ');
		if (!*f[i].name)
			strbuf_addstr(&b, f[i].value);
		else if (strcmp(f[i].value, "-") == 0)
			strbuf_addf(&b, "--%s", f[i].name);
		else
			strbuf_addf(&b, "--%s %s", f[i].name, f[i].value);
	}
	free_fields(f, n);
	char *s = strbuf_detach(&b);
	return s ? s : xstrdup("");
}

const char *results_point_field(const results_point *p, const char *name)
{
	for (size_t i = 0; i < p->n_fields; i++)
		if (strcmp(p->fields[i].name, name) == 0)
			return p->fields[i].value;
	return NULL;
}

/* The fields other than `skip`, in order, as (index) list compared one by one. */
bool results_point_pairs(const results_point *a, const results_point *b, const char *skip,
			 const char *map_from, const char *map_to)
{
	size_t i = 0, j = 0;
	for (;;) {
		while (i < a->n_fields && skip && strcmp(a->fields[i].name, skip) == 0)
			i++;
		while (j < b->n_fields && skip && strcmp(b->fields[j].name, skip) == 0)
			j++;
		if (i == a->n_fields || j == b->n_fields)
			return i == a->n_fields && j == b->n_fields;
		const char *bv = b->fields[j].value;
		if (map_to && strcmp(bv, map_to) == 0)
			bv = map_from;
		if (strcmp(a->fields[i].name, b->fields[j].name) != 0 ||
		    strcmp(a->fields[i].value, bv) != 0)
			return false;
		i++, j++;
	}
}
