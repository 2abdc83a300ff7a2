/* The command-line front end: a table of subcommands (one cli/cmd_<verb>.c
 * each, each exporting a cli_cmd), the context they run in, and what they
 * share (cli/common.c). Its other parts have headers of their own, included
 * here for the commands: the option parser (cli/options.h), the one writer
 * (cli/output.h), box-name folding (cli/fold.h). */
#ifndef BG_CLI_H
#define BG_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cli/fold.h"
#include "cli/options.h"
#include "cli/output.h"
#include "conf/conf.h"
#include "remote/remote.h"

struct cli_cmd;

typedef struct cli_ctx {
	const struct cli_cmd *cmd; /* the command running */
	const char *config_path;   /* --config */
	conf conf;
	bool conf_loaded;
	cli_common opt; /* the shared options, as parsed (a box operand lands in opt.boxes) */
	const conf_box **boxes; /* CLI_NEEDS_BOXES: the selection (owned by main) */
	size_t n_boxes;
	char *spec_owned;    /* a selection built from operands */
	char *exclude_owned; /* every --exclude joined with ',' */
	const char *argv0;
} cli_ctx;

/* What main does before the handler runs. */
enum cli_needs {
	CLI_NEEDS_CONFIG = 1 << 0, /* the configuration is loaded */
	CLI_NEEDS_BOXES = 1 << 1   /* ctx->boxes holds the selection (implies CONFIG) */
};

/* Where a command's boxes may come from besides --boxes/--pool/--all. */
typedef enum cli_box_operand {
	CLI_BOX_FLAGS_ONLY,     /* only the flags */
	CLI_BOX_FIRST_OPERAND,  /* else the first operand (bootstrap) */
	CLI_BOX_FIRST_REQUIRED, /* else the first operand, which must be there (rollback) */
	CLI_BOX_ALL_OPERANDS,   /* the operands, else every box (check) */
	CLI_BOX_BEFORE_DASH     /* one BOX before "--", the gate's words after it (run) */
} cli_box_operand;

/* What a command takes after its options. */
typedef enum cli_arity {
	CLI_ARGS_ANY,     /* zero or more */
	CLI_ARGS_NONE,    /* none */
	CLI_ARGS_REQUIRED /* at least one; `args_missing` says what is missing */
} cli_arity;

/* An entry is written with related fields sharing a line, between
 * clang-format off/on: the formatter would give each field a line of its own. */
typedef struct cli_cmd {
	const char *name;
	const char *summary;    /* one line for `boxgate help` */
	bool hidden;            /* left out of `boxgate help` and completion (__complete) */
	const char *help;       /* the full --help text */
	const cli_opt *options; /* ends with CLI_OPT_END */
	cli_parse_order order;
	size_t opts_size; /* sizeof the handler's options struct (0: none) */
	unsigned needs;   /* enum cli_needs */
	cli_box_operand box_operand;
	cli_arity arity;
	const char *args_missing; /* "no files given (boxgate push --all PATH...)" */
	const char
		*unknown_hint; /* appended to option errors, e.g. " (gate flags go after '--')" */
	/* opts: the command's options struct, filled by the parser; args: the
	 * operands left (a box operand already taken). Returns an exit code. */
	int (*run)(cli_ctx *ctx, void *opts, const cli_args *args);
} cli_cmd;

extern const cli_cmd cli_cmd_exec, cli_cmd_check, cli_cmd_config, cli_cmd_help, cli_cmd_version;
extern const cli_cmd cli_cmd_run, cli_cmd_explain, cli_cmd_bootstrap, cli_cmd_push, cli_cmd_status,
	cli_cmd_campaign, cli_cmd_rollback, cli_cmd_results, cli_cmd_validate, cli_cmd_slots;
extern const cli_cmd cli_cmd_report, cli_cmd_brief, cli_cmd_init, cli_cmd_pull;
extern const cli_cmd cli_cmd_disconnect;
extern const cli_cmd cli_cmd_complete;
/* The table (cli/commands.c), NULL-terminated, in `boxgate help` order. */
extern const cli_cmd *const cli_commands[];

/* The entry named `name`, NULL if none. */
const cli_cmd *cli_find(const char *name);
/* "unknown command 'exce' (did you mean 'exec'?)" on stderr; returns BG_EXIT_USAGE. */
int cli_unknown_command(const char *name);
/* "CMD: unknown subcommand 'WORD' (did you mean 'S'?)" over `subs`, else a
 * pointer to 'boxgate help CMD'; returns BG_EXIT_USAGE. */
int cli_unknown_subcommand(const char *cmd, const char *word, const char *const *subs, size_t n);
/* An option before the command that is none of boxgate's own: says which
 * command takes it, or the closest global option; returns BG_EXIT_USAGE. */
int cli_unknown_global_option(const char *word);
/* "boxgate VERSION" on stdout; returns 0. */
int cli_print_version(void);
/* The top-level help with the command list; returns `code`. */
int cli_main_help(FILE *to, int code);

/* Parses argv (argv[0] the command's name) into ctx->opt and opts, takes the
 * box operand and checks the arity; prints the error and returns its exit
 * code, else 0. args->v is owned (free()). */
int cli_parse_command(const cli_cmd *cmd, cli_ctx *ctx, void *opts, int argc, char **argv,
		      cli_args *args);
/* Every --exclude/-x joined into one spec (owned by ctx), NULL when none. */
const char *cli_exclude_spec(cli_ctx *ctx);
/* Does what cmd->needs asks: loads the configuration, selects the boxes. */
int cli_satisfy_needs(const cli_cmd *cmd, cli_ctx *ctx);

/* Loads the configuration once; prints the error and returns its exit code. */
int cli_load_conf(cli_ctx *ctx);
/* With BOXGATE_TRACE: the connection's round trips, on stderr through the locked writer. */
void cli_trace_round_trips(const char *box, const remote_conn *c);
/* SIGINT, SIGTERM and SIGHUP go to `handler` (a gate run turns them into a
 * clean remote kill). */
void cli_catch_stop_signals(void (*handler)(int));
/* remote_connect to box with its warnings printed through cli_log_warning. */
int cli_connect(const conf_box *box, bool accept_new, remote_conn **c, bg_err *err);
/* cli_connect through the box's connection master when it has one, leaving
 * one behind otherwise (control_persist_s; remote/master.h). */
int cli_connect_warm(const conf_box *box, bool accept_new, remote_conn **c, bg_err *err);
/* What the engine (pool/, campaign/) connects with: --accept-new, and warnings
 * printed through cli_log_warning. */
remote_connect_opts cli_link(const cli_ctx *ctx);
/* cli_link through the boxes' connection masters (cli_connect_warm). */
remote_connect_opts cli_link_warm(const cli_ctx *ctx);
/* The sync_target view (sync/sync.h) of conf_box *B, its strings borrowed. */
#define CLI_SYNC_TARGET(b)                                                                         \
	{                                                                                          \
		.name = (b)->name, .repo = (b)->repo, .python = (b)->python,                       \
		.connect = &(b)->target                                                            \
	}

/* After the link to a Slurm box was lost mid-run: cancels the step `cmdline`
 * began (remote_slurm_cancel_lost) and says on stderr what happened. False
 * when cmdline started no Slurm step. */
bool cli_slurm_cancel(const conf_box *box, const char *cmdline, bool accept_new);

/* conf_results_path with $XDG_DATA_HOME and $HOME, the error printed; loads
 * the configuration when it is needed and not loaded yet. */
char *cli_results_path(cli_ctx *ctx, const char *given);

/* Prints a help text for a command and returns `code`. */
int cli_usage(const cli_cmd *cmd, FILE *to, int code);

/* run --pull: fetches the files the patterns `globs` match in the box's repo
 * through `c` into DIR/pulled/RUN_ID-SEQ (DIR: the results file's
 * directory), says how many on stderr and warns about each one not pulled.
 * Returns the files pulled, [{path, local, size, sha256}] (owned), NULL when
 * no pattern was given. */
struct cJSON *cli_run_pull(remote_conn *c, const conf_box *box, const cli_list *globs,
			   const char *results, const char *run_id, int seq);

/* True for an agent note about the box itself ("no GPU check: ...") that
 * this process already printed once: a run's repeats and sweep points each
 * start an agent that says it again. */
bool cli_repeated_note(const char *line, size_t len);

#endif
