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
#include "cli/results_compare.h"
#include "results/store.h"

static const char results_help[] =
	"usage: boxgate results [show] [FILE] [--json] [--last N]\n"
	"       boxgate results export [FILE] [--csv | --json]\n"
	"       boxgate results compare [--json] BEFORE AFTER\n"
	"\n"
	"Reads the results file that 'boxgate run' appends one record to per gate\n"
	"invocation (default: [defaults] results = PATH in the configuration, else\n"
	"$XDG_DATA_HOME/boxgate/results.jsonl, else ~/.local/share/boxgate/results.jsonl).\n"
	"\n"
	"  show           (the default) an aligned table, one row per record: start time,\n"
	"                 box, device (the GPU name the gate reports, or cpu), kind,\n"
	"                 shape, worker count, candidate, slowCTA, ratio base/candidate,\n"
	"                 boxgate's verdict\n"
	"  export         every record as RFC 4180 CSV with a header row (--csv, the\n"
	"                 default) or as JSON lines (--json)\n"
	"  compare        pairs the points of two results files by (GPU name, else box;\n"
	"                 gate kind; shape; num_workers; candidate; the other gate arguments,\n"
	"                 so --dtype fp8 is never pooled with bf16) and compares their slowCTA\n"
	"                 samples\n"
	"                 (INVALID and TIMEOUT_HANG records never count): n, medians, ratio\n"
	"                 after/before, change, the two-sided Mann-Whitney U p-value and a\n"
	"                 call. With noise the larger CV of the two sides: slower when p < 0.05\n"
	"                 and ratio > 1.01, faster when p < 0.05 and ratio < 0.99, same when\n"
	"                 p >= 0.05 and |ratio - 1| is within the noise, else ambiguous (also\n"
	"                 with fewer than 3 samples a side, unless 2 + 2 differ by more than\n"
	"                 10 x the noise). 3 + 3 samples never reach p < 0.05: take 4 or more.\n"
	"  --json         the records as they are stored, one JSON object a line (compare:\n"
	"                 one object per point, then a summary object)\n"
	"  --last N       only the last N records\n"
	"\n"
	"A torn last line (a write interrupted by a crash) and lines that are not records\n"
	"are skipped and reported on stderr; they do not fail the command.\n"
	"Exit: 0 read, 1 the file cannot be read (compare: a point is slower), 2 usage or a\n"
	"missing file.\n";

struct results_opts {
	const char *last; /* --last N */
	bool csv;
};

static const cli_opt results_options[] = {
	CLI_OPT_JSON,
	CLI_OPT_STRING("last", struct results_opts, last),
	CLI_OPT_FLAG("csv", struct results_opts, csv),
	CLI_OPT_END,
};

/* The records read, in file order (owned copies). */
typedef struct rec_list {
	cJSON **v;
	size_t n, cap;
} rec_list;

static int keep_record(void *ctx, const cJSON *rec, size_t line)
{
	(void)line;
	rec_list *l = ctx;
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
		return xasprintf("%.*g", digits, v->valuedouble);
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

enum { T_START, T_BOX, T_DEVICE, T_KIND, T_SHAPE, T_NW, T_CAND, T_SLOW, T_RATIO, T_VERDICT, T_N };
static const char *const t_head[T_N] = {"START", "BOX",       "DEVICE",     "KIND",  "SHAPE",
					"NW",    "CANDIDATE", "SLOWCTA_US", "RATIO", "VERDICT"};
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

/* RFC 4180: a field holding a comma, a quote or a line break is quoted, its
 * quotes doubled. */
static void csv_field(strbuf *b, const char *s)
{
	if (!s[strcspn(s, ",\"\r\n")]) {
		strbuf_addstr(b, s);
		return;
	}
	strbuf_addch(b, '"');
	for (; *s; s++) {
		if (*s == '"')
			strbuf_addch(b, '"');
		strbuf_addch(b, *s);
	}
	strbuf_addch(b, '"');
}

static void export_csv(cJSON *const *recs, size_t n)
{
	strbuf b = STRBUF_INIT;
	for (size_t k = 0; k < N_CSV_COLS; k++) {
		if (k)
			strbuf_addch(&b, ',');
		csv_field(&b, csv_cols[k]);
	}
	strbuf_addstr(&b, "\r\n");
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < N_CSV_COLS; k++) {
			char *s = cell(get_path(recs[i], csv_cols[k]), 17);
			if (k)
				strbuf_addch(&b, ',');
			csv_field(&b, s);
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
		return cli_results_compare(ctx, args, ctx->opt.json);
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
	rec_list l = {0};
	int code = read_records(path, &l);
	if (code == BG_EXIT_OK) {
		size_t from = l.n > last ? l.n - last : 0;
		if (ctx->opt.json)
			for (size_t k = from; k < l.n; k++)
				cli_print_json(l.v[k]);
		else if (export)
			export_csv(l.v + from, l.n - from);
		else
			show_table(l.v + from, l.n - from);
	}
	rec_list_release(&l);
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
