/* One push, status or rollback over a set of boxes (sync/job.h). */
#include "sync/job.h"

#include <stdlib.h>
#include <string.h>

#include "base/fanout.h"
#include "base/xmalloc.h"

void sync_job_init(sync_job *j, const sync_target *targets, size_t n, sync_plan *p, sync_opts *opts,
		   void (*report)(void *ctx, const sync_box *b), void *ctx)
{
	memset(j, 0, sizeof(*j));
	j->plan = p;
	j->opts = opts;
	j->n = n;
	j->report = report;
	j->ctx = ctx;
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->checked_cv, NULL);
	j->checked = true;
	j->boxes = xcalloc(n ? n : 1, sizeof(*j->boxes));
	for (size_t i = 0; i < n; i++)
		sync_box_init(&j->boxes[i], &targets[i], i, p, opts);
}

void sync_job_release(sync_job *j)
{
	if (!j->boxes)
		return;
	for (size_t i = 0; i < j->n; i++)
		sync_box_release(&j->boxes[i]);
	free(j->boxes);
	j->boxes = NULL;
	pthread_mutex_destroy(&j->mu);
	pthread_cond_destroy(&j->checked_cv);
}

struct each {
	sync_job *j;
	void (*fn)(sync_job *j, sync_box *b, void *ctx);
	void *ctx;
};

static void each_box(void *arg, size_t i)
{
	struct each *e = arg;
	e->fn(e->j, &e->j->boxes[i], e->ctx);
}

void sync_job_each(sync_job *j, void (*fn)(sync_job *j, sync_box *b, void *ctx), void *ctx)
{
	struct each e = {j, fn, ctx};
	bg_fanout(j->n, 0, each_box, &e);
}

void sync_job_report(sync_job *j, const sync_box *b)
{
	/* Big files' hashes may still be in the making when a box failed early. */
	sync_plan_wait(b->plan, NULL);
	pthread_mutex_lock(&j->mu);
	j->report(j->ctx, b);
	pthread_mutex_unlock(&j->mu);
}

/* ---- push ---- */

static void *check_thread(void *arg)
{
	sync_job *j = arg;
	int code = sync_local_checks(j->python, j->plan, j->checks);
	pthread_mutex_lock(&j->mu);
	j->local_code = code;
	j->checked = true;
	pthread_cond_broadcast(&j->checked_cv);
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

/* sync_opts.ready: the local checks' verdict (0: go on). */
static int wait_checks(void *arg)
{
	sync_job *j = arg;
	pthread_mutex_lock(&j->mu);
	while (!j->checked)
		pthread_cond_wait(&j->checked_cv, &j->mu);
	int code = j->local_code;
	pthread_mutex_unlock(&j->mu);
	return code;
}

static void push_one(sync_job *j, sync_box *b, void *ctx)
{
	(void)ctx;
	sync_push_box(b);
	if (wait_checks(j) != 0)
		return; /* refused here: only the local check's report counts */
	if (!j->opts->all_or_nothing && !j->opts->dry_run) {
		/* Done with this box: release its lock while the others finish. */
		sync_box_unlock(b);
	}
	if (!j->opts->all_or_nothing)
		sync_job_report(j, b);
}

static void commit_one(sync_job *j, sync_box *b, void *ctx)
{
	(void)ctx;
	sync_push_commit(b);
	sync_job_report(j, b);
}

static void abort_one(sync_job *j, sync_box *b, void *ctx)
{
	(void)ctx;
	sync_push_abort(b);
	sync_job_report(j, b);
}

static void release_one(sync_job *j, sync_box *b, void *ctx)
{
	(void)j, (void)ctx;
	sync_box_disconnect(b);
}

int sync_job_push(sync_job *j, const char *python, bool no_local_check,
		  const sync_local_checks_cb *checks)
{
	j->python = python;
	j->checks = checks;
	j->checked = true;
	if (!no_local_check) {
		j->checked = false;
		if (pthread_create(&j->checker, NULL, check_thread, j) == 0)
			j->checking = true;
		else
			check_thread(j);
		j->opts->ready = wait_checks;
		j->opts->ready_ctx = j;
	}
	sync_job_each(j, push_one, NULL);
	if (j->checking)
		pthread_join(j->checker, NULL);
	j->checking = false;
	if (!j->local_code && j->opts->all_or_nothing && !j->opts->dry_run) {
		bool all_ok = sync_boxes_all_ok(j->boxes, j->n);
		sync_job_each(j, all_ok ? commit_one : abort_one, NULL);
	} else if (!j->local_code && j->opts->all_or_nothing) {
		for (size_t i = 0; i < j->n; i++)
			sync_job_report(j, &j->boxes[i]);
	}
	sync_job_each(j, release_one, NULL);
	return j->local_code;
}

/* ---- verifier output ---- */

static const char *verify_out_of(const sync_box *b, size_t item)
{
	const sync_file *f = &b->files[item];
	return f->state == SYNC_VERIFY_FAILED && f->verify_out ? f->verify_out : NULL;
}

void sync_job_verify_groups(const sync_box *const *boxes, size_t n, size_t item,
			    void (*fn)(void *ctx, const char *out, const char *const *names,
				       size_t k, const sync_box *first),
			    void *ctx)
{
	bool *done = xcalloc(n ? n : 1, sizeof(*done));
	const char **names = xcalloc(n ? n : 1, sizeof(*names));
	for (size_t i = 0; i < n; i++) {
		const char *out = verify_out_of(boxes[i], item);
		if (done[i] || !out)
			continue;
		size_t k = 0;
		for (size_t m = i; m < n; m++) {
			const char *other = verify_out_of(boxes[m], item);
			if (done[m] || !other || strcmp(out, other) != 0)
				continue;
			done[m] = true;
			names[k++] = boxes[m]->box->name;
		}
		fn(ctx, out, names, k, boxes[i]);
	}
	free(done);
	free(names);
}
