/* A gate run whose one command also checks that the agent is on the box:
 * the check that gate_agent_ensure would spend a channel (a round trip or
 * two) on rides in front of the run: shell builtins (an executable file in
 * the agent's place), no process of its own; whether that file is the agent
 * the run says, as the agent frames its first line with the run's nonce.
 * Only when the check fails (the command exits GATE_AGENT_ABSENT_EXIT, or
 * what is there is not the agent: an exit with no line but the prelude's,
 * none framed) is the agent installed and the run started again. Nothing of a run whose check
 * failed reaches the callbacks, so the caller sees one run. */
#ifndef BG_GATE_CLIENT_RUN_PRESENT_H
#define BG_GATE_CLIENT_RUN_PRESENT_H

#include <stdbool.h>

#include "gate/client/agent_install.h"
#include "gate/client/run.h"

typedef struct gate_present {
	const gate_agent *agent;
	/* The agent is known to be there (an earlier run of this connection
	 * used it): no check. Set once a run got past the check. */
	bool known;
	/* Run in front of the agent once, by the first command that gets past
	 * the check (NULL: none); `prelude_ran` says that happened. */
	const gate_prelude *prelude;
	bool prelude_ran;
	/* AGENT_PRESENT, or how a run installed it; on_install (may be NULL)
	 * is told right after the install, before the run starts again. */
	gate_agent_how how;
	void (*on_install)(void *ctx, gate_agent_how how);
	void *ctx;
} gate_present;

/* The command line gate_run_present runs (owned): `cmdline` behind the
 * check and the prelude when p asks for them. */
char *gate_present_command(remote_conn *c, const gate_present *p, const char *cmdline);

/* gate_run of `cmdline` (whose agent word is the one gate_agent_probe gives)
 * with the check in front; the same returns as gate_run. An agent that still
 * fails the check after its install ends the run with BG_EREMOTE. */
int gate_run_present(remote_conn *c, gate_present *p, const char *cmdline,
		     const gate_policy *policy, const gate_callbacks *cb,
		     volatile sig_atomic_t *stop, gate_outcome *out, bg_err *err);

#endif
