/* boxgate explain: the exact remote command a run would use; runs nothing. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "base/xmalloc.h"
#include "cli/gate_args.h"
#include "shim/shim.h"

static const char explain_help[] =
	"usage: boxgate explain BOX [--gpu LIST] [--timeout S] [--json] -- GATE ARGS...\n"
	"\n"
	"Prints where each gate argument goes (passed to the entry point, turned into an\n"
	"environment variable by an env rule, or a flag's value) and the exact command line\n"
	"'boxgate run' would start on the box. Connects to nothing; a flag the box would\n"
	"refuse, a --gpu outside the box's gpus or a bad seconds value is refused here too\n"
	"(exit 2).\n"
	"\n"
	"  --gpu LIST     slot GPUs, as for run\n"
	"  --timeout S    watchdog timeout, as for run\n"
	"  --bar R        the slowCTA ratio needed to pass, as for run\n"
	"  --json         one JSON object (one per count of a --num-workers sweep): box,\n"
	"                 transport, hostname, defined_in and defined_at_line (null:\n"
	"                 built in), gate, cwd, slot (gpu or cpu), gpus, gpu_if_found\n"
	"                 (the local box takes GPU 0 when it has one), timeout_s,\n"
	"                 grace_s, heartbeat_s, heartbeat_every_s, sweep, arguments\n"
	"                 (each with its route: pass, env or value; env, rule_file and\n"
	"                 rule_line for env), flags (what the entry point is given), env\n"
	"                 (what it gets as environment), agent and remote_command\n";

static const char *route_name(shim_route r)
{
	switch (r) {
	case SHIM_PASS: return "pass";
	case SHIM_ENV: return "env";
	case SHIM_VALUE: return "value";
	}
	return "?";
}

/* Where a sweep's count stands (explain runs one count at a time); n = 0
 * without a sweep. */
struct sweep_at {
	size_t i, n;
	int count;
};

static cJSON *words_json(const char *const *v, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
	return a;
}

/* What the human text says, as one object: run's plan for the box. */
static void print_json(const gate_args *ga, const char *cmd, const struct sweep_at *sw)
{
	const conf_box *b = ga->box;
	bool local = b->transport == CONF_TRANSPORT_LOCAL;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "box", b->name);
	cJSON_AddStringToObject(o, "transport", local ? "local" : "ssh");
	if (local)
		cJSON_AddNullToObject(o, "hostname");
	else
		cJSON_AddStringToObject(o, "hostname", b->hostname);
	/* The built-in local box is defined in no file (line 0). */
	if (b->file && b->line > 0) {
		cJSON_AddStringToObject(o, "defined_in", b->file);
		cJSON_AddNumberToObject(o, "defined_at_line", b->line);
	} else {
		cJSON_AddNullToObject(o, "defined_in");
		cJSON_AddNullToObject(o, "defined_at_line");
	}
	cJSON_AddStringToObject(o, "gate", ga->entry);
	cJSON_AddStringToObject(o, "cwd", b->repo ? b->repo : ".");
	cJSON_AddStringToObject(o, "slot", ga->spec.gpus ? "gpu" : "cpu");
	if (ga->spec.gpus)
		cJSON_AddStringToObject(o, "gpus", ga->spec.gpus);
	else
		cJSON_AddNullToObject(o, "gpus");
	/* The local box takes GPU 0 when the machine turns out to have one. */
	cJSON_AddBoolToObject(o, "gpu_if_found", !ga->spec.gpus && local);
	cJSON_AddNumberToObject(o, "timeout_s", ga->spec.timeout_s);
	cJSON_AddNumberToObject(o, "grace_s", ga->spec.grace_ms / 1000.0);
	cJSON_AddNumberToObject(o, "heartbeat_s", ga->spec.heartbeat_ms / 1000.0);
	cJSON_AddNumberToObject(o, "heartbeat_every_s",
				GATE_HEARTBEAT_EVERY_MS(ga->spec.heartbeat_ms) / 1000.0);
	if (sw->n) {
		cJSON *s = cJSON_AddObjectToObject(o, "sweep");
		cJSON_AddNumberToObject(s, "num_workers", sw->count);
		cJSON_AddNumberToObject(s, "index", (double)(sw->i + 1));
		cJSON_AddNumberToObject(s, "of", (double)sw->n);
	}
	cJSON *args = cJSON_AddArrayToObject(o, "arguments");
	for (size_t i = 0; i < ga->shim.n_words; i++) {
		const shim_word *w = &ga->shim.words[i];
		cJSON *a = cJSON_CreateObject();
		cJSON_AddStringToObject(a, "arg", w->arg);
		cJSON_AddStringToObject(a, "route", route_name(w->route));
		if (w->route == SHIM_ENV && w->env)
			cJSON_AddStringToObject(a, "env", w->env);
		if (w->route == SHIM_ENV && w->rule) {
			cJSON_AddStringToObject(a, "rule_file", w->rule->file);
			cJSON_AddNumberToObject(a, "rule_line", w->rule->line);
		}
		cJSON_AddItemToArray(args, a);
	}
	cJSON_AddItemToObject(o, "flags",
			      words_json((const char *const *)ga->shim.argv, ga->shim.n_argv));
	cJSON_AddItemToObject(o, "env",
			      words_json((const char *const *)ga->shim.env, ga->shim.n_env));
	cJSON_AddStringToObject(o, "agent", ga->spec.agent);
	cJSON_AddStringToObject(o, "remote_command", cmd);
	cli_print_json(o);
	cJSON_Delete(o);
}

static void print_text(const gate_args *ga, const char *cmd)
{
	cli_printf(stdout, "box:     %s (%s, defined at %s:%d)\n", ga->box->name,
		   ga->box->transport == CONF_TRANSPORT_LOCAL ? "local" : ga->box->hostname,
		   ga->box->file, ga->box->line);
	cli_printf(stdout, "gate:    %s (in %s)\n", ga->entry, ga->box->repo ? ga->box->repo : ".");
	cli_printf(stdout, "slot:    %s%s\n", ga->spec.gpus ? "GPU " : "CPU",
		   ga->spec.gpus ? ga->spec.gpus
				 : (ga->box->transport == CONF_TRANSPORT_LOCAL
					    ? " (GPU 0 if this machine has one)"
					    : ""));
	cli_printf(stdout, "timeout: %d s (grace %g s, heartbeat %g s)\n", ga->spec.timeout_s,
		   ga->spec.grace_ms / 1000.0, ga->spec.heartbeat_ms / 1000.0);
	cli_printf(stdout, "arguments:\n");
	for (size_t i = 0; i < ga->shim.n_words; i++) {
		const shim_word *w = &ga->shim.words[i];
		if (w->route == SHIM_ENV && w->rule)
			cli_printf(stdout, "  %-24s -> env %s   (%s:%d)\n", w->arg, w->env,
				   w->rule->file, w->rule->line);
		else if (w->route == SHIM_ENV)
			cli_printf(stdout, "  %-24s -> env %s\n", w->arg, w->env ? w->env : "");
		else
			cli_printf(stdout, "  %-24s -> %s\n", w->arg, route_name(w->route));
	}
	cli_printf(stdout, "remote command:\n  %s\n", cmd);
	cli_printf(stdout,
		   "agent stdin: 'nonce <random hex>' (new each run; the agent frames its own "
		   "lines with it),\n"
		   "  then 'hb' every %g s\n",
		   GATE_HEARTBEAT_EVERY_MS(ga->spec.heartbeat_ms) / 1000.0);
}

static int explain_one(cli_ctx *ctx, void *opts, const cli_args *args, const struct sweep_at *sw)
{
	gate_args ga;
	int code = gate_args_parse(ctx, opts, args, &ga);
	if (code) {
		gate_args_release(&ga);
		return code;
	}
	char rel[128];
	strbuf q = STRBUF_INIT;
	if (ga.box->transport == CONF_TRANSPORT_LOCAL) {
		bg_quote(&q, ga.agent.binary);
	} else {
		snprintf(rel, sizeof(rel), "~/.cache/boxgate/agent-%.16s", ga.agent.sha);
		bg_quote_path(&q, rel);
	}
	ga.spec.agent = ga.agent_path = strbuf_detach(&q);
	if (!ga.spec.gpus)
		ga.spec.gpus = ga.gpus = gate_args_first_gpu(ga.box);
	char *cmd = gate_command_line(&ga.spec);
	if (ga.json) {
		print_json(&ga, cmd, sw);
	} else {
		if (sw->n)
			cli_printf(stdout, "%s-- num_workers %d (%zu of %zu in the sweep)\n",
				   sw->i ? "\n" : "", sw->count, sw->i + 1, sw->n);
		print_text(&ga, cmd);
	}
	free(cmd);
	gate_args_release(&ga);
	return BG_EXIT_OK;
}

/* A worker-count sweep (--num-workers 8,64) is explained one count at a time,
 * as run invokes it. */
static int run_explain(cli_ctx *ctx, void *opts, const cli_args *args)
{
	gate_sweep sw;
	struct sweep_at at = {0};
	int code = gate_sweep_parse(ctx->cmd->name, args, &sw);
	if (code || sw.n < 2)
		return code ? code : explain_one(ctx, opts, args, &at);
	for (size_t i = 0; i < sw.n && !code; i++) {
		cli_args one;
		char *word = NULL;
		gate_sweep_args(args, &sw, i, &one, &word);
		at = (struct sweep_at){i, sw.n, sw.counts[i]};
		code = explain_one(ctx, opts, &one, &at);
		free(one.v);
		free(word);
	}
	return code;
}

/* clang-format off */
const cli_cmd cli_cmd_explain = {
	.name = "explain",
	.summary = "show the exact remote command of a run, and which flag went where",
	.help = explain_help, GATE_CMD_SYNTAX, .run = run_explain,
};
/* clang-format on */
