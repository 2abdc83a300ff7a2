/* boxgate-agent queue: a waiter's ticket in a pool's line, so that clients waiting
 * for a slot are served in the order they arrived, across clients and machines.
 *
 * The line is a directory of ticket files, LOCK_DIR/queue-NAME/NNNNNNNNNNNN.ticket,
 * each flock'ed by the agent process that holds it for as long as it lives. A ticket is
 * numbered from a counter under its own flock and appears under its final name
 * already locked (made as a temporary name, locked, renamed), so a ticket whose lock
 * can be taken belongs to a dead waiter: whoever finds one removes it. */
#include "gate/agent/agent.h"

#define QUEUE_POLL_MS 50

struct queue {
	char dir[PATH_MAX];
	unsigned long long me;
	int fd;
};

static int ticket_number(const char *name, unsigned long long *n)
{
	char *end;
	if (strlen(name) != 19 || strcmp(name + 12, ".ticket") != 0 ||
	    strspn(name, "0123456789") != 12)
		return 0;
	*n = strtoull(name, &end, 10);
	return 1;
}

/* Opens a file of the line without ever blocking or following a link: anyone who
 * can write the directory could leave a FIFO (open would wait for a writer), a
 * device or a symlink there. -1 for what is not a regular file. */
static int open_regular(const char *path, int flags, mode_t mode)
{
	int fd = open(path, flags | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, mode);
	struct stat st;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	return fd;
}

/* What open_regular's errno means. */
static const char *not_regular_text(int e)
{
	return e == EINVAL  ? "not a regular file"
	       : e == ELOOP ? "a symbolic link (the line's files are never followed)"
			    : strerror(e);
}

/* Live tickets before ours, -1 when the line's directory cannot be read; dead
 * ones found on the way are removed, what is not a ticket is passed by. */
static int ahead_of(struct queue *q)
{
	DIR *d = opendir(q->dir);
	if (!d)
		return -1;
	int ahead = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		unsigned long long n;
		if (!ticket_number(e->d_name, &n) || n >= q->me)
			continue;
		if (e->d_type != DT_REG && e->d_type != DT_UNKNOWN)
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/%s", q->dir, e->d_name);
		int fd = open_regular(path, O_RDONLY, 0);
		if (fd < 0)
			continue; /* gone meanwhile, or no ticket */
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			unlink(path); /* its waiter is gone: the lock was free */
			close(fd);
			continue;
		}
		close(fd);
		ahead++;
	}
	closedir(d);
	return ahead;
}

static void take_ticket(struct queue *q)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	snprintf(path, sizeof path, "%s/counter", q->dir);
	int cfd = open_regular(path, O_RDWR | O_CREAT, 0600);
	if (cfd < 0 || flock(cfd, LOCK_EX) < 0) {
		msg("cannot take a ticket: %s: %s", path, not_regular_text(errno));
		agent_exit(AGENT_EXIT_SYSERR);
	}
	char buf[32] = "";
	ssize_t k = pread(cfd, buf, sizeof buf - 1, 0);
	buf[k > 0 ? k : 0] = 0;
	q->me = strtoull(buf, NULL, 10) + 1;
	int n = snprintf(buf, sizeof buf, "%llu\n", q->me);
	if (pwrite(cfd, buf, (size_t)n, 0) != n || ftruncate(cfd, n) < 0) {
		msg("cannot advance the ticket counter %s: %s", path, strerror(errno));
		agent_exit(AGENT_EXIT_SYSERR);
	}
	snprintf(tmp, sizeof tmp, "%s/.%d.new", q->dir, (int)getpid());
	snprintf(path, sizeof path, "%s/%012llu.ticket", q->dir, q->me);
	unlink(tmp); /* a leftover of a dead agent of this pid, or anything else */
	q->fd = open_regular(tmp, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (q->fd < 0 || flock(q->fd, LOCK_EX) < 0 || rename(tmp, path) < 0) {
		msg("cannot place ticket %s: %s", path, not_regular_text(errno));
		unlink(tmp);
		agent_exit(AGENT_EXIT_SYSERR);
	}
	n = snprintf(buf, sizeof buf, "pid=%d\n", (int)getpid());
	if (write(q->fd, buf, (size_t)n) != n) {
		/* the pid is for people reading the directory; the lock is the truth */
	}
	close(cfd);
}

static void leave(struct queue *q)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%012llu.ticket", q->dir, q->me);
	unlink(path);
	close(q->fd);
}

/* Reads what stdin has; returns 0 at EOF or "done", 1 otherwise. Any line is a
 * heartbeat. */
static int read_client(long long *last_ms)
{
	char buf[512];
	ssize_t k = read(0, buf, sizeof buf);
	if (k == 0)
		return 0;
	if (k < 0)
		return errno == EAGAIN || errno == EINTR;
	*last_ms = bg_now_ms();
	for (ssize_t i = 0; i + 4 <= k; i++)
		if (memcmp(buf + i, "done", 4) == 0)
			return 0;
	return 1;
}

int cmd_queue(int argc, char **argv)
{
	const char *name = NULL, *lock_dir = NULL;
	long long hb_ms = 15000;
	for (int i = 0; i < argc; i++) {
		const char *v;
		if ((v = opt_value(argc, argv, &i, AGENT_OPT_NAME)))
			name = v;
		else if ((v = opt_value(argc, argv, &i, AGENT_OPT_LOCK_DIR)))
			lock_dir = v;
		else if ((v = opt_value(argc, argv, &i, AGENT_OPT_HEARTBEAT))) {
			hb_ms = parse_secs(v);
			if (hb_ms < 0)
				usage_fail("queue: bad --heartbeat '%s'", v);
		} else
			usage_fail("queue: unknown argument '%s'", argv[i]);
	}
	if (!name || !*name ||
	    strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			 "0123456789._-") != strlen(name))
		usage_fail("queue needs --name NAME ([A-Za-z0-9._-]+)");
	struct queue q = {.fd = -1};
	snprintf(q.dir, sizeof q.dir, "%s/queue-%s", lock_dir ? lock_dir : agent_default_lock_dir(),
		 name);
	if (agent_mkdir_p(q.dir) < 0) {
		msg("cannot create queue directory %s: %s", q.dir, strerror(errno));
		return AGENT_EXIT_SYSERR;
	}
	signal(SIGPIPE, SIG_IGN);
	fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
	take_ticket(&q);
	print_line("ticket %llu", q.me);
	out_flush(bg_now_ms() + 1000);
	long long last = bg_now_ms();
	int said = -1, rc = 0;
	for (;;) {
		int ahead = ahead_of(&q);
		if (ahead < 0) {
			msg("queue: cannot read the line %s: %s", q.dir, strerror(errno));
			rc = AGENT_EXIT_SYSERR;
			break;
		}
		if (ahead != said) {
			if (ahead == 0)
				print_line("head");
			else
				print_line("ahead %d", ahead);
			out_flush(bg_now_ms() + 1000);
			said = ahead;
		}
		struct pollfd p = {.fd = 0, .events = POLLIN};
		if (poll(&p, 1, QUEUE_POLL_MS) > 0 && !read_client(&last))
			break; /* done, or the client is gone: the ticket goes */
		if (hb_ms && bg_now_ms() - last > hb_ms) {
			msg("queue: no heartbeat for %lld ms: leaving the line", hb_ms);
			rc = AGENT_EXIT_CLIENT_GONE;
			break;
		}
	}
	leave(&q);
	return rc;
}
