/* The transport-independent half of remote/: dispatch, line delivery, and the
 * run/capture conveniences. */
#include "remote/internal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "base/xmalloc.h"

int remote_global_init(bg_err *err)
{
	if (libssh2_init(0) != 0)
		return bg_fail(err, BG_EIO, "libssh2 failed to initialise");
	return 0;
}

void remote_global_release(void)
{
	libssh2_exit();
}

int remote_connect(const remote_target *t, const remote_connect_opts *opts, remote_conn **out,
		   bg_err *err)
{
	static const remote_connect_opts none = {0};
	remote_conn *c = xcalloc(1, sizeof(*c));
	int rc;

	*out = NULL;
	c->target = t;
	c->sock = -1;
	c->mfd = -1;
	if (!opts)
		opts = &none;
	c->opts = *opts;
	if (t->transport == REMOTE_TRANSPORT_LOCAL) {
		c->ops = &remote_local_ops;
		*out = c;
		return 0;
	}
	c->ops = &remote_ssh_ops;
	if (t->unsupported) {
		rc = bg_fail(err, BG_EUNSUPPORTED,
			     "%s: ssh_config asks for %s, which boxgate cannot honour", t->name,
			     t->unsupported);
		goto out;
	}
	if (opts->warm && remote_master_attach(c, opts) == 0) {
		*out = c;
		return 0;
	}
	rc = remote_ssh_connect(c, opts, err);
	/* Only a connection that got all the way (host key, authentication)
	 * may become a master. */
	c->leave_master = rc == 0 && opts->warm;
out:
	if (rc < 0) {
		remote_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

void remote_close(remote_conn *c)
{
	if (!c)
		return;
	if (c->leave_master)
		remote_master_detach(c);
	c->ops->close(c);
	strbuf_release(&c->m_in);
	strbuf_release(&c->m_out);
	strbuf_release(&c->m_opq);
	free(c->m_execs);
	free(c);
}

const remote_target *remote_target_of(const remote_conn *c)
{
	return c->target;
}

unsigned remote_round_trips(const remote_conn *c, unsigned *to_auth)
{
	if (to_auth)
		*to_auth = c ? c->auth_round_trips : 0;
	return c ? c->round_trips : 0;
}

bool remote_is_warm(const remote_conn *c)
{
	return c && c->ops == &remote_master_ops;
}

const char *remote_host_fingerprint(const remote_conn *c)
{
	return c->fingerprint;
}

void remote_status_describe(const remote_status *st, char *buf, size_t n)
{
	switch (st->how) {
	case REMOTE_RUNNING: snprintf(buf, n, "still running"); break;
	case REMOTE_EXITED: snprintf(buf, n, "exit %d", st->code); break;
	case REMOTE_SIGNALED: snprintf(buf, n, "killed by signal %s", st->signal); break;
	case REMOTE_LOST: snprintf(buf, n, "connection lost before an exit status arrived"); break;
	case REMOTE_TIMEDOUT: snprintf(buf, n, "timed out"); break;
	}
}

/* Killable commands announce their process group on the first stderr line;
 * it is consumed here and never reaches the caller. */
#define PID_MARK "@boxgate-pid "

static void deliver(remote_exec *e, remote_stream s, const char *line, size_t len, int flags)
{
	if (s == REMOTE_STDERR && e->opts.killable && e->remote_pid == 0 &&
	    len > strlen(PID_MARK) && memcmp(line, PID_MARK, strlen(PID_MARK)) == 0) {
		e->remote_pid = strtol(line + strlen(PID_MARK), NULL, 10);
		if (e->remote_pid <= 1)
			e->remote_pid = -1;
		return;
	}
	if (e->opts.on_line)
		e->opts.on_line(e->opts.ctx, s, line, len, flags);
}

static void out_line(void *ctx, const char *line, size_t len, int flags)
{
	deliver(ctx, REMOTE_STDOUT, line, len, flags);
}

static void err_line(void *ctx, const char *line, size_t len, int flags)
{
	deliver(ctx, REMOTE_STDERR, line, len, flags);
}

void remote_exec_feed(remote_exec *e, remote_stream s, const char *data, size_t n)
{
	lines_feed(s == REMOTE_STDOUT ? &e->out_lines : &e->err_lines, data, n);
}

void remote_exec_finish_streams(remote_exec *e)
{
	lines_finish(&e->out_lines);
	lines_finish(&e->err_lines);
}

int remote_exec_start(remote_conn *c, const char *cmdline, const remote_exec_opts *opts,
		      remote_exec **out, bg_err *err)
{
	remote_exec *e = xcalloc(1, sizeof(*e));
	e->conn = c;
	if (opts)
		e->opts = *opts;
	e->fd_in = e->fd_out = e->fd_err = e->wake_fd = -1;
	lines_init(&e->out_lines, e->opts.max_line, out_line, e);
	lines_init(&e->err_lines, e->opts.max_line, err_line, e);
	int rc = c->ops->exec_start(c, cmdline, e, err);
	if (rc < 0) {
		remote_exec_free(e);
		*out = NULL;
		return rc;
	}
	*out = e;
	return 0;
}

void remote_exec_write(remote_exec *e, const void *data, size_t n)
{
	strbuf_add(&e->stdin_q, data, n);
}

void remote_exec_write_request(remote_exec *e, const void *data, size_t n)
{
	strbuf_add(&e->stdin_q, data, n);
	e->stdin_asks = true;
}

void remote_exec_close_stdin(remote_exec *e)
{
	e->stdin_close = true;
}

size_t remote_exec_stdin_queued(const remote_exec *e)
{
	/* Through a master, bytes it holds for the command count once they pass
	 * what it may hold anyway (the master's stdin credit). */
	size_t held = (size_t)(e->m_sent - e->m_acked);
	held = held > REMOTE_MASTER_CREDIT ? held - REMOTE_MASTER_CREDIT : 0;
	return e->stdin_q.len - e->stdin_off + held;
}

int remote_exec_pump(remote_exec *e, int64_t deadline, int wake_fd, remote_status *st, bg_err *err)
{
	e->wake_fd = wake_fd;
	e->return_on_drain = remote_exec_stdin_queued(e) > 0;
	int rc = remote_exec_wait(e, deadline, st, err);
	e->wake_fd = -1;
	e->return_on_drain = false;
	return rc;
}

int remote_exec_wait(remote_exec *e, int64_t deadline, remote_status *st, bg_err *err)
{
	int rc = 0;
	if (!e->done)
		rc = e->conn->ops->exec_wait(e, deadline, err);
	if (st)
		*st = e->st;
	if (rc < 0)
		return rc;
	return e->done ? 1 : 0;
}

int remote_exec_kill(remote_exec *e, int grace_ms, remote_status *st, bg_err *err)
{
	int rc = 0;
	if (!e->done) {
		rc = e->conn->ops->exec_signal(e, SIGTERM, err);
		if (rc == 0 && e->conn->ops->exec_wait(e, bg_deadline_ms(grace_ms), err) == 0 &&
		    !e->done) {
			e->conn->ops->exec_signal(e, SIGKILL, err);
			e->conn->ops->exec_wait(e, bg_deadline_ms(grace_ms + 2000), err);
		}
	}
	e->st.how = REMOTE_TIMEDOUT;
	e->done = true;
	if (st)
		*st = e->st;
	return rc;
}

void remote_exec_free(remote_exec *e)
{
	if (!e)
		return;
	e->conn->ops->exec_free(e);
	strbuf_release(&e->m_q);
	lines_release(&e->out_lines);
	lines_release(&e->err_lines);
	strbuf_release(&e->stdin_q);
	free(e);
}

static int close_and_wait(remote_exec *e, int64_t deadline, void *ctx, remote_status *st,
			  bg_err *err)
{
	(void)ctx;
	remote_exec_close_stdin(e);
	return remote_exec_wait(e, deadline, st, err);
}

int remote_run_fed(remote_conn *c, const char *cmdline, remote_line_cb on_line, void *ctx,
		   int timeout_ms, remote_feed_fn feed, void *feed_ctx, remote_status *st,
		   bg_err *err)
{
	remote_exec_opts o = {.on_line = on_line, .ctx = ctx, .killable = timeout_ms > 0};
	remote_exec *e = NULL;
	int rc = remote_exec_start(c, cmdline, &o, &e, err);
	if (rc < 0)
		return rc;
	rc = feed(e, bg_deadline_ms(timeout_ms), feed_ctx, st, err);
	if (rc == 0) {
		remote_exec_kill(e, 2000, st, err);
		rc = bg_fail(err, BG_ETIMEOUT, "%s: timed out after %d s", c->target->name,
			     (timeout_ms + 999) / 1000);
	} else if (rc > 0) {
		rc = 0;
	}
	remote_exec_free(e);
	return rc;
}

int remote_run(remote_conn *c, const char *cmdline, remote_line_cb on_line, void *ctx,
	       int timeout_ms, remote_status *st, bg_err *err)
{
	return remote_run_fed(c, cmdline, on_line, ctx, timeout_ms, close_and_wait, NULL, st, err);
}

struct capture {
	strbuf out, err;
	size_t max;
};

static void capture_line(void *ctx, remote_stream s, const char *line, size_t len, int flags)
{
	struct capture *cap = ctx;
	strbuf *sb = s == REMOTE_STDOUT ? &cap->out : &cap->err;
	size_t max = s == REMOTE_STDOUT ? cap->max : 4096;
	if (sb->len + len + 1 > max)
		return;
	strbuf_add(sb, line, len);
	if (!(flags & (LINE_PARTIAL | LINE_NO_EOL)))
		strbuf_addch(sb, '\n');
}

int remote_capture(remote_conn *c, const char *cmdline, size_t max, int timeout_ms, char **out,
		   size_t *out_len, remote_status *st, bg_err *err)
{
	struct capture cap = {STRBUF_INIT, STRBUF_INIT, max};
	remote_status local_st;
	if (!st)
		st = &local_st;
	int rc = remote_run(c, cmdline, capture_line, &cap, timeout_ms, st, err);
	if (rc == 0 && !(st->how == REMOTE_EXITED && st->code == 0)) {
		char how[96];
		remote_status_describe(st, how, sizeof(how));
		rc = bg_fail(err, BG_EREMOTE, "%s: %s: %s%s%.*s", c->target->name, cmdline, how,
			     cap.err.len ? ": " : "", (int)(cap.err.len > 600 ? 600 : cap.err.len),
			     strbuf_str(&cap.err));
	}
	if (out_len)
		*out_len = cap.out.len;
	if (out)
		*out = strbuf_detach(&cap.out);
	strbuf_release(&cap.out);
	strbuf_release(&cap.err);
	return rc;
}
