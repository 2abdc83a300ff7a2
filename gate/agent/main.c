/*
 * boxgate-agent: the on-box watchdog that owns a gate run.
 *
 * One C file, libc only; NVML is opened at run time with dlopen("libnvidia-ml.so.1").
 * boxgate installs it on a box (content-addressed) and runs every gate through it, so
 * the watchdog lives on the box, in the process that owns the gate as its child.
 *
 * Commands
 *   boxgate-agent version
 *       prints "boxgate-agent <VERSION>".
 *   boxgate-agent gpus
 *       one line per GPU "gpu <idx> <name> <uuid>" (the name may hold spaces: the uuid is
 *       the last word), or one line "no-nvml <reason>"; exit 0 either way.
 *   boxgate-agent procs [--gpus LIST]
 *       compute processes on those GPUs (all GPUs when LIST is absent), one line each:
 *       "pid <pid> gpu <idx> name <name> mem_mib <n>" (name: whitespace replaced by '_';
 *       n is -1 when NVML does not know), or "no-nvml <reason>"; exit 0.
 *   boxgate-agent slots [--gpus LIST] [--lock-dir DIR]
 *       one JSON object per slot (LIST's GPUs; absent: every GPU NVML sees, else the CPU
 *       slot): {"slot":"gpu3","gpu":3,...,"state":S} with S free, held (its holder's
 *       "tag", "pid", "since"), disabled ("why", "disabled_by", "disabled_since"; a held
 *       slot that is disabled stays "held" with "disabled":true) or busy (free of boxgate
 *       but NVML lists compute processes: "procs":[{"pid","name"}]). Held is read from
 *       /proc/locks, never by taking the lock, so looking never makes a run busy.
 *   boxgate-agent slot-disable --gpus LIST --why TEXT [--by WHO] [--lock-dir DIR]
 *   boxgate-agent slot-enable --gpus LIST [--lock-dir DIR]
 *       writes (temp file + rename) or removes DIR/<slot>.disabled; "" is the CPU slot.
 *       run refuses a disabled slot (exit 75, "slot gpu5 disabled: WHY (disabled by WHO
 *       since TIME)") after taking its lock, so a run that started earlier finishes.
 *   boxgate-agent queue --name POOL [--lock-dir DIR] [--heartbeat S] [--tag TAG]
 *       a ticket in POOL's line (DIR/queue-POOL/): prints "ticket N", "ahead K" whenever K
 *       changes, "head" when no live ticket is before it, and holds the ticket until
 *       stdin says "done", closes, or stays silent for S seconds (default 15; any line is
 *       a heartbeat). A ticket is a flock'ed file: a waiter that dies loses its place.
 *       The ticket records "pid=", "tag=" (TAG, controls as '?') and "since=" (UTC).
 *   boxgate-agent queue-list --name POOL [--lock-dir DIR]
 *       one JSON object per live ticket of POOL's line, first in line first:
 *       {"ticket":N,"position":K,"pid":P,"tag":"...","since":"..."} (K from 1; tag and
 *       since "" when the ticket does not say). Liveness is read from /proc/locks,
 *       never by taking a ticket's lock; nothing is removed. Exit 0 (an absent line
 *       is an empty one).
 *   boxgate-agent serve [--idle S]
 *       runs jobs handed over stdin one after the other, each a `run` command line of its
 *       own with its own nonce (gate/agent/serve.c says how), so that a campaign worker
 *       pays one round trip a job instead of a channel; leaves after S idle seconds
 *       (default 300, 0: never) or at stdin EOF.
 *   boxgate-agent run [options] -- CMD ARGS...
 *       --gpus LIST       slot GPUs ("0", "0,1", "2-3", combined); the gate gets
 *                         CUDA_VISIBLE_DEVICES=<ascending comma list> and
 *                         CUDA_DEVICE_ORDER=PCI_BUS_ID (so CUDA's indices are NVML's and
 *                         nvidia-smi's). Empty or absent: no GPU slot, lock name "cpu",
 *                         the environment's CUDA_VISIBLE_DEVICES is left as it is.
 *       --gpus-from-env   the slot's GPUs are the ones the scheduler gave the job:
 *                         CUDA_VISIBLE_DEVICES, else SLURM_STEP_GPUS / SLURM_JOB_GPUS
 *                         (a usage error when none is set); locked and checked as --gpus.
 *       --lock-dir DIR    default $HOME/.cache/boxgate/locks (missing parts made 0700);
 *                         one lock file per GPU, gpu<idx>.lock, or cpu.lock.
 *       --tag TAG         holder tag written into the lock file with pid and start time.
 *       --lock-wait S     wait up to S seconds for the slot (default 0: refuse at once).
 *       --timeout S       watchdog; default $MPK_GATE_TIMEOUT_S if set, else 420; 0 = off.
 *       --grace S         SIGTERM -> SIGKILL grace, default 5.
 *       --heartbeat S     no line on stdin for S seconds => client presumed gone (0 = off).
 *       --no-stdin        do not read stdin at all (running the agent by hand).
 *       --nonce-stdin     the first stdin line is "nonce HEX" (16-64 lowercase hex digits,
 *                         chosen by the client per run, never on the command line or in the
 *                         environment); the agent's own stdout lines are then framed (below).
 *       --require-gpu yes|no   no NVML / a slot GPU missing: yes => INVALID (no_gpu),
 *                         no => a note on stderr and the gate runs. Default: yes when the
 *                         slot has GPUs, no otherwise.
 *       --cwd DIR         directory the gate starts in.
 *       --env NAME=VALUE  extra environment for the gate (repeatable; NAME is
 *                         [A-Za-z_][A-Za-z0-9_]*).
 *       --stderr-fd N     (first option only) fd N is the agent's stderr: moved onto
 *                         fd 2 before anything is written. The shell that starts the
 *                         agent points fd 2 at /dev/null, so that its own complaint
 *                         about a file it cannot execute never reaches the run's output.
 *       Seconds may be decimal ("0.5"). Options take "--opt VALUE" or "--opt=VALUE".
 *       The "--" before CMD is required.
 *
 * Framing (--nonce-stdin)
 *   Every stdout line the agent itself prints starts with "@boxgate-agent HEX ": its
 *   FAITHFUL_RESULT lines (TIMEOUT_HANG, INVALID gpu_busy / no_gpu) and, as the very last
 *   line before it exits, once the nonce is known,
 *     @boxgate-agent HEX end {"rc":N,"why":"WORD"}
 *   (plus "slurm_job", "slurm_step" and "slurm_node" when Slurm started the agent)
 *   with N the agent's exit status and WORD one of exited (the gate's own status; then
 *   "gate_exit":N or "gate_signal":N follows), timeout, busy, invalid, client_gone, killed,
 *   terminated, syserr, usage, noexec. Inside a Slurm step (SLURM_JOB_ID), a gate killed by
 *   SIGTERM or SIGKILL the agent did not send holds the end up to 3 s for the agent's own
 *   SIGTERM (Slurm signals each process of a stopped step in turn): it then says terminated.
 *   The gate's stdin is /dev/null and the nonce is in no
 *   argv or environment, and the agent makes itself non-dumpable before it reads the
 *   nonce (a traced agent stops: exit 71), so a gate of the same user cannot read it from
 *   /proc/PPID/mem, fd or environ, nor ptrace the agent (root can). The client believes a
 *   TIMEOUT_HANG, gpu_busy or an exit code 75/124/125/129/130 only with the framed lines.
 *   Gate lines pass unframed and unchanged.
 *
 * stdin protocol (run, unless --no-stdin), one command per line (after the nonce line):
 *   hb      heartbeat (any line resets the heartbeat timer)
 *   kill    stop the gate as on a timeout but without a verdict: exit 130 after reaping,
 *           "boxgate-agent: killed on request" on stderr
 *   EOF     the client went away: stop the gate at once, exit 129
 *   Unknown lines are ignored with a note on stderr.
 *
 * What run does
 *   1. flock(LOCK_EX) every lock file of the slot, in ascending GPU order; all or none
 *      (with --nonce-stdin the agent then prints, framed, locked {"slot":"gpu0"});
 *      (while waiting it holds none). The lock fds are O_CLOEXEC: the agent holds the
 *      slot until every gate process is reaped, and no gate process can keep it after.
 *      The holder writes "tag=", "pid=", "since=" (ISO 8601, UTC) lines into the file and
 *      empties it before unlocking. A refusal reads them:
 *      "boxgate-agent: slot gpu3 busy: held by TAG pid N since TIME", exit 75.
 *   2. exclusivity through NVML: any compute process on a slot GPU =>
 *      FAITHFUL_RESULT {"verdict":"INVALID","reason":"gpu_busy","gpu":N,"pid":P,"process":"name"}
 *      and exit 125 before the gate starts (every such process is also listed on stderr).
 *      No NVML or a missing GPU with --require-gpu yes =>
 *      FAITHFUL_RESULT {"verdict":"INVALID","reason":"no_gpu","detail":"..."} and exit 125.
 *   3. the gate: child subreaper agent; the gate in a new session (its pid is its sid and
 *      pgid), PR_SET_PDEATHSIG SIGKILL, stdin /dev/null, stdout and stderr to pipes,
 *      PYTHONUNBUFFERED=1, fds above 2 closed, execvp (failure: exit 127 and a message).
 *      Its stdout goes to the agent's stdout and its stderr to the agent's stderr as each
 *      complete line arrives; a partial line is written after 50 ms without new bytes or
 *      at EOF. Each write holds whole lines (writes of at most PIPE_BUF bytes, cut at a
 *      newline), so lines shorter than PIPE_BUF are never split or interleaved even when
 *      stdout and stderr are one pipe. The agent never blocks on a slow reader: output is
 *      queued and written when poll() says the fd is writable; past 4 MiB queued the gate
 *      is simply not read any more (it blocks on its pipe, the watchdog still runs).
 *   4. stopping the gate (timeout, kill, client gone, signal, or leftovers of a gate that
 *      exited by itself): SIGTERM (and SIGCONT) to the group and to every process of the
 *      gate's tree, SIGKILL after the grace, then repeated /proc scans that kill and reap
 *      until no process is left whose sid is the gate's or whose parent chain reaches the
 *      agent (processes that called setsid or double-forked are reparented to the agent
 *      and so are found). A process that survives 30 s of SIGKILL (stuck in the kernel) is
 *      reported as unreaped. Then, with a GPU slot and NVML, up to 5 s of polling until no
 *      compute process on the slot's GPUs is one of the killed pids or a pid this pid
 *      namespace cannot see. On a timeout it prints on stdout
 *      FAITHFUL_RESULT
 * {"verdict":"TIMEOUT_HANG","timeout_s":S,"killed":N,"gpu_freed":true|false|null,"reaped_ms":M}
 *      ("unreaped":K is added when K > 0) and exits 124. gpu_freed is null without a GPU
 *      slot or NVML. reaped_ms runs from the first SIGTERM to the last reap.
 *   5. a gate that exits by itself: leftover processes of its tree are stopped the same
 *      way and named on stderr; the exit status stays the gate's.
 *   Lines the agent itself writes on stderr start with "boxgate-agent: " (and start on a
 *   fresh line even if the gate left a partial line there).
 *   6. at exit the queued output is flushed for up to 10 s, or for as long as the client
 *   keeps sending heartbeats (a client whose own stdout is blocked is slow, not gone): the
 *   wait ends a heartbeat timeout after the last byte on stdin, or at stdin EOF.
 *
 * Exit codes of run
 *   the gate's own status when it exits by itself (128+N when killed by signal N)
 *   2    usage error                     71  system error in the agent (lock dir, fork, ...)
 *   75   slot busy                       124 watchdog timeout (TIMEOUT_HANG line printed)
 *   125  INVALID (line printed)          127 the command could not be started
 *   129  client gone: stdin EOF, SIGHUP, heartbeat silence, stdout/stderr closed
 *   130  "kill" on stdin or SIGINT       143 SIGTERM or SIGQUIT to the agent
 *   A gate may itself exit with one of these numbers; the FAITHFUL_RESULT line and the
 *   agent's own stderr lines tell the cases apart.
 *
 * Source: the parts in gate/agent/, gate/agent_proto.h (the protocol boxgate shares) and the base/
 * files it needs, joined by gate/agent/gen.sh into the one C file that is shipped to a box
 * and compiled there (cc -std=c11 -D_GNU_SOURCE ... -ldl -lm).
 */
#include "gate/agent/watchdog.h"
#include "gate/agent/child.h"
#include "gate/agent/slots.h"
#include "gate/agent/serve.h"

static int cmd_version(void)
{
	char line[128];
	int n = snprintf(line, sizeof line, "boxgate-agent %s\n", BOXGATE_AGENT_VERSION);
	out_add(&g_out[0], line, (size_t)n);
	return 0;
}

/* The run's nonce is about to be read: from here on no process of the same user
 * (the gate first of all) may open this process's memory, fds or environment
 * through /proc, nor ptrace it; only root (CAP_SYS_PTRACE) still can. A tracer
 * attached before this point would stay attached, so a traced agent stops. */
void guard_memory(void)
{
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		msg("cannot make the agent non-dumpable: %s", strerror(errno));
		agent_exit(AGENT_EXIT_SYSERR);
	}
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long tracer = 0;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "TracerPid:", 10))
			tracer = strtol(line + 10, NULL, 10);
	if (f)
		fclose(f);
	if (tracer != 0) {
		msg("the agent is being traced (by pid %ld): its nonce would not be secret",
		    tracer);
		agent_exit(AGENT_EXIT_SYSERR);
	}
}

/* Signals arrive through a signalfd, so every wait is the one poll. Inherited
 * "ignore" dispositions (nohup, a shell's background job) are reset first: an
 * ignored signal would never reach the signalfd. SIGPIPE is ignored: a closed
 * pipe is an error return. -1 with errno when there is no signalfd. */
int agent_signalfd(void)
{
	static const int sigs[] = {SIGCHLD, SIGHUP, SIGINT, SIGTERM, SIGQUIT};
	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		signal(sigs[i], SIG_DFL);
		sigaddset(&set, sigs[i]);
	}
	signal(SIGPIPE, SIG_IGN);
	sigprocmask(SIG_BLOCK, &set, NULL);
	return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

static int cmd_run(int argc, char **argv)
{
	static struct run r; /* zeroed; lives until exit */
	r.sfd = -1;
	parse_run(&r, argc, argv);
	r.self = getpid();
	r.gpu_freed = -1;
	r.stdin_open = !r.no_stdin;
	r.in[0].fd = r.in[1].fd = -1;
	r.in[0].to = &g_out[0];
	r.in[1].to = &g_out[1];

	r.sfd = agent_signalfd();
	if (r.sfd < 0) {
		msg("signalfd: %s", strerror(errno));
		agent_exit(AGENT_EXIT_SYSERR);
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		msg("cannot become a child subreaper: %s", strerror(errno));
		agent_exit(AGENT_EXIT_SYSERR);
	}
	guard_memory();
	r.hb_last_ms = g_alive_ms = bg_now_ms();
	stdin_init(&r);
	g_watch_stdin = r.stdin_open;
	g_hb_ms = r.hb_ms;
	if (r.nonce_stdin)
		read_nonce(&r);

	lock_slot(&r);
	check_exclusive(&r);
	start_gate(&r);
	/* A stop asked for before the gate started (a kill read with the nonce, a signal
	 * while the lock was taken) is carried out now. */
	if (r.why != W_NONE) {
		enum why early = r.why;
		r.why = W_NONE;
		trigger(&r, early);
	}
	for (;;) {
		long long next = step(&r);
		if (r.ph == PH_DONE)
			break;
		loop_once(&r, next);
	}
	finish_run(&r);
}

/* run's "--stderr-fd N": fd N becomes fd 2 before anything is written. */
static void take_stderr_fd(int *argc, char ***argv)
{
	if (*argc < 2 || strcmp((*argv)[0], AGENT_OPT_STDERR_FD) != 0)
		return;
	const char *v = (*argv)[1];
	char *end;
	errno = 0;
	long fd = strtol(v, &end, 10);
	if (errno || end == v || *end || fd < 3 || fd > 1024 || dup2((int)fd, 2) < 0)
		usage_fail("bad %s '%s'", AGENT_OPT_STDERR_FD, v);
	close((int)fd);
	*argc -= 2;
	*argv += 2;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage_fail("missing command");
	const char *c = argv[1];
	int rc;
	if (!strcmp(c, AGENT_CMD_RUN)) {
		int n = argc - 2;
		char **v = argv + 2;
		take_stderr_fd(&n, &v);
		agent_exit(cmd_run(n, v));
	}
	if (!strcmp(c, AGENT_CMD_VERSION) && argc == 2)
		rc = cmd_version();
	else if (!strcmp(c, AGENT_CMD_GPUS))
		rc = cmd_gpus(argc - 2, argv + 2);
	else if (!strcmp(c, AGENT_CMD_PROCS))
		rc = cmd_procs(argc - 2, argv + 2);
	else if (!strcmp(c, AGENT_CMD_SLOTS))
		rc = cmd_slots(argc - 2, argv + 2);
	else if (!strcmp(c, AGENT_CMD_SLOT_DISABLE))
		rc = cmd_slot_disable(argc - 2, argv + 2);
	else if (!strcmp(c, AGENT_CMD_SLOT_ENABLE))
		rc = cmd_slot_enable(argc - 2, argv + 2);
	else if (!strcmp(c, AGENT_CMD_QUEUE))
		rc = cmd_queue(argc - 2, argv + 2);
	else if (!strcmp(c, AGENT_CMD_SERVE))
		rc = cmd_serve(argc - 2, argv + 2);
	else if (!strcmp(c, AGENT_CMD_QUEUE_LIST))
		rc = cmd_queue_list(argc - 2, argv + 2);
	else
		usage_fail("unknown command '%s'", c);
	agent_exit(rc);
}
