/* A campaign's per-box preparations (campaign/boxes.h). */
#include "campaign/boxes.h"

#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "measure/kernel.h"

void campaign_box_init(sched_box *sb, size_t n_jobs, size_t n_cands)
{
	sb->gate = xcalloc(n_jobs ? n_jobs : 1, sizeof(*sb->gate));
	sb->ov = xcalloc(n_cands ? n_cands : 1, sizeof(*sb->ov));
	sb->ov_env = xcalloc(n_cands ? n_cands : 1, sizeof(char *));
	pthread_mutex_init(&sb->mu, NULL);
}

int campaign_box_candidates(sched_box *sb, const campaign_spec *sp, const char *kind, bg_err *err)
{
	for (size_t c = 0; c < sp->n_cands; c++) {
		const campaign_candidate *cd = &sp->cands[c];
		if (!cd->file)
			continue;
		const char *rel = measure_kernel_path(sb->box, kind);
		bg_err oerr = {0};
		if (!kind)
			return bg_fail(err, BG_EUSAGE,
				       "campaign: %s:%d: candidate %s is a kernel file, and the "
				       "gate_args name no --kind to place it by",
				       sp->file, sp->line, cd->shown);
		if (!rel)
			return bg_fail(err, BG_EUSAGE,
				       "campaign: box %s names no kernel path for --kind %s, so "
				       "candidate %s has no place (add %s:PATH to kernel_paths "
				       "under [box %s] in %s)",
				       sb->box->name, kind, cd->shown, kind, sb->box->name,
				       sb->box->file);
		if (!sb->box->repo)
			return bg_fail(err, BG_EUSAGE,
				       "campaign: box %s has no repo for candidate %s's overlay",
				       sb->box->name, cd->shown);
		if (overlay_add(&sb->ov[c], cd->file, rel, &oerr) < 0)
			return bg_fail(err, BG_EUSAGE, "campaign: candidate %s: %s", cd->shown,
				       oerr.msg);
		if (strcmp(sb->ov[c].f[0].sha, cd->sha) != 0)
			return bg_fail(err, BG_EUSAGE,
				       "campaign: candidate %s changed while the campaign read it; "
				       "run it again",
				       cd->shown);
	}
	return 0;
}

void campaign_box_release(sched_box *sb, size_t n_cands)
{
	for (size_t c = 0; sb->ov && c < n_cands; c++) {
		overlay_release(&sb->ov[c]);
		free(sb->ov_env[c]);
	}
	if (sb->gate)
		pthread_mutex_destroy(&sb->mu);
	free(sb->gate);
	free(sb->ov);
	free(sb->ov_env);
	free(sb->pushed);
	free(sb->pushed_error);
	sb->gate = NULL;
	sb->ov = NULL;
	sb->ov_env = NULL;
	sb->pushed = sb->pushed_error = NULL;
}
