/* What `run`, `explain`, `validate` and `campaign` share of a gate's command
 * line: the options (--gpu, --timeout, --bar) and BOX [options] -- GATE ARGS
 * turned into a gate invocation (measure/gate_args.h), its refusals printed. */
#ifndef BG_CLI_GATE_ARGS_H
#define BG_CLI_GATE_ARGS_H

#include "cli/cli.h"
#include "measure/gate_args.h"

/* The options run and explain share (their table is gate_options). */
typedef struct gate_opts {
	const char *gpu;    /* --gpu LIST */
	const char *bar;    /* --bar R */
	int timeout_s;      /* --timeout S */
	const char *holder; /* --holder TAG (run): names the holder in the slot's lock */
} gate_opts;

extern const cli_opt gate_options[];

/* The rows of gate_options, for a command whose options struct TYPE holds a
 * gate_opts at MEMBER ("g." for a member g; empty for a gate_opts itself). */
/* clang-format off */
#define GATE_OPT_ROWS(type, member) \
	CLI_OPT_STRING("gpu", type, member gpu), \
	CLI_OPT_SECONDS("timeout", type, member timeout_s, 1, GATE_SECONDS_MAX), \
	CLI_OPT_STRING("bar", type, member bar), \
	CLI_OPT_JSON
/* clang-format on */

/* The command line run and explain share: BOX [options] -- GATE ARGS. */
#define GATE_CMD_SYNTAX                                                                            \
	.options = gate_options, .opts_size = sizeof(gate_opts), .needs = CLI_NEEDS_CONFIG,        \
	.box_operand = CLI_BOX_BEFORE_DASH, .unknown_hint = " (gate flags go after '--')"

/* What the command was given, for gate_args_build: its name, BOX
 * (ctx->opt.boxes), --json and `opts`. */
gate_args_in cli_gate_args_in(const cli_ctx *ctx, const gate_opts *opts);

/* gate_args_build on BOX and the words after "--" (args); prints the refusal
 * and returns an exit code (0 = ok). Nothing connects: a refused flag is
 * reported before any network use. */
int gate_args_parse(cli_ctx *ctx, const gate_opts *opts, const cli_args *args, gate_args *ga);

/* gate_sweep_read over args; prints the refusal and returns BG_EXIT_USAGE
 * when the value is bad. */
int gate_sweep_parse(const char *cmd, const cli_args *args, gate_sweep *sw);
/* `args` with the sweep's value replaced by counts[i] (owned: free out->v and
 * *word). */
void gate_sweep_args(const cli_args *args, const gate_sweep *sw, size_t i, cli_args *out,
		     char **word);

#endif
