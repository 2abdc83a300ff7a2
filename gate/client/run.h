/* Running a gate on a box through its agent: the remote command, the
 * heartbeat, Ctrl-C forwarded as a clean kill, every line streamed back and
 * every FAITHFUL_RESULT line judged.
 *
 * Trust. The agent is started with --nonce-stdin and gets a fresh random nonce
 * as its first stdin line; its own stdout lines come back framed
 * "@boxgate-agent NONCE ..." (gate/agent_proto.h). Only framed lines
 * may report TIMEOUT_HANG or the agent's INVALID reasons, and the agent's last
 * framed line ("end") says what its exit status means: a gate that prints an
 * agent verdict, or exits 124 itself, is judged INVALID, never taken for the
 * agent. The agent's framed FAITHFUL_RESULT line is held until the run ends:
 * passed to on_line unframed (and on_result) only when the end report, matching
 * the box's exit status, says the same verdict; otherwise passed on as it came,
 * framed, as output that speaks for nobody.
 *
 * Back-pressure. The callbacks run on a writer thread fed by a queue, so a
 * caller whose own stdout blocks never stops the channel being read or the
 * heartbeat being sent: the agent would take that silence for a dead client.
 * Up to GATE_OUTQ_MAX bytes wait in the queue; beyond that reading pauses
 * (and with it the heartbeat) until the writer catches up. */
#ifndef BG_GATE_RUN_H
#define BG_GATE_RUN_H

#include <signal.h>
#include <stdbool.h>

#include "base/error.h"
#include "base/strbuf.h"
#include "gate/client/result.h"
#include "remote/remote.h"
#include "shim/shim.h"

/* What a gate run reads of its box, as remote/ reads a remote_target: a view
 * whose strings are borrowed from whoever fills it (cli/, from the box's
 * configuration). */
typedef struct gate_box {
	const char *repo;          /* the gate's directory on the box ("~" kept); NULL: none */
	const char *python;        /* the interpreter of a .py entry; NULL: python3 */
	const remote_slurm *slurm; /* a Slurm login node: the gate runs as an srun step */
} gate_box;

typedef struct gate_spec {
	gate_box box;
	const char *agent; /* command word for the agent (quoted) */
	const char *entry; /* the gate's entry point (relative to repo or absolute) */
	const char *gpus;  /* slot GPUs "0" / "0,1", NULL for a CPU slot */
	const shim_result *shim;
	int timeout_s, lock_wait_s;
	long long grace_ms, heartbeat_ms;
	bool require_gpu;
	const char *tag; /* holder tag for the slot lock */
	const char *cwd; /* the gate's directory, an absolute path on the box (a shadow
			  * tree); NULL: the box's repo */
	const char *env; /* one more NAME=VALUE for the gate (the overlay's root), or NULL */
} gate_spec;

/* The run limit a policy gets for SPEC: the agent's timeout and its grace,
 * whole seconds rounded up (the client adds GATE_END_SLACK_S). */
int gate_run_limit_s(const gate_spec *spec);

/* The remote command line (owned): AGENT run OPTIONS -- ENTRY ARGS, every
 * word through bg_quote; on a Slurm box prefixed by an srun step
 * (remote_slurm_step). */
char *gate_command_line(const gate_spec *spec);

typedef struct gate_callbacks {
	/* Every line the gate or agent prints, as it arrives (agent lines unframed). */
	void (*on_line)(void *ctx, remote_stream s, const char *line, size_t len, int flags);
	/* Every FAITHFUL_RESULT line, parsed and judged (borrowed for the call). */
	void (*on_result)(void *ctx, const gate_result *r);
	/* The agent has taken the slot's lock (may be NULL). */
	void (*on_locked)(void *ctx);
	void *ctx;
	/* How often the client says it is alive: GATE_HEARTBEAT_EVERY_MS of the
	 * spec's heartbeat_ms; 0 means GATE_HEARTBEAT_MS. */
	long long hb_every_ms;
} gate_callbacks;

typedef struct gate_outcome {
	remote_status status; /* the agent's exit */
	gate_verdict verdict; /* of the last result line; VERDICT_NONE when none */
	gate_verdict stated;  /* the verdict the gate's own last result line stated */
	int n_results;        /* result lines, the agent's included */
	int n_gate_results;   /* result lines printed by the gate */
	bool interrupted;     /* the user asked to stop */
	bool agent_end;       /* the agent's framed final report arrived */
	int agent_rc;         /* ... the exit status it announced */
	char agent_why[24];   /* ... "exited", "timeout", "busy", "invalid", ... */
	int gate_exit;        /* ... the gate's exit code, -1 when not reported */
	int gate_signal;      /* ... the signal that killed the gate, -1 when none */
	char agent_slot[32];  /* ... the slot it refused ("gpu3", "cpu"; "" when not said) */
	bool slot_disabled;   /* ... marked out of use (else held by another run) */
	/* ... the Slurm job, step and node it ran in ("" when not under Slurm) */
	char slurm_job[32], slurm_step[24], slurm_node[72];
	bool agent_timeout; /* the agent's framed TIMEOUT_HANG line arrived */
	bool agent_invalid; /* the agent's framed INVALID line (gpu_busy, no_gpu) arrived */
	bool forged;        /* the gate imitated the agent (frame or verdict) */
	char forged_why[200];
	bool agent_stalled;       /* no end report within the policy's run limit: given up on */
	bool cuda_error;          /* a line of the gate reported a CUDA error */
	char cuda_line[160];      /* its start, printable ASCII */
	char problems[512];       /* of the last result */
	bool output;              /* any line came back (a prelude's included) */
	bool output_past_prelude; /* ... one that was not the prelude's */
	bool prelude_ended;       /* the prelude's last line arrived */
	bool agent_spoke;         /* a line framed with this run's nonce arrived */
	bool unframed_dropped;    /* lines before any framed one, held back and dropped */
	bool agent_absent; /* the command found no agent, none could be installed: no gate ran */
} gate_outcome;

/* Past the agent's timeout and grace, the time its reaping (up to 30 s of
 * SIGKILL, 5 s of NVML polling) and final flush may take. */
#define GATE_END_SLACK_S 60
/* Heartbeat period: the agent is told to give up after spec->heartbeat_ms;
 * a shorter timeout gets heartbeats four times within it. */
#define GATE_HEARTBEAT_MS 2000
#define GATE_HEARTBEAT_EVERY_MS(hb_ms)                                                             \
	((hb_ms) / 4 < GATE_HEARTBEAT_MS ? ((hb_ms) / 4 > 0 ? (hb_ms) / 4 : 1) : GATE_HEARTBEAT_MS)
/* Output waiting for a slow reader of the caller's stdout. */
#define GATE_OUTQ_MAX ((size_t)256 * 1024 * 1024)

/* Runs the gate; `*stop` (set from a signal handler) turns into a clean
 * remote kill. Returns 0 when the agent exited (see out->status), negative on
 * a transport failure (out->status says REMOTE_LOST). Every callback has
 * returned when gate_run returns. */
int gate_run(remote_conn *c, const char *cmdline, const gate_policy *policy,
	     const gate_callbacks *cb, volatile sig_atomic_t *stop, gate_outcome *out, bg_err *err);

/* Shell text a command runs before the agent (gate/client/run_present.h):
 * its stdout lines start with `tag` and its last one is `tag` followed by
 * '.', each (the last included; LINE_PARTIAL pieces of a long one) handed to
 * on_line instead of to the callbacks; other lines before that last one (a
 * login shell's chatter) pass on as the gate's would. */
typedef struct gate_prelude {
	const char *text;
	const char *tag;
	void (*on_line)(void *ctx, const char *line, size_t len, int flags);
	void *ctx;
} gate_prelude;

/* boxgate's exit code for an outcome (README.md, "Exit codes"), with a one-line reason.
 * *from_result (may be NULL) is set when the reason is only the last result's
 * verdict, which the caller has already shown. A verdict needs the agent's
 * final report, a valid result line and a clean exit of the gate. */
int gate_outcome_judge(const gate_outcome *o, char *why, size_t n, bool *from_result);
int gate_outcome_exit_code(const gate_outcome *o, char *why, size_t n);

#endif
