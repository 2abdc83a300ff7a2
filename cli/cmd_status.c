/* boxgate status: drift between the local files and the boxes' repo copies. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "cli/sync_driver.h"

static const char status_help[] =
	"usage: boxgate status [--boxes SPEC | --pool POOL | --all] [--exclude SPEC]\n"
	"                      [--root DIR] [--json]\n"
	"                      [--no-clean] [--exit-code] [--accept-new] [--] "
	"[PATH|LOCAL=REMOTE...]\n"
	"\n"
	"Compares local files with the selected boxes' repo copies, one round trip per box:\n"
	"per file and box 'same', 'differs', 'missing' (not on the box) or 'no local file',\n"
	"whether a .bak is present, and temporary files left by interrupted pushes (removed,\n"
	"unless --no-clean or a push is running on the box). Paths work as for push. Without\n"
	"paths, every file under the box's repo that has a .bak or a boxgate temporary file\n"
	"beside it is checked (the files boxgate, or a person keeping .bak copies, pushed).\n"
	"\n"
	"  --boxes SPEC   names, node sets (h[1-8]!h3: all but h3) and @pool, comma\n"
	"                 separated; -w SPEC; repeatable\n"
	"  --exclude SPEC leave these boxes out (-x SPEC; repeatable)\n"
	"  --pool POOL    every box of a pool\n"
	"  --all          every configured box\n"
	"  --root DIR     the local repo root (default: the directory of boxgate.ini)\n"
	"  --json         one JSON object per file and box, then a summary object\n"
	"  --no-clean     leave stale temporary files where they are\n"
	"  --exit-code    exit 1 when any file differs or is missing\n"
	"  --accept-new   record unknown host keys\n"
	"\n"
	"Exit: 0 (drift is reported, not an error, unless --exit-code); 3 when a box could not\n"
	"be reached; 2 for bad usage or paths; 1 for other failures.\n";

struct status_opts {
	bool no_clean, exit_code;
};

static const cli_opt status_options[] = {
	CLI_SYNC_OPTIONS,
	CLI_OPT_FLAG("no-clean", struct status_opts, no_clean),
	CLI_OPT_FLAG("exit-code", struct status_opts, exit_code),
	CLI_OPT_END,
};

static void report_box(cli_sync_job *job, const sync_box *b)
{
	if (b->rc < 0 && !job->json)
		cli_error("%s", b->err.msg);
	if (b->rc < 0 && job->json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "box", b->box->name);
		cJSON_AddStringToObject(o, "event", "error");
		cJSON_AddStringToObject(o, "error", b->err.msg);
		cli_print_json(o);
		cJSON_Delete(o);
	}
	for (size_t i = 0; b->rc == 0 && i < b->plan->n; i++) {
		if (job->json) {
			cJSON *o = sync_file_json(b, i);
			cli_print_json(o);
			cJSON_Delete(o);
			continue;
		}
		char *line = sync_file_describe(b, i);
		cli_print_line(stdout, b->box->name, line, strlen(line));
		free(line);
	}
	if (b->rc == 0 && b->plan->n == 0 && !job->json) {
		const char *none = "no file with a .bak or a temporary file under the repo";
		cli_print_line(stdout, b->box->name, none, strlen(none));
	}
}

static void status_one(cli_sync_job *job, sync_box *b)
{
	sync_status_box(b);
	sync_box_disconnect(b);
	cli_sync_report(job, b);
}

static int summarise(cli_sync_job *job, int code, const size_t *cnt)
{
	const struct status_opts *so = job->state;
	if (so->exit_code && (cnt[SYNC_DIFFERS] || cnt[SYNC_MISSING]))
		code = bg_exit_merge(code, BG_EXIT_FAIL);
	if (job->json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "event", "summary");
		cJSON_AddNumberToObject(o, "boxes", (double)job->n);
		for (int s = SYNC_SAME; s < SYNC_STATE_COUNT; s++)
			cJSON_AddNumberToObject(o, sync_state_name((sync_state)s), (double)cnt[s]);
		cJSON_AddNumberToObject(o, "exit", code);
		cli_print_json(o);
		cJSON_Delete(o);
		return code;
	}
	cli_printf(
		stdout,
		"status: %zu box%s: %zu same, %zu differ, %zu missing, %zu without a local file\n",
		job->n, job->n == 1 ? "" : "es", cnt[SYNC_SAME], cnt[SYNC_DIFFERS],
		cnt[SYNC_MISSING], cnt[SYNC_NO_LOCAL]);
	return code;
}

/* clang-format off */
static const cli_sync_cmd status_sync = {
	.add_flags = SYNC_ADD_NEED_LOCAL, .box = status_one, .report = report_box,
	.summary = summarise,
};
/* clang-format on */

static int run_status(cli_ctx *ctx, void *opts, const cli_args *args)
{
	struct status_opts *so = opts;
	sync_opts sync = {.clean = !so->no_clean};
	return cli_sync_run(ctx, &status_sync, &sync, args, so);
}

/* clang-format off */
const cli_cmd cli_cmd_status = {
	.name = "status", .summary = "show which boxes' files differ from the local ones (drift)",
	.help = status_help, .options = status_options, .opts_size = sizeof(struct status_opts),
	.needs = CLI_NEEDS_BOXES, .run = run_status,
};
/* clang-format on */
