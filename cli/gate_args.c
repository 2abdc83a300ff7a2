/* A gate's command line shared by run, explain, validate and campaign: the
 * options table and the invocation's refusals printed (cli/gate_args.h). */
#include "cli/gate_args.h"

#include "base/exit.h"

const cli_opt gate_options[] = {
	GATE_OPT_ROWS(gate_opts, ),
	CLI_OPT_END,
};

gate_args_in cli_gate_args_in(const cli_ctx *ctx, const gate_opts *opts)
{
	return (gate_args_in){
		.cmd = ctx->cmd->name,
		.box = ctx->opt.boxes,
		.gpu = opts->gpu,
		.bar = opts->bar,
		.timeout_s = opts->timeout_s,
		.holder = opts->holder,
		.json = ctx->opt.json,
	};
}

int gate_args_parse(cli_ctx *ctx, const gate_opts *opts, const cli_args *args, gate_args *ga)
{
	bg_err err = {0};
	gate_args_in in = cli_gate_args_in(ctx, opts);
	int rc = gate_args_build(&ctx->conf, &in, args->v, args->n, ga, &err);
	if (rc == 0)
		return BG_EXIT_OK;
	cli_error("%s", err.msg);
	return rc == BG_EUSAGE ? BG_EXIT_USAGE : BG_EXIT_FAIL;
}

int gate_sweep_parse(const char *cmd, const cli_args *args, gate_sweep *sw)
{
	bg_err err = {0};
	if (gate_sweep_read(cmd, args->v, args->n, sw, &err) == 0)
		return BG_EXIT_OK;
	cli_error("%s", err.msg);
	return BG_EXIT_USAGE;
}

void gate_sweep_args(const cli_args *args, const gate_sweep *sw, size_t i, cli_args *out,
		     char **word)
{
	*out = *args;
	out->v = gate_sweep_words(args->v, args->n, sw, i, word);
}
