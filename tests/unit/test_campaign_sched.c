/* campaign/sched: the scheduler's decisions with no worker running: how an
 * attempt's end is read (final, the box's failure, a slot left, Slurm's
 * requeue, a stop), which queued job a slot takes (not one that failed on its
 * box while another box may run it), a requeued job back at the front, a box
 * charged and quarantined once (failures of one moment counted once), and a
 * vanished agent charged to the job, to the box only once the job ran well
 * elsewhere. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "base/xmalloc.h"
#include "campaign/sched.h"
#include "gate/agent_proto.h"

/* A sched of n_boxes boxes (one slot each) and n_jobs jobs all queued in
 * order, prepared as sched_run would, quarantine at max_failures. */
typedef struct fixture {
	campaign_spec spec;
	conf_box cb[3];
	campaign_job jobs[4];
	sched s;
	volatile sig_atomic_t stop;
	int quarantined;    /* SCHED_QUARANTINED events */
	char last_why[256]; /* the last event's why (borrowed for the call: copied) */
} fixture;

static void on_event(void *ctx, const sched_event *ev)
{
	fixture *f = ctx;
	if (ev->kind == SCHED_QUARANTINED) {
		f->quarantined++;
		snprintf(f->last_why, sizeof(f->last_why), "%s", ev->why);
	}
}

static fixture *fixture_new(size_t n_boxes, size_t n_jobs, int max_failures)
{
	fixture *f = xcalloc(1, sizeof(*f));
	sched *s = &f->s;
	f->spec.max_failures = max_failures;
	s->spec = &f->spec;
	s->stop = &f->stop;
	s->on_event = on_event;
	s->ctx = f;
	s->jobs = f->jobs;
	s->n_jobs = n_jobs;
	for (size_t j = 0; j < n_jobs; j++) {
		f->jobs[j].index = j;
		snprintf(f->jobs[j].key, sizeof(f->jobs[j].key), "c/q/8/base@x/%zu", j);
	}
	s->n_boxes = n_boxes;
	s->boxes = xcalloc(n_boxes, sizeof(*s->boxes));
	s->n_slots = s->n_groups = n_boxes;
	s->slots = xcalloc(n_boxes, sizeof(*s->slots));
	static char *names[] = {"b0", "b1", "b2"};
	for (size_t b = 0; b < n_boxes; b++) {
		f->cb[b].name = names[b];
		s->boxes[b].box = &f->cb[b];
		s->slots[b].b = &s->boxes[b];
	}
	s->queue = xcalloc(n_jobs, sizeof(size_t));
	for (size_t j = 0; j < n_jobs; j++)
		s->queue[j] = j;
	s->q_len = n_jobs;
	sched_prepare(s);
	return f;
}

static void fixture_free(fixture *f)
{
	sched *s = &f->s;
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s->boxes);
	free(s->slots);
	sched_release(s);
	free(f);
}

static gate_outcome ended(const char *why)
{
	gate_outcome o = {0};
	o.agent_end = true;
	snprintf(o.agent_why, sizeof(o.agent_why), "%s", why);
	return o;
}

static void attempt_ends(void **state)
{
	(void)state;
	gate_outcome o = ended(AGENT_WHY_EXITED);
	assert_int_equal(sched_classify(0, &o, false, false), END_FINAL);
	o = ended(AGENT_WHY_TIMEOUT); /* a hang is the job's verdict, not the box's */
	assert_int_equal(sched_classify(0, &o, false, false), END_FINAL);
	o = ended(AGENT_WHY_INVALID);
	assert_int_equal(sched_classify(0, &o, false, false), END_FINAL);
	o = ended(AGENT_WHY_BUSY);
	assert_int_equal(sched_classify(0, &o, false, false), END_SLOT_LEFT);
	const char *box_faults[] = {AGENT_WHY_SYSERR, AGENT_WHY_NOEXEC, AGENT_WHY_USAGE,
				    AGENT_WHY_OTHER};
	for (size_t i = 0; i < 4; i++) {
		o = ended(box_faults[i]);
		assert_int_equal(sched_classify(0, &o, false, false), END_BOX_FAILED);
	}
	/* Slurm ended the step: requeued, the login node not at fault; elsewhere a
	 * terminated agent is a final end */
	o = ended(AGENT_WHY_TERMINATED);
	assert_int_equal(sched_classify(0, &o, false, true), END_REQUEUE);
	assert_int_equal(sched_classify(0, &o, false, false), END_FINAL);
	/* the link lost, or no end report */
	o = (gate_outcome){0};
	assert_int_equal(sched_classify(-1, &o, false, false), END_BOX_FAILED);
	assert_int_equal(sched_classify(0, &o, false, false), END_BOX_FAILED);
	/* a stop: the user's, never a box's failure */
	assert_int_equal(sched_classify(-1, &o, true, false), END_STOPPED);
	o = ended(AGENT_WHY_KILLED);
	o.interrupted = true;
	assert_int_equal(sched_classify(0, &o, false, false), END_STOPPED);
}

static void a_slot_takes_what_did_not_fail_on_its_box(void **state)
{
	(void)state;
	fixture *f = fixture_new(2, 3, 5);
	sched *s = &f->s;
	sched_slot *s0 = &s->slots[0], *s1 = &s->slots[1];
	assert_int_equal(sched_pick(s, s0), 0);
	/* job 0 failed on b0: b0's slot passes it over while b1 may run it */
	assert_false(sched_charge_attempt(s, &s->boxes[0], &f->jobs[0], false));
	assert_int_equal(s->failed_on[0 * 2 + 0], FAILED_BOX);
	assert_int_equal(sched_pick(s, s0), 1);
	assert_int_equal(sched_pick(s, s1), 0);
	/* b1 quarantined: b0 takes it again rather than leave it for ever */
	s->boxes[1].quarantined = true;
	assert_int_equal(sched_pick(s, s0), 0);
	s->boxes[1].quarantined = false;
	/* b1's workers gone: the same */
	s->boxes[1].live = 0;
	assert_int_equal(sched_pick(s, s0), 0);
	s->boxes[1].live = 1;
	/* failed on both: either may take it */
	sched_charge_attempt(s, &s->boxes[1], &f->jobs[0], false);
	assert_int_equal(sched_pick(s, s0), 0);
	assert_int_equal(sched_pick(s, s1), 0);
	/* an empty queue */
	s->q_len = 0;
	assert_int_equal(sched_pick(s, s0), -1);
	fixture_free(f);
}

static void a_requeued_job_goes_first(void **state)
{
	(void)state;
	fixture *f = fixture_new(1, 3, 5);
	sched *s = &f->s;
	sched_slot *sl = &s->slots[0];
	/* take job 0 off the head as take() does */
	s->q_head = 1;
	s->q_len = 2;
	s->running = 1;
	sl->holding = true;
	sched_give_back(s, sl, &f->jobs[0], true, false);
	assert_int_equal(s->q_len, 3);
	assert_int_equal(s->queue[s->q_head], 0);
	assert_int_equal(s->running, 0);
	assert_false(sl->holding);
	assert_false(s->finished[0]);
	/* a final end: finished, not queued again */
	s->q_head = 1;
	s->q_len = 2;
	s->running = 1;
	sched_give_back(s, sl, &f->jobs[0], false, true);
	assert_int_equal(s->q_len, 2);
	assert_int_equal(s->queue[s->q_head], 1);
	assert_true(s->finished[0]);
	/* the ring wraps: a requeue at head 0 goes to the last place */
	s->q_head = 0;
	s->q_len = 1;
	s->queue[0] = 2;
	s->running = 1;
	sched_give_back(s, sl, &f->jobs[1], true, false);
	assert_int_equal(s->q_head, 2);
	assert_int_equal(s->queue[2], 1);
	assert_int_equal(s->queue[0], 2);
	assert_int_equal(s->q_len, 2);
	fixture_free(f);
}

static void a_box_is_quarantined_once(void **state)
{
	(void)state;
	fixture *f = fixture_new(2, 1, 2);
	sched *s = &f->s;
	sched_box *b = &s->boxes[0];
	sched_box_charge(s, b, &s->slots[0], false, "one");
	assert_int_equal(b->failures, 1);
	assert_false(b->quarantined);
	/* failures of one moment (the last one is later than now here) count once */
	b->last_failure_ms = bg_now_ms() + 60000;
	sched_box_charge(s, b, &s->slots[0], true, "same moment");
	assert_int_equal(b->failures, 1);
	assert_int_equal(f->quarantined, 0);
	/* long after the last: counted */
	b->last_failure_ms = 0;
	sched_box_charge(s, b, &s->slots[0], true, "two");
	assert_int_equal(b->failures, 2);
	assert_true(b->quarantined);
	assert_int_equal(f->quarantined, 1);
	assert_string_equal(f->last_why, "two");
	/* more failures: no second event */
	sched_box_charge(s, b, &s->slots[0], false, "three");
	assert_int_equal(f->quarantined, 1);
	assert_false(s->boxes[1].quarantined);
	fixture_free(f);
}

static void a_vanished_agent_is_the_jobs_fault_until_it_runs_elsewhere(void **state)
{
	(void)state;
	fixture *f = fixture_new(3, 2, 1);
	sched *s = &f->s;
	campaign_job *j = &f->jobs[1];
	/* job 1's agent vanished on b0, which answered again at once */
	assert_false(sched_charge_attempt(s, &s->boxes[0], j, true));
	assert_int_equal(s->failed_on[1 * 3 + 0], FAILED_JOB);
	assert_int_equal(s->job_failures[1], 1);
	assert_int_equal(s->boxes[0].failures, 0);
	/* a box already charged for the job stays charged */
	sched_charge_attempt(s, &s->boxes[2], j, false);
	sched_charge_attempt(s, &s->boxes[2], j, true);
	assert_int_equal(s->failed_on[1 * 3 + 2], FAILED_BOX);
	/* ... and that was its second job fault: recorded failed */
	assert_int_equal(s->job_failures[1], SCHED_JOB_FAILURES_MAX);
	s->job_failures[1] = 1;
	s->failed_on[1 * 3 + 2] = FAILED_NONE;
	/* it ran well on b1: b0 was at fault after all (max_failures 1: out) */
	sched_clear_job(s, &s->slots[1], j);
	assert_int_equal(s->failed_on[1 * 3 + 0], FAILED_BOX);
	assert_int_equal(s->boxes[0].failures, 1);
	assert_true(s->boxes[0].quarantined);
	assert_false(s->boxes[1].quarantined);
	assert_false(s->boxes[2].quarantined);
	assert_int_equal(f->quarantined, 1);
	assert_non_null(strstr(f->last_why, "c/q/8/base@x/1"));
	/* cleared once: a second good end charges nobody again */
	sched_clear_job(s, &s->slots[1], j);
	assert_int_equal(s->boxes[0].failures, 1);
	fixture_free(f);
}

static void job_faults_add_up(void **state)
{
	(void)state;
	fixture *f = fixture_new(2, 1, 5);
	sched *s = &f->s;
	campaign_job *j = &f->jobs[0];
	assert_false(sched_charge_attempt(s, &s->boxes[0], j, true));
	assert_true(sched_charge_attempt(s, &s->boxes[1], j, true));
	/* neither box charged: the job's fault */
	assert_int_equal(s->boxes[0].failures + s->boxes[1].failures, 0);
	fixture_free(f);
}

/* The queue of the jobs not yet recorded, the jobs left after a run, and
 * what the run made released (a failure's reason and the stop reason
 * included). */
static void queue_left_and_release(void **state)
{
	(void)state;
	fixture *f = fixture_new(2, 4, 2);
	sched *s = &f->s;
	free(s->queue);
	bool done[4] = {true, false, true, false};
	sched_queue_pending(s, done);
	assert_int_equal(s->q_len, 2);
	assert_int_equal(s->queue[0], 1);
	assert_int_equal(s->queue[1], 3);
	assert_int_equal(sched_left(s, done), 2);
	s->finished[3] = true;
	assert_int_equal(sched_left(s, done), 1);
	assert_int_equal(sched_left(s, NULL), 3); /* nothing recorded before */
	free(s->queue);
	sched_queue_pending(s, NULL);
	assert_int_equal(s->q_len, 4);
	s->failed_why[1] = xstrdup("failed twice");
	s->stop_why = xstrdup("every box quarantined");
	fixture_free(f); /* sched_release: ASan says what it leaves */

	/* nothing prepared: nothing to free, nothing left but the jobs */
	sched bare = {.n_jobs = 2};
	assert_int_equal(sched_left(&bare, NULL), 2);
	sched_release(&bare);
	sched none = {0};
	sched_queue_pending(&none, NULL);
	assert_int_equal(none.q_len, 0);
	sched_release(&none);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(attempt_ends),
		cmocka_unit_test(a_slot_takes_what_did_not_fail_on_its_box),
		cmocka_unit_test(a_requeued_job_goes_first),
		cmocka_unit_test(a_box_is_quarantined_once),
		cmocka_unit_test(a_vanished_agent_is_the_jobs_fault_until_it_runs_elsewhere),
		cmocka_unit_test(job_faults_add_up),
		cmocka_unit_test(queue_left_and_release),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
