/* boxgate-agent's output (output.c): the byte queues every write to stdout and
 * stderr goes through, the framing, the end line and the exit. */
#ifndef BG_GATE_AGENT_OUTPUT_H
#define BG_GATE_AGENT_OUTPUT_H

#include "gate/agent/agent.h"

/* Bytes queued for a non-blocking fd: a strbuf consumed from the front. */
struct byteq {
	strbuf sb;
	size_t off;
};

void bq_add(struct byteq *q, const char *data, size_t n);
size_t bq_used(const struct byteq *q);
const char *bq_data(const struct byteq *q);
void bq_consume(struct byteq *q, size_t n);
void bq_release(struct byteq *q);

/* The agent's stdout and stderr. Everything written there goes through these queues so
 * that the gate's lines and the agent's own lines keep their order and stay whole, and so
 * that a reader that stops reading never blocks the watchdog. */
struct outq {
	int fd;
	struct byteq q;
	int dead;    /* the fd failed: output is dropped */
	int midline; /* the last queued byte was not a newline */
};

extern struct outq g_out[2];
extern int g_output_gone; /* a write failed with EPIPE or the like */
/* Framing (--nonce-stdin): AGENT_FRAME NONCE " " before each stdout line of the agent's
 * own, empty when not framed; the end line's "why" and extra fields. */
extern char g_frame[96];
extern const char *g_end_why;
extern char g_end_extra[96];
/* The client's liveness as the final flush sees it: stdin still watched, the heartbeat
 * timeout, and when bytes last came in on stdin. */
extern int g_watch_stdin;
extern long long g_hb_ms, g_alive_ms;

void out_add(struct outq *o, const char *data, size_t n);
/* Queues one whole line of the agent's own, starting a fresh line when needed. */
void out_line(struct outq *o, const char *line, size_t n);
/* PREFIX and FMT's text in buf[0..size) (size at least 2), cut to fit, ending
 * in a newline; returns its length. */
size_t msg_vformat(char *buf, size_t size, const char *prefix, const char *fmt, va_list ap);
/* A line "boxgate-agent: ..." on stderr. */
void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A line on stdout. */
void print_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int out_write_some(struct outq *o);
void out_flush(long long deadline);
/* The framed end line (when framed), the final flush, exit. */
void agent_exit(int rc) __attribute__((noreturn));
void usage_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void json_escape(strbuf *b, const char *s);

#endif
