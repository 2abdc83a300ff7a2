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
 *   boxgate-agent run [options] -- CMD ARGS...
 *       --gpus LIST       slot GPUs ("0", "0,1", "2-3", combined); the gate gets
 *                         CUDA_VISIBLE_DEVICES=<ascending comma list> and
 *                         CUDA_DEVICE_ORDER=PCI_BUS_ID (so CUDA's indices are NVML's and
 *                         nvidia-smi's). Empty or absent: no GPU slot, lock name "cpu",
 *                         the environment's CUDA_VISIBLE_DEVICES is left as it is.
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
 *       Seconds may be decimal ("0.5"). Options take "--opt VALUE" or "--opt=VALUE".
 *       The "--" before CMD is required.
 *
 * Framing (--nonce-stdin)
 *   Every stdout line the agent itself prints starts with "@boxgate-agent HEX ": its
 *   FAITHFUL_RESULT lines (TIMEOUT_HANG, INVALID gpu_busy / no_gpu) and, as the very last
 *   line before it exits, once the nonce is known,
 *     @boxgate-agent HEX end {"rc":N,"why":"WORD"}
 *   with N the agent's exit status and WORD one of exited (the gate's own status; then
 *   "gate_exit":N or "gate_signal":N follows), timeout, busy, invalid, client_gone, killed,
 *   terminated, syserr, usage, noexec. The gate's stdin is /dev/null and the nonce is in no
 *   argv or environment, so gate output cannot carry the frame: the client believes a
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
 *      FAITHFUL_RESULT {"verdict":"TIMEOUT_HANG","timeout_s":S,"killed":N,"gpu_freed":true|false|null,"reaped_ms":M}
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
 */
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef BOXGATE_AGENT_VERSION
#define BOXGATE_AGENT_VERSION "0.1.0"
#endif

enum {
	EXIT_USAGE = 2,
	EXIT_SYSERR = 71,
	EXIT_BUSY = 75,
	EXIT_TIMEOUT = 124,
	EXIT_INVALID = 125,
	EXIT_NOEXEC = 127,
	EXIT_CLIENT_GONE = 129,
	EXIT_KILLED = 130,
	EXIT_TERMINATED = 143,
};

#define MAX_GPU_INDEX 1023
#define PARTIAL_FLUSH_MS 50
#define LINE_KEEP_MAX (64 * 1024)      /* a longer line is written in pieces */
#define OUTQ_HIGH (4 * 1024 * 1024)    /* stop reading the gate above this */
#define TERM_SCAN_MS 50
#define KILL_SCAN_MS 20
#define KILL_GIVEUP_MS 30000
#define DRAIN_MS 2000
#define GPU_CONFIRM_MS 5000
#define GPU_POLL_MS 100
#define FINAL_FLUSH_MS 10000
#define LOCK_POLL_MS 100

/* ---------------------------------------------------------------- memory, time */

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q) {
		static const char msg[] = "boxgate-agent: out of memory\n";
		ssize_t w = write(2, msg, sizeof msg - 1);
		(void)w;
		abort();
	}
	return q;
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xrealloc(NULL, n), s, n);
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void iso_now(char *out, size_t n)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* A growable byte buffer; bytes before off are consumed. */
struct buf {
	char *p;
	size_t off, len, cap;
};

static void buf_add(struct buf *b, const char *data, size_t n)
{
	if (b->off && b->off == b->len)
		b->off = b->len = 0;
	if (b->len + n > b->cap) {
		if (b->off) {
			memmove(b->p, b->p + b->off, b->len - b->off);
			b->len -= b->off;
			b->off = 0;
		}
		if (b->len + n > b->cap) {
			size_t cap = b->cap ? b->cap : 4096;
			while (cap < b->len + n)
				cap *= 2;
			b->p = xrealloc(b->p, cap);
			b->cap = cap;
		}
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

static void buf_addf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_addf(struct buf *b, const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof tmp) {
		buf_add(b, tmp, (size_t)n);
		return;
	}
	char *big = xrealloc(NULL, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	buf_add(b, big, (size_t)n);
	free(big);
}

static size_t buf_used(const struct buf *b) { return b->len - b->off; }
static const char *buf_data(const struct buf *b) { return b->p + b->off; }
static void buf_consume(struct buf *b, size_t n)
{
	b->off += n;
	if (b->off == b->len)
		b->off = b->len = 0;
}
static void buf_release(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->off = b->len = b->cap = 0;
}

/* JSON string body (no quotes) for s, escaping what JSON requires. */
static void buf_json(struct buf *b, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			buf_addf(b, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			buf_addf(b, "\\u%04x", *p);
		else
			buf_add(b, (const char *)p, 1);
	}
}

/* ---------------------------------------------------------------- output queues */

/* The agent's stdout and stderr. Everything written there goes through these queues so
 * that the gate's lines and the agent's own lines keep their order and stay whole, and so
 * that a reader that stops reading never blocks the watchdog. */
struct outq {
	int fd;
	struct buf q;
	int dead;    /* the fd failed: output is dropped */
	int midline; /* the last queued byte was not a newline */
};

static struct outq g_out[2] = {{.fd = 1}, {.fd = 2}};
static int g_output_gone; /* a write failed with EPIPE or the like */

/* Framing (--nonce-stdin): "@boxgate-agent NONCE " before each stdout line of the agent's
 * own, empty when not framed; the end line's "why" and extra fields. */
static char g_frame[96];
static const char *g_end_why;
static char g_end_extra[96];

/* The client's liveness as the final flush sees it: stdin still watched, the heartbeat
 * timeout, and when bytes last came in on stdin. */
static int g_watch_stdin;
static long long g_hb_ms, g_alive_ms;

static void out_add(struct outq *o, const char *data, size_t n)
{
	if (!n || o->dead)
		return;
	buf_add(&o->q, data, n);
	o->midline = data[n - 1] != '\n';
}

/* Queue one whole line of the agent's own, starting a fresh line when needed. */
static void out_line(struct outq *o, const char *line, size_t n)
{
	if (o->midline)
		out_add(o, "\n", 1);
	out_add(o, line, n);
	if (!n || line[n - 1] != '\n')
		out_add(o, "\n", 1);
}

static void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void msg(const char *fmt, ...)
{
	char tmp[2048];
	int k = snprintf(tmp, sizeof tmp, "boxgate-agent: ");
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp + k, sizeof tmp - (size_t)k - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	size_t len = (size_t)k + (size_t)n;
	if (len > sizeof tmp - 2)
		len = sizeof tmp - 2;
	tmp[len++] = '\n';
	out_line(&g_out[1], tmp, len);
}

/* Write what one write(2) can take without blocking: at most PIPE_BUF bytes, ending at a
 * newline when one lies within them. Returns -1 when the fd is gone. */
static int out_write_some(struct outq *o)
{
	size_t n = buf_used(&o->q);
	if (!n || o->dead)
		return 0;
	const char *p = buf_data(&o->q);
	size_t chunk = n;
	if (chunk > PIPE_BUF) {
		chunk = PIPE_BUF;
		const char *nl = memrchr(p, '\n', PIPE_BUF);
		if (nl)
			chunk = (size_t)(nl - p) + 1;
	}
	ssize_t w = write(o->fd, p, chunk);
	if (w < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		o->dead = 1;
		buf_release(&o->q);
		return -1;
	}
	buf_consume(&o->q, (size_t)w);
	return 0;
}

/* Writes what is queued on stdout and stderr until it is all out or
 * `deadline` passes. With `final` (the last flush before exit) a client that
 * still sends bytes on stdin is only slow to read (its own stdout may be
 * blocked): waiting for it loses nothing, so the deadline moves to a
 * heartbeat-timeout after the last byte; EOF on stdin ends the wait at once. */
static void out_flush_until(long long deadline0, int final)
{
	for (;;) {
		struct pollfd pf[3];
		int n = 0;
		for (int i = 0; i < 2; i++)
			if (!g_out[i].dead && buf_used(&g_out[i].q))
				pf[n++] = (struct pollfd){.fd = g_out[i].fd, .events = POLLOUT};
		if (!n)
			return;
		int outs = n;
		int client = final && g_watch_stdin;
		long long deadline = deadline0;
		if (client && g_hb_ms && g_alive_ms + g_hb_ms > deadline)
			deadline = g_alive_ms + g_hb_ms;
		long long left = deadline - now_ms();
		if (left <= 0)
			return;
		if (client)
			pf[n++] = (struct pollfd){.fd = 0, .events = POLLIN};
		int r = poll(pf, (nfds_t)n, (int)(left > 60000 ? 60000 : left));
		if (r < 0 && errno != EINTR)
			return;
		for (int i = 0; i < n; i++) {
			if (!pf[i].revents)
				continue;
			if (i == outs) {
				char b[4096];
				ssize_t k = read(0, b, sizeof b);
				if (k > 0)
					g_alive_ms = now_ms();
				else if (k == 0 || (errno != EINTR && errno != EAGAIN))
					return; /* the client went away: nobody reads the rest */
				continue;
			}
			struct outq *o = pf[i].fd == 1 ? &g_out[0] : &g_out[1];
			if (pf[i].revents & POLLNVAL) {
				o->dead = 1;
				buf_release(&o->q);
			} else if (pf[i].revents & (POLLOUT | POLLERR | POLLHUP)) {
				out_write_some(o);
			}
		}
	}
}

static void out_flush(long long deadline)
{
	out_flush_until(deadline, 0);
}

/* The final flush: at least FINAL_FLUSH_MS, longer while the client is alive. */
static void out_flush_final(void)
{
	out_flush_until(now_ms() + FINAL_FLUSH_MS, 1);
}

/* The word the end line gives an exit code when nothing more precise was set. */
static const char *rc_word(int rc)
{
	switch (rc) {
	case EXIT_USAGE: return "usage";
	case EXIT_SYSERR: return "syserr";
	case EXIT_BUSY: return "busy";
	case EXIT_TIMEOUT: return "timeout";
	case EXIT_INVALID: return "invalid";
	case EXIT_NOEXEC: return "noexec";
	case EXIT_CLIENT_GONE: return "client_gone";
	case EXIT_KILLED: return "killed";
	case EXIT_TERMINATED: return "terminated";
	default: return "agent";
	}
}

static void agent_exit(int rc) __attribute__((noreturn));
static void agent_exit(int rc)
{
	if (g_frame[0]) {
		/* The last line of a framed run: how the agent itself ends, so that the client can
		 * tell the agent's exit codes from the same numbers returned by a gate. */
		char line[320];
		int n = snprintf(line, sizeof line, "%send {\"rc\":%d,\"why\":\"%s\"%s}\n", g_frame, rc,
				 g_end_why ? g_end_why : rc_word(rc), g_end_extra);
		if (n > 0 && (size_t)n < sizeof line)
			out_line(&g_out[0], line, (size_t)n);
	}
	out_flush_final();
	buf_release(&g_out[0].q);
	buf_release(&g_out[1].q);
	exit(rc);
}

static void usage_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void usage_fail(const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	msg("%s", tmp);
	msg("usage: boxgate-agent version | gpus | procs [--gpus LIST] | run [options] -- CMD ARGS...");
	agent_exit(EXIT_USAGE);
}

/* ---------------------------------------------------------------- parsing */

/* Seconds ("2", "0.5") to milliseconds; -1 when not a non-negative number. */
static long long parse_secs(const char *s)
{
	char *end;
	if (!*s || isspace((unsigned char)*s))
		return -1;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v < 0 || v > 1e8)
		return -1;
	return (long long)(v * 1000.0 + 0.5); /* no libm: the Makefile links -ldl only */
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* "0", "0,1", "2-3", "0,2-3": ascending, without duplicates. -1 on a malformed list. */
static int parse_gpus(const char *s, int **out, int *count)
{
	int *v = NULL, n = 0;
	const char *p = s;
	*out = NULL;
	*count = 0;
	while (*p) {
		char *end;
		if (!isdigit((unsigned char)*p))
			goto bad;
		long a = strtol(p, &end, 10), b = a;
		p = end;
		if (*p == '-') {
			p++;
			if (!isdigit((unsigned char)*p))
				goto bad;
			b = strtol(p, &end, 10);
			p = end;
		}
		if (a < 0 || b < a || b > MAX_GPU_INDEX)
			goto bad;
		for (long i = a; i <= b; i++) {
			v = xrealloc(v, sizeof *v * (size_t)(n + 1));
			v[n++] = (int)i;
		}
		if (*p == ',') {
			p++;
			if (!*p)
				goto bad;
		} else if (*p) {
			goto bad;
		}
	}
	if (n) {
		qsort(v, (size_t)n, sizeof *v, cmp_int);
		int k = 0;
		for (int i = 0; i < n; i++)
			if (!k || v[k - 1] != v[i])
				v[k++] = v[i];
		n = k;
	}
	*out = v;
	*count = n;
	return 0;
bad:
	free(v);
	return -1;
}

static int valid_env_name(const char *s, size_t n)
{
	if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return 0;
	return 1;
}

/* ---------------------------------------------------------------- NVML */

typedef int nvml_ret;
typedef void *nvml_dev;
#define NVML_SUCCESS 0
#define NVML_ERROR_INSUFFICIENT_SIZE 7

struct nvml {
	void *lib;
	int ok;
	char why[256];
	nvml_ret (*init)(void);
	nvml_ret (*shutdown)(void);
	const char *(*errstr)(nvml_ret);
	nvml_ret (*count)(unsigned *);
	nvml_ret (*by_index)(unsigned, nvml_dev *);
	nvml_ret (*name)(nvml_dev, char *, unsigned);
	nvml_ret (*uuid)(nvml_dev, char *, unsigned);
	nvml_ret (*procname)(unsigned, char *, unsigned);
	nvml_ret (*procs[3])(nvml_dev, unsigned *, void *);
	size_t stride[3];
};

struct gpu_proc {
	unsigned pid;
	int gpu;
	long long mem_mib; /* -1: unknown */
	char name[128];
};

static const char *nvml_err(struct nvml *nv, nvml_ret r)
{
	static char tmp[32];
	if (nv->errstr)
		return nv->errstr(r);
	snprintf(tmp, sizeof tmp, "error %d", r);
	return tmp;
}

static void *nvml_sym(struct nvml *nv, const char *a, const char *b)
{
	void *f = dlsym(nv->lib, a);
	if (!f && b)
		f = dlsym(nv->lib, b);
	return f;
}

/* Load and initialise NVML. On failure nv->ok is 0 and nv->why says why. */
static void nvml_open(struct nvml *nv)
{
	memset(nv, 0, sizeof *nv);
	nv->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!nv->lib) {
		const char *e = dlerror();
		snprintf(nv->why, sizeof nv->why, "cannot load libnvidia-ml.so.1: %s", e ? e : "?");
		return;
	}
	nv->init = (nvml_ret(*)(void))nvml_sym(nv, "nvmlInit_v2", "nvmlInit");
	nv->shutdown = (nvml_ret(*)(void))nvml_sym(nv, "nvmlShutdown", NULL);
	nv->errstr = (const char *(*)(nvml_ret))nvml_sym(nv, "nvmlErrorString", NULL);
	nv->count = (nvml_ret(*)(unsigned *))nvml_sym(nv, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
	nv->by_index = (nvml_ret(*)(unsigned, nvml_dev *))nvml_sym(nv, "nvmlDeviceGetHandleByIndex_v2",
								   "nvmlDeviceGetHandleByIndex");
	nv->name = (nvml_ret(*)(nvml_dev, char *, unsigned))nvml_sym(nv, "nvmlDeviceGetName", NULL);
	nv->uuid = (nvml_ret(*)(nvml_dev, char *, unsigned))nvml_sym(nv, "nvmlDeviceGetUUID", NULL);
	nv->procname = (nvml_ret(*)(unsigned, char *, unsigned))nvml_sym(nv, "nvmlSystemGetProcessName", NULL);
	static const char *const pn[3] = {"nvmlDeviceGetComputeRunningProcesses_v3",
					  "nvmlDeviceGetComputeRunningProcesses_v2",
					  "nvmlDeviceGetComputeRunningProcesses"};
	/* Nominal entry sizes: v3/v2 take nvmlProcessInfo_v2_t (24 bytes), the plain one
	 * nvmlProcessInfo_v1_t (16). Some drivers gave _v3 a 32-byte entry without a version
	 * bump, so the stride is also measured on each call (nvml_list). */
	static const size_t ps[3] = {24, 24, 16};
	for (int i = 0; i < 3; i++) {
		nv->procs[i] = (nvml_ret(*)(nvml_dev, unsigned *, void *))dlsym(nv->lib, pn[i]);
		nv->stride[i] = ps[i];
	}
	if (!nv->init || !nv->count || !nv->by_index || !(nv->procs[0] || nv->procs[1] || nv->procs[2])) {
		snprintf(nv->why, sizeof nv->why, "libnvidia-ml.so.1 lacks the functions boxgate needs");
		return;
	}
	nvml_ret r = nv->init();
	if (r != NVML_SUCCESS) {
		snprintf(nv->why, sizeof nv->why, "nvmlInit failed: %s", nvml_err(nv, r));
		return;
	}
	nv->ok = 1;
}

static void nvml_close(struct nvml *nv)
{
	if (nv->ok && nv->shutdown)
		nv->shutdown();
	nv->ok = 0;
	/* The library stays loaded: unloading NVML at exit has crashed some drivers. */
}

static int nvml_count(struct nvml *nv, unsigned *n)
{
	*n = 0;
	return nv->count(n) == NVML_SUCCESS ? 0 : -1;
}

static void sanitize_word(char *s)
{
	for (; *s; s++)
		if (isspace((unsigned char)*s) || iscntrl((unsigned char)*s))
			*s = '_';
}

static void proc_comm(unsigned pid, char *out, size_t n)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%u/comm", pid);
	FILE *f = fopen(path, "re");
	out[0] = 0;
	if (f) {
		if (fgets(out, (int)n, f))
			out[strcspn(out, "\n")] = 0;
		fclose(f);
	}
	if (!out[0])
		snprintf(out, n, "?");
}

/* Entry stride of a process list NVML just wrote: the bytes it wrote end at count*stride.
 * The buffer was filled with 0xa5 before the call. Falls back to the nominal size. */
static size_t measure_stride(const unsigned char *b, size_t cap, unsigned count, size_t nominal)
{
	if (count < 2)
		return nominal;
	size_t last = cap;
	while (last > 0 && b[last - 1] == 0xa5)
		last--;
	static const size_t cands[] = {32, 24, 16};
	for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
		size_t s = cands[i];
		if (last <= count * s && last > count * s - s / 2)
			return s;
	}
	return nominal;
}

/* Compute processes on GPU idx, appended to *v. -1 with a reason on failure. */
static int nvml_list(struct nvml *nv, int idx, struct gpu_proc **v, int *n, char *why, size_t whyn)
{
	nvml_dev dev;
	nvml_ret r = nv->by_index((unsigned)idx, &dev);
	if (r != NVML_SUCCESS) {
		snprintf(why, whyn, "gpu %d: %s", idx, nvml_err(nv, r));
		return -1;
	}
	unsigned cap = 64;
	for (int attempt = 0; attempt < 6; attempt++) {
		for (int k = 0; k < 3; k++) {
			if (!nv->procs[k])
				continue;
			size_t bytes = (size_t)cap * 32;
			unsigned char *b = xrealloc(NULL, bytes);
			memset(b, 0xa5, bytes);
			unsigned count = cap;
			r = nv->procs[k](dev, &count, b);
			if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
				free(b);
				cap = count > cap ? count + 16 : cap * 2;
				goto again;
			}
			if (r != NVML_SUCCESS) {
				free(b);
				continue; /* an older entry point may still work */
			}
			size_t stride = measure_stride(b, bytes, count, nv->stride[k]);
			for (unsigned i = 0; i < count && (i + 1) * stride <= bytes; i++) {
				unsigned pid;
				unsigned long long mem;
				memcpy(&pid, b + i * stride, sizeof pid);
				memcpy(&mem, b + i * stride + 8, sizeof mem);
				*v = xrealloc(*v, sizeof **v * (size_t)(*n + 1));
				struct gpu_proc *gp = &(*v)[(*n)++];
				gp->pid = pid;
				gp->gpu = idx;
				gp->mem_mib = mem == ~0ULL ? -1 : (long long)(mem / (1024 * 1024));
				gp->name[0] = 0;
				if (!nv->procname || nv->procname(pid, gp->name, sizeof gp->name) != NVML_SUCCESS ||
				    !gp->name[0])
					proc_comm(pid, gp->name, sizeof gp->name);
				gp->name[sizeof gp->name - 1] = 0;
			}
			free(b);
			return 0;
		}
		snprintf(why, whyn, "gpu %d: cannot list compute processes: %s", idx, nvml_err(nv, r));
		return -1;
	again:;
	}
	snprintf(why, whyn, "gpu %d: compute process list keeps growing", idx);
	return -1;
}

/* ---------------------------------------------------------------- subcommands gpus, procs */

static int cmd_version(void)
{
	char line[128];
	int n = snprintf(line, sizeof line, "boxgate-agent %s\n", BOXGATE_AGENT_VERSION);
	out_add(&g_out[0], line, (size_t)n);
	return 0;
}

static void print_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void print_line(const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof tmp - 2)
		n = (int)sizeof tmp - 2;
	tmp[n++] = '\n';
	out_add(&g_out[0], tmp, (size_t)n);
}

static int cmd_gpus(int argc, char **argv)
{
	if (argc != 0)
		usage_fail("gpus takes no arguments (got '%s')", argv[0]);
	struct nvml nv;
	nvml_open(&nv);
	unsigned n;
	if (!nv.ok) {
		print_line("no-nvml %s", nv.why);
	} else if (nvml_count(&nv, &n) < 0) {
		print_line("no-nvml cannot count GPUs");
	} else {
		if (n == 0)
			print_line("no-nvml no GPU found");
		for (unsigned i = 0; i < n; i++) {
			nvml_dev d;
			char name[96] = "?", uuid[96] = "?";
			if (nv.by_index(i, &d) != NVML_SUCCESS)
				continue;
			if (nv.name)
				nv.name(d, name, sizeof name);
			if (nv.uuid)
				nv.uuid(d, uuid, sizeof uuid);
			name[sizeof name - 1] = uuid[sizeof uuid - 1] = 0;
			sanitize_word(uuid);
			print_line("gpu %u %s %s", i, name, uuid);
		}
	}
	nvml_close(&nv);
	return 0;
}

static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
	const char *a = argv[*i];
	size_t n = strlen(name);
	if (strncmp(a, name, n) != 0)
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n] != 0)
		return NULL;
	if (*i + 1 >= argc)
		usage_fail("%s needs a value", name);
	return argv[++*i];
}

static int cmd_procs(int argc, char **argv)
{
	int *gpus = NULL, ngpus = 0, all = 1;
	for (int i = 0; i < argc; i++) {
		const char *v;
		if ((v = opt_value(argc, argv, &i, "--gpus"))) {
			free(gpus);
			if (parse_gpus(v, &gpus, &ngpus) < 0)
				usage_fail("bad --gpus '%s'", v);
			all = 0;
		} else {
			usage_fail("procs: unknown argument '%s'", argv[i]);
		}
	}
	struct nvml nv;
	nvml_open(&nv);
	unsigned n = 0;
	if (!nv.ok) {
		print_line("no-nvml %s", nv.why);
	} else if (nvml_count(&nv, &n) < 0) {
		print_line("no-nvml cannot count GPUs");
	} else {
		if (all) {
			free(gpus);
			gpus = xrealloc(NULL, sizeof *gpus * (n ? n : 1));
			for (unsigned i = 0; i < n; i++)
				gpus[i] = (int)i;
			ngpus = (int)n;
		}
		for (int g = 0; g < ngpus; g++) {
			struct gpu_proc *v = NULL;
			int k = 0;
			char why[256];
			if ((unsigned)gpus[g] >= n) {
				msg("gpu %d: not present (%u GPUs)", gpus[g], n);
				continue;
			}
			if (nvml_list(&nv, gpus[g], &v, &k, why, sizeof why) < 0)
				msg("%s", why);
			for (int i = 0; i < k; i++) {
				sanitize_word(v[i].name);
				print_line("pid %u gpu %d name %s mem_mib %lld", v[i].pid, v[i].gpu, v[i].name, v[i].mem_mib);
			}
			free(v);
		}
	}
	nvml_close(&nv);
	free(gpus);
	return 0;
}

/* ---------------------------------------------------------------- /proc */

struct pent {
	pid_t pid, ppid, sid;
	char state;
};

static int cmp_pent(const void *a, const void *b)
{
	pid_t x = ((const struct pent *)a)->pid, y = ((const struct pent *)b)->pid;
	return (x > y) - (x < y);
}

/* Every process in /proc, sorted by pid. */
static struct pent *proc_scan(size_t *count)
{
	struct pent *v = NULL;
	size_t n = 0, cap = 0;
	DIR *d = opendir("/proc");
	*count = 0;
	if (!d)
		return NULL;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		char path[64], b[512];
		int pid = atoi(e->d_name);
		if (pid <= 0)
			continue;
		snprintf(path, sizeof path, "/proc/%d/stat", pid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t r = read(fd, b, sizeof b - 1);
		close(fd);
		if (r <= 0)
			continue;
		b[r] = 0;
		char *rp = strrchr(b, ')');
		struct pent pe = {0};
		int pgrp;
		if (!rp || sscanf(rp + 1, " %c %d %d %d", &pe.state, &pe.ppid, &pgrp, &pe.sid) != 4)
			continue;
		pe.pid = (pid_t)pid;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			v = xrealloc(v, sizeof *v * cap);
		}
		v[n++] = pe;
	}
	closedir(d);
	qsort(v, n, sizeof *v, cmp_pent);
	*count = n;
	return v;
}

static const struct pent *pent_find(const struct pent *v, size_t n, pid_t pid)
{
	struct pent key = {.pid = pid};
	return bsearch(&key, v, n, sizeof *v, cmp_pent);
}

/* Part of the gate's tree: in the gate's session, or a parent chain reaching the agent. */
static int pent_ours(const struct pent *v, size_t n, const struct pent *p, pid_t self, pid_t gate_sid)
{
	if (p->pid == self)
		return 0;
	if (gate_sid > 0 && p->sid == gate_sid)
		return 1;
	pid_t cur = p->ppid;
	for (size_t depth = 0; depth <= n && cur > 1; depth++) {
		if (cur == self)
			return 1;
		const struct pent *q = pent_find(v, n, cur);
		if (!q)
			return 0;
		cur = q->ppid;
	}
	return 0;
}

/* ---------------------------------------------------------------- run */

enum phase { PH_LOCK, PH_RUN, PH_TERM, PH_KILL, PH_DRAIN, PH_GPU, PH_DONE };
enum why {
	W_NONE,
	W_EXITED,   /* the gate exited by itself */
	W_TIMEOUT,  /* watchdog */
	W_EOF,      /* stdin EOF */
	W_HB,       /* heartbeat silence */
	W_HUP,      /* SIGHUP */
	W_OUTGONE,  /* stdout/stderr closed */
	W_KILLREQ,  /* "kill" on stdin */
	W_SIGINT,   /* SIGINT */
	W_SIGTERM,  /* SIGTERM, SIGQUIT */
};

struct instream {
	int fd; /* -1 at EOF */
	struct buf part;
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
	char *lock_dir_own;
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
	struct buf stdin_buf;
	long long start_ms, hb_last_ms, trigger_ms, kill_at_ms, giveup_ms, next_scan_ms, drain_until_ms;
	long long gpu_until_ms, gpu_next_ms, reaped_ms;
	enum phase ph;
	enum why why;
	struct killed *killed;
	int nkilled;
	int unreaped;
	int gpu_freed; /* -1 null, 0 false, 1 true */
	int leftovers;
};

static const char *const why_text[] = {
	[W_NONE] = "",
	[W_EXITED] = "",
	[W_TIMEOUT] = "timeout",
	[W_EOF] = "stdin closed: client gone",
	[W_HB] = "no heartbeat: client presumed gone",
	[W_HUP] = "SIGHUP: client gone",
	[W_OUTGONE] = "output closed: client gone",
	[W_KILLREQ] = "kill requested",
	[W_SIGINT] = "SIGINT",
	[W_SIGTERM] = "terminated by signal",
};

static int why_exit(const struct run *r)
{
	switch (r->why) {
	case W_TIMEOUT:
		return EXIT_TIMEOUT;
	case W_EOF:
	case W_HB:
	case W_HUP:
	case W_OUTGONE:
		return EXIT_CLIENT_GONE;
	case W_KILLREQ:
	case W_SIGINT:
		return EXIT_KILLED;
	case W_SIGTERM:
		return EXIT_TERMINATED;
	case W_EXITED:
		if (WIFEXITED(r->gate_status))
			return WEXITSTATUS(r->gate_status);
		if (WIFSIGNALED(r->gate_status))
			return 128 + WTERMSIG(r->gate_status);
		return 1;
	case W_NONE:
		break;
	}
	return 0;
}

static void fmt_secs(char *out, size_t n, long long ms)
{
	if (ms % 1000 == 0)
		snprintf(out, n, "%lld", ms / 1000);
	else
		snprintf(out, n, "%.3f", (double)ms / 1000.0);
}

static void killed_note(struct run *r, pid_t pid, int sig)
{
	for (int i = 0; i < r->nkilled; i++)
		if (r->killed[i].pid == pid) {
			if (sig == SIGTERM && !r->killed[i].termed) {
				r->killed[i].termed = 1;
				kill(pid, SIGTERM);
				kill(pid, SIGCONT);
			} else if (sig == SIGKILL) {
				kill(pid, SIGKILL);
			}
			return;
		}
	r->killed = xrealloc(r->killed, sizeof *r->killed * (size_t)(r->nkilled + 1));
	r->killed[r->nkilled++] = (struct killed){.pid = pid, .termed = sig == SIGTERM};
	kill(pid, sig);
	if (sig == SIGTERM)
		kill(pid, SIGCONT);
}

static int killed_has(const struct run *r, pid_t pid)
{
	for (int i = 0; i < r->nkilled; i++)
		if (r->killed[i].pid == pid)
			return 1;
	return 0;
}

/* Reap every child that has exited; the gate's own status is kept. */
static void reap(struct run *r)
{
	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);
		if (p <= 0)
			return;
		if (p == r->gate) {
			r->gate_status = st;
			r->gate_reaped = 1;
		}
	}
}

/* One scan of the gate's tree. sig 0: only count; SIGTERM: each process gets it once;
 * SIGKILL: every time. Returns the number of processes left (zombies included) and, in
 * *live, those that are not zombies. */
static size_t tree_scan(struct run *r, int sig, size_t *live, struct buf *list)
{
	size_t n, left = 0, alive = 0;
	struct pent *v = proc_scan(&n);
	for (size_t i = 0; i < n; i++) {
		if (!pent_ours(v, n, &v[i], r->self, r->gate))
			continue;
		left++;
		if (v[i].state == 'Z' || v[i].state == 'X')
			continue;
		alive++;
		if (list)
			buf_addf(list, "%s%d", alive > 1 ? ", " : "", (int)v[i].pid);
		if (sig)
			killed_note(r, v[i].pid, sig);
	}
	free(v);
	if (live)
		*live = alive;
	return left;
}

static void start_stop(struct run *r, enum why why)
{
	long long now = now_ms();
	if (r->why == W_NONE || r->why == W_EXITED)
		r->why = why;
	r->trigger_ms = now;
	r->kill_at_ms = now + r->grace_ms;
	r->next_scan_ms = now + TERM_SCAN_MS;
	r->ph = PH_TERM;
	/* Scan first, so that every process alive now is counted, then the group. */
	reap(r);
	tree_scan(r, SIGTERM, NULL, NULL);
	if (!r->gate_reaped) {
		kill(-r->gate, SIGTERM);
		kill(-r->gate, SIGCONT);
	}
}

/* Something asks the gate to stop: the first reason wins. */
static void trigger(struct run *r, enum why why)
{
	if (r->ph == PH_LOCK) {
		if (r->why == W_NONE)
			r->why = why;
		return;
	}
	if (r->ph != PH_RUN)
		return;
	char t[32];
	switch (why) {
	case W_TIMEOUT:
		fmt_secs(t, sizeof t, r->timeout_ms);
		msg("gate timed out after %s s: stopping it", t);
		break;
	case W_HB:
		fmt_secs(t, sizeof t, r->hb_ms);
		msg("no heartbeat for %s s: client presumed gone, stopping the gate", t);
		break;
	default:
		msg("%s: stopping the gate", why_text[why]);
		break;
	}
	start_stop(r, why);
}

static void handle_stdin_line(struct run *r, const char *line, size_t n)
{
	r->hb_last_ms = now_ms();
	while (n && (line[n - 1] == '\r' || line[n - 1] == ' '))
		n--;
	if (n == 2 && !memcmp(line, "hb", 2))
		return;
	if (n == 4 && !memcmp(line, "kill", 4)) {
		trigger(r, W_KILLREQ);
		return;
	}
	if (n)
		msg("ignoring unknown stdin line '%.*s'", (int)(n > 40 ? 40 : n), line);
}

static void read_stdin(struct run *r)
{
	char b[4096];
	ssize_t k = read(0, b, sizeof b);
	if (k < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (k <= 0) {
		r->stdin_open = 0;
		g_watch_stdin = 0;
		trigger(r, W_EOF);
		return;
	}
	g_alive_ms = now_ms();
	buf_add(&r->stdin_buf, b, (size_t)k);
	for (;;) {
		const char *p = buf_data(&r->stdin_buf);
		size_t n = buf_used(&r->stdin_buf);
		const char *nl = memchr(p, '\n', n);
		if (!nl) {
			if (n > 1024) /* not our protocol: drop it, it still counts as a heartbeat */
				buf_consume(&r->stdin_buf, n);
			r->hb_last_ms = now_ms();
			break;
		}
		handle_stdin_line(r, p, (size_t)(nl - p));
		buf_consume(&r->stdin_buf, (size_t)(nl - p) + 1);
	}
}

static void in_flush_part(struct instream *s)
{
	out_add(s->to, buf_data(&s->part), buf_used(&s->part));
	buf_consume(&s->part, buf_used(&s->part));
}

static void read_gate(struct instream *s)
{
	char b[65536];
	ssize_t k = read(s->fd, b, sizeof b);
	if (k < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (k <= 0) {
		in_flush_part(s);
		close(s->fd);
		s->fd = -1;
		return;
	}
	s->last_ms = now_ms();
	buf_add(&s->part, b, (size_t)k);
	const char *p = buf_data(&s->part);
	size_t n = buf_used(&s->part);
	const char *nl = memrchr(p, '\n', n);
	if (nl) {
		size_t whole = (size_t)(nl - p) + 1;
		out_add(s->to, p, whole);
		buf_consume(&s->part, whole);
	}
	if (buf_used(&s->part) >= LINE_KEEP_MAX)
		in_flush_part(s);
}

static void handle_signals(struct run *r)
{
	struct signalfd_siginfo si;
	while (read(r->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			if (r->ph != PH_LOCK)
				reap(r);
			break;
		case SIGHUP:
			trigger(r, W_HUP);
			break;
		case SIGINT:
			trigger(r, W_SIGINT);
			break;
		case SIGTERM:
		case SIGQUIT:
			trigger(r, W_SIGTERM);
			break;
		default:
			break;
		}
	}
}

/* The one wait of the agent: poll everything it watches until an event or deadline. */
static void loop_once(struct run *r, long long deadline)
{
	struct pollfd pf[6];
	int role[6], n = 0;
	pf[n] = (struct pollfd){.fd = r->sfd, .events = POLLIN};
	role[n++] = 0;
	if (r->stdin_open && (r->ph == PH_LOCK || r->ph == PH_RUN)) {
		pf[n] = (struct pollfd){.fd = 0, .events = POLLIN};
		role[n++] = 1;
	}
	for (int i = 0; i < 2; i++)
		if (r->in[i].fd >= 0 && buf_used(&r->in[i].to->q) < OUTQ_HIGH) {
			pf[n] = (struct pollfd){.fd = r->in[i].fd, .events = POLLIN};
			role[n++] = 2 + i;
		}
	for (int i = 0; i < 2; i++)
		if (!g_out[i].dead && buf_used(&g_out[i].q)) {
			pf[n] = (struct pollfd){.fd = g_out[i].fd, .events = POLLOUT};
			role[n++] = 4 + i;
		}
	long long left = deadline - now_ms();
	if (left < 0)
		left = 0;
	if (left > 60000)
		left = 60000;
	int k = poll(pf, (nfds_t)n, (int)left);
	if (k <= 0)
		return;
	for (int i = 0; i < n; i++) {
		short ev = pf[i].revents;
		if (!ev)
			continue;
		switch (role[i]) {
		case 0:
			handle_signals(r);
			break;
		case 1:
			read_stdin(r);
			break;
		case 2:
		case 3:
			read_gate(&r->in[role[i] - 2]);
			break;
		default: {
			struct outq *o = &g_out[role[i] - 4];
			if (ev & POLLNVAL) {
				o->dead = 1;
				buf_release(&o->q);
			} else if (out_write_some(o) < 0 || (ev & (POLLERR | POLLHUP))) {
				if (!o->dead) {
					o->dead = 1;
					buf_release(&o->q);
				}
				g_output_gone = 1;
			}
			break;
		}
		}
	}
	if (g_output_gone && r->ph == PH_RUN)
		trigger(r, W_OUTGONE);
}

/* ------------------------------------------------ locks */

static int mkdir_p(const char *dir)
{
	char *p = xstrdup(dir);
	int rc = 0;
	for (char *s = p + 1;; s++) {
		if (*s == '/' || !*s) {
			char c = *s;
			*s = 0;
			if (mkdir(p, 0700) < 0 && errno != EEXIST) {
				rc = -1;
				break;
			}
			*s = c;
			if (!c)
				break;
		}
	}
	free(p);
	struct stat st;
	if (rc == 0 && (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)))
		rc = -1;
	return rc;
}

static void lock_name(const struct run *r, int i, char *out, size_t n)
{
	if (r->ngpus)
		snprintf(out, n, "gpu%d", r->gpus[i]);
	else
		snprintf(out, n, "cpu");
}

/* "held by TAG pid N since TIME" from a lock file's holder record. */
static void holder_text(int fd, char *out, size_t n)
{
	char b[1024], tag[256] = "?", pid[32] = "?", since[64] = "?";
	ssize_t k = pread(fd, b, sizeof b - 1, 0);
	b[k > 0 ? k : 0] = 0;
	for (char *line = strtok(b, "\n"); line; line = strtok(NULL, "\n")) {
		if (!strncmp(line, "tag=", 4))
			snprintf(tag, sizeof tag, "%s", line + 4);
		else if (!strncmp(line, "pid=", 4))
			snprintf(pid, sizeof pid, "%s", line + 4);
		else if (!strncmp(line, "since=", 6))
			snprintf(since, sizeof since, "%s", line + 6);
	}
	snprintf(out, n, "held by %s pid %s since %s", tag, pid, since);
}

/* Try every lock of the slot once; all or none. Returns 0, or -1 with the busy one
 * described in busy. Exits on a system error. */
static int lock_try(struct run *r, char *busy, size_t busyn)
{
	for (int i = 0; i < r->nlocks; i++) {
		char name[32], path[PATH_MAX];
		lock_name(r, i, name, sizeof name);
		snprintf(path, sizeof path, "%s/%s.lock", r->lock_dir, name);
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0) {
			msg("cannot open lock %s: %s", path, strerror(errno));
			agent_exit(EXIT_SYSERR);
		}
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			int e = errno;
			if (e != EWOULDBLOCK) {
				msg("cannot lock %s: %s", path, strerror(e));
				agent_exit(EXIT_SYSERR);
			}
			char h[512];
			holder_text(fd, h, sizeof h);
			snprintf(busy, busyn, "slot %s busy: %s", name, h);
			close(fd);
			for (int j = 0; j < i; j++) {
				close(r->lock_fds[j]);
				r->lock_fds[j] = -1;
			}
			return -1;
		}
		r->lock_fds[i] = fd;
	}
	char since[64], rec[512];
	iso_now(since, sizeof since);
	int n = snprintf(rec, sizeof rec, "tag=%s\npid=%d\nsince=%s\n", r->tag, (int)r->self, since);
	for (int i = 0; i < r->nlocks; i++) {
		if (pwrite(r->lock_fds[i], rec, (size_t)n, 0) != n || ftruncate(r->lock_fds[i], n) < 0)
			msg("cannot write the holder record into the lock file: %s", strerror(errno));
	}
	return 0;
}

static void lock_release(struct run *r)
{
	for (int i = 0; i < r->nlocks; i++)
		if (r->lock_fds[i] >= 0) {
			if (ftruncate(r->lock_fds[i], 0) < 0) {
				/* a stale record is harmless: it is only read while locked */
			}
			close(r->lock_fds[i]);
			r->lock_fds[i] = -1;
		}
}

static void lock_slot(struct run *r)
{
	char busy[768];
	if (mkdir_p(r->lock_dir) < 0) {
		msg("cannot create lock directory %s: %s", r->lock_dir, strerror(errno));
		agent_exit(EXIT_SYSERR);
	}
	r->nlocks = r->ngpus ? r->ngpus : 1;
	r->lock_fds = xrealloc(NULL, sizeof(int) * (size_t)r->nlocks);
	for (int i = 0; i < r->nlocks; i++)
		r->lock_fds[i] = -1;
	long long deadline = now_ms() + r->lock_wait_ms;
	int said = 0;
	r->ph = PH_LOCK;
	for (;;) {
		if (lock_try(r, busy, sizeof busy) == 0)
			return;
		long long now = now_ms();
		if (now >= deadline || r->why != W_NONE) {
			if (r->why != W_NONE)
				msg("gave up waiting for the slot: %s", why_text[r->why]);
			msg("%s", busy);
			agent_exit(r->why != W_NONE ? why_exit(r) : EXIT_BUSY);
		}
		if (!said) {
			char t[32];
			fmt_secs(t, sizeof t, r->lock_wait_ms);
			msg("%s; waiting up to %s s", busy, t);
			said = 1;
		}
		long long until = now + LOCK_POLL_MS;
		if (r->hb_ms && r->stdin_open && r->hb_last_ms + r->hb_ms < until)
			until = r->hb_last_ms + r->hb_ms;
		loop_once(r, until < deadline ? until : deadline);
		if (r->hb_ms && r->stdin_open && now_ms() >= r->hb_last_ms + r->hb_ms)
			trigger(r, W_HB);
		if (g_output_gone)
			trigger(r, W_OUTGONE);
	}
}

/* ------------------------------------------------ exclusivity */

static void invalid_no_gpu(struct run *r, const char *detail)
{
	if (!r->require_gpu) {
		msg("no GPU check: %s (going on: --require-gpu no)", detail);
		return;
	}
	struct buf b = {0};
	buf_addf(&b, "%sFAITHFUL_RESULT {\"verdict\":\"INVALID\",\"reason\":\"no_gpu\",\"detail\":\"", g_frame);
	buf_json(&b, detail);
	buf_addf(&b, "\"}\n");
	msg("INVALID: no GPU: %s", detail);
	out_line(&g_out[0], buf_data(&b), buf_used(&b));
	buf_release(&b);
	lock_release(r);
	agent_exit(EXIT_INVALID);
}

static void check_exclusive(struct run *r)
{
	if (!r->ngpus && !r->require_gpu)
		return;
	nvml_open(&r->nv);
	if (!r->nv.ok) {
		invalid_no_gpu(r, r->nv.why);
		return;
	}
	r->have_nvml = 1;
	unsigned count;
	if (nvml_count(&r->nv, &count) < 0 || count == 0) {
		invalid_no_gpu(r, "NVML finds no GPU");
		return;
	}
	struct gpu_proc *v = NULL;
	int n = 0;
	for (int g = 0; g < r->ngpus; g++) {
		char why[256];
		if ((unsigned)r->gpus[g] >= count) {
			snprintf(why, sizeof why, "gpu %d not present (%u GPUs)", r->gpus[g], count);
			invalid_no_gpu(r, why);
			continue;
		}
		if (nvml_list(&r->nv, r->gpus[g], &v, &n, why, sizeof why) < 0)
			invalid_no_gpu(r, why);
	}
	if (n) {
		for (int i = 0; i < n; i++)
			msg("gpu %d busy: compute process pid %u (%s, %lld MiB)", v[i].gpu, v[i].pid, v[i].name,
			    v[i].mem_mib);
		struct buf b = {0};
		buf_addf(&b, "%sFAITHFUL_RESULT {\"verdict\":\"INVALID\",\"reason\":\"gpu_busy\",\"gpu\":%d,\"pid\":%u,"
			     "\"process\":\"",
			 g_frame, v[0].gpu, v[0].pid);
		buf_json(&b, v[0].name);
		buf_addf(&b, "\"}\n");
		out_line(&g_out[0], buf_data(&b), buf_used(&b));
		buf_release(&b);
		free(v);
		lock_release(r);
		agent_exit(EXIT_INVALID);
	}
	free(v);
}

/* Still on the slot's GPUs: a killed pid, or a pid this namespace cannot see (it may be
 * one of ours seen through another pid namespace). Returns 1 when free, 0 when not,
 * -1 when NVML cannot tell. */
static int gpu_free_now(struct run *r, struct buf *why)
{
	struct gpu_proc *v = NULL;
	int n = 0, freed = 1;
	for (int g = 0; g < r->ngpus; g++) {
		char e[256];
		if (nvml_list(&r->nv, r->gpus[g], &v, &n, e, sizeof e) < 0) {
			free(v);
			return -1;
		}
	}
	for (int i = 0; i < n; i++) {
		char path[64];
		snprintf(path, sizeof path, "/proc/%u", v[i].pid);
		if (killed_has(r, (pid_t)v[i].pid) || access(path, F_OK) < 0) {
			freed = 0;
			if (why)
				buf_addf(why, " pid %u (%s) on gpu %d", v[i].pid, v[i].name, v[i].gpu);
		}
	}
	free(v);
	return freed;
}

/* ------------------------------------------------ the gate */

static void child_exec(struct run *r, int outw, int errw) __attribute__((noreturn));
static void child_exec(struct run *r, int outw, int errw)
{
	static const int sigs[] = {SIGCHLD, SIGHUP, SIGINT, SIGTERM, SIGQUIT, SIGPIPE};
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		signal(sigs[i], SIG_DFL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != r->self)
		_exit(EXIT_NOEXEC);
	int null = open("/dev/null", O_RDONLY);
	if (null < 0 || dup2(null, 0) < 0 || dup2(outw, 1) < 0 || dup2(errw, 2) < 0)
		_exit(EXIT_NOEXEC);
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 3U, ~0U, 0U) < 0)
#endif
	{
		long max = sysconf(_SC_OPEN_MAX);
		if (max < 0 || max > 65536)
			max = 65536;
		for (int fd = 3; fd < max; fd++)
			close(fd);
	}
	if (r->ngpus) {
		setenv("CUDA_VISIBLE_DEVICES", r->gpulist, 1);
		setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
	}
	setenv("PYTHONUNBUFFERED", "1", 1);
	for (int i = 0; i < r->nenvs; i++)
		putenv(r->envs[i]);
	if (r->cwd && chdir(r->cwd) < 0) {
		dprintf(2, "boxgate-agent: cannot enter %s: %s\n", r->cwd, strerror(errno));
		_exit(EXIT_NOEXEC);
	}
	execvp(r->cmd[0], r->cmd);
	dprintf(2, "boxgate-agent: cannot run %s: %s\n", r->cmd[0], strerror(errno));
	_exit(EXIT_NOEXEC);
}

static void start_gate(struct run *r)
{
	int po[2], pe[2];
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
		msg("pipe: %s", strerror(errno));
		lock_release(r);
		agent_exit(EXIT_SYSERR);
	}
	out_flush(now_ms() + 1000); /* the agent's notes first, and no queued bytes in the child */
	pid_t p = fork();
	if (p < 0) {
		msg("fork: %s", strerror(errno));
		lock_release(r);
		agent_exit(EXIT_SYSERR);
	}
	if (p == 0)
		child_exec(r, po[1], pe[1]);
	close(po[1]);
	close(pe[1]);
	fcntl(po[0], F_SETFL, O_NONBLOCK);
	fcntl(pe[0], F_SETFL, O_NONBLOCK);
	r->gate = p;
	r->in[0] = (struct instream){.fd = po[0], .to = &g_out[0]};
	r->in[1] = (struct instream){.fd = pe[0], .to = &g_out[1]};
	r->start_ms = now_ms();
	r->ph = PH_RUN;
}

/* Timers and transitions of the running phases. Returns the next deadline. */
static long long step(struct run *r)
{
	long long now = now_ms(), next = now + 60000;
	for (int i = 0; i < 2; i++) {
		struct instream *s = &r->in[i];
		if (buf_used(&s->part)) {
			if (now - s->last_ms >= PARTIAL_FLUSH_MS)
				in_flush_part(s);
			else if (s->last_ms + PARTIAL_FLUSH_MS < next)
				next = s->last_ms + PARTIAL_FLUSH_MS;
		}
	}
	switch (r->ph) {
	case PH_RUN:
		if (r->gate_reaped) {
			size_t live;
			struct buf list = {0};
			tree_scan(r, 0, &live, &list);
			if (live) {
				msg("gate exited but left %zu process%s behind (pid %.*s): stopping them", live,
				    live == 1 ? "" : "es", (int)buf_used(&list), buf_data(&list));
				r->why = W_EXITED;
				r->leftovers = (int)live;
				start_stop(r, W_EXITED);
			} else {
				r->why = W_EXITED;
				r->ph = PH_DRAIN;
				r->drain_until_ms = now + DRAIN_MS;
			}
			buf_release(&list);
			return now;
		}
		if (r->timeout_ms && now >= r->start_ms + r->timeout_ms) {
			trigger(r, W_TIMEOUT);
			return now;
		}
		if (r->timeout_ms && r->start_ms + r->timeout_ms < next)
			next = r->start_ms + r->timeout_ms;
		if (r->hb_ms && r->stdin_open) {
			if (now >= r->hb_last_ms + r->hb_ms) {
				trigger(r, W_HB);
				return now;
			}
			if (r->hb_last_ms + r->hb_ms < next)
				next = r->hb_last_ms + r->hb_ms;
		}
		return next;
	case PH_TERM:
	case PH_KILL:
		if (r->ph == PH_TERM && now >= r->kill_at_ms) {
			r->ph = PH_KILL;
			r->giveup_ms = now + KILL_GIVEUP_MS;
			if (!r->gate_reaped)
				kill(-r->gate, SIGKILL);
			r->next_scan_ms = now;
		}
		if (now >= r->next_scan_ms) {
			reap(r);
			size_t live;
			size_t left = tree_scan(r, r->ph == PH_KILL ? SIGKILL : SIGTERM, &live, NULL);
			if (!left) {
				r->reaped_ms = now_ms() - r->trigger_ms;
				r->ph = PH_DRAIN;
				r->drain_until_ms = now + DRAIN_MS;
				return now;
			}
			if (r->ph == PH_KILL && now >= r->giveup_ms) {
				r->unreaped = (int)left;
				r->reaped_ms = now_ms() - r->trigger_ms;
				msg("%zu process%s of the gate survive SIGKILL (stuck in the kernel?)", left,
				    left == 1 ? "" : "es");
				r->ph = PH_DRAIN;
				r->drain_until_ms = now + DRAIN_MS;
				return now;
			}
			r->next_scan_ms = now + (r->ph == PH_KILL ? KILL_SCAN_MS : TERM_SCAN_MS);
		}
		next = r->next_scan_ms < next ? r->next_scan_ms : next;
		if (r->ph == PH_TERM && r->kill_at_ms < next)
			next = r->kill_at_ms;
		return next;
	case PH_DRAIN:
		reap(r);
		if ((r->in[0].fd < 0 && r->in[1].fd < 0) || now >= r->drain_until_ms) {
			for (int i = 0; i < 2; i++)
				if (r->in[i].fd >= 0) {
					in_flush_part(&r->in[i]);
					close(r->in[i].fd);
					r->in[i].fd = -1;
				}
			if (r->nkilled && r->ngpus && r->have_nvml) {
				r->ph = PH_GPU;
				r->gpu_until_ms = now + GPU_CONFIRM_MS;
				r->gpu_next_ms = now;
			} else {
				r->ph = PH_DONE;
			}
			return now;
		}
		return r->drain_until_ms < next ? r->drain_until_ms : next;
	case PH_GPU:
		if (now >= r->gpu_next_ms) {
			struct buf why = {0};
			int f = gpu_free_now(r, &why);
			if (f == 1 || now >= r->gpu_until_ms) {
				r->gpu_freed = f;
				if (f == 0)
					msg("the GPU still lists%.*s", (int)buf_used(&why), buf_data(&why));
				else if (f < 0)
					msg("NVML cannot tell whether the GPU is free");
				r->ph = PH_DONE;
				buf_release(&why);
				return now;
			}
			buf_release(&why);
			r->gpu_next_ms = now + GPU_POLL_MS;
		}
		return r->gpu_next_ms < next ? r->gpu_next_ms : next;
	default:
		return now;
	}
}

static void finish_run(struct run *r) __attribute__((noreturn));
static void finish_run(struct run *r)
{
	if (r->nkilled && r->why != W_TIMEOUT) {
		msg("stopped %d process%s, all reaped in %lld ms%s", r->nkilled, r->nkilled == 1 ? "" : "es",
		    r->reaped_ms, r->unreaped ? " (some unreaped)" : "");
	}
	if (r->why == W_TIMEOUT) {
		char t[32];
		fmt_secs(t, sizeof t, r->timeout_ms);
		struct buf b = {0};
		buf_addf(&b, "%sFAITHFUL_RESULT {\"verdict\":\"TIMEOUT_HANG\",\"timeout_s\":%s,\"killed\":%d,\"gpu_freed\":%s,"
			     "\"reaped_ms\":%lld",
			 g_frame, t, r->nkilled, r->gpu_freed == 1 ? "true" : r->gpu_freed == 0 ? "false" : "null", r->reaped_ms);
		if (r->unreaped)
			buf_addf(&b, ",\"unreaped\":%d", r->unreaped);
		buf_addf(&b, "}\n");
		out_line(&g_out[0], buf_data(&b), buf_used(&b));
		buf_release(&b);
	} else if (r->why == W_KILLREQ) {
		msg("killed on request");
	}
	int rc = why_exit(r);
	if (r->why == W_EXITED) {
		g_end_why = "exited";
		if (WIFSIGNALED(r->gate_status))
			snprintf(g_end_extra, sizeof g_end_extra, ",\"gate_signal\":%d", WTERMSIG(r->gate_status));
		else if (WIFEXITED(r->gate_status))
			snprintf(g_end_extra, sizeof g_end_extra, ",\"gate_exit\":%d", WEXITSTATUS(r->gate_status));
	}
	lock_release(r);
	nvml_close(&r->nv);
	for (int i = 0; i < 2; i++)
		buf_release(&r->in[i].part);
	buf_release(&r->stdin_buf);
	free(r->killed);
	free(r->lock_fds);
	free(r->gpus);
	free(r->gpulist);
	free(r->lock_dir_own);
	free(r->envs);
	close(r->sfd);
	agent_exit(rc);
}

static void parse_run(struct run *r, int argc, char **argv)
{
	int gpus_given = 0, require_given = 0;
	const char *t = getenv("MPK_GATE_TIMEOUT_S");
	r->timeout_ms = 420000;
	if (t && *t) {
		r->timeout_ms = parse_secs(t);
		if (r->timeout_ms < 0)
			usage_fail("bad MPK_GATE_TIMEOUT_S '%s'", t);
	}
	r->grace_ms = 5000;
	r->gpulist = xstrdup("");
	int i;
	for (i = 0; i < argc; i++) {
		const char *a = argv[i], *v;
		long long *secs = NULL;
		if (!strcmp(a, "--"))
			break;
		if ((v = opt_value(argc, argv, &i, "--gpus"))) {
			free(r->gpus);
			if (parse_gpus(v, &r->gpus, &r->ngpus) < 0)
				usage_fail("bad --gpus '%s' (want e.g. 0, 0,1 or 2-3)", v);
			gpus_given = 1;
		} else if ((v = opt_value(argc, argv, &i, "--lock-dir"))) {
			if (!*v)
				usage_fail("empty --lock-dir");
			r->lock_dir = v;
		} else if ((v = opt_value(argc, argv, &i, "--tag"))) {
			r->tag = v;
		} else if ((v = opt_value(argc, argv, &i, "--lock-wait"))) {
			secs = &r->lock_wait_ms;
		} else if ((v = opt_value(argc, argv, &i, "--timeout"))) {
			secs = &r->timeout_ms;
		} else if ((v = opt_value(argc, argv, &i, "--grace"))) {
			secs = &r->grace_ms;
		} else if ((v = opt_value(argc, argv, &i, "--heartbeat"))) {
			secs = &r->hb_ms;
		} else if (!strcmp(a, "--no-stdin")) {
			r->no_stdin = 1;
		} else if (!strcmp(a, "--nonce-stdin")) {
			r->nonce_stdin = 1;
		} else if ((v = opt_value(argc, argv, &i, "--require-gpu"))) {
			if (!strcmp(v, "yes"))
				r->require_gpu = 1;
			else if (!strcmp(v, "no"))
				r->require_gpu = 0;
			else
				usage_fail("--require-gpu wants yes or no, not '%s'", v);
			require_given = 1;
		} else if ((v = opt_value(argc, argv, &i, "--cwd"))) {
			r->cwd = v;
		} else if ((v = opt_value(argc, argv, &i, "--env"))) {
			const char *eq = strchr(v, '=');
			if (!eq || !valid_env_name(v, (size_t)(eq - v)))
				usage_fail("bad --env '%s' (want NAME=VALUE, NAME of [A-Za-z_][A-Za-z0-9_]*)", v);
			r->envs = xrealloc(r->envs, sizeof *r->envs * (size_t)(r->nenvs + 1));
			r->envs[r->nenvs++] = (char *)v;
		} else {
			usage_fail("run: unknown option '%s'", a);
		}
		if (secs) {
			*secs = parse_secs(v);
			if (*secs < 0)
				usage_fail("%s wants seconds, not '%s'", a, v);
		}
	}
	if (i >= argc)
		usage_fail("run: missing '--' before the command");
	if (i + 1 >= argc)
		usage_fail("run: no command after '--'");
	r->cmd = argv + i + 1;
	if (r->no_stdin && r->hb_ms)
		usage_fail("--heartbeat needs stdin: drop --no-stdin");
	if (r->no_stdin && r->nonce_stdin)
		usage_fail("--nonce-stdin needs stdin: drop --no-stdin");
	(void)gpus_given;
	if (!require_given)
		r->require_gpu = r->ngpus > 0;
	if (r->ngpus) {
		struct buf b = {0};
		for (int g = 0; g < r->ngpus; g++)
			buf_addf(&b, "%s%d", g ? "," : "", r->gpus[g]);
		buf_add(&b, "", 1);
		free(r->gpulist);
		r->gpulist = xstrdup(buf_data(&b));
		buf_release(&b);
	}
	if (!r->lock_dir) {
		const char *home = getenv("HOME");
		if (!home || !*home) {
			struct passwd *pw = getpwuid(getuid());
			home = pw ? pw->pw_dir : "/tmp";
		}
		struct buf b = {0};
		buf_addf(&b, "%s/.cache/boxgate/locks", home);
		buf_add(&b, "", 1);
		r->lock_dir_own = xstrdup(buf_data(&b));
		r->lock_dir = r->lock_dir_own;
		buf_release(&b);
	}
	static char deftag[256];
	if (!r->tag) {
		char host[128] = "?";
		const char *user = getenv("USER");
		gethostname(host, sizeof host - 1);
		host[sizeof host - 1] = 0;
		snprintf(deftag, sizeof deftag, "%s@%s", user && *user ? user : "?", host);
		r->tag = deftag;
	} else {
		snprintf(deftag, sizeof deftag, "%s", r->tag);
		for (char *p = deftag; *p; p++)
			if (iscntrl((unsigned char)*p))
				*p = '?';
		r->tag = deftag;
	}
}

/* --nonce-stdin: the first stdin line is "nonce HEX" (16 to 64 lowercase hex digits), chosen
 * by the client for this run. From then on every stdout line of the agent's own starts with
 * "@boxgate-agent HEX ", so the gate, which never sees the agent's stdin, cannot print a line
 * the client would take for the agent's. Waits at most the heartbeat timeout (30 s without). */
static void read_nonce(struct run *r)
{
	long long deadline = now_ms() + (r->hb_ms ? r->hb_ms : 30000);
	for (;;) {
		size_t n = buf_used(&r->stdin_buf);
		const char *p = buf_data(&r->stdin_buf);
		const char *nl = n ? memchr(p, '\n', n) : NULL;
		if (nl) {
			size_t len = (size_t)(nl - p), h = len > 6 ? len - 6 : 0;
			if (len < 6 || memcmp(p, "nonce ", 6) != 0 || h < 16 || h > 64 ||
			    strspn(p + 6, "0123456789abcdef") < h)
				usage_fail("--nonce-stdin: the first stdin line is not 'nonce HEX'");
			snprintf(g_frame, sizeof g_frame, "@boxgate-agent %.*s ", (int)h, p + 6);
			buf_consume(&r->stdin_buf, len + 1);
			r->hb_last_ms = g_alive_ms = now_ms();
			return;
		}
		if (n > 128)
			usage_fail("--nonce-stdin: the first stdin line is not 'nonce HEX'");
		long long left = deadline - now_ms();
		if (left <= 0)
			usage_fail("--nonce-stdin: no nonce on stdin");
		struct pollfd pf = {.fd = 0, .events = POLLIN};
		if (poll(&pf, 1, (int)left) <= 0)
			continue;
		char b[256];
		ssize_t k = read(0, b, sizeof b);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k <= 0) {
			msg("stdin closed before the nonce: client gone");
			agent_exit(EXIT_CLIENT_GONE);
		}
		buf_add(&r->stdin_buf, b, (size_t)k);
	}
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

	/* Signals arrive through a signalfd, so every wait is the one poll. Inherited
	 * "ignore" dispositions (nohup, a shell's background job) are reset first: an ignored
	 * signal would never reach the signalfd. */
	static const int sigs[] = {SIGCHLD, SIGHUP, SIGINT, SIGTERM, SIGQUIT};
	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		signal(sigs[i], SIG_DFL);
		sigaddset(&set, sigs[i]);
	}
	signal(SIGPIPE, SIG_IGN);
	sigprocmask(SIG_BLOCK, &set, NULL);
	r.sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (r.sfd < 0) {
		msg("signalfd: %s", strerror(errno));
		agent_exit(EXIT_SYSERR);
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		msg("cannot become a child subreaper: %s", strerror(errno));
		agent_exit(EXIT_SYSERR);
	}
	r.hb_last_ms = g_alive_ms = now_ms();
	g_watch_stdin = r.stdin_open;
	g_hb_ms = r.hb_ms;
	if (r.nonce_stdin)
		read_nonce(&r);

	lock_slot(&r);
	check_exclusive(&r);
	start_gate(&r);
	for (;;) {
		long long next = step(&r);
		if (r.ph == PH_DONE)
			break;
		loop_once(&r, next);
	}
	finish_run(&r);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage_fail("missing command");
	const char *c = argv[1];
	int rc;
	if (!strcmp(c, "version") && argc == 2)
		rc = cmd_version();
	else if (!strcmp(c, "gpus"))
		rc = cmd_gpus(argc - 2, argv + 2);
	else if (!strcmp(c, "procs"))
		rc = cmd_procs(argc - 2, argv + 2);
	else if (!strcmp(c, "run"))
		rc = cmd_run(argc - 2, argv + 2);
	else
		usage_fail("unknown command '%s'", c);
	agent_exit(rc);
}
