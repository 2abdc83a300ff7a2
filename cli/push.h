/* What `boxgate push` (cli/cmd_push.c) prints around its pipeline
 * (cli/push.c). */
#ifndef BG_CLI_PUSH_H
#define BG_CLI_PUSH_H

#include "cli/cli.h"
#include "sync/sync.h"

typedef struct cli_push_opts {
	sync_opts sync; /* --dry-run, --all-or-nothing, --keep-mode, the seconds land here */
	bool no_local_check;
} cli_push_opts;

/* Runs push's pipeline on ctx->boxes with the files `args` names; returns
 * push's exit code. */
int cli_push_run(cli_ctx *ctx, cli_push_opts *po, const cli_args *args);

#endif
