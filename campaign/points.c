#include "campaign/points.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "campaign/spec.h"
#include "gate/client/result.h"
#include "results/points.h"
#include "results/record.h"
#include "results/select.h"
#include "results/stats.h"
#include "results/store.h"

#define DEFAULT_BAR           GATE_DEFAULT_BAR
#define DEFAULT_MAX_CV        2.0
#define DEFAULT_SUM_TOLERANCE 10.0

const char *campaign_verdict_name(campaign_verdict v)
{
	switch (v) {
	case CAMPAIGN_PASS_GATE: return "PASS_GATE";
	case CAMPAIGN_BELOW_BAR: return "BELOW_BAR";
	case CAMPAIGN_NOISY: return "NOISY";
	case CAMPAIGN_INVALID: return "INVALID";
	case CAMPAIGN_TIMEOUT_HANG: return "TIMEOUT_HANG";
	case CAMPAIGN_BASELINE: return "baseline";
	case CAMPAIGN_MEASURED: return "MEASURED";
	}
	return "?";
}

const char *campaign_ratio_source_name(campaign_ratio_source s)
{
	return s == CAMPAIGN_RATIO_JOBS ? "jobs" : s == CAMPAIGN_RATIO_IN_GATE ? "in-gate" : "none";
}

/* The index of `s` in `l`, -1 when absent. */
static long names_find(const campaign_names *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return (long)i;
	return -1;
}

/* Adds `s` unless present; `front` puts it first (the baseline). */
static void names_add(campaign_names *l, const char *s, bool front)
{
	if (!s || names_find(l, s) >= 0)
		return;
	l->v = xgrow(l->v, &l->cap, l->n + 1, sizeof(*l->v));
	if (front) {
		memmove(l->v + 1, l->v, l->n * sizeof(*l->v));
		l->v[0] = xstrdup(s);
	} else {
		l->v[l->n] = xstrdup(s);
	}
	l->n++;
}

static void names_release(campaign_names *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

void campaign_names_add(campaign_names *l, const char *s)
{
	names_add(l, s, false);
}

void campaign_names_release(campaign_names *l)
{
	names_release(l);
}

static const cJSON *get(const cJSON *o, const char *key)
{
	return o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

static const char *str_of(const cJSON *o, const char *key)
{
	const cJSON *v = get(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A finite number member, else NAN. */
static double num_of(const cJSON *o, const char *key)
{
	const cJSON *v = get(o, key);
	return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble : NAN;
}

/* A number member within [lo, hi] (what the result check lets through), else NAN. */
static double num_in(const cJSON *o, const char *key, double lo, double hi)
{
	double v = num_of(o, key);
	return v >= lo && v <= hi ? v : NAN;
}

/* A campaign record as read: an owned copy and its place in the file. */
typedef struct held {
	cJSON *rec;
	const char *name, *job; /* borrowed from rec, or key */
	const char *cand;       /* borrowed from rec, NULL when none */
	char key[CAMPAIGN_KEY_MAX];
	bool own_key;                   /* job is key */
	char def[CAMPAIGN_DEF_LEN + 1]; /* "" when the record does not say it whole */
	size_t order;
	bool run; /* a record of a run, not of a campaign (read_any) */
} held;

typedef struct reader {
	held *v;
	size_t n, cap;
	campaign_names names;        /* every campaign in the file */
	const results_selector *sel; /* the records read; NULL: all */
	bool any;                    /* records of runs too */
	size_t runs;                 /* records of runs kept */
} reader;

/* A run's record (no campaign) as a campaign record: its point's shape, worker
 * count and candidate under "campaign", final. NULL when it is no gate record
 * (neither a point nor a result). Owned. */
static cJSON *run_record(const cJSON *rec)
{
	const cJSON *pt = get(rec, "point"), *res = get(rec, "result");
	if (!cJSON_IsObject(pt) && !cJSON_IsObject(res))
		return NULL;
	cJSON *dup = cJSON_Duplicate(rec, 1);
	cJSON_DeleteItemFromObjectCaseSensitive(dup, "campaign");
	cJSON *c = cJSON_AddObjectToObject(dup, "campaign");
	const char *shape = str_of(pt, "shape");
	if (shape || (shape = str_of(res, "shape")))
		cJSON_AddStringToObject(c, "shape", shape);
	const cJSON *nw = get(pt, "num_workers");
	if (!cJSON_IsNumber(nw))
		nw = get(res, "num_workers");
	if (cJSON_IsNumber(nw))
		cJSON_AddNumberToObject(c, "num_workers", nw->valuedouble);
	const char *cand = str_of(pt, "candidate");
	if (!cand)
		cand = str_of(get(res, "candidate"), "variant");
	/* the other gate arguments make another cell (fp8 is never pooled with bf16):
	 * name_runs adds those that differ between the records to the name */
	char *args = results_record_other_args(rec);
	cJSON_AddStringToObject(c, "candidate", cand ? cand : "candidate");
	cJSON_AddStringToObject(c, "run_args", args);
	free(args);
	cJSON_AddBoolToObject(c, "final", true);
	return dup;
}

static int keep_campaign_record(void *ctx, const cJSON *rec, size_t line)
{
	(void)line;
	reader *r = ctx;
	if (r->sel && !results_selector_match(r->sel, rec))
		return 0;
	if (results_record_is_warmup(rec))
		return 0; /* a warm-up is outside every point's numbers */
	const cJSON *c = get(rec, "campaign");
	const char *name = str_of(c, "name");
	cJSON *run = NULL;
	if (!cJSON_IsObject(c) || !name) {
		if (!r->any || !(run = run_record(rec)))
			return 0;
	} else {
		names_add(&r->names, name, false);
	}
	r->v = xgrow(r->v, &r->cap, r->n + 1, sizeof(*r->v));
	held *h = &r->v[r->n];
	memset(h, 0, sizeof(*h));
	if (run) {
		h->rec = run;
		h->run = true;
		h->name = "";
		h->order = r->n++;
		r->runs++;
		return 0;
	}
	h->rec = cJSON_Duplicate(rec, 1);
	const cJSON *hc = get(h->rec, "campaign");
	h->name = str_of(hc, "name");
	h->cand = str_of(hc, "candidate");
	/* the job key as its fields define it (a record written before keys held the
	 * definition compares alike), else as recorded */
	h->own_key = campaign_record_key(hc, h->key);
	h->job = h->own_key ? NULL : str_of(hc, "job"); /* set to key once r->v stays put */
	if (!campaign_record_def(hc, h->def))
		h->def[0] = '\0';
	h->order = r->n++;
	return 0;
}

/* The device of a record: its GPU's name, else "cpu" on the CPU twin, else its box. */
static const char *device_of(const cJSON *rec)
{
	const char *d = str_of(rec, "gpu_name");
	if (!d && str_of(rec, "device") && strcmp(str_of(rec, "device"), "cpu") == 0)
		d = "cpu";
	return d ? d : str_of(rec, "box");
}

/* Whether `unit` ("--flag value" or a word) is in `o` as whole words. */
static bool has_unit(const char *o, const char *unit)
{
	size_t ul = strlen(unit);
	for (const char *q = o ? strstr(o, unit) : NULL; q; q = strstr(q + 1, unit))
		if ((q == o || q[-1] == ' ') && (q[ul] == ' ' || !q[ul]))
			return true;
	return false;
}

/* The units of `args` (a --flag with its value, or a word) that not every run
 * record's run_args holds, space-joined. Owned. */
static char *differing_args(held *const *kept, size_t n, const char *args)
{
	strbuf out = STRBUF_INIT;
	const char *p = args;
	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		const char *e = p + strcspn(p, " ");
		if (strncmp(p, "--", 2) == 0 && *e == ' ' && strncmp(e + 1, "--", 2) != 0)
			e = e + 1 + strcspn(e + 1, " "); /* the flag's value */
		char *unit = xstrndup(p, (size_t)(e - p));
		bool everywhere = true;
		for (size_t i = 0; i < n && everywhere; i++)
			if (kept[i]->run)
				everywhere = has_unit(
					str_of(get(kept[i]->rec, "campaign"), "run_args"), unit);
		if (!everywhere)
			strbuf_addf(&out, "%s%s", out.len ? " " : "", unit);
		free(unit);
		p = e;
	}
	return strbuf_detach(&out);
}

/* Each run record's candidate named with the gate arguments that set it apart
 * from the other run records ("candidate --variant nosplit"). */
static void name_runs(held *const *kept, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!kept[i]->run)
			continue;
		cJSON *c = cJSON_GetObjectItemCaseSensitive(kept[i]->rec, "campaign");
		const char *args = str_of(c, "run_args");
		char *diff = differing_args(kept, n, args ? args : "");
		if (*diff) {
			char *name = xasprintf("%s %s", str_of(c, "candidate"), diff);
			cJSON_ReplaceItemInObjectCaseSensitive(c, "candidate",
							       cJSON_CreateString(name));
			free(name);
		}
		free(diff);
	}
}

/* Records of runs on more than one device: each shape names its device
 * ("q_a on NVIDIA H200"), so that an H100's numbers are never pooled with an
 * H200's and a candidate is judged against the baseline of its own device. */
static void name_devices(held *const *kept, size_t n)
{
	const char *first = NULL;
	bool several = false;
	for (size_t i = 0; i < n; i++) {
		const char *d = kept[i]->run ? device_of(kept[i]->rec) : NULL;
		if (d && first && strcmp(d, first) != 0)
			several = true;
		if (d && !first)
			first = d;
	}
	for (size_t i = 0; i < n && several; i++) {
		if (!kept[i]->run)
			continue;
		cJSON *c = cJSON_GetObjectItemCaseSensitive(kept[i]->rec, "campaign");
		const char *d = device_of(kept[i]->rec);
		const char *shape = str_of(c, "shape");
		char *name = xasprintf("%s on %s", shape ? shape : "-", d ? d : "-");
		if (shape)
			cJSON_ReplaceItemInObjectCaseSensitive(c, "shape",
							       cJSON_CreateString(name));
		else
			cJSON_AddStringToObject(c, "shape", name);
		free(name);
	}
}

static int by_job_then_order(const void *a, const void *b)
{
	const held *x = *(const held *const *)a, *y = *(const held *const *)b;
	int c = strcmp(x->job, y->job);
	if (c)
		return c;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int by_order(const void *a, const void *b)
{
	const held *x = *(const held *const *)a, *y = *(const held *const *)b;
	return x->order < y->order ? -1 : x->order > y->order;
}

static void push(double **v, size_t *n, size_t *cap, double x)
{
	*v = xgrow(*v, cap, *n + 1, sizeof(**v));
	(*v)[(*n)++] = x;
}

static campaign_point *find_point(campaign_points *p, const char *shape, bool has_nw, long nw)
{
	for (size_t i = 0; i < p->n_points; i++) {
		campaign_point *pt = &p->points[i];
		if (strcmp(pt->shape, shape) == 0 && pt->has_num_workers == has_nw &&
		    (!has_nw || pt->num_workers == nw))
			return pt;
	}
	p->points = xgrow(p->points, &p->cap_points, p->n_points + 1, sizeof(*p->points));
	campaign_point *pt = &p->points[p->n_points++];
	memset(pt, 0, sizeof(*pt));
	pt->shape = xstrdup(shape);
	pt->has_num_workers = has_nw;
	pt->num_workers = nw;
	pt->best = -1;
	return pt;
}

static campaign_cell *find_cell(campaign_point *pt, const char *cand)
{
	for (size_t i = 0; i < pt->n_cells; i++)
		if (strcmp(pt->cells[i].candidate, cand) == 0)
			return &pt->cells[i];
	pt->cells = xgrow(pt->cells, &pt->cap_cells, pt->n_cells + 1, sizeof(*pt->cells));
	campaign_cell *c = &pt->cells[pt->n_cells++];
	memset(c, 0, sizeof(*c));
	c->candidate = xstrdup(cand);
	c->baseline = strcmp(cand, "baseline") == 0;
	return c;
}

/* How bad a failed record is: TIMEOUT_HANG dominates INVALID. */
static int bad_rank(const char *v)
{
	return !v ? 0 : strcmp(v, "TIMEOUT_HANG") == 0 ? 2 : 1;
}

static void keep_string(char **dst, const char *s)
{
	free(*dst);
	*dst = s ? xstrdup(s) : NULL;
}

/* One kept record into its point and cell, and the campaign's facts. */
static void add_record(campaign_points *p, const cJSON *rec)
{
	const cJSON *c = get(rec, "campaign"), *res = get(rec, "result");
	const char *shape = str_of(c, "shape");
	if (!shape)
		shape = str_of(res, "shape");
	if (!shape)
		shape = "-";
	const cJSON *nwj = get(c, "num_workers");
	bool has_nw = cJSON_IsNumber(nwj) && nwj->valuedouble == floor(nwj->valuedouble) &&
		      fabs(nwj->valuedouble) < 1e15;
	const char *cand = str_of(c, "candidate");
	if (!cand)
		cand = "-";

	/* The campaign's settings: the last record's. */
	double v;
	/* the campaign's bar, else the one the gate judged against, else the default */
	if (isfinite(v = num_in(c, "bar", 1e-9, GATE_BAR_MAX)) ||
	    isfinite(v = num_in(res, "bar", 1e-9, GATE_BAR_MAX)))
		p->bar = v;
	if (isfinite(v = num_in(c, "max_cv", 0, 1e6)))
		p->max_cv = v;
	if (isfinite(v = num_in(c, "sum_tolerance", 0, 1e6)))
		p->sum_tolerance = v;
	p->strict_noise = cJSON_IsTrue(get(c, "strict_noise"));
	/* a count a campaign can have (its cast to size_t must be defined) */
	if (isfinite(v = num_in(c, "jobs", 0, 1e9)))
		p->jobs_expected = (size_t)v;
	if (str_of(c, "file"))
		keep_string(&p->file, str_of(c, "file"));
	if (str_of(c, "pool"))
		keep_string(&p->pool, str_of(c, "pool"));
	const cJSON *ga = get(c, "gate_args");
	if (cJSON_IsArray(ga)) {
		for (size_t i = 0; i < p->n_gate_args; i++)
			free(p->gate_args[i]);
		free(p->gate_args);
		p->n_gate_args = 0;
		p->gate_args = xcalloc((size_t)cJSON_GetArraySize(ga) + 1, sizeof(char *));
		for (const cJSON *a = ga->child; a; a = a->next)
			if (cJSON_IsString(a))
				p->gate_args[p->n_gate_args++] = xstrdup(a->valuestring);
	}
	const char *start = str_of(rec, "start"), *end = str_of(rec, "end");
	if (start && (!p->first_start || strcmp(start, p->first_start) < 0))
		keep_string(&p->first_start, start);
	if (end && (!p->last_end || strcmp(end, p->last_end) > 0))
		keep_string(&p->last_end, end);

	names_add(&p->shapes, shape, false);
	names_add(&p->candidates, cand, strcmp(cand, "baseline") == 0);
	campaign_point *pt = find_point(p, shape, has_nw, has_nw ? (long)nwj->valuedouble : 0);
	campaign_cell *cell = find_cell(pt, cand);

	const char *box = str_of(rec, "box"), *gpus = str_of(rec, "gpus");
	const char *gpu_name = str_of(rec, "gpu_name");
	if (!gpu_name && str_of(rec, "device") && strcmp(str_of(rec, "device"), "cpu") == 0)
		gpu_name = "cpu";
	names_add(&cell->boxes, box, false);
	names_add(&p->boxes, box, false);
	names_add(&cell->gpu_names, gpu_name, false);
	names_add(&p->gpu_names, gpu_name, false);
	if (box) {
		char *slot = xasprintf("%s:%s", box, gpus ? gpus : "-");
		names_add(&cell->slots, slot, false);
		free(slot);
	}

	const char *verdict = str_of(rec, "verdict");
	const cJSON *side = get(res, "candidate");
	double slow = num_of(side, "slowCTA_us");
	bool judged =
		verdict && (strcmp(verdict, "PASS_GATE") == 0 ||
			    strcmp(verdict, "BELOW_BAR") == 0 || strcmp(verdict, "MEASURED") == 0);
	/* A record from an older boxgate or edited by hand may hold what the result
	 * check refuses now: a span no clock measures is no sample. */
	bool possible = slow >= GATE_SPAN_MIN_US && slow <= GATE_SPAN_MAX_US;
	if (!judged || !possible) {
		const char *why = !verdict                               ? "no verdict"
				  : strcmp(verdict, "TIMEOUT_HANG") == 0 ? "TIMEOUT_HANG"
				  : strcmp(verdict, "INVALID") == 0      ? "INVALID"
				  : judged && isfinite(slow)             ? "impossible span"
				  : judged                               ? "no result"
									 : "INVALID";
		cell->n_bad++;
		if (!cell->worst_bad || bad_rank(why) > bad_rank(cell->worst_bad))
			cell->worst_bad = why;
		return;
	}
	size_t n = cell->n, cap = cell->cap_samples;
	push(&cell->slow, &n, &cap, slow);
	n = cell->n, cap = cell->cap_samples;
	push(&cell->wall, &n, &cap, num_in(side, "wall_us", GATE_SPAN_MIN_US, GATE_SPAN_MAX_US));
	n = cell->n, cap = cell->cap_samples;
	push(&cell->sum, &n, &cap,
	     num_in(side, "sumCTA_us", GATE_SPAN_MIN_US, GATE_SPAN_MAX_US * GATE_WORKERS_MAX));
	n = cell->n, cap = cell->cap_samples;
	push(&cell->cos, &n, &cap, num_in(side, "cos", -1 - GATE_COS_SLACK, 1 + GATE_COS_SLACK));
	cell->n = n;
	cell->cap_samples = cap;
	cell->n_measured += strcmp(verdict, "MEASURED") == 0;

	const cJSON *base = get(res, "baseline_in_tree");
	double r = num_of(res, "slowCTA_ratio_base_over_cand");
	double bslow = num_in(base, "slowCTA_us", GATE_SPAN_MIN_US, GATE_SPAN_MAX_US);
	if (!(r > 0 && r <= GATE_RATIO_MAX) && isfinite(bslow))
		r = bslow / slow;
	if (r > 0 && r <= GATE_RATIO_MAX)
		push(&cell->gate_ratio, &cell->n_gate_ratio, &cell->cap_gate_ratio, r);
	double bs =
		num_in(base, "sumCTA_us", GATE_SPAN_MIN_US, GATE_SPAN_MAX_US * GATE_WORKERS_MAX);
	if (isfinite(bs))
		push(&cell->gate_base_sum, &cell->n_gate_base_sum, &cell->cap_gate_base_sum, bs);
}

/* Summaries over the finite values of x[0..n), NAN when there are none. */
static double finite_median(const double *x, size_t n)
{
	double *f = xmalloc((n ? n : 1) * sizeof(*f));
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (isfinite(x[i]))
			f[k++] = x[i];
	double m = k ? stats_median(f, k) : NAN;
	free(f);
	return m;
}

static double finite_min(const double *x, size_t n)
{
	double m = NAN;
	for (size_t i = 0; i < n; i++)
		if (isfinite(x[i]) && !(m <= x[i]))
			m = x[i];
	return m;
}

static void summarise(campaign_cell *c)
{
	c->slow_median = c->slow_min = c->slow_max = c->slow_cv = NAN;
	c->wall_median = c->sum_median = c->cos_min = c->ratio = NAN;
	if (!c->n)
		return;
	c->slow_median = stats_median(c->slow, c->n);
	c->slow_min = stats_min(c->slow, c->n);
	c->slow_max = stats_max(c->slow, c->n);
	c->slow_cv = 100 * stats_cv(c->slow, c->n);
	c->wall_median = finite_median(c->wall, c->n);
	c->sum_median = finite_median(c->sum, c->n);
	c->cos_min = finite_min(c->cos, c->n);
}

/* The decision on a cell's ratio: its samples against the baseline's, else the
 * gate's own ratios as pairs; one sample a side is single (no interval). */
static void decide(const campaign_points *p, campaign_cell *c, const campaign_cell *base)
{
	c->single = c->decided = false;
	if (c->ratio_source == CAMPAIGN_RATIO_JOBS) {
		c->single = c->n == 1 && base->n == 1;
		if (!c->single)
			measure_decide_samples(base->slow, base->n, c->slow, c->n, p->bar, &c->dec);
	} else if (c->ratio_source == CAMPAIGN_RATIO_IN_GATE) {
		c->single = c->n_gate_ratio == 1;
		if (!c->single)
			measure_decide_ratios(c->gate_ratio, c->n_gate_ratio, p->bar, &c->dec);
	} else {
		return;
	}
	c->decided = !c->single;
}

static campaign_verdict verdict_of(measure_call call)
{
	return call == MEASURE_PASS    ? CAMPAIGN_PASS_GATE
	       : call == MEASURE_BELOW ? CAMPAIGN_BELOW_BAR
				       : CAMPAIGN_NOISY;
}

/* The best cell (the lowest median slowCTA that qualifies), the next one, and
 * whether the best is measurably faster than it. */
static void pick_best(campaign_point *pt)
{
	pt->best = pt->runner_up = -1;
	pt->best_provisional = false;
	for (size_t i = 0; i < pt->n_cells; i++) {
		const campaign_cell *c = &pt->cells[i];
		/* a faster slowest CTA bought with more total CTA time is no winner */
		if ((c->verdict != CAMPAIGN_PASS_GATE && c->verdict != CAMPAIGN_BELOW_BAR &&
		     c->verdict != CAMPAIGN_BASELINE && c->verdict != CAMPAIGN_NOISY) ||
		    c->sloughed || !c->n)
			continue;
		/* nor is a candidate with no ratio: no baseline was run to hold it against */
		if (!c->baseline && c->ratio_source == CAMPAIGN_RATIO_NONE)
			continue;
		if (pt->best < 0 || c->slow_median < pt->cells[pt->best].slow_median) {
			pt->runner_up = pt->best;
			pt->best = (long)i;
		} else if (pt->runner_up < 0 ||
			   c->slow_median < pt->cells[pt->runner_up].slow_median) {
			pt->runner_up = (long)i;
		}
	}
	if (pt->best < 0 || pt->runner_up < 0)
		return;
	const campaign_cell *b = &pt->cells[pt->best], *r = &pt->cells[pt->runner_up];
	if (b->n == 1 && r->n == 1) {
		pt->best_provisional = true;
		return;
	}
	measure_decision d;
	measure_decide_samples(r->slow, r->n, b->slow, b->n, 1.0, &d);
	pt->best_provisional = d.call != MEASURE_PASS;
}

static void judge(const campaign_points *p, campaign_point *pt)
{
	const campaign_cell *base = NULL;
	for (size_t i = 0; i < pt->n_cells; i++)
		summarise(&pt->cells[i]);
	for (size_t i = 0; i < pt->n_cells; i++)
		if (pt->cells[i].baseline && pt->cells[i].n)
			base = &pt->cells[i];
	for (size_t i = 0; i < pt->n_cells; i++) {
		campaign_cell *c = &pt->cells[i];
		if (!c->baseline && c->n && base) {
			c->ratio = base->slow_median / c->slow_median;
			c->ratio_source = CAMPAIGN_RATIO_JOBS;
		} else if (!c->baseline && c->n_gate_ratio) {
			c->ratio = stats_median(c->gate_ratio, c->n_gate_ratio);
			c->ratio_source = CAMPAIGN_RATIO_IN_GATE;
		}
		double base_sum = base ? base->sum_median
				       : finite_median(c->gate_base_sum, c->n_gate_base_sum);
		c->cv_warn = c->n >= 2 && !(c->slow_cv <= p->max_cv);
		if (!c->baseline && c->n)
			decide(p, c, base);
		if (c->worst_bad && strcmp(c->worst_bad, "TIMEOUT_HANG") == 0)
			c->verdict = CAMPAIGN_TIMEOUT_HANG;
		else if (c->n_bad || !c->n)
			c->verdict = CAMPAIGN_INVALID;
		else if (!c->baseline && c->ratio_source == CAMPAIGN_RATIO_NONE &&
			 c->n_measured == c->n)
			c->verdict = CAMPAIGN_MEASURED; /* nothing to hold its timings against */
		else if (p->strict_noise && c->cv_warn)
			c->verdict = CAMPAIGN_NOISY;
		else if (c->baseline)
			c->verdict = CAMPAIGN_BASELINE;
		else if (isfinite(base_sum) && isfinite(c->sum_median) &&
			 c->sum_median > base_sum * (1 + p->sum_tolerance / 100)) {
			c->verdict = CAMPAIGN_BELOW_BAR;
			c->sloughed = true;
		} else if (c->decided)
			c->verdict = verdict_of(c->dec.call);
		else if (c->ratio >= p->bar)
			c->verdict = CAMPAIGN_PASS_GATE;
		else
			c->verdict = CAMPAIGN_BELOW_BAR;
		/* a failed cell is not decided on its samples */
		if (c->verdict == CAMPAIGN_TIMEOUT_HANG || c->verdict == CAMPAIGN_INVALID)
			c->decided = c->single = false;
	}
	pick_best(pt);
}

/* The order of points: shape by first appearance, then without num_workers
 * first, then num_workers ascending. */
static int point_cmp(const campaign_points *p, const campaign_point *a, const campaign_point *b)
{
	long ra = names_find(&p->shapes, a->shape), rb = names_find(&p->shapes, b->shape);
	if (ra != rb)
		return ra < rb ? -1 : 1;
	if (a->has_num_workers != b->has_num_workers)
		return a->has_num_workers ? 1 : -1;
	return a->num_workers < b->num_workers ? -1 : a->num_workers > b->num_workers;
}

/* Insertion sorts: a campaign has tens of points and a handful of candidates. */
static void order_points(campaign_points *p)
{
	for (size_t i = 1; i < p->n_points; i++) {
		campaign_point t = p->points[i];
		size_t j = i;
		for (; j > 0 && point_cmp(p, &p->points[j - 1], &t) > 0; j--)
			p->points[j] = p->points[j - 1];
		p->points[j] = t;
	}
	for (size_t k = 0; k < p->n_points; k++) {
		campaign_point *pt = &p->points[k];
		for (size_t i = 1; i < pt->n_cells; i++) {
			campaign_cell t = pt->cells[i];
			long rt = names_find(&p->candidates, t.candidate);
			size_t j = i;
			for (; j > 0 && names_find(&p->candidates, pt->cells[j - 1].candidate) > rt;
			     j--)
				pt->cells[j] = pt->cells[j - 1];
			pt->cells[j] = t;
		}
	}
}

static void list_names(strbuf *b, const campaign_names *l)
{
	for (size_t i = 0; i < l->n; i++)
		strbuf_addf(b, "%s%s", i ? ", " : "", l->v[i]);
}

/* The definition each candidate's cells count (names[i] -> defs[i]): the
 * given one, else the one its last final record has. */
static void current_defs(held *const *kept, size_t n, const campaign_current *cur, size_t n_cur,
			 campaign_names *names, const char ***defs)
{
	size_t cap = 0;
	*defs = NULL;
	for (size_t i = 0; i < n_cur; i++) {
		if (names_find(names, cur[i].candidate) >= 0)
			continue;
		*defs = xgrow(*defs, &cap, names->n + 1, sizeof(**defs));
		(*defs)[names->n] = cur[i].def;
		names_add(names, cur[i].candidate, false);
	}
	for (size_t i = n; i-- > 0;) {
		if (!kept[i]->cand || !kept[i]->def[0] || names_find(names, kept[i]->cand) >= 0)
			continue;
		*defs = xgrow(*defs, &cap, names->n + 1, sizeof(**defs));
		(*defs)[names->n] = kept[i]->def;
		names_add(names, kept[i]->cand, false);
	}
}

static int read_points(const char *results_path, const char *name, const campaign_current *cur,
		       size_t n_cur, const results_selector *sel, bool any, campaign_points *out,
		       bg_err *err);

int campaign_points_read(const char *results_path, const char *name, campaign_points *out,
			 bg_err *err)
{
	return campaign_points_read_current(results_path, name, NULL, 0, out, err);
}

int campaign_points_read_current(const char *results_path, const char *name,
				 const campaign_current *cur, size_t n_cur, campaign_points *out,
				 bg_err *err)
{
	return read_points(results_path, name, cur, n_cur, NULL, false, out, err);
}

int campaign_points_read_any(const char *results_path, const char *name,
			     const results_selector *sel, campaign_points *out, bg_err *err)
{
	return read_points(results_path, name, NULL, 0, sel, true, out, err);
}

/* The base name of a path without ".jsonl", for a report of runs. Owned. */
static char *file_stem(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t n = strlen(base);
	if (n > 6 && strcmp(base + n - 6, ".jsonl") == 0)
		n -= 6;
	return xstrndup(base, n);
}

static int read_points(const char *results_path, const char *name, const campaign_current *cur,
		       size_t n_cur, const results_selector *sel, bool any, campaign_points *out,
		       bg_err *err)
{
	memset(out, 0, sizeof(*out));
	out->bar = DEFAULT_BAR;
	out->max_cv = DEFAULT_MAX_CV;
	out->sum_tolerance = DEFAULT_SUM_TOLERANCE;
	reader r = {.sel = sel, .any = any};
	results_read_stats st = {0};
	bool named = name != NULL;
	held **kept = NULL;
	size_t n_kept = 0;
	strbuf names = STRBUF_INIT;
	int rc = results_read(results_path, keep_campaign_record, &r, &st, err);
	if (rc < 0)
		goto out;
	for (size_t i = 0; i < r.n; i++)
		if (r.v[i].own_key)
			r.v[i].job = r.v[i].key;
	out->bad_lines = st.bad;
	out->first_bad = st.first_bad;
	out->torn = st.torn != 0;
	list_names(&names, &r.names);
	if (!r.n) {
		char *what = sel ? results_selector_text(sel) : NULL;
		if (what && *what)
			rc = bg_fail(err, BG_ENOTFOUND, "no record of %s matches --select '%s'",
				     results_path, what);
		else
			rc = bg_fail(err, BG_ENOTFOUND, "%s holds no campaign records%s",
				     results_path, any ? " and no gate records" : "");
		free(what);
		goto out;
	}
	if (!name && r.names.n > 1) {
		rc = bg_fail(err, BG_EUSAGE,
			     "%s holds %zu campaigns: %s (choose one with --campaign NAME)",
			     results_path, r.names.n, names.buf);
		goto out;
	}
	if (!name && r.names.n)
		name = r.names.v[0];
	if (name && names_find(&r.names, name) < 0) {
		rc = bg_fail(err, BG_EUSAGE, "%s holds no campaign '%s' (campaigns in it: %s)",
			     results_path, name, names.buf);
		goto out;
	}
	out->no_campaign = !name;
	out->name = name ? xstrdup(name) : file_stem(results_path);

	/* The final records of the campaign; a job recorded twice keeps its last. */
	kept = xcalloc(r.n, sizeof(*kept));
	size_t n_job = 0;
	for (size_t i = 0; i < r.n; i++) {
		if (r.v[i].run) {
			/* a named campaign is that campaign's records alone */
			if (!named) {
				kept[n_kept++] = &r.v[i];
				out->run_records++;
			}
			continue;
		}
		if (strcmp(r.v[i].name, name) != 0)
			continue;
		if (!cJSON_IsTrue(get(get(r.v[i].rec, "campaign"), "final"))) {
			out->not_final++;
			continue;
		}
		kept[n_kept++] = &r.v[i];
	}
	/* Keyed records to the front, sorted by job, then file order. */
	size_t w = 0;
	for (size_t i = 0; i < n_kept; i++)
		if (kept[i]->job) {
			held *t = kept[w];
			kept[w++] = kept[i];
			kept[i] = t;
		}
	n_job = w;
	qsort(kept, n_job, sizeof(*kept), by_job_then_order);
	w = 0;
	for (size_t i = 0; i < n_job; i++) {
		if (i + 1 < n_job && strcmp(kept[i]->job, kept[i + 1]->job) == 0) {
			out->duplicates++;
			continue;
		}
		kept[w++] = kept[i];
	}
	memmove(kept + w, kept + n_job, (n_kept - n_job) * sizeof(*kept));
	n_kept = w + (n_kept - n_job);
	qsort(kept, n_kept, sizeof(*kept), by_order);
	/* A cell counts the records of its candidate's current definition only: an
	 * edited candidate or gate_args is a new job, never mixed with the old. */
	campaign_names cnames = {0};
	const char **cdefs = NULL;
	current_defs(kept, n_kept, cur, n_cur, &cnames, &cdefs);
	w = 0;
	for (size_t i = 0; i < n_kept; i++) {
		long k = kept[i]->cand && kept[i]->def[0] ? names_find(&cnames, kept[i]->cand) : -1;
		if (k >= 0 && strcmp(cdefs[k], kept[i]->def) != 0) {
			out->superseded++;
			names_add(&out->superseded_candidates, kept[i]->cand, false);
			continue;
		}
		kept[w++] = kept[i];
	}
	n_kept = w;
	names_release(&cnames);
	free(cdefs);
	name_devices(kept, n_kept);
	name_runs(kept, n_kept);
	out->jobs_recorded = n_kept;
	for (size_t i = 0; i < n_kept; i++)
		add_record(out, kept[i]->rec);
	order_points(out);
	for (size_t i = 0; i < out->n_points; i++)
		judge(out, &out->points[i]);
	rc = 0;
out:
	for (size_t i = 0; i < r.n; i++)
		cJSON_Delete(r.v[i].rec);
	free(r.v);
	free(kept);
	names_release(&r.names);
	strbuf_release(&names);
	return rc;
}

static void cell_release(campaign_cell *c)
{
	free(c->candidate);
	free(c->slow);
	free(c->wall);
	free(c->sum);
	free(c->cos);
	free(c->gate_ratio);
	free(c->gate_base_sum);
	names_release(&c->boxes);
	names_release(&c->slots);
	names_release(&c->gpu_names);
}

void campaign_points_release(campaign_points *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_points; i++) {
		for (size_t k = 0; k < p->points[i].n_cells; k++)
			cell_release(&p->points[i].cells[k]);
		free(p->points[i].cells);
		free(p->points[i].shape);
	}
	free(p->points);
	for (size_t i = 0; i < p->n_gate_args; i++)
		free(p->gate_args[i]);
	free(p->gate_args);
	free(p->name);
	free(p->file);
	free(p->pool);
	free(p->first_start);
	free(p->last_end);
	names_release(&p->shapes);
	names_release(&p->candidates);
	names_release(&p->boxes);
	names_release(&p->gpu_names);
	names_release(&p->superseded_candidates);
	memset(p, 0, sizeof(*p));
}

const campaign_cell *campaign_point_best(const campaign_point *pt)
{
	return pt->best >= 0 ? &pt->cells[pt->best] : NULL;
}

static void add_nw(strbuf *b, const campaign_point *pt)
{
	if (pt->has_num_workers)
		strbuf_addf(b, "%ld", pt->num_workers);
	else
		strbuf_addch(b, '-');
}

void campaign_flips_text(const campaign_points *p, const char *shape, strbuf *out)
{
	strbuf_addf(out, "%s:", shape);
	const char *run = NULL;
	const campaign_point *first = NULL, *last = NULL;
	bool any = false;
	for (size_t i = 0; i <= p->n_points; i++) {
		const campaign_point *pt = i < p->n_points ? &p->points[i] : NULL;
		if (pt && strcmp(pt->shape, shape) != 0)
			continue;
		const campaign_cell *b = pt ? campaign_point_best(pt) : NULL;
		const char *who = b ? b->candidate : "none";
		if (first && (!pt || strcmp(who, run) != 0)) {
			strbuf_addf(out, "%s %s%s ", any ? "," : "", run, any ? " at" : " best at");
			add_nw(out, first);
			if (last != first) {
				strbuf_addch(out, '-');
				add_nw(out, last);
			}
			any = true;
			first = NULL;
		}
		if (!pt)
			break;
		if (!first) {
			first = pt;
			run = who;
		}
		last = pt;
	}
}

/* A number with `digits` decimals, "-" when not measured. */
static void add_num(strbuf *b, double v, int digits)
{
	if (isfinite(v))
		strbuf_addf(b, "%.*f", digits, v);
	else
		strbuf_addch(b, '-');
}

enum { S_NW, S_CAND, S_SLOW, S_SPREAD, S_RATIO, S_WALL, S_SUM, S_COS, S_VERDICT, S_N, S_COLS };
static const char *const s_head[S_COLS] = {"nw",      "candidate", "slowCTA_us", "spread",  "ratio",
					   "wall_us", "sumCTA_us", "cos",        "verdict", "n"};
static const bool s_right[S_COLS] = {
	[S_NW] = true,  [S_SLOW] = true, [S_RATIO] = true, [S_WALL] = true,
	[S_SUM] = true, [S_COS] = true,  [S_N] = true};

/* Table text is one line of printable characters: control bytes become '?'. */
static char *printable(strbuf *b)
{
	for (size_t i = 0; i < b->len; i++)
		if ((unsigned char)b->buf[i] < 0x20 || b->buf[i] == 0x7f)
			b->buf[i] = '?';
	return strbuf_detach(b);
}

static void summary_row(const campaign_point *pt, size_t k, char **c)
{
	const campaign_cell *cell = &pt->cells[k];
	strbuf b = STRBUF_INIT;
	add_nw(&b, pt);
	c[S_NW] = printable(&b);
	strbuf_addf(&b, "%s%s", cell->candidate,
		    pt->best != (long)k    ? ""
		    : pt->best_provisional ? " *?"
					   : " *");
	c[S_CAND] = printable(&b);
	add_num(&b, cell->slow_median, 2);
	c[S_SLOW] = printable(&b);
	if (cell->n) {
		strbuf_addf(&b, "%.2f-%.2f ", cell->slow_min, cell->slow_max);
		add_num(&b, cell->slow_cv, 1);
		strbuf_addch(&b, '%');
	} else {
		strbuf_addch(&b, '-');
	}
	c[S_SPREAD] = printable(&b);
	add_num(&b, cell->ratio, 3);
	if (cell->ratio_source == CAMPAIGN_RATIO_IN_GATE)
		strbuf_addstr(&b, " (in-gate)");
	c[S_RATIO] = printable(&b);
	add_num(&b, cell->wall_median, 2);
	c[S_WALL] = printable(&b);
	add_num(&b, cell->sum_median, 1);
	c[S_SUM] = printable(&b);
	add_num(&b, cell->cos_min, 5);
	c[S_COS] = printable(&b);
	strbuf_addstr(&b, campaign_verdict_name(cell->verdict));
	if (cell->sloughed)
		strbuf_addstr(&b, " (sumCTA)");
	else if (cell->single && !cell->baseline)
		strbuf_addstr(&b, " (1 run)");
	else if (cell->verdict == CAMPAIGN_NOISY && cell->decided)
		strbuf_addstr(&b, cell->dec.lean > 0 ? " (leans above)" : " (leans below)");
	if (cell->cv_warn && cell->verdict != CAMPAIGN_NOISY)
		strbuf_addstr(&b, " (CV!)");
	c[S_VERDICT] = printable(&b);
	strbuf_addf(&b, "%zu", cell->n);
	if (cell->n_bad)
		strbuf_addf(&b, "+%zu bad", cell->n_bad);
	c[S_N] = printable(&b);
}

static void summary_table(const campaign_points *p, const char *shape, strbuf *out)
{
	size_t rows = 1;
	for (size_t i = 0; i < p->n_points; i++)
		if (strcmp(p->points[i].shape, shape) == 0)
			rows += p->points[i].n_cells;
	char **cells = xcalloc(rows * S_COLS, sizeof(*cells));
	for (int k = 0; k < S_COLS; k++)
		cells[k] = xstrdup(s_head[k]);
	size_t r = 1;
	for (size_t i = 0; i < p->n_points; i++) {
		const campaign_point *pt = &p->points[i];
		if (strcmp(pt->shape, shape) != 0)
			continue;
		for (size_t k = 0; k < pt->n_cells; k++)
			summary_row(pt, k, cells + (r++) * S_COLS);
	}
	size_t w[S_COLS] = {0};
	for (size_t i = 0; i < rows * S_COLS; i++) {
		size_t len = strlen(cells[i]);
		w[i % S_COLS] = len > w[i % S_COLS] ? len : w[i % S_COLS];
	}
	for (size_t i = 0; i < rows; i++) {
		strbuf_addstr(out, "  ");
		for (int k = 0; k < S_COLS; k++) {
			const char *s = cells[i * S_COLS + k];
			int pad = (int)(w[k] - strlen(s));
			if (k == S_COLS - 1)
				strbuf_addf(out, "%*s%s", s_right[k] ? pad : 0, "", s);
			else if (s_right[k])
				strbuf_addf(out, "%*s%s  ", pad, "", s);
			else
				strbuf_addf(out, "%s%*s  ", s, pad, "");
		}
		strbuf_addch(out, '\n');
	}
	for (size_t i = 0; i < rows * S_COLS; i++)
		free(cells[i]);
	free(cells);
}

void campaign_summary_text(const campaign_points *p, strbuf *out)
{
	strbuf_addf(out, "campaign %s: bar %.2f, max CV %.1f%%%s, sumCTA tolerance %.1f%%\n",
		    p->name, p->bar, p->max_cv, p->strict_noise ? " (strict)" : "",
		    p->sum_tolerance);
	for (size_t s = 0; s < p->shapes.n; s++) {
		strbuf_addf(out, "\nshape %s\n", p->shapes.v[s]);
		summary_table(p, p->shapes.v[s], out);
	}
	strbuf_addstr(out,
		      "\n* the best of its point (lowest median slowCTA among PASS_GATE, "
		      "BELOW_BAR not sloughed, NOISY and the baseline); *? provisional: not "
		      "measurably faster than the next\nverdicts: the ratio's 90% interval "
		      "against the bar; NOISY: it straddles the bar or no interval exists yet; "
		      "MEASURED: measured alone, no baseline to compare (never best); "
		      "CV!: CV over max CV\n\nwinners:\n");
	for (size_t s = 0; s < p->shapes.n; s++) {
		strbuf_addstr(out, "  ");
		campaign_flips_text(p, p->shapes.v[s], out);
		strbuf_addch(out, '\n');
	}
	strbuf_addf(out, "\njobs recorded %zu", p->jobs_recorded);
	if (p->jobs_expected)
		strbuf_addf(out, " of %zu", p->jobs_expected);
	strbuf_addf(out, ", duplicates %zu, cut attempts %zu", p->duplicates, p->not_final);
	if (p->superseded) {
		strbuf_addf(out, ", records of an earlier definition %zu (", p->superseded);
		list_names(out, &p->superseded_candidates);
		strbuf_addstr(out, "; not counted)");
	}
	if (p->bad_lines || p->torn)
		strbuf_addf(out, ", lines skipped %zu%s", p->bad_lines + (p->torn ? 1 : 0),
			    p->torn ? " (a torn last line)" : "");
	strbuf_addch(out, '\n');
}

static void json_num(cJSON *o, const char *key, double v)
{
	if (isfinite(v))
		cJSON_AddNumberToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

static cJSON *json_names(const campaign_names *l)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < l->n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(l->v[i]));
	return a;
}

static void json_str_or_null(cJSON *o, const char *key, const char *v)
{
	if (v)
		cJSON_AddStringToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

static cJSON *cell_json(const campaign_cell *c, bool best)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "candidate", c->candidate);
	cJSON_AddNumberToObject(o, "n", (double)c->n);
	json_num(o, "slowCTA_median_us", c->slow_median);
	json_num(o, "slowCTA_min_us", c->slow_min);
	json_num(o, "slowCTA_max_us", c->slow_max);
	json_num(o, "slowCTA_cv_pct", c->slow_cv);
	json_num(o, "wall_median_us", c->wall_median);
	json_num(o, "sumCTA_median_us", c->sum_median);
	json_num(o, "cos_min", c->cos_min);
	json_num(o, "ratio", c->ratio);
	cJSON_AddStringToObject(o, "ratio_source", campaign_ratio_source_name(c->ratio_source));
	cJSON_AddStringToObject(o, "verdict", campaign_verdict_name(c->verdict));
	cJSON_AddBoolToObject(o, "sloughed", c->sloughed);
	cJSON_AddBoolToObject(o, "cv_warning", c->cv_warn);
	cJSON_AddBoolToObject(o, "single", c->single);
	if (c->decided)
		cJSON_AddItemToObject(o, "decision", measure_decision_json(&c->dec));
	else
		cJSON_AddNullToObject(o, "decision");
	cJSON_AddNumberToObject(o, "n_bad", (double)c->n_bad);
	json_str_or_null(o, "worst_bad", c->worst_bad);
	cJSON_AddBoolToObject(o, "best", best);
	cJSON_AddItemToObject(o, "boxes", json_names(&c->boxes));
	cJSON_AddItemToObject(o, "slots", json_names(&c->slots));
	cJSON_AddItemToObject(o, "gpu_names", json_names(&c->gpu_names));
	return o;
}

cJSON *campaign_points_json(const campaign_points *p)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "campaign", p->name);
	json_str_or_null(o, "file", p->file);
	json_str_or_null(o, "pool", p->pool);
	cJSON_AddNumberToObject(o, "bar", p->bar);
	cJSON_AddNumberToObject(o, "max_cv", p->max_cv);
	cJSON_AddNumberToObject(o, "sum_tolerance", p->sum_tolerance);
	cJSON_AddBoolToObject(o, "strict_noise", p->strict_noise);
	cJSON_AddNumberToObject(o, "jobs_recorded", (double)p->jobs_recorded);
	cJSON_AddNumberToObject(o, "jobs_expected", (double)p->jobs_expected);
	cJSON_AddNumberToObject(o, "duplicates", (double)p->duplicates);
	cJSON_AddNumberToObject(o, "not_final", (double)p->not_final);
	cJSON_AddNumberToObject(o, "superseded", (double)p->superseded);
	cJSON_AddNumberToObject(o, "bad_lines", (double)p->bad_lines);
	cJSON_AddBoolToObject(o, "torn", p->torn);
	json_str_or_null(o, "first_start", p->first_start);
	json_str_or_null(o, "last_end", p->last_end);
	cJSON_AddItemToObject(o, "boxes", json_names(&p->boxes));
	cJSON_AddItemToObject(o, "gpu_names", json_names(&p->gpu_names));
	cJSON *pts = cJSON_AddArrayToObject(o, "points");
	for (size_t i = 0; i < p->n_points; i++) {
		const campaign_point *pt = &p->points[i];
		cJSON *jp = cJSON_CreateObject();
		cJSON_AddStringToObject(jp, "shape", pt->shape);
		if (pt->has_num_workers)
			cJSON_AddNumberToObject(jp, "num_workers", (double)pt->num_workers);
		else
			cJSON_AddNullToObject(jp, "num_workers");
		const campaign_cell *b = campaign_point_best(pt);
		json_str_or_null(jp, "best", b ? b->candidate : NULL);
		cJSON_AddBoolToObject(jp, "best_provisional", pt->best_provisional);
		cJSON *cells = cJSON_AddArrayToObject(jp, "cells");
		for (size_t k = 0; k < pt->n_cells; k++)
			cJSON_AddItemToArray(cells, cell_json(&pt->cells[k], pt->best == (long)k));
		cJSON_AddItemToArray(pts, jp);
	}
	cJSON *flips = cJSON_AddObjectToObject(o, "flips");
	for (size_t s = 0; s < p->shapes.n; s++) {
		strbuf b = STRBUF_INIT;
		campaign_flips_text(p, p->shapes.v[s], &b);
		cJSON_AddStringToObject(flips, p->shapes.v[s], b.buf);
		strbuf_release(&b);
	}
	return o;
}
