/* The local transport: the same interface over fork/exec with pipes, so the
 * built-in `local` box behaves like any other. Commands run in /bin/sh -c in
 * their own session, so a kill reaches their whole process group. */
#include "remote/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/timer.h"

static int local_exec_start(remote_conn *c, const char *cmdline, remote_exec *e, bg_err *err)
{
	int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1};
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(er, O_CLOEXEC) < 0) {
		int saved = errno;
		for (int i = 0; i < 2; i++) {
			if (in[i] >= 0) close(in[i]);
			if (out[i] >= 0) close(out[i]);
			if (er[i] >= 0) close(er[i]);
		}
		return bg_fail(err, BG_EIO, "%s: pipe: %s", c->box->name, strerror(saved));
	}
	pid_t pid = fork();
	if (pid < 0) {
		int saved = errno;
		close(in[0]); close(in[1]); close(out[0]); close(out[1]); close(er[0]); close(er[1]);
		return bg_fail(err, BG_EIO, "%s: fork: %s", c->box->name, strerror(saved));
	}
	if (pid == 0) {
		setsid();
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(er[1], 2);
		signal(SIGPIPE, SIG_DFL);
		execl("/bin/sh", "sh", "-c", cmdline, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	close(er[1]);
	e->pid = pid;
	e->remote_pid = pid;
	e->fd_in = in[1];
	e->fd_out = out[0];
	e->fd_err = er[0];
	fcntl(e->fd_in, F_SETFL, O_NONBLOCK);
	return 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void read_stream(remote_exec *e, int *fd, remote_stream s)
{
	char buf[65536];
	ssize_t n = read(*fd, buf, sizeof(buf));
	if (n > 0)
		remote_exec_feed(e, s, buf, (size_t)n);
	else if (n == 0 || (errno != EINTR && errno != EAGAIN))
		close_fd(fd);
}

static void write_stdin(remote_exec *e)
{
	while (e->fd_in >= 0 && e->stdin_off < e->stdin_q.len) {
		ssize_t n = write(e->fd_in, e->stdin_q.buf + e->stdin_off, e->stdin_q.len - e->stdin_off);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			close_fd(&e->fd_in); /* the command stopped reading */
			return;
		}
		e->stdin_off += (size_t)n;
	}
	if (e->stdin_off == e->stdin_q.len) {
		strbuf_reset(&e->stdin_q);
		e->stdin_off = 0;
		if (e->stdin_close)
			close_fd(&e->fd_in);
	}
}

static void reap(remote_exec *e, int status)
{
	remote_exec_finish_streams(e);
	if (WIFSIGNALED(status)) {
		e->st.how = REMOTE_SIGNALED;
		e->st.code = 128 + WTERMSIG(status);
		snprintf(e->st.signal, sizeof(e->st.signal), "%s", sigabbrev_np(WTERMSIG(status)));
	} else {
		e->st.how = REMOTE_EXITED;
		e->st.code = WEXITSTATUS(status);
	}
	e->pid = 0;
	e->done = true;
}

static int local_exec_wait(remote_exec *e, int64_t deadline, bg_err *err)
{
	(void)err;
	for (;;) {
		write_stdin(e);
		if (e->fd_out < 0 && e->fd_err < 0) {
			int status;
			/* Output closed: the command is ending; wait for it within the deadline. */
			pid_t r = waitpid(e->pid, &status, WNOHANG);
			if (r == e->pid) {
				reap(e, status);
				return 0;
			}
			if (bg_now_ms() >= deadline)
				return 0;
			struct pollfd none;
			poll(&none, 0, 10);
			continue;
		}
		struct pollfd p[3];
		int n = 0;
		if (e->fd_out >= 0)
			p[n++] = (struct pollfd){.fd = e->fd_out, .events = POLLIN};
		if (e->fd_err >= 0)
			p[n++] = (struct pollfd){.fd = e->fd_err, .events = POLLIN};
		if (e->fd_in >= 0 && e->stdin_q.len > e->stdin_off)
			p[n++] = (struct pollfd){.fd = e->fd_in, .events = POLLOUT};
		int r = poll(p, (nfds_t)n, bg_poll_timeout(deadline));
		if (r < 0 && errno != EINTR)
			return bg_fail(err, BG_EIO, "local: poll: %s", strerror(errno));
		if (r == 0)
			return 0;
		for (int i = 0; i < n; i++) {
			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (p[i].fd == e->fd_out)
				read_stream(e, &e->fd_out, REMOTE_STDOUT);
			else if (p[i].fd == e->fd_err)
				read_stream(e, &e->fd_err, REMOTE_STDERR);
		}
	}
}

static int local_exec_signal(remote_exec *e, int sig, bg_err *err)
{
	(void)err;
	if (e->pid > 0)
		kill(-e->pid, sig);
	return 0;
}

static void local_exec_free(remote_exec *e)
{
	close_fd(&e->fd_in);
	close_fd(&e->fd_out);
	close_fd(&e->fd_err);
	if (e->pid > 0) {
		/* Never leave a child behind. */
		kill(-e->pid, SIGKILL);
		waitpid(e->pid, NULL, 0);
		e->pid = 0;
	}
}

static void local_close(remote_conn *c)
{
	(void)c;
}

const struct remote_ops remote_local_ops = {
	.exec_start = local_exec_start,
	.exec_wait = local_exec_wait,
	.exec_signal = local_exec_signal,
	.exec_free = local_exec_free,
	.close = local_close,
};
