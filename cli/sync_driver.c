/* The one pipeline of push, status and rollback (cli/sync_driver.h). */
#include "cli/sync_driver.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "base/xmalloc.h"
#include "sync/push_files.h"

/* One operand's plan error, printed: the command's name, the sentence. */
static void plan_error(void *ctx, const bg_err *err)
{
	const cli_sync_job *job = ctx;
	cli_error("%s: %s", job->ctx->cmd->name, err->msg);
}

struct each {
	cli_sync_job *job;
	void (*fn)(cli_sync_job *job, sync_box *b);
};

static void each_box(sync_job *run, sync_box *b, void *arg)
{
	(void)run;
	struct each *e = arg;
	e->fn(e->job, b);
}

void cli_sync_each(cli_sync_job *job, void (*fn)(cli_sync_job *job, sync_box *b))
{
	struct each e = {job, fn};
	sync_job_each(&job->run, each_box, &e);
}

void cli_sync_report(cli_sync_job *job, const sync_box *b)
{
	sync_job_report(&job->run, b);
}

/* sync_job's report callback: the command's report of one box. */
static void report_one(void *ctx, const sync_box *b)
{
	cli_sync_job *job = ctx;
	job->cmd->report(job, b);
}

static int cmp_box(const void *a, const void *b)
{
	const sync_box *x = *(const sync_box *const *)a, *y = *(const sync_box *const *)b;
	return cli_box_name_cmp(x->box->name, y->box->name);
}

const sync_box **cli_sync_by_name(const cli_sync_job *job)
{
	const sync_box **v = xcalloc(job->n ? job->n : 1, sizeof(*v));
	for (size_t i = 0; i < job->n; i++)
		v[i] = &job->run.boxes[i];
	qsort(v, job->n, sizeof(*v), cmp_box);
	return v;
}

void cli_sync_report_in_order(cli_sync_job *job)
{
	const sync_box **order = cli_sync_by_name(job);
	for (size_t i = 0; i < job->n; i++)
		cli_sync_report(job, order[i]);
	free(order);
}

void cli_sync_print_output(const char *set, const char *s)
{
	for (int lines = 0; *s && lines < 200; lines++) {
		const char *e = strchr(s, '\n');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		char *l = xasprintf("    %.*s", (int)len, s);
		cli_print_line(stderr, set, l, strlen(l));
		free(l);
		s += len + (e ? 1 : 0);
	}
	if (*s)
		cli_print_line(stderr, set, "    [boxgate: verifier output cut]", 34);
}

/* One block of a refused file's verifier output: the text and the boxes
 * that printed it (h[1-3]): the same SyntaxError on 40 boxes is one block. */
static void print_verify_group(void *ctx, const char *out, const char *const *names, size_t k,
			       const sync_box *first)
{
	size_t item = *(const size_t *)ctx;
	char *set = cli_fold_names(names, k);
	char *shown = sync_path_display(first->plan->items[item].rel);
	if (k > 1)
		cli_error("%s: %s: the verifier's output, the same on %zu boxes:", set, shown, k);
	else
		cli_error("%s: %s: the verifier's output:", set, shown);
	cli_sync_print_output(set, out);
	free(shown);
	free(set);
}

void cli_sync_print_verify_output(cli_sync_job *job)
{
	if (job->json || !job->run.boxes)
		return; /* JSON carries it in each file's object */
	const sync_box **boxes = cli_sync_by_name(job);
	for (size_t item = 0; item < job->plan.n; item++)
		sync_job_verify_groups(boxes, job->n, item, print_verify_group, &item);
	free(boxes);
}

void cli_sync_print_json(const sync_box *b)
{
	for (size_t i = 0; i < b->plan->n; i++) {
		cJSON *o = sync_file_json(b, i);
		cli_print_json(o);
		cJSON_Delete(o);
	}
}

void cli_sync_report_files(cli_sync_job *job, const sync_box *b, const char *not_done)
{
	const char *box = b->box->name;
	if (b->rc < 0 && !job->json)
		cli_folder_add(&job->fold, CLI_FOLD_ERROR, box, b->err.msg);
	if (job->json)
		cli_sync_print_json(b);
	for (size_t i = 0; !job->json && i < b->plan->n; i++) {
		const sync_file *f = &b->files[i];
		if (!sync_state_failed(f->state)) {
			char *line = sync_file_describe(b, i);
			cli_folder_add(&job->fold, CLI_FOLD_OUT, box, line);
			free(line);
			if (f->warn)
				cli_folder_add(&job->fold, CLI_FOLD_WARN, box, f->warn);
			continue;
		}
		if (f->msg) {
			cli_folder_add(&job->fold, CLI_FOLD_ERROR, box, f->msg);
		} else {
			char *shown = sync_path_display(b->plan->items[i].rel);
			char *line = xasprintf("%s: %s%s", shown, not_done,
					       b->rc < 0 ? " (see above)" : "");
			cli_folder_add(&job->fold, CLI_FOLD_ERROR, box, line);
			free(line);
			free(shown);
		}
	}
	char *mw = sync_manifest_warning(b);
	if (mw && !job->json)
		cli_folder_add(&job->fold, CLI_FOLD_WARN, box, mw);
	else if (mw)
		cli_warn("%s", mw);
	free(mw);
}

int cli_sync_run(cli_ctx *ctx, const cli_sync_cmd *cmd, sync_opts *opts, const cli_args *args,
		 void *state)
{
	cli_sync_job job = {.ctx = ctx,
			    .cmd = cmd,
			    .opts = opts,
			    .n = ctx->n_boxes,
			    .json = ctx->opt.json,
			    .state = state};
	size_t cnt[SYNC_STATE_COUNT];
	int code = sync_plan_build(&job.plan, ctx->opt.root ? ctx->opt.root : ctx->conf.root,
				   args->v, args->n, cmd->add_flags, conf_verifier_for, &ctx->conf,
				   plan_error, &job);
	if (code) {
		code = bg_exit_code(code);
		goto out;
	}
	opts->verifier_for = conf_verifier_for;
	opts->verifier_ctx = &ctx->conf;
	opts->log = cli_log_warning;
	opts->trace = getenv("BOXGATE_TRACE") ? cli_sync_trace : NULL;
	opts->accept_new = ctx->opt.accept_new;
	sync_target *targets = xcalloc(job.n ? job.n : 1, sizeof(*targets));
	for (size_t i = 0; i < job.n; i++)
		targets[i] = (sync_target)CLI_SYNC_TARGET(ctx->boxes[i]);
	sync_job_init(&job.run, targets, job.n, &job.plan, opts, report_one, &job);
	free(targets);
	if (cmd->start)
		cmd->start(&job);
	if (cmd->box)
		cli_sync_each(&job, cmd->box);
	if (cmd->after)
		code = cmd->after(&job);
	cli_folder_print(&job.fold, !ctx->opt.no_fold);
	cli_sync_print_verify_output(&job);
	if (code)
		goto out;
	sync_plan_wait(&job.plan, NULL);
	sync_count(job.run.boxes, job.n, cnt);
	code = cmd->summary(&job, sync_exit_code(job.run.boxes, job.n), cnt);
out:
	sync_job_release(&job.run);
	cli_folder_release(&job.fold);
	sync_plan_release(&job.plan);
	return code;
}
