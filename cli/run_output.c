/* What `boxgate run` prints for a person and what it exports (cli/run_output.h). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/atomic.h"
#include "base/exit.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "cli/output.h"
#include "cli/run_output.h"
#include "measure/table.h"
#include "results/stats.h"

/* The device a result names, as the summary says it: the GPU's name, or
 * "CPU twin (its model)" when the device is "cpu"; "" when it names none. */
static void device_label(const char *device, const char *device_name, char *buf, size_t n)
{
	bool cpu = strcmp(device, "cpu") == 0;
	if (cpu && device_name[0])
		snprintf(buf, n, "CPU twin (%s)", device_name);
	else
		snprintf(buf, n, "%s", cpu ? "CPU twin" : device_name[0] ? device_name : device);
	/* the names are the gate's: a control byte (an escape, a newline) never
	 * reaches the terminal or splits a line */
	for (char *c = buf; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
}

/* device_label() of a result line's JSON. */
static void result_device(const cJSON *res, char *buf, size_t n)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(res, "device");
	const cJSON *dn = cJSON_GetObjectItemCaseSensitive(res, "device_name");
	device_label(cJSON_IsString(d) ? d->valuestring : "",
		     cJSON_IsString(dn) ? dn->valuestring : "", buf, n);
}

const char *run_point_label(const run_point *p)
{
	if (p->m.noisy)
		return "NOISY";
	return p->m.verdict == VERDICT_NONE ? "FAILED" : gate_verdict_name(p->m.verdict);
}

/* Where the number came from: "CPU twin, 8 workers on 2 cpus, oversubscribed". */
static void point_source(const run_point *p, char *buf, size_t n)
{
	bool cpu = strcmp(p->t.device, "cpu") == 0;
	int w = p->t.workers >= 0 ? p->t.workers : p->count;
	char dev[160];
	device_label(p->t.device, p->t.device_name, dev, sizeof(dev));
	int len = snprintf(buf, n, "%s", dev[0] ? dev : "device not reported");
	if (w >= 0 && len >= 0 && (size_t)len < n)
		len += snprintf(buf + len, n - (size_t)len, ", %d worker%s", w, w == 1 ? "" : "s");
	if (cpu && p->t.cpus > 0 && len >= 0 && (size_t)len < n)
		snprintf(buf + len, n - (size_t)len, " on %d cpu%s%s", p->t.cpus,
			 p->t.cpus == 1 ? "" : "s", w > p->t.cpus ? ", oversubscribed" : "");
}

static void add_stat(cJSON *o, const char *key, const double *x, size_t n)
{
	cJSON *s = cJSON_AddObjectToObject(o, key);
	cJSON_AddNumberToObject(s, "median", stats_median(x, n));
	cJSON_AddNumberToObject(s, "min", stats_min(x, n));
	cJSON_AddNumberToObject(s, "max", stats_max(x, n));
	double cv = stats_cv(x, n);
	if (isfinite(cv))
		cJSON_AddNumberToObject(s, "cv_pct", cv * 100.0);
	else
		cJSON_AddNullToObject(s, "cv_pct");
}

/* Which path the point's baseline took (README.md, "Baseline and candidate apart"). */
static const char *measured_path(const run_point *p, char *buf, size_t n)
{
	if (!p->m.apart)
		return "baseline and candidate measured by the gate in one process";
	size_t pairs = p->m.n_res < p->m.n_b ? p->m.n_res : p->m.n_b;
	snprintf(buf, n,
		 "baseline and candidate measured apart, interleaved (%zu pair%s, candidate "
		 "first: C B C B ...)",
		 pairs, pairs == 1 ? "" : "s");
	return buf;
}

void run_out_point(const run_point *p, int repeat, const char *run_id)
{
	const gate_args *ga = &p->ga;
	char src[200], path[160];
	point_source(p, src, sizeof(src));
	bool oversub = strstr(src, "oversubscribed") != NULL;
	if (ga->json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "box", ga->box->name);
		cJSON_AddStringToObject(o, "event", "point");
		cJSON_AddStringToObject(o, "run_id", run_id);
		int w = p->t.workers >= 0 ? p->t.workers : p->count;
		if (w >= 0)
			cJSON_AddNumberToObject(o, "num_workers", w);
		else
			cJSON_AddNullToObject(o, "num_workers");
		cJSON_AddNumberToObject(o, "n", p->t.runs);
		cJSON_AddNumberToObject(o, "repeat", repeat);
		cJSON_AddNumberToObject(o, "n_results", (double)p->m.n_res);
		cJSON_AddStringToObject(o, "verdict", run_point_label(p));
		if (p->m.verdict != VERDICT_NONE)
			cJSON_AddStringToObject(o, "verdict_on_medians",
						gate_verdict_name(p->m.verdict));
		cJSON_AddBoolToObject(o, "noisy", p->m.noisy);
		cJSON_AddBoolToObject(o, "sloughed", p->m.sloughed);
		cJSON_AddNumberToObject(o, "max_cv_pct", p->m.max_cv);
		cJSON_AddBoolToObject(o, "strict_noise", p->m.strict_noise);
		cJSON_AddBoolToObject(o, "cv_warning", p->m.cv_warn || p->m.cv_warn_b);
		cJSON_AddBoolToObject(o, "single", p->m.single);
		if (p->m.decided)
			cJSON_AddItemToObject(o, "decision", measure_decision_json(&p->m.dec));
		else
			cJSON_AddNullToObject(o, "decision");
		cJSON_AddNumberToObject(o, "exit", p->t.code);
		if (p->m.n_res) {
			add_stat(o, "slowCTA_us", p->m.slow, p->m.n_res);
			add_stat(o, "wall_us", p->m.wall, p->m.n_res);
			add_stat(o, "sumCTA_us", p->m.sum, p->m.n_res);
		}
		if (p->m.n_ratio)
			add_stat(o, "ratio", p->m.ratio, p->m.n_ratio);
		if (p->m.bar > 0)
			cJSON_AddNumberToObject(o, "bar", p->m.bar);
		if (p->t.device[0])
			cJSON_AddStringToObject(o, "device", p->t.device);
		else
			cJSON_AddNullToObject(o, "device");
		if (p->t.device_name[0])
			cJSON_AddStringToObject(o, "device_name", p->t.device_name);
		else
			cJSON_AddNullToObject(o, "device_name");
		if (p->t.cpus >= 0)
			cJSON_AddNumberToObject(o, "cpus", p->t.cpus);
		cJSON_AddBoolToObject(o, "oversubscribed", oversub);
		cJSON_AddStringToObject(o, "source", src);
		if (p->m.apart || p->m.n_base) {
			cJSON_AddStringToObject(o, "measured",
						measured_path(p, path, sizeof(path)));
			cJSON_AddBoolToObject(o, "apart", p->m.apart);
		}
		if (p->m.apart) {
			size_t pairs = p->m.n_res < p->m.n_b ? p->m.n_res : p->m.n_b;
			cJSON_AddNumberToObject(o, "pairs", (double)pairs);
			cJSON_AddBoolToObject(o, "noisy_baseline", p->m.cv_warn_b);
			if (p->m.n_b)
				add_stat(o, "baseline_slowCTA_us", p->m.b_slow, p->m.n_b);
		}
		cli_print_json(o);
		cJSON_Delete(o);
		return;
	}
	bool color = cli_color(stdout);
	const char *col = "", *end = color ? "\033[0m" : "";
	if (color)
		col = p->t.code == 0 ? "\033[1;32m" : "\033[1;31m";
	if (!p->m.n_res || p->t.bad) {
		cli_printf(stdout,
			   "%s%s%s  over %d of %d runs: not every run was judged "
			   "(no verdict on the medians)  -- %s\n",
			   col, run_point_label(p), end, p->t.runs,
			   p->m.apart ? 2 * repeat : repeat, src);
		if (p->m.apart)
			cli_printf(stdout, "  %s\n", measured_path(p, path, sizeof(path)));
		return;
	}
	const double *s = p->m.slow, *w = p->m.wall, *u = p->m.sum;
	size_t n = p->m.n_res;
	strbuf b = STRBUF_INIT;
	strbuf_addf(&b,
		    "%s%s%s  median of %zu: slowCTA %.3f us (%.3f-%.3f, CV %.1f%%)  "
		    "wall %.3f us (%.3f-%.3f, CV %.1f%%)  sumCTA %.3f us (%.3f-%.3f, CV %.1f%%)",
		    col, run_point_label(p), end, n, stats_median(s, n), stats_min(s, n),
		    stats_max(s, n), measure_cv_pct(s, n), stats_median(w, n), stats_min(w, n),
		    stats_max(w, n), measure_cv_pct(w, n), stats_median(u, n), stats_min(u, n),
		    stats_max(u, n), measure_cv_pct(u, n));
	if (p->m.n_ratio)
		strbuf_addf(&b, "  ratio %.3f", stats_median(p->m.ratio, p->m.n_ratio));
	if (p->m.bar > 0 && p->m.verdict != VERDICT_MEASURED)
		strbuf_addf(&b, " (bar %.2f)", p->m.bar);
	strbuf_addf(&b, "  -- %s\n", src);
	if (p->m.verdict == VERDICT_MEASURED)
		strbuf_addf(&b, "  MEASURED: the candidate alone (no baseline): its "
				"timings, no ratio and no verdict against a bar\n");
	if (p->m.apart || p->m.n_base)
		strbuf_addf(&b, "  %s\n", measured_path(p, path, sizeof(path)));
	if (p->m.apart && p->m.n_b)
		strbuf_addf(&b,
			    "  baseline median of %zu: slowCTA %.3f us (%.3f-%.3f, CV "
			    "%.1f%%)  sumCTA %.3f us; ratio = median over pairs of B/C\n",
			    p->m.n_b, stats_median(p->m.b_slow, p->m.n_b),
			    stats_min(p->m.b_slow, p->m.n_b), stats_max(p->m.b_slow, p->m.n_b),
			    measure_cv_pct(p->m.b_slow, p->m.n_b),
			    stats_median(p->m.b_sum, p->m.n_b));
	if (p->m.decided && !p->m.sloughed) {
		strbuf_addf(&b, "  %s: ", run_point_label(p));
		measure_decision_text(&p->m.dec, p->m.bar_used, &b);
		strbuf_addch(&b, '\n');
	} else if (p->m.single && !p->m.sloughed) {
		strbuf_addf(&b,
			    "  %s on one %s: no interval (repeat to decide with a "
			    "stated error rate)\n",
			    run_point_label(p), p->m.apart ? "pair" : "run");
	}
	/* The CV over --max-cv: NOISY under --strict-noise, else a warning. */
	const char *cvw = p->m.strict_noise ? "NOISY" : "warning";
	if (p->m.cv_warn)
		strbuf_addf(&b,
			    "  %s: slowCTA CV %.1f%% > %.1f%% over %zu repeats; more "
			    "repeats or iterations may steady it\n",
			    cvw, measure_cv_pct(s, n), p->m.max_cv, n);
	if (p->m.cv_warn_b)
		strbuf_addf(&b,
			    "  %s: the baseline's slowCTA CV %.1f%% > %.1f%% over %zu "
			    "runs; more repeats or iterations may steady it\n",
			    cvw, measure_cv_pct(p->m.b_slow, p->m.n_b), p->m.max_cv, p->m.n_b);
	if (p->m.sloughed)
		strbuf_addf(&b,
			    "  BELOW_BAR: the median sumCTA %.3f us rose more than %.0f%% over "
			    "the baseline's %.3f us while slowCTA fell: work spread, not saved\n",
			    stats_median(u, n),
			    100.0 * ((gate_policy)GATE_POLICY_DEFAULT).sum_tolerance,
			    stats_median(p->m.base_sum, p->m.n_base));
	cli_write(stdout, b.buf, b.len);
	strbuf_release(&b);
}

/* The sweep's table: one row per count, aligned. */
void run_out_sweep(const run_point *pts, size_t n)
{
	strbuf b = STRBUF_INIT;
	strbuf_addf(&b, "%s: num_workers sweep\n", pts[0].ga.box->name);
	strbuf_addf(&b, "  %11s  %12s  %7s  %7s  %s\n", "num_workers", "slowCTA_us", "CV", "ratio",
		    "verdict");
	for (size_t i = 0; i < n; i++) {
		const run_point *p = &pts[i];
		if (!p->t.runs)
			continue;
		char slow[32] = "-", cv[32] = "-", ratio[32] = "-";
		if (p->m.n_res) {
			snprintf(slow, sizeof(slow), "%.3f", stats_median(p->m.slow, p->m.n_res));
			snprintf(cv, sizeof(cv), "%.1f%%", measure_cv_pct(p->m.slow, p->m.n_res));
		}
		if (p->m.n_ratio)
			snprintf(ratio, sizeof(ratio), "%.3f",
				 stats_median(p->m.ratio, p->m.n_ratio));
		strbuf_addf(&b, "  %11d  %12s  %7s  %7s  %s\n", p->count, slow, cv, ratio,
			    run_point_label(p));
	}
	cli_write(stdout, b.buf, b.len);
	strbuf_release(&b);
}

/* The colour of a verdict on a terminal: green for a pass or a measurement,
 * red for the rest. */
static const char *verdict_color(gate_verdict v, bool color)
{
	if (!color)
		return "";
	return v == VERDICT_PASS_GATE || v == VERDICT_MEASURED ? "\033[1;32m" : "\033[1;31m";
}

void run_out_result(const gate_result *r, const char *lead, bool color)
{
	const char *col = verdict_color(r->verdict, color), *end = color ? "\033[0m" : "";
	/* The line ends with the device the gate ran on, when the result names it. */
	char dev[160] = "", on[176] = "";
	if (r->json)
		result_device(r->json, dev, sizeof(dev));
	if (dev[0])
		snprintf(on, sizeof(on), "  on %s", dev);
	if (r->verdict == VERDICT_MEASURED)
		cli_printf(stdout,
			   "%s%s%s%s  slowCTA %.3f us  wall %.3f us  sumCTA %.3f us  cos "
			   "%.5f%s  (the candidate alone: no baseline, no ratio)\n",
			   lead, col, gate_verdict_name(r->verdict), end, r->cand.slowCTA_us,
			   r->cand.wall_us, r->cand.sumCTA_us, r->cand.cos, on);
	else if (r->base.present && r->verdict != VERDICT_INVALID)
		cli_printf(stdout,
			   "%s%s%s%s  slowCTA %.3f us (baseline %.3f us, ratio %.3f)  wall "
			   "%.3f us  sumCTA %.3f us  cos %.5f%s%s%s\n",
			   lead, col, gate_verdict_name(r->verdict), end, r->cand.slowCTA_us,
			   r->base.slowCTA_us, r->base.slowCTA_us / r->cand.slowCTA_us,
			   r->cand.wall_us, r->cand.sumCTA_us, r->cand.cos, on,
			   r->problems[0] ? "  -- " : "", r->problems);
	else
		cli_printf(stdout, "%s%s%s%s%s%s%s\n", lead, col, gate_verdict_name(r->verdict),
			   end, r->problems[0] ? ": " : "", r->problems, on);
}

void run_out_invocation(const run_label *l, const gate_result *last, gate_verdict final, int code,
			bool said, bool color)
{
	if (l->alone && said && last && last->raw) {
		run_out_result(last, "", color);
		return;
	}
	strbuf b = STRBUF_INIT;
	if (!l->alone) {
		strbuf_addstr(&b, " ");
		if (l->count >= 0)
			strbuf_addf(&b, " nw %d ", l->count);
		strbuf_addf(&b, " %s %d/%d", l->warmup ? "warmup" : "run", l->i, l->n);
		if (l->role)
			strbuf_addf(&b, " %s", l->role);
		strbuf_addstr(&b, "  ");
	}
	/* the numbers of the last result, whatever its verdict became */
	if (last && last->raw && last->cand.present && last->verdict != VERDICT_INVALID) {
		strbuf_addf(&b, "slowCTA %.3f us  ", last->cand.slowCTA_us);
		if (last->base.present && last->cand.slowCTA_us > 0)
			strbuf_addf(&b, "ratio %.3f  ",
				    last->base.slowCTA_us / last->cand.slowCTA_us);
	}
	const char *name = final != VERDICT_NONE ? gate_verdict_name(final)
			   : code == 130         ? "interrupted"
						 : "FAILED";
	strbuf_addf(&b, "%s%s%s", verdict_color(final, color), name, color ? "\033[0m" : "");
	if (code && final == VERDICT_NONE && code != 130)
		strbuf_addf(&b, " (exit %d)", code);
	if (last && last->raw && last->problems[0] && final != VERDICT_PASS_GATE &&
	    final != VERDICT_MEASURED)
		strbuf_addf(&b, "  -- %s", last->problems);
	if (l->warmup)
		strbuf_addstr(&b, "  (warm-up: not counted)");
	strbuf_addch(&b, '\n');
	cli_write(stdout, b.buf, b.len);
	strbuf_release(&b);
}

void run_tail_add(run_tail *t, const char *line, size_t len)
{
	if (t->n == RUN_TAIL_LINES) {
		free(t->line[t->next]);
		t->dropped++;
	} else {
		t->n++;
	}
	/* a line is kept whole up to 2 KiB: enough for a result line */
	t->line[t->next] = xstrndup(line, len > 2048 ? 2048 : len);
	t->next = (t->next + 1) % RUN_TAIL_LINES;
}

void run_tail_show(const run_tail *t, const char *box)
{
	if (!t->n)
		return;
	strbuf b = STRBUF_INIT;
	strbuf_addf(&b, "boxgate: %s: the gate's last %zu stdout line%s%s (-v shows every line):\n",
		    box, t->n, t->n == 1 ? "" : "s", t->dropped ? " of more" : "");
	size_t first = t->n == RUN_TAIL_LINES ? t->next : 0;
	for (size_t i = 0; i < t->n; i++)
		strbuf_addf(&b, "  %s\n", t->line[(first + i) % RUN_TAIL_LINES]);
	cli_write(stderr, b.buf, b.len);
	strbuf_release(&b);
}

void run_tail_release(run_tail *t)
{
	for (size_t i = 0; i < RUN_TAIL_LINES; i++)
		free(t->line[i]);
	memset(t, 0, sizeof(*t));
}

/* The directory part of `path` ("." when it has none; owned) and its last name. */
static char *dir_of(const char *path, const char **base)
{
	const char *slash = strrchr(path, '/');
	*base = slash ? slash + 1 : path;
	if (!slash)
		return xstrdup(".");
	return slash == path ? xstrdup("/") : xstrndup(path, (size_t)(slash - path));
}

/* True when a and b name one file, whether or not it exists yet: the same
 * string, the same inode, or the same name in the same directory. */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	if (strcmp(a, b) == 0)
		return true;
	if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
		return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	const char *ba, *bb;
	char *da = dir_of(a, &ba), *db = dir_of(b, &bb);
	bool same = strcmp(ba, bb) == 0 && stat(da, &sa) == 0 && stat(db, &sb) == 0 &&
		    sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	free(da);
	free(db);
	return same;
}

int run_export_check(const char *cmd, const char *md, const char *json, const char *results)
{
	const char *file[2] = {md, json}, *flag[2] = {"--export-markdown", "--export-json"};
	bg_err err = {0};
	if (md && json && same_file(md, json)) {
		cli_error("%s: --export-markdown and --export-json name the same file %s", cmd, md);
		return BG_EXIT_USAGE;
	}
	for (int i = 0; i < 2; i++) {
		if (!file[i])
			continue;
		if (results && same_file(file[i], results)) {
			cli_error("%s: %s %s is the results file; the table goes to a file of "
				  "its own",
				  cmd, flag[i], file[i]);
			return BG_EXIT_USAGE;
		}
		if (bg_write_atomic_check(file[i], &err) < 0) {
			cli_error("%s: %s %s", cmd, flag[i], err.msg);
			return BG_EXIT_USAGE;
		}
	}
	return 0;
}

int run_export(const char *cmd, const run_point *pts, size_t n, const char *run_id, const char *md,
	       const char *json)
{
	if (!md && !json)
		return 0;
	measure_row *rows = xcalloc(n ? n : 1, sizeof(*rows));
	char(*src)[200] = xcalloc(n ? n : 1, sizeof(*src));
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const run_point *p = &pts[i];
		if (!p->t.judged)
			continue;
		point_source(p, src[k], sizeof(src[k]));
		rows[k] = (measure_row){
			.m = &p->m,
			.num_workers = p->t.workers >= 0 ? p->t.workers : p->count,
			.verdict = run_point_label(p),
			.runs = p->t.runs,
			.warmup = p->warm,
			.source = src[k],
			.exit_code = p->t.code,
		};
		k++;
	}
	measure_table t = {n ? pts[0].ga.box->name : "", run_id, rows, k};
	int code = 0;
	bg_err err = {0};
	if (md) {
		strbuf b = STRBUF_INIT;
		measure_table_markdown(&t, &b);
		if (bg_write_atomic(md, b.buf, b.len, &err) < 0) {
			cli_error("%s: --export-markdown %s", cmd, err.msg);
			code = BG_EXIT_FAIL;
		}
		strbuf_release(&b);
	}
	if (json) {
		cJSON *o = measure_table_json(&t);
		char *s = cJSON_Print(o);
		strbuf b = STRBUF_INIT;
		strbuf_addstr(&b, s);
		strbuf_addch(&b, '\n');
		if (bg_write_atomic(json, b.buf, b.len, &err) < 0) {
			cli_error("%s: --export-json %s", cmd, err.msg);
			code = BG_EXIT_FAIL;
		}
		strbuf_release(&b);
		free(s);
		cJSON_Delete(o);
	}
	free(rows);
	free(src);
	return code;
}
