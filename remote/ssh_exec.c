/* ssh exec channels: stdout and stderr read on every step (they share the
 * channel window), stdin written as the caller queues it, exit status and
 * signal collected, and a lost connection reported as lost, never as exit 0.
 *
 * libssh2 1.10 answers 0 from libssh2_channel_get_exit_status when no
 * status arrived (a dropped connection, or sshd's ChannelTimeout closing the
 * channel while the command runs on). So every command runs inside a small
 * wrapper that reports the status itself, as the last bytes it writes on
 * stderr: "\036@bgst-NONCE STATUS [SIGNAL]\n", NONCE random per exec. The
 * client takes that trailer out of the stderr stream byte for byte (what the
 * command wrote stays exactly as written, a last line without newline
 * included) and trusts it over libssh2's number; without it, and without an
 * exit-signal or a non-zero exit-status from sshd, the status is
 * REMOTE_LOST. */
#include "remote/internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "base/random.h"
#include "base/xmalloc.h"

#define TRAILER_LEAD "\036@bgst-"

/* The command line sshd hands to the login shell. The command runs in a
 * subshell, so neither `exit` nor `exec` in it skips the status line, while
 * `$$` still names the wrapper (the session's process group leader). A status
 * above 128 is reported with its signal's name (`kill -l`, POSIX), as the
 * shell cannot tell it from an exit with that number. Killable commands
 * first announce the process group and export BOXGATE_EXEC_ID. */
static char *wrap(const remote_exec *e, const char *cmdline, const char *nonce)
{
	strbuf sb = STRBUF_INIT;
	if (e->opts.killable)
		strbuf_addf(&sb,
			    "BOXGATE_EXEC_ID=%s; export BOXGATE_EXEC_ID; echo \"@boxgate-pid $$\" "
			    ">&2; ",
			    e->exec_id);
	/* All on the first line, parsed before any of it runs: a syntax error
	 * in the command is shown (with its own line numbers) before the
	 * wrapper's stderr goes to /dev/null. That keeps the shell's own notes
	 * about the subshell ("Terminated") out of the output; the command
	 * writes to the real stderr, fd 3 closed. `:;` keeps a command that is
	 * only a comment valid. */
	strbuf_addstr(&sb, "exec 3>&2 2>/dev/null; ( :; ");
	strbuf_addstr(&sb, cmdline);
	strbuf_addstr(&sb, "\n) 2>&3 3>&-\n");
	strbuf_addf(&sb,
		    "__bg_st=$?; if [ \"$__bg_st\" -gt 128 ] && __bg_sig=$(kill -l \"$__bg_st\" "
		    "2>/dev/null); "
		    "then printf '\\036@bgst-%s %%s %%s\\n' \"$__bg_st\" \"$__bg_sig\" >&3; "
		    "else printf '\\036@bgst-%s %%s\\n' \"$__bg_st\" >&3; fi; exit \"$__bg_st\"",
		    nonce, nonce);
	return strbuf_detach(&sb);
}

/* Blocking calls on this session end after `ms`; restored by the caller. */
static void block_for(remote_conn *c, long ms)
{
	libssh2_session_set_blocking(c->session, 1);
	libssh2_session_set_timeout(c->session, ms);
}

bool remote_ssh_open_spare(remote_conn *c)
{
	if (c->spare || c->dead)
		return c->spare != NULL;
	block_for(c, (long)c->target->connect_timeout_s * 1000);
	c->spare = libssh2_channel_open_session(c->session);
	libssh2_session_set_blocking(c->session, 0);
	return c->spare != NULL;
}

/* The spare channel, when the box has not closed it meanwhile (sshd's
 * ChannelTimeout): what arrived while it waited is read first. */
static LIBSSH2_CHANNEL *take_spare(remote_conn *c)
{
	LIBSSH2_CHANNEL *ch = c->spare;
	c->spare = NULL;
	if (!ch)
		return NULL;
	char b;
	libssh2_session_set_blocking(c->session, 0);
	ssize_t n = libssh2_channel_read(ch, &b, 0);
	libssh2_session_set_blocking(c->session, 1);
	if ((n < 0 && n != LIBSSH2_ERROR_EAGAIN) || libssh2_channel_eof(ch)) {
		libssh2_channel_close(ch);
		libssh2_channel_free(ch);
		return NULL;
	}
	return ch;
}

int remote_ssh_exec_start(remote_conn *c, const char *cmdline, remote_exec *e, bg_err *err)
{
	const remote_target *b = c->target;
	char *cmd = NULL;
	int rc = 0;

	block_for(c, (long)b->connect_timeout_s * 1000);
	e->ch = take_spare(c);
	if (!e->ch)
		e->ch = libssh2_channel_open_session(c->session);
	if (!e->ch) {
		rc = bg_fail(err, BG_EREMOTE, "%s: cannot open a session channel: %s", b->name,
			     remote_ssh_errmsg(c->session));
		goto out;
	}
	/* sshd puts a command without a pty in a new session: $$ is its group. */
	char nonce[17];
	bg_random_hex(nonce, 8);
	snprintf(e->trailer, sizeof(e->trailer), TRAILER_LEAD "%s ", nonce);
	if (e->opts.killable)
		bg_random_hex(e->exec_id, 16);
	cmd = wrap(e, cmdline, nonce);
	if (libssh2_channel_process_startup(e->ch, "exec", 4, cmd, (unsigned)strlen(cmd)) != 0) {
		rc = bg_fail(err, BG_EREMOTE, "%s: the server refused to run the command: %s",
			     b->name, remote_ssh_errmsg(c->session));
		goto out;
	}
out:
	free(cmd);
	libssh2_session_set_blocking(c->session, 0);
	return rc;
}

/* "STATUS" or "STATUS SIGNAL" after the trailer's prefix. */
static void parse_trailer(remote_exec *e)
{
	char *end;
	e->t_text[e->t_len] = '\0';
	long v = strtol(e->t_text, &end, 10);
	if (end == e->t_text || v < 0 || v > 255)
		return;
	e->have_trailer = true;
	e->t_code = (int)v;
	e->t_signal[0] = '\0';
	if (*end == ' ' && end[1])
		snprintf(e->t_signal, sizeof(e->t_signal), "%s", end + 1);
}

/* Stderr bytes: everything but the trailer goes to the line splitter
 * unchanged. Bytes that may begin the trailer are held back until they
 * prove not to (its first byte, \036, is rare in output, so text lines are
 * never delayed). A trailer can be followed by more output (a background
 * process writing late): the stream goes on around it. */
static void feed_stderr(remote_exec *e, const char *p, size_t n)
{
	const char *t = e->trailer;
	size_t tl = strlen(t);
	while (n) {
		if (e->t_in) {
			const char *nl = memchr(p, '\n', n);
			size_t take = nl ? (size_t)(nl - p) : n;
			size_t room = sizeof(e->t_text) - 1 - e->t_len;
			memcpy(e->t_text + e->t_len, p, take < room ? take : room);
			e->t_len += take < room ? take : room;
			p += take;
			n -= take;
			if (nl) {
				p++;
				n--;
				e->t_in = false;
				parse_trailer(e);
			}
			continue;
		}
		if (e->t_held) {
			if (*p == t[e->t_held]) {
				p++;
				n--;
				if (++e->t_held == tl) {
					e->t_held = 0;
					e->t_in = true;
					e->t_len = 0;
				}
				continue;
			}
			/* Not the trailer: the held bytes were output (only the
			 * first byte of the prefix is \036, so none restarts it). */
			remote_exec_feed(e, REMOTE_STDERR, t, e->t_held);
			e->t_held = 0;
			continue;
		}
		const char *m = memchr(p, t[0], n);
		size_t run = m ? (size_t)(m - p) : n;
		if (run)
			remote_exec_feed(e, REMOTE_STDERR, p, run);
		p += run;
		n -= run;
		if (m) {
			e->t_held = 1;
			p++;
			n--;
		}
	}
}

/* End of the streams: held bytes that never became a trailer are output. */
static void end_streams(remote_exec *e)
{
	if (e->t_held)
		remote_exec_feed(e, REMOTE_STDERR, e->trailer, e->t_held);
	e->t_held = 0;
	e->t_in = false;
	remote_exec_finish_streams(e);
}

static void lost(remote_exec *e)
{
	remote_ssh_mark_dead(e->conn);
	end_streams(e);
	e->st.how = REMOTE_LOST;
	e->done = true;
}

/* Reads what is there on one stream, at most DRAIN_READS reads at a time so
 * that a stream that never runs dry leaves the caller its deadline and the
 * other stream its turn; 1 when something was read, 0 on EAGAIN or EOF,
 * negative on a transport error. */
#define DRAIN_READS 8
static int drain(remote_exec *e, int stream_id)
{
	char buf[32768];
	int got = 0;
	for (int reads = 0; reads < DRAIN_READS; reads++) {
		ssize_t n = libssh2_channel_read_ex(e->ch, stream_id, buf, sizeof(buf));
		if (n > 0) {
			if (stream_id)
				feed_stderr(e, buf, (size_t)n);
			else
				remote_exec_feed(e, REMOTE_STDOUT, buf, (size_t)n);
			got = 1;
			continue;
		}
		if (n == 0 || n == LIBSSH2_ERROR_EAGAIN)
			return got;
		return (int)n;
	}
	return got;
}

/* libssh2 keeps a packet that the socket took only part of and refuses any
 * other packet until it is sent whole (LIBSSH2_ERROR_BAD_USE). An EAGAIN
 * with the socket full (outbound) leaves such a packet; one for a closed
 * window does not. */
static bool left_part_sent(remote_exec *e)
{
	return libssh2_session_block_directions(e->conn->session) & LIBSSH2_SESSION_BLOCK_OUTBOUND;
}

/* Moves queued stdin to the channel. Once the command's side has ended
 * (`ended`: EOF from the box) its stdin goes nowhere: only a packet already
 * part-sent is finished, so that the close can follow, and the rest of the
 * queue is dropped, as a pipe drops what its gone reader never took. */
static int pump_stdin(remote_exec *e, bool ended)
{
	while (e->stdin_off < e->stdin_q.len && (!ended || e->send_pending)) {
		/* input asks for no answer (a heartbeat, a file): the round trip
		 * count leaves it out, as it does the EOF */
		bool sent = e->conn->sent_since_wait;
		ssize_t n = libssh2_channel_write(e->ch, e->stdin_q.buf + e->stdin_off,
						  e->stdin_q.len - e->stdin_off);
		if (e->conn->sent_since_wait && !e->stdin_asks)
			e->conn->sent_since_wait = sent;
		if (n == LIBSSH2_ERROR_EAGAIN) {
			e->send_pending = left_part_sent(e);
			return 0;
		}
		e->send_pending = false;
		if (n < 0)
			return (int)n;
		e->stdin_off += (size_t)n;
	}
	if (ended && !e->send_pending)
		e->stdin_off = e->stdin_q.len;
	if (e->stdin_off == e->stdin_q.len && e->stdin_off > 0) {
		strbuf_reset(&e->stdin_q);
		e->stdin_off = 0;
		e->stdin_asks = false;
	}
	if (e->stdin_close && !e->stdin_closed && e->stdin_q.len == 0 && !e->send_pending) {
		/* an EOF asks for no answer: what comes next answers the exec */
		bool sent = e->conn->sent_since_wait;
		int r = libssh2_channel_send_eof(e->ch);
		if (e->conn->sent_since_wait)
			e->conn->sent_since_wait = sent;
		if (r == LIBSSH2_ERROR_EAGAIN) {
			/* libssh2 resends a part-sent EOF only when asked from the
			 * same place: the next round here, never the close. */
			e->eof_pending = left_part_sent(e);
			return 0;
		}
		e->eof_pending = false;
		e->stdin_closed = true; /* a refused EOF means the channel is going away anyway */
	}
	return 0;
}

/* The command's status, best source first: the wrapper's trailer; sshd's
 * exit-signal (the wrapper itself was killed: `kill -9 $$`, a kill of the
 * process group); a non-zero exit-status (it did arrive). Anything else is
 * no status at all: libssh2's 0 may mean nothing arrived. */
static void collect_status(remote_exec *e)
{
	char *sig = NULL;
	size_t siglen = 0;
	end_streams(e);
	libssh2_channel_get_exit_signal(e->ch, &sig, &siglen, NULL, NULL, NULL, NULL);
	int code = libssh2_channel_get_exit_status(e->ch);
	memset(e->st.signal, 0, sizeof(e->st.signal));
	if (e->have_trailer && e->t_signal[0]) {
		e->st.how = REMOTE_SIGNALED;
		e->st.code = e->t_code;
		snprintf(e->st.signal, sizeof(e->st.signal), "%s", e->t_signal);
	} else if (e->have_trailer) {
		e->st.how = REMOTE_EXITED;
		e->st.code = e->t_code;
	} else if (sig && siglen) {
		e->st.how = REMOTE_SIGNALED;
		snprintf(e->st.signal, sizeof(e->st.signal), "%.*s", (int)siglen, sig);
		e->st.code = 128;
	} else if (code != 0) {
		e->st.how = REMOTE_EXITED;
		e->st.code = code;
	} else {
		e->st.how = REMOTE_LOST;
		e->st.code = 0;
	}
	if (sig)
		libssh2_free(e->conn->session, sig);
	e->done = true;
}

/* libssh2 reads every packet the socket has whenever any call reads, and
 * keeps what is not for it: bytes for this command (one stream's read took
 * the other's; a stdin write took output), or the box's EOF that arrived
 * after this round looked (`ended` false). The socket no longer shows them:
 * waiting on it would wait for nothing. */
static bool held_in_session(remote_exec *e, bool ended)
{
	unsigned long avail = 0;
	libssh2_channel_window_read_ex(e->ch, &avail, NULL);
	return avail > 0 || (!ended && libssh2_channel_eof(e->ch));
}

int remote_ssh_exec_wait(remote_exec *e, int64_t deadline, bg_err *err)
{
	remote_conn *c = e->conn;
	const char *name = c->target->name;

	e->more = false;
	libssh2_session_set_blocking(c->session, 0);
	for (;;) {
		int a = drain(e, 0);
		int b = drain(e, SSH_EXTENDED_DATA_STDERR);
		if (a < 0 || b < 0) {
			lost(e);
			return bg_fail(err, BG_ECONNECT, "%s: connection lost: %s", name,
				       remote_ssh_errmsg(c->session));
		}
		bool ended = libssh2_channel_eof(e->ch);
		if (pump_stdin(e, ended) < 0 &&
		    libssh2_session_last_errno(c->session) != LIBSSH2_ERROR_CHANNEL_EOF_SENT &&
		    !libssh2_channel_eof(e->ch)) {
			lost(e);
			return bg_fail(err, BG_ECONNECT,
				       "%s: connection lost while sending input: %s", name,
				       remote_ssh_errmsg(c->session));
		}
		if (e->return_on_drain && e->stdin_q.len == 0)
			return 0;
		/* The close waits for a part-sent packet to go out whole: a
		 * command that stopped reading and ended while input was still
		 * on its way ends with its own status, not a lost connection. */
		if (ended && a == 0 && b == 0 && !e->send_pending && !e->eof_pending) {
			int r = libssh2_channel_close(e->ch);
			/* Our EOF and CLOSE ask nothing: sshd closes its side
			 * once the command's status is out, whatever we send, so
			 * waiting for it is waiting for the box, not a round trip
			 * (a loaded box sends it apart from its EOF). */
			c->waiting = c->sent_since_wait = false;
			if (r == 0)
				r = libssh2_channel_wait_closed(e->ch);
			if (r == 0) {
				collect_status(e);
				return 0;
			}
			if (r != LIBSSH2_ERROR_EAGAIN) {
				lost(e);
				return bg_fail(err, BG_ECONNECT,
					       "%s: connection lost at channel close: %s", name,
					       remote_ssh_errmsg(c->session));
			}
		}
		/* The deadline holds while output keeps coming too: a command that
		 * floods the channel must not outlive its timeout or starve the
		 * caller's heartbeats. */
		if (bg_now_ms() >= deadline) {
			/* A round that read something (the status trailer, which
			 * nobody sees, with the EOF behind it) may have more to do
			 * at once: the caller must not wait on the socket first. */
			e->more = a || b || held_in_session(e, ended);
			return 0;
		}
		if (a || b || held_in_session(e, ended))
			continue;
		int w = remote_ssh_wait_socket(c, deadline, e->wake_fd);
		if (w < 0) {
			lost(e);
			return bg_fail(err, BG_ECONNECT,
				       "%s: no reply from the box for %d s: connection lost", name,
				       c->keepalive_s * 3);
		}
		if (w > 0)
			return 0; /* the caller has more input */
	}
}

/* The kill, run on the box in a channel of its own (libssh2 1.10 cannot
 * signal through the channel). It signals the process group and every
 * process of the same user whose environment carries the command's
 * BOXGATE_EXEC_ID (what it started with setsid, double forks, daemons);
 * for TERM it then waits up to 2 s for them to go and sends KILL to what
 * is left. A process that dropped the variable from its environment is out
 * of reach, as is one of another user. */
static char *kill_script(const remote_exec *e, int sig)
{
	strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "m=BOXGATE_EXEC_ID=%s; g=%ld\n", e->exec_id,
		    e->remote_pid > 1 ? e->remote_pid : 0L);
	strbuf_addstr(&sb, "bgk() { [ \"$g\" -gt 1 ] && kill -s $1 -- -$g 2>/dev/null;"
			   " for f in $(grep -lzxF -- \"$m\" /proc/[0-9]*/environ 2>/dev/null); do"
			   " p=${f%/environ}; p=${p#/proc/}; [ -O \"/proc/$p\" ] && kill -s $1 "
			   "\"$p\" 2>/dev/null; done; }\n"
			   "bgl() { grep -qzxF -- \"$m\" /proc/[0-9]*/environ 2>/dev/null; }\n");
	if (sig != SIGKILL)
		strbuf_addstr(&sb, "bgk TERM; i=0; while [ $i -lt 20 ] && bgl; do sleep 0.1; "
				   "i=$((i + 1)); done\n");
	strbuf_addstr(&sb, "bgk KILL; i=0; while [ $i -lt 20 ] && bgl; do sleep 0.1; bgk KILL; "
			   "i=$((i + 1)); done\n"
			   "exit 0\n");
	return strbuf_detach(&sb);
}

int remote_ssh_exec_signal(remote_exec *e, int sig, bg_err *err)
{
	remote_conn *c = e->conn;
	if (e->remote_pid <= 0 && !e->exec_id[0]) {
		/* Nothing to find it by: closing the channel is all we have. */
		block_for(c, 2000);
		libssh2_channel_close(e->ch);
		libssh2_session_set_blocking(c->session, 0);
		return 0;
	}
	char *cmd = NULL;
	if (e->exec_id[0]) {
		cmd = kill_script(e, sig);
	} else {
		const char *name = sig == SIGKILL ? "KILL" : "TERM";
		cmd = xasprintf("kill -%s -- -%ld 2>/dev/null || kill -%s %ld 2>/dev/null; exit 0",
				name, e->remote_pid, name, e->remote_pid);
	}
	/* TERM, up to 2 s of grace and up to 2 s of KILL rounds on the box. */
	block_for(c, 15000);
	LIBSSH2_CHANNEL *k = libssh2_channel_open_session(c->session);
	int rc = 0;
	if (!k || libssh2_channel_exec(k, cmd) != 0) {
		rc = bg_fail(err, BG_EREMOTE, "%s: cannot send the kill: %s", c->target->name,
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
	free(cmd);
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
