#include "gate/client/run_present.h"

#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "gate/agent_proto.h"
#include "gate/client/run_state.h"

/* The fd the agent's stderr waits on while the shell's fd 2 is /dev/null. */
#define AGENT_ERR_FD "4"

/* `cmdline` starts the agent itself ("AGENT run ..."), not through a
 * launcher (srun) whose own words and exit would be its. */
static bool starts_agent(const char *cmdline, const char *path)
{
	const char *run = " " AGENT_CMD_RUN " ";
	size_t pl = path ? strlen(path) : 0;
	return pl && !strncmp(cmdline, path, pl) && !strncmp(cmdline + pl, run, strlen(run));
}

char *gate_present_command(remote_conn *c, const gate_present *p, const char *cmdline)
{
	strbuf s = STRBUF_INIT;
	char *path = NULL;
	char *guard = p->known ? NULL : gate_agent_probe(c, p->agent, &path);
	if (guard)
		strbuf_addf(&s, "{ %s; } || exit %d; ", guard, GATE_AGENT_ABSENT_EXIT);
	if (p->prelude && !p->prelude_ran)
		strbuf_addf(&s, "{ %s\n} 2>/dev/null </dev/null; ", p->prelude->text);
	/* A file in the agent's place that does not run (another machine's build
	 * on a shared home, a damaged one): the shell's complaint goes to
	 * /dev/null, so the run ends 126 or 127 with no line at all; the agent,
	 * once it runs, takes its stderr back from fd 4. `exec` moves the shell's
	 * own fds (a redirection on the agent's word would cost the shell a fork:
	 * it then no longer execs its last command in place). */
	if (guard && starts_agent(cmdline, path))
		strbuf_addf(&s,
			    "exec " AGENT_ERR_FD ">&2 2>/dev/null; %s " AGENT_CMD_RUN
			    " " AGENT_OPT_STDERR_FD " " AGENT_ERR_FD " %s",
			    path, cmdline + strlen(path) + strlen(" " AGENT_CMD_RUN " "));
	else
		strbuf_addstr(&s, cmdline);
	free(path);
	free(guard);
	return strbuf_detach(&s);
}

/* No agent ran: the check failed (GATE_AGENT_ABSENT_EXIT), or what is in
 * the agent's place is not the agent (a file the shell cannot execute: 126;
 * any other program, /bin/true or one that talks): the command exited with
 * no line framed with the run's nonce, and what it said before was held back
 * and dropped (or it said nothing). The agent frames its first line (the
 * slot's lock, or its end report) before any gate starts; a gate's own silent
 * exit comes with the agent's framed end report. */
static bool absent(const gate_outcome *o)
{
	return o->status.how == REMOTE_EXITED && !o->agent_spoke &&
	       (!o->output_past_prelude || o->unframed_dropped);
}

int gate_run_present(remote_conn *c, gate_present *p, const char *cmdline,
		     const gate_policy *policy, const gate_callbacks *cb,
		     volatile sig_atomic_t *stop, gate_outcome *out, bg_err *err)
{
	bool checked = !p->known && remote_target_of(c)->transport != REMOTE_TRANSPORT_LOCAL;
	/* Held back only where what starts is the agent itself: a launcher's
	 * failure (srun's) is its own, shown at once, never a missing agent. */
	char *word = NULL;
	char *guard = checked ? gate_agent_probe(c, p->agent, &word) : NULL;
	bool hold = guard && starts_agent(cmdline, word);
	free(guard);
	free(word);
	for (int attempt = 0;; attempt++) {
		char *cmd = gate_present_command(c, p, cmdline);
		const gate_prelude *pre = p->prelude && !p->prelude_ran ? p->prelude : NULL;
		int rc = gate_run_with(c, cmd, pre, hold && attempt == 0, policy, cb, stop, out,
				       err);
		free(cmd);
		if (rc < 0 || !checked || !absent(out)) {
			if (rc == 0 || out->output) {
				p->known = true;
				p->prelude_ran = p->prelude_ran || pre != NULL;
			}
			return rc;
		}
		if (stop && *stop) {
			out->interrupted = true;
			return 0;
		}
		out->agent_absent = true;
		p->prelude_ran = p->prelude_ran || (pre && out->prelude_ended);
		if (attempt > 0)
			return bg_fail(err, BG_EREMOTE,
				       "%s: the agent installed there fails its own check "
				       "(test -x, or it does not start)",
				       remote_target_of(c)->name);
		char *path = NULL;
		rc = gate_agent_ensure(c, p->agent, true, &path, &p->how, err);
		free(path);
		if (rc < 0)
			return rc;
		if (p->on_install)
			p->on_install(p->ctx, p->how);
	}
}
