/* push, status and rollback share one pipeline: build the plan from the
 * operands, fan out over the selected boxes, act on and report each box,
 * print a summary, clean up. Each command brings its flags and callbacks. */
#ifndef BG_CLI_SYNC_DRIVER_H
#define BG_CLI_SYNC_DRIVER_H

#include <pthread.h>

#include "cli/cli.h"
#include "sync/job.h"
#include "sync/sync.h"

/* The options push, status and rollback all take (their tables start with it). */
#define CLI_SYNC_OPTIONS                                                                           \
	CLI_OPT_SELECT, CLI_OPT_ROOT, CLI_OPT_JSON, CLI_OPT_ACCEPT_NEW, CLI_OPT_NO_FOLD

typedef struct cli_sync_job cli_sync_job;

/* Written like a cli_cmd entry: callbacks share lines, clang-format off. */
typedef struct cli_sync_cmd {
	unsigned add_flags; /* sync_plan_add flags */
	/* Before the fan-out (push: local checks, progress). Optional. */
	void (*start)(cli_sync_job *job);
	/* On a fan-out thread: act on box i; reports through cli_sync_report.
	 * Optional (push runs its whole pipeline in `after`). */
	void (*box)(cli_sync_job *job, sync_box *b);
	/* One box's results; called with job->mu held. */
	void (*report)(cli_sync_job *job, const sync_box *b);
	/* After the fan-out: later phases. A nonzero return is the exit code
	 * and skips the summary (push: a local check refused). Optional. */
	int (*after)(cli_sync_job *job);
	/* The closing lines; `code` merges the boxes', cnt counts the files'
	 * states. Returns the exit code. */
	int (*summary)(cli_sync_job *job, int code, const size_t *cnt);
} cli_sync_cmd;

struct cli_sync_job {
	cli_ctx *ctx;
	const cli_sync_cmd *cmd;
	sync_plan plan;
	sync_opts *opts;
	/* the boxes (run.boxes, one per selected box) acted on, their reports
	 * serialised by run.mu (and push's progress display) */
	sync_job run;
	size_t n;
	bool json;
	/* The per-box lines, printed folded in box-name order once every box
	 * is done (before the verifier output and the summary). */
	cli_folder fold;
	void *state; /* the command's own */
};

/* Runs the pipeline on ctx->boxes with the plan from args; opts gets the
 * shared settings (conf, log, accept_new). Returns the exit code. */
int cli_sync_run(cli_ctx *ctx, const cli_sync_cmd *cmd, sync_opts *opts, const cli_args *args,
		 void *state);

/* Reports box b under job->mu, once its plan's hashes are done. */
void cli_sync_report(cli_sync_job *job, const sync_box *b);

/* What push and rollback report per file: a line per file (into job->fold),
 * or JSON; a failed file as an error ("BOX: PATH: NOT_DONE"). The verifier's
 * output waits for cli_sync_print_verify_output (JSON: in the file's
 * object). */
void cli_sync_report_files(cli_sync_job *job, const sync_box *b, const char *not_done);

/* Once every box has reported: each refused file's verifier output, one
 * block per distinct text headed by its box set ("h[1-3]"), in box-name
 * order. The pipeline calls it before the summary. */
void cli_sync_print_verify_output(cli_sync_job *job);

/* Box b's files as JSON, one object per line on stdout (sync_file_json). */
void cli_sync_print_json(const sync_box *b);

/* A verifier's output on stderr, indented, each line led by `set` (the boxes
 * that printed it, or "local"); at most 200 lines. */
void cli_sync_print_output(const char *set, const char *s);

/* The boxes in box-name order (h2 before h10): an owned array of borrowed
 * boxes. */
const sync_box **cli_sync_by_name(const cli_sync_job *job);

/* Calls fn on every box concurrently. */
void cli_sync_each(cli_sync_job *job, void (*fn)(cli_sync_job *job, sync_box *b));

/* Reports every box (cli_sync_report) in box-name order: for commands that
 * report once all boxes are done (status, rollback), so two runs over the
 * same boxes read the same whatever order the boxes answered in. */
void cli_sync_report_in_order(cli_sync_job *job);

#endif
