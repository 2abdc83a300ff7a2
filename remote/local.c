/* The local transport: the same interface over fork/exec with pipes, so the
 * built-in `local` box behaves like any other. Commands run in /bin/sh -c in
 * their own session, so a kill reaches their whole process group; killable
 * ones also carry BOXGATE_EXEC_ID in their environment, so a kill finds what
 * they started outside the group (setsid, double forks), as on ssh boxes. */
#include "remote/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/random.h"
#include "base/timer.h"
#include "base/xmalloc.h"

extern char **environ;

#define EXEC_ID_VAR "BOXGATE_EXEC_ID="

/* The environment for a killable command: ours, with BOXGATE_EXEC_ID set.
 * Built before fork: a child of a threaded process may not allocate. */
static char **exec_env(const char *entry)
{
	size_t n = 0;
	while (environ && environ[n])
		n++;
	char **env = xcalloc(n + 2, sizeof(*env));
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], EXEC_ID_VAR, strlen(EXEC_ID_VAR)) != 0)
			env[k++] = environ[i];
	env[k++] = (char *)entry;
	env[k] = NULL;
	return env;
}

/* Whether /proc/PID/environ holds `entry` as one whole variable. */
static bool environ_has(const char *pid, const char *entry)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%s/environ", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	strbuf sb = STRBUF_INIT;
	char buf[16384];
	ssize_t r;
	while (sb.len < (4u << 20) && (r = read(fd, buf, sizeof(buf))) > 0)
		strbuf_add(&sb, buf, (size_t)r);
	close(fd);
	bool found = false;
	size_t el = strlen(entry) + 1; /* with its NUL */
	for (size_t off = 0; off < sb.len && !found;) {
		const char *v = sb.buf + off;
		size_t vl = strnlen(v, sb.len - off);
		found = vl + 1 == el && memcmp(v, entry, vl) == 0;
		off += vl + 1;
	}
	strbuf_release(&sb);
	return found;
}

/* Sends `sig` (0: none) to every process of ours carrying `entry`; returns
 * how many there are. */
static int sweep(const char *entry, int sig)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	int n = 0;
	uid_t me = geteuid();
	pid_t self = getpid();
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (end == de->d_name || *end || pid <= 1 || pid == self)
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, 0) < 0 || st.st_uid != me)
			continue;
		if (!environ_has(de->d_name, entry))
			continue;
		n++;
		if (sig)
			kill((pid_t)pid, sig);
	}
	closedir(d);
	return n;
}

static int local_exec_start(remote_conn *c, const char *cmdline, remote_exec *e, bg_err *err)
{
	int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1};
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(er, O_CLOEXEC) < 0) {
		int saved = errno;
		for (int i = 0; i < 2; i++) {
			if (in[i] >= 0)
				close(in[i]);
			if (out[i] >= 0)
				close(out[i]);
			if (er[i] >= 0)
				close(er[i]);
		}
		return bg_fail(err, BG_EIO, "%s: pipe: %s", c->target->name, strerror(saved));
	}
	char *entry = NULL;
	char **env = environ;
	if (e->opts.killable) {
		bg_random_hex(e->exec_id, 16);
		entry = xasprintf(EXEC_ID_VAR "%s", e->exec_id);
		env = exec_env(entry);
	}
	pid_t pid = fork();
	if (pid < 0) {
		int saved = errno;
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		close(er[0]);
		close(er[1]);
		if (env != environ)
			free(env);
		free(entry);
		return bg_fail(err, BG_EIO, "%s: fork: %s", c->target->name, strerror(saved));
	}
	if (pid == 0) {
		setsid();
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(er[1], 2);
		signal(SIGPIPE, SIG_DFL);
		char *const argv[] = {"sh", "-c", (char *)cmdline, NULL};
		execve("/bin/sh", argv, env);
		_exit(127);
	}
	if (env != environ)
		free(env);
	free(entry);
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
	if (e->fd_in < 0) {
		/* The command closed its stdin: what is queued can never go. */
		strbuf_reset(&e->stdin_q);
		e->stdin_off = 0;
		return;
	}
	while (e->fd_in >= 0 && e->stdin_off < e->stdin_q.len) {
		ssize_t n = write(e->fd_in, e->stdin_q.buf + e->stdin_off,
				  e->stdin_q.len - e->stdin_off);
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
		if (e->return_on_drain && e->stdin_q.len == 0)
			return 0;
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
		struct pollfd p[4];
		int n = 0;
		if (e->fd_out >= 0)
			p[n++] = (struct pollfd){.fd = e->fd_out, .events = POLLIN};
		if (e->fd_err >= 0)
			p[n++] = (struct pollfd){.fd = e->fd_err, .events = POLLIN};
		if (e->fd_in >= 0 && e->stdin_q.len > e->stdin_off)
			p[n++] = (struct pollfd){.fd = e->fd_in, .events = POLLOUT};
		if (e->wake_fd >= 0)
			p[n++] = (struct pollfd){.fd = e->wake_fd, .events = POLLIN};
		int r = poll(p, (nfds_t)n, bg_poll_timeout(deadline));
		if (r < 0 && errno != EINTR)
			return bg_fail(err, BG_EIO, "local: poll: %s", strerror(errno));
		if (r == 0)
			return 0;
		for (int i = 0; i < n; i++) {
			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (p[i].fd == e->wake_fd)
				return 0; /* the caller has more input */
			if (p[i].fd == e->fd_out)
				read_stream(e, &e->fd_out, REMOTE_STDOUT);
			else if (p[i].fd == e->fd_err)
				read_stream(e, &e->fd_err, REMOTE_STDERR);
		}
		/* Output that keeps coming does not move the deadline (ssh_exec.c). */
		if (bg_now_ms() >= deadline)
			return 0;
	}
}

/* Signals the process group and every process of ours that carries the
 * command's BOXGATE_EXEC_ID; for TERM, waits up to 2 s for them to go and
 * sends KILL to what is left (a process that ignores TERM and let go of the
 * output would otherwise outlive the kill). */
static void kill_all(remote_exec *e, int sig)
{
	char entry[sizeof(EXEC_ID_VAR) + sizeof(e->exec_id)];
	snprintf(entry, sizeof(entry), EXEC_ID_VAR "%s", e->exec_id);
	if (e->pid > 0)
		kill(-e->pid, sig);
	if (!e->exec_id[0])
		return;
	sweep(entry, sig);
	if (sig == SIGTERM) {
		for (int i = 0; i < 20 && sweep(entry, 0) > 0; i++) {
			struct pollfd none;
			poll(&none, 0, 100);
		}
		sig = SIGKILL;
		if (e->pid > 0)
			kill(-e->pid, sig);
	}
	for (int i = 0; i < 20 && sweep(entry, sig) > 0; i++) {
		struct pollfd none;
		poll(&none, 0, 100);
	}
}

static int local_exec_signal(remote_exec *e, int sig, bg_err *err)
{
	(void)err;
	kill_all(e, sig);
	return 0;
}

static void local_exec_free(remote_exec *e)
{
	close_fd(&e->fd_in);
	close_fd(&e->fd_out);
	close_fd(&e->fd_err);
	if (e->pid > 0) {
		/* Never leave a child behind. */
		kill_all(e, SIGKILL);
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
