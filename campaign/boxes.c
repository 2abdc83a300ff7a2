/* A campaign's per-box preparations (campaign/boxes.h). */
#include "campaign/boxes.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
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

int campaign_boxes_prepare(const conf *cf, const campaign_spec *sp, const char *cmd, bool json,
			   const gate_agent *agent, sched *s, campaign_box_args *ba, bg_err *err)
{
	char bar[32] = "";
	gate_agent own;
	ba->bad_box = ba->bad_job = SIZE_MAX;
	if (!agent) { /* once, not per job and box */
		if (gate_agent_locate(&own, err) < 0)
			return BG_EXIT_FAIL;
		agent = &own;
	}
	char *tag = xasprintf("campaign:%s", sp->name);
	gate_args_in in = {.cmd = cmd,
			   .timeout_s = sp->timeout_s,
			   .holder = tag,
			   .json = json,
			   .agent = agent};
	if (sp->bar > 0) {
		snprintf(bar, sizeof(bar), "%g", sp->bar);
		in.bar = bar;
	}
	const char *kind = measure_gate_kind(sp->gate_args, sp->n_gate_args);
	int code = 0;
	ba->n = s->n_boxes * s->n_jobs;
	ba->ga = xcalloc(ba->n ? ba->n : 1, sizeof(*ba->ga));
	ba->ok = xcalloc(ba->n ? ba->n : 1, sizeof(bool));
	for (size_t b = 0; b < s->n_boxes && !code; b++) {
		sched_box *sb = &s->boxes[b];
		gate_args *ga = &ba->ga[b * s->n_jobs];
		bool *ok = &ba->ok[b * s->n_jobs];
		campaign_box_init(sb, s->n_jobs, sp->n_cands);
		in.box = sb->box->name;
		for (size_t j = 0; j < s->n_jobs && !code; j++) {
			int rc = gate_args_build(cf, &in, s->jobs[j].words, s->jobs[j].n_words,
						 &ga[j], err);
			ok[j] = true;
			sb->gate[j] = (sched_gate){.spec = ga[j].spec, .bar = ga[j].bar};
			if (rc < 0) {
				ba->bad_box = b;
				ba->bad_job = j;
				code = rc == BG_EUSAGE ? BG_EXIT_USAGE : BG_EXIT_FAIL;
			}
		}
		if (!code && campaign_box_candidates(sb, sp, kind, err) < 0)
			code = BG_EXIT_USAGE;
	}
	if (agent == &own)
		gate_agent_release(&own);
	free(tag);
	return code;
}

void campaign_boxes_release(sched *s, size_t n_cands, campaign_box_args *ba)
{
	for (size_t i = 0; i < ba->n; i++)
		if (ba->ok[i])
			gate_args_release(&ba->ga[i]);
	free(ba->ga);
	free(ba->ok);
	for (size_t b = 0; s->boxes && b < s->n_boxes; b++)
		campaign_box_release(&s->boxes[b], n_cands);
	free(s->boxes);
}
