/* The one pipeline of push, status and rollback (cli/sync_driver.h). */
#include "cli/sync_driver.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "base/fanout.h"
#include "base/xmalloc.h"

/* Prints every argument's plan error; the exit code of the first failure. */
static int build_plan(cli_sync_job *job, const char *root, const cli_args *args)
{
	bg_err err = {0};
	int code = BG_EXIT_OK;
	if (sync_plan_init(&job->plan, root, &err) < 0) {
		cli_error("%s: %s", job->ctx->cmd->name, err.msg);
		return BG_EXIT_USAGE;
	}
	for (size_t i = 0; i < args->n; i++) {
		if (sync_plan_add(&job->plan, args->v[i], job->cmd->add_flags, &err) < 0) {
			cli_error("%s: %s", job->ctx->cmd->name, err.msg);
			code = BG_EXIT_USAGE;
		}
	}
	if (!code && sync_plan_finish(&job->plan, cli_verifier_for, &job->ctx->conf, &err) < 0) {
		cli_error("%s: %s", job->ctx->cmd->name, err.msg);
		code = bg_exit_code(err.code);
	}
	return code;
}

struct each {
	cli_sync_job *job;
	void (*fn)(cli_sync_job *job, sync_box *b);
};

static void each_box(void *arg, size_t i)
{
	struct each *e = arg;
	e->fn(e->job, &e->job->boxes[i]);
}

void cli_sync_each(cli_sync_job *job, void (*fn)(cli_sync_job *job, sync_box *b))
{
	struct each e = {job, fn};
	bg_fanout(job->n, 0, each_box, &e);
}

void cli_sync_report(cli_sync_job *job, const sync_box *b)
{
	/* Big files' hashes may still be in the making when a box failed early. */
	sync_plan_wait(b->plan, NULL);
	pthread_mutex_lock(&job->mu);
	job->cmd->report(job, b);
	pthread_mutex_unlock(&job->mu);
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
		v[i] = &job->boxes[i];
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

/* A refused file's verifier output, indented, each line led by the boxes
 * that printed it; at most 200 lines. */
static void print_verify_output(const char *set, const char *s)
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

static const char *verify_out_of(const sync_box *b, size_t item)
{
	const sync_file *f = &b->files[item];
	return f->state == SYNC_VERIFY_FAILED && f->verify_out ? f->verify_out : NULL;
}

/* One file's verifier output, once per distinct text, headed by the set of
 * boxes that printed it (h[1-3]): the same SyntaxError on 40 boxes is one
 * block. Groups in the order of their first box. */
static void print_verify_item(const sync_box **boxes, size_t n, size_t item)
{
	bool *done = xcalloc(n ? n : 1, sizeof(*done));
	const char **names = xcalloc(n ? n : 1, sizeof(*names));
	for (size_t i = 0; i < n; i++) {
		const char *out = verify_out_of(boxes[i], item);
		if (done[i] || !out)
			continue;
		size_t k = 0;
		for (size_t j = i; j < n; j++) {
			const char *other = verify_out_of(boxes[j], item);
			if (done[j] || !other || strcmp(out, other) != 0)
				continue;
			done[j] = true;
			names[k++] = boxes[j]->box->name;
		}
		char *set = cli_fold_names(names, k);
		char *shown = sync_path_display(boxes[i]->plan->items[item].rel);
		if (k > 1)
			cli_error("%s: %s: the verifier's output, the same on %zu boxes:", set,
				  shown, k);
		else
			cli_error("%s: %s: the verifier's output:", set, shown);
		print_verify_output(set, out);
		free(shown);
		free(set);
	}
	free(done);
	free(names);
}

void cli_sync_print_verify_output(cli_sync_job *job)
{
	if (job->json || !job->boxes)
		return; /* JSON carries it in each file's object */
	const sync_box **boxes = cli_sync_by_name(job);
	for (size_t item = 0; item < job->plan.n; item++)
		print_verify_item(boxes, job->n, item);
	free(boxes);
}

void cli_sync_report_files(cli_sync_job *job, const sync_box *b, const char *not_done)
{
	const char *box = b->box->name;
	if (b->rc < 0 && !job->json)
		cli_folder_add(&job->fold, CLI_FOLD_ERROR, box, b->err.msg);
	for (size_t i = 0; i < b->plan->n; i++) {
		const sync_file *f = &b->files[i];
		if (job->json) {
			cJSON *o = sync_file_json(b, i);
			cli_print_json(o);
			cJSON_Delete(o);
			continue;
		}
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
	int code = build_plan(&job, ctx->opt.root ? ctx->opt.root : ctx->conf.root, args);
	if (code)
		goto out;
	opts->verifier_for = cli_verifier_for;
	opts->verifier_ctx = &ctx->conf;
	opts->log = cli_log_warning;
	opts->trace = getenv("BOXGATE_TRACE") ? cli_sync_trace : NULL;
	opts->accept_new = ctx->opt.accept_new;
	pthread_mutex_init(&job.mu, NULL);
	job.boxes = xcalloc(job.n, sizeof(*job.boxes));
	for (size_t i = 0; i < job.n; i++)
		sync_box_init(&job.boxes[i], &(sync_target)CLI_SYNC_TARGET(ctx->boxes[i]), i,
			      &job.plan, opts);
	if (cmd->start)
		cmd->start(&job);
	cli_sync_each(&job, cmd->box);
	if (cmd->after)
		code = cmd->after(&job);
	cli_folder_print(&job.fold, !ctx->opt.no_fold);
	cli_sync_print_verify_output(&job);
	if (code)
		goto out;
	sync_plan_wait(&job.plan, NULL);
	sync_count(job.boxes, job.n, cnt);
	code = cmd->summary(&job, sync_exit_code(job.boxes, job.n), cnt);
out:
	for (size_t i = 0; job.boxes && i < job.n; i++)
		sync_box_release(&job.boxes[i]);
	if (job.boxes)
		pthread_mutex_destroy(&job.mu);
	free(job.boxes);
	cli_folder_release(&job.fold);
	sync_plan_release(&job.plan);
	return code;
}
