/* Connection masters, the client's half: where masters live, reaching one
 * (remote_master_attach), running commands through it (remote_master_ops),
 * and listing and ending them. */
#include "remote/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/sha256.h"
#include "base/timer.h"
#include "base/xmalloc.h"
#include "remote/master.h"
#include "remote/master_proto.h"

/* Stdin bytes a client lets the master hold beyond what the command took. */
#define MASTER_WINDOW (2 * REMOTE_MASTER_CREDIT)
/* How long a client waits for a master's greeting: a live master answers
 * at once, busy or not; one that does not is wedged and is passed by. */
#define HELLO_WAIT_MS 2000

/* A directory of ours that no one else may enter. */
static int check_dir(const char *dir, bg_err *err)
{
	struct stat st;
	if (lstat(dir, &st) != 0)
		return bg_fail(err, BG_EIO, "%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077))
		return bg_fail(err, BG_EIO,
			       "%s: not a directory of uid %u closed to others (mode 0700): no "
			       "connection masters",
			       dir, (unsigned)getuid());
	return 0;
}

int remote_master_dir(char **out, bg_err *err)
{
	const char *x = getenv("XDG_RUNTIME_DIR");
	char *dir = NULL;
	*out = NULL;
	if (x && x[0] == '/') {
		dir = xasprintf("%s/boxgate", x);
		if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
			free(dir);
			dir = NULL;
		}
	}
	if (!dir) {
		dir = xasprintf("/tmp/boxgate-%u", (unsigned)getuid());
		mkdir(dir, 0700);
	}
	int rc = check_dir(dir, err);
	if (rc < 0) {
		free(dir);
		return rc;
	}
	*out = dir;
	return 0;
}

static bool eligible(const remote_target *t)
{
	return t->transport == REMOTE_TRANSPORT_SSH && !t->jump && !t->unsupported &&
	       t->control_persist_ms > 0;
}

char *remote_master_path(const remote_target *t, const char *dir)
{
	if (!eligible(t) || !dir)
		return NULL;
	/* The box's key: whatever makes its session a different one, and what
	 * the master says or does in the box's name (its name in messages,
	 * its keepalive and timeouts). */
	strbuf k = STRBUF_INIT;
	strbuf_addf(&k, "v1\n%s@%s:%d\n%s\nka %d ct %d\n", t->user ? t->user : "root", t->hostname,
		    t->port, t->name, t->keepalive_s, t->connect_timeout_s);
	for (size_t i = 0; i < t->n_identities; i++)
		strbuf_addf(&k, "id %s\n", t->identities[i]);
	for (size_t i = 0; i < t->n_known_hosts; i++)
		strbuf_addf(&k, "kh %s\n", t->known_hosts[i]);
	for (size_t i = 0; i < t->n_global_known_hosts; i++)
		strbuf_addf(&k, "gkh %s\n", t->global_known_hosts[i]);
	strbuf_addf(&k, "hkc %d\n", (int)t->host_key_check);
	char hex[BG_SHA256_HEX_LEN + 1];
	bg_sha256_hex(k.buf, k.len, hex);
	strbuf_release(&k);
	hex[32] = '\0';
	char *path = xasprintf("%s/%s.sock", dir, hex);
	/* Room for the master's temporary name beside it too. */
	if (strlen(path) + 12 >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		free(path);
		return NULL;
	}
	return path;
}

/* The socket is ours and closed to others; a master's peer is our uid. */
static bool socket_file_ok(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == getuid() &&
	       (st.st_mode & 077) == 0;
}

static bool peer_is_us(int fd, pid_t *pid)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || cr.uid != getuid())
		return false;
	if (pid)
		*pid = cr.pid;
	return true;
}

/* A socket no one listens on: removed, unless a master is starting on it
 * (it holds the lock beside it). */
static void remove_stale(const char *path)
{
	char *lock = xasprintf("%.*s.lock", (int)(strlen(path) - 5), path);
	int fd = open(lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
		unlink(path);
	if (fd >= 0)
		close(fd);
	free(lock);
}

/* Connects to the master on `path`: the socket's fd, -1 when there is none
 * to talk to. */
static int dial(const char *path, pid_t *pid)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path) || !socket_file_ok(path))
		return -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		if (errno == ECONNREFUSED)
			remove_stale(path);
		close(fd);
		return -1;
	}
	if (!peer_is_us(fd, pid)) {
		close(fd);
		return -1;
	}
	return fd;
}

struct hello {
	int type; /* MF_HELLO or MF_BUSY */
	uint32_t version;
	uint32_t pid;
	uint64_t persist_ms, idle_ms;
	const char *box, *target, *blob, *fp;
	size_t box_n, target_n, blob_n, fp_n;
};

/* 0, -1 no greeting, or -2 another protocol version (h->version). */
static int read_hello(int fd, strbuf *in, size_t *off, struct hello *h)
{
	const char *p;
	size_t n;
	uint32_t ver;
	if (mf_read_frame(fd, bg_deadline_ms(HELLO_WAIT_MS), in, off, &h->type, &p, &n) != 1 ||
	    (h->type != MF_HELLO && h->type != MF_BUSY))
		return -1;
	mf_reader r = {(const unsigned char *)p, n};
	if (!mf_get_u32(&r, &ver))
		return -1;
	h->version = ver;
	if (ver != MF_PROTO_VERSION)
		return -2;
	if (!mf_get_u32(&r, &h->pid) || !mf_get_u64(&r, &h->persist_ms) ||
	    !mf_get_u64(&r, &h->idle_ms) || !mf_get_str(&r, &h->box, &h->box_n) ||
	    !mf_get_str(&r, &h->target, &h->target_n) || !mf_get_str(&r, &h->blob, &h->blob_n) ||
	    !mf_get_str(&r, &h->fp, &h->fp_n))
		return -1;
	return 0;
}

/* Whether known_hosts, read now, holds the key the master's session was
 * made with, under the name a fresh connection looks up. Anything less (a
 * key changed, revoked, or known only some other way) is for the fresh
 * connection's full check to judge. */
static bool key_still_known(remote_conn *c, const struct hello *h)
{
	const char *why = NULL;
	remote_hostkey k = {
		remote_hostkey_parse_blob((const unsigned char *)h->blob, h->blob_n, &why),
		(unsigned char *)h->blob, h->blob_n};
	if (k.type < 0)
		return false;
	remote_known_hosts kh;
	remote_knownhosts_load(c, &kh);
	bool ok = remote_hostfile_check(&kh.set, &k, NULL) == REMOTE_HOSTKEY_OK;
	remote_knownhosts_release(&kh);
	return ok;
}

/* Says why the master was passed by, under BOXGATE_TRACE. */
static void why(const remote_conn *c, const char *what)
{
	if (c->opts.trace)
		c->opts.trace(c->opts.log_ctx, c->target->name, what);
}

int remote_master_attach(remote_conn *c, const remote_connect_opts *opts)
{
	(void)opts;
	char *dir = NULL, *path = NULL;
	int fd = -1, rc = -1;
	struct hello h;
	bg_err err = {0};
	if (!eligible(c->target))
		goto out;
	if (remote_master_dir(&dir, &err) < 0) {
		why(c, err.msg);
		goto out;
	}
	path = remote_master_path(c->target, dir);
	if (!path) {
		why(c, "no connection master: its socket's path would be too long");
		goto out;
	}
	if ((fd = dial(path, NULL)) < 0) {
		why(c, "no connection master to use: connecting fresh");
		goto out;
	}
	int hr = read_hello(fd, &c->m_in, &c->m_in_off, &h);
	if (hr == -2 && h.version < MF_PROTO_VERSION && h.type == MF_HELLO) {
		/* An older boxgate's master: it ends (QUIT, which every version
		 * takes), so this connection can leave a master of ours. */
		why(c, "the connection master speaks an older protocol: it ends; connecting fresh");
		strbuf q = STRBUF_INIT;
		mf_add(&q, MF_QUIT, NULL, 0);
		mf_write_all(fd, q.buf, q.len);
		strbuf_release(&q);
		goto out;
	}
	if (hr == -2) {
		why(c, "the connection master speaks another protocol version: connecting fresh");
		goto out;
	}
	if (hr < 0) {
		why(c, "the connection master did not greet: connecting fresh");
		goto out;
	}
	if (h.type != MF_HELLO) {
		why(c, "the connection master is busy: connecting fresh");
		goto out;
	}
	if (!key_still_known(c, &h)) {
		why(c, "known_hosts does not hold the connection master's host key: it ends; "
		       "connecting fresh");
		/* Its session is not one a fresh connection would make: it ends. */
		strbuf q = STRBUF_INIT;
		mf_add(&q, MF_QUIT, NULL, 0);
		mf_write_all(fd, q.buf, q.len);
		strbuf_release(&q);
		goto out;
	}
	snprintf(c->fingerprint, sizeof(c->fingerprint), "%.*s", (int)h.fp_n, h.fp);
	mf_compact(&c->m_in, &c->m_in_off);
	c->mfd = fd;
	fd = -1;
	c->ops = &remote_master_ops;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (rc < 0) {
		strbuf_reset(&c->m_in);
		c->m_in_off = 0;
	}
	free(dir);
	free(path);
	return rc;
}

/* ---- commands through the master ---- */

void remote_master_trace(const remote_conn *c, const char *what)
{
	why(c, what);
}

/* Every command through the master ends lost, and no more go through it. */
void remote_master_drop(remote_conn *c)
{
	for (size_t i = 0; i < c->n_m_execs; i++) {
		remote_exec *e = c->m_execs[i];
		if (!e->done) {
			remote_exec_finish_streams(e);
			e->st.how = REMOTE_LOST;
			e->done = true;
		}
		e->m_id = 0;
	}
	c->n_m_execs = 0;
	if (c->mfd >= 0)
		close(c->mfd);
	c->mfd = -1;
	strbuf_reset(&c->m_in);
	strbuf_reset(&c->m_out);
	strbuf_reset(&c->m_opq);
	c->m_in_off = 0;
	c->m_opq_off = 0;
}

int remote_master_go_fresh(remote_conn *c, const char *reason, bg_err *err)
{
	why(c, reason);
	remote_master_drop(c);
	c->ops = &remote_ssh_ops;
	int rc = remote_ssh_connect(c, &c->opts, err);
	if (rc < 0) {
		remote_ssh_mark_dead(c);
		return rc;
	}
	c->leave_master = c->opts.warm;
	return 0;
}

static remote_exec *exec_of(remote_conn *c, uint32_t id)
{
	for (size_t i = 0; i < c->n_m_execs; i++)
		if (c->m_execs[i]->m_id == id)
			return c->m_execs[i];
	return NULL;
}

/* The whole frames in c->m_in to their queues; -1 on a bad frame. */
static int route(remote_conn *c)
{
	int type, t;
	const char *p;
	size_t n;
	while ((t = mf_take(&c->m_in, &c->m_in_off, &type, &p, &n)) == 1) {
		bool for_exec = type == MF_STARTED || type == MF_FAIL || type == MF_OUT ||
				type == MF_ERR || type == MF_ACK || type == MF_STATUS;
		if (type == MF_KEEP)
			continue; /* heard: that is all it says */
		if (!for_exec) {
			mf_add(&c->m_opq, type, p, n);
			continue;
		}
		mf_reader r = {(const unsigned char *)p, n};
		uint32_t id;
		if (!mf_get_u32(&r, &id))
			return -1;
		remote_exec *e = exec_of(c, id);
		if (e)
			mf_add(&e->m_q, type, r.p, r.n);
	}
	mf_compact(&c->m_in, &c->m_in_off);
	return t < 0 ? -1 : 0;
}

int remote_master_pull(remote_conn *c, int64_t deadline)
{
	if (c->mfd < 0)
		return -1;
	struct pollfd pf = {.fd = c->mfd, .events = POLLIN | (c->m_out.len ? POLLOUT : 0)};
	int r = poll(&pf, 1, bg_poll_timeout(deadline));
	if (r < 0 && errno != EINTR)
		return -1;
	if (r <= 0)
		return 0;
	if (pf.revents & POLLOUT) {
		while (c->m_out.len) {
			ssize_t w = send(c->mfd, c->m_out.buf, c->m_out.len,
					 MSG_NOSIGNAL | MSG_DONTWAIT);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0 && errno == EAGAIN)
				break;
			if (w <= 0)
				return -1;
			memmove(c->m_out.buf, c->m_out.buf + w, c->m_out.len - (size_t)w);
			c->m_out.len -= (size_t)w;
		}
	}
	if (!(pf.revents & (POLLIN | POLLHUP | POLLERR)))
		return 0;
	ssize_t got = mf_recv(c->mfd, &c->m_in, NULL);
	if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
		return -1;
	if (got < 0)
		return 0;
	c->m_heard_ms = bg_now_ms();
	return route(c) < 0 ? -1 : 1;
}

int remote_master_send(remote_conn *c, const char *p, size_t n, int fd)
{
	if (c->mfd < 0)
		return -1;
	if (c->m_out.len && mf_write_all(c->mfd, c->m_out.buf, c->m_out.len) < 0)
		return -1;
	strbuf_reset(&c->m_out);
	return fd >= 0 ? mf_send_fd(c->mfd, p, n, fd) : mf_write_all(c->mfd, p, n);
}

static void unlist(remote_exec *e)
{
	remote_conn *c = e->conn;
	for (size_t i = 0; i < c->n_m_execs; i++)
		if (c->m_execs[i] == e) {
			c->m_execs[i] = c->m_execs[--c->n_m_execs];
			break;
		}
	e->m_id = 0;
}

/* The master could not serve: this connection becomes a fresh one, when
 * nothing else runs through the master. */
static int fall_back(remote_conn *c, const char *cmdline, remote_exec *e, bg_err *err)
{
	unlist(e);
	if (c->n_m_execs > 0) {
		remote_master_drop(c);
		return bg_fail(err, BG_ECONNECT,
			       "%s: connection lost: the connection master went away",
			       c->target->name);
	}
	int rc = remote_master_go_fresh(
		c, "the connection master could not serve the command: connecting fresh", err);
	return rc < 0 ? rc : c->ops->exec_start(c, cmdline, e, err);
}

static int fail_frame(const char *p, size_t n, bool *retry, bg_err *err)
{
	mf_reader r = {(const unsigned char *)p, n};
	uint32_t code = 0, again = 0;
	const char *msg = "";
	size_t len = 0;
	if (!mf_get_u32(&r, &code) || !mf_get_u32(&r, &again) || !mf_get_str(&r, &msg, &len))
		code = (uint32_t)BG_EPROTO;
	int rc = (int)code;
	if (rc >= 0 || rc < BG_EUNSUPPORTED)
		rc = BG_EPROTO;
	if (retry)
		*retry = again != 0;
	return bg_fail(err, rc, "%.*s", (int)len, msg);
}

/* The next frame in e's queue: 1, or 0 when none is whole. */
static int next_of(remote_exec *e, int *type, const char **p, size_t *n)
{
	int t = mf_take(&e->m_q, &e->m_q_off, type, p, n);
	if (t != 1) {
		mf_compact(&e->m_q, &e->m_q_off);
		return 0;
	}
	return 1;
}

static int master_exec_start(remote_conn *c, const char *cmdline, remote_exec *e, bg_err *err)
{
	if (c->mfd < 0)
		return fall_back(c, cmdline, e, err);
	e->m_id = ++c->m_next_id;
	c->m_execs = xgrow(c->m_execs, &c->cap_m_execs, c->n_m_execs + 1, sizeof(*c->m_execs));
	c->m_execs[c->n_m_execs++] = e;
	strbuf f = STRBUF_INIT, x = STRBUF_INIT;
	mf_put_u32(&x, e->m_id);
	mf_put_u32(&x, e->opts.killable ? MF_KILLABLE : 0);
	strbuf_add(&x, cmdline, strlen(cmdline));
	mf_add(&f, MF_EXEC, x.buf, x.len);
	int w = remote_master_send(c, f.buf, f.len, -1);
	strbuf_release(&f);
	strbuf_release(&x);
	int type = 0;
	const char *p = NULL;
	size_t n = 0;
	int64_t deadline = bg_deadline_ms((int64_t)c->target->connect_timeout_s * 1000);
	int got = 0;
	while (w == 0 && (got = next_of(e, &type, &p, &n)) == 0)
		if (remote_master_pull(c, deadline) <= 0 && bg_now_ms() >= deadline)
			break;
	if (w < 0 || got != 1)
		return fall_back(c, cmdline, e, err);
	if (type == MF_STARTED) {
		e->m_heard_ms = bg_now_ms();
		return 0;
	}
	bool retry = false;
	bg_err why_not = {0};
	int rc = type == MF_FAIL ? fail_frame(p, n, &retry, &why_not) : BG_EPROTO;
	if (type != MF_FAIL || retry)
		return fall_back(c, cmdline, e, err);
	unlist(e);
	return bg_fail(err, rc, "%s", why_not.msg);
}

static void lost(remote_exec *e)
{
	remote_exec_finish_streams(e);
	e->st.how = REMOTE_LOST;
	e->done = true;
}

/* Stdin within the window, and its EOF once all of it is out. */
static void queue_input(remote_exec *e)
{
	remote_conn *c = e->conn;
	strbuf x = STRBUF_INIT;
	while (e->stdin_off < e->stdin_q.len && e->m_sent - e->m_acked < MASTER_WINDOW) {
		size_t k = e->stdin_q.len - e->stdin_off;
		size_t room = MASTER_WINDOW - (size_t)(e->m_sent - e->m_acked);
		if (k > room)
			k = room;
		if (k > 65536)
			k = 65536;
		strbuf_reset(&x);
		mf_put_u32(&x, e->m_id);
		strbuf_add(&x, e->stdin_q.buf + e->stdin_off, k);
		mf_add(&c->m_out, MF_IN, x.buf, x.len);
		e->stdin_off += k;
		e->m_sent += k;
	}
	if (e->stdin_off == e->stdin_q.len) {
		strbuf_reset(&e->stdin_q);
		e->stdin_off = 0;
	}
	if (e->stdin_close && !e->m_eof_sent && e->stdin_q.len == 0) {
		strbuf_reset(&x);
		mf_put_u32(&x, e->m_id);
		mf_add(&c->m_out, MF_EOF, x.buf, x.len);
		e->m_eof_sent = true;
	}
	strbuf_release(&x);
}

static void status_frame(remote_exec *e, const char *p, size_t n)
{
	mf_reader r = {(const unsigned char *)p, n};
	uint32_t how = REMOTE_LOST, code = 0;
	const char *sig = "";
	size_t len = 0;
	if (!mf_get_u32(&r, &how) || !mf_get_u32(&r, &code) || !mf_get_str(&r, &sig, &len) ||
	    how > REMOTE_TIMEDOUT)
		how = REMOTE_LOST;
	remote_exec_finish_streams(e);
	e->st.how = (remote_how)how;
	e->st.code = (int)code;
	snprintf(e->st.signal, sizeof(e->st.signal), "%.*s", (int)len, sig);
	e->done = true;
}

/* Handles the frames that are whole: 1 the command ended, 0 go on, negative
 * an error (err set). *acked says whether an ACK came. */
static int take_frames(remote_exec *e, bool *acked, bg_err *err)
{
	int type;
	const char *p;
	size_t n;
	while (next_of(e, &type, &p, &n) == 1) {
		mf_reader r = {(const unsigned char *)p, n};
		uint64_t v;
		switch (type) {
		case MF_OUT: remote_exec_feed(e, REMOTE_STDOUT, p, n); break;
		case MF_ERR: remote_exec_feed(e, REMOTE_STDERR, p, n); break;
		case MF_ACK:
			if (mf_get_u64(&r, &v) && v <= e->m_sent && v >= e->m_acked) {
				e->m_acked = v;
				*acked = true;
			}
			break;
		case MF_STATUS:
			status_frame(e, p, n);
			unlist(e);
			return 1;
		case MF_FAIL: {
			int rc = fail_frame(p, n, NULL, err);
			lost(e);
			unlist(e);
			return rc;
		}
		default: break;
		}
	}
	return 0;
}

/* How long a master may send nothing while a command runs (it sends a
 * frame every keepalive_s): as long as ssh gives a silent link. 0: no limit. */
static int64_t silence_limit_ms(const remote_conn *c)
{
	int ka = c->target->keepalive_s;
	return ka > 0 ? (int64_t)ka * 3000 + 1000 : 0;
}

static int master_exec_wait(remote_exec *e, int64_t deadline, bg_err *err)
{
	remote_conn *c = e->conn;
	const char *name = c->target->name;
	bool acked = false;
	int64_t limit = silence_limit_ms(c);
	int64_t now = bg_now_ms();
	/* Silence counts only while someone waits: a caller back after a
	 * pause (another command's wait, a file transfer) starts it again. */
	if (now - 1000 > e->m_watch_until && e->m_heard_ms < now)
		e->m_heard_ms = now;
	if (c->m_heard_ms > e->m_heard_ms)
		e->m_heard_ms = c->m_heard_ms;
	e->m_watch_until = deadline;
	if (e->m_id == 0 || c->mfd < 0) {
		lost(e);
		return bg_fail(err, BG_ECONNECT,
			       "%s: connection lost: the connection master went away", name);
	}
	for (;;) {
		queue_input(e);
		int t = take_frames(e, &acked, err);
		if (t != 0)
			return t < 0 ? t : 0;
		if (e->return_on_drain && e->stdin_q.len == 0 && (acked || e->m_sent == e->m_acked))
			return 0;
		now = bg_now_ms();
		if (c->m_heard_ms > e->m_heard_ms)
			e->m_heard_ms = c->m_heard_ms;
		if (limit && now - e->m_heard_ms > limit) {
			lost(e);
			remote_master_drop(c);
			return bg_fail(
				err, BG_ECONNECT,
				"%s: connection lost: the connection master sent nothing for "
				"%lld s",
				name, (long long)(limit / 1000));
		}
		if (now >= deadline)
			return 0;
		int64_t until = deadline;
		if (limit && e->m_heard_ms + limit + 1 < until)
			until = e->m_heard_ms + limit + 1;
		if (e->wake_fd >= 0) {
			struct pollfd pf[2] = {
				{.fd = c->mfd, .events = POLLIN | (c->m_out.len ? POLLOUT : 0)},
				{.fd = e->wake_fd, .events = POLLIN}};
			int r = poll(pf, 2, bg_poll_timeout(until));
			if (r < 0 && errno != EINTR)
				break;
			if (r > 0 && (pf[1].revents & (POLLIN | POLLHUP | POLLERR)))
				return 0;
			until = now; /* what the master sent is read below */
		}
		if (remote_master_pull(c, until) < 0)
			break;
	}
	lost(e);
	remote_master_drop(c);
	return bg_fail(err, BG_ECONNECT, "%s: connection lost: the connection master went away",
		       name);
}

static int master_exec_signal(remote_exec *e, int sig, bg_err *err)
{
	remote_conn *c = e->conn;
	strbuf x = STRBUF_INIT, f = STRBUF_INIT;
	mf_put_u32(&x, e->m_id);
	mf_put_u32(&x, (uint32_t)sig);
	mf_add(&f, MF_KILL, x.buf, x.len);
	strbuf_release(&x);
	int w = e->m_id ? remote_master_send(c, f.buf, f.len, -1) : -1;
	strbuf_release(&f);
	if (w < 0)
		return bg_fail(err, BG_ECONNECT,
			       "%s: cannot send the kill: the connection "
			       "master went away",
			       c->target->name);
	/* The master sends the kill on a channel of its own and waits for it
	 * (up to 15 s, remote_ssh_exec_signal), saying nothing meanwhile. */
	e->m_heard_ms = bg_now_ms() + 15000;
	return 0;
}

static void master_exec_free(remote_exec *e)
{
	remote_conn *c = e->conn;
	/* A command left running: the master closes its channel, as a
	 * fresh connection would. */
	if (!e->done && e->m_id && c->mfd >= 0) {
		strbuf x = STRBUF_INIT, f = STRBUF_INIT;
		mf_put_u32(&x, e->m_id);
		mf_add(&f, MF_CLOSE, x.buf, x.len);
		if (remote_master_send(c, f.buf, f.len, -1) < 0)
			remote_master_drop(c);
		strbuf_release(&x);
		strbuf_release(&f);
	}
	unlist(e);
	strbuf_release(&e->m_q);
}

static void master_close(remote_conn *c)
{
	remote_master_drop(c);
}

const struct remote_ops remote_master_ops = {
	.exec_start = master_exec_start,
	.exec_wait = master_exec_wait,
	.exec_signal = master_exec_signal,
	.exec_free = master_exec_free,
	.close = master_close,
};

/* ---- listing and ending ---- */

static bool is_sock_name(const char *n)
{
	size_t len = strlen(n);
	return len == 37 && strcmp(n + 32, ".sock") == 0 && strspn(n, "0123456789abcdef") == 32;
}

static int cmp_info(const void *a, const void *b)
{
	const remote_master_info *x = a, *y = b;
	int r = strcmp(x->box, y->box);
	return r ? r : strcmp(x->path, y->path);
}

int remote_master_list(const char *dir, remote_master_info **out, size_t *n, bg_err *err)
{
	DIR *d = opendir(dir);
	size_t cap = 0;
	*out = NULL;
	*n = 0;
	if (!d)
		return bg_fail(err, BG_EIO, "%s: %s", dir, strerror(errno));
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!is_sock_name(de->d_name))
			continue;
		char *path = xasprintf("%s/%s", dir, de->d_name);
		strbuf in = STRBUF_INIT;
		size_t off = 0;
		struct hello h;
		int fd = dial(path, NULL);
		if (fd < 0 || read_hello(fd, &in, &off, &h) != 0) {
			if (fd >= 0)
				close(fd);
			strbuf_release(&in);
			free(path);
			continue;
		}
		*out = xgrow(*out, &cap, *n + 1, sizeof(**out));
		remote_master_info *m = &(*out)[(*n)++];
		memset(m, 0, sizeof(*m));
		m->path = path;
		m->box = xstrndup(h.box, h.box_n);
		m->target = xstrndup(h.target, h.target_n);
		snprintf(m->fingerprint, sizeof(m->fingerprint), "%.*s", (int)h.fp_n, h.fp);
		m->pid = (pid_t)h.pid;
		m->idle_ms = (long long)h.idle_ms;
		m->persist_ms = (long long)h.persist_ms;
		m->busy = h.type == MF_BUSY;
		close(fd);
		strbuf_release(&in);
	}
	closedir(d);
	if (*n)
		qsort(*out, *n, sizeof(**out), cmp_info);
	return 0;
}

void remote_master_infos_free(remote_master_info *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].path);
		free(v[i].box);
		free(v[i].target);
	}
	free(v);
}

int remote_master_end(const char *path, int wait_ms, pid_t *pid, bg_err *err)
{
	pid_t p = 0;
	int fd = dial(path, &p);
	if (pid)
		*pid = p;
	if (fd < 0)
		return 0;
	int rc = 1;
	if (p <= 1 || kill(p, SIGTERM) != 0)
		rc = bg_fail(err, BG_EIO, "%s: cannot signal its master (pid %d): %s", path, (int)p,
			     strerror(errno));
	close(fd);
	/* It removes its socket as it takes the signal. */
	int64_t deadline = bg_deadline_ms(wait_ms);
	while (rc == 1 && access(path, F_OK) == 0 && bg_now_ms() < deadline) {
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return rc;
}
