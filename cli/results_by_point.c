/* results show --by point (cli/results_by_point.h). */
#include "cli/results_by_point.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "cli/cli.h"
#include "gate/client/result.h"
#include "measure/delta.h"
#include "results/points.h"
#include "results/stats.h"

static void json_num(cJSON *o, const char *key, double v)
{
	if (isfinite(v))
		cJSON_AddNumberToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

static void print_json(const results_point *p)
{
	results_point_view v;
	results_point_view_of(p, &v);
	cJSON *o = cJSON_CreateObject();
	char *label = results_point_label(p, NULL);
	cJSON_AddStringToObject(o, "point", label);
	free(label);
	cJSON *f = cJSON_AddObjectToObject(o, "fields");
	for (size_t i = 0; i < p->n_fields; i++)
		cJSON_AddStringToObject(f, p->fields[i].name, p->fields[i].value);
	cJSON_AddNumberToObject(o, "n", (double)p->n);
	cJSON_AddNumberToObject(o, "n_bad", (double)p->n_bad);
	json_num(o, "slowCTA_median_us", p->n ? stats_median(p->slow, p->n) : NAN);
	json_num(o, "slowCTA_min_us", p->n ? stats_min(p->slow, p->n) : NAN);
	json_num(o, "slowCTA_max_us", p->n ? stats_max(p->slow, p->n) : NAN);
	json_num(o, "slowCTA_cv_pct", p->n ? 100 * stats_cv(p->slow, p->n) : NAN);
	json_num(o, "ratio", v.d.estimate);
	json_num(o, "ratio_low", v.d.lo);
	json_num(o, "ratio_high", v.d.hi);
	json_num(o, "bar", v.bar);
	cJSON_AddStringToObject(o, "verdict", v.verdict);
	if (v.noisy) {
		cJSON_AddStringToObject(o, "leans", v.leans_above ? "above" : "below");
		cJSON_AddNumberToObject(o, "more_repeats", v.d.more);
	}
	cJSON *runs = cJSON_AddArrayToObject(o, "runs");
	for (size_t i = 0; i < p->n_runs; i++)
		cJSON_AddItemToArray(runs, cJSON_CreateString(p->runs[i]));
	if (p->first_start)
		cJSON_AddStringToObject(o, "first_start", p->first_start);
	if (p->last_start)
		cJSON_AddStringToObject(o, "last_start", p->last_start);
	cli_print_json(o);
	cJSON_Delete(o);
}

enum { B_POINT, B_N, B_SLOW, B_RATIO, B_CI, B_VERDICT, B_RUN, B_N_COLS };
static const char *const b_head[B_N_COLS] = {"POINT",    "N",       "SLOWCTA_US", "RATIO",
					     "INTERVAL", "VERDICT", "RUN"};
static const bool b_right[B_N_COLS] = {[B_N] = true, [B_SLOW] = true, [B_RATIO] = true};

static size_t width(const char *s)
{
	size_t w = 0;
	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

static void cells_of(const results_point *p, char **c)
{
	results_point_view v;
	results_point_view_of(p, &v);
	c[B_POINT] = results_point_label(p, NULL);
	c[B_N] = p->n_bad ? xasprintf("%zu+%zu bad", p->n, p->n_bad) : xasprintf("%zu", p->n);
	c[B_SLOW] = p->n ? xasprintf("%.3f \xc2\xb1 %.1f%%", stats_median(p->slow, p->n),
				     100 * stats_cv(p->slow, p->n))
			 : xstrdup("-");
	c[B_RATIO] = isfinite(v.d.estimate) ? xasprintf("%.3f", v.d.estimate) : xstrdup("-");
	c[B_CI] = isfinite(v.d.lo) ? xasprintf("[%.3f, %.3f]", v.d.lo, v.d.hi)
		  : v.have_d       ? xstrdup("(too few)")
				   : xstrdup("-");
	if (v.noisy && v.d.more > 0)
		c[B_VERDICT] = xasprintf("NOISY (leans %s bar %.2f; about %d more repeats)",
					 v.leans_above ? "above" : "below", v.bar, v.d.more);
	else if (v.noisy)
		c[B_VERDICT] = xasprintf("NOISY (leans %s bar %.2f)",
					 v.leans_above ? "above" : "below", v.bar);
	else
		c[B_VERDICT] = xstrdup(v.verdict);
	if (!p->n_runs)
		c[B_RUN] = xstrdup("-");
	else if (p->n_runs == 1)
		c[B_RUN] = xstrdup(p->runs[0]);
	else
		c[B_RUN] = xasprintf("%s +%zu", p->runs[p->n_runs - 1], p->n_runs - 1);
	for (int k = 0; k < B_N_COLS; k++)
		for (char *s = c[k]; *s; s++)
			if ((unsigned char)*s < 0x20 || *s == 0x7f)
				*s = '?';
}

void cli_results_by_point(cJSON *const *recs, size_t n, bool json)
{
	results_points ps = RESULTS_POINTS_INIT;
	for (size_t i = 0; i < n; i++)
		results_points_add(&ps, recs[i]);
	if (json) {
		for (size_t i = 0; i < ps.n; i++)
			print_json(&ps.v[i]);
		results_points_release(&ps);
		return;
	}
	char **cells = xcalloc((ps.n + 1) * B_N_COLS, sizeof(*cells));
	size_t w[B_N_COLS] = {0};
	for (int k = 0; k < B_N_COLS; k++)
		cells[k] = xstrdup(b_head[k]);
	for (size_t i = 0; i < ps.n; i++)
		cells_of(&ps.v[i], cells + (i + 1) * B_N_COLS);
	for (size_t i = 0; i < (ps.n + 1) * B_N_COLS; i++)
		if (width(cells[i]) > w[i % B_N_COLS])
			w[i % B_N_COLS] = width(cells[i]);
	strbuf out = STRBUF_INIT;
	for (size_t i = 0; i <= ps.n; i++) {
		for (int k = 0; k < B_N_COLS; k++) {
			const char *s = cells[i * B_N_COLS + k];
			int pad = (int)(w[k] - width(s));
			if (k == B_N_COLS - 1)
				strbuf_addstr(&out, s);
			else if (b_right[k])
				strbuf_addf(&out, "%*s%s  ", pad, "", s);
			else
				strbuf_addf(&out, "%s%*s  ", s, pad, "");
		}
		strbuf_addch(&out, '\n');
	}
	if (out.len)
		cli_write(stdout, out.buf, out.len);
	strbuf_release(&out);
	for (size_t i = 0; i < (ps.n + 1) * B_N_COLS; i++)
		free(cells[i]);
	free(cells);
	results_points_release(&ps);
}
