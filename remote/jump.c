/* ProxyJump: a box's SSH session carried over a direct-tcpip channel of its
 * jump host's session.
 *
 * Boxes behind one jump host share one connection to it (sshd's MaxStartups
 * would drop a burst of separate ones; its MaxSessions does not count
 * direct-tcpip channels). One pump thread per jump connection is the only
 * thread that touches that libssh2 session: it moves bytes between each
 * channel and one end of a socketpair. The box's own session uses the other
 * end as its socket, so its handshake, poll, keepalive and dead-peer code
 * are the same as over TCP. When the jump connection dies every tunnel's
 * socket is closed: each box behind it sees its peer go at once.
 *
 * libssh2 opens one channel at a time per session, and a direct-tcpip open
 * waits a round trip to the jump host plus that host's TCP connect to the
 * box: boxes through one session wait their opens one after the other. So
 * boxes behind one jump host may spread over a few connections to it
 * ("lanes"): a box whose place in the best lane's queue of opens would cost
 * more than a new connection to the jump host (both measured on the first
 * lane) starts a new lane, whose handshake then overlaps the other lanes'
 * opens. At 0 ms an open costs next to nothing and one lane serves all; far
 * away, 8 boxes take a few. The choice need not wait for the first lane to
 * authenticate: once its transport is up (its TCP connect, about one round
 * trip), what a connection and an open cost is estimated from that round
 * trip, and further lanes start then, their handshakes overlapping the
 * first's rather than following it. */
#include "remote/internal.h"
#include "remote/jump_lanes.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "base/timer.h"
#include "base/xmalloc.h"

#define TUN_BUF (64 * 1024)
/* Connections to one jump host at most: sshd's MaxStartups (10 by default)
 * refuses a burst of more unauthenticated ones. */
#define JUMP_LANES_MAX 4

enum tun_state { TUN_OPENING, TUN_OPEN, TUN_CLOSING, TUN_DONE };

struct tunnel {
	struct tunnel *next;
	enum tun_state state; /* under jump_mu */
	int refs;             /* the pump and the opener; under jump_mu */
	char *host;           /* where the channel goes */
	int port;
	int fd; /* the pump's end of the socketpair */
	LIBSSH2_CHANNEL *ch;
	char to_fd[TUN_BUF]; /* channel -> box */
	size_t to_fd_len;
	char to_ch[TUN_BUF]; /* box -> channel */
	size_t to_ch_len;
	bool ch_eof, fd_eof, fd_shut;
	/* The open's outcome, under jump_mu. */
	bool open_done;
	int open_rc;
	char open_err[256];
	bool abandoned; /* the opener gave up waiting */
	/* The jump connection's round trips when the open was done, and those
	 * up to its authentication (BOXGATE_TRACE). */
	unsigned open_round_trips, open_auth_round_trips;
	int64_t open_started_ms; /* when the pump sent the open: 0 before */
};

struct remote_jump {
	struct remote_jump *next; /* the registry */
	char *key;                /* the chain, "user@host:port>..." */
	int refs;
	bool connecting; /* the first user is connecting: others wait */
	bool dead;       /* never handed out again */
	bool stop;
	int dead_code;
	char dead_msg[512];
	remote_conn *conn;
	pthread_t pump;
	bool pump_started;
	int wake[2];
	struct tunnel *tunnels; /* in open order */
	/* Lanes, under jump_mu: boxes that chose this connection and whose channel
	 * is not open yet; when its connect started and what it took; what an
	 * open takes (measured, at most twice the TCP connect). */
	int pending;
	int64_t started_ms, connect_ms, open_ms;
	/* An open is taken to cost at most two round trips (to the jump host,
	 * and its connect to the box, as far again at most): a jump host slow
	 * to answer (CPU, load) is no reason for more connections to it. */
	int64_t open_cap_ms;
	int lane; /* 1 for the first connection to this chain, then 2, ... (BOXGATE_TRACE) */
	/* Connecting, its transport up: the estimated connect (from the round
	 * trip), and open_ms estimated likewise; -1 before. */
	int64_t est_connect_ms;
	/* Connecting: the tunnel of the box that started this lane, first in
	 * its list; its channel's open goes out behind the lane's signed
	 * request (remote_jump_lane_first), and the pump's first open
	 * finishes it. */
	struct tunnel *first;
};

/* The lane this thread is connecting (jump_get), for remote_jump_transport_up:
 * a chain of jumps nests, each level saving the one above. */
static _Thread_local struct remote_jump *lane_connecting;

/* One lock for the registry and every jump's shared state: the pump holds
 * it only to take new tunnels and hand out results. */
static pthread_mutex_t jump_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t jump_cv;
static pthread_once_t jump_once = PTHREAD_ONCE_INIT;
static struct remote_jump *registry;

static void jump_init(void)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&jump_cv, &a);
	pthread_condattr_destroy(&a);
}

static void chain_key(const remote_target *t, strbuf *sb)
{
	if (t->jump) {
		chain_key(t->jump, sb);
		strbuf_addch(sb, '>');
	}
	strbuf_addf(sb, "%s@%s:%d", t->user ? t->user : "root", t->hostname, t->port);
}

/* Under jump_mu: j is no longer handed out (it may not be listed). */
static void registry_remove(struct remote_jump *j)
{
	for (struct remote_jump **p = &registry; *p; p = &(*p)->next)
		if (*p == j) {
			*p = j->next;
			return;
		}
}

static void wake_pump(struct remote_jump *j)
{
	char b = 1;
	if (j->wake[1] >= 0 && write(j->wake[1], &b, 1) < 0 && errno != EAGAIN) {
		/* a full pipe already wakes it */
	}
}

static void tunnel_unref(struct tunnel *t)
{
	if (--t->refs == 0) {
		free(t->host);
		free(t);
	}
}

/* Under jump_mu: the pump is done with t. */
static void tunnel_drop(struct remote_jump *j, struct tunnel *t)
{
	for (struct tunnel **p = &j->tunnels; *p; p = &(*p)->next)
		if (*p == t) {
			*p = t->next;
			break;
		}
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	t->state = TUN_DONE;
	tunnel_unref(t);
}

static void tunnel_drop_locked(struct remote_jump *j, struct tunnel *t)
{
	pthread_mutex_lock(&jump_mu);
	tunnel_drop(j, t);
	pthread_mutex_unlock(&jump_mu);
}

static void open_result(struct remote_jump *j, struct tunnel *t, int rc, const char *msg)
{
	pthread_mutex_lock(&jump_mu);
	j->pending--;
	if (rc == 0 && t->open_started_ms) {
		int64_t took = bg_now_ms() - t->open_started_ms;
		j->open_ms = (3 * j->open_ms + took + 3) / 4;
		if (j->open_ms > j->open_cap_ms)
			j->open_ms = j->open_cap_ms;
	}
	t->open_done = true;
	t->open_rc = rc;
	t->open_round_trips = j->conn->round_trips;
	t->open_auth_round_trips = j->conn->auth_round_trips;
	snprintf(t->open_err, sizeof(t->open_err), "%s", msg ? msg : "");
	pthread_cond_broadcast(&jump_cv);
	pthread_mutex_unlock(&jump_mu);
}

/* Channel errors end one tunnel; anything else is the jump session's end. */
static bool session_fatal(int rc)
{
	switch (rc) {
	case LIBSSH2_ERROR_CHANNEL_OUTOFORDER:
	case LIBSSH2_ERROR_CHANNEL_FAILURE:
	case LIBSSH2_ERROR_CHANNEL_REQUEST_DENIED:
	case LIBSSH2_ERROR_CHANNEL_UNKNOWN:
	case LIBSSH2_ERROR_CHANNEL_WINDOW_EXCEEDED:
	case LIBSSH2_ERROR_CHANNEL_PACKET_EXCEEDED:
	case LIBSSH2_ERROR_CHANNEL_CLOSED:
	case LIBSSH2_ERROR_CHANNEL_EOF_SENT: return false;
	default: return true;
	}
}

/* Moves what it can for one open tunnel. Returns 1 on progress, 0 none,
 * -1 the tunnel is over, -2 the jump session failed. */
static int pump_tunnel(struct tunnel *t)
{
	int progress = 0;
	if (!t->ch_eof && t->to_fd_len < TUN_BUF) {
		ssize_t n = libssh2_channel_read(t->ch, t->to_fd + t->to_fd_len,
						 TUN_BUF - t->to_fd_len);
		if (n > 0) {
			t->to_fd_len += (size_t)n;
			progress = 1;
		} else if (n < 0 && n != LIBSSH2_ERROR_EAGAIN) {
			return session_fatal((int)n) ? -2 : -1;
		} else if (libssh2_channel_eof(t->ch)) {
			t->ch_eof = true;
			progress = 1;
		}
	}
	if (t->to_fd_len) {
		ssize_t w = send(t->fd, t->to_fd, t->to_fd_len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			memmove(t->to_fd, t->to_fd + w, t->to_fd_len - (size_t)w);
			t->to_fd_len -= (size_t)w;
			progress = 1;
		} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
			return -1; /* the box closed its end */
		}
	}
	if (t->ch_eof && !t->to_fd_len && !t->fd_shut) {
		shutdown(t->fd, SHUT_WR);
		t->fd_shut = true;
	}
	if (!t->fd_eof && t->to_ch_len < TUN_BUF) {
		ssize_t r =
			recv(t->fd, t->to_ch + t->to_ch_len, TUN_BUF - t->to_ch_len, MSG_DONTWAIT);
		if (r > 0) {
			t->to_ch_len += (size_t)r;
			progress = 1;
		} else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
			t->fd_eof = true;
			progress = 1;
		}
	}
	if (t->to_ch_len) {
		ssize_t w = libssh2_channel_write(t->ch, t->to_ch, t->to_ch_len);
		if (w > 0) {
			memmove(t->to_ch, t->to_ch + w, t->to_ch_len - (size_t)w);
			t->to_ch_len -= (size_t)w;
			progress = 1;
		} else if (w < 0 && w != LIBSSH2_ERROR_EAGAIN) {
			return session_fatal((int)w) ? -2 : -1;
		}
	}
	/* The box's session is over once it closed its end: SSH never half-closes. */
	if (t->fd_eof && !t->to_ch_len)
		return -1;
	return progress;
}

/* One pass over every tunnel. Returns 1 on progress, 0 none, -1 the jump
 * session failed. */
static int pump_pass(struct remote_jump *j)
{
	LIBSSH2_SESSION *s = j->conn->session;
	int progress = 0;
	bool opening_seen = false;
	pthread_mutex_lock(&jump_mu);
	struct tunnel *t = j->tunnels;
	pthread_mutex_unlock(&jump_mu);
	while (t) {
		pthread_mutex_lock(&jump_mu);
		struct tunnel *next = t->next;
		enum tun_state st = t->state;
		bool abandoned = t->abandoned;
		pthread_mutex_unlock(&jump_mu);
		if (st == TUN_OPENING && !opening_seen) {
			/* libssh2 opens one channel at a time per session */
			opening_seen = true;
			if (!t->open_started_ms)
				t->open_started_ms = bg_now_ms();
			LIBSSH2_CHANNEL *ch = libssh2_channel_direct_tcpip_ex(s, t->host, t->port,
									      "127.0.0.1", 22);
			if (ch) {
				t->ch = ch;
				pthread_mutex_lock(&jump_mu);
				t->state = abandoned ? TUN_CLOSING : TUN_OPEN;
				pthread_mutex_unlock(&jump_mu);
				open_result(j, t, 0, NULL);
				progress = 1;
			} else if (libssh2_session_last_errno(s) != LIBSSH2_ERROR_EAGAIN) {
				int rc = libssh2_session_last_errno(s);
				open_result(j, t, rc, remote_ssh_errmsg(s));
				tunnel_drop_locked(j, t);
				if (session_fatal(rc))
					return -1;
				progress = 1;
				t = next;
				continue;
			}
		} else if (st == TUN_OPEN) {
			int r = pump_tunnel(t);
			if (r == -2)
				return -1;
			if (r == -1) {
				pthread_mutex_lock(&jump_mu);
				t->state = TUN_CLOSING;
				pthread_mutex_unlock(&jump_mu);
				r = 1;
			}
			progress |= r;
		}
		if (t->state == TUN_CLOSING) {
			int rc = libssh2_channel_free(t->ch);
			if (rc != LIBSSH2_ERROR_EAGAIN) {
				t->ch = NULL;
				tunnel_drop_locked(j, t);
				progress = 1;
				if (rc < 0 && session_fatal(rc))
					return -1;
			}
		}
		t = next;
	}
	return progress;
}

/* The jump session is gone: fail every open in flight, close every tunnel's
 * socket so the boxes behind it see their peer go. */
static void jump_fail(struct remote_jump *j, const char *why)
{
	pthread_mutex_lock(&jump_mu);
	if (!j->dead) {
		j->dead = true;
		j->dead_code = BG_ECONNECT;
		snprintf(j->dead_msg, sizeof(j->dead_msg), "%s: %s", j->conn->target->name, why);
	}
	registry_remove(j);
	while (j->tunnels) {
		struct tunnel *t = j->tunnels;
		if (!t->open_done) {
			j->pending--;
			t->open_done = true;
			t->open_rc = LIBSSH2_ERROR_SOCKET_DISCONNECT;
			snprintf(t->open_err, sizeof(t->open_err), "%s", why);
		}
		t->ch = NULL; /* freed with the session */
		tunnel_drop(j, t);
	}
	pthread_cond_broadcast(&jump_cv);
	pthread_mutex_unlock(&jump_mu);
}

static void *pump_main(void *arg)
{
	struct remote_jump *j = arg;
	remote_conn *c = j->conn;
	LIBSSH2_SESSION *s = c->session;
	libssh2_session_set_blocking(s, 0);
	int64_t up_ms = bg_now_ms();
	size_t cap = 0;
	struct pollfd *pfd = NULL;
	for (;;) {
		pthread_mutex_lock(&jump_mu);
		bool stop = j->stop;
		pthread_mutex_unlock(&jump_mu);
		if (stop)
			break;
		int64_t rx0 = c->last_rx_ms;
		int r = 0;
		for (int pass = 0; pass < 64; pass++) {
			r = pump_pass(j);
			if (r < 0 || (r == 0 && c->last_rx_ms == rx0))
				break;
			rx0 = c->last_rx_ms;
		}
		if (r < 0) {
			jump_fail(j, remote_ssh_errmsg(s));
			break;
		}
		int64_t now = bg_now_ms();
		int timeout = 1000;
		if (c->keepalive_s) {
			int next = 0;
			/* libssh2 sends its first keepalive at once: not before an
			 * interval has passed (the lane just heard from the host) */
			int64_t quiet = (int64_t)c->keepalive_s * 1000 - (now - up_ms);
			if (quiet > 0) {
				if (quiet < timeout)
					timeout = (int)quiet;
			} else if (libssh2_keepalive_send(s, &next) == 0 && next > 0 &&
				   next * 1000 < timeout) {
				timeout = next * 1000;
			}
			if (now - c->last_rx_ms > (int64_t)c->keepalive_s * 3000 + 1000) {
				char why[96];
				snprintf(why, sizeof(why), "no reply for %d s: connection lost",
					 c->keepalive_s * 3);
				jump_fail(j, why);
				break;
			}
		}
		pthread_mutex_lock(&jump_mu);
		size_t n = 2;
		for (struct tunnel *t = j->tunnels; t; t = t->next)
			n++;
		pfd = xgrow(pfd, &cap, n, sizeof(*pfd));
		pfd[0] = (struct pollfd){.fd = j->wake[0], .events = POLLIN};
		int dir = libssh2_session_block_directions(s);
		pfd[1] = (struct pollfd){
			.fd = c->sock,
			.events = (short)(POLLIN |
					  (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND ? POLLOUT : 0))};
		size_t k = 2;
		for (struct tunnel *t = j->tunnels; t; t = t->next) {
			short ev = 0;
			if (t->state == TUN_OPEN) {
				if (!t->fd_eof && t->to_ch_len < TUN_BUF)
					ev |= POLLIN;
				if (t->to_fd_len)
					ev |= POLLOUT;
			}
			pfd[k++] = (struct pollfd){.fd = ev ? t->fd : -1, .events = ev};
		}
		pthread_mutex_unlock(&jump_mu);
		if (poll(pfd, k, timeout) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents & POLLIN) {
			char buf[64];
			while (read(j->wake[0], buf, sizeof(buf)) > 0) {
			}
		}
	}
	free(pfd);
	return NULL;
}

static void jump_free(struct remote_jump *j)
{
	if (j->pump_started) {
		pthread_mutex_lock(&jump_mu);
		j->stop = true;
		pthread_mutex_unlock(&jump_mu);
		wake_pump(j);
		pthread_join(j->pump, NULL);
	}
	/* The pump is gone: this thread may touch the session now. */
	while (j->tunnels) {
		struct tunnel *t = j->tunnels;
		t->ch = NULL;
		tunnel_drop_locked(j, t);
	}
	if (j->conn && j->dead)
		remote_ssh_mark_dead(j->conn);
	remote_close(j->conn);
	if (j->wake[0] >= 0)
		close(j->wake[0]);
	if (j->wake[1] >= 0)
		close(j->wake[1]);
	free(j->key);
	free(j);
}

void remote_jump_release(struct remote_jump *j)
{
	if (!j)
		return;
	pthread_mutex_lock(&jump_mu);
	bool last = --j->refs == 0;
	if (last)
		registry_remove(j);
	pthread_mutex_unlock(&jump_mu);
	if (last)
		jump_free(j);
}

/* Under jump_mu: the lane a box behind `key` should join
 * (remote_jump_lane_choose); NULL when a new lane would be sooner or there is
 * none yet. *blind is a lane still connecting when none has connected yet
 * and none has its transport up: nothing is known of the costs then. */
static struct remote_jump *lane_pick(const char *key, struct remote_jump **blind)
{
	struct remote_jump *ref = NULL, *est = NULL, *v[JUMP_LANES_MAX];
	remote_jump_lane lanes[JUMP_LANES_MAX];
	int n = 0;
	int64_t now = bg_now_ms();
	*blind = NULL;
	for (struct remote_jump *j = registry; j && n < JUMP_LANES_MAX; j = j->next) {
		if (j->dead || strcmp(j->key, key) != 0)
			continue;
		if (!j->connecting && !ref)
			ref = j;
		if (j->connecting && j->est_connect_ms >= 0 && !est)
			est = j;
		if (j->connecting && !*blind)
			*blind = j;
		lanes[n] = (remote_jump_lane){j->pending, j->connecting, now - j->started_ms,
					      j->open_ms};
		v[n++] = j;
	}
	if (!ref && !est)
		return NULL;
	*blind = NULL;
	int64_t connect_ms = ref ? ref->connect_ms : est->est_connect_ms;
	int64_t open_ms = ref ? ref->open_ms : est->open_ms;
	int i = remote_jump_lane_choose(lanes, n, connect_ms, open_ms, REMOTE_JUMP_HANDSHAKE_CPU_MS,
					JUMP_LANES_MAX);
	return i < 0 ? NULL : v[i];
}

void remote_jump_transport_up(const remote_conn *c)
{
	struct remote_jump *j = lane_connecting;
	if (!j)
		return;
	pthread_mutex_lock(&jump_mu);
	int64_t took = bg_now_ms() - j->started_ms;
	/* through a jump of its own the transport is a channel's open: about
	 * two round trips */
	int64_t rtt = c->target->jump ? took / 2 : c->tcp_ms;
	if (j->connecting && j->est_connect_ms < 0) {
		remote_jump_lane_estimate(took, rtt, &j->est_connect_ms, &j->open_ms);
		pthread_cond_broadcast(&jump_cv);
	}
	pthread_mutex_unlock(&jump_mu);
}

bool remote_jump_lane_first(const remote_conn *c, const char **host, int *port)
{
	struct remote_jump *j = lane_connecting;
	if (!j || !j->first || j->conn)
		return false;
	(void)c;
	*host = j->first->host;
	*port = j->first->port;
	return true;
}

/* A connection to the target's jump chain: a lane already there (lane_pick)
 * or a new one this caller connects; callers that join a lane still
 * connecting wait for it. The caller counts in the lane's pending opens. */
static int jump_get(remote_conn *c, const remote_connect_opts *opts, struct tunnel *tun,
		    bool *linked, struct remote_jump **out, bg_err *err)
{
	const remote_target *t = c->target;
	strbuf key = STRBUF_INIT;
	chain_key(t->jump, &key);
	pthread_mutex_lock(&jump_mu);
	struct remote_jump *j, *blind;
	for (;;) {
		j = lane_pick(key.buf, &blind);
		if (j || !blind)
			break;
		/* Every lane is still connecting: wait for one, to learn what a
		 * connection and an open cost here, then choose. */
		blind->refs++;
		while (blind->connecting && blind->est_connect_ms < 0)
			pthread_cond_wait(&jump_cv, &jump_mu);
		bool dead = blind->dead;
		int code = blind->dead_code;
		char msg[sizeof(blind->dead_msg)];
		snprintf(msg, sizeof(msg), "%s", blind->dead_msg);
		pthread_mutex_unlock(&jump_mu);
		remote_jump_release(blind);
		if (dead) {
			strbuf_release(&key);
			return bg_fail(err, code, "%s: %s", t->name, msg);
		}
		pthread_mutex_lock(&jump_mu);
	}
	if (j) {
		j->refs++;
		j->pending++;
		while (j->connecting)
			pthread_cond_wait(&jump_cv, &jump_mu);
		bool dead = j->dead;
		int code = j->dead_code;
		int lane = j->lane, pending = j->pending;
		char msg[sizeof(j->dead_msg)];
		snprintf(msg, sizeof(msg), "%s", j->dead_msg);
		pthread_mutex_unlock(&jump_mu);
		strbuf_release(&key);
		if (!dead)
			remote_tracef(c, "%s: joins lane %d (%d channel opens pending)",
				      t->jump->name, lane, pending);
		if (dead) {
			remote_jump_release(j);
			return bg_fail(err, code, "%s: %s", t->name, msg);
		}
		*out = j;
		return 0;
	}
	j = xcalloc(1, sizeof(*j));
	j->key = strbuf_detach(&key);
	j->refs = 1;
	j->pending = 1;
	j->connecting = true;
	j->started_ms = bg_now_ms();
	j->wake[0] = j->wake[1] = -1;
	j->est_connect_ms = -1;
	/* first in line, before the pump starts: its open is the one the
	 * lane's authentication sends ahead */
	j->tunnels = j->first = tun;
	*linked = true;
	j->lane = 1;
	for (struct remote_jump *o = registry; o; o = o->next)
		if (strcmp(o->key, j->key) == 0 && o->lane >= j->lane)
			j->lane = o->lane + 1;
	j->next = registry;
	registry = j;
	pthread_mutex_unlock(&jump_mu);
	remote_tracef(c, "%s: connecting lane %d", t->jump->name, j->lane);

	bg_err e = {0};
	struct remote_jump *outer = lane_connecting;
	lane_connecting = j;
	int rc = remote_connect(t->jump, opts, &j->conn, &e);
	lane_connecting = outer;
	if (rc == 0 && pipe2(j->wake, O_CLOEXEC | O_NONBLOCK) < 0)
		rc = bg_fail(&e, BG_ECONNECT, "%s: cannot make a pipe: %s", t->jump->name,
			     strerror(errno));
	if (rc == 0 && pthread_create(&j->pump, NULL, pump_main, j) != 0)
		rc = bg_fail(&e, BG_ECONNECT, "%s: cannot start its pump thread", t->jump->name);
	if (rc == 0)
		j->pump_started = true;
	pthread_mutex_lock(&jump_mu);
	j->connecting = false;
	j->first = NULL;
	if (rc < 0) {
		/* the caller frees its tunnel: the lane's end must not */
		j->tunnels = NULL;
		*linked = false;
	}
	if (rc == 0) {
		j->connect_ms = bg_now_ms() - j->started_ms;
		j->open_ms = j->open_cap_ms = 2 * j->conn->tcp_ms + 1;
	}
	if (rc < 0) {
		j->dead = true;
		j->dead_code = e.code;
		snprintf(j->dead_msg, sizeof(j->dead_msg), "%s", e.msg);
		registry_remove(j);
	}
	pthread_cond_broadcast(&jump_cv);
	pthread_mutex_unlock(&jump_mu);
	if (rc == 0)
		remote_tracef(c, "%s: lane %d connected in %lld ms (TCP %lld ms)", t->jump->name,
			      j->lane, (long long)j->connect_ms, (long long)j->conn->tcp_ms);
	if (rc < 0) {
		int code = e.code;
		int detail = e.detail;
		remote_jump_release(j);
		rc = bg_fail(err, code, "%s: %s", t->name, e.msg);
		err->detail = detail;
		return rc;
	}
	*out = j;
	return 0;
}

int remote_jump_connect(remote_conn *c, const remote_connect_opts *opts, bg_err *err)
{
	const remote_target *b = c->target;
	pthread_once(&jump_once, jump_init);
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return bg_fail(err, BG_ECONNECT, "%s: cannot make a socketpair: %s", b->name,
			       strerror(errno));
	fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_NONBLOCK);
	struct tunnel *t = xcalloc(1, sizeof(*t));
	t->state = TUN_OPENING;
	t->refs = 2;
	t->host = xstrdup(b->hostname);
	t->port = b->port;
	t->fd = sv[1];
	struct remote_jump *j = NULL;
	bool linked = false;
	int rc = jump_get(c, opts, t, &linked, &j, err);
	if (rc < 0) {
		close(sv[0]);
		close(sv[1]);
		free(t->host);
		free(t);
		return rc;
	}

	int64_t asked_ms = bg_now_ms();
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += b->connect_timeout_s;
	pthread_mutex_lock(&jump_mu);
	/* a linked tunnel the lane's end already failed and dropped */
	bool dead = !linked && j->dead;
	if (dead)
		j->pending--;
	if (!dead && !linked) {
		struct tunnel **p = &j->tunnels;
		while (*p)
			p = &(*p)->next;
		*p = t;
	}
	pthread_mutex_unlock(&jump_mu);
	if (dead) {
		close(sv[0]);
		close(sv[1]);
		free(t->host);
		free(t);
		rc = bg_fail(err, BG_ECONNECT, "%s: %s", b->name, j->dead_msg);
		remote_jump_release(j);
		return rc;
	}
	wake_pump(j);
	pthread_mutex_lock(&jump_mu);
	int w = 0;
	while (!t->open_done && w == 0)
		w = pthread_cond_timedwait(&jump_cv, &jump_mu, &until);
	bool done = t->open_done;
	int orc = t->open_rc;
	int64_t sent_ms = t->open_started_ms;
	unsigned trips = t->open_round_trips, auth_trips = t->open_auth_round_trips;
	/* the lane's first box: its open went out with the lane's authentication */
	if (sent_ms < asked_ms)
		sent_ms = asked_ms;
	char msg[sizeof(t->open_err)];
	snprintf(msg, sizeof(msg), "%s", t->open_err);
	if (!done)
		t->abandoned = true;
	tunnel_unref(t);
	pthread_mutex_unlock(&jump_mu);
	if (done && orc == 0) {
		c->sock = sv[0];
		c->jump = j;
		int64_t now = bg_now_ms();
		remote_tracef(
			c,
			"channel through %s (lane %d) open: %lld ms queued, %lld ms its open; "
			"the lane's round trips so far %u (%u to authenticate)",
			b->jump->name, j->lane, (long long)(sent_ms - asked_ms),
			(long long)(now - sent_ms), trips, auth_trips);
		return 0;
	}
	close(sv[0]);
	if (!done)
		rc = bg_fail(err, BG_ECONNECT,
			     "%s: %s did not open a channel to %s port %d within %d s", b->name,
			     b->jump->name, b->hostname, b->port, b->connect_timeout_s);
	else
		rc = bg_fail(err, BG_ECONNECT, "%s: %s cannot reach %s port %d: %s", b->name,
			     b->jump->name, b->hostname, b->port, msg);
	remote_jump_release(j);
	return rc;
}
