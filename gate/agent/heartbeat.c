/* The client on stdin: the nonce line, heartbeats and the kill word. */
#include "gate/agent/watchdog.h"

/* Longer stdin lines are not the protocol: they still count as a heartbeat. */
#define STDIN_LINE_MAX 1024

static int is_word(const char *line, size_t n, const char *word)
{
	return n == strlen(word) && !memcmp(line, word, n);
}

/* "nonce HEX": from now on every stdout line of the agent's own is framed. */
static void take_nonce(const char *p, size_t len)
{
	size_t pre = strlen(AGENT_IN_NONCE), h = len > pre ? len - pre : 0;
	if (len < pre || memcmp(p, AGENT_IN_NONCE, pre) != 0 || h < AGENT_NONCE_HEX_MIN ||
	    h > AGENT_NONCE_HEX_MAX || strspn(p + pre, "0123456789abcdef") < h)
		usage_fail("--nonce-stdin: the first stdin line is not 'nonce HEX'");
	snprintf(g_frame, sizeof g_frame, AGENT_FRAME "%.*s ", (int)h, p + pre);
}

static void on_stdin_line(void *ctx, const char *line, size_t n, int flags)
{
	struct run *r = ctx;
	int whole = !(flags & LINE_PARTIAL) && !r->stdin_long;
	r->stdin_long = (flags & LINE_PARTIAL) != 0;
	r->hb_last_ms = bg_now_ms();
	if (r->nonce_stdin && !g_frame[0]) {
		if (!whole)
			usage_fail("--nonce-stdin: the first stdin line is not 'nonce HEX'");
		take_nonce(line, n);
		return;
	}
	if (!whole)
		return;
	while (n && (line[n - 1] == '\r' || line[n - 1] == ' '))
		n--;
	if (is_word(line, n, AGENT_IN_HEARTBEAT))
		return;
	if (is_word(line, n, AGENT_IN_KILL)) {
		trigger(r, W_KILLREQ);
		return;
	}
	if (n)
		msg("ignoring unknown stdin line '%.*s'", (int)(n > 40 ? 40 : n), line);
}

void stdin_init(struct run *r)
{
	lines_init(&r->stdin_lines, STDIN_LINE_MAX, on_stdin_line, r);
}

void read_stdin(struct run *r)
{
	char b[4096];
	ssize_t k = read(0, b, sizeof b);
	if (k < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (k <= 0) {
		r->stdin_open = 0;
		g_watch_stdin = 0;
		trigger(r, W_EOF);
		return;
	}
	g_alive_ms = bg_now_ms();
	r->hb_last_ms = g_alive_ms; /* any byte is a heartbeat, a line in pieces too */
	lines_feed(&r->stdin_lines, b, (size_t)k);
}

/* --nonce-stdin: the first stdin line is the nonce, chosen by the client for
 * this run and never on the command line or in the environment, so the gate,
 * which never sees the agent's stdin, cannot print a line the client would
 * take for the agent's. Waits at most the heartbeat timeout (30 s without). */
void read_nonce(struct run *r)
{
	long long deadline = bg_now_ms() + (r->hb_ms ? r->hb_ms : 30000);
	while (!g_frame[0]) {
		long long left = deadline - bg_now_ms();
		if (left <= 0)
			usage_fail("--nonce-stdin: no nonce on stdin");
		struct pollfd pf = {.fd = 0, .events = POLLIN};
		if (poll(&pf, 1, (int)left) <= 0)
			continue;
		char b[256];
		ssize_t k = read(0, b, sizeof b);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k <= 0) {
			msg("stdin closed before the nonce: client gone");
			agent_exit(AGENT_EXIT_CLIENT_GONE);
		}
		/* Lines after the nonce in the same read are handled at once; a kill among
		 * them is acted on when the gate has started (cmd_run). */
		lines_feed(&r->stdin_lines, b, (size_t)k);
	}
	r->hb_last_ms = g_alive_ms = bg_now_ms();
}
