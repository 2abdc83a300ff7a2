/* A Slurm step whose link was lost: while the client can still reach the login
 * node it cancels the step by its name at once, instead of leaving it to the
 * agent's heartbeat (heartbeat_timeout_s + kill_grace_s). */
#include "cli/slurm_cancel.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/quote.h"
#include "base/strbuf.h"
#include "cli/cli.h"
#include "gate/run.h"

bool cli_slurm_cancel(const conf_box *box, const char *cmdline, bool accept_new)
{
	char name[64];
	if (!box->slurm || !gate_slurm_job_name(cmdline, name, sizeof(name)))
		return false;
	remote_conn *c = NULL;
	bg_err err = {0};
	int rc = cli_connect(box, accept_new, &c, &err);
	if (rc == 0) {
		strbuf cmd = STRBUF_INIT;
		gate_slurm_env(&cmd, box);
		strbuf_addstr(&cmd, "scancel --name=");
		bg_quote(&cmd, name);
		remote_status st;
		rc = remote_run(c, cmd.buf, NULL, NULL, 30000, &st, &err);
		if (rc == 0 && (st.how != REMOTE_EXITED || st.code != 0))
			rc = bg_fail(&err, BG_EREMOTE, "scancel did not succeed");
		strbuf_release(&cmd);
	}
	remote_close(c);
	if (rc == 0)
		cli_printf(stderr, "boxgate: %s: the link was lost: cancelled Slurm job %s\n",
			   box->name, name);
	else
		cli_printf(stderr,
			   "boxgate: %s: the link was lost and Slurm job %s could not be "
			   "cancelled (%s): its agent ends it within %g s\n",
			   box->name, name, err.msg,
			   (box->heartbeat_timeout_ms + box->kill_grace_ms) / 1000.0);
	return rc == 0;
}
