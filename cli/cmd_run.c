/* boxgate run: one gate on one box, under the on-box watchdog agent. */
#include <cjson/cJSON.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/exit.h"
#include "base/json.h"
#include "base/lines.h"
#include "base/parse.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "cli/gate_args.h"
#include "cli/run_output.h"
#include "pool/broker.h"
#include "pool/line.h"
#include "pool/pick.h"
#include "pool/wait.h"
#include "gate/client/overlay.h"
#include "gate/client/run_present.h"
#include "base/timer.h"
#include "results/record.h"
#include "sync/manifest_prelude.h"
#include "sync/sync.h"
#include "measure/alone.h"
#include "measure/kernel.h"
#include "measure/point.h"
#include "measure/record.h"
#include "results/stats.h"
#include "results/store.h"

static const char run_help[] =
	"usage: boxgate run BOX [--gpu LIST] [--timeout S] [--bar R] [--json] [-v]\n"
	"                   [--repeat N] [--warmup N] [--max-cv PCT] [--strict-noise]\n"
	"                   [--holder TAG] [--kernel FILE]\n"
	"                   [--export-markdown FILE] [--export-json FILE]\n"
	"                   [--overlay LOCAL=REPO_PATH]...\n"
	"                   [--results FILE | --no-results] -- GATE ARGS...\n"
	"       boxgate run --pool POOL [--exclude SPEC] [--wait S] [options]\n"
	"                   -- GATE ARGS...\n"
	"\n"
	"Runs the box's gate (gate = ..., relative to its repo; the built-in local box runs the\n"
	"demo gate) under boxgate-agent, the watchdog that lives on the box. GATE ARGS go\n"
	"through the box's shim first: flags on its allowlist (allow = ...) pass, flags with an\n"
	"env rule (env --flag = NAME=VALUE) become environment variables, any other flag is\n"
	"refused before anything connects (exit 2). The agent is installed on demand\n"
	"(content-addressed under ~/.cache/boxgate; see 'boxgate bootstrap').\n"
	"\n"
	"The agent takes the slot's lock, refuses a GPU another process computes on (INVALID),\n"
	"starts the gate with CUDA_VISIBLE_DEVICES set, streams every line back, and at the\n"
	"timeout kills the gate's whole process tree, confirms the GPU is free and reports\n"
	"TIMEOUT_HANG. Every FAITHFUL_RESULT line is parsed and judged again by boxgate\n"
	"(cos >= 0.99, slowCTA ratio against the bar, anti-sloughing on sumCTA).\n"
	"\n"
	"Output: stdout gets one line per gate invocation (\"  run 2/5  slowCTA 18.270 us\n"
	"ratio 12.230  PASS_GATE\", a warm-up's \"  warmup 1/2 ...\", a sweep's \"  nw 8  run\n"
	"1/5 ...\", apart runs end in C or B; a lone invocation gets its full line: verdict,\n"
	"slowCTA, baseline, ratio, wall, sumCTA, cos, device), then the point's summary and\n"
	"a sweep's table. The gate's own stdout lines (FAITHFUL_RESULT included) are shown\n"
	"only with -v; every result line is kept in the record all the same. stderr gets\n"
	"the gate's stderr, errors, and once where the records went. The bytes are the same\n"
	"whether stdout is a terminal, a pipe or a file; a terminal only adds colour (not\n"
	"under NO_COLOR). An invocation that fails without -v shows the gate's last 8\n"
	"stdout lines on stderr.\n"
	"\n"
	"  -v, --verbose  also the gate's stdout lines, as they come, on stdout\n"
	"  --gpu LIST     slot GPUs (\"3\", \"0,1\"), each once; default: the first of the box's\n"
	"                 gpus, on the local box GPU 0 when one exists, else a CPU slot\n"
	"  --timeout S    watchdog timeout (default: MPK_GATE_TIMEOUT_S given through the shim,\n"
	"                 else the box's gate_timeout_s, 420)\n"
	"  --bar R        slowCTA ratio base/candidate needed to pass; wins over a \"bar\" the\n"
	"                 gate prints (default: the gate's \"bar\", else 1.0). A ratio under the\n"
	"                 bar is BELOW_BAR (exit 1), even when the gate said PASS_GATE\n"
	"                 against its own bar\n"
	"  --pool POOL    the broker: every box of the pool (its slots = list) is asked in\n"
	"                 parallel which of its slots are free (no run holds the lock, not\n"
	"                 disabled, no foreign compute process: see 'boxgate slots'); the\n"
	"                 first free one in the pool's order is taken on the connection that\n"
	"                 asked. None free: refused at once naming every slot and its holder\n"
	"  --exclude SPEC with --pool: leave these boxes out of the pick (-x SPEC; repeatable);\n"
	"                 the line (--wait) stays on the pool's first box\n"
	"  --wait S       with --pool: wait up to S seconds in the pool's line, a ticket on\n"
	"                 the pool's first box, served in arrival order across clients; the\n"
	"                 first in line looks for a free slot every 0.5 s and leaves the line\n"
	"                 as soon as the agent has locked its slot. A waiter that dies or is\n"
	"                 cut off loses its place within 15 s; Ctrl-C leaves at once. Later\n"
	"                 invocations (--repeat, a sweep) wait up to S s for their slot too\n"
	"  --holder TAG   names the run in the slot's lock (slots and refusals show it)\n"
	"  --kernel FILE  the candidate, placed at the path the box's kernel_paths names for\n"
	"                 the gate's --kind, in a shadow tree of the box's repo (symlinks but\n"
	"                 for the overlaid files; the production tree is never written); the\n"
	"                 gate runs in it, the box's overlay_env (e.g. MIRAGE_ROOT) names it.\n"
	"                 The same candidate reuses its tree while the repo's paths are\n"
	"                 unchanged; records carry its SHA-256\n"
	"  --overlay LOCAL=REPO_PATH  any file at any repo path of the shadow tree (repeatable)\n"
	"  --pull GLOB    after each invocation, fetch the files GLOB matches in the box's repo\n"
	"                 ('profiles/*.ncu-rep'; repeatable; as boxgate pull fetches them) into\n"
	"                 DIR/pulled/RUN_ID-SEQ beside the results file; the record lists\n"
	"                 them as \"pulled\": [{path, local, size, sha256}]\n"
	"  --json         one JSON object per line on stdout: gate lines and judged results\n"
	"                 (-v changes nothing; a warm-up's events carry \"warmup\": true)\n"
	"                 (a line that is not valid UTF-8 comes as line_b64); the results\n"
	"                 come once the end is known, \"verdict\" the final one, and an\n"
	"                 invocation's last event is {\"event\":\"end\",\"verdict\",\"exit\"}\n"
	"  --results FILE append the invocation's record here (default: [defaults] results\n"
	"                 = PATH, else $XDG_DATA_HOME/boxgate/results.jsonl, else\n"
	"                 ~/.local/share/boxgate/results.jsonl); see 'boxgate results'\n"
	"  --no-results   keep no record\n"
	"  --repeat N     run the gate N times (1-100), each in its own process on the same\n"
	"                 slot, then print the point's medians of slowCTA, wall and sumCTA\n"
	"                 with their spread (min-max, CV), where the number came from, and\n"
	"                 the verdict on the point: the 90% interval of the ratio (Hodges-\n"
	"                 Lehmann, exact signed-rank or rank-sum critical values) lies above\n"
	"                 the bar: PASS_GATE; below it: BELOW_BAR; straddles it, or no\n"
	"                 interval exists yet (under 3 runs, or 3 gate-stated ratios): NOISY\n"
	"                 (exit 1), saying which way it leans and about how many more\n"
	"                 repeats would decide it. A wrong PASS_GATE or BELOW_BAR comes at\n"
	"                 most 5% of the time. Any INVALID, TIMEOUT_HANG or failed run: no\n"
	"                 verdict on the point. One run: its ratio against the bar\n"
	"  --warmup N     first run the gate N more times (0-100) on the same slot, per\n"
	"                 point (per count of a sweep; apart: N C B pairs): each shown as a\n"
	"                 warm-up and recorded with \"warmup\": true, outside the point's\n"
	"                 numbers and verdict and outside results, compare and report\n"
	"  --export-markdown FILE  the point table (one row per point or worker count:\n"
	"                 slowCTA median, min-max, CV, wall and sumCTA medians, n, ratio and\n"
	"                 its interval, verdict, where the number came from) as a Markdown\n"
	"                 table, written at the end through a temporary file renamed onto FILE\n"
	"  --export-json FILE  the same table as one JSON object {box, run_id, points: [...]}\n"
	"                 A FILE that cannot be written (a directory, a missing directory,\n"
	"                 the results file, both options naming one file) is refused before\n"
	"                 anything connects (exit 2)\n"
	"  --max-cv PCT   a slowCTA CV over PCT percent (of 2 or more runs) is reported as a\n"
	"                 warning; default [defaults] max_cv, else 2\n"
	"  --strict-noise a CV over --max-cv makes the point NOISY (exit 1), whatever its\n"
	"                 interval says\n"
	"  --no-baseline  the candidate alone (also the box's no_baseline = yes): no\n"
	"                 baseline run is made, and a valid result line that reports only\n"
	"                 the candidate (no \"baseline_in_tree\", no\n"
	"                 slowCTA_ratio_base_over_cand) with cos >= 0.99, the candidate's\n"
	"                 status PASS and the gate's verdict PASS_GATE is MEASURED (exit\n"
	"                 0): its timings, recorded, with --repeat its medians and spread,\n"
	"                 no ratio and no bar. A low cos, INVALID, TIMEOUT_HANG or a crash\n"
	"                 keep their verdicts; a candidate the gate calls BELOW_BAR stays\n"
	"                 BELOW_BAR (exit 1), whatever --bar; a gate that does report a\n"
	"                 baseline side keeps its PASS_GATE or BELOW_BAR\n"
	"\n"
	"Baseline and candidate apart: when the gate's first result has no baseline side\n"
	"(no \"baseline_in_tree\", no slowCTA_ratio_base_over_cand), each candidate run (C)\n"
	"is followed on the same slot by a baseline run (B): the same gate arguments plus\n"
	"--baseline, which the box must allow. C B C B ...: --repeat N makes N pairs (default\n"
	"1). Each run is its own record (\"role\": candidate | baseline) and its own line\n"
	"judges it alone; the point judges the pairs: ratio = the median over pairs of\n"
	"B.slowCTA / C.slowCTA, decided on the interval of the pair ratios (5 pairs or\n"
	"more; fewer: of the two samples B and C), C's cos >= 0.99, C's median sumCTA at\n"
	"most 10% over B's; either side's CV over --max-cv is a warning. The point\n"
	"line says which path was taken (apart, or measured by the gate in one process).\n"
	"A candidate the gate itself calls INVALID gets no baseline run; under --no-baseline\n"
	"no candidate does.\n"
	"\n"
	"Sweeps: a comma list in the gate's --num-workers (8,64,68: whole numbers 1-65536, no\n"
	"duplicates) runs one invocation per count (times --repeat), each given that single\n"
	"count, and ends with a table of one row per count. Exit: the most serious point's.\n"
	"\n"
	"A verdict needs a valid result line and a clean end: a gate that prints PASS_GATE and\n"
	"then exits non-zero, dies of a signal or reports a CUDA error is INVALID. The agent's\n"
	"own lines (TIMEOUT_HANG, gpu_busy) carry a per-run nonce the gate never sees: a gate\n"
	"printing them, or exiting 124 itself, is INVALID, not a timeout.\n"
	"\n"
	"Ctrl-C stops the gate on the box cleanly (exit 130). If the client dies or the link\n"
	"is cut, the agent stops the gate after heartbeat_timeout_s (default 15 s) without a\n"
	"heartbeat, then the kill grace; the client itself notices a dead link after about\n"
	"3 x keepalive_s. Through the box's connection master (control_persist_s; a fresh\n"
	"connection of the run's own for an overlay's files) all of this holds alike.\n"
	"A slow reader of boxgate's stdout is not a dead client: output waits\n"
	"in memory (up to 256 MiB) while the channel is read and heartbeats go on.\n"
	"Every gate invocation appends one JSON record (provenance, verdict, the parsed\n"
	"result and the raw line; \"pushed\": the SHA-256 of each file push last placed in the\n"
	"box's repo, read from <repo>/.boxgate/pushed) to the results file, whatever the\n"
	"outcome; a record that cannot be written is an error naming the file (exit 1, or\n"
	"the verdict's own code), said after the verdict.\n"
	"Exit: 0 PASS_GATE or MEASURED, 1 BELOW_BAR or the gate failed or the slot is busy, 2 "
	"usage,\n"
	"3 connection, 124 TIMEOUT_HANG, 125 INVALID (contended GPU, no or bad result line,\n"
	"a crash after the result, a forged agent line).\n";

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* run's options: the ones it shares with explain, then its own. */
typedef struct run_opts {
	gate_opts g; /* first: gate_args_parse reads it */
	const char *results;
	bool no_results;
	const char *repeat;                  /* --repeat N */
	const char *max_cv;                  /* --max-cv PCT */
	bool strict_noise;                   /* --strict-noise */
	int wait;                            /* --wait S (with --pool) */
	const char *kernel;                  /* --kernel FILE */
	cli_list overlay;                    /* --overlay LOCAL=REPO_PATH ... */
	cli_list pull;                       /* --pull GLOB ... */
	bool no_baseline;                    /* --no-baseline */
	bool verbose;                        /* -v, --verbose: the gate's stdout lines too */
	const char *warmup;                  /* --warmup N */
	const char *export_md, *export_json; /* --export-markdown FILE, --export-json FILE */
} run_opts;

static const cli_opt run_options[] = {
	GATE_OPT_ROWS(run_opts, g.),
	CLI_OPT_POOL,
	CLI_OPT_EXCLUDE,
	CLI_OPT_STRING("holder", run_opts, g.holder),
	CLI_OPT_SECONDS("wait", run_opts, wait, 0, GATE_SECONDS_MAX),
	CLI_OPT_STRING("kernel", run_opts, kernel),
	CLI_OPT_LIST("overlay", run_opts, overlay),
	CLI_OPT_LIST("pull", run_opts, pull),
	CLI_OPT_STRING("results", run_opts, results),
	CLI_OPT_FLAG("no-results", run_opts, no_results),
	CLI_OPT_STRING("repeat", run_opts, repeat),
	CLI_OPT_STRING("max-cv", run_opts, max_cv),
	CLI_OPT_FLAG("strict-noise", run_opts, strict_noise),
	CLI_OPT_FLAG("no-baseline", run_opts, no_baseline),
	{"verbose", 'v', CLI_FLAG, false, offsetof(run_opts, verbose), 0, 0},
	CLI_OPT_STRING("warmup", run_opts, warmup),
	CLI_OPT_STRING("export-markdown", run_opts, export_md),
	CLI_OPT_STRING("export-json", run_opts, export_json),
	CLI_OPT_END,
};

/* Result lines kept for the end of an invocation besides the last one. */
#define RUN_EARLIER_MAX 16

struct run_view {
	const gate_args *ga;
	pool_line *line;  /* left when the agent says the slot is locked */
	bool color_out;   /* stdout is a terminal: the bold result line, the verdict */
	bool verbose;     /* -v: the gate's stdout lines are shown as they come */
	run_tail tail;    /* else its last ones, shown when the invocation fails */
	bool warmup;      /* a warm-up invocation (--json marks its events) */
	gate_result last; /* a copy of the last result line, for the record */
	/* The result lines before it, shown only once the run's end is known. */
	gate_result earlier[RUN_EARLIER_MAX];
	size_t n_earlier, n_omitted;
};

static void print_line(void *arg, remote_stream s, const char *line, size_t len, int flags)
{
	struct run_view *v = arg;
	if (v->ga->json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "box", v->ga->box->name);
		cJSON_AddStringToObject(o, "stream", s == REMOTE_STDOUT ? "stdout" : "stderr");
		bg_json_add_bytes(o, "line", line, len);
		if (flags & LINE_PARTIAL)
			cJSON_AddBoolToObject(o, "partial", 1);
		cli_print_json(o);
		cJSON_Delete(o);
		return;
	}
	if (s == REMOTE_STDERR && cli_repeated_note(line, len))
		return; /* said once per run */
	if (s == REMOTE_STDOUT && !v->verbose) {
		run_tail_add(&v->tail, line, len);
		return;
	}
	bool result = s == REMOTE_STDOUT && gate_is_result_line(line, len);
	if (result && v->color_out) {
		strbuf b = STRBUF_INIT;
		strbuf_addstr(&b, "\033[1m");
		strbuf_add(&b, line, len);
		strbuf_addstr(&b, "\033[0m");
		cli_print_line(stdout, NULL, b.buf, b.len);
		strbuf_release(&b);
		return;
	}
	cli_print_line(s == REMOTE_STDOUT ? stdout : stderr, NULL, line, len);
}

static void leave_line(void *arg)
{
	struct run_view *v = arg;
	pool_line_leave(v->line);
}

static void keep_last(struct run_view *v, const gate_result *r)
{
	gate_result_release(&v->last);
	v->last = *r;
	v->last.raw = r->raw ? xstrdup(r->raw) : NULL;
	v->last.json = r->json ? cJSON_Duplicate(r->json, 1) : NULL;
}

/* A result line arrived: kept, shown when the run's end is known. */
static void on_result(void *arg, const gate_result *r)
{
	struct run_view *v = arg;
	if (v->last.raw) {
		if (v->n_earlier < RUN_EARLIER_MAX) {
			v->earlier[v->n_earlier++] = v->last;
			memset(&v->last, 0, sizeof(v->last));
		} else {
			v->n_omitted++;
		}
	}
	keep_last(v, r);
}

/* The JSON event of one result line: "verdict" is the invocation's final one
 * (null when there is none), "line_verdict" the line's own judgement. */
static void print_result_event(const struct run_view *v, const gate_result *r, gate_verdict final)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "box", v->ga->box->name);
	cJSON_AddStringToObject(o, "event", "result");
	if (final == VERDICT_NONE)
		cJSON_AddNullToObject(o, "verdict");
	else
		cJSON_AddStringToObject(o, "verdict", gate_verdict_name(final));
	cJSON_AddStringToObject(o, "line_verdict", gate_verdict_name(r->verdict));
	cJSON_AddStringToObject(o, "stated_verdict", gate_verdict_name(r->stated));
	cJSON_AddBoolToObject(o, "disagrees", r->disagrees);
	cJSON_AddStringToObject(o, "from", r->source == GATE_FROM_AGENT ? "agent" : "gate");
	if (r->forged)
		cJSON_AddBoolToObject(o, "forged", 1);
	if (r->bar > 0)
		cJSON_AddNumberToObject(o, "bar", r->bar);
	if (r->problems[0])
		cJSON_AddStringToObject(o, "problems", r->problems);
	if (v->warmup)
		cJSON_AddBoolToObject(o, "warmup", 1);
	if (r->json)
		cJSON_AddItemToObject(o, "result", cJSON_Duplicate(r->json, 1));
	else
		bg_json_add_bytes(o, "raw", r->raw, strlen(r->raw));
	cli_print_json(o);
	cJSON_Delete(o);
}

/* The invocation's result lines, once its verdict is known. JSON: every kept
 * line, each carrying the final verdict. Human: an earlier line only when it
 * is no PASS (a later line and the end decide); the last one is the
 * invocation's own line (run_out_invocation). */
static void show_results(struct run_view *v, gate_verdict final)
{
	if (v->ga->json) {
		for (size_t i = 0; i < v->n_earlier; i++)
			print_result_event(v, &v->earlier[i], final);
		if (v->n_omitted) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "box", v->ga->box->name);
			cJSON_AddStringToObject(o, "event", "results_omitted");
			cJSON_AddNumberToObject(o, "n", (double)v->n_omitted);
			cli_print_json(o);
			cJSON_Delete(o);
		}
		if (v->last.raw)
			print_result_event(v, &v->last, final);
		return;
	}
	for (size_t i = 0; i < v->n_earlier; i++)
		if (v->earlier[i].verdict != VERDICT_PASS_GATE &&
		    v->earlier[i].verdict != VERDICT_MEASURED)
			run_out_result(&v->earlier[i], "  earlier result: ", v->color_out);
	if (v->n_omitted)
		cli_printf(stdout, "  %zu more result lines, judged but not shown one by one\n",
			   v->n_omitted);
}

/* The last JSON event of an invocation: its final verdict and exit code. */
static void print_end_event(const gate_args *ga, gate_verdict final, int code, const char *why,
			    bool warmup)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "box", ga->box->name);
	cJSON_AddStringToObject(o, "event", "end");
	if (final == VERDICT_NONE)
		cJSON_AddNullToObject(o, "verdict");
	else
		cJSON_AddStringToObject(o, "verdict", gate_verdict_name(final));
	cJSON_AddNumberToObject(o, "exit", code);
	if (code)
		cJSON_AddStringToObject(o, "why", why);
	if (warmup)
		cJSON_AddBoolToObject(o, "warmup", 1);
	cli_print_json(o);
	cJSON_Delete(o);
}

/* Appends the invocation's record; says why not, or under --json where it
 * went (a person is told once, at the end of the run). */
static int record_run(const gate_args *ga, const char *path, const results_record_in *in)
{
	bg_err err = {0};
	if (measure_record_append(path, in, &err) < 0) {
		cli_error("%s: the record was not kept: %s", ga->box->name, err.msg);
		return BG_EXIT_FAIL;
	}
	if (ga->json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "box", ga->box->name);
		cJSON_AddStringToObject(o, "event", "recorded");
		cJSON_AddStringToObject(o, "file", path);
		cJSON_AddStringToObject(o, "run_id", in->run_id);
		cli_print_json(o);
		cJSON_Delete(o);
	}
	return 0;
}

#define RUN_REPEAT_MAX     MEASURE_REPEAT_MAX
#define RUN_MAX_CV_DEFAULT 2.0 /* percent */
#define RUN_INTERRUPTED    BG_EXIT_INTERRUPTED

/* What every invocation of one boxgate run shares. */
typedef struct run_state {
	cJSON *overlay;  /* the candidate's overlay, for the records (NULL: none) */
	pool_line *line; /* --wait: our place in the pool's line, left once the slot is locked */
	const char *results;
	char run_id[17];
	int seq;
	int repeat, repeat_n; /* repeat_n: recorded "repeat" n, 0 without --repeat */
	char *pushed;         /* the box's push manifest, NULL when unread (pushed_error) */
	char *pushed_error;
	/* The agent's check and the manifest's read ride in the first
	 * invocation's command (one channel, not three). */
	gate_present present;
	gate_prelude manifest_pre;
	sync_manifest_collect manifest;
	sync_target manifest_box;
	bool manifest_settled;
	bool accept_new;      /* --accept-new: also for a reconnect that cancels a Slurm step */
	const cli_list *pull; /* --pull GLOB ...: fetched after each invocation */
	bool no_baseline;     /* --no-baseline (the box's no_baseline = yes counts too) */
	bool verbose;         /* -v: the gate's stdout lines shown */
	int warmup;           /* --warmup N: warm-up invocations per point */
	bool alone;           /* one invocation in all: its line is the full one */
	int n_recorded;       /* records written */
	bool sweep;           /* a --num-workers sweep: lines name the count */
} run_state;

static bool has_word(const cli_args *a, const char *w)
{
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->v[i], w) == 0)
			return true;
	return false;
}

static void said_install(void *ctx, gate_agent_how how)
{
	cli_printf(stderr, "boxgate: %s: agent %s\n", (const char *)ctx, gate_agent_how_name(how));
}

static void manifest_line(void *ctx, const char *line, size_t len, int flags)
{
	sync_manifest_collect_line(ctx, line, len, flags);
}

/* The manifest the first invocation's command read, for its record and the
 * later ones'. */
static void manifest_settle(run_state *st)
{
	if (!st->present.prelude || st->manifest_settled)
		return;
	st->manifest_settled = true;
	bg_err e = {0};
	if (sync_manifest_collect_end(&st->manifest, &st->manifest_box, &st->pushed, &e) < 0)
		st->pushed_error = xstrdup(e.msg);
}

/* One gate invocation of point p (its baseline run when `baseline`): streams
 * it, judges it, records it. Returns its exit code; *stop says no further
 * invocation may run. */
static int invoke(run_state *st, remote_conn *c, run_point *p, int k, bool warm, bool baseline,
		  bool *stop)
{
	const gate_args *ga = baseline ? &p->bga : &p->ga;
	const cli_args *args = baseline ? &p->bargs : &p->args;
	const char *cmdline = baseline ? p->bcmdline : p->cmdline;
	struct run_view view = {0};
	gate_outcome out = {0};
	bg_err err = {0};
	char why[700];
	gate_policy policy = GATE_POLICY_DEFAULT;
	policy.bar = ga->bar; /* 0 without --bar */
	policy.run_limit_s = gate_run_limit_s(&ga->spec);
	view.ga = ga;
	view.color_out = !ga->json && cli_color(stdout);
	view.verbose = st->verbose;
	view.warmup = warm;
	gate_callbacks cb = {print_line, on_result, NULL, &view,
			     GATE_HEARTBEAT_EVERY_MS(ga->spec.heartbeat_ms)};
	if (st->line) {
		cb.on_locked = leave_line;
		view.line = st->line;
	}
	int64_t start_ms = results_now_ms();
	int rc = gate_run_present(c, &st->present, cmdline, &policy, &cb, &stop_requested, &out,
				  &err);
	int64_t end_ms = results_now_ms();
	manifest_settle(st);
	if (rc < 0)
		cli_error("%s", err.msg);
	cJSON *pulled = cli_run_pull(c, ga->box, st->pull, st->results, st->run_id, st->seq);
	if (rc < 0 && !out.agent_end)
		cli_slurm_cancel(ga->box, cmdline, st->accept_new);
	bool said;
	int code = gate_outcome_judge(&out, why, sizeof(why), &said);
	bool alone = !baseline && (st->no_baseline || ga->box->no_baseline);
	if (alone) {
		for (size_t i = 0; i < view.n_earlier; i++)
			measure_alone_line(&view.earlier[i]);
		code = measure_alone_outcome(&view.last, &out, code, said, why, sizeof(why));
	}
	gate_verdict final = results_verdict_of(code, &out);
	if (!baseline && !p->checked) {
		p->checked = true;
		p->m.apart = !alone && measure_only_candidate(&view.last) &&
			     !has_word(&p->args, "--baseline");
	}
	show_results(&view, final);
	/* nothing ran (no agent, none installed): said once, no line, no record */
	if (!ga->json && !out.agent_absent) {
		run_label label = {
			.count = st->sweep ? p->count : -1,
			.warmup = warm,
			.alone = !warm && st->alone && !p->m.apart,
			.i = k + 1,
			.n = warm ? st->warmup : st->repeat,
			.role = !p->m.apart ? NULL
				: baseline  ? "B"
					    : "C",
		};
		if (label.alone) /* a lone invocation's line names no count */
			label.count = -1;
		run_out_invocation(&label, view.last.raw ? &view.last : NULL, final, code, said,
				   view.color_out);
		bool judged = final == VERDICT_PASS_GATE || final == VERDICT_BELOW_BAR ||
			      final == VERDICT_MEASURED;
		if (!judged && !stop_requested)
			run_tail_show(&view.tail, ga->box->name);
	}
	/* A judged result has said why; anything else is said here. */
	if (code && (!said || ga->json))
		cli_error("%s: %s", ga->box->name, why);
	if (warm)
		p->warm++;
	else
		measure_tally_note(&p->t, &p->m, code, results_verdict_of(code, &out),
				   view.last.raw ? &view.last : NULL, baseline);
	if (st->results && !out.agent_absent) {
		results_record_in in = {
			.run_id = st->run_id,
			.seq = st->seq++,
			.gpus = ga->spec.gpus,
			.command = cmdline,
			.gate_args = (const char *const *)args->v,
			.n_gate_args = args->n,
			.start_ms = start_ms,
			.end_ms = end_ms,
			.exit_code = code,
			.why = why,
			.outcome = &out,
			.last = view.last.raw ? &view.last : NULL,
			.pushed = st->pushed,
			.pushed_error = st->pushed_error,
			.pulled = pulled,
		};
		measure_record_where(&in, ga->box);
		measure_record_point(&in, &p->m, baseline, warm, k, st->repeat_n, st->overlay);
		if (record_run(ga, st->results, &in)) {
			p->t.record_failed = true;
			if (!code)
				code = BG_EXIT_FAIL;
		} else {
			st->n_recorded++;
		}
	}
	cJSON_Delete(pulled);
	if (ga->json)
		print_end_event(ga, final, code, why, warm);
	run_tail_release(&view.tail);
	gate_result_release(&view.last);
	for (size_t i = 0; i < view.n_earlier; i++)
		gate_result_release(&view.earlier[i]);
	*stop = rc < 0 || out.interrupted || stop_requested;
	return code;
}

/* The B invocation (gate_args_baseline: the point's arguments plus
 * --baseline, on the same slot). Prints why not and returns an exit code
 * (0 = ready). */
static int baseline_prepare(cli_ctx *ctx, const gate_opts *g, run_point *p)
{
	bg_err err = {0};
	gate_args_in in = cli_gate_args_in(ctx, g);
	p->bargs = p->args;
	p->bparsed = true;
	int rc = gate_args_baseline(&ctx->conf, &in, &p->ga, p->args.v, p->args.n, &p->bargs.v,
				    &p->bargs.n, &p->bga, &p->bcmdline, &err);
	if (rc < 0) {
		cli_error("%s", err.msg);
		cli_error("%s: the gate reports only the candidate, and its baseline run (the same "
			  "arguments plus --baseline) cannot be made",
			  p->ga.box->name);
		return rc == BG_EUSAGE ? BG_EXIT_USAGE : BG_EXIT_FAIL;
	}
	return 0;
}

/* --repeat N and --warmup N: a whole number lo..RUN_REPEAT_MAX. */
static bool parse_count(const char *v, int lo, int *out)
{
	size_t n = strlen(v);
	if (!n || n > 3 || strspn(v, "0123456789") != n)
		return false;
	int x = atoi(v);
	if (x < lo || x > RUN_REPEAT_MAX)
		return false;
	*out = x;
	return true;
}

/* --kernel FILE and --overlay LOCAL=REPO_PATH into `ov`, checked here: the box's
 * kernel_paths must name the gate kind's path, every local file must exist. */
static int overlay_from_options(const run_opts *opts, const gate_args *ga, const cli_args *args,
				overlay *ov)
{
	const conf_box *b = ga->box;
	bg_err err = {0};
	if (opts->kernel) {
		const char *kind = measure_gate_kind(args->v, args->n);
		if (!kind) {
			cli_error("run: --kernel needs the gate's --kind (its kernel_paths entry "
				  "says where the candidate goes)");
			return BG_EXIT_USAGE;
		}
		const char *rel = measure_kernel_path(b, kind);
		if (!rel) {
			cli_error("run: box %s names no kernel path for --kind %s (add %s:PATH to "
				  "kernel_paths under [box %s] in %s)",
				  b->name, kind, kind, b->name, b->file);
			return BG_EXIT_USAGE;
		}
		if (overlay_add(ov, opts->kernel, rel, &err) < 0) {
			cli_error("run: --kernel %s", err.msg);
			return BG_EXIT_USAGE;
		}
	}
	for (size_t i = 0; i < opts->overlay.n; i++) {
		const char *v = opts->overlay.v[i], *eq = strchr(v, '=');
		if (!eq || eq == v || !eq[1]) {
			cli_error("run: --overlay wants LOCAL=REPO_PATH, got '%s'", v);
			return BG_EXIT_USAGE;
		}
		char *local = xstrndup(v, (size_t)(eq - v));
		int rc = overlay_add(ov, local, eq + 1, &err);
		free(local);
		if (rc < 0) {
			cli_error("run: --overlay %s", err.msg);
			return BG_EXIT_USAGE;
		}
	}
	if (ov->n && !b->repo) {
		cli_error("run: box %s has no repo for the overlay to mirror (set repo = ... under "
			  "[box %s] in %s)",
			  b->name, b->name, b->file);
		return BG_EXIT_USAGE;
	}
	return 0;
}

/* What the pick's callbacks need of the command. */
typedef struct pick_ctx {
	cli_ctx *cli;
	const gate_opts *g;
	const cli_args *args;
} pick_ctx;

static void said_ahead(void *ctx, int ahead)
{
	cli_printf(stderr, "boxgate: pool %s: %d waiter%s ahead in line\n",
		   ((const pick_ctx *)ctx)->cli->opt.pool, ahead, ahead == 1 ? "" : "s");
}

static void said_first(void *ctx)
{
	cli_printf(stderr, "boxgate: pool %s: first in line, waiting for a free slot\n",
		   ((const pick_ctx *)ctx)->cli->opt.pool);
}

/* A box the pick may take must take the gate's arguments (its refusal said). */
static int check_box(void *ctx_, const conf_box *box)
{
	pick_ctx *p = ctx_;
	gate_args ga;
	p->cli->opt.boxes = box->name;
	int code = gate_args_parse(p->cli, p->g, p->args, &ga);
	gate_args_release(&ga);
	return code;
}

/* --pool, or BOX without --gpu on a box of several GPUs (pool/pick.h): the
 * slot run goes on with as `run BOX --gpu N`, on the connection the broker
 * opened. */
static int pick_slot(cli_ctx *ctx, gate_opts *g, const cli_args *args, int wait_s, pool_line **line,
		     broker_pick *pick)
{
	pick_ctx p = {.cli = ctx, .g = g, .args = args};
	remote_connect_opts link = cli_link_warm(ctx);
	pool_pick_in in = {
		.cf = &ctx->conf,
		.cmd = ctx->cmd->name,
		.pool = ctx->opt.pool,
		.box = ctx->opt.pool ? NULL : conf_find_box(&ctx->conf, ctx->opt.boxes),
		.gpu = g->gpu,
		.exclude = cli_exclude_spec(ctx),
		.link = &link,
		.wait_s = wait_s,
		.stop = &stop_requested,
		.check_box = check_box,
		.on_ahead = said_ahead,
		.on_first = said_first,
		.ctx = &p,
	};
	strbuf refusal = STRBUF_INIT, note = STRBUF_INIT;
	int code = in.pool ? pool_pick_pool(&in, line, pick, &refusal, &note)
			   : pool_pick_box(&in, pick, &refusal, &note);
	if (refusal.len)
		cli_error("%s", refusal.buf);
	if (note.len)
		cli_printf(stderr, "boxgate: %s\n", note.buf);
	if (!code) {
		ctx->opt.boxes = pick->box->name;
		g->gpu = pick->gpus;
	}
	strbuf_release(&refusal);
	strbuf_release(&note);
	return code;
}

static int run_run(cli_ctx *ctx, void *opts_, const cli_args *args)
{
	const run_opts *opts = opts_;
	const char *name = ctx->cmd->name;
	gate_opts gopts = opts->g; /* --gpu comes from the broker under --pool */
	broker_pick pick = {0};
	overlay ov = {0};
	char *overlay_env = NULL; /* NAME=ROOT of the box's overlay_env */
	run_state st = {0};
	st.accept_new = ctx->opt.accept_new;
	st.pull = &opts->pull;
	st.no_baseline = opts->no_baseline;
	run_point *pts = NULL;
	size_t npts = 0;
	gate_sweep sw;
	remote_conn *c = NULL;
	gate_agent_how how;
	bg_err err = {0};
	int code = 0, repeat = 1, warmup = 0;
	double max_cv = ctx->conf.max_cv >= 0 ? ctx->conf.max_cv : RUN_MAX_CV_DEFAULT;
	if (opts->repeat && !parse_count(opts->repeat, 1, &repeat)) {
		cli_error("%s: --repeat wants a whole number from 1 to %d, got '%s'", name,
			  RUN_REPEAT_MAX, opts->repeat);
		return BG_EXIT_USAGE;
	}
	if (opts->warmup && !parse_count(opts->warmup, 0, &warmup)) {
		cli_error("%s: --warmup wants a whole number from 0 to %d, got '%s'", name,
			  RUN_REPEAT_MAX, opts->warmup);
		return BG_EXIT_USAGE;
	}
	if (opts->max_cv && !conf_parse_percent(opts->max_cv, &max_cv)) {
		cli_error("%s: --max-cv wants a percentage such as 2 or 0.5 (0-%g), got '%s'", name,
			  CONF_PERCENT_MAX, opts->max_cv);
		return BG_EXIT_USAGE;
	}
	if ((code = gate_sweep_parse(name, args, &sw)))
		return code;
	if (opts->wait && !ctx->opt.pool) {
		cli_error("%s: --wait goes with --pool (the broker's line)", name);
		return BG_EXIT_USAGE;
	}
	if (opts->export_md || opts->export_json) {
		/* a bad FILE is said before anything connects (the pool's broker included) */
		char *res = opts->no_results ? NULL : cli_results_path(ctx, opts->results);
		if (!opts->no_results && !res)
			return BG_EXIT_USAGE;
		code = run_export_check(name, opts->export_md, opts->export_json, res);
		free(res);
		if (code)
			return code;
	}
	if (ctx->opt.pool) {
		cli_catch_stop_signals(on_signal);
		if ((code = pick_slot(ctx, &gopts, args, opts->wait, &st.line, &pick))) {
			pool_line_free(st.line);
			return code;
		}
	} else if (!gopts.gpu && ctx->opt.boxes) {
		const conf_box *b = conf_find_box(&ctx->conf, ctx->opt.boxes);
		if (b && pool_gpu_count(b->gpus) >= 2 &&
		    (code = pick_slot(ctx, &gopts, args, 0, NULL, &pick)))
			return code;
	}
	npts = sw.n >= 2 ? sw.n : 1;
	pts = xcalloc(npts, sizeof(*pts));
	for (size_t i = 0; i < npts; i++) {
		run_point *p = &pts[i];
		if (sw.n >= 2)
			gate_sweep_args(args, &sw, i, &p->args, &p->word);
		else
			p->args = *args;
		p->count = sw.n >= 2 ? sw.counts[i] : sw.n == 1 ? sw.counts[0] : -1;
		p->t.cpus = p->t.workers = -1;
		p->m.max_cv = max_cv;
		p->m.strict_noise = opts->strict_noise;
		p->parsed = true;
		if ((code = gate_args_parse(ctx, &gopts, &p->args, &p->ga)))
			goto out;
	}
	if (opts->results && opts->no_results) {
		cli_error("run: --results and --no-results exclude each other");
		code = BG_EXIT_USAGE;
		goto out;
	}
	if (!opts->no_results && !(st.results = cli_results_path(ctx, opts->results))) {
		code = BG_EXIT_USAGE;
		goto out;
	}
	if ((code = overlay_from_options(opts, &pts[0].ga, &pts[0].args, &ov)))
		goto out;

	cli_catch_stop_signals(on_signal);

	gate_args *g0 = &pts[0].ga;
	int rc = 0;
	how = AGENT_PRESENT;
	if (pick.conn) { /* the broker's connection, its agent already there */
		c = pick.conn;
		pick.conn = NULL;
		g0->agent_path = pick.agent_path;
		pick.agent_path = NULL;
		st.present.known = true;
	} else {
		rc = cli_connect_warm(g0->box, false, &c, &err);
		/* over ssh the first invocation's own command checks the agent */
		char *guard = rc == 0 ? gate_agent_probe(c, &g0->agent, &g0->agent_path) : NULL;
		if (guard)
			free(guard);
		else if (rc == 0)
			rc = gate_agent_ensure(c, &g0->agent, false, &g0->agent_path, &how, &err);
		st.present.known = rc == 0 && !guard;
	}
	if (rc < 0) {
		cli_error("%s", err.msg);
		code = bg_exit_code(rc);
		goto out;
	}
	if (how == AGENT_UPLOADED || how == AGENT_COMPILED)
		cli_printf(stderr, "boxgate: %s: agent %s\n", g0->box->name,
			   gate_agent_how_name(how));
	if (!g0->spec.gpus)
		g0->spec.gpus = g0->gpus = gate_args_default_gpus(c, g0);
	if (ov.n) {
		rc = overlay_prepare(c, g0->box->repo, &ov, &err);
		if (rc < 0) {
			cli_error("%s", err.msg);
			code = bg_exit_code(rc);
			goto out;
		}
		cli_printf(stderr, "boxgate: %s: candidate overlay %.12s %s at %s\n", g0->box->name,
			   ov.id, ov.reused ? "reused" : "made", ov.root);
		st.overlay = overlay_json(&ov);
		if (g0->box->overlay_env)
			overlay_env = xasprintf("%s=%s", g0->box->overlay_env, ov.root);
	}
	for (size_t i = 0; i < npts; i++) {
		gate_args *ga = &pts[i].ga;
		if (i > 0) {
			ga->agent_path = xstrdup(g0->agent_path);
			if (!ga->spec.gpus && g0->gpus)
				ga->spec.gpus = ga->gpus = xstrdup(g0->gpus);
		}
		ga->spec.agent = ga->agent_path;
		/* --wait also bounds how long a later invocation (a repeat, a sweep's next
		 * count) waits for its slot, which is free between invocations */
		if (opts->wait > ga->spec.lock_wait_s)
			ga->spec.lock_wait_s = opts->wait;
		ga->spec.cwd = ov.root;
		ga->spec.env = overlay_env;
		pts[i].cmdline = gate_command_line(&ga->spec);
	}

	st.present.agent = &g0->agent;
	st.present.on_install = said_install;
	st.present.ctx = (void *)g0->box->name;
	/* What push last placed on the box, for the records: read in front of
	 * the first invocation's gate. */
	if (st.results) {
		st.manifest_box = (sync_target)CLI_SYNC_TARGET(g0->box);
		st.manifest_pre = (gate_prelude){.text = sync_manifest_prelude(&st.manifest_box),
						 .tag = SYNC_MANIFEST_TAG,
						 .on_line = manifest_line,
						 .ctx = &st.manifest};
		st.present.prelude = &st.manifest_pre;
	}

	results_new_run_id(st.run_id);
	st.repeat = repeat;
	st.repeat_n = opts->repeat ? repeat : 0;
	st.warmup = warmup;
	st.verbose = opts->verbose;
	st.sweep = npts >= 2;
	st.alone = repeat == 1 && npts == 1;
	bool summary = repeat >= 2 || npts >= 2, stop = false;
	size_t judged = 0;
	for (size_t i = 0; i < npts && !stop; i++) {
		run_point *p = &pts[i];
		int last = 0;
		/* the warm-ups first, then the counted invocations: k counts each */
		for (int j = 0; j < warmup + repeat && !stop; j++) {
			bool warm = j < warmup;
			int k = warm ? j : j - warmup;
			last = invoke(&st, c, p, k, warm, false, &stop);
			if (stop || !p->m.apart)
				continue;
			if (!p->bparsed && (last = baseline_prepare(ctx, &gopts, p))) {
				stop = true;
				break;
			}
			last = invoke(&st, c, p, k, warm, true, &stop);
		}
		if (stop) {
			/* Ctrl-C or a lost link: no more invocations, no verdict on a cut point. */
			code = stop_requested ? RUN_INTERRUPTED : bg_exit_merge(code, last);
			break;
		}
		measure_tally_judge(&p->t, &p->m,
				    p->ga.bar); /* also a lone run's, for --export-* */
		if (!summary && !p->m.apart) {
			code = last;
			break;
		}
		run_out_point(p, repeat, st.run_id);
		code = bg_exit_merge(code, p->t.code);
		judged++;
	}
	if (npts >= 2 && judged && !pts[0].ga.json)
		run_out_sweep(pts, judged);
	if (st.n_recorded && !pts[0].ga.json) {
		if (st.n_recorded == 1)
			cli_printf(stderr, "boxgate: %s: recorded in %s\n", pts[0].ga.box->name,
				   st.results);
		else
			cli_printf(stderr, "boxgate: %s: %d records (run %s) in %s\n",
				   pts[0].ga.box->name, st.n_recorded, st.run_id, st.results);
	}
	/* a run cut short (Ctrl-C, a lost link) leaves a table it would not stand
	 * by, and an earlier FILE is better kept than overwritten with part of one */
	if (stop && (opts->export_md || opts->export_json))
		cli_error("%s: the run was cut short: %s not written", name,
			  opts->export_md && opts->export_json ? "the exported tables"
			  : opts->export_md                    ? opts->export_md
							       : opts->export_json);
	else
		code = bg_exit_merge(code, run_export(name, pts, npts, st.run_id, opts->export_md,
						      opts->export_json));
out:
	for (size_t i = 0; pts && i < npts; i++) {
		if (pts[i].parsed)
			gate_args_release(&pts[i].ga);
		if (pts[i].word)
			free(pts[i].args.v);
		free(pts[i].word);
		free(pts[i].cmdline);
		if (pts[i].bparsed)
			gate_args_release(&pts[i].bga);
		free(pts[i].bargs.v);
		free(pts[i].bcmdline);
	}
	free(pts);
	free((char *)st.results);
	free(st.pushed);
	free(st.pushed_error);
	free((char *)st.manifest_pre.text);
	sync_manifest_collect_release(&st.manifest);
	if (c)
		cli_trace_round_trips(remote_target_of(c)->name, c);
	remote_close(c);
	broker_pick_release(&pick);
	pool_line_free(st.line);
	overlay_release(&ov);
	cJSON_Delete(st.overlay);
	free(overlay_env);
	return code;
}

/* clang-format off */
const cli_cmd cli_cmd_run = {
	.name = "run", .summary = "run a gate on a box under the watchdog agent",
	.help = run_help, .options = run_options, .opts_size = sizeof(run_opts),
	.needs = CLI_NEEDS_CONFIG, .box_operand = CLI_BOX_BEFORE_DASH,
	.unknown_hint = " (gate flags go after '--')", .run = run_run,
};
/* clang-format on */
