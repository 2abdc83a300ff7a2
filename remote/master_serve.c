/* Connection masters, the master's half: at the close of a fresh, healthy
 * connection the process forks a background master that takes over its
 * authenticated session (remote_master_detach), and the master serves
 * commands over its Unix socket, one client at a time, until it has been
 * idle for the target's control_persist_ms, its SSH connection dies, it is
 * told to end (SIGTERM: `boxgate disconnect`), or a client finds its host
 * key no longer in known_hosts (QUIT).
 *
 * The fork happens where the closing thread is: a multi-threaded process
 * (exec's fan-out). The master touches only what it inherited from that
 * thread's connection, plus malloc (glibc resets its locks at fork) and
 * libssh2's crypto. Should it ever wedge, its alarm ends it and clients,
 * which wait only briefly for its greeting, go fresh meanwhile. */
#include "remote/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/random.h"
#include "base/timer.h"
#include "base/xmalloc.h"
#include "remote/master.h"
#include "remote/master_files.h"
#include "remote/master_proto.h"
#include "remote/master_serve.h"

/* The master's own state (a process of its own: one master, one set). */
static volatile sig_atomic_t g_stop;
static char g_path[108];

struct master {
	remote_conn *c;
	int lfd;         /* the listening socket */
	int64_t idle_at; /* when the last command ended */
	strbuf hello;    /* HELLO's payload: BUSY says the same */
	unsigned alarm_s;
	ino_t ino; /* its socket's: a master whose name was taken or removed ends */
};

/* How often an idle master looks at its socket's name. */
#define NAME_CHECK_MS 2000

static bool name_is_ours(const struct master *m)
{
	struct stat st;
	return lstat(g_path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == m->ino;
}

static void on_term(int sig)
{
	(void)sig;
	g_stop = 1;
	/* No new client finds it; a command running finishes. */
	unlink(g_path);
}

/* Re-armed while the master makes progress; a wedged master is ended. */
static void keep_alive(const struct master *m)
{
	alarm(m->alarm_s);
}

static void build_hello(struct master *m)
{
	remote_conn *c = m->c;
	const remote_target *t = c->target;
	size_t keylen = 0;
	int type = 0;
	const char *key = libssh2_session_hostkey(c->session, &keylen, &type);
	char target[512];
	snprintf(target, sizeof(target), "%s@%s:%d", t->user ? t->user : "root", t->hostname,
		 t->port);
	mf_put_u32(&m->hello, MF_PROTO_VERSION);
	mf_put_u32(&m->hello, (uint32_t)getpid());
	mf_put_u64(&m->hello, (uint64_t)t->control_persist_ms);
	mf_put_u64(&m->hello, 0); /* idle time: patched as it is sent */
	mf_put_str(&m->hello, t->name, strlen(t->name));
	mf_put_str(&m->hello, target, strlen(target));
	mf_put_str(&m->hello, key ? key : "", key ? keylen : 0);
	mf_put_str(&m->hello, c->fingerprint, strlen(c->fingerprint));
}

static void send_hello(struct master *m, int fd, int type, int64_t idle_ms)
{
	strbuf f = STRBUF_INIT, p = STRBUF_INIT;
	strbuf_add(&p, m->hello.buf, m->hello.len);
	strbuf tmp = STRBUF_INIT;
	mf_put_u64(&tmp, (uint64_t)(idle_ms > 0 ? idle_ms : 0));
	memcpy(p.buf + 16, tmp.buf, 8);
	mf_add(&f, type, p.buf, p.len);
	mf_write_all(fd, f.buf, f.len);
	strbuf_release(&f);
	strbuf_release(&p);
	strbuf_release(&tmp);
}

/* A client of our uid, or nothing. A peer of another uid means the socket
 * or its directory is open to others: the master ends rather than stay
 * where it can be reached. */
static int accept_ours(int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return -1;
	struct ucred cr;
	socklen_t len = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || cr.uid != getuid()) {
		close(fd);
		g_stop = 1;
		unlink(g_path);
		return -1;
	}
	return fd;
}

/* A second client while one is served: told so, it goes fresh. */
static void turn_away(struct master *m)
{
	int fd = accept_ours(m->lfd);
	if (fd < 0)
		return;
	send_hello(m, fd, MF_BUSY, 0);
	close(fd);
}

/* One command running for the client. */
struct mexec {
	uint32_t id;
	remote_exec *e;
	struct master_client *cl;
	unsigned long long got, acked; /* stdin bytes from the client; those acked */
	int64_t sent_ms;               /* its last frame */
};

void mc_send(struct master_client *cl, int type, const void *p, size_t n)
{
	if (cl->gone)
		return;
	strbuf f = STRBUF_INIT;
	mf_add(&f, type, p, n);
	if (mf_write_all(cl->fd, f.buf, f.len) < 0)
		cl->gone = true;
	strbuf_release(&f);
	cl->sent_ms = bg_now_ms();
}

/* A command's frame: its id first. */
static void x_send(struct mexec *x, int type, const strbuf *payload)
{
	strbuf p = STRBUF_INIT;
	mf_put_u32(&p, x->id);
	if (payload)
		strbuf_add(&p, payload->buf, payload->len);
	mc_send(x->cl, type, p.buf, p.len);
	strbuf_release(&p);
	x->sent_ms = bg_now_ms();
}

static void x_fail(struct master_client *cl, uint32_t id, int rc, bool retry, const char *msg)
{
	strbuf p = STRBUF_INIT;
	mf_put_u32(&p, id);
	mf_put_u32(&p, (uint32_t)rc);
	mf_put_u32(&p, retry);
	mf_put_str(&p, msg, strlen(msg));
	mc_send(cl, MF_FAIL, p.buf, p.len);
	strbuf_release(&p);
}

/* The command's output, back as the bytes it wrote: a line's newline is
 * restored unless it had none or continues. */
static void relay_line(void *ctx, remote_stream s, const char *line, size_t len, int flags)
{
	struct mexec *x = ctx;
	bool nl = !(flags & (LINE_PARTIAL | LINE_NO_EOL));
	strbuf b = STRBUF_INIT;
	strbuf_add(&b, line, len);
	if (nl)
		strbuf_addch(&b, '\n');
	x_send(x, s == REMOTE_STDOUT ? MF_OUT : MF_ERR, &b);
	strbuf_release(&b);
}

static struct mexec *find_x(struct master_client *cl, uint32_t id)
{
	for (size_t i = 0; i < cl->n_x; i++)
		if (cl->x[i].id == id)
			return &cl->x[i];
	return NULL;
}

static void start_x(struct master_client *cl, const char *p, size_t n)
{
	remote_conn *c = cl->c;
	mf_reader r = {(const unsigned char *)p, n};
	uint32_t id = 0, flags = 0;
	if (!mf_get_u32(&r, &id) || !mf_get_u32(&r, &flags) || find_x(cl, id)) {
		x_fail(cl, id, BG_EPROTO, false, "bad EXEC frame");
		return;
	}
	char *cmdline = xstrndup((const char *)r.p, r.n);
	cl->x = xgrow(cl->x, &cl->cap_x, cl->n_x + 1, sizeof(*cl->x));
	/* The array may move: the relay's context is found by id. */
	struct mexec *x = &cl->x[cl->n_x];
	*x = (struct mexec){.id = id, .cl = cl};
	remote_exec_opts o = {
		.on_line = relay_line, .ctx = NULL, .killable = (flags & MF_KILLABLE) != 0};
	bg_err err = {0};
	c->last_rx_ms = bg_now_ms(); /* idle is not silence */
	remote_exec *e = NULL;
	if (remote_exec_start(c, cmdline, &o, &e, &err) < 0) {
		free(cmdline);
		/* A connection that died while idle: the client goes fresh. */
		x_fail(cl, id, err.code ? err.code : BG_EREMOTE, c->dead || err.code == BG_ECONNECT,
		       err.msg);
		if (err.code == BG_ECONNECT)
			remote_ssh_mark_dead(c);
		return;
	}
	free(cmdline);
	x->e = e;
	cl->n_x++;
	x_send(x, MF_STARTED, NULL);
}

/* The relay's context: the command's entry, wherever the array is now. */
static void fix_ctx(struct master_client *cl)
{
	for (size_t i = 0; i < cl->n_x; i++)
		cl->x[i].e->opts.ctx = &cl->x[i];
}

static void drop_x(struct master_client *cl, size_t i)
{
	remote_exec_free(cl->x[i].e);
	cl->x[i] = cl->x[--cl->n_x];
}

void mc_dispatch(struct master_client *cl, int type, const char *p, size_t n)
{
	mf_reader r = {(const unsigned char *)p, n};
	uint32_t id = 0, sig;
	if (type == MF_QUIT) {
		g_stop = 1;
		return;
	}
	if (type == MF_EXEC) {
		start_x(cl, p, n);
		fix_ctx(cl);
		return;
	}
	if (type != MF_IN && type != MF_EOF && type != MF_KILL && type != MF_CLOSE)
		return;
	struct mexec *x = mf_get_u32(&r, &id) ? find_x(cl, id) : NULL;
	if (!x)
		return;
	if (type == MF_CLOSE) {
		drop_x(cl, (size_t)(x - cl->x));
		fix_ctx(cl);
		return;
	}
	bg_err err = {0};
	switch (type) {
	case MF_IN:
		remote_exec_write(x->e, r.p, r.n);
		x->got += r.n;
		break;
	case MF_EOF: remote_exec_close_stdin(x->e); break;
	case MF_KILL:
		if (mf_get_u32(&r, &sig))
			cl->c->ops->exec_signal(x->e, (int)sig, &err);
		keep_alive(cl->m);
		break;
	default: break;
	}
}

bool mc_read(struct master_client *cl)
{
	if (cl->gone)
		return false;
	ssize_t n = mf_recv(cl->fd, &cl->in, &cl->passed_fd);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		cl->gone = true;
	if (n > 0)
		cl->heard_ms = bg_now_ms();
	return !cl->gone;
}

void mc_tick(struct master_client *cl)
{
	keep_alive(cl->m);
	struct pollfd pf = {.fd = cl->m->lfd, .events = POLLIN};
	if (poll(&pf, 1, 0) > 0 && (pf.revents & POLLIN))
		turn_away(cl->m);
	int64_t tick_ms = (int64_t)cl->c->keepalive_s * 1000;
	if (tick_ms > 0 && bg_now_ms() - cl->sent_ms >= tick_ms)
		mc_send(cl, MF_KEEP, NULL, 0);
}

void mc_end(void)
{
	unlink(g_path);
	_exit(0);
}

int64_t mc_silence_ms(const struct master_client *cl)
{
	int ka = cl->c->keepalive_s;
	return ka > 0 ? (int64_t)ka * 3000 + 1000 : 0;
}

/* Moves every running command on: its output and status to the client,
 * what it took of its input acked (and an ACK every keepalive_s). True
 * when any sent something (more may be waiting in the session). */
static bool pump_all(struct master_client *cl)
{
	bool moved = false;
	int64_t tick_ms = (int64_t)cl->c->keepalive_s * 1000;
	for (size_t i = 0; i < cl->n_x;) {
		struct mexec *x = &cl->x[i];
		int64_t before = x->sent_ms;
		remote_status st;
		bg_err err = {0};
		int rc = remote_exec_wait(x->e, bg_now_ms(), &st, &err);
		unsigned long long took = x->got - remote_exec_stdin_queued(x->e);
		bool tick = tick_ms > 0 && bg_now_ms() - x->sent_ms >= tick_ms;
		if (took != x->acked || tick) {
			strbuf a = STRBUF_INIT;
			mf_put_u64(&a, took);
			x_send(x, MF_ACK, &a);
			strbuf_release(&a);
			x->acked = took;
		}
		if (rc < 0 || rc == 1) {
			if (rc < 0) {
				x_fail(cl, x->id, rc, false, err.msg);
			} else {
				strbuf s = STRBUF_INIT;
				mf_put_u32(&s, (uint32_t)st.how);
				mf_put_u32(&s, (uint32_t)st.code);
				mf_put_str(&s, st.signal, strlen(st.signal));
				x_send(x, MF_STATUS, &s);
				strbuf_release(&s);
			}
			drop_x(cl, i);
			fix_ctx(cl);
			moved = true;
			continue;
		}
		/* Read but nothing to send (the status trailer, its EOF in the
		 * same packet): the close is the next round's, not the socket's. */
		moved |= (x->sent_ms != before && !tick) || x->e->more;
		i++;
	}
	return moved;
}

/* A client found gone by a write that failed (its socket closed) may have
 * closed its commands (or sent QUIT) before it went, in frames not read
 * yet: the master was busy, then had a frame for it (an ACK, a KEEP) before
 * it read. What it said before it went still counts, as it would had the
 * master read first; a command or file call from a client that is gone
 * starts nothing. What is read is bounded: the socket's buffer, a few MiB. */
static void last_words(struct master_client *cl)
{
	for (int i = 0; i < 64 && mf_recv(cl->fd, &cl->in, &cl->passed_fd) > 0; i++)
		;
	int type;
	const char *p;
	size_t n;
	while (mf_take(&cl->in, &cl->off, &type, &p, &n) == 1)
		if (type != MF_EXEC && type != MF_OP)
			mc_dispatch(cl, type, p, n);
}

/* Serves one client until it goes: its commands (several may run at once)
 * and file transfers. True when it ran any (a client that only looked
 * leaves the idle time be). */
static bool serve_client(struct master *m, int fd)
{
	bool ran = false;
	remote_conn *c = m->c;
	struct master_client cl = {.m = m, .c = c, .fd = fd, .in = STRBUF_INIT, .passed_fd = -1};
	cl.heard_ms = cl.sent_ms = bg_now_ms();
	send_hello(m, fd, MF_HELLO, bg_now_ms() - m->idle_at);
	while (!c->dead && !cl.gone) {
		keep_alive(m);
		int type, t = 0;
		const char *p;
		size_t n;
		while (!g_stop && (t = mf_take(&cl.in, &cl.off, &type, &p, &n)) == 1) {
			if (type == MF_OP) {
				remote_master_serve_op(&cl, p, n);
				ran = true;
			} else {
				mc_dispatch(&cl, type, p, n);
				ran |= type == MF_EXEC;
			}
		}
		if (g_stop || t < 0 || cl.gone || c->dead)
			break;
		mf_compact(&cl.in, &cl.off);
		bool moved = pump_all(&cl);
		if (c->dead)
			break;
		if (cl.n_x > 0) {
			/* Commands run: the session's socket (keepalives, a silent
			 * box) and the client's. */
			int w = remote_ssh_wait_socket(
				c, moved ? bg_now_ms() : bg_deadline_ms(1000), fd);
			if (w < 0) {
				for (size_t i = 0; i < cl.n_x; i++)
					x_fail(&cl, cl.x[i].id, BG_ECONNECT, false,
					       "connection lost: no reply from the box");
				remote_ssh_mark_dead(c);
				break;
			}
			mc_tick(&cl);
			if (w > 0)
				mc_read(&cl);
			continue;
		}
		struct pollfd pf[3] = {{.fd = fd, .events = POLLIN},
				       {.fd = m->lfd, .events = POLLIN},
				       {.fd = c->sock, .events = POLLRDHUP}};
		int r = poll(pf, 3, 1000);
		if (r < 0 && errno != EINTR)
			break;
		if (pf[2].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
			remote_ssh_mark_dead(c);
			break;
		}
		if (pf[1].revents & POLLIN)
			turn_away(m);
		if (pf[0].revents & (POLLIN | POLLHUP | POLLERR))
			mc_read(&cl);
	}
	if (cl.gone && !c->dead)
		last_words(&cl);
	if (cl.n_x > 0 && !c->dead) {
		/* The client went mid-command. sshd closes a session channel
		 * only once its command has exited, so closing it here could
		 * hold the master for as long: the master ends instead, as the
		 * client's own connection would have, and the command runs on
		 * as it would then. */
		unlink(g_path);
		_exit(0);
	}
	while (cl.n_x > 0)
		drop_x(&cl, cl.n_x - 1);
	free(cl.x);
	if (cl.passed_fd >= 0)
		close(cl.passed_fd);
	strbuf_release(&cl.in);
	return ran;
}

/* Closes every descriptor but the ones the master keeps; stdio goes to
 * /dev/null (a test harness reading our caller's pipes must see them close). */
static void own_fds(const int *keep, int n_keep)
{
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd < 3; fd++) {
		bool kept = false;
		for (int i = 0; i < n_keep; i++)
			kept |= keep[i] == fd;
		if (!kept && nul >= 0)
			dup2(nul, fd);
	}
	unsigned from = 3;
	for (;;) {
		int next = -1; /* the lowest kept fd at or above `from` */
		for (int i = 0; i < n_keep; i++)
			if (keep[i] >= (int)from && (next < 0 || keep[i] < next))
				next = keep[i];
		if (next < 0) {
			close_range(from, ~0u, 0);
			break;
		}
		if ((unsigned)next > from)
			close_range(from, (unsigned)next - 1, 0);
		from = (unsigned)next + 1;
	}
}

static void own_signals(void)
{
	sigset_t all;
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	struct sigaction ign = {.sa_handler = SIG_IGN}, term = {.sa_handler = on_term},
			 dfl = {.sa_handler = SIG_DFL};
	sigemptyset(&ign.sa_mask);
	sigemptyset(&term.sa_mask);
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGPIPE, &ign, NULL);
	sigaction(SIGHUP, &ign, NULL);
	sigaction(SIGINT, &ign, NULL);
	sigaction(SIGQUIT, &ign, NULL);
	sigaction(SIGTERM, &term, NULL);
	sigaction(SIGALRM, &dfl, NULL);
	sigaction(SIGCHLD, &dfl, NULL);
}

static _Noreturn void master_main(remote_conn *c, int lfd, int lock_fd, const char *path)
{
	struct master m = {.c = c, .lfd = lfd, .hello = STRBUF_INIT};
	const remote_target *t = c->target;
	snprintf(g_path, sizeof(g_path), "%s", path);
	setsid();
	prctl(PR_SET_NAME, "boxgate-master", 0, 0, 0);
	int keep[3] = {c->sock, lfd, lock_fd};
	own_fds(keep, 3);
	own_signals();
	m.alarm_s = (unsigned)(t->control_persist_ms / 1000) + 60;
	keep_alive(&m);
	build_hello(&m);
	/* Listening only now: a client's peer credentials name this process. */
	struct stat st;
	if (listen(lfd, 16) != 0 || lstat(g_path, &st) != 0)
		g_stop = 1;
	m.ino = st.st_ino;
	/* The next command's channel, opened while no one waits for it. */
	remote_ssh_open_spare(c);
	/* Idle, the master sends no SSH keepalive: nothing would read the
	 * replies (libssh2 reads only for a channel) and they would pile up.
	 * TCP keepalives at keepalive_s stand in: a link gone silent fails the
	 * socket after about four intervals, and the poll below sees it. */
	if (c->keepalive_s) {
		int one = 1, s = c->keepalive_s, cnt = 3;
		unsigned ms = (unsigned)c->keepalive_s * 4000;
		setsockopt(c->sock, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
		setsockopt(c->sock, IPPROTO_TCP, TCP_KEEPIDLE, &s, sizeof(s));
		setsockopt(c->sock, IPPROTO_TCP, TCP_KEEPINTVL, &s, sizeof(s));
		setsockopt(c->sock, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
		setsockopt(c->sock, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms));
	}
	m.idle_at = bg_now_ms();
	while (!g_stop && !c->dead) {
		int64_t end = m.idle_at + t->control_persist_ms;
		if (bg_now_ms() >= end)
			break;
		int64_t wake = end;
		if (!name_is_ours(&m)) {
			/* Someone removed or replaced it: no client can reach us. */
			g_path[0] = '\0';
			break;
		}
		if (bg_now_ms() + NAME_CHECK_MS < wake)
			wake = bg_now_ms() + NAME_CHECK_MS;
		keep_alive(&m);
		struct pollfd pf[2] = {{.fd = lfd, .events = POLLIN},
				       {.fd = c->sock, .events = POLLRDHUP}};
		int r = poll(pf, 2, bg_poll_timeout(wake));
		if (r < 0 && errno != EINTR)
			break;
		if (r <= 0)
			continue;
		if (pf[1].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
			remote_ssh_mark_dead(c);
			break;
		}
		if (pf[0].revents & POLLIN) {
			int fd = accept_ours(lfd);
			if (fd < 0)
				continue;
			if (serve_client(&m, fd))
				m.idle_at = bg_now_ms();
			close(fd);
			remote_ssh_open_spare(c);
		}
	}
	/* We hold the lock: the name is still ours to remove. */
	if (g_path[0])
		unlink(g_path);
	if (!c->dead) {
		libssh2_session_set_blocking(c->session, 1);
		libssh2_session_set_timeout(c->session, 2000);
		libssh2_session_disconnect(c->session, "boxgate master done");
	}
	_exit(0);
}

bool remote_master_detach(remote_conn *c)
{
	const remote_target *t = c->target;
	char *dir = NULL, *path = NULL, *lock = NULL, *tmp = NULL;
	int lock_fd = -1, lfd = -1;
	bool done = false;
	if (c->ops != &remote_ssh_ops || c->dead || c->jump || !c->session ||
	    !libssh2_userauth_authenticated(c->session) || remote_master_dir(&dir, NULL) < 0)
		goto out;
	path = remote_master_path(t, dir);
	if (!path)
		goto out;
	/* One master per box: it holds this lock for its whole life. */
	lock = xasprintf("%.*s.lock", (int)(strlen(path) - 5), path);
	lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB) != 0)
		goto out;
	/* Bound under a name of its own, closed to others, then moved in
	 * place: no client ever meets a socket that is open to others. */
	char rnd[9];
	bg_random_hex(rnd, 4);
	tmp = xasprintf("%.*s.%s", (int)(strlen(path) - 5), path, rnd);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", tmp);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		goto out;
	if (chmod(tmp, 0600) != 0 || rename(tmp, path) != 0) {
		unlink(tmp);
		goto out;
	}
	pid_t pid = fork();
	if (pid == 0) {
		/* Twice: the master is no child of ours to reap or wait for. */
		pid_t grand = fork();
		if (grand != 0)
			_exit(grand < 0);
		master_main(c, lfd, lock_fd, path);
	}
	int status = 1;
	if (pid > 0)
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		unlink(path);
		goto out;
	}
	/* The master has the session now: not a byte more from us on it.
	 * libssh2_session_free sends nothing on a dead connection, and what it
	 * would write goes to /dev/null. */
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nul < 0 || dup2(nul, c->sock) < 0) {
		close(c->sock); /* never shut: that would end the master's connection */
		c->sock = -1;
	}
	if (nul >= 0)
		close(nul);
	c->dead = true;
	done = true;
out:
	if (lfd >= 0)
		close(lfd);
	if (lock_fd >= 0)
		close(lock_fd);
	free(dir);
	free(path);
	free(lock);
	free(tmp);
	return done;
}
