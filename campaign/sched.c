#include "campaign/sched.h"

#include <cjson/cJSON.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "base/sha256.h"
#include "base/strbuf.h"
#include "base/timer.h"
#include "base/xmalloc.h"
#include "gate/agent_proto.h"
#include "measure/alone.h"
#include "measure/record.h"
#include "results/record.h"
#include "remote/slurm.h"
#include "results/store.h"
#include "sync/report.h"

/* A failed box is tried again after this pause, so a flapping box does not
 * take the whole queue's attempts in a second. */
#define RETRY_PAUSE_MS 1000
/* A box's connections die together (a cut link, a reboot): failures this close
 * count as one. */
#define FAILURE_WINDOW_MS 900
/* A standby's agent waits for the lock this long beyond the running job's
 * timeout and grace. */
#define STANDBY_MARGIN_S 60

static void emit(sched *s, const sched_event *ev)
{
	if (s->on_event)
		s->on_event(s->ctx, ev);
}

static size_t box_index(const sched *s, const sched_box *b)
{
	return (size_t)(b - s->boxes);
}

/* Another box than b still takes jobs and job j did not fail there (under
 * s->mu). */
static bool other_box_for(const sched *s, const sched_box *b, size_t j)
{
	for (size_t i = 0; i < s->n_boxes; i++)
		if (&s->boxes[i] != b && !s->boxes[i].quarantined && s->boxes[i].live > 0 &&
		    s->failed_on[j * s->n_boxes + i] == FAILED_NONE)
			return true;
	return false;
}

/* The queue position (from its head) of the job slot sl takes next: the first
 * that did not fail on sl's box, or that failed on every box still in service
 * (it may fail here again rather than wait for ever). -1: none for this slot
 * now (under s->mu). */
long sched_pick(const sched *s, const sched_slot *sl)
{
	size_t bi = box_index(s, sl->b);
	for (size_t k = 0; k < s->q_len; k++) {
		size_t j = s->queue[(s->q_head + k) % s->n_jobs];
		if (s->failed_on[j * s->n_boxes + bi] == FAILED_NONE || !other_box_for(s, sl->b, j))
			return (long)k;
	}
	return -1;
}

/* The next job for slot sl, NULL when there is none left for it. */
static campaign_job *take(sched *s, sched_slot *sl)
{
	campaign_job *j = NULL;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		if (*s->stop || s->stopping || sl->b->quarantined)
			break;
		/* A slot's second worker stages the next job only while the queue
		 * holds a job for every slot: near the end a job must not wait behind a
		 * busy slot while another slot is idle. */
		bool partner_busy = sl->partner && sl->partner->holding;
		long k = -1;
		if (s->q_len && (!partner_busy || s->q_len >= s->n_groups))
			k = sched_pick(s, sl);
		if (k >= 0) {
			/* out of the ring at k: the jobs before it move up one */
			size_t at = (s->q_head + (size_t)k) % s->n_jobs;
			j = &s->jobs[s->queue[at]];
			for (size_t i = (size_t)k; i > 0; i--)
				s->queue[(s->q_head + i) % s->n_jobs] =
					s->queue[(s->q_head + i - 1) % s->n_jobs];
			sl->holding = true;
			sl->standby = partner_busy;
			s->q_head = (s->q_head + 1) % s->n_jobs;
			s->q_len--;
			s->running++;
			s->attempts[j->index]++;
			break;
		}
		if (!s->running && !s->q_len)
			break;
		/* a running job may come back (its box failed): wait for it */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 200 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&s->cv, &s->mu, &ts);
	}
	pthread_mutex_unlock(&s->mu);
	return j;
}

void sched_give_back(sched *s, sched_slot *sl, const campaign_job *j, bool requeue, bool final)
{
	pthread_mutex_lock(&s->mu);
	s->running--;
	sl->holding = false;
	if (final)
		s->finished[j->index] = true;
	if (requeue) {
		s->q_head = (s->q_head + s->n_jobs - 1) % s->n_jobs;
		s->queue[s->q_head] = j->index;
		s->q_len++;
	}
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static void pause_ms(sched *s, int ms)
{
	for (int t = 0; t < ms && !*s->stop; t += 50)
		poll(NULL, 0, 50);
}

void sched_box_charge(sched *s, sched_box *b, sched_slot *sl, bool windowed, const char *why)
{
	bool out = false;
	pthread_mutex_lock(&s->mu);
	int64_t t = bg_now_ms();
	if (!windowed || t - b->last_failure_ms > FAILURE_WINDOW_MS)
		b->failures++;
	if (windowed)
		b->last_failure_ms = t;
	if (b->failures >= s->spec->max_failures && !b->quarantined)
		b->quarantined = out = true;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	if (out) {
		sched_event ev = {.kind = SCHED_QUARANTINED, .slot = sl, .why = why};
		emit(s, &ev);
	}
}

/* Closes the slot's serving agent and connection. */
static void drop_conn(sched_slot *sl)
{
	gate_serve_close(sl->served);
	sl->served = NULL;
	remote_close(sl->conn);
	sl->conn = NULL;
}

/* Counts a failure against the slot's box and drops its connection. */
static void box_failed(sched *s, sched_slot *sl, const char *why)
{
	sched_box_charge(s, sl->b, sl, true, why);
	drop_conn(sl);
}

void sched_clear_job(sched *s, const sched_slot *sl, const campaign_job *j)
{
	for (size_t bi = 0; bi < s->n_boxes; bi++) {
		pthread_mutex_lock(&s->mu);
		unsigned char *f = &s->failed_on[j->index * s->n_boxes + bi];
		bool charge = *f == FAILED_JOB && &s->boxes[bi] != sl->b;
		if (charge)
			*f = FAILED_BOX;
		pthread_mutex_unlock(&s->mu);
		sched_slot *any = NULL;
		for (size_t i = 0; charge && !any && i < s->n_slots; i++)
			if (s->slots[i].b == &s->boxes[bi])
				any = &s->slots[i];
		if (charge && any) {
			char why[CAMPAIGN_KEY_MAX + 64];
			snprintf(why, sizeof(why),
				 "the agent of job %s vanished there, and it ran "
				 "well on another box",
				 j->key);
			/* a job of its own each: no window */
			sched_box_charge(s, &s->boxes[bi], any, false, why);
		}
	}
}

/* (Re)connects slot sl and makes sure the agent is there; a failure counts
 * against the box. False when it failed. */
static bool connect_slot(sched *s, sched_slot *sl)
{
	gate_agent_how how;
	bg_err err = {0};
	free(sl->agent_path);
	sl->agent_path = NULL;
	int rc = remote_connect(&sl->b->box->target, &s->link, &sl->conn, &err);
	if (rc == 0)
		rc = gate_agent_ensure(sl->conn, s->agent, false, &sl->agent_path, &how, &err);
	if (rc == 0)
		return true;
	box_failed(s, sl, err.msg);
	pause_ms(s, RETRY_PAUSE_MS);
	return false;
}

/* The candidate's kernel files are still what the campaign read (and keyed
 * its jobs by): false, with err naming the file, when one was edited since. */
static bool overlay_unchanged(const overlay *ov, bg_err *err)
{
	for (size_t i = 0; i < ov->n; i++) {
		char sha[BG_SHA256_HEX_LEN + 1];
		bg_err e2 = {0};
		if (bg_sha256_file(ov->f[i].local, sha, &e2) < 0 ||
		    strcmp(sha, ov->f[i].sha) != 0) {
			bg_fail(err, BG_EUSAGE,
				"the kernel file %s changed since the campaign read it (its jobs "
				"are "
				"keyed by what was read): run the campaign again to run the edited "
				"file as new jobs",
				ov->f[i].local);
			return false;
		}
	}
	return true;
}

/* The box's push manifest and the candidate's overlay: what a job needs on a
 * connected slot before its gate starts. 0, or negative with err set;
 * READY_EDITED when a kernel file was edited since the campaign read it (no
 * fault of the box). */
#define READY_EDITED 1
static int ready(sched *s, sched_slot *sl, const campaign_job *j, bg_err *err)
{
	sched_box *b = sl->b;
	int rc = 0;
	pthread_mutex_lock(&b->mu);
	if (!b->manifest_read && s->results) {
		bg_err e2 = {0};
		sync_target t = {.name = b->box->name,
				 .repo = b->box->repo,
				 .python = b->box->python,
				 .connect = &b->box->target};
		if (sync_manifest_read(sl->conn, &t, &b->pushed, &e2) < 0)
			b->pushed_error = xstrdup(e2.msg);
		b->manifest_read = true;
	}
	overlay *ov = &b->ov[j->cand];
	if (ov->n && !ov->root) {
		rc = overlay_unchanged(ov, err) ? overlay_prepare(sl->conn, b->box->repo, ov, err)
						: READY_EDITED;
		if (rc < 0 && !overlay_unchanged(ov, err))
			rc = READY_EDITED;
		if (rc == 0 && b->box->overlay_env)
			b->ov_env[j->cand] = xasprintf("%s=%s", b->box->overlay_env, ov->root);
	}
	pthread_mutex_unlock(&b->mu);
	return rc;
}

struct job_view {
	gate_result last;
	sched *s;
	sched_slot *sl;
	campaign_job *j;
	int attempt;
};

/* The agent holds the slot: the job runs from here on. */
static void on_locked(void *ctx)
{
	struct job_view *v = ctx;
	/* the slot is ours: the partner's gate is over, whatever its channel still says */
	if (v->sl->partner)
		v->sl->partner->running = -1;
	v->sl->running = (int)v->j->index;
	sched_event ev = {
		.kind = SCHED_JOB_START, .job = v->j, .slot = v->sl, .attempt = v->attempt};
	emit(v->s, &ev);
}

static void on_line(void *ctx, remote_stream st, const char *line, size_t len, int flags)
{
	(void)ctx, (void)st, (void)line, (void)len, (void)flags;
}

static void on_result(void *ctx, const gate_result *r)
{
	struct job_view *v = ctx;
	gate_result_release(&v->last);
	v->last = *r;
	v->last.raw = r->raw ? xstrdup(r->raw) : NULL;
	v->last.json = r->json ? cJSON_Duplicate(r->json, 1) : NULL;
}

static int record(sched *s, sched_slot *sl, const campaign_job *j, const char *cmdline, int64_t t0,
		  int64_t t1, int code, const char *why, const gate_outcome *out,
		  const gate_result *last, bool final, bg_err *err)
{
	sched_box *b = sl->b;
	cJSON *camp = campaign_job_json(s->spec, j, s->n_jobs, s->attempts[j->index], final);
	cJSON *ov = b->ov[j->cand].root ? overlay_json(&b->ov[j->cand]) : NULL;
	pthread_mutex_lock(&s->mu);
	int seq = s->seq++;
	pthread_mutex_unlock(&s->mu);
	results_record_in in = {
		.run_id = s->run_id,
		.seq = seq,
		.gpus = sl->gpus,
		.command = cmdline,
		.gate_args = (const char *const *)j->words,
		.n_gate_args = j->n_words,
		.start_ms = t0,
		.end_ms = t1,
		.exit_code = code,
		.why = why,
		.outcome = out,
		.last = last,
		.repeat_i = j->repeat,
		.repeat_n = s->spec->repeats,
		.pushed = b->pushed ? b->pushed : (b->pushed_error ? NULL : ""),
		.pushed_error = b->pushed_error,
		.overlay = ov,
		.campaign = camp,
	};
	measure_record_where(&in, b->box);
	int rc = measure_record_append(s->results, &in, err);
	cJSON_Delete(camp);
	cJSON_Delete(ov);
	return rc;
}

bool sched_charge_attempt(sched *s, sched_box *b, const campaign_job *j, bool job_fault)
{
	bool job_failed = false;
	pthread_mutex_lock(&s->mu);
	unsigned char *f = &s->failed_on[j->index * s->n_boxes + box_index(s, b)];
	if (*f != FAILED_BOX)
		*f = job_fault ? FAILED_JOB : FAILED_BOX;
	if (job_fault)
		job_failed = ++s->job_failures[j->index] >= SCHED_JOB_FAILURES_MAX;
	pthread_mutex_unlock(&s->mu);
	return job_failed;
}

/* A Slurm step whose link was lost: cancelled by its name at once while the
 * login node answers, instead of left to the agent's heartbeat; said through
 * the link's log. */
static void cancel_lost_step(sched *s, const conf_box *box, const char *cmdline)
{
	char msg[600];
	double within = (double)(box->heartbeat_timeout_ms + box->kill_grace_ms) / 1000.0;
	if (remote_slurm_cancel_lost(&box->target, &s->link, cmdline, within, msg, sizeof(msg)) &&
	    s->link.log)
		s->link.log(s->link.log_ctx, box->name, msg);
}

sched_end sched_classify(int rc, const gate_outcome *o, bool stop, bool slurm)
{
	if (o->interrupted || (stop && rc < 0))
		return END_STOPPED;
	if (rc < 0 || !o->agent_end)
		return END_BOX_FAILED; /* the link, or an agent that never reported */
	if (strcmp(o->agent_why, AGENT_WHY_BUSY) == 0)
		return END_SLOT_LEFT;
	/* Slurm ended the step (scancel, preemption, a node failure): the job goes
	 * back in the queue; the login node is not at fault. */
	if (slurm && strcmp(o->agent_why, AGENT_WHY_TERMINATED) == 0)
		return END_REQUEUE;
	if (strcmp(o->agent_why, AGENT_WHY_SYSERR) == 0 ||
	    strcmp(o->agent_why, AGENT_WHY_NOEXEC) == 0 ||
	    strcmp(o->agent_why, AGENT_WHY_USAGE) == 0 ||
	    strcmp(o->agent_why, AGENT_WHY_OTHER) == 0)
		return END_BOX_FAILED;
	return END_FINAL;
}

/* The job through the worker's serving agent, started first when there is
 * none (or the one there is can take no job): gate_run's contract. */
static int run_served(sched_slot *sl, const char *cmdline, const gate_policy *policy,
		      const gate_callbacks *cb, volatile sig_atomic_t *stop, gate_outcome *out,
		      bg_err *err)
{
	if (!gate_serve_usable(sl->served)) {
		gate_serve_close(sl->served);
		sl->served = NULL;
		int rc = gate_serve_open(sl->conn, sl->agent_path, &sl->served, err);
		if (rc < 0) {
			/* as gate_run's channel that could not be opened */
			memset(out, 0, sizeof(*out));
			out->gate_exit = out->gate_signal = -1;
			out->status.how = REMOTE_LOST;
			return rc;
		}
	}
	return gate_serve_run(sl->served, cmdline, policy, cb, stop, out, err);
}

/* True when job j's candidate runs alone: not the baseline, in a campaign
 * with no baseline candidate or on a box with no_baseline = yes. Its result
 * line that reports only the candidate is then MEASURED, as under run
 * --no-baseline: there is nothing to hold its timings against. */
static bool runs_alone(const sched *s, const sched_box *b, const campaign_job *j)
{
	const campaign_spec *sp = s->spec;
	if (strcmp(sp->cands[j->cand].name, "baseline") == 0)
		return false;
	if (b->box->no_baseline)
		return true;
	for (size_t i = 0; i < sp->n_cands; i++)
		if (strcmp(sp->cands[i].name, "baseline") == 0)
			return false;
	return true;
}

/* One attempt of job j on slot sl. Returns false when the slot is done for. */
static bool attempt(sched *s, sched_slot *sl, campaign_job *j)
{
	sched_box *b = sl->b;
	bg_err err = {0};
	char why[700] = "";
	sched_event ev = {.job = j, .slot = sl, .attempt = s->attempts[j->index]};
	int64_t t0;
	int ready_rc = ready(s, sl, j, &err);
	if (ready_rc == READY_EDITED) {
		/* the campaign's own input changed under it: stop, charging no box */
		snprintf(why, sizeof(why), "%s", err.msg);
		pthread_mutex_lock(&s->mu);
		s->stopping = true;
		if (!s->stop_why)
			s->stop_why = xstrdup(why);
		pthread_mutex_unlock(&s->mu);
		sched_give_back(s, sl, j, true, false);
		ev.kind = SCHED_JOB_CUT;
		ev.why = why;
		emit(s, &ev);
		return false;
	}
	if (ready_rc < 0) {
		snprintf(why, sizeof(why), "%s", err.msg);
		sched_give_back(s, sl, j, true, false);
		ev.kind = SCHED_JOB_CUT;
		ev.why = why;
		emit(s, &ev);
		box_failed(s, sl, why);
		pause_ms(s, RETRY_PAUSE_MS);
		return !b->quarantined;
	}
	const sched_gate *g = &b->gate[j->index];
	gate_spec spec = g->spec;
	spec.gpus = sl->gpus;
	spec.agent = sl->agent_path;
	spec.lock_wait_s = s->spec->lock_wait_s;
	if (sl->standby) {
		/* behind the partner's job: as long as that may take */
		int behind =
			g->spec.timeout_s + (int)((spec.grace_ms + 999) / 1000) + STANDBY_MARGIN_S;
		if (behind > spec.lock_wait_s)
			spec.lock_wait_s = behind;
	}
	spec.cwd = b->ov[j->cand].root;
	spec.env = b->ov_env[j->cand];
	char *cmdline = gate_command_line(&spec);
	gate_policy policy = GATE_POLICY_DEFAULT;
	policy.bar = g->bar;
	policy.sum_tolerance = s->spec->sum_tol / 100.0;
	policy.run_limit_s = gate_run_limit_s(&spec);
	struct job_view view = {.s = s, .sl = sl, .j = j, .attempt = ev.attempt};
	gate_callbacks cb = {on_line, on_result, on_locked, &view,
			     GATE_HEARTBEAT_EVERY_MS(g->spec.heartbeat_ms)};
	gate_outcome out = {0};
	unsigned rt0 = remote_round_trips(sl->conn, NULL);
	t0 = results_now_ms();
	bool served = !s->spec->per_job_agent && gate_serve_takes(cmdline);
	int rc = served ? run_served(sl, cmdline, &policy, &cb, s->stop, &out, &err)
			: gate_run(sl->conn, cmdline, &policy, &cb, s->stop, &out, &err);
	int64_t t1 = results_now_ms();
	ev.round_trips = remote_round_trips(sl->conn, NULL) - rt0;
	ev.served = served;
	sl->running = -1;
	bool said;
	int code = gate_outcome_judge(&out, why, sizeof(why), &said);
	if (runs_alone(s, b, j))
		code = measure_alone_outcome(&view.last, &out, code, said, why, sizeof(why));
	if (rc < 0)
		snprintf(why, sizeof(why), "%s", err.msg);
	if (rc < 0 && !out.agent_end)
		cancel_lost_step(s, b->box, cmdline);
	sched_end end = sched_classify(rc, &out, *s->stop, b->box->target.slurm != NULL);
	if (end == END_REQUEUE)
		snprintf(why, sizeof(why),
			 "Slurm ended job %s (scancel, preemption or node failure)",
			 out.slurm_job[0] ? out.slurm_job : "?");
	bool final = end == END_FINAL;
	/* The agent vanished: the box's fault when it cannot be reached again (the
	 * reconnect charges it), else the job's, until it runs well elsewhere. */
	bool job_fault = false, job_failed = false;
	if (end == END_BOX_FAILED && !out.agent_end) {
		drop_conn(sl);
		job_fault = !*s->stop && connect_slot(s, sl);
	}
	if (end == END_BOX_FAILED)
		job_failed = sched_charge_attempt(s, b, j, job_fault);
	if (job_failed) {
		strbuf boxes = STRBUF_INIT;
		pthread_mutex_lock(&s->mu);
		for (size_t bi = 0; bi < s->n_boxes; bi++)
			if (s->failed_on[j->index * s->n_boxes + bi] == FAILED_JOB)
				strbuf_addf(&boxes, "%s%s", boxes.len ? ", " : "",
					    s->boxes[bi].box->name);
		pthread_mutex_unlock(&s->mu);
		char first[600];
		snprintf(first, sizeof(first), "%s", why);
		snprintf(why, sizeof(why),
			 "its agent vanished %d times (on %s), each box answering again at once: "
			 "recorded failed, the job's fault, not the boxes' (%s)",
			 SCHED_JOB_FAILURES_MAX, boxes.buf, first);
		strbuf_release(&boxes);
		final = true;
		end = END_FINAL;
		if (code == 0)
			code = BG_EXIT_FAIL;
	}
	bg_err rerr = {0};
	const gate_result *last = view.last.raw ? &view.last : NULL;
	if (s->results && record(s, sl, j, cmdline, t0, t1, code, code ? why : "", &out, last,
				 final, &rerr) < 0) {
		/* a result that cannot be kept must not pass for done: stop scheduling */
		pthread_mutex_lock(&s->mu);
		s->record_failed = s->stopping = true;
		pthread_mutex_unlock(&s->mu);
		snprintf(why, sizeof(why), "the record was not kept: %s", rerr.msg);
		final = false;
		end = END_STOPPED;
	}
	sched_give_back(s, sl, j,
			end == END_BOX_FAILED || end == END_SLOT_LEFT || end == END_REQUEUE, final);
	if (job_failed) {
		pthread_mutex_lock(&s->mu);
		s->failed_why[j->index] = xstrdup(why);
		s->n_failed_jobs++;
		pthread_mutex_unlock(&s->mu);
	} else if (final) {
		sched_clear_job(s, sl, j);
	}
	ev.secs = (double)(t1 - t0) / 1000.0;
	ev.why = code || !final ? why : "";
	if (final) {
		gate_verdict v = results_verdict_of(code, &out);
		ev.kind = SCHED_JOB_END;
		ev.verdict = v == VERDICT_NONE ? "FAILED" : gate_verdict_name(v);
		ev.result = last;
		sl->done++;
	} else {
		ev.kind = SCHED_JOB_CUT;
	}
	emit(s, &ev);
	gate_result_release(&view.last);
	free(cmdline);
	if (end == END_BOX_FAILED) {
		/* the agent's own error report: the box is at fault (a vanished
		 * agent's box was charged or cleared by the reconnect above) */
		if (out.agent_end) {
			box_failed(s, sl, why);
			pause_ms(s, RETRY_PAUSE_MS);
		}
		return !b->quarantined;
	}
	if (end == END_SLOT_LEFT) {
		sched_event left = {.kind = SCHED_SLOT_LEFT, .slot = sl, .why = why};
		emit(s, &left);
		return false;
	}
	return end != END_STOPPED;
}

static void *worker(void *arg)
{
	sched_slot *sl = arg;
	sched *s = sl->s;
	campaign_job *j;
	/* A second worker connects once its partner's first gate runs: its handshake
	 * then overlaps that gate, not the start of every slot's first job. */
	bool second = sl->partner && sl > sl->partner;
	for (int t = 0; second && t < 100 && !*s->stop; t++) {
		pthread_mutex_lock(&s->mu);
		bool go = sl->partner->running >= 0 || !sl->partner->holding || !s->q_len;
		pthread_mutex_unlock(&s->mu);
		if (go && t > 0)
			break;
		poll(NULL, 0, 20);
	}
	for (;;) {
		/* a slot whose connection failed reconnects before it takes a job, so a
		 * dead box does not bounce jobs */
		if (!sl->conn && !*s->stop && !sl->b->quarantined && !connect_slot(s, sl))
			continue;
		if (!(j = take(s, sl)) || !attempt(s, sl, j))
			break;
	}
	/* the serving agent leaves at its stdin's EOF; the connection is the caller's */
	gate_serve_close(sl->served);
	sl->served = NULL;
	/* wake the others: a worker that leaves may leave jobs to them */
	pthread_mutex_lock(&s->mu);
	sl->b->live--;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

void sched_prepare(sched *s)
{
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->attempts = xcalloc(s->n_jobs ? s->n_jobs : 1, sizeof(int));
	s->finished = xcalloc(s->n_jobs ? s->n_jobs : 1, sizeof(bool));
	s->failed_on = xcalloc((s->n_jobs ? s->n_jobs : 1) * (s->n_boxes ? s->n_boxes : 1), 1);
	s->job_failures = xcalloc(s->n_jobs ? s->n_jobs : 1, sizeof(int));
	s->failed_why = xcalloc(s->n_jobs ? s->n_jobs : 1, sizeof(char *));
	if (!s->run_id[0]) /* a caller may have named the run already */
		results_new_run_id(s->run_id);
	for (size_t i = 0; i < s->n_slots; i++) {
		s->slots[i].b->live++;
		s->slots[i].s = s;
		s->slots[i].running = -1;
	}
}

void sched_run(sched *s)
{
	sched_prepare(s);
	for (size_t i = 0; i < s->n_slots; i++) {
		if (pthread_create(&s->slots[i].th, NULL, worker, &s->slots[i]) != 0)
			abort();
	}
	for (size_t i = 0; i < s->n_slots; i++)
		pthread_join(s->slots[i].th, NULL);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
}

void sched_queue_pending(sched *s, const bool *done)
{
	s->queue = xcalloc(s->n_jobs ? s->n_jobs : 1, sizeof(size_t));
	s->q_head = s->q_len = 0;
	for (size_t i = 0; i < s->n_jobs; i++)
		if (!done || !done[i])
			s->queue[s->q_len++] = i;
}

size_t sched_left(const sched *s, const bool *done)
{
	size_t left = 0;
	for (size_t i = 0; i < s->n_jobs; i++)
		left += !(done && done[i]) && !(s->finished && s->finished[i]);
	return left;
}

void sched_release(sched *s)
{
	free(s->queue);
	free(s->attempts);
	free(s->finished);
	free(s->failed_on);
	free(s->job_failures);
	for (size_t i = 0; s->failed_why && i < s->n_jobs; i++)
		free(s->failed_why[i]);
	free(s->failed_why);
	free(s->stop_why);
	s->queue = NULL;
	s->attempts = NULL;
	s->finished = NULL;
	s->failed_on = NULL;
	s->job_failures = NULL;
	s->failed_why = NULL;
	s->stop_why = NULL;
	s->q_len = s->q_head = 0;
}
