/* boxgate-agent queue: a waiter's ticket in a pool's line, so that clients waiting
 * for a slot are served in the order they arrived, across clients and machines.
 *
 * The line is a directory of ticket files, LOCK_DIR/queue-NAME/NNNNNNNNNNNN.ticket,
 * each flock'ed by the agent process that holds it for as long as it lives. A ticket is
 * numbered from a counter under its own flock and appears under its final name
 * already locked (made as a temporary name, locked, renamed), so a ticket whose lock
 * can be taken belongs to a dead waiter: whoever finds one removes it. */
#include "gate/agent/options.h"
#include "gate/agent/slots.h"
#include "gate/agent/serve.h"

#define QUEUE_POLL_MS 50

struct queue {
	char dir[PATH_MAX];
	unsigned long long me;
	int fd;
	const char *tag; /* who waits (--tag), NULL: not said */
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
	if (q->fd >= 0) {
		/* who waits, written before the ticket shows, for `queue-list`: the
		 * record is for people; the lock is the truth */
		char since[32], rec[600];
		time_t t = time(NULL);
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", &tm);
		int r = snprintf(rec, sizeof rec, "pid=%d\ntag=", (int)getpid());
		for (const char *c = q->tag ? q->tag : ""; *c && r < 500; c++)
			rec[r++] = (unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c;
		r += snprintf(rec + r, sizeof rec - (size_t)r, "\nsince=%s\n", since);
		if (write(q->fd, rec, (size_t)r) != r) {
			/* a ticket without its record still holds its place */
		}
	}
	if (q->fd < 0 || flock(q->fd, LOCK_EX) < 0 || rename(tmp, path) < 0) {
		msg("cannot place ticket %s: %s", path, not_regular_text(errno));
		unlink(tmp);
		agent_exit(AGENT_EXIT_SYSERR);
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

/* A pool's name as the line's directory takes it; usage error otherwise. */
static void check_name(const char *cmd, const char *name)
{
	if (!name || !*name ||
	    strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			 "0123456789._-") != strlen(name))
		usage_fail("%s needs --name NAME ([A-Za-z0-9._-]+)", cmd);
}

/* The words of queue and queue-list: --name and --lock-dir for both, --tag
 * and --heartbeat for queue (with_ticket). The line's directory into dir. */
struct queue_opts {
	const char *name, *lock_dir, *tag;
	long long hb_ms;
};

static void queue_opts(const char *cmd, int argc, char **argv, bool with_ticket,
		       struct queue_opts *o, char *dir, size_t dir_n)
{
	*o = (struct queue_opts){.hb_ms = 15000};
	for (int i = 0; i < argc; i++) {
		const char *v;
		if ((v = opt_value(argc, argv, &i, AGENT_OPT_NAME)))
			o->name = v;
		else if ((v = opt_value(argc, argv, &i, AGENT_OPT_LOCK_DIR)))
			o->lock_dir = v;
		else if (with_ticket && (v = opt_value(argc, argv, &i, AGENT_OPT_TAG)))
			o->tag = v;
		else if (with_ticket && (v = opt_value(argc, argv, &i, AGENT_OPT_HEARTBEAT))) {
			o->hb_ms = parse_secs(v);
			if (o->hb_ms < 0)
				usage_fail("%s: bad --heartbeat '%s'", cmd, v);
		} else
			usage_fail("%s: unknown argument '%s'", cmd, argv[i]);
	}
	check_name(cmd, o->name);
	snprintf(dir, dir_n, "%s/queue-%s", o->lock_dir ? o->lock_dir : agent_default_lock_dir(),
		 o->name);
}

int cmd_queue(int argc, char **argv)
{
	struct queue_opts o;
	char dir[PATH_MAX];
	queue_opts("queue", argc, argv, true, &o, dir, sizeof dir);
	const char *tag = o.tag;
	long long hb_ms = o.hb_ms;
	struct queue q = {.fd = -1, .tag = tag};
	snprintf(q.dir, sizeof q.dir, "%s", dir);
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

/* One ticket of the line, as queue-list reads it. */
struct waiter {
	unsigned long long n;
	char pid[24], tag[512], since[40];
};

static int waiter_cmp(const void *a, const void *b)
{
	const struct waiter *x = a, *y = b;
	return (x->n > y->n) - (x->n < y->n);
}

/* The value of "key=" in a ticket's record ("" when absent). */
static void ticket_value(const char *rec, const char *key, char *out, size_t n)
{
	size_t kl = strlen(key);
	out[0] = 0;
	for (const char *l = rec; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, key, kl) == 0 && l[kl] == '=') {
			size_t len = strcspn(l + kl + 1, "\n");
			snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), l + kl + 1);
			return;
		}
}

int cmd_queue_list(int argc, char **argv)
{
	struct queue_opts o;
	char dir[PATH_MAX];
	queue_opts("queue-list", argc, argv, false, &o, dir, sizeof dir);
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0
				       : (msg("queue-list: cannot read the line %s: %s", dir,
					      strerror(errno)),
					  AGENT_EXIT_SYSERR);
	struct waiter *w = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		unsigned long long num;
		if (!ticket_number(e->d_name, &num) ||
		    (e->d_type != DT_REG && e->d_type != DT_UNKNOWN))
			continue;
		char path[PATH_MAX], rec[1024] = "";
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		int fd = open_regular(path, O_RDONLY, 0);
		if (fd < 0)
			continue; /* gone meanwhile, or no ticket */
		ssize_t k = pread(fd, rec, sizeof rec - 1, 0);
		rec[k > 0 ? k : 0] = 0;
		close(fd);
		if (!agent_flock_held(path))
			continue; /* its waiter is gone */
		if (n == cap) {
			cap = cap ? 2 * cap : 8;
			w = xrealloc(w, cap * sizeof(*w));
		}
		w[n].n = num;
		ticket_value(rec, "pid", w[n].pid, sizeof w[n].pid);
		ticket_value(rec, "tag", w[n].tag, sizeof w[n].tag);
		ticket_value(rec, "since", w[n].since, sizeof w[n].since);
		n++;
	}
	closedir(d);
	if (n > 1)
		qsort(w, n, sizeof(*w), waiter_cmp);
	for (size_t i = 0; i < n; i++) {
		strbuf b = STRBUF_INIT;
		char *end;
		long pid = strtol(w[i].pid, &end, 10);
		strbuf_addf(&b, "{\"ticket\":%llu,\"position\":%zu,\"pid\":", w[i].n, i + 1);
		if (*w[i].pid && !*end && pid > 0)
			strbuf_addf(&b, "%ld", pid);
		else
			strbuf_addstr(&b, "null");
		strbuf_addstr(&b, ",\"tag\":\"");
		json_escape(&b, w[i].tag);
		strbuf_addstr(&b, "\",\"since\":\"");
		json_escape(&b, w[i].since);
		strbuf_addstr(&b, "\"}");
		print_line("%s", b.buf);
		strbuf_release(&b);
	}
	free(w);
	return 0;
}
