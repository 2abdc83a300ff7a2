/* One gate run under the agent: its phases, why it ends, its state (struct run). */
#ifndef BG_GATE_AGENT_RUN_H
#define BG_GATE_AGENT_RUN_H

#include "gate/agent/agent.h"
#include "gate/agent/output.h"
#include "gate/agent/nvml.h"

enum phase { PH_LOCK, PH_RUN, PH_TERM, PH_KILL, PH_DRAIN, PH_GPU, PH_DONE };
enum why {
	W_NONE,
	W_EXITED,  /* the gate exited by itself */
	W_TIMEOUT, /* watchdog */
	W_EOF,     /* stdin EOF */
	W_HB,      /* heartbeat silence */
	W_HUP,     /* SIGHUP */
	W_OUTGONE, /* stdout/stderr closed */
	W_KILLREQ, /* "kill" on stdin */
	W_SIGINT,  /* SIGINT */
	W_SIGTERM, /* SIGTERM, SIGQUIT */
};

struct instream {
	int fd; /* -1 at EOF */
	struct byteq part;
	long long last_ms;
	struct outq *to;
};

struct killed {
	pid_t pid;
	int termed;
};

struct run {
	/* options */
	int *gpus, ngpus;
	char *gpulist; /* normalised, "" when no slot */
	const char *lock_dir;
	const char *tag;
	long long lock_wait_ms, timeout_ms, grace_ms, hb_ms;
	int no_stdin, require_gpu, nonce_stdin;
	const char *cwd;
	char **envs;
	int nenvs;
	char **cmd;

	/* state */
	pid_t self;
	int sfd;
	int *lock_fds;
	int nlocks;
	struct nvml nv;
	int have_nvml;
	pid_t gate;
	int gate_status, gate_reaped;
	struct instream in[2];
	int stdin_open;
	lines stdin_lines;
	int stdin_long; /* inside a stdin line longer than the protocol's */
	long long start_ms, hb_last_ms, trigger_ms, kill_at_ms, giveup_ms, next_scan_ms,
		drain_until_ms;
	/* the end waits until then for the agent's own SIGTERM: the gate was
	 * killed from outside inside a Slurm step (outside_kill_hold) */
	long long hold_until_ms;
	long long gpu_until_ms, gpu_next_ms, reaped_ms;
	enum phase ph;
	enum why why;
	struct killed *killed;
	int nkilled;
	int unreaped;
	int gpu_freed; /* -1 null, 0 false, 1 true */
	int leftovers;
};

extern const char *const why_text[];

/* Reads the run's options (options.c). */
void parse_run(struct run *r, int argc, char **argv);

#endif
