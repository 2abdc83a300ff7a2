/* ssh exec channels: stdout and stderr read on every step (they share the
 * channel window), stdin written as the caller queues it, exit status and
 * signal collected, and a lost connection reported as lost, never as exit 0
 * (libssh2 1.10 answers 0 when no status arrived). */
#include "remote/internal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "base/xmalloc.h"

/* Blocking calls on this session end after `ms`; restored by the caller. */
static void block_for(remote_conn *c, long ms)
{
	libssh2_session_set_blocking(c->session, 1);
	libssh2_session_set_timeout(c->session, ms);
}

int remote_ssh_exec_start(remote_conn *c, const char *cmdline, remote_exec *e, bg_err *err)
{
	const conf_box *b = c->box;
	char *cmd = NULL;
	int rc = 0;

	block_for(c, (long)b->connect_timeout_s * 1000);
	e->ch = libssh2_channel_open_session(c->session);
	if (!e->ch) {
		rc = bg_fail(err, BG_EREMOTE, "%s: cannot open a session channel: %s", b->name,
			     remote_ssh_errmsg(c->session));
		goto out;
	}
	/* sshd puts a command without a pty in a new session: $$ is its group. */
	cmd = e->opts.killable ? xasprintf("echo \"@boxgate-pid $$\" >&2; %s", cmdline) : xstrdup(cmdline);
	if (libssh2_channel_process_startup(e->ch, "exec", 4, cmd, (unsigned)strlen(cmd)) != 0) {
		rc = bg_fail(err, BG_EREMOTE, "%s: the server refused to run the command: %s", b->name,
			     remote_ssh_errmsg(c->session));
		goto out;
	}
out:
	free(cmd);
	libssh2_session_set_blocking(c->session, 0);
	return rc;
}

static void lost(remote_exec *e)
{
	remote_ssh_mark_dead(e->conn);
	remote_exec_finish_streams(e);
	e->st.how = REMOTE_LOST;
	e->done = true;
}

/* Reads what is there on one stream; 1 when something was read, 0 on EAGAIN
 * or EOF, negative on a transport error. */
static int drain(remote_exec *e, int stream_id)
{
	char buf[32768];
	int got = 0;
	for (;;) {
		ssize_t n = libssh2_channel_read_ex(e->ch, stream_id, buf, sizeof(buf));
		if (n > 0) {
			remote_exec_feed(e, stream_id ? REMOTE_STDERR : REMOTE_STDOUT, buf, (size_t)n);
			got = 1;
			continue;
		}
		if (n == 0 || n == LIBSSH2_ERROR_EAGAIN)
			return got;
		return (int)n;
	}
}

static int pump_stdin(remote_exec *e)
{
	while (e->stdin_off < e->stdin_q.len) {
		ssize_t n = libssh2_channel_write(e->ch, e->stdin_q.buf + e->stdin_off,
						  e->stdin_q.len - e->stdin_off);
		if (n == LIBSSH2_ERROR_EAGAIN)
			return 0;
		if (n < 0)
			return (int)n;
		e->stdin_off += (size_t)n;
	}
	if (e->stdin_off == e->stdin_q.len && e->stdin_off > 0) {
		strbuf_reset(&e->stdin_q);
		e->stdin_off = 0;
	}
	if (e->stdin_close && !e->stdin_closed && e->stdin_q.len == 0) {
		int r = libssh2_channel_send_eof(e->ch);
		if (r == LIBSSH2_ERROR_EAGAIN)
			return 0;
		e->stdin_closed = true; /* a refused EOF means the channel is going away anyway */
	}
	return 0;
}

static void collect_status(remote_exec *e)
{
	char *sig = NULL;
	size_t siglen = 0;
	remote_exec_finish_streams(e);
	libssh2_channel_get_exit_signal(e->ch, &sig, &siglen, NULL, NULL, NULL, NULL);
	if (sig && siglen) {
		e->st.how = REMOTE_SIGNALED;
		snprintf(e->st.signal, sizeof(e->st.signal), "%.*s", (int)siglen, sig);
		e->st.code = 128;
	} else {
		e->st.how = REMOTE_EXITED;
		e->st.code = libssh2_channel_get_exit_status(e->ch);
	}
	if (sig)
		libssh2_free(e->conn->session, sig);
	e->done = true;
}

int remote_ssh_exec_wait(remote_exec *e, int64_t deadline, bg_err *err)
{
	remote_conn *c = e->conn;
	const char *name = c->box->name;

	libssh2_session_set_blocking(c->session, 0);
	for (;;) {
		int a = drain(e, 0);
		int b = drain(e, SSH_EXTENDED_DATA_STDERR);
		if (a < 0 || b < 0) {
			lost(e);
			return bg_fail(err, BG_ECONNECT, "%s: connection lost: %s", name,
				       remote_ssh_errmsg(c->session));
		}
		if (pump_stdin(e) < 0 && libssh2_session_last_errno(c->session) != LIBSSH2_ERROR_CHANNEL_EOF_SENT &&
		    !libssh2_channel_eof(e->ch)) {
			lost(e);
			return bg_fail(err, BG_ECONNECT, "%s: connection lost while sending input: %s", name,
				       remote_ssh_errmsg(c->session));
		}
		if (libssh2_channel_eof(e->ch) && a == 0 && b == 0) {
			int r = libssh2_channel_close(e->ch);
			if (r == 0)
				r = libssh2_channel_wait_closed(e->ch);
			if (r == 0) {
				collect_status(e);
				return 0;
			}
			if (r != LIBSSH2_ERROR_EAGAIN) {
				lost(e);
				return bg_fail(err, BG_ECONNECT, "%s: connection lost at channel close: %s", name,
					       remote_ssh_errmsg(c->session));
			}
		}
		if (a || b)
			continue;
		if (bg_now_ms() >= deadline)
			return 0;
		if (remote_ssh_wait_socket(c, deadline) < 0) {
			lost(e);
			return bg_fail(err, BG_ECONNECT, "%s: no reply from the box for %d s: connection lost",
				       name, c->keepalive_s * 3);
		}
	}
}

int remote_ssh_exec_signal(remote_exec *e, int sig, bg_err *err)
{
	remote_conn *c = e->conn;
	if (e->remote_pid <= 0) {
		/* The group is not known (yet): closing the channel is all we have. */
		block_for(c, 2000);
		libssh2_channel_close(e->ch);
		libssh2_session_set_blocking(c->session, 0);
		return 0;
	}
	char cmd[128];
	const char *name = sig == SIGKILL ? "KILL" : "TERM";
	snprintf(cmd, sizeof(cmd), "kill -%s -- -%ld 2>/dev/null || kill -%s %ld 2>/dev/null; exit 0",
		 name, e->remote_pid, name, e->remote_pid);
	block_for(c, 5000);
	LIBSSH2_CHANNEL *k = libssh2_channel_open_session(c->session);
	int rc = 0;
	if (!k || libssh2_channel_exec(k, cmd) != 0) {
		rc = bg_fail(err, BG_EREMOTE, "%s: cannot send the kill: %s", c->box->name,
			     remote_ssh_errmsg(c->session));
	} else {
		char buf[256];
		while (libssh2_channel_read(k, buf, sizeof(buf)) > 0)
			;
		libssh2_channel_close(k);
		libssh2_channel_wait_closed(k);
	}
	if (k)
		libssh2_channel_free(k);
	libssh2_session_set_blocking(c->session, 0);
	return rc;
}

void remote_ssh_exec_free(remote_exec *e)
{
	if (!e->ch)
		return;
	block_for(e->conn, 2000);
	if (!e->done)
		libssh2_channel_close(e->ch);
	libssh2_channel_free(e->ch);
	e->ch = NULL;
	libssh2_session_set_blocking(e->conn->session, 0);
}
