/* The protocol between boxgate (gate/client/run.c, gate/client/result.c,
 * gate/client/agent_install.c) and its on-box agent (gate/agent/): exit codes,
 * commands and options, the stdin words, the framing of the agent's own
 * stdout lines and the words of its final report. Plain C with no include:
 * the agent's one generated source carries it to the box. */
#ifndef BG_GATE_AGENT_PROTO_H
#define BG_GATE_AGENT_PROTO_H

/* Exit codes of `boxgate-agent run` besides the gate's own status. A gate may
 * exit with the same numbers: only the framed end line tells them apart. */
enum agent_exit {
	AGENT_EXIT_USAGE = 2,
	AGENT_EXIT_SYSERR = 71,       /* the agent's own system error (lock dir, fork, ...) */
	AGENT_EXIT_BUSY = 75,         /* the slot is held by another run */
	AGENT_EXIT_TIMEOUT = 124,     /* watchdog: TIMEOUT_HANG line printed */
	AGENT_EXIT_INVALID = 125,     /* INVALID line printed (gpu_busy, no_gpu) */
	AGENT_EXIT_NOEXEC = 127,      /* the gate could not be started */
	AGENT_EXIT_CLIENT_GONE = 129, /* stdin EOF, SIGHUP, heartbeat silence, output closed */
	AGENT_EXIT_KILLED = 130,      /* "kill" on stdin or SIGINT */
	AGENT_EXIT_TERMINATED = 143   /* SIGTERM or SIGQUIT to the agent */
};

/* Commands. */
#define AGENT_CMD_VERSION      "version"
#define AGENT_CMD_GPUS         "gpus"
#define AGENT_CMD_PROCS        "procs"
#define AGENT_CMD_RUN          "run"
#define AGENT_CMD_SLOTS        "slots"
#define AGENT_CMD_SLOT_DISABLE "slot-disable"
#define AGENT_CMD_SLOT_ENABLE  "slot-enable"
#define AGENT_CMD_QUEUE        "queue"
#define AGENT_CMD_SERVE        "serve"
#define AGENT_CMD_QUEUE_LIST   "queue-list"

/* Options of run (each also as --opt=VALUE); "--" ends them. */
#define AGENT_OPT_GPUS        "--gpus"
#define AGENT_OPT_LOCK_DIR    "--lock-dir"
#define AGENT_OPT_TAG         "--tag"
#define AGENT_OPT_LOCK_WAIT   "--lock-wait"
#define AGENT_OPT_TIMEOUT     "--timeout"
#define AGENT_OPT_GRACE       "--grace"
#define AGENT_OPT_HEARTBEAT   "--heartbeat"
#define AGENT_OPT_NO_STDIN    "--no-stdin"
#define AGENT_OPT_NONCE_STDIN "--nonce-stdin"
#define AGENT_OPT_REQUIRE_GPU "--require-gpu"
#define AGENT_OPT_CWD         "--cwd"
#define AGENT_OPT_ENV         "--env"
/* Only as run's first option: "--stderr-fd N" makes fd N the agent's stderr
 * (moved onto fd 2, N closed) before anything is written, so that the shell
 * that starts the agent can point fd 2 at /dev/null: its complaint about a
 * file it cannot execute is then no output of the run. */
#define AGENT_OPT_STDERR_FD "--stderr-fd"
/* The slot's GPUs are the ones the scheduler gave the job: CUDA_VISIBLE_DEVICES
 * (Slurm sets it from the job's gres), else SLURM_STEP_GPUS / SLURM_JOB_GPUS. */
#define AGENT_OPT_GPUS_FROM_ENV "--gpus-from-env"

/* Tests without a GPU: NVML is replaced by this file's lines, "gpus N" and
 * "proc GPU PID NAME" (a compute process on that GPU). Read by the agent only;
 * it changes what the agent sees, never what it may do. */
#define AGENT_ENV_FAKE_NVML "BOXGATE_AGENT_FAKE_NVML"

/* serve: one agent that runs a campaign worker's jobs one after the other
 * (gate/agent/serve.c). Its option, the idle time after which it leaves; its
 * stdin line that hands it a job, "job NONCE CMDLINE" (CMDLINE's backslashes,
 * newlines and carriage returns written as backslash and '\\', 'n', 'r'); the
 * job's end, framed with the job's nonce on both streams: on stdout
 * AGENT_FRAME NONCE " " AGENT_SERVE_DONE " {"exit":N}" (or {"signal":N}), on
 * stderr AGENT_FRAME NONCE " " AGENT_SERVE_DONE. */
#define AGENT_OPT_IDLE     "--idle"
#define AGENT_SERVE_JOB    "job "
#define AGENT_SERVE_DONE   "served"
#define AGENT_SERVE_EXIT   "exit"
#define AGENT_SERVE_SIGNAL "signal"

/* Options of slot-disable (with --gpus and --lock-dir). */
#define AGENT_OPT_WHY "--why"
#define AGENT_OPT_BY  "--by"
/* Options of queue (with --lock-dir and --heartbeat). */
#define AGENT_OPT_NAME "--name"
/* queue's stdout lines: "ticket N", then "ahead K" as K changes, then "head"; on
 * stdin any line is a heartbeat and "done" (or EOF) leaves the line. */
#define AGENT_QUEUE_TICKET "ticket "
#define AGENT_QUEUE_AHEAD  "ahead "
#define AGENT_QUEUE_HEAD   "head"
#define AGENT_QUEUE_DONE   "done"

/* stdin, one word a line: first the nonce line (with --nonce-stdin), then
 * heartbeats and at most one kill. */
#define AGENT_IN_NONCE      "nonce " /* followed by the nonce's lowercase hex digits */
#define AGENT_NONCE_HEX_MIN 16
#define AGENT_NONCE_HEX_MAX 64
#define AGENT_IN_HEARTBEAT  "hb"
#define AGENT_IN_KILL       "kill"

/* Framing: every stdout line of the agent's own starts with
 * AGENT_FRAME NONCE " "; its last one is
 * AGENT_FRAME NONCE " " AGENT_END {"rc":N,"why":WORD[,"gate_exit":N|"gate_signal":N]}. */
#define AGENT_FRAME "@boxgate-agent "
#define AGENT_END   "end "
/* AGENT_FRAME NONCE " " AGENT_LOCKED {"slot":"gpu0"}: the slot's lock is taken (a
 * waiter in a pool's line may leave it now). */
#define AGENT_LOCKED          "locked "
#define AGENT_END_RC          "rc"
#define AGENT_END_WHY         "why"
#define AGENT_END_GATE_EXIT   "gate_exit"
#define AGENT_END_GATE_SIGNAL "gate_signal"
/* A run refused its slot (why "busy"): the slot ("gpu3", "cpu") when it is one,
 * and "disabled":true when it is marked out of use rather than held. */
#define AGENT_END_SLOT     "slot"
#define AGENT_END_DISABLED "disabled"
/* Under Slurm (SLURM_JOB_ID set): the job, step and node the agent ran in. */
#define AGENT_END_SLURM_JOB  "slurm_job"
#define AGENT_END_SLURM_STEP "slurm_step"
#define AGENT_END_SLURM_NODE "slurm_node"

/* The end line's "why" words. */
#define AGENT_WHY_EXITED      "exited" /* the gate's own status */
#define AGENT_WHY_TIMEOUT     "timeout"
#define AGENT_WHY_BUSY        "busy"
#define AGENT_WHY_INVALID     "invalid"
#define AGENT_WHY_CLIENT_GONE "client_gone"
#define AGENT_WHY_KILLED      "killed"
#define AGENT_WHY_TERMINATED  "terminated"
#define AGENT_WHY_SYSERR      "syserr"
#define AGENT_WHY_USAGE       "usage"
#define AGENT_WHY_NOEXEC      "noexec"
#define AGENT_WHY_OTHER       "agent"

/* The agent's result lines: the contract's prefix, and the INVALID reasons
 * only the agent may give. */
#define AGENT_RESULT_PREFIX   "FAITHFUL_RESULT "
#define AGENT_REASON_GPU_BUSY "gpu_busy"
#define AGENT_REASON_NO_GPU   "no_gpu"

/* The "why" word of an agent exit code that has no more precise one. */
static inline const char *agent_exit_word(int rc)
{
	switch (rc) {
	case AGENT_EXIT_USAGE: return AGENT_WHY_USAGE;
	case AGENT_EXIT_SYSERR: return AGENT_WHY_SYSERR;
	case AGENT_EXIT_BUSY: return AGENT_WHY_BUSY;
	case AGENT_EXIT_TIMEOUT: return AGENT_WHY_TIMEOUT;
	case AGENT_EXIT_INVALID: return AGENT_WHY_INVALID;
	case AGENT_EXIT_NOEXEC: return AGENT_WHY_NOEXEC;
	case AGENT_EXIT_CLIENT_GONE: return AGENT_WHY_CLIENT_GONE;
	case AGENT_EXIT_KILLED: return AGENT_WHY_KILLED;
	case AGENT_EXIT_TERMINATED: return AGENT_WHY_TERMINATED;
	default: return AGENT_WHY_OTHER;
	}
}

#endif
