/* What earlier runs of a campaign recorded: the jobs whose final record the
 * results file holds (they do not run again), and the cells whose records
 * are of an earlier definition of their candidate (gate arguments, flags,
 * kernel file changed: they run again, their old records do not count). */
#ifndef BG_CAMPAIGN_RECORDED_H
#define BG_CAMPAIGN_RECORDED_H

#include <stdbool.h>
#include <signal.h>
#include <stddef.h>

#include "base/error.h"
#include "campaign/spec.h"
#include "results/store.h"

typedef struct campaign_recorded {
	bool *done;    /* per job: its final record is there (owned) */
	bool *changed; /* per job: its cell has records of an earlier definition (owned) */
	char **why;    /* per candidate: what changed (owned), NULL when nothing */
	size_t n_cands;
	size_t count; /* jobs done */
} campaign_recorded;

/* Reads RESULTS (a file that does not exist holds nothing: 0) for the final
 * records of campaign sp's jobs[0..n). *r is set either way; release it.
 * st (may be NULL) gets the file's torn and bad lines. */
int campaign_recorded_scan(const campaign_spec *sp, const campaign_job *jobs, size_t n,
			   const char *results, campaign_recorded *r, results_read_stats *st,
			   bg_err *err);

/* The cells that changed definition and have no record under the current
 * one; cand_changed[c] (sp->n_cands of them) set for each cell's candidate. */
size_t campaign_recorded_changed_cells(const campaign_spec *sp, const campaign_job *jobs, size_t n,
				       const campaign_recorded *r, bool *cand_changed);

void campaign_recorded_release(campaign_recorded *r);

/* Opens the results file (a regular file, created when missing) into *fd
 * and locks it for this run: an open-file-description lock, which conflicts
 * with another run's but not with the flock each append takes, and which
 * closing other descriptors of the file does not drop. When another run
 * holds it, waiting(ctx) is called once and the lock waited for until that
 * run ends, or until a signal finds *stop set (then *stopped). 0, or BG_EIO
 * with err saying why ("campaign NAME: ..."); the caller closes *fd when it
 * is >= 0, either way. */
int campaign_results_lock(const campaign_spec *sp, volatile sig_atomic_t *stop,
			  void (*waiting)(void *ctx), void *ctx, int *fd, bool *stopped,
			  bg_err *err);

#endif
