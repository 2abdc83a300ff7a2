/* boxgate results compare: two sides (a file and a selector each), their
 * records grouped into points (results/points.h), the points paired, and each
 * pair decided (measure/compare.h); what is printed of them. */
#include "cli/results_compare.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "base/csv.h"
#include "measure/compare.h"
#include "results/points.h"
#include "results/select.h"
#include "results/store.h"

static const char *const side_name[2] = {"before", "after"};

/* Reads one side; prints what went wrong and returns an exit code, or 0. */
static int read_side(measure_side *s, const char *sel_text, int which)
{
	results_read_stats st = {0};
	bg_err err = {0};
	if (measure_side_read(s, &st, &err) < 0) {
		cli_error("results compare: %s", err.msg);
		return BG_EXIT_USAGE;
	}
	if (st.bad)
		cli_warn("%s: %zu line%s that %s not a JSON object skipped (the first: line %zu)",
			 s->path, st.bad, st.bad == 1 ? "" : "s", st.bad == 1 ? "is" : "are",
			 st.first_bad);
	if (st.torn)
		cli_warn("%s: a torn last line skipped", s->path);
	if (s->sel.n && !s->matched) {
		size_t len = strlen(sel_text);
		cli_error("results compare: --%s '%.200s%s' matches no record of %s",
			  side_name[which], sel_text, len > 200 ? "..." : "", s->path);
		return BG_EXIT_USAGE;
	}
	return 0;
}

static void add_num_or_null(cJSON *o, const char *key, double v)
{
	if (isfinite(v))
		cJSON_AddNumberToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

static const char *field_or_null(const results_point *p, int i)
{
	return p && strcmp(p->fields[i].value, "-") != 0 ? p->fields[i].value : NULL;
}

static void add_str_or_null(cJSON *o, const char *key, const char *v)
{
	if (v)
		cJSON_AddStringToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

static double side_median(const results_point *p)
{
	return p && p->n ? stats_median(p->slow, p->n) : NAN;
}

static double side_cv(const results_point *p)
{
	return p && p->n ? stats_cv(p->slow, p->n) : NAN;
}

static size_t side_n(const results_point *p)
{
	return p ? p->n : 0;
}

static void print_json_row(const measure_row *r)
{
	const results_point *any =
		r->p[MEASURE_BEFORE] ? r->p[MEASURE_BEFORE] : r->p[MEASURE_AFTER];
	bool both = measure_row_has_both(r);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "point", r->label);
	for (int s = 0; s < 2; s++) {
		char *l = r->p[s] ? results_point_label(r->p[s], NULL) : NULL;
		add_str_or_null(o, s ? "point_after" : "point_before", l);
		free(l);
	}
	add_str_or_null(o, "device", field_or_null(any, RESULTS_F_DEVICE));
	add_str_or_null(o, "kind", field_or_null(any, RESULTS_F_KIND));
	add_str_or_null(o, "shape", field_or_null(any, RESULTS_F_SHAPE));
	const char *nw = field_or_null(any, RESULTS_F_NW);
	add_num_or_null(o, "num_workers", nw ? atof(nw) : NAN);
	add_str_or_null(o, "candidate", field_or_null(any, RESULTS_F_CANDIDATE));
	strbuf args = STRBUF_INIT;
	for (size_t i = RESULTS_FIXED_FIELDS; i < any->n_fields; i++) {
		const results_field *f = &any->fields[i];
		if (args.len)
			strbuf_addch(&args, ' ');
		if (!*f->name)
			strbuf_addstr(&args, f->value);
		else if (strcmp(f->value, "-") == 0)
			strbuf_addf(&args, "--%s", f->name);
		else
			strbuf_addf(&args, "--%s %s", f->name, f->value);
	}
	cJSON_AddStringToObject(o, "args", args.buf ? args.buf : "");
	strbuf_release(&args);
	cJSON_AddNumberToObject(o, "n_before", (double)side_n(r->p[MEASURE_BEFORE]));
	cJSON_AddNumberToObject(o, "n_after", (double)side_n(r->p[MEASURE_AFTER]));
	add_num_or_null(o, "median_before", side_median(r->p[MEASURE_BEFORE]));
	add_num_or_null(o, "median_after", side_median(r->p[MEASURE_AFTER]));
	add_num_or_null(o, "cv_before", side_cv(r->p[MEASURE_BEFORE]));
	add_num_or_null(o, "cv_after", side_cv(r->p[MEASURE_AFTER]));
	add_num_or_null(o, "ratio", both ? r->d.ratio : NAN);
	add_num_or_null(o, "change_pct", both ? (r->d.ratio - 1) * 100 : NAN);
	add_num_or_null(o, "ratio_low", both ? r->d.lo : NAN);
	add_num_or_null(o, "ratio_high", both ? r->d.hi : NAN);
	add_num_or_null(o, "level", both ? r->d.level : NAN);
	add_num_or_null(o, "p", both ? r->d.p : NAN);
	if (both)
		cJSON_AddBoolToObject(o, "p_exact", r->d.p_exact);
	else
		cJSON_AddNullToObject(o, "p_exact");
	cJSON_AddBoolToObject(o, "decided", both && r->d.decided);
	cJSON_AddStringToObject(o, "call", measure_row_call_key(r->call));
	cli_print_json(o);
	cJSON_Delete(o);
}

/* "100.00 ± 1.2%", "-" when the side has no sample. */
static char *median_cell(const results_point *p)
{
	if (!p || !p->n)
		return xstrdup("-");
	return xasprintf("%.2f \xc2\xb1 %.1f%%", stats_median(p->slow, p->n),
			 100 * stats_cv(p->slow, p->n));
}

static char *pct(double ratio)
{
	return xasprintf("%+.2f%%", (ratio - 1) * 100);
}

enum { C_POINT, C_BEFORE, C_NB, C_AFTER, C_NA, C_DELTA, C_CI, C_P, C_CALL, C_N };
static const char *const c_head[C_N] = {"point", "before us",      "n", "after us", "n",
					"delta", "interval (90%)", "p", "call"};
static const bool c_right[C_N] = {
	[C_BEFORE] = true, [C_NB] = true, [C_AFTER] = true, [C_NA] = true, [C_DELTA] = true};

static void table_cells(const measure_row *r, char **c)
{
	bool both = measure_row_has_both(r);
	c[C_POINT] = xstrdup(r->label);
	c[C_BEFORE] = median_cell(r->p[MEASURE_BEFORE]);
	c[C_AFTER] = median_cell(r->p[MEASURE_AFTER]);
	c[C_NB] = xasprintf("%zu", side_n(r->p[MEASURE_BEFORE]));
	c[C_NA] = xasprintf("%zu", side_n(r->p[MEASURE_AFTER]));
	if (!both) {
		c[C_DELTA] = xstrdup("-");
		c[C_CI] = xstrdup("-");
		c[C_P] = xstrdup("-");
	} else {
		c[C_DELTA] = r->d.decided ? pct(r->d.ratio) : xstrdup("~");
		if (isfinite(r->d.lo)) {
			char *lo = pct(r->d.lo), *hi = pct(r->d.hi);
			c[C_CI] = xasprintf("[%s, %s]", lo, hi);
			free(lo), free(hi);
		} else {
			c[C_CI] = xstrdup("(too few samples)");
		}
		c[C_P] = r->d.p < 0.0001 ? xstrdup("p<0.0001") : xasprintf("p=%.4f", r->d.p);
	}
	c[C_CALL] = xstrdup(measure_row_call_name(r->call));
	for (int k = 0; k < C_N; k++)
		for (char *p = c[k]; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
}

/* Display width: UTF-8 continuation bytes take no column. */
static size_t width(const char *s)
{
	size_t w = 0;
	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

static void print_table(const measure_row *rows, size_t n, const measure_side *s,
			const char *const *sel_text, const measure_pairing *pr)
{
	char **cells = xcalloc((n + 1) * C_N, sizeof(*cells));
	size_t w[C_N] = {0};
	for (int k = 0; k < C_N; k++)
		cells[k] = xstrdup(c_head[k]);
	for (size_t i = 0; i < n; i++)
		table_cells(&rows[i], cells + (i + 1) * C_N);
	for (size_t i = 0; i < (n + 1) * C_N; i++)
		if (width(cells[i]) > w[i % C_N])
			w[i % C_N] = width(cells[i]);
	strbuf out = STRBUF_INIT;
	for (int k = 0; k < 2; k++)
		strbuf_addf(&out, "%s: %s%s%s\n", side_name[k], s[k].path, s[k].sel.n ? " " : "",
			    sel_text[k]);
	if (pr->skip)
		strbuf_addf(&out, "paired on everything but %s%s\n", pr->skip,
			    pr->inferred ? " (the key the selectors differ in)" : "");
	if (pr->from)
		strbuf_addf(&out, "paired with %s (before) as %s (after)\n", pr->from, pr->to);
	for (size_t i = 0; i <= n; i++) {
		for (int k = 0; k < C_N; k++) {
			const char *c = cells[i * C_N + k];
			int pad = (int)(w[k] - width(c));
			if (k == C_N - 1)
				strbuf_addstr(&out, c);
			else if (c_right[k])
				strbuf_addf(&out, "%*s%s  ", pad, "", c);
			else
				strbuf_addf(&out, "%s%*s  ", c, pad, "");
		}
		strbuf_addch(&out, '\n');
	}
	cli_write(stdout, out.buf, out.len);
	strbuf_release(&out);
	for (size_t i = 0; i < (n + 1) * C_N; i++)
		free(cells[i]);
	free(cells);
}

static void csv_num(strbuf *b, double v)
{
	char *t = bg_num_text(v);
	strbuf_addch(b, ',');
	strbuf_addstr(b, t);
	free(t);
}

/* A derived number rounded to `digits` significant digits, so a CSV holds no
 * more precision than the samples had. */
static double round_sig(double v, int digits)
{
	if (!isfinite(v) || v == 0)
		return v;
	char buf[64];
	snprintf(buf, sizeof(buf), "%.*g", digits, v);
	return strtod(buf, NULL);
}

static void print_csv(const measure_row *rows, size_t n)
{
	strbuf b = STRBUF_INIT;
	strbuf_addstr(&b, "point,median_before_us,cv_before_pct,n_before,median_after_us,"
			  "cv_after_pct,n_after,ratio,change_pct,ratio_low,ratio_high,p,call\r\n");
	for (size_t i = 0; i < n; i++) {
		const measure_row *r = &rows[i];
		bool both = measure_row_has_both(r);
		/* one line of printable text, as in the table */
		char *label = xstrdup(r->label);
		for (char *c = label; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		bg_csv_field(&b, label);
		free(label);
		for (int s = 0; s < 2; s++) {
			csv_num(&b, side_median(r->p[s]));
			csv_num(&b, round_sig(100 * side_cv(r->p[s]), 3));
			csv_num(&b, (double)side_n(r->p[s]));
		}
		csv_num(&b, both ? round_sig(r->d.ratio, 6) : NAN);
		csv_num(&b, both ? round_sig((r->d.ratio - 1) * 100, 4) : NAN);
		csv_num(&b, both ? round_sig(r->d.lo, 6) : NAN);
		csv_num(&b, both ? round_sig(r->d.hi, 6) : NAN);
		csv_num(&b, both ? round_sig(r->d.p, 4) : NAN);
		strbuf_addch(&b, ',');
		bg_csv_field(&b, measure_row_call_key(r->call));
		strbuf_addstr(&b, "\r\n");
	}
	cli_write(stdout, b.buf, b.len);
	strbuf_release(&b);
}

static int add_selectors(measure_side *s, char **sel_text, int which, const cli_list *l)
{
	for (size_t i = 0; l && i < l->n; i++) {
		bg_err err = {0};
		if (results_selector_add(&s->sel, l->v[i], &err) < 0) {
			cli_error("results compare: --%s: %s", side_name[which], err.msg);
			return BG_EXIT_USAGE;
		}
	}
	*sel_text = results_selector_text(&s->sel);
	return 0;
}

int cli_results_compare(cli_ctx *ctx, const cli_args *args, const cli_compare_opts *o)
{
	measure_side s[2] = {{0}, {0}};
	char *sel_text[2] = {NULL, NULL};
	measure_pairing pr = {0};
	measure_row *rows = NULL;
	size_t n_rows = 0;
	char *store = NULL;
	int rc = 0;
	size_t files = args->n - 1;
	bool have_sel = (o->before && o->before->n) || (o->after && o->after->n);
	if (o->json && o->csv) {
		cli_error("results compare: --json or --csv, not both");
		return BG_EXIT_USAGE;
	}
	if (files > 2 || (files < 2 && !have_sel)) {
		cli_error("results compare wants two files (boxgate results compare BEFORE AFTER), "
			  "or one store and --before/--after selectors");
		return BG_EXIT_USAGE;
	}
	if ((rc = add_selectors(&s[MEASURE_BEFORE], &sel_text[MEASURE_BEFORE], MEASURE_BEFORE,
				o->before)) ||
	    (rc = add_selectors(&s[MEASURE_AFTER], &sel_text[MEASURE_AFTER], MEASURE_AFTER,
				o->after)))
		goto out;
	if (files == 2) {
		s[MEASURE_BEFORE].path = args->v[1];
		s[MEASURE_AFTER].path = args->v[2];
	} else {
		store = cli_results_path(ctx, files ? args->v[1] : NULL);
		if (!store) {
			rc = BG_EXIT_USAGE;
			goto out;
		}
		s[MEASURE_BEFORE].path = s[MEASURE_AFTER].path = store;
	}
	bg_err err = {0};
	if (measure_pairing_parse(o->pair, &s[MEASURE_BEFORE].sel, &s[MEASURE_AFTER].sel, &pr,
				  &err) < 0) {
		cli_error("results compare: %s", err.msg);
		rc = BG_EXIT_USAGE;
		goto out;
	}
	if ((rc = read_side(&s[MEASURE_BEFORE], sel_text[MEASURE_BEFORE], MEASURE_BEFORE)) ||
	    (rc = read_side(&s[MEASURE_AFTER], sel_text[MEASURE_AFTER], MEASURE_AFTER)))
		goto out;
	if (measure_pair_rows(&s[MEASURE_BEFORE].pts, &s[MEASURE_AFTER].pts, &pr, &rows, &n_rows,
			      &err) < 0) {
		cli_error("results compare: %s", err.msg);
		rc = BG_EXIT_USAGE;
		goto out;
	}

	size_t counts[MEASURE_N_CALLS] = {0};
	for (size_t i = 0; i < n_rows; i++) {
		measure_row_decide(&rows[i]);
		counts[rows[i].call]++;
	}
	rc = counts[STATS_SLOWER] ? BG_EXIT_FAIL : BG_EXIT_OK;
	if (o->csv) {
		print_csv(rows, n_rows);
	} else if (o->json) {
		for (size_t i = 0; i < n_rows; i++)
			print_json_row(&rows[i]);
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "summary", "compare");
		cJSON_AddStringToObject(j, "before", s[MEASURE_BEFORE].path);
		cJSON_AddStringToObject(j, "after", s[MEASURE_AFTER].path);
		cJSON_AddStringToObject(j, "before_select", sel_text[MEASURE_BEFORE]);
		cJSON_AddStringToObject(j, "after_select", sel_text[MEASURE_AFTER]);
		add_str_or_null(j, "paired_on_all_but", pr.skip);
		cJSON_AddNumberToObject(j, "points", (double)n_rows);
		for (int k = 0; k < MEASURE_N_CALLS; k++)
			cJSON_AddNumberToObject(j, measure_row_call_key(k), (double)counts[k]);
		cJSON_AddNumberToObject(j, "skipped_before", (double)s[MEASURE_BEFORE].skipped);
		cJSON_AddNumberToObject(j, "skipped_after", (double)s[MEASURE_AFTER].skipped);
		cJSON_AddNumberToObject(j, "exit", rc);
		cli_print_json(j);
		cJSON_Delete(j);
	} else {
		print_table(rows, n_rows, s, (const char *const *)sel_text, &pr);
		cli_printf(stdout,
			   "%zu point%s: %zu same, %zu faster, %zu slower, %zu ambiguous, %zu only "
			   "in before, %zu only in after",
			   n_rows, n_rows == 1 ? "" : "s", counts[STATS_SAME], counts[STATS_FASTER],
			   counts[STATS_SLOWER], counts[STATS_AMBIGUOUS],
			   counts[MEASURE_ONLY_BEFORE], counts[MEASURE_ONLY_AFTER]);
		if (s[MEASURE_BEFORE].skipped + s[MEASURE_AFTER].skipped)
			cli_printf(stdout,
				   " (records without a slowCTA sample skipped: %zu before, %zu "
				   "after; INVALID and TIMEOUT_HANG never count)",
				   s[MEASURE_BEFORE].skipped, s[MEASURE_AFTER].skipped);
		cli_printf(stdout,
			   "\n~: not decided (the 90%% interval holds 0%%, or the change is "
			   "under 1%%)\n");
		if (!counts[STATS_SAME] && !counts[STATS_FASTER] && !counts[STATS_SLOWER] &&
		    !counts[STATS_AMBIGUOUS] && n_rows && !pr.skip && !pr.from)
			cli_warn("results compare: no point pairs; to pair points that differ in "
				 "one key, give --pair KEY (--pair variant, --pair candidate)");
	}
out:
	for (size_t i = 0; i < n_rows; i++)
		free(rows[i].label);
	free(rows);
	for (int k = 0; k < 2; k++) {
		results_selector_release(&s[k].sel);
		free(sel_text[k]);
		results_points_release(&s[k].pts);
	}
	measure_pairing_release(&pr);
	free(store);
	return rc;
}
