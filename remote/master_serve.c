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
#include <sys/epoll.h>
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
#include "remote/master_proto.h"

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

static void send_frame(int fd, int type, const strbuf *payload)
{
	strbuf f = STRBUF_INIT;
	mf_add(&f, type, payload ? payload->buf : NULL, payload ? payload->len : 0);
	mf_write_all(fd, f.buf, f.len);
	strbuf_release(&f);
}

static void send_fail(int fd, int rc, bool retry, const char *msg)
{
	strbuf p = STRBUF_INIT;
	mf_put_u32(&p, (uint32_t)rc);
	mf_put_u32(&p, retry);
	mf_put_str(&p, msg, strlen(msg));
	send_frame(fd, MF_FAIL, &p);
	strbuf_release(&p);
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

struct relay {
	int fd;
	bool gone;
	int64_t sent_ms; /* when the last frame went to the client */
};

/* The command's output, back as the bytes it wrote: a line's newline is
 * restored unless it had none or continues. */
static void relay_line(void *ctx, remote_stream s, const char *line, size_t len, int flags)
{
	struct relay *r = ctx;
	if (r->gone)
		return;
	bool nl = !(flags & (LINE_PARTIAL | LINE_NO_EOL));
	strbuf f = STRBUF_INIT;
	strbuf_addch(&f, (char)(s == REMOTE_STDOUT ? MF_OUT : MF_ERR));
	mf_put_u32(&f, (uint32_t)(len + nl));
	strbuf_add(&f, line, len);
	if (nl)
		strbuf_addch(&f, '\n');
	if (mf_write_all(r->fd, f.buf, f.len) < 0)
		r->gone = true;
	r->sent_ms = bg_now_ms();
	strbuf_release(&f);
}

/* The client's frames during a command: 0, or -1 once it is gone. */
static int client_frames(struct master *m, remote_exec *e, int fd, strbuf *in, size_t *off,
			 unsigned long long *got)
{
	char buf[65536];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		return -1;
	if (n > 0)
		strbuf_add(in, buf, (size_t)n);
	int type, t;
	const char *p;
	size_t len;
	while ((t = mf_take(in, off, &type, &p, &len)) == 1) {
		mf_reader r = {(const unsigned char *)p, len};
		uint32_t sig;
		bg_err err = {0};
		switch (type) {
		case MF_IN:
			remote_exec_write(e, p, len);
			*got += len;
			break;
		case MF_EOF: remote_exec_close_stdin(e); break;
		case MF_KILL:
			if (mf_get_u32(&r, &sig))
				m->c->ops->exec_signal(e, (int)sig, &err);
			keep_alive(m);
			break;
		default: break;
		}
	}
	mf_compact(in, off);
	return t < 0 ? -1 : 0;
}

/* One command for the client on fd. */
static void run_one(struct master *m, int fd, int epfd, strbuf *in, size_t *off, const char *p,
		    size_t n)
{
	remote_conn *c = m->c;
	mf_reader r = {(const unsigned char *)p, n};
	uint32_t flags = 0;
	if (!mf_get_u32(&r, &flags)) {
		send_fail(fd, BG_EPROTO, false, "bad EXEC frame");
		return;
	}
	char *cmdline = xstrndup((const char *)r.p, r.n);
	struct relay rl = {fd, false, 0};
	remote_exec_opts o = {
		.on_line = relay_line, .ctx = &rl, .killable = (flags & MF_KILLABLE) != 0};
	remote_exec *e = NULL;
	bg_err err = {0};
	c->last_rx_ms = bg_now_ms(); /* idle is not silence */
	if (remote_exec_start(c, cmdline, &o, &e, &err) < 0) {
		free(cmdline);
		/* A connection that died while idle: the client goes fresh. */
		send_fail(fd, err.code ? err.code : BG_EREMOTE, c->dead || err.code == BG_ECONNECT,
			  err.msg);
		if (err.code == BG_ECONNECT)
			remote_ssh_mark_dead(c);
		return;
	}
	free(cmdline);
	send_frame(fd, MF_STARTED, NULL);
	rl.sent_ms = bg_now_ms();
	/* A quiet command still gets a frame every keepalive_s: the client
	 * tells a live master from a stopped one as ssh tells a link. */
	int64_t tick_ms = (int64_t)c->keepalive_s * 1000;
	unsigned long long got = 0, acked = 0;
	for (;;) {
		keep_alive(m);
		remote_status st;
		int rc = remote_exec_pump(e, bg_deadline_ms(1000), epfd, &st, &err);
		unsigned long long took = got - remote_exec_stdin_queued(e);
		bool tick = tick_ms > 0 && bg_now_ms() - rl.sent_ms >= tick_ms;
		if ((took != acked || tick) && !rl.gone) {
			strbuf a = STRBUF_INIT;
			mf_put_u64(&a, took);
			send_frame(fd, MF_ACK, &a);
			strbuf_release(&a);
			acked = took;
			rl.sent_ms = bg_now_ms();
		}
		if (rc < 0) {
			send_fail(fd, rc, false, err.msg);
			break;
		}
		if (rc == 1) {
			strbuf s = STRBUF_INIT;
			mf_put_u32(&s, (uint32_t)st.how);
			mf_put_u32(&s, (uint32_t)st.code);
			mf_put_str(&s, st.signal, strlen(st.signal));
			send_frame(fd, MF_STATUS, &s);
			strbuf_release(&s);
			break;
		}
		struct epoll_event ev[2];
		int k = epoll_wait(epfd, ev, 2, 0);
		bool gone = rl.gone;
		for (int i = 0; i < k; i++) {
			if (ev[i].data.fd == m->lfd)
				turn_away(m);
			else if (client_frames(m, e, fd, in, off, &got) < 0)
				gone = true;
		}
		if (gone) {
			/* The client went mid-command. sshd closes a session
			 * channel only once its command has exited, so closing
			 * it here could hold the master for as long: the master
			 * ends instead, as the client's own connection would
			 * have, and the command runs on as it would then. */
			unlink(g_path);
			_exit(0);
		}
	}
	remote_exec_free(e);
}

/* Serves one client until it goes: its commands one after another. True
 * when it ran any (a client that only looked leaves the idle time be). */
static bool serve_client(struct master *m, int fd)
{
	bool ran = false;
	remote_conn *c = m->c;
	strbuf in = STRBUF_INIT;
	size_t off = 0;
	int epfd = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
	struct epoll_event lev = {.events = EPOLLIN, .data.fd = m->lfd};
	if (epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0 ||
	    epoll_ctl(epfd, EPOLL_CTL_ADD, m->lfd, &lev) != 0)
		goto out;
	send_hello(m, fd, MF_HELLO, bg_now_ms() - m->idle_at);
	while (!c->dead) {
		keep_alive(m);
		int type;
		const char *p;
		size_t n;
		int t = mf_take(&in, &off, &type, &p, &n);
		if (t < 0)
			break;
		if (t == 1) {
			if (type == MF_EXEC) {
				run_one(m, fd, epfd, &in, &off, p, n);
				ran = true;
			} else if (type == MF_QUIT)
				g_stop = 1;
			if (g_stop)
				break;
			continue;
		}
		mf_compact(&in, &off);
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
		if (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			char buf[65536];
			ssize_t got = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
				break;
			if (got > 0)
				strbuf_add(&in, buf, (size_t)got);
		}
	}
out:
	if (epfd >= 0)
		close(epfd);
	strbuf_release(&in);
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
	if (c->ops != &remote_ssh_ops || c->dead || c->sftp || c->jump || !c->session ||
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
