/* One push, status or rollback over a set of boxes: a sync_box per box on one
 * plan, the boxes acted on concurrently, each box's results handed to the
 * caller's report callback one box at a time, once the plan's hashes are
 * done. A push's whole pipeline: the local checks run while the boxes
 * connect (no box is touched when one refuses), each box pushed, then with
 * all-or-nothing every box committed or every box aborted. What a refused
 * file's verifier printed is grouped by text across boxes for the caller to
 * say once per group. Nothing here prints. */
#ifndef BG_SYNC_JOB_H
#define BG_SYNC_JOB_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "sync/box.h"
#include "sync/plan.h"

typedef struct sync_job {
	sync_plan *plan; /* borrowed, built */
	sync_opts *opts; /* borrowed */
	sync_box *boxes; /* one per target (owned) */
	size_t n;
	pthread_mutex_t mu; /* serialises reports (and a caller's progress display) */
	/* One box's results, called with mu held. */
	void (*report)(void *ctx, const sync_box *b);
	void *ctx;
	/* the push pipeline's local checks (sync_job_push) */
	pthread_t checker;
	bool checking, checked;
	int local_code;
	pthread_cond_t checked_cv;
	const char *python;
	const sync_local_checks_cb *checks;
} sync_job;

/* A box per target (targets copied), on plan p with opts; report and ctx as
 * in the struct. */
void sync_job_init(sync_job *j, const sync_target *targets, size_t n, sync_plan *p, sync_opts *opts,
		   void (*report)(void *ctx, const sync_box *b), void *ctx);
void sync_job_release(sync_job *j);

/* Calls fn(j, b, ctx) on every box concurrently; returns once all returned. */
void sync_job_each(sync_job *j, void (*fn)(sync_job *j, sync_box *b, void *ctx), void *ctx);

/* Reports box b (the report callback under mu), once its plan's hashes are
 * done. */
void sync_job_report(sync_job *j, const sync_box *b);

/* push: the local checks of the plan (with python, refusals told through
 * checks; no_local_check: none) in a thread of their own while every box
 * connects and probes (opts->ready waits for them), each box pushed and,
 * without all-or-nothing, unlocked and reported as it is done; with
 * all-or-nothing, once all are done, every box committed when every one
 * passed, else every one aborted, and each reported; then every box
 * disconnected. When a local check refused no box is reported, and the
 * result is its code (BG_EXIT_VERIFY); else 0. */
int sync_job_push(sync_job *j, const char *python, bool no_local_check,
		  const sync_local_checks_cb *checks);

/* What a refused file (plan item `item`) had its verifier print, one call
 * of fn per distinct text, in the order of the first box that printed it:
 * the text and the names of every box that printed the same (names[0..k)).
 * `boxes` in the order wanted (borrowed). */
void sync_job_verify_groups(const sync_box *const *boxes, size_t n, size_t item,
			    void (*fn)(void *ctx, const char *out, const char *const *names,
				       size_t k, const sync_box *first),
			    void *ctx);

#endif
