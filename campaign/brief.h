/* `boxgate brief`: the text to hand whoever writes a candidate kernel for one
 * shape of a campaign: the exact gate command, the measured baseline, the
 * target, the worker-count sweep and the constraints a candidate must keep. */
#ifndef BG_CAMPAIGN_BRIEF_H
#define BG_CAMPAIGN_BRIEF_H

#include <stdbool.h>

#include "base/error.h"
#include "base/strbuf.h"
#include "campaign/points.h"

typedef struct campaign_brief_opts {
	const char *shape;  /* the shape the brief is for */
	double reference;   /* us; NAN: each num_workers' measured baseline median */
	const char *kernel; /* the candidate file for --kernel; NULL: a placeholder */
	/* What checking the command against the configuration found (the caller's
	 * job: the engine reads no configuration). */
	bool no_kernel;   /* suggest no --kernel: the pool's boxes cannot place a candidate */
	bool no_command;  /* suggest no command at all: the configuration refuses it */
	const char *note; /* said under the command (why, or that it went unchecked); NULL */
} campaign_brief_opts;

/* Appends the brief for o->shape to *out. BG_EUSAGE when the shape is not in
 * the campaign, BG_ENOTFOUND when it has no baseline sample; err->msg names
 * the shape and lists the shapes present. */
int campaign_brief_text(const campaign_points *p, const campaign_brief_opts *o, strbuf *out,
			bg_err *err);

#endif
