#include "gate/client/run_present.h"

#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "gate/client/run_state.h"

char *gate_present_command(remote_conn *c, const gate_present *p, const char *cmdline)
{
	strbuf s = STRBUF_INIT;
	char *path = NULL;
	char *guard = p->known ? NULL : gate_agent_probe(c, p->agent, &path);
	free(path);
	if (guard)
		strbuf_addf(&s, "{ %s; } || exit %d; ", guard, GATE_AGENT_ABSENT_EXIT);
	if (p->prelude && !p->prelude_ran)
		strbuf_addf(&s, "{ %s\n} 2>/dev/null </dev/null; ", p->prelude->text);
	strbuf_addstr(&s, cmdline);
	free(guard);
	return strbuf_detach(&s);
}

/* The check failed: the command's own exit status, no line, no end report. */
static bool absent(const gate_outcome *o)
{
	return o->status.how == REMOTE_EXITED && o->status.code == GATE_AGENT_ABSENT_EXIT &&
	       !o->output && !o->agent_end;
}

int gate_run_present(remote_conn *c, gate_present *p, const char *cmdline,
		     const gate_policy *policy, const gate_callbacks *cb,
		     volatile sig_atomic_t *stop, gate_outcome *out, bg_err *err)
{
	bool checked = !p->known && remote_target_of(c)->transport != REMOTE_TRANSPORT_LOCAL;
	for (int attempt = 0;; attempt++) {
		char *cmd = gate_present_command(c, p, cmdline);
		const gate_prelude *pre = p->prelude && !p->prelude_ran ? p->prelude : NULL;
		int rc = gate_run_with(c, cmd, pre, policy, cb, stop, out, err);
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
		if (attempt > 0)
			return bg_fail(err, BG_EREMOTE,
				       "%s: the agent installed there fails its own check "
				       "(test -x, version)",
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
