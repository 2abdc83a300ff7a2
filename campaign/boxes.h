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

#endif
