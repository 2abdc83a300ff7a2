/* boxgate results: read the results file that `run` appends to (results/store.h). */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/exit.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "cli/cli.h"
#include "base/csv.h"
#include "cli/results_by_point.h"
#include "cli/results_compare.h"
#include "results/select.h"
#include "results/store.h"

static const char results_help[] =
	"usage: boxgate results [show] [FILE] [--select SEL]... [--by point] [--json] [--last N]\n"
	"       boxgate results export [FILE] [--select SEL]... [--csv | --json]\n"
	"       boxgate results compare [--json | --csv] BEFORE AFTER\n"
	"       boxgate results compare [FILE] --before SEL --after SEL [--pair KEY | --pair A=B]\n"
	"\n"
	"Reads the results file that 'boxgate run' appends one record to per gate\n"
	"invocation (default: [defaults] results = PATH in the configuration, else\n"
	"$XDG_DATA_HOME/boxgate/results.jsonl, else ~/.local/share/boxgate/results.jsonl).\n"
	"\n"
	"  show           (the default) an aligned table, one row per record: start time,\n"
	"                 box, device (the GPU name the gate reports, or cpu), kind,\n"
	"                 shape, worker count, candidate, slowCTA, ratio base/candidate,\n"
	"                 boxgate's verdict, run id\n"
	"  export         every record as RFC 4180 CSV with a header row (--csv, the\n"
	"                 default) or as JSON lines (--json); numbers in their shortest\n"
	"                 exact form, a cell starting with = + - @ (not a number) gets a\n"
	"                 leading '\n"
	"  compare        pairs the points of two sides and compares their slowCTA samples\n"
	"                 (INVALID and TIMEOUT_HANG records never count). A point is (GPU\n"
	"                 name, else box; gate kind; shape; num_workers; candidate; the\n"
	"                 other gate arguments, so --dtype fp8 is never pooled with bf16).\n"
	"                 A side is a file (two files: BEFORE AFTER) or a selection of one\n"
	"                 store (FILE, else the default) by --before and --after. The table:\n"
	"                 each side's median +- CV and n, the change after/before (~ when\n"
	"                 not decided), its 90% Hodges-Lehmann interval (the decision run,\n"
	"                 campaign and report use, before as the baseline, a bar of 1), the\n"
	"                 two-sided Mann-Whitney U p-value and a call: slower when the\n"
	"                 interval lies above 0% and the change is over +1%, faster when it\n"
	"                 lies below 0% and the change is under -1%, same when it is decided\n"
	"                 smaller or undecided within the noise (the larger CV), else\n"
	"                 ambiguous. 3 + 3 samples are the fewest with an interval.\n"
	"  --select SEL   only the records SEL picks (show, export; repeatable, all must hold)\n"
	"  --before SEL, --after SEL\n"
	"                 compare: the records of each side (repeatable)\n"
	"  --pair KEY     compare: pair points that differ only in KEY (variant, candidate,\n"
	"                 device, num-workers, ...); without it, the one point key both\n"
	"                 selectors give different values is paired on\n"
	"  --pair A=B     compare: value A on the before side pairs with B on the after side\n"
	"  --by point     show: one row per point: n, slowCTA median +- CV, the gate's ratio\n"
	"                 (Hodges-Lehmann) with its 90% interval, a verdict (PASS_GATE when\n"
	"                 the interval lies above the bar, BELOW_BAR below it, else\n"
	"                 NOISY and which way it leans), the run id (+N: more runs)\n"
	"  --csv          export, compare: CSV\n"
	"  --json         the records as they are stored, one JSON object a line (compare:\n"
	"                 one object per point, then a summary object; --by point: one\n"
	"                 object per point)\n"
	"  --last N       only the last N records (after --select)\n"
	"\n"
	"A selector SEL is KEY=VALUE terms joined by ',', all of which must hold:\n"
	"run=ID (or its first characters), campaign=NAME, candidate=NAME, kind=K,\n"
	"shape=S, num-workers=N, box=NAME, device=TEXT (in the GPU name, any case; or\n"
	"cpu), verdict=V, since=DATE, until=DATE (ISO 8601 UTC, 2026-12-03 or\n"
	"2026-12-03T14:50; until holds the whole of what it names), or any gate argument\n"
	"NAME=VALUE (variant=nosplit matches --variant nosplit).\n"
	"\n"
	"A torn last line (a write interrupted by a crash) and lines that are not records\n"
	"are skipped and reported on stderr; they do not fail the command.\n"
	"Exit: 0 read, 1 the file cannot be read (compare: a point is decided slower), 2\n"
	"usage, a bad selector, a selector that matches nothing (compare) or a missing file.\n";

struct results_opts {
	const char *last; /* --last N */
	bool csv;
	cli_list select, before, after; /* --select, --before, --after SEL */
	const char *pair, *by;
};

static const cli_opt results_options[] = {
	CLI_OPT_JSON,
	CLI_OPT_STRING("last", struct results_opts, last),
	CLI_OPT_FLAG("csv", struct results_opts, csv),
	CLI_OPT_LIST("select", struct results_opts, select),
	CLI_OPT_LIST("before", struct results_opts, before),
	CLI_OPT_LIST("after", struct results_opts, after),
	CLI_OPT_STRING("pair", struct results_opts, pair),
	CLI_OPT_STRING("by", struct results_opts, by),
	CLI_OPT_END,
};

/* The records read, in file order (owned copies). */
typedef struct rec_list {
	cJSON **v;
	size_t n, cap;
	const results_selector *sel; /* the records kept; NULL: all */
} rec_list;

static int keep_record(void *ctx, const cJSON *rec, size_t line)
{
	(void)line;
	rec_list *l = ctx;
	if (!results_selector_match(l->sel, rec))
		return 0;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = cJSON_Duplicate(rec, 1);
	return 0;
}

static void rec_list_release(rec_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		cJSON_Delete(l->v[i]);
	free(l->v);
}

/* Reads `path`, reporting skipped lines; returns an exit code. */
static int read_records(const char *path, rec_list *l)
{
	bg_err err = {0};
	results_read_stats st;
	int rc = results_read(path, keep_record, l, &st, &err);
	if (rc < 0) {
		cli_error("%s", err.msg);
		return rc == BG_ENOTFOUND ? BG_EXIT_USAGE : BG_EXIT_FAIL;
	}
	if (st.torn)
		cli_error("%s: the last line is torn (an interrupted write), skipped", path);
	if (st.bad == 1)
		cli_error("%s: 1 line is not a record (line %zu), skipped", path, st.first_bad);
	else if (st.bad > 1)
		cli_error("%s: %zu lines are not records (first: line %zu), skipped", path, st.bad,
			  st.first_bad);
	return BG_EXIT_OK;
}

static const cJSON *get(const cJSON *o, const char *key)
{
	return o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

/* A field as text: a string as it is, a number as %.*g, "" when null or absent. */
static char *cell(const cJSON *v, int digits)
{
	if (cJSON_IsString(v))
		return xstrdup(v->valuestring);
	if (cJSON_IsNumber(v)) {
		if (v->valuedouble == (double)(int64_t)v->valuedouble && digits > 6)
			return xasprintf("%lld", (long long)v->valuedouble);
		/* the digits the number was written with, not the binary's tail */
		return digits > 6 ? bg_num_text(v->valuedouble)
				  : xasprintf("%.*g", digits, v->valuedouble);
	}
	if (cJSON_IsBool(v))
		return xstrdup(cJSON_IsTrue(v) ? "true" : "false");
	if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
		char *s = cJSON_PrintUnformatted(v);
		return s ? s : xstrdup("");
	}
	return xstrdup("");
}

/* A number for the table: fixed 3 decimals, "-" when absent. */
static char *num3(const cJSON *v)
{
	return cJSON_IsNumber(v) ? xasprintf("%.3f", v->valuedouble) : xstrdup("-");
}

/* Table text is one line of printable characters: control bytes become '?'. */
static char *tcell(char *s)
{
	for (char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	if (!*s) {
		free(s);
		return xstrdup("-");
	}
	return s;
}

enum {
	T_START,
	T_BOX,
	T_DEVICE,
	T_KIND,
	T_SHAPE,
	T_NW,
	T_CAND,
	T_SLOW,
	T_RATIO,
	T_VERDICT,
	T_RUN,
	T_N
};
static const char *const t_head[T_N] = {"START", "BOX",     "DEVICE",    "KIND",
					"SHAPE", "NW",      "CANDIDATE", "SLOWCTA_US",
					"RATIO", "VERDICT", "RUN"};
static const bool t_right[T_N] = {[T_NW] = true, [T_SLOW] = true, [T_RATIO] = true};

static void table_row(const cJSON *r, char **c)
{
	const cJSON *pt = get(r, "point"), *res = get(r, "result");
	/* The GPU's name; on the CPU twin "cpu", whatever CPU it names. */
	const cJSON *gn = get(r, "gpu_name"), *dev = get(r, "device");
	if (cJSON_IsString(dev) && strcmp(dev->valuestring, "cpu") == 0)
		gn = dev;
	c[T_START] = tcell(cell(get(r, "start"), 6));
	c[T_BOX] = tcell(cell(get(r, "box"), 6));
	c[T_DEVICE] = tcell(cell(cJSON_IsString(gn) ? gn : dev, 6));
	c[T_KIND] = tcell(cell(get(pt, "kind"), 6));
	c[T_SHAPE] = tcell(cell(get(pt, "shape"), 6));
	c[T_NW] = tcell(cell(get(pt, "num_workers"), 10));
	c[T_CAND] = tcell(cell(get(pt, "candidate"), 6));
	c[T_SLOW] = num3(get(get(res, "candidate"), "slowCTA_us"));
	c[T_RATIO] = num3(get(res, "slowCTA_ratio_base_over_cand"));
	c[T_VERDICT] = tcell(cell(get(r, "verdict"), 6));
	c[T_RUN] = tcell(cell(get(r, "run_id"), 6));
}

static void show_table(cJSON *const *recs, size_t n)
{
	char **cells = xcalloc((n + 1) * T_N, sizeof(*cells));
	size_t w[T_N] = {0};
	for (int k = 0; k < T_N; k++)
		cells[k] = xstrdup(t_head[k]);
	for (size_t i = 0; i < n; i++)
		table_row(recs[i], cells + (i + 1) * T_N);
	for (size_t i = 0; i <= n; i++)
		for (int k = 0; k < T_N; k++) {
			size_t len = strlen(cells[i * T_N + k]);
			w[k] = len > w[k] ? len : w[k];
		}
	strbuf out = STRBUF_INIT;
	for (size_t i = 0; i <= n; i++) {
		for (int k = 0; k < T_N; k++) {
			const char *s = cells[i * T_N + k];
			int pad = (int)(w[k] - strlen(s));
			if (k == T_N - 1)
				strbuf_addf(&out, "%s", s);
			else if (t_right[k])
				strbuf_addf(&out, "%*s%s  ", pad, "", s);
			else
				strbuf_addf(&out, "%s%*s  ", s, pad, "");
		}
		strbuf_addch(&out, '\n');
	}
	cli_write(stdout, out.buf, out.len);
	strbuf_release(&out);
	for (size_t i = 0; i < (n + 1) * T_N; i++)
		free(cells[i]);
	free(cells);
}

/* The CSV columns: a dotted path into the record. */
static const char *const csv_cols[] = {
	"run_id",
	"seq",
	"start",
	"end",
	"box",
	"host",
	"transport",
	"gpus",
	"gpu_name",
	"device",
	"point.kind",
	"point.shape",
	"point.num_workers",
	"point.candidate",
	"result.candidate.slowCTA_us",
	"result.candidate.wall_us",
	"result.candidate.sumCTA_us",
	"result.candidate.cos",
	"result.slowCTA_ratio_base_over_cand",
	"verdict",
	"stated",
	"exit",
	"why",
	"command",
	"gate_args",
};
#define N_CSV_COLS (sizeof(csv_cols) / sizeof(csv_cols[0]))

static const cJSON *get_path(const cJSON *o, const char *path)
{
	char key[64];
	while (o && *path) {
		size_t n = strcspn(path, ".");
		if (n >= sizeof(key))
			return NULL;
		memcpy(key, path, n);
		key[n] = '\0';
		o = get(o, key);
		path += n + (path[n] == '.');
	}
	return o;
}

static void export_csv(cJSON *const *recs, size_t n)
{
	strbuf b = STRBUF_INIT;
	for (size_t k = 0; k < N_CSV_COLS; k++) {
		if (k)
			strbuf_addch(&b, ',');
		bg_csv_field(&b, csv_cols[k]);
	}
	strbuf_addstr(&b, "\r\n");
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < N_CSV_COLS; k++) {
			char *s = cell(get_path(recs[i], csv_cols[k]), 17);
			if (k)
				strbuf_addch(&b, ',');
			bg_csv_field(&b, s);
			free(s);
		}
		strbuf_addstr(&b, "\r\n");
	}
	cli_write(stdout, b.buf, b.len);
	strbuf_release(&b);
}

static int run_results(cli_ctx *ctx, void *opts_, const cli_args *args)
{
	const struct results_opts *opts = opts_;
	const char *sub = "show";
	size_t i = 0;
	if (args->n && (strcmp(args->v[0], "show") == 0 || strcmp(args->v[0], "export") == 0 ||
			strcmp(args->v[0], "compare") == 0))
		sub = args->v[i++];
	/* A word that is no subcommand is a FILE; one close to a subcommand
	 * naming no file was a typo. */
	static const char *const subs[] = {"show", "export", "compare"};
	if (i == 0 && args->n && access(args->v[0], F_OK) != 0 && conf_suggest(args->v[0], subs, 3))
		return cli_unknown_subcommand("results", args->v[0], subs, 3);
	if (strcmp(sub, "compare") == 0) {
		if (opts->select.n || opts->by || opts->last) {
			cli_error("results compare: --%s is for results show (compare takes "
				  "--before and --after)",
				  opts->select.n ? "select"
				  : opts->by     ? "by"
						 : "last");
			return BG_EXIT_USAGE;
		}
		cli_compare_opts co = {.before = &opts->before,
				       .after = &opts->after,
				       .pair = opts->pair,
				       .json = ctx->opt.json,
				       .csv = opts->csv};
		return cli_results_compare(ctx, args, &co);
	}
	if (opts->before.n || opts->after.n || opts->pair) {
		cli_error("results %s: --%s is for results compare (show and export take --select)",
			  sub,
			  opts->before.n  ? "before"
			  : opts->after.n ? "after"
					  : "pair");
		return BG_EXIT_USAGE;
	}
	bool by_point = false;
	if (opts->by) {
		if (strcmp(opts->by, "point") != 0 || strcmp(sub, "show") != 0) {
			cli_error("results %s: --by '%s': only 'results show --by point' groups "
				  "records",
				  sub, opts->by);
			return BG_EXIT_USAGE;
		}
		by_point = true;
	}
	if (args->n - i > 1) {
		cli_error("results %s: one FILE at most, got '%s' and '%s'", sub, args->v[i],
			  args->v[i + 1]);
		return BG_EXIT_USAGE;
	}
	bool export = strcmp(sub, "export") == 0;
	if (opts->csv && !export) {
		cli_error("results show: --csv is for 'boxgate results export'");
		return BG_EXIT_USAGE;
	}
	if (export && opts->csv && ctx->opt.json) {
		cli_error("results export: --csv or --json, not both");
		return BG_EXIT_USAGE;
	}
	size_t last = SIZE_MAX;
	if (opts->last) {
		const char *v = opts->last;
		if (!*v || strspn(v, "0123456789") != strlen(v) || strlen(v) > 9 || !atoi(v)) {
			cli_error(
				"results: --last wants a whole number of records from 1, got '%s'",
				v);
			return BG_EXIT_USAGE;
		}
		last = (size_t)atoi(v);
	}
	char *path = cli_results_path(ctx, i < args->n ? args->v[i] : NULL);
	if (!path)
		return BG_EXIT_USAGE;
	results_selector sel = RESULTS_SELECTOR_INIT;
	rec_list l = {.sel = &sel};
	int code = BG_EXIT_OK;
	for (size_t k = 0; k < opts->select.n && code == BG_EXIT_OK; k++) {
		bg_err err = {0};
		if (results_selector_add(&sel, opts->select.v[k], &err) < 0) {
			cli_error("results %s: --select: %s", sub, err.msg);
			code = BG_EXIT_USAGE;
		}
	}
	if (code == BG_EXIT_OK)
		code = read_records(path, &l);
	if (code == BG_EXIT_OK) {
		size_t from = l.n > last ? l.n - last : 0;
		if (by_point)
			cli_results_by_point(l.v + from, l.n - from, ctx->opt.json);
		else if (ctx->opt.json)
			for (size_t k = from; k < l.n; k++)
				cli_print_json(l.v[k]);
		else if (export)
			export_csv(l.v + from, l.n - from);
		else
			show_table(l.v + from, l.n - from);
	}
	rec_list_release(&l);
	results_selector_release(&sel);
	free(path);
	return code;
}

/* clang-format off */
const cli_cmd cli_cmd_results = {
	.name = "results", .summary = "show or export the results file that run appends to",
	.help = results_help, .options = results_options, .opts_size = sizeof(struct results_opts),
	.run = run_results,
};
/* clang-format on */
