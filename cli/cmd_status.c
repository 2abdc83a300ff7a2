/* boxgate status: drift between the local files and the boxes' repo copies. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "cli/sync_driver.h"

static const char status_help[] =
	"usage: boxgate status [--boxes SPEC | --pool POOL | --all] [--exclude SPEC]\n"
	"                      [--root DIR] [--json] [--no-fold]\n"
	"                      [--no-clean] [--exit-code] [--accept-new] [--] "
	"[PATH|LOCAL=REMOTE...]\n"
	"\n"
	"Compares local files with the selected boxes' repo copies, one round trip per box:\n"
	"per file and box 'same', 'differs', 'missing' (not on the box) or 'no local file',\n"
	"whether a .bak is present, whether push placed it (the box's .boxgate/pushed lists\n"
	"it; 'created by push' when no .bak is beside it), and temporary files left by\n"
	"interrupted pushes (removed, unless --no-clean or a push is running on the box).\n"
	"Paths work as for push. Without paths, every file under the box's repo that push\n"
	"placed, or that has a .bak or a boxgate temporary file beside it, is checked.\n"
	"Boxes are reported in name order (h2 before h10) once all have answered.\n"
	"\n"
	"  --boxes SPEC   names, node sets (h[1-8]!h3: all but h3) and @pool, comma\n"
	"                 separated; -w SPEC; repeatable\n"
	"  --exclude SPEC leave these boxes out (-x SPEC; repeatable)\n"
	"  --pool POOL    every box of a pool\n"
	"  --all          every configured box\n"
	"  --root DIR     the local repo root (default: the directory of boxgate.ini)\n"
	"  --json         one JSON object per file and box (state: same, differs, missing or\n"
	"                 no_local_file; bak, pushed and created_by_push true or false;\n"
	"                 pushed_sha256 and pushed_at when pushed), then a summary object\n"
	"                 (a count per state, created_by_push_count, exit)\n"
	"  --no-clean     leave stale temporary files where they are\n"
	"  --no-fold      one line per box and file; by default identical lines of several\n"
	"                 boxes are one, led by their node set (h[1-8]: a.py: same ...)\n"
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
	const char *box = b->box->name;
	if (b->rc < 0 && !job->json)
		cli_folder_add(&job->fold, CLI_FOLD_ERROR, box, b->err.msg);
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
		cli_folder_add(&job->fold, CLI_FOLD_OUT, box, line);
		free(line);
	}
	if (b->rc == 0 && b->manifest_unread) {
		char *w = xasprintf(".boxgate/pushed is over %u bytes: not read, so no file is "
				    "shown as placed or created by push",
				    SYNC_MANIFEST_MAX);
		if (job->json)
			cli_warn("%s: %s", box, w);
		else
			cli_folder_add(&job->fold, CLI_FOLD_WARN, box, w);
		free(w);
	}
	if (b->rc == 0 && b->plan->n == 0 && !job->json)
		cli_folder_add(&job->fold, CLI_FOLD_OUT, box,
			       "no file pushed, with a .bak or a temporary file under the repo");
}

/* Reported later, with the others, in box-name order. */
static void status_one(cli_sync_job *job, sync_box *b)
{
	(void)job;
	sync_status_box(b);
	sync_box_disconnect(b);
}

static size_t count_created(const cli_sync_job *job)
{
	size_t n = 0;
	for (size_t i = 0; i < job->n; i++) {
		const sync_box *b = &job->run.boxes[i];
		for (size_t k = 0; b->rc == 0 && b->files && k < b->plan->n; k++)
			n += sync_file_created_by_push(&b->files[k]);
	}
	return n;
}

static int summarise(cli_sync_job *job, int code, const size_t *cnt)
{
	const struct status_opts *so = job->state;
	if (so->exit_code && (cnt[SYNC_DIFFERS] || cnt[SYNC_MISSING]))
		code = bg_exit_merge(code, BG_EXIT_FAIL);
	size_t created = count_created(job);
	if (job->json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "event", "summary");
		cJSON_AddNumberToObject(o, "boxes", (double)job->n);
		for (int s = SYNC_SAME; s < SYNC_STATE_COUNT; s++)
			cJSON_AddNumberToObject(o, sync_state_key((sync_state)s), (double)cnt[s]);
		cJSON_AddNumberToObject(o, "created_by_push_count", (double)created);
		cJSON_AddNumberToObject(o, "exit", code);
		cli_print_json(o);
		cJSON_Delete(o);
		return code;
	}
	strbuf sb = STRBUF_INIT;
	strbuf_addf(
		&sb,
		"status: %zu box%s: %zu same, %zu differ, %zu missing, %zu without a local file",
		job->n, job->n == 1 ? "" : "es", cnt[SYNC_SAME], cnt[SYNC_DIFFERS],
		cnt[SYNC_MISSING], cnt[SYNC_NO_LOCAL]);
	if (created)
		strbuf_addf(&sb, "; %zu created by push (no .bak)", created);
	cli_print_line(stdout, NULL, sb.buf, sb.len);
	strbuf_release(&sb);
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
static const cli_sync_cmd status_sync = {
	.add_flags = SYNC_ADD_NEED_LOCAL, .box = status_one, .report = report_box,
	.after = report_all, .summary = summarise,
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
