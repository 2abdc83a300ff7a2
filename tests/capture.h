/* What the tests read back whole: a file, a pipe, the output of a shell
 * run on a script. Returned bytes are NUL-terminated and owned; they may
 * hold NULs, so their count is given too. */
#ifndef BG_TESTS_CAPTURE_H
#define BG_TESTS_CAPTURE_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/strbuf.h"

static inline char *capture_stream(FILE *f, size_t *len)
{
	strbuf sb = STRBUF_INIT;
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		strbuf_add(&sb, buf, n);
	*len = sb.len;
	return strbuf_detach(&sb);
}

static inline char *capture_fd(int fd, size_t *len)
{
	strbuf sb = STRBUF_INIT;
	char buf[65536];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		strbuf_add(&sb, buf, (size_t)n);
	}
	*len = sb.len;
	return strbuf_detach(&sb);
}

/* Runs `shell -c script` with stdin and stderr on /dev/null, in `dir` (NULL:
 * here) and under `envp` (NULL: this environment); returns its stdout and
 * its wait status in *status, or NULL when it could not be started. */
static inline char *capture_shell(const char *shell, const char *script, const char *dir,
				  char *const *envp, size_t *len, int *status)
{
	int fds[2];
	if (pipe(fds) != 0)
		return NULL;
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return NULL;
	}
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		int devnull = open("/dev/null", O_RDWR);
		dup2(devnull, 0);
		dup2(devnull, 2);
		if (dir && chdir(dir) != 0)
			_exit(126);
		char *argv[] = {(char *)shell, "-c", (char *)script, NULL};
		if (envp)
			execve(shell, argv, envp);
		else
			execv(shell, argv);
		_exit(127);
	}
	close(fds[1]);
	char *out = capture_fd(fds[0], len);
	close(fds[0]);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	return out;
}

#endif
