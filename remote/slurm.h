/* A Slurm login node, contained the way ProxyJump is: a box whose target
 * carries a remote_slurm runs each gate as an srun step, lists boxgate's
 * steps with squeue and cancels a lost one with scancel. Every Slurm command
 * line boxgate sends is built here, each word through bg_quote. remote/ still
 * knows nothing of gates: the step runs whatever command line follows. */
#ifndef BG_REMOTE_SLURM_H
#define BG_REMOTE_SLURM_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "base/strbuf.h"
#include "remote/target.h"

struct remote_conn;
struct remote_connect_opts;

/* remote_slurm, the login node's settings, is in remote/target.h. */

/* Every step boxgate starts is named this and 16 random hex digits. */
#define REMOTE_SLURM_JOB_PREFIX "boxgate-"

/* "SLURM_CONF=PATH " when sl->conf is set (before srun, squeue, scancel). */
void remote_slurm_env(strbuf *s, const remote_slurm *sl);
/* Appends "[SLURM_CONF=..] srun --quiet --ntasks=1 --job-name=boxgate-ID --gres G
 * [--partition P] [ARGS...] " with a fresh random ID: the command line that
 * follows runs as that step. */
void remote_slurm_step(strbuf *s, const remote_slurm *sl);
/* The step name in a command line remote_slurm_step began; false when none
 * (or it does not fit in n). */
bool remote_slurm_job_name(const char *cmdline, char *out, size_t n);

/* One of boxgate's steps as squeue lists it (pointers into the parsed text). */
typedef struct remote_slurm_job {
	const char *id, *state, *gres, *node, *elapsed, *user, *name;
} remote_slurm_job;

/* The squeue command line remote_slurm_parse_queue reads (owned). */
char *remote_slurm_queue_cmd(const remote_slurm *sl);
/* Splits squeue's output (modified in place) into boxgate's steps (jobs named
 * REMOTE_SLURM_JOB_PREFIX...), others and malformed lines left out; *jobs is
 * owned (free()), its strings point into `out`. Returns the count. */
size_t remote_slurm_parse_queue(char *out, remote_slurm_job **jobs);
/* squeue on the login node c is connected to, parsed as above; *text owns the
 * strings (free() both). 0, or a negative bg error. */
int remote_slurm_queue(struct remote_conn *c, const remote_slurm *sl, char **text,
		       remote_slurm_job **jobs, size_t *n, bg_err *err);

/* The scancel command line for step `name` (owned). */
char *remote_slurm_cancel_cmd(const remote_slurm *sl, const char *name);
/* Runs scancel for step `name` on c's login node: 0, or a negative bg error. */
int remote_slurm_cancel(struct remote_conn *c, const remote_slurm *sl, const char *name,
			bg_err *err);

/* After the link to a Slurm box was lost mid-run: reconnects to its login node
 * (`link`) and cancels the step `cmdline` began. Returns false (msg empty)
 * when cmdline started no step; else true, with msg the one line to say:
 * "the link was lost: cancelled Slurm job NAME", or why it could not be and
 * that the agent ends it within `ends_within_s`. */
bool remote_slurm_cancel_lost(const remote_target *t, const struct remote_connect_opts *link,
			      const char *cmdline, double ends_within_s, char *msg, size_t n);

#endif
