/* boxgate pull: fetch files back from every selected box's repo copy into
 * DIR/BOX/..., atomically and resumably. */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "base/exit.h"
#include "base/fanout.h"
#include "base/strbuf.h"
#include "base/timer.h"
#include "base/xmalloc.h"
#include "cli/cli.h"
#include "sync/pull.h"
#include "sync/sync.h"

static const char pull_help[] =
	"usage: boxgate pull [--boxes SPEC | --pool POOL | --all] [--exclude SPEC]\n"
	"                    [--to DIR] [--follow-links] [--no-fold] [--json] [--accept-new]\n"
	"                    [--] REMOTE_PATH...\n"
	"\n"
	"Fetches files from the selected boxes' repo copies into DIR/BOX/REMOTE_PATH (DIR is\n"
	"./pulled unless --to), all boxes at once over one SSH connection each (SFTP; the\n"
	"box's connection master's when it has a live one: control_persist_s).\n"
	"REMOTE_PATH is relative to the box's repo: a file, a directory (every file under it)\n"
	"or a pattern with shell wildcards in any component, quoted so the local shell leaves\n"
	"it alone ('profiles/*.ncu-rep'; a wildcard does not match a leading dot). Paths that\n"
	"climb out of the repo ('..', absolute paths) are refused, and so is a symlink on the\n"
	"box whose real path lies outside the repo unless --follow-links; inside a directory a\n"
	"symlink to a directory is not descended into unless --follow-links.\n"
	"\n"
	"Each file is hashed on the box (sha256sum) first: a local copy that already has that\n"
	"SHA-256 is left alone (unchanged), so an interrupted pull resumes where it stopped.\n"
	"Others are read into a new temporary file beside the final name\n"
	"(.NAME.boxgate-pull-XXXXXXXXXXXXXXXX.tmp, locked while it is written), hashed as\n"
	"they arrive, and renamed over the final name only when the hash is the box's: a box\n"
	"that disconnects or a file that changes meanwhile leaves no partial file under a\n"
	"final name. A pull that was killed leaves its temporary file; the next pull into\n"
	"that directory removes it (only one whose lock is free: never another pull's live\n"
	"one). Temporary files of a push or pull on the box are never fetched as files.\n"
	"Local directories are never\n"
	"entered through a symlink, and a symlink at a final name is replaced, not written\n"
	"through. Files keep the box's permission bits.\n"
	"\n"
	"Per box, a line for each file that was not pulled and a closing count; identical lines\n"
	"of several boxes are folded into one, led by their node set (h[1-8]: ...), boxes in\n"
	"name order. Large files show a progress line per box when stdout is a terminal.\n"
	"\n"
	"  --boxes SPEC        names, node sets (h[1-8]) and @pool (-w SPEC; repeatable)\n"
	"  --exclude SPEC      leave these boxes out (-x SPEC; repeatable)\n"
	"  --pool POOL         every box of a pool\n"
	"  --all               every configured box (the built-in local box only by name)\n"
	"  --to DIR            where the files go (default ./pulled); DIR/BOX/... per box\n"
	"  --follow-links      follow symlinks on the box wherever they lead\n"
	"  --no-fold           one line per box instead of folded node sets\n"
	"  --json              one JSON object per file and box (path, local, state, size,\n"
	"                      sha256, message), then a summary object\n"
	"  --accept-new        record unknown host keys (changed keys are still refused)\n"
	"\n"
	"Exit: 0 when every file was pulled or unchanged (skipped entries, such as fifos or\n"
	"links to directories, do not count); 3 when a box could not be reached or was lost;\n"
	"2 for bad usage; 1 for anything else (a path missing on a box, a refused symlink, a\n"
	"file that could not be written).\n";

#define PROGRESS_EVERY_MS 150

struct pull_opts {
	const char *to;
	bool follow_links;
};

static const cli_opt pull_options[] = {
	CLI_OPT_SELECT,
	CLI_OPT_JSON,
	CLI_OPT_NO_FOLD,
	CLI_OPT_ACCEPT_NEW,
	CLI_OPT_STRING("to", struct pull_opts, to),
	CLI_OPT_FLAG("follow-links", struct pull_opts, follow_links),
	CLI_OPT_END,
};

struct pull_job {
	sync_pull_box *boxes;
	size_t n;
	pthread_mutex_t mu; /* the progress display */
	bool tty;
	size_t shown;
	int64_t last_draw;
	struct bar {
		const sync_pull_file *f;
		uint64_t done, total;
		int64_t start;
	} * bars;
};

static void draw_bars(struct pull_job *job)
{
	strbuf screen = STRBUF_INIT;
	if (job->shown)
		strbuf_addf(&screen, "\033[%zuA\033[J", job->shown);
	job->shown = 0;
	int64_t now = bg_now_ms();
	for (size_t i = 0; i < job->n; i++) {
		struct bar *b = &job->bars[i];
		if (!b->f)
			continue;
		cli_progress_line(&screen, job->boxes[i].box->name, b->f->rel, b->done, b->total,
				  b->start, now);
		job->shown++;
	}
	cli_write(stdout, screen.buf, screen.len);
	strbuf_release(&screen);
	job->last_draw = now;
}

static void on_progress(void *ctx, const sync_pull_box *b, const sync_pull_file *f, uint64_t done,
			uint64_t total)
{
	struct pull_job *job = ctx;
	pthread_mutex_lock(&job->mu);
	struct bar *bar = &job->bars[b->index];
	bool first = bar->f != f;
	if (first) {
		bar->f = f;
		bar->start = bg_now_ms();
	}
	bar->done = done;
	bar->total = total;
	bool last = done >= total;
	if (last)
		bar->f = NULL;
	if (first || last || bg_now_ms() - job->last_draw >= PROGRESS_EVERY_MS)
		draw_bars(job);
	pthread_mutex_unlock(&job->mu);
}

static void pull_one(void *ctx, size_t i)
{
	struct pull_job *job = ctx;
	sync_pull_box_run(&job->boxes[i]);
	sync_pull_box_release_conn(&job->boxes[i]);
}

static int box_code(const sync_pull_box *b)
{
	if (b->rc == BG_EUSAGE)
		return BG_EXIT_FAIL;
	if (b->rc < 0)
		return BG_EXIT_CONNECT;
	for (size_t i = 0; i < b->n; i++)
		if (sync_pull_state_failed(b->files[i].state))
			return BG_EXIT_FAIL;
	return BG_EXIT_OK;
}

static char *human_bytes(uint64_t n)
{
	if (n < 1024)
		return xasprintf("%llu B", (unsigned long long)n);
	if (n < 1024 * 1024)
		return xasprintf("%.1f KiB", (double)n / 1024.0);
	if (n < 1024ull * 1024 * 1024)
		return xasprintf("%.1f MiB", (double)n / 1048576.0);
	return xasprintf("%.2f GiB", (double)n / 1073741824.0);
}

/* "3 files: 2 pulled (1.0 MiB), 1 unchanged". */
static void add_counts(strbuf *sb, const size_t *cnt, size_t files, uint64_t bytes)
{
	strbuf_addf(sb, "%zu file%s", files, files == 1 ? "" : "s");
	const char *sep = ": ";
	for (int s = 1; s < SYNC_PULL_STATE_COUNT; s++) {
		if (!cnt[s])
			continue;
		strbuf_addf(sb, "%s%zu %s", sep, cnt[s], sync_pull_state_name((sync_pull_state)s));
		if (s == SYNC_PULL_PULLED) {
			char *h = human_bytes(bytes);
			strbuf_addf(sb, " (%s)", h);
			free(h);
		}
		sep = ", ";
	}
	if (cnt[SYNC_PULL_PENDING])
		strbuf_addf(sb, "%s%zu not pulled", sep, cnt[SYNC_PULL_PENDING]);
}

static void report(struct pull_job *job, const char *to, bool fold, bool json, int code)
{
	size_t total[SYNC_PULL_STATE_COUNT] = {0};
	size_t files = 0;
	uint64_t bytes = 0;
	cli_folder f = {0};
	for (size_t i = 0; i < job->n; i++) {
		const sync_pull_box *b = &job->boxes[i];
		size_t cnt[SYNC_PULL_STATE_COUNT] = {0};
		for (size_t k = 0; k < b->n; k++) {
			const sync_pull_file *pf = &b->files[k];
			cnt[pf->state]++;
			total[pf->state]++;
			if (json) {
				cJSON *o = sync_pull_file_json(b, k);
				cli_print_json(o);
				cJSON_Delete(o);
				continue;
			}
			if (pf->state == SYNC_PULL_PULLED || pf->state == SYNC_PULL_UNCHANGED)
				continue;
			char *shown = sync_path_display(pf->rel);
			char *line = xasprintf("%s: %s", shown, pf->msg ? pf->msg : "not pulled");
			cli_folder_add(&f,
				       sync_pull_state_failed(pf->state) ? CLI_FOLD_ERROR
									 : CLI_FOLD_WARN,
				       b->box->name, line);
			free(line);
			free(shown);
		}
		files += b->n;
		bytes += b->bytes;
		if (json) {
			if (b->rc < 0) {
				cJSON *o = cJSON_CreateObject();
				cJSON_AddStringToObject(o, "box", b->box->name);
				cJSON_AddStringToObject(o, "state", "failed");
				cJSON_AddStringToObject(o, "message", b->err.msg);
				cli_print_json(o);
				cJSON_Delete(o);
			}
			continue;
		}
		if (b->rc < 0) {
			cli_folder_add(&f, CLI_FOLD_ERROR, b->box->name, b->err.msg);
			if (!b->n)
				continue;
		}
		strbuf sb = STRBUF_INIT;
		add_counts(&sb, cnt, b->n, 0);
		/* the byte counts differ from box to box; keep the lines foldable */
		char *p = strstr(strbuf_str(&sb), " (0 B)");
		if (p)
			memmove(p, p + 6, strlen(p + 6) + 1);
		cli_folder_add(&f, CLI_FOLD_OUT, b->box->name, strbuf_str(&sb));
		strbuf_release(&sb);
	}
	if (json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "event", "summary");
		cJSON_AddNumberToObject(o, "boxes", (double)job->n);
		cJSON_AddNumberToObject(o, "files", (double)files);
		cJSON_AddNumberToObject(o, "bytes", (double)bytes);
		for (int s = 1; s < SYNC_PULL_STATE_COUNT; s++)
			if (total[s])
				cJSON_AddNumberToObject(o, sync_pull_state_key((sync_pull_state)s),
							(double)total[s]);
		cJSON_AddNumberToObject(o, "exit", code);
		cli_print_json(o);
		cJSON_Delete(o);
		return;
	}
	cli_folder_print(&f, fold);
	strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "pull: %zu box%s into %s/BOX: ", job->n, job->n == 1 ? "" : "es", to);
	add_counts(&sb, total, files, bytes);
	cli_print_line(stdout, NULL, sb.buf, sb.len);
	strbuf_release(&sb);
}

static int run_pull(cli_ctx *ctx, void *opts, const cli_args *args)
{
	struct pull_opts *po = opts;
	const char *to = po->to && *po->to ? po->to : "pulled";
	char **paths = xcalloc(args->n ? args->n : 1, sizeof(*paths));
	int code = BG_EXIT_OK;
	for (size_t i = 0; i < args->n; i++) {
		bg_err err = {0};
		if (sync_pull_check_path(args->v[i], &paths[i], &err) < 0) {
			cli_error("pull: %s", err.msg);
			code = BG_EXIT_USAGE;
		}
	}
	struct pull_job job = {.n = ctx->n_boxes};
	if (code)
		goto out;
	sync_pull_opts o = {.to = to,
			    .box_subdir = true,
			    .follow_links = po->follow_links,
			    .accept_new = ctx->opt.accept_new,
			    .log = cli_log_warning,
			    .trace = getenv("BOXGATE_TRACE") ? cli_sync_trace : NULL};
	job.boxes = xcalloc(job.n ? job.n : 1, sizeof(*job.boxes));
	job.bars = xcalloc(job.n ? job.n : 1, sizeof(*job.bars));
	pthread_mutex_init(&job.mu, NULL);
	job.tty = isatty(1) && !ctx->opt.json;
	if (job.tty) {
		o.progress = on_progress;
		o.progress_ctx = &job;
	}
	for (size_t i = 0; i < job.n; i++)
		sync_pull_box_init(&job.boxes[i], &(sync_target)CLI_SYNC_TARGET(ctx->boxes[i]), i,
				   &o, paths, args->n, NULL);
	bg_fanout(job.n, 0, pull_one, &job);
	if (job.shown) {
		cli_printf(stdout, "\033[%zuA\033[J", job.shown);
		job.shown = 0;
	}
	for (size_t i = 0; i < job.n; i++) {
		int c = box_code(&job.boxes[i]);
		if (c == BG_EXIT_CONNECT || (c && !code))
			code = c;
	}
	for (size_t i = 0; i < job.n && !ctx->opt.json; i++)
		if (job.boxes[i].stale_removed)
			cli_printf(stderr,
				   "boxgate: %s: removed %zu stale temporary file%s of an "
				   "interrupted pull\n",
				   job.boxes[i].box->name, job.boxes[i].stale_removed,
				   job.boxes[i].stale_removed == 1 ? "" : "s");
	report(&job, to, !ctx->opt.no_fold, ctx->opt.json, code);
	for (size_t i = 0; i < job.n; i++)
		sync_pull_box_release(&job.boxes[i]);
	pthread_mutex_destroy(&job.mu);
out:
	for (size_t i = 0; i < args->n; i++)
		free(paths[i]);
	free(paths);
	free(job.boxes);
	free(job.bars);
	return code;
}

/* clang-format off */
const cli_cmd cli_cmd_pull = {
	.name = "pull",
	.summary = "fetch files back from the boxes into DIR/BOX/..., atomically and resumably",
	.help = pull_help, .options = pull_options, .opts_size = sizeof(struct pull_opts),
	.needs = CLI_NEEDS_BOXES, .arity = CLI_ARGS_REQUIRED,
	.args_missing = "no paths given (boxgate pull --all REMOTE_PATH...)", .run = run_pull,
};
/* clang-format on */
