#include "gate/client/run.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/random.h"
#include "base/lines.h"
#include "base/strbuf.h"
#include "base/timer.h"
#include "base/xmalloc.h"
#include "gate/agent_proto.h"
#include "gate/client/run_state.h"
#include "remote/slurm.h"

static void add_opt(strbuf *s, const char *name, const char *value)
{
	strbuf_addch(s, ' ');
	strbuf_addstr(s, name);
	strbuf_addch(s, ' ');
	bg_quote(s, value);
}

/* Milliseconds as the agent reads seconds: "5", "0.5", "0.125". */
static void add_secs(strbuf *s, const char *name, long long ms)
{
	char buf[40];
	if (ms % 1000 == 0)
		snprintf(buf, sizeof(buf), "%lld", ms / 1000);
	else
		snprintf(buf, sizeof(buf), "%lld.%03lld", ms / 1000, ms % 1000);
	add_opt(s, name, buf);
}

static void add_int(strbuf *s, const char *name, int v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%d", v);
	add_opt(s, name, buf);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

int gate_run_limit_s(const gate_spec *spec)
{
	return spec->timeout_s + (int)((spec->grace_ms + 999) / 1000);
}

char *gate_command_line(const gate_spec *g)
{
	strbuf s = STRBUF_INIT;
	const gate_box *b = &g->box;
	if (b->slurm)
		remote_slurm_step(&s, b->slurm);
	strbuf_addstr(&s, g->agent);
	strbuf_addstr(&s, " " AGENT_CMD_RUN " " AGENT_OPT_NONCE_STDIN);
	if (b->slurm)
		strbuf_addstr(&s, " " AGENT_OPT_GPUS_FROM_ENV);
	else if (g->gpus)
		add_opt(&s, AGENT_OPT_GPUS, g->gpus);
	if (g->tag)
		add_opt(&s, AGENT_OPT_TAG, g->tag);
	add_int(&s, AGENT_OPT_TIMEOUT, g->timeout_s);
	add_secs(&s, AGENT_OPT_GRACE, g->grace_ms);
	add_secs(&s, AGENT_OPT_HEARTBEAT, g->heartbeat_ms);
	add_int(&s, AGENT_OPT_LOCK_WAIT, g->lock_wait_s);
	add_opt(&s, AGENT_OPT_REQUIRE_GPU, g->require_gpu ? "yes" : "no");
	if (g->cwd) {
		add_opt(&s, AGENT_OPT_CWD, g->cwd);
	} else if (b->repo) {
		strbuf_addstr(&s, " " AGENT_OPT_CWD " ");
		bg_quote_path(&s, b->repo);
	}
	for (size_t i = 0; g->shim && i < g->shim->n_env; i++)
		add_opt(&s, AGENT_OPT_ENV, g->shim->env[i]);
	if (g->env)
		add_opt(&s, AGENT_OPT_ENV, g->env);
	strbuf_addstr(&s, " --");
	if (ends_with(g->entry, ".py")) {
		strbuf_addch(&s, ' ');
		bg_quote(&s, b->python ? b->python : "python3");
	}
	strbuf_addch(&s, ' ');
	if (g->entry[0] == '~') {
		bg_quote_path(&s, g->entry);
	} else if (!strchr(g->entry, '/')) {
		/* Relative to the repo, never looked up in PATH. */
		char *rel = xasprintf("./%s", g->entry);
		bg_quote(&s, rel);
		free(rel);
	} else {
		bg_quote(&s, g->entry);
	}
	for (size_t i = 0; g->shim && i < g->shim->n_argv; i++) {
		strbuf_addch(&s, ' ');
		bg_quote(&s, g->shim->argv[i]);
	}
	return strbuf_detach(&s);
}

/* ---------------------------------------------------------------- delivery queue */

static void ev_deliver(const gate_callbacks *cb, struct ev *e)
{
	if (e->res) {
		if (cb->on_result)
			cb->on_result(cb->ctx, e->res);
		gate_result_release(e->res);
		free(e->res);
	} else if (cb->on_line) {
		cb->on_line(cb->ctx, e->s, e->line, e->len, e->flags);
	}
	free(e);
}

static void *evq_writer(void *arg)
{
	struct evq *q = arg;
	for (;;) {
		pthread_mutex_lock(&q->mu);
		while (!q->head && !q->closing)
			pthread_cond_wait(&q->more, &q->mu);
		struct ev *e = q->head;
		if (!e) {
			pthread_mutex_unlock(&q->mu);
			return NULL;
		}
		q->head = e->next;
		if (!q->head)
			q->tail = NULL;
		q->bytes -= sizeof(*e) + e->len;
		pthread_cond_signal(&q->room);
		pthread_mutex_unlock(&q->mu);
		ev_deliver(q->cb, e);
	}
}

static void evq_init(struct evq *q, const gate_callbacks *cb)
{
	memset(q, 0, sizeof(*q));
	q->cb = cb;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->more, NULL);
	pthread_cond_init(&q->room, NULL);
	/* The writer starts with the caller's signals blocked, so that Ctrl-C reaches the
	 * thread that forwards it, never interrupts a write of output. Without a thread the
	 * callbacks run inline: correct, only not shielded from a slow reader. */
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGQUIT);
	sigaddset(&block, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	q->threaded = pthread_create(&q->th, NULL, evq_writer, q) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void evq_release_held(struct evq *q);

static void evq_push(struct evq *q, struct ev *e)
{
	if (q->holding) {
		if (q->held_tail)
			q->held_tail->next = e;
		else
			q->held_head = e;
		q->held_tail = e;
		q->held_bytes += sizeof(*e) + e->len;
		if (q->held_bytes > GATE_HOLD_MAX)
			evq_release_held(q);
		return;
	}
	if (!q->threaded) {
		ev_deliver(q->cb, e);
		return;
	}
	pthread_mutex_lock(&q->mu);
	while (q->bytes > GATE_OUTQ_MAX)
		pthread_cond_wait(&q->room, &q->mu);
	if (q->tail)
		q->tail->next = e;
	else
		q->head = e;
	q->tail = e;
	q->bytes += sizeof(*e) + e->len;
	pthread_cond_signal(&q->more);
	pthread_mutex_unlock(&q->mu);
}

static void evq_push_line(struct evq *q, remote_stream s, const char *line, size_t len, int flags)
{
	struct ev *e = xmalloc(sizeof(*e) + len + 1);
	memset(e, 0, sizeof(*e));
	e->s = s;
	e->flags = flags;
	e->len = len;
	memcpy(e->line, line, len);
	e->line[len] = '\0';
	evq_push(q, e);
}

static void evq_push_result(struct evq *q, gate_result *r)
{
	struct ev *e = xcalloc(1, sizeof(*e));
	e->res = xmalloc(sizeof(*r));
	*e->res = *r; /* ownership moves to the event */
	memset(r, 0, sizeof(*r));
	evq_push(q, e);
}

/* What was held back goes on its way, in order; nothing is held from now on. */
static void evq_release_held(struct evq *q)
{
	struct ev *e = q->held_head;
	q->holding = false;
	q->held_head = q->held_tail = NULL;
	q->held_bytes = 0;
	while (e) {
		struct ev *next = e->next;
		e->next = NULL;
		evq_push(q, e);
		e = next;
	}
}

/* What was held back is dropped unseen. */
static void evq_drop_held(struct evq *q)
{
	struct ev *e = q->held_head;
	q->holding = false;
	q->held_head = q->held_tail = NULL;
	q->held_bytes = 0;
	while (e) {
		struct ev *next = e->next;
		if (e->res) {
			gate_result_release(e->res);
			free(e->res);
		}
		free(e);
		e = next;
	}
}

/* Delivers everything queued, then stops the writer. */
static void evq_close(struct evq *q)
{
	if (q->threaded) {
		pthread_mutex_lock(&q->mu);
		q->closing = true;
		pthread_cond_signal(&q->more);
		pthread_mutex_unlock(&q->mu);
		pthread_join(q->th, NULL);
	}
	pthread_mutex_destroy(&q->mu);
	pthread_cond_destroy(&q->more);
	pthread_cond_destroy(&q->room);
}

/* ---------------------------------------------------------------- the run */

/* Heartbeat and Ctrl-C, between waits: remote_exec_wait returns at its
 * deadline even while a gate floods the channel. */
void gate_rs_pump(struct run_state *rs)
{
	if (!rs->e)
		return;
	if (rs->stop && *rs->stop && !rs->kill_sent) {
		/* No channel signals in libssh2 1.10: the agent takes "kill" on stdin. */
		remote_exec_write(rs->e, AGENT_IN_KILL "\n", strlen(AGENT_IN_KILL "\n"));
		rs->kill_sent = true;
		rs->out->interrupted = true;
	}
	int64_t now = bg_now_ms();
	if (now >= rs->next_hb) {
		remote_exec_write(rs->e, AGENT_IN_HEARTBEAT "\n", strlen(AGENT_IN_HEARTBEAT "\n"));
		rs->next_hb =
			now + (rs->cb->hb_every_ms > 0 ? rs->cb->hb_every_ms : GATE_HEARTBEAT_MS);
	}
}

/* Printable ASCII excerpt of a line. */
static void excerpt(char *dst, size_t n, const char *line, size_t len)
{
	size_t k = 0;
	for (size_t i = 0; i < len && k + 1 < n; i++)
		dst[k++] = (unsigned char)line[i] >= 0x20 && (unsigned char)line[i] < 0x7f ? line[i]
											   : '?';
	dst[k] = '\0';
}

static void forged(struct run_state *rs, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void forged(struct run_state *rs, const char *fmt, ...)
{
	if (rs->out->forged)
		return; /* the first one is named */
	rs->out->forged = true;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rs->out->forged_why, sizeof(rs->out->forged_why), fmt, ap);
	va_end(ap);
}

static void cuda_check(struct run_state *rs, const char *line, size_t len)
{
	if (rs->out->cuda_error || !gate_line_cuda_error(line, len))
		return;
	rs->out->cuda_error = true;
	excerpt(rs->out->cuda_line, sizeof(rs->out->cuda_line), line, len);
}

static void record_result(struct run_state *rs, gate_result *r, bool hold)
{
	gate_outcome *o = rs->out;
	o->n_results++;
	o->verdict = r->verdict;
	snprintf(o->problems, sizeof(o->problems), "%s", r->problems);
	if (r->source == GATE_FROM_GATE) {
		o->n_gate_results++;
		o->stated = r->stated;
		if (r->forged)
			forged(rs, "%s", r->problems);
	} else if (r->verdict == VERDICT_TIMEOUT_HANG) {
		o->agent_timeout = true;
	} else if (r->stated == VERDICT_INVALID) {
		o->agent_invalid = true;
	}
	if (hold)
		rs->held = *r; /* ownership moves to rs */
	else
		evq_push_result(&rs->q, r);
}

/* The held agent verdict is the watchdog's only when the agent's end report,
 * matching the box's exit status, says the same. */
static bool end_agrees(const gate_outcome *o, const gate_result *r)
{
	if (!o->agent_end || o->status.code != o->agent_rc ||
	    (o->status.how != REMOTE_EXITED && o->status.how != REMOTE_SIGNALED))
		return false;
	if (r->verdict == VERDICT_TIMEOUT_HANG)
		return strcmp(o->agent_why, AGENT_WHY_TIMEOUT) == 0;
	return r->stated == VERDICT_INVALID && strcmp(o->agent_why, AGENT_WHY_INVALID) == 0;
}

/* At the end: the held line goes out unframed as the agent's, or, when the end
 * disagrees, framed as it came, as output that speaks for nobody. */
void gate_rs_release_held(struct run_state *rs)
{
	if (!rs->has_held)
		return;
	if (end_agrees(rs->out, &rs->held)) {
		size_t skip = rs->frame_len;
		evq_push_line(&rs->q, REMOTE_STDOUT, rs->held_line.buf + skip,
			      rs->held_line.len - skip, 0);
		evq_push_result(&rs->q, &rs->held);
	} else {
		evq_push_line(&rs->q, REMOTE_STDOUT, rs->held_line.buf, rs->held_line.len, 0);
		gate_result_release(&rs->held);
	}
	rs->has_held = false;
}

/* `end {"rc":N,"why":"WORD",...}`: the agent's last line. */
static void agent_end(struct run_state *rs, const char *json, size_t len)
{
	char buf[160];
	gate_outcome *o = rs->out;
	if (gate_json_strict_check(json, len, buf, sizeof(buf)))
		return;
	char *z = xstrndup(json, len);
	cJSON *j = cJSON_Parse(z);
	const cJSON *rc = cJSON_GetObjectItemCaseSensitive(j, AGENT_END_RC);
	const cJSON *why = cJSON_GetObjectItemCaseSensitive(j, AGENT_END_WHY);
	const cJSON *ge = cJSON_GetObjectItemCaseSensitive(j, AGENT_END_GATE_EXIT);
	const cJSON *gs = cJSON_GetObjectItemCaseSensitive(j, AGENT_END_GATE_SIGNAL);
	if (cJSON_IsNumber(rc) && cJSON_IsString(why)) {
		o->agent_end = true;
		o->agent_rc = (int)rc->valuedouble;
		snprintf(o->agent_why, sizeof(o->agent_why), "%s", why->valuestring);
		o->gate_exit = cJSON_IsNumber(ge) ? (int)ge->valuedouble : -1;
		o->gate_signal = cJSON_IsNumber(gs) ? (int)gs->valuedouble : -1;
		const cJSON *slot = cJSON_GetObjectItemCaseSensitive(j, AGENT_END_SLOT);
		if (cJSON_IsString(slot) &&
		    strspn(slot->valuestring, "abcdefghijklmnopqrstuvwxyz"
					      "0123456789") == strlen(slot->valuestring))
			snprintf(o->agent_slot, sizeof(o->agent_slot), "%s", slot->valuestring);
		o->slot_disabled =
			cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, AGENT_END_DISABLED));
		static const struct {
			const char *key;
			size_t off, len;
		} slurm[] = {
			{AGENT_END_SLURM_JOB, offsetof(gate_outcome, slurm_job),
			 sizeof(o->slurm_job)},
			{AGENT_END_SLURM_STEP, offsetof(gate_outcome, slurm_step),
			 sizeof(o->slurm_step)},
			{AGENT_END_SLURM_NODE, offsetof(gate_outcome, slurm_node),
			 sizeof(o->slurm_node)},
		};
		for (size_t i = 0; i < sizeof(slurm) / sizeof(slurm[0]); i++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, slurm[i].key);
			if (cJSON_IsString(v))
				snprintf((char *)o + slurm[i].off, slurm[i].len, "%s",
					 v->valuestring);
		}
	}
	cJSON_Delete(j);
	free(z);
}

static void agent_line(struct run_state *rs, const char *line, size_t len)
{
	const char *in = line + rs->frame_len;
	size_t n = len - rs->frame_len;
	rs->out->agent_spoke = true;
	if (gate_is_result_line(in, n)) {
		gate_result r;
		gate_result_parse_from(&r, in, n, rs->policy, GATE_FROM_AGENT);
		if (rs->has_held) {
			/* the agent prints one verdict line: another is someone else's */
			char ex[100];
			excerpt(ex, sizeof(ex), in, n);
			forged(rs, "forged: a second agent verdict line: %s", ex);
			gate_result_release(&r);
			evq_push_line(&rs->q, REMOTE_STDOUT, line, len, 0);
			return;
		}
		rs->has_held = true;
		strbuf_reset(&rs->held_line);
		strbuf_add(&rs->held_line, line, len);
		record_result(rs, &r, true);
	} else if (n > strlen(AGENT_END) && memcmp(in, AGENT_END, strlen(AGENT_END)) == 0) {
		agent_end(rs, in + strlen(AGENT_END), n - strlen(AGENT_END));
	} else if (n >= strlen(AGENT_LOCKED) &&
		   memcmp(in, AGENT_LOCKED, strlen(AGENT_LOCKED)) == 0) {
		if (!rs->locked_ms)
			rs->locked_ms = bg_now_ms();
		if (rs->cb && rs->cb->on_locked)
			rs->cb->on_locked(rs->cb->ctx);
	}
}

/* A prelude's line, or the piece of one: true when it was taken. */
static bool prelude_line(struct run_state *rs, const char *line, size_t len, int flags)
{
	const gate_prelude *pre = rs->pre;
	size_t tl = strlen(pre->tag);
	if (!rs->pre_mid && (rs->midline || len < tl || memcmp(line, pre->tag, tl) != 0))
		return false;
	if (!rs->pre_mid && !(flags & LINE_PARTIAL) && len == tl + 1 && line[tl] == '.') {
		rs->pre_open = false;
		rs->out->prelude_ended = true;
	}
	pre->on_line(pre->ctx, line, len, flags);
	rs->pre_mid = flags & LINE_PARTIAL;
	return true;
}

void gate_rs_line(void *arg, remote_stream s, const char *line, size_t len, int flags)
{
	struct run_state *rs = arg;
	rs->out->output = true;
	if (s == REMOTE_STDOUT && rs->pre_open && prelude_line(rs, line, len, flags))
		return;
	rs->out->output_past_prelude = true;
	if (s != REMOTE_STDOUT) {
		cuda_check(rs, line, len);
		evq_push_line(&rs->q, s, line, len, flags);
		return;
	}
	bool start = !rs->midline;
	if (start) {
		strbuf_reset(&rs->pending);
		if (len >= rs->frame_len && memcmp(line, rs->frame, rs->frame_len) == 0) {
			rs->cls = L_AGENT;
			if (rs->q.holding)
				evq_release_held(&rs->q); /* the agent runs */
		} else if (len >= strlen(AGENT_FRAME) &&
			   memcmp(line, AGENT_FRAME, strlen(AGENT_FRAME)) == 0)
			rs->cls = L_FORGED;
		else if (gate_is_result_line(line, len))
			rs->cls = L_RESULT;
		else
			rs->cls = L_OTHER;
	}
	rs->midline = flags & LINE_PARTIAL;
	if (rs->cls == L_OTHER || rs->cls == L_FORGED) {
		if (rs->cls == L_FORGED && start) {
			char ex[100];
			excerpt(ex, sizeof(ex), line, len);
			forged(rs,
			       "forged: the gate printed a line framed as the agent's, without "
			       "this run's nonce: %s",
			       ex);
		}
		cuda_check(rs, line, len);
		evq_push_line(&rs->q, s, line, len, flags);
		return;
	}
	if (rs->cls == L_RESULT)
		evq_push_line(&rs->q, s, line, len, flags); /* passed on verbatim, piece by piece */
	/* A line longer than the line limit is reassembled (up to just past the result
	 * limit, so that gate_result_parse sees it is too long), never judged in pieces. */
	if (rs->pending.len || (flags & LINE_PARTIAL)) {
		size_t room = GATE_RESULT_MAX_LEN + 1 -
			      (rs->pending.len < GATE_RESULT_MAX_LEN + 1 ? rs->pending.len
									 : GATE_RESULT_MAX_LEN + 1);
		strbuf_add(&rs->pending, line, len < room ? len : room);
		if (flags & LINE_PARTIAL)
			return;
		line = rs->pending.buf;
		len = rs->pending.len;
	}
	if (rs->cls == L_AGENT) {
		agent_line(rs, line, len);
	} else {
		gate_result r;
		gate_result_parse_from(&r, line, len, rs->policy, GATE_FROM_GATE);
		record_result(rs, &r, false);
	}
	strbuf_reset(&rs->pending);
}

void gate_rs_init(struct run_state *rs, const gate_policy *policy, const gate_callbacks *cb,
		  volatile sig_atomic_t *stop, gate_outcome *out, char *nonce_line, size_t n)
{
	char hex[2 * 16 + 1]; /* a 128-bit nonce */
	memset(rs, 0, sizeof(*rs));
	rs->cb = cb;
	rs->policy = policy;
	rs->out = out;
	rs->stop = stop;
	rs->pending = (strbuf)STRBUF_INIT;
	rs->held_line = (strbuf)STRBUF_INIT;
	memset(out, 0, sizeof(*out));
	out->gate_exit = out->gate_signal = -1;
	bg_random_hex(hex, 16);
	snprintf(rs->frame, sizeof(rs->frame), AGENT_FRAME "%s ", hex);
	rs->frame_len = strlen(rs->frame);
	snprintf(nonce_line, n, AGENT_IN_NONCE "%s\n", hex);
	evq_init(&rs->q, cb);
}

bool gate_rs_stalled(const struct run_state *rs)
{
	const gate_policy *policy = rs->policy;
	return policy->run_limit_s > 0 && rs->locked_ms && !rs->out->agent_end &&
	       bg_now_ms() >
		       rs->locked_ms + 1000 * ((int64_t)policy->run_limit_s + GATE_END_SLACK_S);
}

void gate_rs_finish(struct run_state *rs)
{
	gate_rs_release_held(rs);
	evq_close(&rs->q);
	strbuf_release(&rs->pending);
	strbuf_release(&rs->held_line);
}

int gate_run(remote_conn *c, const char *cmdline, const gate_policy *policy,
	     const gate_callbacks *cb, volatile sig_atomic_t *stop, gate_outcome *out, bg_err *err)
{
	return gate_run_with(c, cmdline, NULL, false, policy, cb, stop, out, err);
}

int gate_run_with(remote_conn *c, const char *cmdline, const gate_prelude *pre, bool hold,
		  const gate_policy *policy, const gate_callbacks *cb, volatile sig_atomic_t *stop,
		  gate_outcome *out, bg_err *err)
{
	struct run_state rs;
	remote_exec_opts o = {.on_line = gate_rs_line, .ctx = &rs, .max_line = 0};
	remote_exec *e = NULL;
	char nonce_line[64];
	int rc;

	gate_rs_init(&rs, policy, cb, stop, out, nonce_line, sizeof(nonce_line));
	rs.pre = pre;
	rs.pre_open = pre != NULL;
	rs.q.holding = hold;
	rc = remote_exec_start(c, cmdline, &o, &e, err);
	if (rc < 0)
		goto out;
	remote_exec_write(e, nonce_line, strlen(nonce_line)); /* before anything else on stdin */
	rs.e = e;
	for (;;) {
		gate_rs_pump(&rs);
		/* Short ticks so a Ctrl-C is forwarded at once. */
		int64_t now = bg_now_ms();
		int64_t tick = now + 250 < rs.next_hb ? now + 250 : rs.next_hb;
		rc = remote_exec_wait(e, tick, &out->status, err);
		if (rc != 0)
			break;
		if (gate_rs_stalled(&rs)) {
			/* a stopped agent enforces nothing: the channel is closed */
			out->agent_stalled = true;
			rc = 0;
			break;
		}
	}
	if (rc > 0)
		rc = 0;
out:
	if (e)
		remote_exec_free(e);
	if (rs.q.holding && rc == 0 && out->status.how == REMOTE_EXITED && !out->agent_spoke) {
		out->unframed_dropped = rs.q.held_head != NULL;
		evq_drop_held(&rs.q);
	}
	evq_release_held(&rs.q);
	gate_rs_finish(&rs);
	return rc;
}
