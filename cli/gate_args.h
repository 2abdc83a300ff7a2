/* What `run` and `explain` share: BOX [options] -- GATE ARGS, the shim
 * translation and the gate spec. */
#ifndef BG_CLI_GATE_ARGS_H
#define BG_CLI_GATE_ARGS_H

#include "cli/cli.h"
#include "gate/client/agent_install.h"
#include "gate/client/run.h"

/* The options run and explain share (their table is gate_options). */
typedef struct gate_opts {
	const char *gpu;    /* --gpu LIST */
	const char *bar;    /* --bar R */
	int timeout_s;      /* --timeout S */
	const char *holder; /* --holder TAG (run): names the holder in the slot's lock */
} gate_opts;

extern const cli_opt gate_options[];

#define GATE_SECONDS_MAX (7 * 86400)
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

typedef struct gate_args {
	const conf_box *box;
	const char *gpu_opt; /* --gpu, as given */
	char *gpus; /* --gpu checked against the box's gpus ("0,1"), else the default (owned) */
	char *agent_path; /* the agent on the box, quoted, once the command knows it (owned) */
	int timeout_s;    /* --timeout, else MPK_GATE_TIMEOUT_S from the shim, else the box's */
	bool json;
	double bar; /* --bar, 0 = default */
	shim_result shim;
	gate_agent agent;
	char *entry; /* owned */
	char *tag;   /* owned */
	gate_spec spec;
} gate_args;

/* Resolves BOX (ctx->opt.boxes, the configuration loaded) and translates the
 * gate's arguments (args: the words after "--"); prints errors and returns an
 * exit code (0 = ok). Nothing connects: a refused flag is reported before any
 * network use. */
int gate_args_parse(cli_ctx *ctx, const gate_opts *opts, const cli_args *args, gate_args *ga);
void gate_args_release(gate_args *ga);
/* The first GPU of the box's gpus ("3" of "3,5"), owned; NULL when it names none. */
char *gate_args_first_gpu(const conf_box *b);
/* The slot when --gpu is not given (owned, NULL for a CPU slot): the box's first
 * GPU; on the local box GPU 0 when the agent finds one here, else a CPU slot. */
char *gate_args_default_gpus(remote_conn *c, const gate_args *ga);

/* A worker-count sweep: `--num-workers 8,64,68` (or --num-workers=LIST) among
 * the gate's arguments runs one invocation per count. */
#define GATE_SWEEP_MAX 64
typedef struct gate_sweep {
	int counts[GATE_SWEEP_MAX];
	size_t n;    /* 0: no --num-workers (or no value after it) */
	size_t at;   /* the index of the word holding the value */
	bool equals; /* that word is "--num-workers=LIST" */
} gate_sweep;

/* Finds the last --num-workers of `args` and checks its value: whole numbers
 * 1..GATE_WORKERS_MAX, comma-separated, no duplicates. Prints the refusal
 * (naming the value) and returns BG_EXIT_USAGE when it is bad. */
int gate_sweep_parse(const char *cmd, const cli_args *args, gate_sweep *sw);
/* `args` with the sweep's value replaced by counts[i] (owned: free out->v and
 * *word). */
void gate_sweep_args(const cli_args *args, const gate_sweep *sw, size_t i, cli_args *out,
		     char **word);

#endif
