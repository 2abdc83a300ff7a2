/* boxgate-agent serve: one agent process that runs a campaign worker's jobs
 * one after the other, each handed over stdin, so that a job costs one round
 * trip instead of an exec channel's open, request and close.
 *
 * Every job is a `run` of its own: the serving agent starts the job's command
 * line (AGENT run --nonce-stdin ... -- GATE ARGS, exactly what boxgate would
 * have sent as an exec) in /bin/sh, as sshd would, with the channel's stdout
 * and stderr as the job's own and a pipe as its stdin. The run's nonce goes
 * first into that pipe, then every byte the client sends until the run ends
 * (heartbeats, a kill): the run's lock, watchdog, GPU check, framing and end
 * line are the run's, unchanged. The job's shell runs in a process group of
 * its own with SIGHUP, SIGINT, SIGTERM and SIGQUIT ignored (the run resets
 * them), so a signal passed to the group stops the run cleanly and the shell
 * ends after it. When the job's shell has been reaped the
 * serving agent says so on both streams, framed with the job's nonce:
 *   stdout: @boxgate-agent NONCE served {"exit":N} (or {"signal":N})
 *   stderr: @boxgate-agent NONCE served
 * after everything the job wrote there; the client takes the job as over
 * once both lines have come.
 *
 * stdin, one line each, between jobs:
 *   job NONCE CMDLINE   a job: CMDLINE with '\\' as "\\\\", newline as "\\n",
 *                       carriage return as "\\r"
 *   hb, kill            late words of the last job's client: ignored
 *   EOF                 the client is gone: exit 0
 * Unknown lines are noted on stderr and ignored. While a job runs, EOF on
 * stdin closes the job's stdin (the run stops its gate: client gone), and
 * SIGTERM, SIGINT, SIGQUIT or SIGHUP is passed to the job; the serving agent
 * exits once the job has ended. Idle for --idle S seconds (default 300, 0:
 * never), it exits by itself: a client that needs it again starts another. */
#include "gate/agent/output.h"
#include "gate/agent/options.h"
#include "gate/agent/serve.h"

#define SERVE_LINE_MAX  (512 * 1024)
#define SERVE_IDLE_MS   300000LL
#define SERVE_WRITE_MS  30000 /* a marker the channel does not take in this long: gone */
#define SERVE_SHELL     "/bin/sh"
#define SERVE_STDIN_MAX (1024 * 1024) /* relayed bytes the job has not taken yet */

struct serve {
	long long idle_ms;
	strbuf line;  /* the stdin line being read between jobs */
	int too_long; /* inside a line longer than SERVE_LINE_MAX */
	pid_t job;    /* the running job's shell, 0 when none */
	int job_in;   /* the job's stdin pipe, -1 */
	struct byteq relay;
	char frame[96]; /* AGENT_FRAME NONCE " " of the running job */
	int stdin_eof;
	int sfd;
	long long last_ms;
};

/* Writes all of `s` on `fd` (the channel, shared with the jobs: left
 * blocking), waiting for room with poll so that a client that stopped reading
 * cannot hold the agent for ever. -1 when it could not. */
static int put_all(int fd, const char *s, size_t n)
{
	long long deadline = bg_now_ms() + SERVE_WRITE_MS;
	while (n) {
		struct pollfd pf = {.fd = fd, .events = POLLOUT};
		long long left = deadline - bg_now_ms();
		if (left <= 0)
			return -1;
		int r = poll(&pf, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || (pf.revents & (POLLERR | POLLNVAL)))
			return -1;
		size_t chunk = n > PIPE_BUF ? PIPE_BUF : n;
		ssize_t w = write(fd, s, chunk);
		if (w < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (w <= 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	char b[512];
	va_list ap;
	va_start(ap, fmt);
	size_t len = msg_vformat(b, sizeof b, "boxgate-agent: serve: ", fmt, ap);
	va_end(ap);
	put_all(2, b, len);
}

/* CMDLINE's escapes undone in place; -1 on a stray backslash or a NUL. */
static int unescape(char *s, size_t n, size_t *out)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '\0')
			return -1;
		if (c == '\\') {
			if (++i == n)
				return -1;
			c = s[i] == 'n' ? '\n' : s[i] == 'r' ? '\r' : s[i] == '\\' ? '\\' : 0;
			if (!c)
				return -1;
		}
		s[k++] = c;
	}
	s[k] = '\0';
	*out = k;
	return 0;
}

static void start_job(struct serve *sv, const char *nonce, size_t hn, const char *cmd)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		note("pipe: %s", strerror(errno));
		agent_exit(AGENT_EXIT_SYSERR);
	}
	pid_t pid = fork();
	if (pid < 0) {
		note("fork: %s", strerror(errno));
		agent_exit(AGENT_EXIT_SYSERR);
	}
	if (pid == 0) {
		/* A group of its own for the signals passed on. The shell ignores
		 * them (whether it execs the run or waits for it), so that it ends
		 * only after the run, which resets them and stops its gate cleanly;
		 * the markers then follow everything the run wrote. */
		setpgid(0, 0);
		static const int dfl[] = {SIGCHLD, SIGPIPE};
		static const int ign[] = {SIGHUP, SIGINT, SIGTERM, SIGQUIT};
		for (size_t i = 0; i < sizeof dfl / sizeof dfl[0]; i++)
			signal(dfl[i], SIG_DFL);
		for (size_t i = 0; i < sizeof ign / sizeof ign[0]; i++)
			signal(ign[i], SIG_IGN);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (dup2(p[0], 0) < 0)
			_exit(AGENT_EXIT_NOEXEC);
		execl(SERVE_SHELL, "sh", "-c", cmd, (char *)NULL);
		dprintf(2, "boxgate-agent: serve: cannot run %s: %s\n", SERVE_SHELL,
			strerror(errno));
		_exit(AGENT_EXIT_NOEXEC);
	}
	close(p[0]);
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	sv->job = pid;
	sv->job_in = p[1];
	snprintf(sv->frame, sizeof sv->frame, AGENT_FRAME "%.*s ", (int)hn, nonce);
	bq_add(&sv->relay, AGENT_IN_NONCE, strlen(AGENT_IN_NONCE));
	bq_add(&sv->relay, nonce, hn);
	bq_add(&sv->relay, "\n", 1);
}

/* One whole stdin line between jobs. */
static void idle_line(struct serve *sv, char *line, size_t n)
{
	while (n && (line[n - 1] == '\r' || line[n - 1] == ' '))
		n--;
	line[n] = '\0';
	if (!n || !strcmp(line, AGENT_IN_HEARTBEAT) || !strcmp(line, AGENT_IN_KILL))
		return;
	size_t pre = strlen(AGENT_SERVE_JOB);
	if (n <= pre || memcmp(line, AGENT_SERVE_JOB, pre) != 0) {
		note("ignoring unknown stdin line '%.*s'", (int)(n > 40 ? 40 : n), line);
		return;
	}
	char *nonce = line + pre;
	size_t hn = strspn(nonce, "0123456789abcdef");
	size_t len;
	if (hn < AGENT_NONCE_HEX_MIN || hn > AGENT_NONCE_HEX_MAX || nonce[hn] != ' ' ||
	    unescape(nonce + hn + 1, n - pre - hn - 1, &len) < 0 || len == 0) {
		/* Nothing to frame an answer with: the client waits on a job that
		 * never started, so the agent leaves, and the client sees that. */
		note("malformed job line");
		agent_exit(AGENT_EXIT_USAGE);
	}
	start_job(sv, nonce, hn, nonce + hn + 1);
}

static void feed_idle(struct serve *sv, const char *b, size_t k)
{
	while (k && !sv->job) {
		const char *nl = memchr(b, '\n', k);
		size_t take = nl ? (size_t)(nl - b) : k;
		if (!sv->too_long) {
			if (sv->line.len + take > SERVE_LINE_MAX) {
				note("a stdin line longer than %d bytes: ignored", SERVE_LINE_MAX);
				sv->too_long = 1;
				strbuf_reset(&sv->line);
			} else {
				strbuf_add(&sv->line, b, take);
			}
		}
		if (!nl)
			return;
		b += take + 1;
		k -= take + 1;
		if (!sv->too_long)
			idle_line(sv, sv->line.buf, sv->line.len);
		sv->too_long = 0;
		strbuf_reset(&sv->line);
		if (sv->job && k) /* the rest is the new job's */
			bq_add(&sv->relay, b, k);
	}
}

/* The job's shell was reaped: the markers, on each stream after all the job
 * wrote there. */
static void end_job(struct serve *sv, int status)
{
	char out[200], err[120];
	int n = WIFSIGNALED(status)
			? snprintf(out, sizeof out,
				   "%s" AGENT_SERVE_DONE " {\"" AGENT_SERVE_SIGNAL "\":%d}\n",
				   sv->frame, WTERMSIG(status))
			: snprintf(out, sizeof out,
				   "%s" AGENT_SERVE_DONE " {\"" AGENT_SERVE_EXIT "\":%d}\n",
				   sv->frame, WEXITSTATUS(status));
	int m = snprintf(err, sizeof err, "%s" AGENT_SERVE_DONE "\n", sv->frame);
	if (sv->job_in >= 0)
		close(sv->job_in);
	sv->job_in = -1;
	sv->job = 0;
	bq_release(&sv->relay);
	memset(sv->frame, 0, sizeof sv->frame);
	if (put_all(2, err, (size_t)m) < 0 || put_all(1, out, (size_t)n) < 0)
		exit(AGENT_EXIT_CLIENT_GONE); /* nobody reads: nothing more to say */
	sv->last_ms = bg_now_ms();
}

static void pass_signal(struct serve *sv, int sig)
{
	if (sv->job > 0)
		kill(-sv->job, sig);
}

int cmd_serve(int argc, char **argv)
{
	static struct serve sv;
	sv.idle_ms = SERVE_IDLE_MS;
	sv.job_in = -1;
	for (int i = 0; i < argc; i++) {
		const char *v;
		if ((v = opt_value(argc, argv, &i, AGENT_OPT_IDLE))) {
			long long ms = parse_secs(v);
			if (ms < 0)
				usage_fail("bad --idle '%s'", v);
			sv.idle_ms = ms;
		} else {
			usage_fail("serve: unknown option '%s'", argv[i]);
		}
	}
	sv.sfd = agent_signalfd();
	if (sv.sfd < 0) {
		note("signalfd: %s", strerror(errno));
		agent_exit(AGENT_EXIT_SYSERR);
	}
	/* the jobs' nonces pass through this process */
	guard_memory();
	int stop_sig = 0;
	sv.last_ms = bg_now_ms();
	for (;;) {
		if (!sv.job && (sv.stdin_eof || stop_sig))
			break;
		struct pollfd pf[3];
		int n = 0, at_in = -1, at_job = -1;
		pf[n++] = (struct pollfd){.fd = sv.sfd, .events = POLLIN};
		if (!sv.stdin_eof && bq_used(&sv.relay) < SERVE_STDIN_MAX) {
			at_in = n;
			pf[n++] = (struct pollfd){.fd = 0, .events = POLLIN};
		}
		if (sv.job_in >= 0 && bq_used(&sv.relay)) {
			at_job = n;
			pf[n++] = (struct pollfd){.fd = sv.job_in, .events = POLLOUT};
		}
		int timeout = -1;
		if (!sv.job && sv.idle_ms > 0) {
			long long left = sv.last_ms + sv.idle_ms - bg_now_ms();
			if (left <= 0) {
				note("idle for %lld s: leaving", sv.idle_ms / 1000);
				break;
			}
			timeout = left > 60000 ? 60000 : (int)left;
		}
		int r = poll(pf, (nfds_t)n, timeout);
		if (r < 0 && errno != EINTR) {
			note("poll: %s", strerror(errno));
			agent_exit(AGENT_EXIT_SYSERR);
		}
		if (r <= 0)
			continue;
		if (pf[0].revents) {
			struct signalfd_siginfo si;
			while (read(sv.sfd, &si, sizeof si) == (ssize_t)sizeof si) {
				if (si.ssi_signo != SIGCHLD) {
					stop_sig = (int)si.ssi_signo;
					pass_signal(&sv, stop_sig);
				}
			}
			int st;
			pid_t w;
			while ((w = waitpid(-1, &st, WNOHANG)) > 0)
				if (w == sv.job)
					end_job(&sv, st);
		}
		if (at_job >= 0 && (pf[at_job].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t w = write(sv.job_in, bq_data(&sv.relay), bq_used(&sv.relay));
			if (w > 0)
				bq_consume(&sv.relay, (size_t)w);
			else if (w < 0 && errno != EAGAIN && errno != EINTR)
				bq_release(&sv.relay); /* the job closed its stdin */
		}
		if (at_in >= 0 && (pf[at_in].revents & (POLLIN | POLLHUP | POLLERR))) {
			char b[65536];
			ssize_t k = read(0, b, sizeof b);
			if (k < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (k <= 0) {
				sv.stdin_eof = 1;
				/* the client is gone: the job's run stops its gate (EOF) */
				if (sv.job_in >= 0 && !bq_used(&sv.relay)) {
					close(sv.job_in);
					sv.job_in = -1;
				}
				continue;
			}
			if (sv.job)
				bq_add(&sv.relay, b, (size_t)k);
			else
				feed_idle(&sv, b, (size_t)k);
		}
		/* EOF seen and the relay drained: the job's stdin closes too */
		if (sv.stdin_eof && sv.job_in >= 0 && !bq_used(&sv.relay)) {
			close(sv.job_in);
			sv.job_in = -1;
		}
	}
	strbuf_release(&sv.line);
	if (stop_sig == SIGTERM || stop_sig == SIGQUIT)
		return AGENT_EXIT_TERMINATED;
	if (stop_sig == SIGINT)
		return AGENT_EXIT_KILLED;
	if (stop_sig == SIGHUP)
		return AGENT_EXIT_CLIENT_GONE;
	return 0;
}
