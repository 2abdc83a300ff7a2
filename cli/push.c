/* push over the sync driver: what it prints (progress lines, the local
 * checks' refusals, each box's files, the summary) around sync_job_push
 * (sync/job.c: local checks, each box verified, kept as .bak and swapped in
 * atomically); what `boxgate push` runs. */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "base/exit.h"
#include "base/timer.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "cli/push.h"
#include "cli/sync_driver.h"

#define PROGRESS_MIN      (1u << 20)
#define PROGRESS_EVERY_MS 150

/* What push adds to the sync pipeline; guarded by the job's mu. */
struct push_state {
	bool no_local_check;
	/* progress lines on a terminal */
	bool tty;
	size_t shown; /* progress lines on screen */
	int64_t last_draw;
	struct bar {
		const sync_item *it;
		uint64_t done, total;
		int64_t start;
	} * bars; /* one per box */
};

/* ---- progress ---- */

static void erase_bars(struct push_state *ps)
{
	if (ps->shown) {
		cli_printf(stdout, "\033[%zuA\033[J", ps->shown);
		ps->shown = 0;
	}
}

static void draw_bars(cli_sync_job *job)
{
	struct push_state *ps = job->state;
	strbuf screen = STRBUF_INIT;
	erase_bars(ps);
	int64_t now = bg_now_ms();
	for (size_t i = 0; i < job->n; i++) {
		struct bar *b = &ps->bars[i];
		if (!b->it)
			continue;
		cli_progress_line(&screen, job->run.boxes[i].box->name, b->it->rel, b->done,
				  b->total, b->start, now);
		ps->shown++;
	}
	cli_write(stdout, screen.buf, screen.len);
	strbuf_release(&screen);
	ps->last_draw = now;
}

static void on_progress(void *ctx, const sync_box *b, const sync_item *it, uint64_t done,
			uint64_t total)
{
	cli_sync_job *job = ctx;
	struct push_state *ps = job->state;
	if (total < PROGRESS_MIN)
		return;
	pthread_mutex_lock(&job->run.mu);
	struct bar *bar = &ps->bars[b->index];
	bool first = bar->it != it;
	if (first) {
		bar->it = it;
		bar->start = bg_now_ms();
	}
	bar->done = done;
	bar->total = total;
	bool last = done >= total;
	if (first || last || bg_now_ms() - ps->last_draw >= PROGRESS_EVERY_MS)
		draw_bars(job);
	if (last) {
		bar->it = NULL;
		draw_bars(job);
	}
	pthread_mutex_unlock(&job->run.mu);
}

/* ---- results ---- */

/* One box's results, the progress lines kept below them. */
static void report_box(cli_sync_job *job, const sync_box *b)
{
	struct push_state *ps = job->state;
	if (ps->tty)
		erase_bars(ps);
	cli_sync_report_files(job, b, "not pushed");
	if (ps->tty)
		draw_bars(job);
}

/* ---- the local checks ---- */

static void check_could_not_run(void *ctx, const sync_item *it, const char *why)
{
	(void)ctx;
	cli_warn("%s: the local check could not run: %s", it->arg, why);
}

static void check_refused(void *ctx, const sync_item *it, int rc, const char *out)
{
	cli_sync_job *job = ctx;
	char *shown = sync_path_display(it->rel);
	if (job->json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "box", "local");
		cJSON_AddStringToObject(o, "path", shown);
		cJSON_AddStringToObject(o, "state", sync_state_key(SYNC_VERIFY_FAILED));
		cJSON_AddNumberToObject(o, "verify_exit", rc);
		cJSON_AddStringToObject(o, "verify_output", out);
		cli_print_json(o);
		cJSON_Delete(o);
	} else {
		cli_error("%s: refused by the local check (exit %d), no box was touched:", shown,
			  rc);
		const char *s = out;
		while (*s) {
			const char *e = strchr(s, '\n');
			size_t len = e ? (size_t)(e - s) : strlen(s);
			char *l = xasprintf("    %.*s", (int)len, s);
			cli_print_line(stderr, "local", l, strlen(l));
			free(l);
			s += len + (e ? 1 : 0);
		}
	}
	free(shown);
}

/* ---- the pipeline's steps ---- */

static void start(cli_sync_job *job)
{
	struct push_state *ps = job->state;
	ps->bars = xcalloc(job->n, sizeof(*ps->bars));
	ps->tty = isatty(1) && !job->json;
	if (ps->tty) {
		job->opts->progress = on_progress;
		job->opts->progress_ctx = job;
	}
}

/* The push itself (sync_job_push): the local checks beside the boxes, each
 * box pushed, --all-or-nothing's commit or abort, disconnect. A local
 * refusal (no box touched) is the exit code. */
static int after(cli_sync_job *job)
{
	struct push_state *ps = job->state;
	sync_local_checks_cb cb = {check_could_not_run, check_refused, job};
	return sync_job_push(&job->run, conf_local_python(&job->ctx->conf), ps->no_local_check,
			     &cb);
}

/* The closing line: counts, failed boxes, the exit code. */
static int summarise(cli_sync_job *job, int code, const size_t *c)
{
	if (job->json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "event", "summary");
		cJSON_AddNumberToObject(o, "files", (double)job->plan.n);
		cJSON_AddNumberToObject(o, "boxes", (double)job->n);
		for (int s = 1; s < SYNC_STATE_COUNT; s++)
			if (c[s])
				cJSON_AddNumberToObject(o, sync_state_key((sync_state)s),
							(double)c[s]);
		cJSON_AddNumberToObject(o, "exit", code);
		cli_print_json(o);
		cJSON_Delete(o);
		return code;
	}
	strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "push%s: %zu file%s to %zu box%s:", job->opts->dry_run ? " --dry-run" : "",
		    job->plan.n, job->plan.n == 1 ? "" : "s", job->n, job->n == 1 ? "" : "es");
	const char *sep = " ";
	for (int s = 1; s < SYNC_STATE_COUNT; s++) {
		if (!c[s])
			continue;
		strbuf_addf(&sb, "%s%zu %s", sep, c[s], sync_state_name((sync_state)s));
		sep = ", ";
	}
	cli_print_line(stdout, NULL, sb.buf, sb.len);
	strbuf_reset(&sb);
	size_t failed = 0;
	const sync_box **by_name = cli_sync_by_name(job);
	for (size_t i = 0; i < job->n; i++) {
		if (!sync_box_failed(by_name[i]))
			continue;
		strbuf_addf(&sb, "%s%s", failed ? ", " : "", by_name[i]->box->name);
		failed++;
	}
	free(by_name);
	if (failed)
		cli_error("push: %zu of %zu boxes had failures: %s", failed, job->n,
			  strbuf_str(&sb));
	if (job->opts->all_or_nothing && (c[SYNC_NOT_APPLIED] || code))
		cli_error(
			"push: --all-or-nothing: %s",
			c[SYNC_UPDATED] + c[SYNC_CREATED]
				? "a swap failed after every box had verified: see the errors above"
				: "no box was changed");
	strbuf_release(&sb);
	return code;
}

/* clang-format off */
static const cli_sync_cmd push_sync = {
	.add_flags = SYNC_ADD_NEED_LOCAL, .start = start, .report = report_box, .after = after,
	.summary = summarise,
};
/* clang-format on */

int cli_push_run(cli_ctx *ctx, cli_push_opts *po, const cli_args *args)
{
	struct push_state ps = {.no_local_check = po->no_local_check};
	po->sync.fsync = true;
	int code = cli_sync_run(ctx, &push_sync, &po->sync, args, &ps);
	free(ps.bars);
	return code;
}
