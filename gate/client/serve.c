#include "gate/client/serve.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/lines.h"
#include "base/strbuf.h"
#include "base/timer.h"
#include "base/xmalloc.h"
#include "gate/agent_proto.h"
#include "gate/client/run_state.h"

/* The job line's limit: well within the serving agent's (512 KiB) and an
 * SSH packet's. */
#define SERVE_JOB_LINE_MAX (200 * 1024)
/* What of a stream's last partial pieces is kept to find a marker cut across
 * two pieces: the frame and the marker's word. */
#define TAIL_MAX 128

struct gate_served {
	remote_conn *c;
	remote_exec *e;
	bool dead;
	int64_t idle_since; /* when the last job ended (or the agent started) */
	int wake[2];        /* written when a job's last marker arrives */
	/* the running job, NULL between jobs */
	struct run_state *job;
	bool got_out, got_err; /* its markers */
	remote_status job_status;
	bool midline[3];        /* per stream: the last piece was LINE_PARTIAL */
	char tail[3][TAIL_MAX]; /* per stream: the end of the partial line so far */
	size_t tail_len[3];
	char note[200]; /* the serving agent's last stderr line between jobs */
};

bool gate_serve_takes(const char *cmdline)
{
	return strlen(cmdline) * 2 + 200 < SERVE_JOB_LINE_MAX;
}

static void wake(gate_served *sv)
{
	char b = 1;
	/* non-blocking: a full pipe wakes the wait as well */
	ssize_t r = write(sv->wake[1], &b, 1);
	(void)r;
}

/* The serving agent's marker at the end of `line` ("FRAME served" on stderr,
 * "FRAME served {...}" on stdout): how many bytes before it belong to the job,
 * or -1 when the line does not end with one. */
static long marker_at(const gate_served *sv, remote_stream s, const char *line, size_t len)
{
	const struct run_state *rs = sv->job;
	char pat[120];
	int n = snprintf(pat, sizeof(pat), "%s" AGENT_SERVE_DONE, rs->frame);
	if (n <= 0 || (size_t)n >= sizeof(pat))
		return -1;
	size_t pl = (size_t)n;
	if (s == REMOTE_STDERR)
		return len >= pl && memcmp(line + len - pl, pat, pl) == 0 ? (long)(len - pl) : -1;
	/* stdout: the last occurrence, followed by " {...}" to the end */
	for (size_t i = len >= pl ? len - pl + 1 : 0; i-- > 0;) {
		if (memcmp(line + i, pat, pl) != 0)
			continue;
		const char *j = line + i + pl;
		size_t jl = len - i - pl;
		if (jl >= 3 && j[0] == ' ' && j[1] == '{' && j[jl - 1] == '}')
			return (long)i;
		return -1;
	}
	return -1;
}

/* {"exit":N} or {"signal":N}: the job's shell's status, as the box's exit
 * status would have said it (an ssh box reports a status above 128 as its
 * signal, as remote/ssh_exec.c's wrapper does). */
static void take_status(gate_served *sv, const char *j, size_t n)
{
	char buf[64];
	snprintf(buf, sizeof(buf), "%.*s", (int)(n < sizeof(buf) - 1 ? n : sizeof(buf) - 1), j);
	remote_status *st = &sv->job_status;
	memset(st, 0, sizeof(*st));
	int v = -1, sig = 0;
	if (sscanf(buf, " {\"" AGENT_SERVE_EXIT "\":%d}", &v) == 1 && v >= 0 && v <= 255) {
		st->how = REMOTE_EXITED;
		st->code = v;
		bool ssh = remote_target_of(sv->c)->transport != REMOTE_TRANSPORT_LOCAL;
		if (ssh && v > 128 && v - 128 < 65 && sigabbrev_np(v - 128))
			sig = v - 128;
	} else if (sscanf(buf, " {\"" AGENT_SERVE_SIGNAL "\":%d}", &v) == 1 && v > 0 && v < 65) {
		sig = v;
	} else {
		st->how = REMOTE_LOST;
		return;
	}
	if (sig) {
		st->how = REMOTE_SIGNALED;
		st->code = 128 + sig;
		snprintf(st->signal, sizeof(st->signal), "%s",
			 sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
	}
}

static void keep_tail(gate_served *sv, remote_stream s, const char *line, size_t len)
{
	int k = s == REMOTE_STDERR ? 2 : 1;
	char *t = sv->tail[k];
	size_t *tl = &sv->tail_len[k];
	if (len >= TAIL_MAX) {
		memcpy(t, line + len - TAIL_MAX, TAIL_MAX);
		*tl = TAIL_MAX;
		return;
	}
	if (*tl + len > TAIL_MAX) {
		size_t drop = *tl + len - TAIL_MAX;
		memmove(t, t + drop, *tl - drop);
		*tl -= drop;
	}
	memcpy(t + *tl, line, len);
	*tl += len;
}

/* The bytes after "FRAME served" on stdout: the status. */
static void status_after(gate_served *sv, const char *line, size_t len, size_t at)
{
	size_t skip = at + strlen(sv->job->frame) + strlen(AGENT_SERVE_DONE);
	take_status(sv, line + skip, len - skip);
}

static void on_line(void *ctx, remote_stream s, const char *line, size_t len, int flags)
{
	gate_served *sv = ctx;
	int k = s == REMOTE_STDERR ? 2 : 1;
	if (!sv->job) {
		if (s == REMOTE_STDERR && !(flags & LINE_PARTIAL))
			snprintf(sv->note, sizeof(sv->note), "%.*s",
				 (int)(len < sizeof(sv->note) ? len : sizeof(sv->note) - 1), line);
		return;
	}
	if (flags & LINE_PARTIAL) {
		keep_tail(sv, s, line, len);
		sv->midline[k] = true;
		gate_rs_line(sv->job, s, line, len, flags);
		return;
	}
	bool was_mid = sv->midline[k];
	long at = marker_at(sv, s, line, len);
	bool cut = false;
	if (at < 0 && was_mid && sv->tail_len[k]) {
		/* a marker cut across two pieces (only after a line of more than a
		 * megabyte): its start went out with the piece before */
		strbuf joined = STRBUF_INIT;
		strbuf_add(&joined, sv->tail[k], sv->tail_len[k]);
		strbuf_add(&joined, line, len);
		long j = marker_at(sv, s, joined.buf, joined.len);
		if (j >= 0 && (size_t)j < sv->tail_len[k]) {
			cut = true;
			if (s == REMOTE_STDOUT)
				status_after(sv, joined.buf, joined.len, (size_t)j);
		}
		strbuf_release(&joined);
	}
	sv->midline[k] = false;
	sv->tail_len[k] = 0;
	if (!cut && at < 0) {
		gate_rs_line(sv->job, s, line, len, flags);
		return;
	}
	if (cut)
		gate_rs_line(sv->job, s, "", 0, LINE_NO_EOL);
	else if (at > 0 || was_mid)
		gate_rs_line(sv->job, s, line, (size_t)at, LINE_NO_EOL);
	if (!cut && s == REMOTE_STDOUT)
		status_after(sv, line, len, (size_t)at);
	if (s == REMOTE_STDOUT)
		sv->got_out = true;
	else
		sv->got_err = true;
	if (sv->got_out && sv->got_err)
		wake(sv);
}

int gate_serve_open(remote_conn *c, const char *agent, gate_served **out, bg_err *err)
{
	gate_served *sv = xcalloc(1, sizeof(*sv));
	sv->c = c;
	sv->wake[0] = sv->wake[1] = -1;
	*out = NULL;
	if (pipe2(sv->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		int rc = bg_fail(err, BG_EIO, "pipe: %s", strerror(errno));
		free(sv);
		return rc;
	}
	char *cmd =
		xasprintf("%s " AGENT_CMD_SERVE " " AGENT_OPT_IDLE " %d", agent, GATE_SERVE_IDLE_S);
	remote_exec_opts o = {.on_line = on_line, .ctx = sv, .max_line = 0};
	int rc = remote_exec_start(c, cmd, &o, &sv->e, err);
	free(cmd);
	if (rc < 0) {
		gate_serve_close(sv);
		return rc;
	}
	sv->idle_since = bg_now_ms();
	*out = sv;
	return 0;
}

bool gate_serve_usable(const gate_served *sv)
{
	return sv && !sv->dead && bg_now_ms() - sv->idle_since < GATE_SERVE_IDLE_S * 1000 / 2;
}

static void job_line(strbuf *b, const char *hex, const char *cmdline)
{
	strbuf_addstr(b, AGENT_SERVE_JOB);
	strbuf_addstr(b, hex);
	strbuf_addch(b, ' ');
	for (const char *p = cmdline; *p; p++) {
		if (*p == '\\')
			strbuf_addstr(b, "\\\\");
		else if (*p == '\n')
			strbuf_addstr(b, "\\n");
		else if (*p == '\r')
			strbuf_addstr(b, "\\r");
		else
			strbuf_addch(b, *p);
	}
	strbuf_addch(b, '\n');
}

int gate_serve_run(gate_served *sv, const char *cmdline, const gate_policy *policy,
		   const gate_callbacks *cb, volatile sig_atomic_t *stop, gate_outcome *out,
		   bg_err *err)
{
	struct run_state rs;
	char nonce_line[64];
	strbuf line = STRBUF_INIT;
	int rc = 0;
	const char *box = remote_target_of(sv->c)->name;

	gate_rs_init(&rs, policy, cb, stop, out, nonce_line, sizeof(nonce_line));
	/* the serving agent writes the nonce line itself: the hex goes in the job line */
	const char *hex = nonce_line + strlen(AGENT_IN_NONCE);
	char hexbuf[2 * AGENT_NONCE_HEX_MAX + 1];
	snprintf(hexbuf, sizeof(hexbuf), "%.*s", (int)strcspn(hex, "\n"), hex);
	job_line(&line, hexbuf, cmdline);
	char drainb[64];
	while (read(sv->wake[0], drainb, sizeof(drainb)) > 0)
		;
	sv->job = &rs;
	sv->got_out = sv->got_err = false;
	memset(sv->midline, 0, sizeof(sv->midline));
	memset(sv->tail_len, 0, sizeof(sv->tail_len));
	sv->note[0] = '\0';
	remote_exec_write_request(sv->e, line.buf, line.len);
	strbuf_release(&line);
	rs.e = sv->e;
	for (;;) {
		gate_rs_pump(&rs);
		int64_t now = bg_now_ms();
		int64_t tick = now + 250 < rs.next_hb ? now + 250 : rs.next_hb;
		remote_status st;
		int w = remote_exec_pump(sv->e, tick, sv->wake[0], &st, err);
		if (sv->got_out && sv->got_err) {
			out->status = sv->job_status;
			break;
		}
		if (w < 0) {
			rc = w;
			break;
		}
		if (w > 0) {
			/* the serving agent ended without the job's end: what it
			 * said is the job's output; the job is as lost as on a
			 * connection lost */
			char how[96];
			remote_status_describe(&st, how, sizeof(how));
			rc = bg_fail(err, BG_ECONNECT,
				     "%s: the serving agent ended (%s) during the job", box, how);
			break;
		}
		if (gate_rs_stalled(&rs)) {
			out->agent_stalled = true;
			break;
		}
	}
	sv->job = NULL;
	if (rc < 0 || out->agent_stalled || out->status.how == REMOTE_LOST) {
		sv->dead = true;
		if (rc < 0) {
			/* what the run said after its client (the serving agent)
			 * vanished is no report of its own: as a lost channel */
			memset(&out->status, 0, sizeof(out->status));
			out->status.how = REMOTE_LOST;
			out->agent_end = false;
		}
	}
	sv->idle_since = bg_now_ms();
	rs.e = NULL;
	gate_rs_finish(&rs);
	return rc;
}

void gate_serve_close(gate_served *sv)
{
	if (!sv)
		return;
	if (sv->e) {
		remote_exec_close_stdin(sv->e);
		remote_exec_free(sv->e);
	}
	if (sv->wake[0] >= 0)
		close(sv->wake[0]);
	if (sv->wake[1] >= 0)
		close(sv->wake[1]);
	free(sv);
}
