/* The command-line front end: a table of subcommands (one cli/cmd_<verb>.c
 * each), shared option helpers and the only code that prints. */
#ifndef BG_CLI_H
#define BG_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "conf/conf.h"

typedef struct cli_ctx {
	const char *config_path; /* --config */
	conf conf;
	bool conf_loaded;
	bool color;    /* stdout is a terminal and NO_COLOR is unset */
	const char *argv0;
} cli_ctx;

typedef struct cli_cmd {
	const char *name;
	const char *summary; /* one line for `boxgate help` */
	const char *help;    /* the full --help text */
	int (*run)(cli_ctx *ctx, int argc, char **argv);
} cli_cmd;

extern const cli_cmd cli_cmd_exec, cli_cmd_check, cli_cmd_config, cli_cmd_help;
extern const cli_cmd cli_cmd_run, cli_cmd_explain, cli_cmd_bootstrap, cli_cmd_push, cli_cmd_status, cli_cmd_rollback;
extern const cli_cmd *const cli_commands[];

const cli_cmd *cli_find(const char *name);

/* "boxgate: ..." on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Loads the configuration once; prints the error and returns its exit code. */
int cli_load_conf(cli_ctx *ctx);
/* sync_verifier_for_fn over the configuration's [verify] rules (ctx: the conf). */
const char *cli_verifier_for(void *ctx, const char *rel, bool *builtin);
/* The interpreter of the built-in local box (sync_local_check). */
const char *cli_local_python(const conf *c);
/* sync_trace_cb: BOXGATE_TRACE's phase timings on stderr, through the locked writer. */
void cli_sync_trace(void *ctx, const char *box, const char *phase);
/* The remote_log_cb that prints warnings as "boxgate: BOX: msg". */
void cli_log_warning(void *ctx, const char *box, const char *msg);

/* Box selection from --boxes SPEC, --pool P, --all; *out owned (free()). */
int cli_select_boxes(cli_ctx *ctx, const char *spec, const char *pool, bool all,
		     const conf_box ***out, size_t *n);

/* Parses FLAG's value as whole seconds in [min, max] (base/parse.h); on bad
 * input prints "CMD: FLAG wants whole seconds from MIN to MAX, got 'V'" and
 * returns 2 (usage), else 0. */
int cli_parse_seconds(const char *cmd, const char *flag, const char *v, long min, long max,
		      int *out);

/* Prints a help text for a command and returns `code`. */
int cli_usage(const cli_cmd *cmd, FILE *to, int code);

/* Thread-safe output of one prefixed line: "PREFIX: LINE\n" (prefix may be
 * NULL). The bytes of the line pass unchanged. */
void cli_print_line(FILE *to, const char *prefix, const char *line, size_t len);
/* Prints one JSON object (cJSON, compact) as a line, thread-safe. */
struct cJSON;
void cli_print_json(struct cJSON *obj);

/* Folds box names into node sets: h1 h2 h3 h5 -> "h[1-3,5]". Owned. */
char *cli_fold_names(const char *const *names, size_t n);

#endif
