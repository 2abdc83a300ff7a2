/* A detached campaign's state on the client: one directory per user
 * ($XDG_STATE_HOME/boxgate/campaigns, else ~/.local/state/boxgate/campaigns,
 * 0700) holding for each campaign NAME:
 *
 *   NAME.lock   held (flock) by the running campaign for its whole life, so a
 *               second detached run of NAME is refused and "is it running?" is
 *               answered by the kernel, never by a pid that may be reused;
 *   NAME.json   its state, rewritten whole (temp + rename) on every job event:
 *               pid, files, run id, counts, the job running on each slot,
 *               quarantined boxes, how it ended;
 *   NAME.log    what the campaign printed.
 *
 * The writer is thread-safe: the scheduler's workers report events at once. */
#ifndef BG_CAMPAIGN_STATE_H
#define BG_CAMPAIGN_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

struct cJSON;

/* The state directory, created (0700) when missing; refused when it is not a
 * directory of this user's or others can write it. Caller frees. */
char *campaign_state_dir(bg_err *err);

/* The state directory when it exists (never created: for readers that only
 * look), else NULL. Caller frees. */
char *campaign_state_dir_peek(void);

/* Takes NAME.lock for this process (the descriptor survives fork, not exec).
 * BG_EBUSY when another run holds it; *fd set otherwise. */
int campaign_state_lock(const char *dir, const char *name, int *fd, bg_err *err);

/* Whether a campaign holds NAME.lock now. */
bool campaign_state_running(const char *dir, const char *name);

/* "DIR/NAME.ext"; caller frees. */
char *campaign_state_path(const char *dir, const char *name, const char *ext);

typedef struct campaign_state campaign_state;

/* A writer for NAME.json, with what is known at the start. */
campaign_state *campaign_state_new(const char *dir, const char *name, const char *file,
				   const char *results, const char *log);
void campaign_state_begin(campaign_state *st, const char *run_id, size_t jobs,
			  size_t recorded_before, size_t slots);
void campaign_state_job_start(campaign_state *st, const char *slot, const char *job);
/* JOB's attempt ended: final (recorded), or cut and requeued. */
void campaign_state_job_end(campaign_state *st, const char *job, bool final, double secs);
void campaign_state_quarantined(campaign_state *st, const char *box);
/* How the run ended: "finished", "stopped" (jobs left), "cancelled"; exit code. */
void campaign_state_end(campaign_state *st, const char *how, int code, size_t left,
			const char *why);
/* Rewrites NAME.json now (the event functions do it themselves). */
int campaign_state_write(campaign_state *st, bg_err *err);
void campaign_state_free(campaign_state *st);

/* Reads NAME.json. BG_ENOTFOUND when there is none. */
int campaign_state_read(const char *dir, const char *name, struct cJSON **out, bg_err *err);

/* The campaign names that have a NAME.json in DIR, sorted. */
int campaign_state_list(const char *dir, char ***names, size_t *n, bg_err *err);

#endif
