/* Running a gate on a box through its agent: the remote command, the
 * heartbeat, Ctrl-C forwarded as a clean kill, every line streamed back and
 * every FAITHFUL_RESULT line judged. */
#ifndef BG_GATE_RUN_H
#define BG_GATE_RUN_H

#include <signal.h>
#include <stdbool.h>

#include "base/error.h"
#include "gate/result.h"
#include "remote/remote.h"
#include "shim/shim.h"

typedef struct gate_spec {
	const conf_box *box;
	const char *agent;   /* command word for the agent (quoted) */
	const char *entry;   /* the gate's entry point (relative to repo or absolute) */
	const char *gpus;    /* slot GPUs "0" / "0,1", NULL for a CPU slot */
	const shim_result *shim;
	int timeout_s, grace_s, heartbeat_s, lock_wait_s;
	bool require_gpu;
	const char *tag;     /* holder tag for the slot lock */
} gate_spec;

/* The remote command line (owned): AGENT run OPTIONS -- ENTRY ARGS, every
 * word through shim_quote. */
char *gate_command_line(const gate_spec *spec);

typedef struct gate_callbacks {
	/* Every line the gate or agent prints, as it arrives. */
	void (*on_line)(void *ctx, remote_stream s, const char *line, size_t len, int flags);
	/* Every FAITHFUL_RESULT line, parsed and judged (borrowed for the call). */
	void (*on_result)(void *ctx, const gate_result *r);
	void *ctx;
} gate_callbacks;

typedef struct gate_outcome {
	remote_status status; /* the agent's exit */
	gate_verdict verdict; /* of the last result line; VERDICT_NONE when none */
	int n_results;
	bool interrupted;     /* the user asked to stop */
	char problems[512];   /* of the last result */
} gate_outcome;

/* Heartbeat period: the agent is told to give up after spec->heartbeat_s. */
#define GATE_HEARTBEAT_MS 2000

/* Runs the gate; `*stop` (set from a signal handler) turns into a clean
 * remote kill. Returns 0 when the agent exited (see out->status), negative on
 * a transport failure (out->status says REMOTE_LOST). */
int gate_run(remote_conn *c, const char *cmdline, const gate_policy *policy,
	     const gate_callbacks *cb, volatile sig_atomic_t *stop, gate_outcome *out, bg_err *err);

/* boxgate's exit code for an outcome (DESIGN.md), with a one-line reason. */
int gate_outcome_exit_code(const gate_outcome *o, char *why, size_t n);

#endif
