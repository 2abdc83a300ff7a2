/* What a campaign keeps per box before anything connects: room for each
 * job's gate view, each file candidate's overlay (its file placed at the
 * box's kernel path, checked against what the campaign read), and their
 * release. The gate views' contents (the job's arguments through the box's
 * shim) are the caller's. */
#ifndef BG_CAMPAIGN_BOXES_H
#define BG_CAMPAIGN_BOXES_H

#include <stddef.h>

#include "base/error.h"
#include "campaign/sched.h"
#include "campaign/spec.h"
#include "conf/conf.h"
#include "measure/gate_args.h"

/* Box sb's per-job gate views (n_jobs, zeroed), per-candidate overlays
 * (n_cands, empty) and lock. */
void campaign_box_init(sched_box *sb, size_t n_jobs, size_t n_cands);

/* The overlay of every file candidate of sp on box sb: the file at the
 * box's kernel_paths entry for the gate kind `kind`, its content the one
 * the campaign read (its SHA-256). BG_EUSAGE, err saying why as the user
 * reads it, when the gate arguments name no kind, the box has no kernel
 * path for it or no repo, the file cannot be read, or it changed since. */
int campaign_box_candidates(sched_box *sb, const campaign_spec *sp, const char *kind, bg_err *err);

/* Frees what campaign_box_init and campaign_box_candidates made and what
 * the scheduler read of the box (its push manifest); NULL-safe per part. */
void campaign_box_release(sched_box *sb, size_t n_cands);

/* Every box's gate arguments per job (box * n_jobs + job): what the
 * scheduler's sched_gate views point into. */
typedef struct campaign_box_args {
	gate_args *ga;
	bool *ok; /* ga[i] was built (to release) */
	size_t n;
	size_t bad_box, bad_job; /* the job a box's shim refused; SIZE_MAX: none */
} campaign_box_args;

/* Every job's gate arguments (s->jobs) through every box's shim (s->boxes,
 * each campaign_box_init'ed here) and every file candidate checked against
 * every box, before anything connects; `agent` (NULL: found here, once). `cmd` names the
 * refusals. Returns 0, else an exit code (base/exit.h) with err saying why:
 * a job a box refuses sets ba->bad_box and ba->bad_job. */
int campaign_boxes_prepare(const conf *cf, const campaign_spec *sp, const char *cmd, bool json,
			   const gate_agent *agent, sched *s, campaign_box_args *ba, bg_err *err);
/* Frees ba and every box of s (campaign_box_release), and s->boxes. */
void campaign_boxes_release(sched *s, size_t n_cands, campaign_box_args *ba);

#endif
