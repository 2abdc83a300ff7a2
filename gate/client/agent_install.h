/* Installing the on-box agent: content-addressed under ~/.cache/boxgate on
 * the box, the prebuilt binary when it runs there, else compiled on the box
 * from the same source with its cc. */
#ifndef BG_GATE_AGENT_INSTALL_H
#define BG_GATE_AGENT_INSTALL_H

#include <stdbool.h>

#include "base/error.h"
#include "remote/remote.h"

typedef struct gate_agent {
	char *binary;  /* the local prebuilt agent (owned) */
	char *source;  /* its one C file (owned) */
	char *libexec; /* the directory boxgate's helpers live in (owned) */
	char sha[65];  /* SHA-256 of the source: the content address */
} gate_agent;

/* Finds the agent beside the running boxgate (build/ or libexec/boxgate/). */
int gate_agent_locate(gate_agent *a, bg_err *err);
void gate_agent_release(gate_agent *a);

typedef enum { AGENT_PRESENT, AGENT_UPLOADED, AGENT_COMPILED, AGENT_LOCAL } gate_agent_how;

/* Makes sure the agent is on the box; *path is the command word to run it
 * (owned; "$HOME"-relative and already quoted for the remote shell). `force`
 * reinstalls even when the right version is there. */
int gate_agent_ensure(remote_conn *c, const gate_agent *a, bool force, char **path,
		      gate_agent_how *how, bg_err *err);

const char *gate_agent_how_name(gate_agent_how how);

/* The exit status of a command whose agent check failed ("no agent of this
 * version here"): none of the agent's own. */
#define GATE_AGENT_ABSENT_EXIT 97

/* The shell condition "an executable file is in the agent's place" (owned;
 * shell builtins, no process started), for a caller that folds the check into
 * a command it runs anyway (one channel, not two) and learns from the run
 * itself whether that file is the agent (gate/client/run_present.h); in *path
 * the command word gate_agent_ensure would give when it holds (owned). NULL
 * for the local box (nothing to check). */
char *gate_agent_probe(remote_conn *c, const gate_agent *a, char **path);

/* The agent's `args` (quoted words, e.g. "slots --gpus 0") on the box, stdout
 * captured into *out: when the right agent is there, one command does both the
 * presence check and the call (the round trip gate_agent_ensure would spend
 * anyway); else the agent is installed first. *path as for gate_agent_ensure. */
int gate_agent_capture(remote_conn *c, const gate_agent *a, const char *args, char **path,
		       char **out, bg_err *err);

#endif
