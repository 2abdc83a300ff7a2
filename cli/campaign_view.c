#include "cli/campaign_view.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/timer.h"
#include "base/xmalloc.h"
#include "cli/cli.h"

struct campaign_view {
	const sched *s;
	campaign_view_mode mode;
	pthread_mutex_t mu;
	size_t total, before, ended, cut, failed_boxes;
	int64_t start_ms;
	bool shown; /* the status line is on screen */
};

campaign_view *campaign_view_new(const sched *s, campaign_view_mode mode, size_t total,
				 size_t before)
{
	campaign_view *v = xcalloc(1, sizeof(*v));
	v->s = s;
	v->mode = mode;
	v->total = total;
	v->before = before;
	v->start_ms = bg_now_ms();
	pthread_mutex_init(&v->mu, NULL);
	return v;
}

/* "done 12/40  running h1:2 h2:1  failed boxes 1  ETA 14 s" */
static void status_line(campaign_view *v, strbuf *b)
{
	const sched *s = v->s;
	size_t done = v->before + v->ended;
	strbuf_addf(b, "campaign %s: %zu/%zu done", s->spec->name, done, v->total);
	strbuf_addstr(b, "  running");
	size_t shown = 0;
	for (size_t i = 0; i < s->n_boxes; i++) {
		int n = 0;
		for (size_t k = 0; k < s->n_slots; k++)
			n += s->slots[k].b == &s->boxes[i] && s->slots[k].running >= 0;
		if (n && shown++ < 8)
			strbuf_addf(b, " %s:%d", s->boxes[i].box->name, n);
	}
	if (!shown)
		strbuf_addstr(b, " none");
	else if (shown > 8)
		strbuf_addf(b, " +%zu boxes", shown - 8);
	if (v->cut)
		strbuf_addf(b, "  requeued %zu", v->cut);
	if (v->failed_boxes)
		strbuf_addf(b, "  quarantined %zu", v->failed_boxes);
	if (v->ended) {
		double per = (double)(bg_now_ms() - v->start_ms) / 1000.0 / (double)v->ended;
		size_t left = v->total - done;
		strbuf_addf(b, "  ETA %.0f s", per * (double)left);
	}
}

static void point_text(const sched_event *ev, const campaign_spec *sp, strbuf *b)
{
	const campaign_job *j = ev->job;
	strbuf_addf(b, "%s", sp->shapes[j->shape]);
	if (j->num_workers > 0)
		strbuf_addf(b, " nw%d", j->num_workers);
	strbuf_addf(b, " %s r%d", sp->cands[j->cand].name, j->repeat);
}

static void json_event(campaign_view *v, const sched_event *ev)
{
	static const char *const kinds[] = {"job_start", "job_end", "job_cut", "quarantined",
					    "slot_left"};
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "event", kinds[ev->kind]);
	cJSON_AddStringToObject(o, "campaign", v->s->spec->name);
	if (ev->slot) {
		cJSON_AddStringToObject(o, "box", ev->slot->b->box->name);
		cJSON_AddStringToObject(o, "slot", ev->slot->label);
	}
	if (ev->job) {
		cJSON_AddStringToObject(o, "job", ev->job->key);
		cJSON_AddNumberToObject(o, "attempt", ev->attempt);
	}
	if (ev->kind == SCHED_JOB_END) {
		cJSON_AddStringToObject(o, "verdict", ev->verdict);
		const gate_result *r = ev->result;
		if (r && r->cand.present)
			cJSON_AddNumberToObject(o, "slowCTA_us", r->cand.slowCTA_us);
		cJSON_AddNumberToObject(o, "done", (double)(v->before + v->ended));
		cJSON_AddNumberToObject(o, "total", (double)v->total);
	}
	if (ev->kind == SCHED_JOB_END || ev->kind == SCHED_JOB_CUT)
		cJSON_AddNumberToObject(o, "seconds", ev->secs);
	if (ev->why && ev->why[0])
		cJSON_AddStringToObject(o, "why", ev->why);
	cli_print_json(o);
	cJSON_Delete(o);
}

/* BOXGATE_TRACE: what each attempt waited for on its connection. */
static void trace_attempt(const sched_event *ev)
{
	if ((ev->kind != SCHED_JOB_END && ev->kind != SCHED_JOB_CUT) || !getenv("BOXGATE_TRACE"))
		return;
	char phase[CAMPAIGN_KEY_MAX + 160];
	snprintf(phase, sizeof(phase), "job %s attempt %d: %u round trips (%s)", ev->job->key,
		 ev->attempt, ev->round_trips,
		 ev->served ? "serving agent" : "a channel of its own");
	cli_sync_trace(NULL, ev->slot->label, phase);
}

void campaign_view_event(void *ctx, const sched_event *ev)
{
	campaign_view *v = ctx;
	trace_attempt(ev);
	const campaign_spec *sp = v->s->spec;
	strbuf line = STRBUF_INIT;
	FILE *to = stdout;
	pthread_mutex_lock(&v->mu);
	if (ev->kind == SCHED_JOB_END)
		v->ended++;
	else if (ev->kind == SCHED_JOB_CUT)
		v->cut++;
	else if (ev->kind == SCHED_QUARANTINED)
		v->failed_boxes++;
	if (v->mode == VIEW_JSON) {
		if (ev->kind != SCHED_JOB_START)
			json_event(v, ev);
		pthread_mutex_unlock(&v->mu);
		return;
	}
	switch (ev->kind) {
	case SCHED_JOB_START: break;
	case SCHED_JOB_END: {
		const gate_result *r = ev->result;
		strbuf_addf(&line, "[%zu/%zu] ", v->before + v->ended, v->total);
		point_text(ev, sp, &line);
		strbuf_addf(&line, " on %s: %s", ev->slot->label, ev->verdict);
		if (r && r->cand.present)
			strbuf_addf(&line, "  slowCTA %.3f us", r->cand.slowCTA_us);
		if (r && r->base.present && r->cand.slowCTA_us > 0)
			strbuf_addf(&line, "  ratio %.3f", r->base.slowCTA_us / r->cand.slowCTA_us);
		else if (r && r->ratio > 0)
			strbuf_addf(&line, "  ratio %.3f", r->ratio);
		strbuf_addf(&line, "  (%.1f s)", ev->secs);
		if (ev->why[0] && strcmp(ev->verdict, "PASS_GATE") != 0 &&
		    strcmp(ev->verdict, "BELOW_BAR") != 0)
			strbuf_addf(&line, "  -- %s", ev->why);
		break;
	}
	case SCHED_JOB_CUT:
		to = stderr;
		strbuf_addstr(&line, "boxgate: ");
		point_text(ev, sp, &line);
		strbuf_addf(&line, " on %s cut: %s%s", ev->slot->label, ev->why,
			    *v->s->stop ? "" : " (requeued)");
		break;
	case SCHED_QUARANTINED:
		to = stderr;
		strbuf_addf(&line,
			    "boxgate: box %s quarantined for the rest of the run after %d "
			    "failures: %s",
			    ev->slot->b->box->name, ev->slot->b->failures, ev->why);
		break;
	case SCHED_SLOT_LEFT:
		to = stderr;
		strbuf_addf(&line, "boxgate: leaving slot %s: %s", ev->slot->label, ev->why);
		break;
	}
	strbuf out = STRBUF_INIT;
	if (v->mode == VIEW_LIVE && v->shown)
		strbuf_addstr(&out, "\r\033[K");
	if (v->mode == VIEW_LIVE && out.len)
		cli_write(stderr, out.buf, out.len);
	if (line.len) {
		strbuf_addch(&line, '\n');
		cli_write(to, line.buf, line.len);
	}
	if (v->mode == VIEW_LIVE) {
		strbuf st = STRBUF_INIT;
		status_line(v, &st);
		cli_write(stderr, st.buf, st.len);
		v->shown = true;
		strbuf_release(&st);
	}
	strbuf_release(&out);
	strbuf_release(&line);
	pthread_mutex_unlock(&v->mu);
}

void campaign_view_end(campaign_view *v, size_t *ended, size_t *cut)
{
	pthread_mutex_lock(&v->mu);
	if (v->mode == VIEW_LIVE && v->shown)
		cli_write(stderr, "\r\033[K", 4);
	v->shown = false;
	*ended = v->ended;
	*cut = v->cut;
	pthread_mutex_unlock(&v->mu);
}

void campaign_view_free(campaign_view *v)
{
	if (!v)
		return;
	pthread_mutex_destroy(&v->mu);
	free(v);
}
