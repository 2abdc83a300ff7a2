/* The point table as Markdown and JSON (measure/table.h). */
#include "measure/table.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>

#include "results/stats.h"

static const char *const md_head[] = {
	"num_workers",
	"n",
	"slowCTA median (us)",
	"slowCTA min-max (us)",
	"slowCTA CV",
	"wall median (us)",
	"sumCTA median (us)",
	"ratio",
	"interval",
	"verdict",
	"source",
};
#define MD_COLS (sizeof(md_head) / sizeof(md_head[0]))

/* A cell's text: '|' escaped, control bytes (a newline included) as spaces. */
static void md_cell(strbuf *b, const char *s)
{
	strbuf_addstr(b, " ");
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '|' || c == '\\')
			strbuf_addch(b, '\\');
		strbuf_addch(b, c < 0x20 || c == 0x7f ? ' ' : (char)c);
	}
	strbuf_addstr(b, " |");
}

static void md_num(strbuf *b, double v)
{
	char s[64] = "-";
	if (isfinite(v))
		snprintf(s, sizeof(s), "%.3f", v);
	md_cell(b, s);
}

/* The ratio's median, or NAN when the point has no ratio. */
static double ratio_median(const measure_point *m)
{
	return m->n_ratio ? stats_median(m->ratio, m->n_ratio) : NAN;
}

static bool has_interval(const measure_point *m)
{
	return m->decided && m->dec.interval && isfinite(m->dec.lo) && isfinite(m->dec.hi);
}

static void md_row(strbuf *b, const measure_row *r)
{
	const measure_point *m = r->m;
	size_t n = m->n_res;
	char s[128];
	strbuf_addstr(b, "|");
	if (r->num_workers >= 0)
		snprintf(s, sizeof(s), "%d", r->num_workers);
	else
		snprintf(s, sizeof(s), "-");
	md_cell(b, s);
	snprintf(s, sizeof(s), "%zu", n);
	md_cell(b, s);
	md_num(b, n ? stats_median(m->slow, n) : NAN);
	if (n)
		snprintf(s, sizeof(s), "%.3f-%.3f", stats_min(m->slow, n), stats_max(m->slow, n));
	else
		snprintf(s, sizeof(s), "-");
	md_cell(b, s);
	double cv = n ? measure_cv_pct(m->slow, n) : NAN;
	if (isfinite(cv))
		snprintf(s, sizeof(s), "%.1f%%", cv);
	else
		snprintf(s, sizeof(s), "-");
	md_cell(b, s);
	md_num(b, n ? stats_median(m->wall, n) : NAN);
	md_num(b, n ? stats_median(m->sum, n) : NAN);
	md_num(b, ratio_median(m));
	if (has_interval(m))
		snprintf(s, sizeof(s), "%.3f-%.3f (%.0f%%)", m->dec.lo, m->dec.hi,
			 100.0 * m->dec.level);
	else
		snprintf(s, sizeof(s), "-");
	md_cell(b, s);
	md_cell(b, r->verdict);
	md_cell(b, r->source);
	strbuf_addch(b, '\n');
}

void measure_table_markdown(const measure_table *t, strbuf *out)
{
	strbuf_addstr(out, "# boxgate run");
	strbuf_addstr(out, " ");
	for (const char *s = t->box; s && *s; s++) /* one line, whatever the name */
		strbuf_addch(out, (unsigned char)*s < 0x20 ? ' ' : *s);
	strbuf_addf(out, " (run %s)\n\n|", t->run_id ? t->run_id : "-");
	for (size_t i = 0; i < MD_COLS; i++)
		md_cell(out, md_head[i]);
	strbuf_addstr(out, "\n|");
	for (size_t i = 0; i < MD_COLS; i++)
		strbuf_addstr(out, i == 0 || (i >= 1 && i <= 7) ? " ---: |" : " --- |");
	strbuf_addch(out, '\n');
	for (size_t i = 0; i < t->n; i++)
		md_row(out, &t->rows[i]);
}

static void json_num(cJSON *o, const char *key, double v)
{
	if (isfinite(v))
		cJSON_AddNumberToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

static void json_stat(cJSON *o, const char *key, const double *x, size_t n)
{
	if (!n) {
		cJSON_AddNullToObject(o, key);
		return;
	}
	cJSON *s = cJSON_AddObjectToObject(o, key);
	json_num(s, "median", stats_median(x, n));
	json_num(s, "min", stats_min(x, n));
	json_num(s, "max", stats_max(x, n));
	json_num(s, "cv_pct", measure_cv_pct(x, n));
}

static cJSON *json_row(const measure_row *r)
{
	const measure_point *m = r->m;
	cJSON *o = cJSON_CreateObject();
	if (r->num_workers >= 0)
		cJSON_AddNumberToObject(o, "num_workers", r->num_workers);
	else
		cJSON_AddNullToObject(o, "num_workers");
	cJSON_AddStringToObject(o, "verdict", r->verdict);
	cJSON_AddNumberToObject(o, "exit", r->exit_code);
	cJSON_AddNumberToObject(o, "n", (double)m->n_res);
	cJSON_AddNumberToObject(o, "runs", r->runs);
	cJSON_AddNumberToObject(o, "warmup", r->warmup);
	json_stat(o, "slowCTA_us", m->slow, m->n_res);
	json_stat(o, "wall_us", m->wall, m->n_res);
	json_stat(o, "sumCTA_us", m->sum, m->n_res);
	if (m->n_ratio) {
		cJSON *q = cJSON_AddObjectToObject(o, "ratio");
		json_num(q, "median", ratio_median(m));
		bool iv = has_interval(m);
		json_num(q, "lo", iv ? m->dec.lo : NAN);
		json_num(q, "hi", iv ? m->dec.hi : NAN);
		json_num(q, "level", iv ? m->dec.level : NAN);
		if (m->decided)
			cJSON_AddStringToObject(q, "method",
						m->dec.paired ? "signed-rank" : "rank-sum");
		else
			cJSON_AddNullToObject(q, "method");
	} else {
		cJSON_AddNullToObject(o, "ratio");
	}
	json_num(o, "bar", m->verdict != VERDICT_MEASURED && m->bar_used > 0 ? m->bar_used : NAN);
	if (m->decided)
		cJSON_AddItemToObject(o, "decision", measure_decision_json(&m->dec));
	else
		cJSON_AddNullToObject(o, "decision");
	if (m->apart)
		json_stat(o, "baseline_slowCTA_us", m->b_slow, m->n_b);
	cJSON_AddStringToObject(o, "source", r->source ? r->source : "");
	return o;
}

cJSON *measure_table_json(const measure_table *t)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "box", t->box ? t->box : "");
	if (t->run_id)
		cJSON_AddStringToObject(o, "run_id", t->run_id);
	else
		cJSON_AddNullToObject(o, "run_id");
	cJSON *a = cJSON_AddArrayToObject(o, "points");
	for (size_t i = 0; i < t->n; i++)
		cJSON_AddItemToArray(a, json_row(&t->rows[i]));
	return o;
}
