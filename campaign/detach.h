/* A detached campaign's process and what looks after it: the fork that leaves
 * the terminal (holding the campaign's lock, its output going to its log),
 * whether it still runs, how many of its records a results file holds, its log
 * copied out, and its stop. The state and the lock are campaign/state.h's;
 * the words about them are the caller's. */
#ifndef BG_CAMPAIGN_DETACH_H
#define BG_CAMPAIGN_DETACH_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "campaign/state.h"

struct cJSON;

/* What the campaign is doing now, from its state `st` (NAME.json) and its
 * lock: the state it wrote while it holds the lock ("ending" when that state
 * is no longer a running one); "died" when it wrote that it runs, or wrote
 * nothing, but holds the lock no more (killed). */
const char *campaign_liveness(const char *dir, const char *name, const struct cJSON *st);

/* The records of run RUN_ID in the results file RESULTS that carry a
 * "campaign" object: *final those marked final, *cut the others. */
int campaign_count_run(const char *results, const char *run_id, size_t *final, size_t *cut,
		       bg_err *err);

typedef struct campaign_detached {
	campaign_state *st; /* the detached process: the state writer to feed (owned) */
	long pid;           /* the first process: the detached process's pid */
	char *log;          /* DIR/NAME.log (owned) */
	int ready_fd;       /* the detached process: where campaign_detach_ready says it runs */
} campaign_detached;

/* Takes NAME's lock (BG_EBUSY while another detached run of NAME holds it)
 * and forks a process in a session of its own, forked once more so it can never
 * regain a terminal, whose stdin is /dev/null and whose stdout and stderr go
 * to NAME.log. In that process it returns 1 with d->st a new state writer and
 * d->log set; it must call campaign_detach_ready once it has said what it
 * wants in its log. In the first process it waits for that and returns 0 with
 * d->pid set, or BG_EIO when the detached process did not start (its log says
 * why). The lock's descriptor stays open in the detached process (close-on-exec)
 * for its life. Release d with campaign_detached_release. */
int campaign_detach_fork(const char *dir, const char *name, const char *file, const char *results,
			 campaign_detached *d, bg_err *err);

/* The detached process tells the first one it runs. */
void campaign_detach_ready(campaign_detached *d);

void campaign_detached_release(campaign_detached *d);

/* Copies NAME.log to out(ctx, bytes, n); with `follow`, keeps copying until
 * the campaign no longer runs and the log has nothing more. BG_ENOTFOUND when
 * there is no log. */
int campaign_log_copy(const char *dir, const char *name, bool follow,
		      void (*out)(void *ctx, const char *buf, size_t n), void *ctx, bg_err *err);

/* Stops the running campaign NAME whose state names `pid`: SIGTERM (it ends
 * as Ctrl-C ends a campaign), nothing more. BG_ENOTFOUND when it does not run,
 * BG_EIO when it cannot be signalled. */
int campaign_stop(const char *dir, const char *name, long pid, bg_err *err);

/* Waits until NAME holds its lock no more; BG_ETIMEOUT after timeout_ms. */
int campaign_wait_end(const char *dir, const char *name, long timeout_ms);

#endif
