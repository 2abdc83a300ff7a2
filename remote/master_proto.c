/* The master's frames: building, taking apart, reading and writing them. */
#include "remote/master_proto.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/timer.h"
#include "base/xmalloc.h"

void mf_put_u32(strbuf *sb, uint32_t v)
{
	unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
			      (unsigned char)(v >> 8), (unsigned char)v};
	strbuf_add(sb, b, 4);
}

void mf_put_u64(strbuf *sb, uint64_t v)
{
	mf_put_u32(sb, (uint32_t)(v >> 32));
	mf_put_u32(sb, (uint32_t)v);
}

void mf_put_str(strbuf *sb, const void *s, size_t n)
{
	if (n > 0xffff)
		n = 0xffff;
	unsigned char b[2] = {(unsigned char)(n >> 8), (unsigned char)n};
	strbuf_add(sb, b, 2);
	strbuf_add(sb, s, n);
}

void mf_put_lstr(strbuf *sb, const void *s, size_t n)
{
	mf_put_u32(sb, (uint32_t)n);
	strbuf_add(sb, s, n);
}

bool mf_get_u32(mf_reader *r, uint32_t *v)
{
	if (r->n < 4)
		return false;
	*v = (uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 | (uint32_t)r->p[2] << 8 | r->p[3];
	r->p += 4;
	r->n -= 4;
	return true;
}

bool mf_get_u64(mf_reader *r, uint64_t *v)
{
	uint32_t hi, lo;
	if (!mf_get_u32(r, &hi) || !mf_get_u32(r, &lo))
		return false;
	*v = (uint64_t)hi << 32 | lo;
	return true;
}

bool mf_get_str(mf_reader *r, const char **s, size_t *n)
{
	if (r->n < 2)
		return false;
	size_t len = (size_t)r->p[0] << 8 | r->p[1];
	if (r->n - 2 < len)
		return false;
	*s = (const char *)r->p + 2;
	*n = len;
	r->p += 2 + len;
	r->n -= 2 + len;
	return true;
}

void mf_add(strbuf *sb, int type, const void *p, size_t n)
{
	strbuf_addch(sb, (char)type);
	mf_put_u32(sb, (uint32_t)n);
	if (n)
		strbuf_add(sb, p, n);
}

int mf_take(strbuf *in, size_t *off, int *type, const char **p, size_t *n)
{
	size_t have = in->len - *off;
	if (have < MF_HDR)
		return 0;
	const unsigned char *h = (const unsigned char *)in->buf + *off;
	size_t len = (size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | h[4];
	if (len > MF_MAX)
		return -1;
	if (have - MF_HDR < len)
		return 0;
	*type = h[0];
	*p = (const char *)h + MF_HDR;
	*n = len;
	*off += MF_HDR + len;
	return 1;
}

void mf_compact(strbuf *in, size_t *off)
{
	if (*off == 0)
		return;
	memmove(in->buf, in->buf + *off, in->len - *off);
	in->len -= *off;
	*off = 0;
}

int mf_write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct pollfd pf = {.fd = fd, .events = POLLOUT};
			if (poll(&pf, 1, -1) < 0 && errno != EINTR)
				return -1;
			continue;
		}
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int mf_read_frame(int fd, int64_t deadline, strbuf *in, size_t *off, int *type, const char **p,
		  size_t *n)
{
	for (;;) {
		int t = mf_take(in, off, type, p, n);
		if (t != 0)
			return t;
		mf_compact(in, off);
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		int r = poll(&pf, 1, bg_poll_timeout(deadline));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			return 0;
		char buf[65536];
		ssize_t got = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got <= 0)
			return -1;
		strbuf_add(in, buf, (size_t)got);
	}
}

bool mf_get_lstr(mf_reader *r, const char **s, size_t *n)
{
	uint32_t len;
	if (!mf_get_u32(r, &len) || r->n < len)
		return false;
	*s = (const char *)r->p;
	*n = len;
	r->p += len;
	r->n -= len;
	return true;
}

char *mf_get_path(mf_reader *r)
{
	const char *s;
	size_t n;
	if (!mf_get_lstr(r, &s, &n) || memchr(s, '\0', n))
		return NULL;
	return xstrndup(s, n);
}

int mf_send_fd(int sock, const char *p, size_t n, int fd)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} u;
	memset(&u, 0, sizeof(u));
	struct iovec iov = {(void *)p, n};
	struct msghdr m = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = u.b,
			   .msg_controllen = sizeof(u.b)};
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &fd, sizeof(int));
	ssize_t w;
	for (;;) {
		w = sendmsg(sock, &m, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct pollfd pf = {.fd = sock, .events = POLLOUT};
			if (poll(&pf, 1, -1) < 0 && errno != EINTR)
				return -1;
			continue;
		}
		break;
	}
	if (w <= 0)
		return -1;
	return mf_write_all(sock, p + w, n - (size_t)w);
}

ssize_t mf_recv(int sock, strbuf *in, int *fd_out)
{
	char buf[65536];
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(4 * sizeof(int))];
	} u;
	struct iovec iov = {buf, sizeof(buf)};
	struct msghdr m = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = u.b,
			   .msg_controllen = sizeof(u.b)};
	ssize_t got = recvmsg(sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (got < 0)
		return -1;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
			if (fd_out && *fd_out < 0)
				*fd_out = fd;
			else if (fd_out && *fd_out >= 0) {
				close(*fd_out);
				*fd_out = fd;
			} else
				close(fd);
		}
	}
	if (got > 0)
		strbuf_add(in, buf, (size_t)got);
	return got;
}
