#include "gate/run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/lines.h"
#include "base/strbuf.h"
#include "base/timer.h"
#include "base/xmalloc.h"

static void add_opt(strbuf *s, const char *name, const char *value)
{
	strbuf_addch(s, ' ');
	strbuf_addstr(s, name);
	strbuf_addch(s, ' ');
	shim_quote(s, value);
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

char *gate_command_line(const gate_spec *g)
{
	strbuf s = STRBUF_INIT;
	const conf_box *b = g->box;
	strbuf_addstr(&s, g->agent);
	strbuf_addstr(&s, " run");
	if (g->gpus)
		add_opt(&s, "--gpus", g->gpus);
	if (g->tag)
		add_opt(&s, "--tag", g->tag);
	add_int(&s, "--timeout", g->timeout_s);
	add_int(&s, "--grace", g->grace_s);
	add_int(&s, "--heartbeat", g->heartbeat_s);
	add_int(&s, "--lock-wait", g->lock_wait_s);
	add_opt(&s, "--require-gpu", g->require_gpu ? "yes" : "no");
	if (b->repo) {
		strbuf_addstr(&s, " --cwd ");
		shim_quote_path(&s, b->repo);
	}
	for (size_t i = 0; g->shim && i < g->shim->n_env; i++)
		add_opt(&s, "--env", g->shim->env[i]);
	strbuf_addstr(&s, " --");
	if (ends_with(g->entry, ".py")) {
		strbuf_addch(&s, ' ');
		shim_quote(&s, b->python ? b->python : "python3");
	}
	strbuf_addch(&s, ' ');
	if (g->entry[0] == '~') {
		shim_quote_path(&s, g->entry);
	} else if (!strchr(g->entry, '/')) {
		/* Relative to the repo, never looked up in PATH. */
		char *rel = xasprintf("./%s", g->entry);
		shim_quote(&s, rel);
		free(rel);
	} else {
		shim_quote(&s, g->entry);
	}
	for (size_t i = 0; g->shim && i < g->shim->n_argv; i++) {
		strbuf_addch(&s, ' ');
		shim_quote(&s, g->shim->argv[i]);
	}
	return strbuf_detach(&s);
}

struct run_state {
	const gate_callbacks *cb;
	const gate_policy *policy;
	gate_outcome *out;
	strbuf pending; /* a result line arriving in pieces */
};

static void on_line(void *arg, remote_stream s, const char *line, size_t len, int flags)
{
	struct run_state *rs = arg;
	if (rs->cb->on_line)
		rs->cb->on_line(rs->cb->ctx, s, line, len, flags);
	if (s != REMOTE_STDOUT)
		return;
	/* A result line longer than the line limit is reassembled, never judged in pieces. */
	if (rs->pending.len || (flags & LINE_PARTIAL)) {
		strbuf_add(&rs->pending, line, len);
		if (flags & LINE_PARTIAL)
			return;
		line = rs->pending.buf;
		len = rs->pending.len;
	}
	if (gate_is_result_line(line, len)) {
		gate_result r;
		gate_result_parse(&r, line, len, rs->policy);
		rs->out->verdict = r.verdict;
		rs->out->n_results++;
		snprintf(rs->out->problems, sizeof(rs->out->problems), "%s", r.problems);
		if (rs->cb->on_result)
			rs->cb->on_result(rs->cb->ctx, &r);
		gate_result_release(&r);
	}
	strbuf_reset(&rs->pending);
}

int gate_run(remote_conn *c, const char *cmdline, const gate_policy *policy,
	     const gate_callbacks *cb, volatile sig_atomic_t *stop, gate_outcome *out, bg_err *err)
{
	struct run_state rs = {cb, policy, out, STRBUF_INIT};
	remote_exec_opts o = {.on_line = on_line, .ctx = &rs, .max_line = 0};
	remote_exec *e = NULL;
	bool kill_sent = false;
	int64_t next_hb = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = remote_exec_start(c, cmdline, &o, &e, err);
	if (rc < 0)
		goto out;
	for (;;) {
		int64_t now = bg_now_ms();
		if (stop && *stop && !kill_sent) {
			/* No channel signals in libssh2 1.10: the agent takes "kill" on stdin. */
			remote_exec_write(e, "kill\n", 5);
			kill_sent = true;
			out->interrupted = true;
		}
		if (now >= next_hb) {
			remote_exec_write(e, "hb\n", 3);
			next_hb = now + GATE_HEARTBEAT_MS;
		}
		/* Short ticks so a Ctrl-C is forwarded at once. */
		int64_t tick = now + 250 < next_hb ? now + 250 : next_hb;
		rc = remote_exec_wait(e, tick, &out->status, err);
		if (rc != 0)
			break;
	}
	if (rc > 0)
		rc = 0;
out:
	if (e)
		remote_exec_free(e);
	strbuf_release(&rs.pending);
	return rc;
}

int gate_outcome_exit_code(const gate_outcome *o, char *why, size_t n)
{
	const remote_status *st = &o->status;
	if (o->interrupted) {
		snprintf(why, n, "stopped on request; the gate was killed on the box");
		return 130;
	}
	if (st->how == REMOTE_LOST) {
		snprintf(why, n, "connection lost; the agent kills the gate when the heartbeat stops");
		return 3;
	}
	if (st->how == REMOTE_EXITED && st->code == 75) {
		snprintf(why, n, "the GPU slot is busy");
		return 1;
	}
	if (o->n_results > 0) {
		snprintf(why, n, "%s%s%s", gate_verdict_name(o->verdict), o->problems[0] ? ": " : "", o->problems);
		return gate_verdict_exit_code(o->verdict);
	}
	if (st->how == REMOTE_EXITED && st->code == 0) {
		snprintf(why, n, "INVALID: the gate exited 0 without a FAITHFUL_RESULT line");
		return 125;
	}
	char how[96];
	remote_status_describe(st, how, sizeof(how));
	snprintf(why, n, "the gate failed (%s) without a FAITHFUL_RESULT line", how);
	return st->how == REMOTE_EXITED && st->code == 2 ? 2 : 1;
}
