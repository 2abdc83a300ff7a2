/*
 * hang: gates that never finish, for the agent's watchdog tests.
 *
 *   hang PIDFILE MODE
 *
 * Every process it creates appends its pid to PIDFILE once it is set up (after setsid,
 * after ignoring SIGTERM), so a test can wait until all of them exist and check through
 * /proc that none survives. Each keeps PIDFILE in its command line (forks do not exec),
 * which lets the test tell its processes from a reused pid.
 *
 * Modes
 *   sleep        pause() forever
 *   busy         spin on the CPU
 *   ignore-term  a child that ignores SIGTERM; the parent waits for it
 *   setsid       a grandchild that calls setsid() and ignores SIGTERM
 *   double-fork  fork, setsid, fork, the middle one exits: the daemon is an orphan
 *   respawn      on SIGTERM, fork a new setsid child before dying (escapes at kill time)
 *   stopped      a child that stops itself with SIGSTOP
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *pidfile;

static void note(void)
{
	FILE *f = fopen(pidfile, "a");
	if (!f)
		_exit(99);
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
}

static void forever(void)
{
	for (;;)
		pause();
}

static void on_term(int sig)
{
	(void)sig;
	pid_t p = fork();
	if (p == 0) {
		setsid();
		signal(SIGTERM, SIG_IGN);
		note();
		forever();
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: hang PIDFILE MODE\n");
		return 2;
	}
	pidfile = argv[1];
	const char *mode = argv[2];
	if (!strcmp(mode, "sleep")) {
		note();
		forever();
	} else if (!strcmp(mode, "busy")) {
		note();
		for (volatile unsigned long i = 0;; i++) {
		}
	} else if (!strcmp(mode, "ignore-term")) {
		note();
		if (fork() == 0) {
			signal(SIGTERM, SIG_IGN);
			note();
			forever();
		}
		wait(NULL);
		forever();
	} else if (!strcmp(mode, "setsid")) {
		note();
		if (fork() == 0) {
			note();
			if (fork() == 0) {
				setsid();
				signal(SIGTERM, SIG_IGN);
				note();
				forever();
			}
			forever();
		}
		forever();
	} else if (!strcmp(mode, "double-fork")) {
		note();
		if (fork() == 0) {
			setsid();
			pid_t middle = getpid();
			if (fork() == 0) {
				signal(SIGTERM, SIG_IGN);
				while (getppid() == middle) /* until the middle one has exited */
					usleep(10000);
				note();
				forever();
			}
			_exit(0);
		}
		forever();
	} else if (!strcmp(mode, "respawn")) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_term;
		sigaction(SIGTERM, &sa, NULL);
		note();
		forever();
	} else if (!strcmp(mode, "stopped")) {
		note();
		if (fork() == 0) {
			note();
			raise(SIGSTOP);
			forever();
		}
		forever();
	}
	fprintf(stderr, "hang: unknown mode %s\n", mode);
	return 2;
}
