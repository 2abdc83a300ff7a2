/* Slurm's commands on a login node: the srun prefix of a gate's step, squeue
 * for boxgate's steps, scancel for a step whose client lost its link. */
#include "remote/slurm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/quote.h"
#include "base/random.h"
#include "base/xmalloc.h"
#include "remote/remote.h"

void remote_slurm_env(strbuf *s, const remote_slurm *sl)
{
	if (sl->conf) {
		strbuf_addstr(s, "SLURM_CONF=");
		bg_quote_path(s, sl->conf);
		strbuf_addch(s, ' ');
	}
}

static void add_opt(strbuf *s, const char *name, const char *value)
{
	strbuf_addch(s, ' ');
	strbuf_addstr(s, name);
	strbuf_addch(s, ' ');
	bg_quote(s, value);
}

void remote_slurm_step(strbuf *s, const remote_slurm *sl)
{
	/* A step on a compute node: Slurm picks the GPUs (gres) and the agent takes
	 * the ones it was given. No --exclusive by default: outside an allocation it
	 * takes the whole node, one gate per node. */
	remote_slurm_env(s, sl);
	/* a name of its own, so a client that lost the link can scancel it */
	char id[17];
	bg_random_hex(id, 8);
	strbuf_addf(s, "srun --quiet --ntasks=1 --job-name=" REMOTE_SLURM_JOB_PREFIX "%s", id);
	add_opt(s, "--gres", sl->gres ? sl->gres : "gpu:1");
	if (sl->partition)
		add_opt(s, "--partition", sl->partition);
	for (size_t i = 0; i < sl->n_srun_args; i++) {
		strbuf_addch(s, ' ');
		bg_quote(s, sl->srun_args[i]);
	}
	strbuf_addch(s, ' ');
}

bool remote_slurm_job_name(const char *cmdline, char *out, size_t n)
{
	const char *p = strstr(cmdline, "--job-name=" REMOTE_SLURM_JOB_PREFIX);
	if (!p)
		return false;
	p += strlen("--job-name=");
	size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789-");
	if (len + 1 > n)
		return false;
	memcpy(out, p, len);
	out[len] = '\0';
	return true;
}

char *remote_slurm_queue_cmd(const remote_slurm *sl)
{
	strbuf cmd = STRBUF_INIT;
	remote_slurm_env(&cmd, sl);
	strbuf_addstr(&cmd, "squeue -h -o '%i|%T|%b|%N|%M|%u|%j'");
	return strbuf_detach(&cmd);
}

size_t remote_slurm_parse_queue(char *out, remote_slurm_job **jobs)
{
	size_t n = 0;
	*jobs = NULL;
	for (char *l = out, *e; l && *l; l = e ? e + 1 : NULL) {
		e = strchr(l, '\n');
		if (e)
			*e = '\0';
		char *f[7] = {0};
		int nf = 0;
		for (char *p = l; nf < 7; nf++) {
			f[nf] = p;
			p = strchr(p, '|');
			if (!p) {
				nf++;
				break;
			}
			*p++ = '\0';
		}
		if (nf < 7 ||
		    strncmp(f[6], REMOTE_SLURM_JOB_PREFIX, strlen(REMOTE_SLURM_JOB_PREFIX)) != 0)
			continue; /* not boxgate's */
		*jobs = xrealloc(*jobs, (n + 1) * sizeof(**jobs));
		(*jobs)[n++] = (remote_slurm_job){
			.id = f[0],
			.state = f[1],
			.gres = f[2],
			.node = f[3],
			.elapsed = f[4],
			.user = f[5],
			.name = f[6],
		};
	}
	return n;
}

int remote_slurm_queue(remote_conn *c, const remote_slurm *sl, char **text, remote_slurm_job **jobs,
		       size_t *n, bg_err *err)
{
	char *cmd = remote_slurm_queue_cmd(sl);
	size_t len = 0;
	remote_status st;
	*text = NULL;
	*jobs = NULL;
	*n = 0;
	int rc = remote_capture(c, cmd, 1 << 20, 30000, text, &len, &st, err);
	free(cmd);
	if (rc == 0 && (st.how != REMOTE_EXITED || st.code != 0))
		rc = bg_fail(err, BG_EREMOTE, "%s: squeue failed (%s)", remote_target_of(c)->name,
			     st.how == REMOTE_EXITED ? "non-zero exit" : "no exit status");
	if (rc < 0) {
		free(*text);
		*text = NULL;
		return rc;
	}
	*n = remote_slurm_parse_queue(*text, jobs);
	return 0;
}

char *remote_slurm_cancel_cmd(const remote_slurm *sl, const char *name)
{
	strbuf cmd = STRBUF_INIT;
	remote_slurm_env(&cmd, sl);
	strbuf_addstr(&cmd, "scancel --name=");
	bg_quote(&cmd, name);
	return strbuf_detach(&cmd);
}

int remote_slurm_cancel(remote_conn *c, const remote_slurm *sl, const char *name, bg_err *err)
{
	char *cmd = remote_slurm_cancel_cmd(sl, name);
	remote_status st;
	int rc = remote_run(c, cmd, NULL, NULL, 30000, &st, err);
	if (rc == 0 && (st.how != REMOTE_EXITED || st.code != 0))
		rc = bg_fail(err, BG_EREMOTE, "scancel did not succeed");
	free(cmd);
	return rc;
}

bool remote_slurm_cancel_lost(const remote_target *t, const remote_connect_opts *link,
			      const char *cmdline, double ends_within_s, char *msg, size_t n)
{
	char name[64];
	msg[0] = '\0';
	if (!t->slurm || !remote_slurm_job_name(cmdline, name, sizeof(name)))
		return false;
	remote_conn *c = NULL;
	bg_err err = {0};
	int rc = remote_connect(t, link, &c, &err);
	if (rc == 0)
		rc = remote_slurm_cancel(c, t->slurm, name, &err);
	remote_close(c);
	if (rc == 0)
		snprintf(msg, n, "the link was lost: cancelled Slurm job %s", name);
	else
		snprintf(msg, n,
			 "the link was lost and Slurm job %s could not be cancelled (%s): its "
			 "agent ends it within %g s",
			 name, err.msg, ends_within_s);
	return true;
}
