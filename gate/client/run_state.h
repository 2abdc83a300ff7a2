/* The judging of one gate run's stream, shared by gate_run (a channel of its
 * own) and the serving agent (gate/client/serve.c, one channel for many jobs):
 * private to gate/client/. */
#ifndef BG_GATE_CLIENT_RUN_STATE_H
#define BG_GATE_CLIENT_RUN_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gate/client/run.h"

/* One line or one judged result on its way to the callbacks. */
struct ev {
	struct ev *next;
	gate_result *res; /* a result (owned), else a line */
	remote_stream s;
	int flags;
	size_t len;
	char line[];
};

struct evq {
	pthread_mutex_t mu;
	pthread_cond_t more, room;
	struct ev *head, *tail;
	size_t bytes;
	bool closing, threaded;
	/* Held back instead of delivered (gate_run_with's `hold`): every event
	 * until the first line framed with the run's nonce, up to
	 * GATE_HOLD_MAX bytes. */
	bool holding;
	struct ev *held_head, *held_tail;
	size_t held_bytes;
	pthread_t th;
	const gate_callbacks *cb;
};

enum line_class { L_OTHER, L_RESULT, L_AGENT, L_FORGED };

struct run_state {
	const gate_callbacks *cb;
	const gate_policy *policy;
	gate_outcome *out;
	struct evq q;
	remote_exec *e;
	volatile sig_atomic_t *stop;
	bool kill_sent;
	int64_t next_hb;
	char frame[80]; /* "@boxgate-agent NONCE " */
	size_t frame_len;
	bool midline;        /* the last stdout piece was LINE_PARTIAL */
	enum line_class cls; /* of the stdout line being received */
	strbuf pending;      /* a result or agent line arriving in pieces (bounded) */
	/* The agent's verdict line (TIMEOUT_HANG, INVALID), framed, and its parse: held
	 * back until the end report agrees with it. */
	strbuf held_line;
	gate_result held;
	bool has_held;
	int64_t locked_ms; /* when the agent said it holds the slot, 0 before */
	/* A prelude's stdout lines (gate_run_with), taken out of the stream until
	 * its end line: pre_open until then, pre_mid inside one of its lines. */
	const gate_prelude *pre;
	bool pre_open, pre_mid;
};

/* Starts judging a run: a fresh nonce, its "nonce HEX\n" line in nonce_line
 * (for the agent's stdin, first), the callbacks' writer thread. */
void gate_rs_init(struct run_state *rs, const gate_policy *policy, const gate_callbacks *cb,
		  volatile sig_atomic_t *stop, gate_outcome *out, char *nonce_line, size_t n);
/* remote_line_cb for the run's output (ctx: the run_state). */
void gate_rs_line(void *arg, remote_stream s, const char *line, size_t len, int flags);
/* Heartbeat and a pending Ctrl-C on rs->e's stdin. */
void gate_rs_pump(struct run_state *rs);
/* The agent holds the slot but gave no end report within the run limit and
 * GATE_END_SLACK_S: given up on. */
bool gate_rs_stalled(const struct run_state *rs);
/* The held agent verdict released, every callback returned, memory freed. */
void gate_rs_release_held(struct run_state *rs);
void gate_rs_finish(struct run_state *rs);
/* Lines held back while it is not known that the agent runs. */
#define GATE_HOLD_MAX ((size_t)256 * 1024)

/* gate_run with a prelude (NULL: none) whose lines are taken out of the
 * stream before the agent's. With `hold`, what comes before the first line
 * framed with the run's nonce is held back: delivered once one arrives (or
 * past GATE_HOLD_MAX bytes, or when the command did not exit), dropped when
 * the command exited without one (out->unframed_dropped): then what ran was
 * not the agent, and nothing of it reaches the callbacks. */
int gate_run_with(remote_conn *c, const char *cmdline, const gate_prelude *pre, bool hold,
		  const gate_policy *policy, const gate_callbacks *cb, volatile sig_atomic_t *stop,
		  gate_outcome *out, bg_err *err);

#endif
