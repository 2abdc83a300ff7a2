/* exec's standard input, straight through or through a spool
 * (remote/exec_input.h). */
#include "remote/exec_input.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/xmalloc.h"

#define READ_CHUNK 65536
/* How far the spool runs ahead of the fastest box still reading. */
#define SPOOL_WINDOW (4u << 20)

struct exec_input_tap {
	exec_input *in;
	int wake; /* direct: the input itself; spool: an eventfd the reader bumps, -1 when shut */
	off_t off;
	bool done;
};

struct exec_input {
	int fd;
	bool direct;
	exec_input_tap *taps;
	size_t n;
	/* spool */
	int spool;
	int stop[2]; /* written once to end the reader's wait on fd */
	pthread_t reader;
	bool reader_started;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a box took bytes, finished, or the reader must stop */
	off_t len;         /* bytes in the spool */
	bool eof, stopping;
	char error[256];
};

static void set_error(exec_input *in, const char *what, int e)
{
	if (!in->error[0] && e != EBADF) /* no stdin at all reads as empty */
		snprintf(in->error, sizeof(in->error), "%s: %s", what, strerror(e));
}

static int open_spool(bg_err *err)
{
	const char *dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	char *path = xasprintf("%s/boxgate-stdin-XXXXXX", dir);
	fd = mkostemp(path, O_CLOEXEC);
	if (fd >= 0)
		unlink(path);
	else
		bg_fail(err, BG_EIO, "cannot make a spool for standard input in %s: %s", dir,
			strerror(errno));
	free(path);
	return fd;
}

/* The reader reads on while some box still reading is within a window of
 * the spool's end. Called with mu held. */
static bool wanted(const exec_input *in)
{
	for (size_t i = 0; i < in->n; i++)
		if (!in->taps[i].done && in->len - in->taps[i].off < (off_t)SPOOL_WINDOW)
			return true;
	return false;
}

/* Called with mu held: a tap's wake fd is closed under it. */
static void wake_taps(exec_input *in)
{
	uint64_t one = 1;
	for (size_t i = 0; i < in->n; i++) {
		if (in->taps[i].wake < 0)
			continue;
		/* EAGAIN: a full counter already says "look". */
		ssize_t w = write(in->taps[i].wake, &one, sizeof(one));
		(void)w;
	}
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void *reader(void *arg)
{
	exec_input *in = arg;
	char *buf = xmalloc(READ_CHUNK);
	for (bool end = false; !end;) {
		pthread_mutex_lock(&in->mu);
		while (!in->stopping && !wanted(in))
			pthread_cond_wait(&in->cv, &in->mu);
		end = in->stopping;
		pthread_mutex_unlock(&in->mu);
		if (end)
			break;
		struct pollfd p[2] = {{.fd = in->fd, .events = POLLIN},
				      {.fd = in->stop[0], .events = POLLIN}};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!p[0].revents)
			continue;
		ssize_t r = read(in->fd, buf, READ_CHUNK);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		pthread_mutex_lock(&in->mu);
		if (r < 0)
			set_error(in, "reading standard input", errno);
		else if (r > 0 && write_all(in->spool, buf, (size_t)r) < 0)
			set_error(in, "writing the spool of standard input", errno);
		else
			in->len += r;
		end = r <= 0 || in->error[0];
		in->eof = end;
		wake_taps(in);
		pthread_mutex_unlock(&in->mu);
	}
	free(buf);
	return NULL;
}

int exec_input_open(int fd, size_t n_boxes, exec_input **out, bg_err *err)
{
	exec_input *in = xcalloc(1, sizeof(*in));
	in->fd = fd;
	in->n = n_boxes;
	in->direct = n_boxes <= 1;
	in->spool = in->stop[0] = in->stop[1] = -1;
	in->taps = xcalloc(n_boxes ? n_boxes : 1, sizeof(*in->taps));
	pthread_mutex_init(&in->mu, NULL);
	pthread_cond_init(&in->cv, NULL);
	for (size_t i = 0; i < n_boxes; i++) {
		in->taps[i].in = in;
		in->taps[i].wake = -1;
	}
	*out = in;
	if (in->direct)
		return 0;
	if (pipe2(in->stop, O_CLOEXEC) < 0)
		goto fail_errno;
	if ((in->spool = open_spool(err)) < 0)
		goto fail;
	if (pthread_create(&in->reader, NULL, reader, in) != 0)
		goto fail_errno;
	in->reader_started = true;
	return 0;
fail_errno:
	bg_fail(err, BG_EIO, "cannot set up standard input for %zu boxes: %s", n_boxes,
		strerror(errno));
fail:
	exec_input_free(in);
	*out = NULL;
	return err->code;
}

int exec_input_tap_open(exec_input *in, size_t i, exec_input_tap **out, bg_err *err)
{
	exec_input_tap *t = &in->taps[i];
	*out = NULL;
	int fd = in->direct ? in->fd : eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
	if (fd < 0)
		return bg_fail(err, BG_EIO, "cannot set up standard input for the command: %s",
			       strerror(errno));
	pthread_mutex_lock(&in->mu);
	t->wake = fd;
	pthread_mutex_unlock(&in->mu);
	*out = t;
	return 0;
}

static ssize_t read_direct(exec_input_tap *t, void *buf, size_t max)
{
	exec_input *in = t->in;
	struct pollfd p = {.fd = in->fd, .events = POLLIN};
	if (poll(&p, 1, 0) == 0)
		return -1;
	ssize_t r = read(in->fd, buf, max);
	if (r < 0 && (errno == EINTR || errno == EAGAIN))
		return -1;
	if (r < 0) {
		set_error(in, "reading standard input", errno);
		return 0;
	}
	return r;
}

ssize_t exec_input_read(exec_input_tap *t, void *buf, size_t max)
{
	exec_input *in = t->in;
	if (in->direct)
		return read_direct(t, buf, max);
	uint64_t seen;
	/* Cleared before looking, so a later append always wakes us again. */
	if (read(t->wake, &seen, sizeof(seen)) < 0 && errno != EAGAIN)
		return 0;
	pthread_mutex_lock(&in->mu);
	off_t avail = in->len - t->off;
	bool eof = in->eof;
	pthread_mutex_unlock(&in->mu);
	if (avail == 0)
		return eof ? 0 : -1;
	size_t want = (off_t)max < avail ? max : (size_t)avail;
	ssize_t r = pread(in->spool, buf, want, t->off);
	if (r <= 0)
		return 0; /* the spool cannot shrink: cut input, said by the writer */
	pthread_mutex_lock(&in->mu);
	t->off += r;
	pthread_cond_signal(&in->cv);
	pthread_mutex_unlock(&in->mu);
	return r;
}

int exec_input_wake_fd(const exec_input_tap *t)
{
	return t->wake;
}

void exec_input_done(exec_input_tap *t)
{
	exec_input *in = t->in;
	pthread_mutex_lock(&in->mu);
	t->done = true;
	if (!in->direct && t->wake >= 0)
		close(t->wake);
	t->wake = -1;
	pthread_cond_signal(&in->cv);
	pthread_mutex_unlock(&in->mu);
}

const char *exec_input_error(exec_input *in)
{
	return in->error;
}

void exec_input_free(exec_input *in)
{
	if (!in)
		return;
	if (in->reader_started) {
		pthread_mutex_lock(&in->mu);
		in->stopping = true;
		pthread_cond_broadcast(&in->cv);
		pthread_mutex_unlock(&in->mu);
		ssize_t w = write(in->stop[1], "x", 1);
		(void)w; /* a full pipe is already a stop */
		pthread_join(in->reader, NULL);
	}
	for (size_t i = 0; i < in->n; i++)
		exec_input_done(&in->taps[i]);
	for (int i = 0; i < 2; i++)
		if (in->stop[i] >= 0)
			close(in->stop[i]);
	if (in->spool >= 0)
		close(in->spool);
	pthread_mutex_destroy(&in->mu);
	pthread_cond_destroy(&in->cv);
	free(in->taps);
	free(in);
}
