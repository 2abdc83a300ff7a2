/* boxgate rollback: put a target's .bak back in place, verified like a push. */
#include <cjson/cJSON.h>
#include "cli/sync_driver.h"

static const char rollback_help[] =
	"usage: boxgate rollback [--boxes SPEC | --pool POOL | --all | BOX] [--exclude SPEC]\n"
	"                        [--dry-run] [--force] [--root DIR]\n"
	"                        [--json] [--verify-timeout S] [--accept-new] [--] PATH...\n"
	"\n"
	"Puts TARGET.bak back in place on the selected boxes: the .bak is checked with the\n"
	"target's verifier on the box first (a refused .bak leaves the box as it was), then a\n"
	"copy of it is renamed over the target (atomic); TARGET.bak stays. Rollback never\n"
	"destroys what it cannot get back: a target changed on the box since push placed it\n"
	"(status says \"changed on the box since push\") is refused, naming it, unless --force,\n"
	"which first keeps that version as TARGET.boxgate-rollback-<UTC time>. The version push\n"
	"placed is dropped (push it again to restore it). A second rollback finds the target\n"
	"already equal to its .bak and does nothing (already rolled back): it never swaps\n"
	"back. Without --boxes, --pool or --all, the first argument\n"
	"names the boxes (a name, node set or @pool; -w SPEC is --boxes, -x SPEC --exclude).\n"
	"PATH names the target as for push (the local file need not exist; LOCAL=REMOTE\n"
	"uses REMOTE). A file push created has no TARGET.bak: rollback leaves it as it is\n"
	"and says so (exit 1); it never removes a file. Boxes are reported in name order\n"
	"(h2 before h10) once all are done.\n"
	"\n"
	"  --dry-run           show what would be rolled back; write nothing\n"
	"  --force             roll back over a target changed on the box since push, keeping\n"
	"                      that version as TARGET.boxgate-rollback-<UTC time>\n"
	"  --root DIR          the local repo root (default: the directory of boxgate.ini)\n"
	"  --no-fold           one line per box and file, not folded node sets (h[1-8]: ...)\n"
	"  --json              one JSON object per file and box (state: rolled_back,\n"
	"                      would_roll_back, already_rolled_back or failed), then a summary\n"
	"                      object (dry_run, already_rolled_back,\n"
	"                      rolled_back or would_roll_back, failed, exit)\n"
	"  --verify-timeout S  give up on a box's verify step after S seconds (default 300)\n"
	"  --accept-new        record unknown host keys\n"
	"\n"
	"Exit: 0 when every file was rolled back (or already was); 4 when a verifier refused a\n"
	".bak; 3 when a box could not be reached; 2 for bad usage; 1 for other failures (no .bak\n"
	"on the box, a target changed on the box without --force).\n";

struct rollback_opts {
	sync_opts sync; /* --dry-run, --verify-timeout land here */
};

static const cli_opt rollback_options[] = {
	CLI_SYNC_OPTIONS,
	CLI_OPT_FLAG("dry-run", struct rollback_opts, sync.dry_run),
	CLI_OPT_FLAG("force", struct rollback_opts, sync.force),
	CLI_OPT_SECONDS("verify-timeout", struct rollback_opts, sync.verify_timeout_s, 0, 86400),
	CLI_OPT_END,
};

static void report_box(cli_sync_job *job, const sync_box *b)
{
	cli_sync_report_files(job, b, "not rolled back");
}

/* Reported later, with the others, in box-name order. */
static void rollback_one(cli_sync_job *job, sync_box *b)
{
	(void)job;
	sync_rollback_box(b);
	sync_box_disconnect(b);
}

static int summarise(cli_sync_job *job, int code, const size_t *cnt)
{
	bool dry = job->opts->dry_run;
	if (job->json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "event", "summary");
		cJSON_AddNumberToObject(o, "boxes", (double)job->n);
		cJSON_AddBoolToObject(o, "dry_run", dry);
		cJSON_AddNumberToObject(
			o, sync_state_key(dry ? SYNC_WOULD_ROLL_BACK : SYNC_ROLLED_BACK),
			(double)cnt[dry ? SYNC_WOULD_ROLL_BACK : SYNC_ROLLED_BACK]);
		cJSON_AddNumberToObject(o, sync_state_key(SYNC_ALREADY_ROLLED_BACK),
					(double)cnt[SYNC_ALREADY_ROLLED_BACK]);
		cJSON_AddNumberToObject(o, "failed",
					(double)(cnt[SYNC_FAILED] + cnt[SYNC_VERIFY_FAILED]));
		cJSON_AddNumberToObject(o, "exit", code);
		cli_print_json(o);
		cJSON_Delete(o);
		return code;
	}
	cli_printf(stdout, "rollback%s: %zu box%s: %zu %s, ", dry ? " --dry-run" : "", job->n,
		   job->n == 1 ? "" : "es", cnt[SYNC_ROLLED_BACK] + cnt[SYNC_WOULD_ROLL_BACK],
		   dry ? "would roll back" : "rolled back");
	if (cnt[SYNC_ALREADY_ROLLED_BACK])
		cli_printf(stdout, "%zu already rolled back, ", cnt[SYNC_ALREADY_ROLLED_BACK]);
	cli_printf(stdout, "%zu failed\n", cnt[SYNC_FAILED] + cnt[SYNC_VERIFY_FAILED]);
	return code;
}

/* Every box is done: report them in name order, before the summary (and
 * before anything the pipeline prints after the boxes). */
static int report_all(cli_sync_job *job)
{
	cli_sync_report_in_order(job);
	return 0;
}

/* clang-format off */
static const cli_sync_cmd rollback_sync = {
	.box = rollback_one, .report = report_box, .after = report_all, .summary = summarise,
};
/* clang-format on */

static int run_rollback(cli_ctx *ctx, void *opts, const cli_args *args)
{
	struct rollback_opts *ro = opts;
	return cli_sync_run(ctx, &rollback_sync, &ro->sync, args, NULL);
}

/* clang-format off */
const cli_cmd cli_cmd_rollback = {
	.name = "rollback", .summary = "put the .bak of files back in place on boxes (verified)",
	.help = rollback_help, .options = rollback_options,
	.opts_size = sizeof(struct rollback_opts),
	.needs = CLI_NEEDS_BOXES, .box_operand = CLI_BOX_FIRST_REQUIRED, .arity = CLI_ARGS_REQUIRED,
	.args_missing = "no files given (boxgate rollback BOX PATH...)", .run = run_rollback,
};
/* clang-format on */
