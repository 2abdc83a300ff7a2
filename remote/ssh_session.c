/* ssh transport: TCP connect with a deadline, the libssh2 session, its
 * keepalive and dead-peer detection. */
#include "remote/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/timer.h"

const char *remote_ssh_errmsg(LIBSSH2_SESSION *s)
{
	char *msg = NULL;
	if (!s)
		return "no session";
	libssh2_session_last_error(s, &msg, NULL, 0);
	return msg && *msg ? msg : "unknown libssh2 error";
}

void remote_tracef(const remote_conn *c, const char *fmt, ...)
{
	if (!c->opts.trace)
		return;
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	c->opts.trace(c->opts.log_ctx, c->target->name, what);
}

/* Every byte received stamps the connection: OpenSSH answers each keepalive,
 * so silence for about three intervals means the peer is gone. */
static LIBSSH2_RECV_FUNC(stamped_recv)
{
	remote_conn *c = *abstract;
	if (c->hold_recv)
		return -EAGAIN;
	ssize_t n = recv(socket, buffer, length, flags);
	if (n < 0) {
		if (errno == EAGAIN && c->sent_since_wait)
			c->waiting = true;
		return -errno;
	}
	if (n > 0) {
		if (c->auth_phase == 1)
			c->auth_phase = 2;
		c->last_rx_ms = bg_now_ms();
		if (c->waiting)
			c->round_trips++;
		c->waiting = c->sent_since_wait = false;
	}
	return n;
}

/* The client's NEWKEYS, whole in one send as libssh2 sends it: the last
 * plaintext packet (length 12, padding 10, type SSH_MSG_NEWKEYS 21). What
 * libssh2 sends next is the ssh-userauth service request. */
static bool is_newkeys(const void *buf, size_t n)
{
	const unsigned char *b = buf;
	return n == 16 && b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] == 12 && b[4] == 10 &&
	       b[5] == 21;
}

static LIBSSH2_SEND_FUNC(counted_send)
{
	remote_conn *c = *abstract;
	ssize_t n = send(socket, buffer, length, flags);
	if (n < 0)
		return -errno;
	if (n > 0) {
		c->sent_since_wait = true;
		if (c->newkeys_out)
			c->sends_after_newkeys++;
		else if (is_newkeys(buffer, (size_t)n))
			c->newkeys_out = true;
		if (c->auth_phase == 2)
			c->auth_phase = 3;
	}
	return n;
}

static int connect_one(const struct addrinfo *ai, int64_t deadline, int *fd_out, int *err_out)
{
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			ai->ai_protocol);
	if (fd < 0) {
		*err_out = errno;
		return -1;
	}
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
		*err_out = errno;
		close(fd);
		return -1;
	}
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int r;
	do
		r = poll(&p, 1, bg_poll_timeout(deadline));
	while (r < 0 && errno == EINTR);
	if (r == 0) {
		*err_out = ETIMEDOUT;
		close(fd);
		return -1;
	}
	int soerr = 0;
	socklen_t len = sizeof(soerr);
	if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0 || soerr) {
		*err_out = soerr ? soerr : errno;
		close(fd);
		return -1;
	}
	/* Back to blocking: libssh2's blocking calls are bounded by its session
	 * timeout, and the streaming loop switches the session to non-blocking. */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	*fd_out = fd;
	return 0;
}

static int tcp_connect(remote_conn *c, bg_err *err)
{
	const remote_target *b = c->target;
	char port[16];
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC};
	struct addrinfo *res = NULL;
	snprintf(port, sizeof(port), "%d", b->port);
	int g = getaddrinfo(b->hostname, port, &hints, &res);
	if (g != 0)
		return bg_fail(err, BG_ECONNECT, "%s: cannot resolve host '%s': %s", b->name,
			       b->hostname, gai_strerror(g));
	int64_t deadline = bg_deadline_ms((int64_t)b->connect_timeout_s * 1000);
	int last = 0;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		int64_t t0 = bg_now_ms();
		if (connect_one(ai, deadline, &c->sock, &last) == 0) {
			c->tcp_ms = bg_now_ms() - t0;
			break;
		}
		if (last == ETIMEDOUT)
			break;
	}
	freeaddrinfo(res);
	if (c->sock >= 0)
		return 0;
	if (last == ETIMEDOUT)
		return bg_fail(err, BG_ECONNECT, "%s: connect to %s port %d timed out after %d s",
			       b->name, b->hostname, b->port, b->connect_timeout_s);
	return bg_fail(err, BG_ECONNECT, "%s: connect to %s port %d: %s", b->name, b->hostname,
		       b->port, strerror(last));
}

/* The handshake up to the point where only the service accept is awaited
 * (*early: the key exchange is done and the service request is out, so a
 * request may follow it now; the caller checks the host key first and
 * finishes the handshake), or to its end. libssh2_session_handshake's
 * return. */
static int handshake(remote_conn *c, bool *early)
{
	int64_t deadline = bg_deadline_ms((int64_t)c->target->connect_timeout_s * 1000);
	libssh2_session_set_blocking(c->session, 0);
	int rc;
	for (;;) {
		rc = libssh2_session_handshake(c->session, c->sock);
		if (rc != LIBSSH2_ERROR_EAGAIN)
			break;
		int dir = libssh2_session_block_directions(c->session);
		if (c->newkeys_out && c->sends_after_newkeys >= 1 &&
		    !(dir & LIBSSH2_SESSION_BLOCK_OUTBOUND)) {
			*early = true;
			rc = 0;
			break;
		}
		if (bg_now_ms() >= deadline) {
			libssh2_session_set_last_error(c->session, LIBSSH2_ERROR_TIMEOUT,
						       "Timed out waiting on socket");
			break;
		}
		remote_ssh_wait_socket(c, deadline, -1);
	}
	libssh2_session_set_blocking(c->session, 1);
	return rc;
}

int remote_auth_pipelined(remote_conn *c, const char *user, const char *path)
{
	int64_t deadline = bg_deadline_ms((int64_t)c->target->connect_timeout_s * 1000);
	libssh2_session_set_blocking(c->session, 0);
	int r;
	for (;;) {
		r = libssh2_userauth_publickey_fromfile_ex(c->session, user, (unsigned)strlen(user),
							   NULL, path, NULL);
		if (r != LIBSSH2_ERROR_EAGAIN)
			break;
		int dir = libssh2_session_block_directions(c->session);
		if (!c->open_pending && !c->spare && c->auth_phase == 3 &&
		    !(dir & LIBSSH2_SESSION_BLOCK_OUTBOUND)) {
			/* The signed request is out whole: the next command's channel
			 * open follows it, answered with the server's success. */
			/* only sent: the success is the authentication's to read */
			c->hold_recv = true;
			const char *th;
			int tp;
			c->open_tcpip = remote_jump_lane_first(c, &th, &tp);
			LIBSSH2_CHANNEL *ch =
				c->open_tcpip ? libssh2_channel_direct_tcpip_ex(c->session, th, tp,
										"127.0.0.1", 22)
					      : libssh2_channel_open_session(c->session);
			c->hold_recv = false;
			c->open_pending = !ch && libssh2_session_last_errno(c->session) ==
							 LIBSSH2_ERROR_EAGAIN;
			if (c->open_tcpip) {
				/* nothing read: it cannot be open yet; the pump
				 * asks again for it and gets it */
				c->open_tcpip = c->open_pending;
				c->open_pending = c->open_pending || ch;
			} else {
				c->spare = ch;
			}
			continue;
		}
		if (bg_now_ms() >= deadline) {
			r = LIBSSH2_ERROR_TIMEOUT;
			break;
		}
		remote_ssh_wait_socket(c, deadline, -1);
	}
	libssh2_session_set_blocking(c->session, 1);
	c->auth_early = false;
	c->auth_phase = 0;
	if (c->open_tcpip && r == 0) {
		/* the lane's pump finishes it (after a refused signature it
		 * stays pending: no other key on this session) */
		c->open_pending = false;
	}
	if (r == 0 && c->open_pending) {
		libssh2_session_set_timeout(c->session, (long)c->target->connect_timeout_s * 1000);
		c->spare = libssh2_channel_open_session(c->session);
		c->open_pending = false;
	}
	return r;
}

int remote_ssh_connect(remote_conn *c, const remote_connect_opts *opts, bg_err *err)
{
	const remote_target *b = c->target;
	int rc = b->jump ? remote_jump_connect(c, opts, err) : tcp_connect(c, err);
	if (rc < 0)
		return rc;
	if (!b->jump)
		remote_tracef(c, "TCP connected to %s port %d in %lld ms", b->hostname, b->port,
			      (long long)c->tcp_ms);
	remote_jump_transport_up(c);
	c->session = remote_ssh_session_new(c);
	if (!c->session)
		return bg_fail(err, BG_ECONNECT, "%s: cannot create an SSH session", b->name);
	libssh2_session_callback_set(c->session, LIBSSH2_CALLBACK_RECV, (void *)stamped_recv);
	libssh2_session_callback_set(c->session, LIBSSH2_CALLBACK_SEND, (void *)counted_send);
	libssh2_session_set_blocking(c->session, 1);
	libssh2_session_set_timeout(c->session, (long)b->connect_timeout_s * 1000);
	remote_known_hosts kh;
	remote_knownhosts_load(c, &kh);
	remote_knownhosts_prefer(c, &kh);
	c->last_rx_ms = bg_now_ms();
	bool early = false;
	if (handshake(c, &early) != 0)
		rc = bg_fail(err, BG_ECONNECT, "%s: SSH handshake with %s port %d failed: %s",
			     b->name, b->hostname, b->port, remote_ssh_errmsg(c->session));
	else
		rc = remote_knownhosts_check(c, &kh, opts, err);
	remote_knownhosts_release(&kh);
	if (rc < 0)
		return rc;
	remote_tracef(c, "key exchange done, host key checked (%u round trips)", c->round_trips);
	if (early) {
		/* The host key holds: the first identity's public key request goes out
		 * behind the service request, then the handshake ends as usual. */
		const char *path = remote_auth_first_identity(c);
		const char *user = b->user ? b->user : "root";
		if (path) {
			c->auth_early = true;
			c->auth_phase = 1;
			libssh2_session_set_blocking(c->session, 0);
			/* Only sent: the service accept is the handshake's to read
			 * (libssh2 waiting for a packet looks only at what it reads
			 * itself once it has waited). */
			c->hold_recv = true;
			int r = libssh2_userauth_publickey_fromfile_ex(
				c->session, user, (unsigned)strlen(user), NULL, path, NULL);
			c->hold_recv = false;
			if (r != LIBSSH2_ERROR_EAGAIN) /* no request in flight to follow */
				c->auth_early = false;
			c->auth_phase = c->auth_early ? c->auth_phase : 0;
		}
		libssh2_session_set_blocking(c->session, 1);
		if (libssh2_session_handshake(c->session, c->sock) != 0)
			return bg_fail(err, BG_ECONNECT,
				       "%s: SSH handshake with %s port %d failed: %s", b->name,
				       b->hostname, b->port, remote_ssh_errmsg(c->session));
	}
	rc = remote_auth(c, err);
	if (rc < 0)
		return rc;
	c->auth_round_trips = c->round_trips;
	remote_tracef(c, "authenticated (%u round trips)", c->round_trips);
	c->keepalive_s = b->keepalive_s > 0 ? b->keepalive_s : 0;
	if (c->keepalive_s)
		libssh2_keepalive_config(c->session, 1, (unsigned)c->keepalive_s);
	return 0;
}

int remote_ssh_wait_socket(remote_conn *c, int64_t deadline, int wake_fd)
{
	struct pollfd p[2] = {{.fd = c->sock, .events = 0}, {.fd = wake_fd, .events = POLLIN}};
	int dir = libssh2_session_block_directions(c->session);
	if (dir & LIBSSH2_SESSION_BLOCK_INBOUND)
		p[0].events |= POLLIN;
	if (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND)
		p[0].events |= POLLOUT;
	if (!p[0].events)
		p[0].events = POLLIN;
	int64_t now = bg_now_ms();
	int64_t wake = deadline;
	if (c->keepalive_s) {
		int next = 0;
		libssh2_keepalive_send(c->session, &next);
		int64_t ka = now + (next > 0 ? next : c->keepalive_s) * 1000;
		if (ka < wake)
			wake = ka;
		/* Silence for three intervals after a keepalive: the peer is gone.
		 * Counted from the later of the last bytes in and the start of this
		 * stretch of waits: between a campaign worker's jobs nobody waits on
		 * the connection and no keepalive goes out. A pause is a caller
		 * coming back more than a second after the last wait was due to
		 * end (libssh2 may ask for a wait longer than keepalive_s). */
		if (now > c->watch_until_ms + 1000)
			c->watch_from_ms = now;
		c->watch_until_ms = wake;
		int64_t since = c->last_rx_ms > c->watch_from_ms ? c->last_rx_ms : c->watch_from_ms;
		if (now - since > (int64_t)c->keepalive_s * 3000 + 1000)
			return -1;
	}
	int r = poll(p, wake_fd >= 0 ? 2 : 1, bg_poll_timeout(wake));
	if (r < 0 && errno != EINTR)
		return -1;
	return r > 0 && wake_fd >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR)) ? 1 : 0;
}

void remote_ssh_mark_dead(remote_conn *c)
{
	if (!c->dead && c->sock >= 0)
		shutdown(c->sock, SHUT_RDWR);
	c->dead = true;
}

static void ssh_close(remote_conn *c)
{
	if (c->sftp) {
		libssh2_session_set_blocking(c->session, 1);
		libssh2_session_set_timeout(c->session, 2000);
		libssh2_sftp_shutdown(c->sftp);
		c->sftp = NULL;
	}
	if (c->session) {
		libssh2_session_set_blocking(c->session, 1);
		libssh2_session_set_timeout(c->session, 2000);
		if (!c->dead)
			libssh2_session_disconnect(c->session, "boxgate done");
		/* Nothing more is said on this socket. Shut it first: on a cut link
		 * libssh2_session_free would otherwise wait to close a channel whose
		 * open timed out, give up with a timeout and leave the session
		 * allocated; a shut socket fails at once and free goes on. */
		if (c->sock >= 0)
			shutdown(c->sock, SHUT_RDWR);
		/* An unused spare channel goes without the round trip its close
		 * would wait for: the session ends anyway. */
		if (c->spare)
			libssh2_channel_free(c->spare);
		c->spare = NULL;
		libssh2_session_free(c->session);
		c->session = NULL;
		remote_ssh_blocks_release(c);
	}
	if (c->sock >= 0)
		close(c->sock);
	c->sock = -1;
	remote_jump_release(c->jump);
	c->jump = NULL;
}

const struct remote_ops remote_ssh_ops = {
	.exec_start = remote_ssh_exec_start,
	.exec_wait = remote_ssh_exec_wait,
	.exec_signal = remote_ssh_exec_signal,
	.exec_free = remote_ssh_exec_free,
	.close = ssh_close,
};
