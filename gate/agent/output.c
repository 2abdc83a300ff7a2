/* The agent's stdout and stderr: queued, written whole lines at a time
 * without ever blocking, framed with the run's nonce, and the last line. */
#include "gate/agent/output.h"

struct outq g_out[2] = {{.fd = 1}, {.fd = 2}};
int g_output_gone;
char g_frame[96];
const char *g_end_why;
char g_end_extra[96];
int g_watch_stdin;
long long g_hb_ms, g_alive_ms;

/* A byte queue: a strbuf read from the front. */
void bq_add(struct byteq *q, const char *data, size_t n)
{
	/* Reclaim the consumed front once it is most of the buffer. */
	if (q->off && q->off >= q->sb.len / 2) {
		memmove(q->sb.buf, q->sb.buf + q->off, q->sb.len - q->off);
		q->sb.len -= q->off;
		q->off = 0;
	}
	strbuf_add(&q->sb, data, n);
}

size_t bq_used(const struct byteq *q)
{
	return q->sb.len - q->off;
}

const char *bq_data(const struct byteq *q)
{
	return strbuf_str(&q->sb) + q->off;
}

void bq_consume(struct byteq *q, size_t n)
{
	q->off += n;
	if (q->off == q->sb.len) {
		strbuf_reset(&q->sb);
		q->off = 0;
	}
}

void bq_release(struct byteq *q)
{
	strbuf_release(&q->sb);
	q->off = 0;
}

void out_add(struct outq *o, const char *data, size_t n)
{
	if (!n || o->dead)
		return;
	bq_add(&o->q, data, n);
	o->midline = data[n - 1] != '\n';
}

/* Queue one whole line of the agent's own, starting a fresh line when needed. */
void out_line(struct outq *o, const char *line, size_t n)
{
	if (o->midline)
		out_add(o, "\n", 1);
	out_add(o, line, n);
	if (!n || line[n - 1] != '\n')
		out_add(o, "\n", 1);
}

size_t msg_vformat(char *buf, size_t size, const char *prefix, const char *fmt, va_list ap)
{
	int k = snprintf(buf, size, "%s", prefix);
	if (k < 0)
		k = 0;
	if ((size_t)k > size - 2)
		k = (int)(size - 2);
	int n = vsnprintf(buf + k, size - (size_t)k - 1, fmt, ap);
	size_t len = (size_t)k + (n > 0 ? (size_t)n : 0);
	if (len > size - 2)
		len = size - 2;
	buf[len++] = '\n';
	return len;
}

void msg(const char *fmt, ...)
{
	char tmp[2048];
	va_list ap;
	va_start(ap, fmt);
	size_t len = msg_vformat(tmp, sizeof tmp, "boxgate-agent: ", fmt, ap);
	va_end(ap);
	out_line(&g_out[1], tmp, len);
}

/* Write what one write(2) can take without blocking: at most PIPE_BUF bytes, ending at a
 * newline when one lies within them. Returns -1 when the fd is gone. */
int out_write_some(struct outq *o)
{
	size_t n = bq_used(&o->q);
	if (!n || o->dead)
		return 0;
	const char *p = bq_data(&o->q);
	size_t chunk = n;
	if (chunk > PIPE_BUF) {
		chunk = PIPE_BUF;
		const char *nl = memrchr(p, '\n', PIPE_BUF);
		if (nl)
			chunk = (size_t)(nl - p) + 1;
	}
	ssize_t w = write(o->fd, p, chunk);
	if (w < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		o->dead = 1;
		bq_release(&o->q);
		return -1;
	}
	bq_consume(&o->q, (size_t)w);
	return 0;
}

/* Writes what is queued on stdout and stderr until it is all out or
 * `deadline` passes. With `final` (the last flush before exit) a client that
 * still sends bytes on stdin is only slow to read (its own stdout may be
 * blocked): waiting for it loses nothing, so the deadline moves to a
 * heartbeat-timeout after the last byte; EOF on stdin ends the wait at once. */
void out_flush_until(long long deadline0, int final)
{
	for (;;) {
		struct pollfd pf[3];
		int n = 0;
		for (int i = 0; i < 2; i++)
			if (!g_out[i].dead && bq_used(&g_out[i].q))
				pf[n++] = (struct pollfd){.fd = g_out[i].fd, .events = POLLOUT};
		if (!n)
			return;
		int outs = n;
		int client = final && g_watch_stdin;
		long long deadline = deadline0;
		if (client && g_hb_ms && g_alive_ms + g_hb_ms > deadline)
			deadline = g_alive_ms + g_hb_ms;
		long long left = deadline - bg_now_ms();
		if (left <= 0)
			return;
		if (client)
			pf[n++] = (struct pollfd){.fd = 0, .events = POLLIN};
		int r = poll(pf, (nfds_t)n, (int)(left > 60000 ? 60000 : left));
		if (r < 0 && errno != EINTR)
			return;
		for (int i = 0; i < n; i++) {
			if (!pf[i].revents)
				continue;
			if (i == outs) {
				char b[4096];
				ssize_t k = read(0, b, sizeof b);
				if (k > 0)
					g_alive_ms = bg_now_ms();
				else if (k == 0 || (errno != EINTR && errno != EAGAIN))
					return; /* the client went away: nobody reads the rest */
				continue;
			}
			struct outq *o = pf[i].fd == 1 ? &g_out[0] : &g_out[1];
			if (pf[i].revents & POLLNVAL) {
				o->dead = 1;
				bq_release(&o->q);
			} else if (pf[i].revents & (POLLOUT | POLLERR | POLLHUP)) {
				out_write_some(o);
			}
		}
	}
}

void out_flush(long long deadline)
{
	out_flush_until(deadline, 0);
}

/* The final flush: at least FINAL_FLUSH_MS, longer while the client is alive. */
void out_flush_final(void)
{
	out_flush_until(bg_now_ms() + FINAL_FLUSH_MS, 1);
}

/* ,"slurm_job":"J","slurm_step":"S","slurm_node":"N" when Slurm started the agent;
 * a value with anything but [A-Za-z0-9._-] is left out. */
static void slurm_fields(char *out, size_t n)
{
	static const char *const env[][2] = {{"SLURM_JOB_ID", AGENT_END_SLURM_JOB},
					     {"SLURM_STEP_ID", AGENT_END_SLURM_STEP},
					     {"SLURMD_NODENAME", AGENT_END_SLURM_NODE}};
	size_t used = 0;
	out[0] = 0;
	if (!getenv("SLURM_JOB_ID"))
		return;
	for (size_t i = 0; i < sizeof env / sizeof env[0]; i++) {
		const char *v = getenv(env[i][0]);
		if (!v || !*v || strlen(v) > 64 ||
		    strspn(v,
			   "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
			    strlen(v))
			continue;
		int k = snprintf(out + used, n - used, ",\"%s\":\"%s\"", env[i][1], v);
		if (k < 0 || (size_t)k >= n - used) {
			out[used] = 0;
			return;
		}
		used += (size_t)k;
	}
}

void agent_exit(int rc)
{
	if (g_frame[0]) {
		/* The last line of a framed run: how the agent itself ends, so that the client can
		 * tell the agent's exit codes from the same numbers returned by a gate. */
		char line[640], slurm[256];
		slurm_fields(slurm, sizeof slurm);
		int n = snprintf(line, sizeof line,
				 "%s" AGENT_END "{\"" AGENT_END_RC "\":%d,\"" AGENT_END_WHY
				 "\":\"%s\"%s%s}\n",
				 g_frame, rc, g_end_why ? g_end_why : agent_exit_word(rc),
				 g_end_extra, slurm);
		if (n > 0 && (size_t)n < sizeof line)
			out_line(&g_out[0], line, (size_t)n);
	}
	out_flush_final();
	bq_release(&g_out[0].q);
	bq_release(&g_out[1].q);
	exit(rc);
}

void usage_fail(const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	msg("%s", tmp);
	msg("usage: boxgate-agent version | gpus | procs [--gpus LIST] | run [options] -- CMD "
	    "ARGS...");
	agent_exit(AGENT_EXIT_USAGE);
}

void print_line(const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof tmp - 2)
		n = (int)sizeof tmp - 2;
	tmp[n++] = '\n';
	out_add(&g_out[0], tmp, (size_t)n);
}

/* JSON string body (no quotes) for s. base/ writes JSON through cJSON, which
 * the agent cannot link: this is the one escaper on the box. */
void json_escape(strbuf *b, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			strbuf_addf(b, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			strbuf_addf(b, "\\u%04x", *p);
		else
			strbuf_addch(b, (char)*p);
	}
}
