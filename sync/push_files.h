/* A plan from the operands a command was given, and one push of local files
 * to a set of boxes on such a plan: what `boxgate push` runs (its plan
 * through sync_plan_build) and what a campaign pushes its sources with
 * (sync_push_files) before its first job. Nothing prints: each operand's
 * refusal, each box's report and each local check's refusal go to the
 * caller's callbacks. */
#ifndef BG_SYNC_PUSH_FILES_H
#define BG_SYNC_PUSH_FILES_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "sync/job.h"
#include "sync/plan.h"

/* sync_plan_init at root, every operand args[0..n) added with `flags` (each
 * refusal told to on_error: all of them, not only the first), then
 * sync_plan_finish with verifier_for. Returns 0, or the first failure's code
 * (BG_EUSAGE for an operand or the root; sync_plan_finish's own otherwise).
 * p is to be released either way. */
int sync_plan_build(sync_plan *p, const char *root, char *const *args, size_t n, unsigned flags,
		    sync_verifier_for_fn verifier_for, void *vctx,
		    void (*on_error)(void *ctx, const bg_err *err), void *ctx);

typedef struct sync_push_files_cb {
	void (*plan_error)(void *ctx, const bg_err *err); /* an operand refused */
	void (*report)(void *ctx, const sync_box *b);     /* one box's results, serialised */
	sync_local_checks_cb checks;                      /* what the local checks said */
	void *ctx;
} sync_push_files_cb;

/* Pushes files[0..n_files) (local paths, relative to root) to every target
 * with opts (its verifier_for and verifier_ctx build the plan), the local
 * checks with python beside the boxes (sync_job_push), and waits for the
 * plan's hashes. Returns the push's exit code (base/exit.h): an operand's
 * refusal, a local check's, else sync_exit_code over the boxes. */
int sync_push_files(const char *root, char *const *files, size_t n_files,
		    const sync_target *targets, size_t n, sync_opts *opts, const char *python,
		    const sync_push_files_cb *cb);

#endif
