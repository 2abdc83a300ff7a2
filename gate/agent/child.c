/* The gate process: started in its own session, its output forwarded. */
#include "gate/agent/child.h"
#include "gate/agent/slots.h"

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
		_exit(AGENT_EXIT_NOEXEC);
	int null = open("/dev/null", O_RDONLY);
	if (null < 0 || dup2(null, 0) < 0 || dup2(outw, 1) < 0 || dup2(errw, 2) < 0)
		_exit(AGENT_EXIT_NOEXEC);
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
		_exit(AGENT_EXIT_NOEXEC);
	}
	execvp(r->cmd[0], r->cmd);
	dprintf(2, "boxgate-agent: cannot run %s: %s\n", r->cmd[0], strerror(errno));
	_exit(AGENT_EXIT_NOEXEC);
}

void start_gate(struct run *r)
{
	int po[2], pe[2];
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
		msg("pipe: %s", strerror(errno));
		lock_release(r);
		agent_exit(AGENT_EXIT_SYSERR);
	}
	out_flush(bg_now_ms() +
		  1000); /* the agent's notes first, and no queued bytes in the child */
	pid_t p = fork();
	if (p < 0) {
		msg("fork: %s", strerror(errno));
		lock_release(r);
		agent_exit(AGENT_EXIT_SYSERR);
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
	r->start_ms = bg_now_ms();
	r->ph = PH_RUN;
}

void in_flush_part(struct instream *s)
{
	out_add(s->to, bq_data(&s->part), bq_used(&s->part));
	bq_consume(&s->part, bq_used(&s->part));
}

void read_gate(struct instream *s)
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
	s->last_ms = bg_now_ms();
	bq_add(&s->part, b, (size_t)k);
	const char *p = bq_data(&s->part);
	size_t n = bq_used(&s->part);
	const char *nl = memrchr(p, '\n', n);
	if (nl) {
		size_t whole = (size_t)(nl - p) + 1;
		out_add(s->to, p, whole);
		bq_consume(&s->part, whole);
	}
	if (bq_used(&s->part) >= LINE_KEEP_MAX)
		in_flush_part(s);
}
