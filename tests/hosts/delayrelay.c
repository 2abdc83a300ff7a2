/* delayrelay: a TCP relay that holds every chunk DELAY ms in each direction.
 *
 * Used in front of a test host's sshd where packets cannot be delayed in the kernel (no
 * sch_netem, and no NFQUEUE without root): each chunk read from one side is written to
 * the other DELAY ms later, in order, so the round trip at the application level gains
 * 2 x DELAY. The TCP handshake to the relay itself is not delayed. One poll loop, all
 * sockets TCP_NODELAY; a direction stops reading while more than 4 MiB wait in it.
 *
 *   delayrelay -l LISTEN_ADDR:PORT -t TARGET_ADDR:PORT -d DELAY_MS
 *
 * Prints "ready" on stderr once it listens; exits on SIGTERM/SIGINT.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "delay_common.h"

#define MAX_CONNS  512
#define CHUNK      65536
#define MAX_QUEUED (4u << 20)

struct chunk {
	struct chunk *next;
	int64_t due_ns;
	size_t len, off; /* len 0: end of stream, shut the write side down */
	char data[];
};

struct dir {
	struct chunk *head, *tail;
	size_t queued;
	int read_eof; /* the source side reached EOF */
	int done;     /* EOF passed on to the destination */
};

struct conn {
	int fd[2]; /* 0: client, 1: target; direction d reads fd[d], writes fd[!d] */
	struct dir d[2];
};

static struct conn *conns[MAX_CONNS];
static int64_t delay_ns;

static int parse_addr(const char *s, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	if (!colon || (size_t)(colon - s) >= sizeof host)
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	memset(sa, 0, sizeof *sa);
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)atoi(colon + 1));
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

static void set_opts(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static void push(struct dir *d, const char *data, size_t len)
{
	struct chunk *c = malloc(sizeof *c + len);
	if (!c)
		abort();
	c->next = NULL;
	c->due_ns = now_ns() + delay_ns;
	c->len = len;
	c->off = 0;
	if (len)
		memcpy(c->data, data, len);
	if (d->tail)
		d->tail->next = c;
	else
		d->head = c;
	d->tail = c;
	d->queued += len;
}

static void conn_free(int i)
{
	struct conn *c = conns[i];
	for (int k = 0; k < 2; k++) {
		close(c->fd[k]);
		struct chunk *ch = c->d[k].head;
		while (ch) {
			struct chunk *n = ch->next;
			free(ch);
			ch = n;
		}
	}
	free(c);
	conns[i] = NULL;
}

/* Writes what is due in direction k; returns -1 when the connection is broken. */
static int flush_dir(struct conn *c, int k, int64_t now)
{
	struct dir *d = &c->d[k];
	int out = c->fd[!k];
	while (d->head && d->head->due_ns <= now) {
		struct chunk *ch = d->head;
		if (ch->len == 0) {
			shutdown(out, SHUT_WR);
			d->done = 1;
		} else {
			ssize_t n = write(out, ch->data + ch->off, ch->len - ch->off);
			if (n < 0) {
				if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
					return 0;
				return -1;
			}
			ch->off += (size_t)n;
			d->queued -= (size_t)n;
			if (ch->off < ch->len)
				return 0;
		}
		d->head = ch->next;
		if (!d->head)
			d->tail = NULL;
		free(ch);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in lsa, tsa;
	int have_l = 0, have_t = 0, opt;
	long delay_ms = -1;
	while ((opt = getopt(argc, argv, "l:t:d:")) != -1) {
		if (opt == 'l')
			have_l = parse_addr(optarg, &lsa) == 0;
		else if (opt == 't')
			have_t = parse_addr(optarg, &tsa) == 0;
		else if (opt == 'd')
			delay_ms = atol(optarg);
		else
			goto usage;
	}
	if (!have_l || !have_t || delay_ms < 0 || optind != argc)
		goto usage;
	delay_ns = (int64_t)delay_ms * 1000000;

	int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(lfd, (struct sockaddr *)&lsa, sizeof lsa) < 0 || listen(lfd, 256) < 0) {
		perror("delayrelay: listen");
		return 1;
	}
	fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) | O_NONBLOCK);
	install_stop_signals();
	fprintf(stderr, "ready %s delay %ld ms\n", argv[0], delay_ms);

	static char buf[CHUNK];
	static struct pollfd pfd[1 + 2 * MAX_CONNS];
	static int owner[1 + 2 * MAX_CONNS];
	while (!stop) {
		int64_t now = now_ns(), next = -1;
		int np = 0;
		pfd[np++] = (struct pollfd){.fd = lfd, .events = POLLIN};
		for (int i = 0; i < MAX_CONNS; i++) {
			struct conn *c = conns[i];
			if (!c)
				continue;
			if (flush_dir(c, 0, now) < 0 || flush_dir(c, 1, now) < 0 ||
			    (c->d[0].done && c->d[1].done)) {
				conn_free(i);
				continue;
			}
			for (int k = 0; k < 2; k++) {
				/* fd[k] is read for direction k and written for direction !k. */
				short ev = 0;
				if (!c->d[k].read_eof && c->d[k].queued < MAX_QUEUED)
					ev |= POLLIN;
				struct chunk *h = c->d[!k].head;
				if (h && h->due_ns <= now)
					ev |= POLLOUT;
				else if (h && (next < 0 || h->due_ns < next))
					next = h->due_ns;
				pfd[np] = (struct pollfd){.fd = c->fd[k], .events = ev};
				owner[np++] = i * 2 + k;
			}
		}
		struct timespec ts, *tsp = NULL;
		if (next >= 0) {
			int64_t wait = next - now;
			if (wait < 0)
				wait = 0;
			ts.tv_sec = (time_t)(wait / 1000000000);
			ts.tv_nsec = (long)(wait % 1000000000);
			tsp = &ts;
		}
		int r = ppoll(pfd, (nfds_t)np, tsp, NULL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			perror("delayrelay: ppoll");
			return 1;
		}
		if (pfd[0].revents & POLLIN) {
			int cfd;
			while ((cfd = accept(lfd, NULL, NULL)) >= 0) {
				int slot = -1;
				for (int i = 0; i < MAX_CONNS && slot < 0; i++)
					if (!conns[i])
						slot = i;
				int tfd = socket(AF_INET, SOCK_STREAM, 0);
				/* The target is on this machine: a blocking connect returns at
				 * once. */
				if (slot < 0 || tfd < 0 ||
				    connect(tfd, (struct sockaddr *)&tsa, sizeof tsa) < 0) {
					close(cfd);
					if (tfd >= 0)
						close(tfd);
					continue;
				}
				struct conn *c = calloc(1, sizeof *c);
				if (!c)
					abort();
				c->fd[0] = cfd;
				c->fd[1] = tfd;
				set_opts(cfd);
				set_opts(tfd);
				conns[slot] = c;
			}
		}
		for (int p = 1; p < np; p++) {
			if (!(pfd[p].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			int i = owner[p] / 2, k = owner[p] % 2;
			struct conn *c = conns[i];
			if (!c || c->d[k].read_eof || c->d[k].queued >= MAX_QUEUED)
				continue;
			ssize_t n = read(c->fd[k], buf, sizeof buf);
			if (n > 0) {
				push(&c->d[k], buf, (size_t)n);
			} else if (n == 0 ||
				   (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
				c->d[k].read_eof = 1;
				push(&c->d[k], NULL, 0);
			}
		}
	}
	for (int i = 0; i < MAX_CONNS; i++)
		if (conns[i])
			conn_free(i);
	close(lfd);
	return 0;
usage:
	fprintf(stderr, "usage: delayrelay -l ADDR:PORT -t ADDR:PORT -d DELAY_MS\n");
	return 2;
}
