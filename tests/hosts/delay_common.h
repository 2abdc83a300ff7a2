/* What the two delayers (delayrelay.c, nfqdelay.c) share: a monotonic clock in ns and a
 * stop flag set by SIGTERM/SIGINT, so each ends its loop and lets go of what it holds. */
#ifndef BG_HOSTS_DELAY_COMMON_H
#define BG_HOSTS_DELAY_COMMON_H

#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stop;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* SIGTERM and SIGINT set `stop` (no SA_RESTART: poll returns EINTR); SIGPIPE is ignored,
 * a closed peer shows as EPIPE. */
static void install_stop_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

#endif
