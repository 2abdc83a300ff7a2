/* boxgate run: one gate on one box, under the on-box watchdog agent. */
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/exit.h"
#include "base/json.h"
#include "base/lines.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "cli/gate_args.h"
#include "results/record.h"
#include "results/store.h"

static const char run_help[] =
	"usage: boxgate run BOX [--gpu LIST] [--timeout S] [--bar R] [--json]\n"
	"                   [--results FILE | --no-results] -- GATE ARGS...\n"
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
	"  --gpu LIST     slot GPUs (\"3\", \"0,1\"); default: the first of the box's gpus, on "
	"the\n"
	"                 local box GPU 0 when one exists, else a CPU slot\n"
	"  --timeout S    watchdog timeout (default: MPK_GATE_TIMEOUT_S given through the shim,\n"
	"                 else the box's gate_timeout_s, 420)\n"
	"  --bar R        slowCTA ratio base/candidate needed to pass; wins over a \"bar\" the\n"
	"                 gate prints (default: the gate's \"bar\", else 1.0). A ratio under the\n"
	"                 bar is BELOW_BAR (exit 1), even when the gate said PASS_GATE\n"
	"                 against its own bar\n"
	"  --json         one JSON object per line on stdout: gate lines and judged results\n"
	"                 (a line that is not valid UTF-8 comes as line_b64)\n"
	"  --results FILE append the invocation's record here (default: [defaults] results\n"
	"                 = PATH, else $XDG_DATA_HOME/boxgate/results.jsonl, else\n"
	"                 ~/.local/share/boxgate/results.jsonl); see 'boxgate results'\n"
	"  --no-results   keep no record\n"
	"\n"
	"A verdict needs a valid result line and a clean end: a gate that prints PASS_GATE and\n"
	"then exits non-zero, dies of a signal or reports a CUDA error is INVALID. The agent's\n"
	"own lines (TIMEOUT_HANG, gpu_busy) carry a per-run nonce the gate never sees: a gate\n"
	"printing them, or exiting 124 itself, is INVALID, not a timeout.\n"
	"\n"
	"Ctrl-C stops the gate on the box cleanly (exit 130). If the client dies or the link\n"
	"is cut, the agent stops the gate after heartbeat_timeout_s (default 15 s) without a\n"
	"heartbeat, then the kill grace; the client itself notices a dead link after about\n"
	"3 x keepalive_s. A slow reader of boxgate's stdout is not a dead client: output waits\n"
	"in memory (up to 256 MiB) while the channel is read and heartbeats go on.\n"
	"Every gate invocation appends one JSON record (provenance, verdict, the parsed\n"
	"result and the raw line) to the results file, whatever the outcome; a record that\n"
	"cannot be written is an error naming the file (exit 1, or the verdict's own code),\n"
	"said after the verdict.\n"
	"Exit: 0 PASS_GATE, 1 BELOW_BAR or the gate failed or the slot is busy, 2 usage,\n"
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
} run_opts;

static const cli_opt run_options[] = {
	GATE_OPT_ROWS(run_opts, g.),
	CLI_OPT_STRING("results", run_opts, results),
	CLI_OPT_FLAG("no-results", run_opts, no_results),
	CLI_OPT_END,
};

struct run_view {
	const gate_args *ga;
	bool color_out, color_err; /* per stream: the bold result line, the verdict */
	gate_result last;          /* a copy of the last result line, for the record */
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

static void keep_last(struct run_view *v, const gate_result *r)
{
	gate_result_release(&v->last);
	v->last = *r;
	v->last.raw = r->raw ? xstrdup(r->raw) : NULL;
	v->last.json = r->json ? cJSON_Duplicate(r->json, 1) : NULL;
}

static void print_result(void *arg, const gate_result *r)
{
	struct run_view *v = arg;
	keep_last(v, r);
	if (v->ga->json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "box", v->ga->box->name);
		cJSON_AddStringToObject(o, "event", "result");
		cJSON_AddStringToObject(o, "verdict", gate_verdict_name(r->verdict));
		cJSON_AddStringToObject(o, "stated_verdict", gate_verdict_name(r->stated));
		cJSON_AddBoolToObject(o, "disagrees", r->disagrees);
		cJSON_AddStringToObject(o, "from", r->source == GATE_FROM_AGENT ? "agent" : "gate");
		if (r->forged)
			cJSON_AddBoolToObject(o, "forged", 1);
		if (r->bar > 0)
			cJSON_AddNumberToObject(o, "bar", r->bar);
		if (r->problems[0])
			cJSON_AddStringToObject(o, "problems", r->problems);
		if (r->json)
			cJSON_AddItemToObject(o, "result", cJSON_Duplicate(r->json, 1));
		else
			bg_json_add_bytes(o, "raw", r->raw, strlen(r->raw));
		cli_print_json(o);
		cJSON_Delete(o);
		return;
	}
	const char *col = "", *end = v->color_err ? "\033[0m" : "";
	if (v->color_err)
		col = r->verdict == VERDICT_PASS_GATE ? "\033[1;32m" : "\033[1;31m";
	if (r->base.present && r->verdict != VERDICT_INVALID)
		cli_printf(stderr,
			   "boxgate: %s%s%s  slowCTA %.3f us (baseline %.3f us, ratio %.3f)  wall "
			   "%.3f us  sumCTA %.3f us  cos %.5f%s%s\n",
			   col, gate_verdict_name(r->verdict), end, r->cand.slowCTA_us,
			   r->base.slowCTA_us, r->base.slowCTA_us / r->cand.slowCTA_us,
			   r->cand.wall_us, r->cand.sumCTA_us, r->cand.cos,
			   r->problems[0] ? "  -- " : "", r->problems);
	else
		cli_printf(stderr, "boxgate: %s%s%s%s%s\n", col, gate_verdict_name(r->verdict), end,
			   r->problems[0] ? ": " : "", r->problems);
}

/* The slot when --gpu is not given. */
static char *default_gpus(remote_conn *c, const gate_args *ga)
{
	const conf_box *b = ga->box;
	if (b->gpus)
		return gate_args_first_gpu(b);
	if (b->transport != CONF_TRANSPORT_LOCAL)
		return NULL;
	/* The local box: GPU 0 when this machine has one, else a CPU slot. */
	char *out = NULL, *cmd = xasprintf("%s gpus", ga->agent.binary);
	bg_err err = {0};
	char *gpus = NULL;
	if (remote_capture(c, cmd, 65536, 30000, &out, NULL, NULL, &err) == 0 &&
	    strncmp(out, "gpu 0 ", 6) == 0)
		gpus = xstrdup("0");
	free(out);
	free(cmd);
	return gpus;
}

/* Appends the invocation's record; says where it went, or why it did not. */
static int record_run(const gate_args *ga, const char *path, const results_record_in *in)
{
	bg_err err = {0};
	cJSON *rec = results_record_build(in);
	int rc = results_append_json(path, rec, &err);
	cJSON_Delete(rec);
	if (rc < 0) {
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
	} else {
		cli_printf(stderr, "boxgate: %s: recorded in %s\n", ga->box->name, path);
	}
	return 0;
}

static int run_run(cli_ctx *ctx, void *opts_, const cli_args *args)
{
	const run_opts *opts = opts_;
	char *results = NULL;
	struct run_view view = {0};
	gate_args ga;
	remote_conn *c = NULL;
	char *cmdline = NULL;
	gate_agent_how how;
	gate_outcome out = {0};
	bg_err err = {0};
	char why[700];
	int code = gate_args_parse(ctx, &opts->g, args, &ga);
	if (code)
		goto out;
	if (opts->results && opts->no_results) {
		cli_error("run: --results and --no-results exclude each other");
		code = BG_EXIT_USAGE;
		goto out;
	}
	if (!opts->no_results && !(results = cli_results_path(ctx, opts->results))) {
		code = BG_EXIT_USAGE;
		goto out;
	}

	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	int rc = cli_connect(ga.box, false, &c, &err);
	if (rc == 0)
		rc = gate_agent_ensure(c, &ga.agent, false, &ga.agent_path, &how, &err);
	if (rc < 0) {
		cli_error("%s", err.msg);
		code = bg_exit_code(rc);
		goto out;
	}
	if (how == AGENT_UPLOADED || how == AGENT_COMPILED)
		cli_printf(stderr, "boxgate: %s: agent %s\n", ga.box->name,
			   gate_agent_how_name(how));
	if (!ga.spec.gpus)
		ga.spec.gpus = ga.gpus = default_gpus(c, &ga);
	ga.spec.agent = ga.agent_path;
	cmdline = gate_command_line(&ga.spec);
	gate_policy policy = GATE_POLICY_DEFAULT;
	policy.bar = ga.bar; /* 0 without --bar */
	view.ga = &ga;
	view.color_out = !ga.json && cli_color(stdout);
	view.color_err = !ga.json && cli_color(stderr);
	gate_callbacks cb = {print_line, print_result, &view};
	int64_t start_ms = results_now_ms();
	rc = gate_run(c, cmdline, &policy, &cb, &stop_requested, &out, &err);
	int64_t end_ms = results_now_ms();
	if (rc < 0)
		cli_error("%s", err.msg);
	bool said;
	code = gate_outcome_judge(&out, why, sizeof(why), &said);
	/* A judged result already said why; anything else is said here. */
	if (code && (!said || ga.json))
		cli_error("%s: %s", ga.box->name, why);
	if (results) {
		char run_id[17];
		results_new_run_id(run_id);
		bool local = ga.box->transport == CONF_TRANSPORT_LOCAL;
		results_record_in in = {
			.run_id = run_id,
			.seq = 0,
			.version = BOXGATE_VERSION,
			.box = ga.box->name,
			.host = local ? "localhost" : ga.box->hostname,
			.transport = local ? "local" : "ssh",
			.gpus = ga.spec.gpus,
			.command = cmdline,
			.gate_args = (const char *const *)args->v,
			.n_gate_args = args->n,
			.start_ms = start_ms,
			.end_ms = end_ms,
			.exit_code = code,
			.why = code ? why : "",
			.outcome = &out,
			.last = view.last.raw ? &view.last : NULL,
		};
		if (record_run(&ga, results, &in) && !code)
			code = BG_EXIT_FAIL;
	}
out:
	gate_result_release(&view.last);
	free(results);
	remote_close(c);
	free(cmdline);
	gate_args_release(&ga);
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
