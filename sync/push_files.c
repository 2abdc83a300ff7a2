/* A plan from a command's operands and a push of local files over a
 * sync_job (sync/push_files.h). */
#include "sync/push_files.h"

#include "base/exit.h"
#include "sync/report.h"

int sync_plan_build(sync_plan *p, const char *root, char *const *args, size_t n, unsigned flags,
		    sync_verifier_for_fn verifier_for, void *vctx,
		    void (*on_error)(void *ctx, const bg_err *err), void *ctx)
{
	bg_err err = {0};
	int rc = 0;
	if (sync_plan_init(p, root, &err) < 0) {
		on_error(ctx, &err);
		return BG_EUSAGE;
	}
	for (size_t i = 0; i < n; i++)
		if (sync_plan_add(p, args[i], flags, &err) < 0) {
			on_error(ctx, &err);
			rc = BG_EUSAGE;
		}
	if (!rc && (rc = sync_plan_finish(p, verifier_for, vctx, &err)) < 0)
		on_error(ctx, &err);
	return rc < 0 ? rc : 0;
}

int sync_push_files(const char *root, char *const *files, size_t n_files,
		    const sync_target *targets, size_t n, sync_opts *opts, const char *python,
		    const sync_push_files_cb *cb)
{
	sync_plan plan;
	sync_job job;
	int rc = sync_plan_build(&plan, root, files, n_files, SYNC_ADD_NEED_LOCAL,
				 opts->verifier_for, opts->verifier_ctx, cb->plan_error, cb->ctx);
	if (rc < 0) {
		sync_plan_release(&plan);
		return bg_exit_code(rc);
	}
	opts->fsync = true;
	sync_job_init(&job, targets, n, &plan, opts, cb->report, cb->ctx);
	int code = sync_job_push(&job, python, false, &cb->checks);
	if (!code) {
		sync_plan_wait(&plan, NULL);
		code = sync_exit_code(job.boxes, job.n);
	}
	sync_job_release(&job);
	sync_plan_release(&plan);
	return code;
}
