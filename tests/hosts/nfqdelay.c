/* nfqdelay: holds every packet of an NFQUEUE queue for a fixed time, then accepts it.
 *
 * The test hosts' kernel has no sch_netem, so a test host namespace gets its added delay
 * from two iptables rules (raw PREROUTING -i eth0 and raw OUTPUT -o eth0, target NFQUEUE)
 * and this program in the same namespace: each packet, either direction, waits DELAY ms.
 * Verdicts are issued in arrival order (packet ids grow), as one batch verdict per wake-up,
 * so order is preserved; only the metadata is copied to user space.
 *
 *   nfqdelay -q QUEUE -d DELAY_MS
 *
 * Prints "ready" on stderr once the queue is bound. On SIGTERM/SIGINT it accepts what it
 * holds and exits; the rules use --queue-bypass, so traffic then flows undelayed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
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

#ifndef NETLINK_NO_ENOBUFS
#define NETLINK_NO_ENOBUFS 5
#endif
#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

#define RING (1u << 18)

struct held {
	uint32_t id;
	int64_t due_ns;
};

static struct held ring[RING];
static uint32_t head, tail; /* ring[head..tail) are held, in arrival (id) order */
static int64_t delay_ns;
static struct nfq_q_handle *qh;

/* Accepts every held packet up to and including ring[upto - 1]. */
static void release_to(uint32_t upto)
{
	if (upto == head)
		return;
	nfq_set_verdict_batch(qh, ring[(upto - 1) % RING].id, NF_ACCEPT);
	head = upto;
}

static int on_packet(struct nfq_q_handle *q, struct nfgenmsg *msg, struct nfq_data *nfa, void *data)
{
	(void)q;
	(void)msg;
	(void)data;
	struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
	if (!ph)
		return 0;
	if (tail - head == RING) /* full: let the oldest go early, order kept */
		release_to(head + 1);
	ring[tail % RING].id = ntohl(ph->packet_id);
	ring[tail % RING].due_ns = now_ns() + delay_ns;
	tail++;
	return 0;
}

int main(int argc, char **argv)
{
	int queue = 0, opt;
	long delay_ms = -1;
	while ((opt = getopt(argc, argv, "q:d:")) != -1) {
		if (opt == 'q')
			queue = atoi(optarg);
		else if (opt == 'd')
			delay_ms = atol(optarg);
		else
			goto usage;
	}
	if (delay_ms < 0 || optind != argc)
		goto usage;
	delay_ns = (int64_t)delay_ms * 1000000;

	struct nfq_handle *h = nfq_open();
	if (!h) {
		perror("nfqdelay: nfq_open");
		return 1;
	}
	qh = nfq_create_queue(h, (uint16_t)queue, on_packet, NULL);
	if (!qh) {
		fprintf(stderr, "nfqdelay: cannot bind queue %d: %s\n", queue, strerror(errno));
		return 1;
	}
	if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0) {
		perror("nfqdelay: nfq_set_mode");
		return 1;
	}
	nfq_set_queue_maxlen(qh, 65536);
	nfq_set_queue_flags(qh, NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO,
			    NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO);
	nfnl_rcvbufsiz(nfq_nfnlh(h), 16u << 20);
	int fd = nfq_fd(h);
	int one = 1;
	/* A lost notification leaves its packet queued; the next batch verdict covers it. */
	setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof one);

	install_stop_signals();
	fprintf(stderr, "ready queue %d delay %ld ms\n", queue, delay_ms);

	static char buf[65536] __attribute__((aligned));
	while (!stop) {
		int64_t now = now_ns();
		uint32_t upto = head;
		while (upto != tail && ring[upto % RING].due_ns <= now)
			upto++;
		release_to(upto);

		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		struct timespec ts, *tsp = NULL;
		if (head != tail) {
			int64_t wait = ring[head % RING].due_ns - now;
			ts.tv_sec = (time_t)(wait / 1000000000);
			ts.tv_nsec = (long)(wait % 1000000000);
			tsp = &ts;
		}
		int r = ppoll(&pfd, 1, tsp, NULL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			perror("nfqdelay: ppoll");
			break;
		}
		if (r == 0)
			continue;
		for (;;) {
			ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
			if (n < 0) {
				if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
				    errno == ENOBUFS)
					break;
				perror("nfqdelay: recv");
				stop = 1;
				break;
			}
			nfq_handle_packet(h, buf, (int)n);
		}
	}
	release_to(tail);
	nfq_destroy_queue(qh);
	nfq_close(h);
	return 0;
usage:
	fprintf(stderr, "usage: nfqdelay -q QUEUE -d DELAY_MS\n");
	return 2;
}
