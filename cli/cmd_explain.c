/* boxgate explain: the exact remote command a run would use; runs nothing. */
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "base/xmalloc.h"
#include "cli/gate_args.h"
#include "shim/shim.h"

static const char explain_help[] =
	"usage: boxgate explain BOX [--gpu LIST] [--timeout S] -- GATE ARGS...\n"
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
	"  --json         the same as one JSON object per box\n";

static const char *route_name(shim_route r)
{
	switch (r) {
	case SHIM_PASS: return "pass";
	case SHIM_ENV: return "env";
	case SHIM_VALUE: return "value";
	}
	return "?";
}

static int explain_one(cli_ctx *ctx, void *opts, const cli_args *args)
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
	cli_printf(stdout, "box:     %s (%s, defined at %s:%d)\n", ga.box->name,
		   ga.box->transport == CONF_TRANSPORT_LOCAL ? "local" : ga.box->hostname,
		   ga.box->file, ga.box->line);
	cli_printf(stdout, "gate:    %s (in %s)\n", ga.entry, ga.box->repo ? ga.box->repo : ".");
	cli_printf(stdout, "slot:    %s%s\n", ga.spec.gpus ? "GPU " : "CPU",
		   ga.spec.gpus ? ga.spec.gpus
				: (ga.box->transport == CONF_TRANSPORT_LOCAL
					   ? " (GPU 0 if this machine has one)"
					   : ""));
	cli_printf(stdout, "timeout: %d s (grace %d s, heartbeat %d s)\n", ga.spec.timeout_s,
		   ga.spec.grace_s, ga.spec.heartbeat_s);
	cli_printf(stdout, "arguments:\n");
	for (size_t i = 0; i < ga.shim.n_words; i++) {
		const shim_word *w = &ga.shim.words[i];
		if (w->route == SHIM_ENV && w->rule)
			cli_printf(stdout, "  %-24s -> env %s   (%s:%d)\n", w->arg, w->env,
				   w->rule->file, w->rule->line);
		else if (w->route == SHIM_ENV)
			cli_printf(stdout, "  %-24s -> env %s\n", w->arg, w->env ? w->env : "");
		else
			cli_printf(stdout, "  %-24s -> %s\n", w->arg, route_name(w->route));
	}
	char *cmd = gate_command_line(&ga.spec);
	cli_printf(stdout, "remote command:\n  %s\n", cmd);
	cli_printf(stdout,
		   "agent stdin: 'nonce <random hex>' (new each run; the agent frames its own "
		   "lines with it),\n"
		   "  then 'hb' every %d s\n",
		   GATE_HEARTBEAT_MS / 1000);
	free(cmd);
	gate_args_release(&ga);
	return BG_EXIT_OK;
}

/* A worker-count sweep (--num-workers 8,64) is explained one count at a time,
 * as run invokes it. */
static int run_explain(cli_ctx *ctx, void *opts, const cli_args *args)
{
	gate_sweep sw;
	int code = gate_sweep_parse(ctx->cmd->name, args, &sw);
	if (code || sw.n < 2)
		return code ? code : explain_one(ctx, opts, args);
	for (size_t i = 0; i < sw.n && !code; i++) {
		cli_args one;
		char *word = NULL;
		gate_sweep_args(args, &sw, i, &one, &word);
		cli_printf(stdout, "%s-- num_workers %d (%zu of %zu in the sweep)\n", i ? "\n" : "",
			   sw.counts[i], i + 1, sw.n);
		code = explain_one(ctx, opts, &one);
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
