/* boxgate results compare: two results files, their points paired by
 * (GPU name or box, gate kind, shape, num_workers, candidate, the other gate
 * arguments) and each judged by the rule in results/stats.h on the slowCTA
 * samples of its records. The other arguments are in the key so that an fp8 run
 * is never compared with a bf16 one of the same shape. */
#include "cli/results_compare.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "base/xmalloc.h"
#include "results/stats.h"
#include "results/store.h"

enum { BEFORE, AFTER };

typedef struct cmp_point {
	char *device, *kind, *shape, *candidate; /* owned; NULL: not recorded */
	char *rest; /* the gate arguments not named above, space-joined; owned */
	long num_workers;
	bool has_num_workers;
	char *label;  /* "DEVICE KIND SHAPE nwN CANDIDATE [REST]", '-' for what is missing */
	double *s[2]; /* slowCTA_us samples before and after */
	size_t n[2], cap[2];
} cmp_point;

typedef struct cmp_set {
	cmp_point *p;
	size_t n, cap;
	int side;          /* the file being read */
	size_t skipped[2]; /* records without a usable sample */
} cmp_set;

static const char *str_field(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* The point's own flags, which the key holds apart (value-taking ones first). */
static const char *const key_flags[] = {"--kind",   "--shape",     "--configs", "--num-workers",
					"--kernel", "--candidate", "--baseline"};
enum { KEY_FLAGS_WITH_VALUE = 6 };

/* The record's gate_args less the point's own flags (and their values), joined by
 * spaces; "" when nothing is left or gate_args is not an array of strings. */
static char *rest_of_args(const cJSON *args)
{
	char *out = xstrdup("");
	const cJSON *a = cJSON_IsArray(args) ? args->child : NULL;
	while (a) {
		const char *w = cJSON_IsString(a) ? a->valuestring : "";
		size_t i = 0, len = strcspn(w, "=");
		while (i < sizeof(key_flags) / sizeof(key_flags[0]) &&
		       !(strlen(key_flags[i]) == len && strncmp(w, key_flags[i], len) == 0))
			i++;
		if (i < sizeof(key_flags) / sizeof(key_flags[0])) {
			a = a->next;
			if (i < KEY_FLAGS_WITH_VALUE && !w[len] && a)
				a = a->next; /* the flag's value */
			continue;
		}
		char *grown = xasprintf("%s%s%s", out, *out ? " " : "", w);
		free(out);
		out = grown;
		a = a->next;
	}
	return out;
}

static cmp_point *find_point(cmp_set *set, const char *device, const char *kind, const char *shape,
			     bool has_nw, long nw, const char *cand, const char *rest)
{
	for (size_t i = 0; i < set->n; i++) {
		cmp_point *p = &set->p[i];
		if (same_str(p->device, device) && same_str(p->kind, kind) &&
		    same_str(p->shape, shape) && same_str(p->candidate, cand) &&
		    same_str(p->rest, rest) && p->has_num_workers == has_nw &&
		    (!has_nw || p->num_workers == nw))
			return p;
	}
	if (set->n == set->cap) {
		set->cap = set->cap ? 2 * set->cap : 8;
		set->p = xrealloc(set->p, set->cap * sizeof(*set->p));
	}
	cmp_point *p = &set->p[set->n++];
	memset(p, 0, sizeof(*p));
	p->device = device ? xstrdup(device) : NULL;
	p->kind = kind ? xstrdup(kind) : NULL;
	p->rest = xstrdup(rest);
	p->shape = shape ? xstrdup(shape) : NULL;
	p->candidate = cand ? xstrdup(cand) : NULL;
	p->has_num_workers = has_nw;
	p->num_workers = nw;
	char nwbuf[32] = "-";
	if (has_nw)
		snprintf(nwbuf, sizeof(nwbuf), "nw%ld", nw);
	p->label = xasprintf("%s %s %s %s %s%s%s", device ? device : "-", kind ? kind : "-",
			     shape ? shape : "-", nwbuf, cand ? cand : "-", *rest ? " " : "", rest);
	return p;
}

/* results_record_fn: one record's slowCTA as a sample of its point. */
static int add_record(void *vset, const cJSON *rec, size_t line)
{
	cmp_set *set = vset;
	(void)line;
	const char *verdict = str_field(rec, "verdict");
	const cJSON *result = cJSON_GetObjectItemCaseSensitive(rec, "result");
	const cJSON *cand = cJSON_GetObjectItemCaseSensitive(result, "candidate");
	const cJSON *slow = cJSON_GetObjectItemCaseSensitive(cand, "slowCTA_us");
	if ((verdict &&
	     (strcmp(verdict, "INVALID") == 0 || strcmp(verdict, "TIMEOUT_HANG") == 0)) ||
	    !cJSON_IsNumber(slow) || !isfinite(slow->valuedouble) || !(slow->valuedouble > 0)) {
		set->skipped[set->side]++;
		return 0;
	}
	const char *device = str_field(rec, "gpu_name");
	if (!device)
		device = str_field(rec, "box");
	const cJSON *point = cJSON_GetObjectItemCaseSensitive(rec, "point");
	const cJSON *nw = cJSON_GetObjectItemCaseSensitive(point, "num_workers");
	bool has_nw = cJSON_IsNumber(nw) && nw->valuedouble == floor(nw->valuedouble) &&
		      fabs(nw->valuedouble) < 1e15;
	char *rest = rest_of_args(cJSON_GetObjectItemCaseSensitive(rec, "gate_args"));
	cmp_point *p =
		find_point(set, device, str_field(point, "kind"), str_field(point, "shape"), has_nw,
			   has_nw ? (long)nw->valuedouble : 0, str_field(point, "candidate"), rest);
	free(rest);
	int s = set->side;
	if (p->n[s] == p->cap[s]) {
		p->cap[s] = p->cap[s] ? 2 * p->cap[s] : 8;
		p->s[s] = xrealloc(p->s[s], p->cap[s] * sizeof(double));
	}
	p->s[s][p->n[s]++] = slow->valuedouble;
	return 0;
}

static void cmp_set_release(cmp_set *set)
{
	for (size_t i = 0; i < set->n; i++) {
		cmp_point *p = &set->p[i];
		free(p->device);
		free(p->kind);
		free(p->rest);
		free(p->shape);
		free(p->candidate);
		free(p->label);
		free(p->s[BEFORE]);
		free(p->s[AFTER]);
	}
	free(set->p);
}

/* Reads one file into the set; prints what went wrong and returns an exit
 * code, or 0. */
static int read_side(cmp_set *set, int side, const char *path)
{
	results_read_stats st = {0};
	bg_err err = {0};
	set->side = side;
	if (results_read(path, add_record, set, &st, &err) < 0) {
		cli_error("results compare: %s", err.msg);
		return BG_EXIT_USAGE;
	}
	if (st.bad)
		cli_warn("%s: %zu line%s that %s not a JSON object skipped (the first: line %zu)",
			 path, st.bad, st.bad == 1 ? "" : "s", st.bad == 1 ? "is" : "are",
			 st.first_bad);
	if (st.torn)
		cli_warn("%s: a torn last line skipped", path);
	return 0;
}

enum { ONLY_BEFORE = STATS_AMBIGUOUS + 1, ONLY_AFTER, N_CALLS };

static const char *call_name(int call)
{
	if (call == ONLY_BEFORE)
		return "only in before";
	if (call == ONLY_AFTER)
		return "only in after";
	return stats_call_name((stats_call)call);
}

static const char *call_key(int call)
{
	if (call == ONLY_BEFORE)
		return "only_before";
	if (call == ONLY_AFTER)
		return "only_after";
	return stats_call_name((stats_call)call);
}

static void add_num_or_null(cJSON *o, const char *key, bool have, double v)
{
	if (have && isfinite(v))
		cJSON_AddNumberToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

static void add_str_or_null(cJSON *o, const char *key, const char *v)
{
	if (v)
		cJSON_AddStringToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

static void print_json_point(const cmp_point *p, int call, const stats_compare *c)
{
	bool both = call < ONLY_BEFORE;
	bool have_a = p->n[BEFORE] > 0, have_b = p->n[AFTER] > 0;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "point", p->label);
	add_str_or_null(o, "device", p->device);
	add_str_or_null(o, "kind", p->kind);
	add_str_or_null(o, "shape", p->shape);
	add_num_or_null(o, "num_workers", p->has_num_workers, (double)p->num_workers);
	add_str_or_null(o, "candidate", p->candidate);
	cJSON_AddStringToObject(o, "args", p->rest);
	cJSON_AddNumberToObject(o, "n_before", (double)p->n[BEFORE]);
	cJSON_AddNumberToObject(o, "n_after", (double)p->n[AFTER]);
	add_num_or_null(o, "median_before", have_a, stats_median(p->s[BEFORE], p->n[BEFORE]));
	add_num_or_null(o, "median_after", have_b, stats_median(p->s[AFTER], p->n[AFTER]));
	add_num_or_null(o, "cv_before", have_a, stats_cv(p->s[BEFORE], p->n[BEFORE]));
	add_num_or_null(o, "cv_after", have_b, stats_cv(p->s[AFTER], p->n[AFTER]));
	add_num_or_null(o, "ratio", both, c->ratio);
	add_num_or_null(o, "change_pct", both, (c->ratio - 1) * 100);
	add_num_or_null(o, "p", both, c->mwu.p);
	if (both)
		cJSON_AddBoolToObject(o, "p_exact", c->mwu.exact);
	else
		cJSON_AddNullToObject(o, "p_exact");
	cJSON_AddStringToObject(o, "call", call_key(call));
	cli_print_json(o);
	cJSON_Delete(o);
}

static void fmt_median(char *buf, size_t size, const cmp_point *p, int side)
{
	if (p->n[side])
		snprintf(buf, size, "%.2f", stats_median(p->s[side], p->n[side]));
	else
		snprintf(buf, size, "-");
}

static void print_row(int width, const char *point, const char *na, const char *nb, const char *ma,
		      const char *mb, const char *ratio, const char *change, const char *p,
		      const char *call)
{
	cli_printf(stdout, "%-*s  %8s  %7s  %10s  %10s  %7s  %8s  %8s  %s\n", width, point, na, nb,
		   ma, mb, ratio, change, p, call);
}

static void print_table_point(int width, const cmp_point *p, int call, const stats_compare *c)
{
	char na[24], nb[24], ma[40], mb[40], ratio[40] = "-", change[40] = "-", pv[40] = "-";
	snprintf(na, sizeof(na), "%zu", p->n[BEFORE]);
	snprintf(nb, sizeof(nb), "%zu", p->n[AFTER]);
	fmt_median(ma, sizeof(ma), p, BEFORE);
	fmt_median(mb, sizeof(mb), p, AFTER);
	if (call < ONLY_BEFORE) {
		snprintf(ratio, sizeof(ratio), "%.4f", c->ratio);
		snprintf(change, sizeof(change), "%+.2f%%", (c->ratio - 1) * 100);
		if (c->mwu.p < 0.0001)
			snprintf(pv, sizeof(pv), "<0.0001");
		else
			snprintf(pv, sizeof(pv), "%.4f", c->mwu.p);
	}
	print_row(width, p->label, na, nb, ma, mb, ratio, change, pv, call_name(call));
}

int cli_results_compare(cli_ctx *ctx, const cli_args *args, bool json)
{
	(void)ctx;
	if (args->n != 3) {
		cli_error("results compare wants two files (boxgate results compare BEFORE AFTER)");
		return BG_EXIT_USAGE;
	}
	const char *path[2] = {args->v[1], args->v[2]};
	cmp_set set = {0};
	int rc = read_side(&set, BEFORE, path[BEFORE]);
	if (rc == 0)
		rc = read_side(&set, AFTER, path[AFTER]);
	if (rc != 0)
		goto out;

	int width = (int)strlen("point");
	for (size_t i = 0; i < set.n; i++)
		if ((int)strlen(set.p[i].label) > width)
			width = (int)strlen(set.p[i].label);
	if (!json)
		print_row(width, "point", "n before", "n after", "before us", "after us", "ratio",
			  "change", "p", "call");
	size_t counts[N_CALLS] = {0};
	for (size_t i = 0; i < set.n; i++) {
		const cmp_point *p = &set.p[i];
		stats_compare c = {0};
		int call;
		if (!p->n[AFTER])
			call = ONLY_BEFORE;
		else if (!p->n[BEFORE])
			call = ONLY_AFTER;
		else if (stats_classify(p->s[BEFORE], p->n[BEFORE], p->s[AFTER], p->n[AFTER], NULL,
					&c) < 0)
			call = STATS_AMBIGUOUS; /* samples are finite and above 0: not reached */
		else
			call = (int)c.call;
		counts[call]++;
		if (json)
			print_json_point(p, call, &c);
		else
			print_table_point(width, p, call, &c);
	}
	rc = counts[STATS_SLOWER] ? BG_EXIT_FAIL : BG_EXIT_OK;
	if (json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "summary", "compare");
		cJSON_AddStringToObject(o, "before", path[BEFORE]);
		cJSON_AddStringToObject(o, "after", path[AFTER]);
		cJSON_AddNumberToObject(o, "points", (double)set.n);
		for (int k = 0; k < N_CALLS; k++)
			cJSON_AddNumberToObject(o, call_key(k), (double)counts[k]);
		cJSON_AddNumberToObject(o, "skipped_before", (double)set.skipped[BEFORE]);
		cJSON_AddNumberToObject(o, "skipped_after", (double)set.skipped[AFTER]);
		cJSON_AddNumberToObject(o, "exit", rc);
		cli_print_json(o);
		cJSON_Delete(o);
	} else {
		cli_printf(stdout,
			   "%zu point%s: %zu same, %zu faster, %zu slower, %zu ambiguous, %zu only "
			   "in before, %zu only in after",
			   set.n, set.n == 1 ? "" : "s", counts[STATS_SAME], counts[STATS_FASTER],
			   counts[STATS_SLOWER], counts[STATS_AMBIGUOUS], counts[ONLY_BEFORE],
			   counts[ONLY_AFTER]);
		if (set.skipped[BEFORE] + set.skipped[AFTER])
			cli_printf(stdout,
				   " (records without a slowCTA sample skipped: %zu before, %zu "
				   "after; INVALID and TIMEOUT_HANG never count)",
				   set.skipped[BEFORE], set.skipped[AFTER]);
		cli_printf(stdout, "\n");
	}
out:
	cmp_set_release(&set);
	return rc;
}
