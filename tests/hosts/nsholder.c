/* nsholder: keeps a test host's mount namespace (and, given one, joins its network
 * namespace) so that its sshd and `hosts exec` can enter both with nsenter -t PID.
 *
 *   nsholder [-n NETNS_FILE] -r ROOT_DIR -p PID_FILE
 *
 * Forks a holder that joins NETNS_FILE, unshares its mount namespace, makes every mount
 * private (nothing it mounts leaks out, nothing from outside changes it) and bind-mounts
 * ROOT_DIR on /root: a clean, private home with none of the machine's rc files. Once that
 * is done the holder's pid and its namespaces ("PID mnt:[..] net:[..]") are written to
 * PID_FILE and the parent exits 0, so the caller never has to poll. The holder then sleeps in its
 * own session until SIGTERM/SIGKILL.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

static void fail(int fd, const char *what)
{
	char msg[512];
	int n = snprintf(msg, sizeof msg, "nsholder: %s: %s\n", what, strerror(errno));
	if (write(fd, msg, (size_t)n) < 0)
		_exit(1);
	_exit(1);
}

int main(int argc, char **argv)
{
	const char *netns = NULL, *root = NULL, *pidfile = NULL;
	int opt;
	while ((opt = getopt(argc, argv, "n:r:p:")) != -1) {
		if (opt == 'n')
			netns = optarg;
		else if (opt == 'r')
			root = optarg;
		else if (opt == 'p')
			pidfile = optarg;
		else
			goto usage;
	}
	if (!root || !pidfile || optind != argc)
		goto usage;

	int pfd[2];
	if (pipe(pfd) < 0) {
		perror("nsholder: pipe");
		return 1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("nsholder: fork");
		return 1;
	}
	if (pid == 0) {
		close(pfd[0]);
		setsid();
		if (netns) {
			int fd = open(netns, O_RDONLY | O_CLOEXEC);
			if (fd < 0 || setns(fd, CLONE_NEWNET) < 0)
				fail(pfd[1], netns);
			close(fd);
		}
		if (unshare(CLONE_NEWNS) < 0)
			fail(pfd[1], "unshare(CLONE_NEWNS)");
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			fail(pfd[1], "make / private");
		if (mount(root, "/root", NULL, MS_BIND, NULL) < 0)
			fail(pfd[1], root);
		if (chdir("/") < 0)
			fail(pfd[1], "chdir /");
		int devnull = open("/dev/null", O_RDWR);
		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 1);
			dup2(devnull, 2);
			if (devnull > 2)
				close(devnull);
		}
		if (write(pfd[1], "", 1) != 1)
			_exit(1);
		close(pfd[1]);
		sigset_t none;
		sigemptyset(&none);
		signal(SIGHUP, SIG_IGN);
		for (;;)
			sigsuspend(&none);
	}
	close(pfd[1]);
	char buf[512];
	ssize_t n = read(pfd[0], buf, sizeof buf - 1);
	if (n != 1 || buf[0] != '\0') {
		if (n > 0) {
			buf[n] = '\0';
			fputs(buf, stderr);
		} else {
			fprintf(stderr, "nsholder: the holder died before it was ready\n");
		}
		waitpid(pid, NULL, 0);
		return 1;
	}
	char mnt[128] = "", net[128] = "", path[64];
	snprintf(path, sizeof path, "/proc/%ld/ns/mnt", (long)pid);
	ssize_t m = readlink(path, mnt, sizeof mnt - 1);
	snprintf(path, sizeof path, "/proc/%ld/ns/net", (long)pid);
	ssize_t k = readlink(path, net, sizeof net - 1);
	if (m <= 0 || k <= 0) {
		perror("nsholder: readlink of the holder's namespaces");
		kill(pid, SIGKILL);
		return 1;
	}
	mnt[m] = '\0';
	net[k] = '\0';
	FILE *f = fopen(pidfile, "w");
	if (!f || fprintf(f, "%ld %s %s\n", (long)pid, mnt, net) < 0 || fclose(f) != 0) {
		perror(pidfile);
		kill(pid, SIGKILL);
		return 1;
	}
	return 0;
usage:
	fprintf(stderr, "usage: nsholder [-n NETNS_FILE] -r ROOT_DIR -p PID_FILE\n");
	return 2;
}
