/* The campaign scheduler: one worker thread per usable slot of the pool, each
 * with its own connection (a box's first slot reuses the connection that asked
 * its agent about its slots), taking jobs from one queue as its slot frees up.
 *
 * A job whose box fails under it (connect, agent, dead link) goes back to the
 * front of the queue for another slot, one of another box where the pool has
 * one in service. Whose fault it was is settled after: a box that cannot be
 * reached again, or whose agent reports an error, is charged at once; an
 * agent that vanished on a box that answers again right after is charged to
 * the job, and to the box only once the job has run well elsewhere. A job
 * charged SCHED_JOB_FAILURES_MAX times is recorded failed (final): the job's
 * fault, and the boxes stay in service. A box charged max_failures times is
 * quarantined for the rest of the run. A gate that
 * hangs is that job's TIMEOUT_HANG (the agent frees the slot), not a box
 * failure. A slot another run holds past lock_wait_s, or that is disabled
 * mid-run, is left and its job requeued. Every invocation is recorded as it
 * ends; "final": false marks an attempt that was cut and requeued. */
#ifndef BG_CLI_CAMPAIGN_SCHED_H
#define BG_CLI_CAMPAIGN_SCHED_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

#include "campaign/spec.h"
#include "cli/gate_args.h"
#include "gate/overlay.h"

typedef enum {
	SCHED_JOB_START,
	SCHED_JOB_END,     /* final: judged (any verdict), recorded */
	SCHED_JOB_CUT,     /* the attempt was cut: requeued unless stopping */
	SCHED_QUARANTINED, /* the box is out for the rest of the run */
	SCHED_SLOT_LEFT    /* the slot was taken or disabled: its worker stops */
} sched_event_kind;

struct sched_slot;

/* A job whose agent vanished this many times (on different boxes, where the
 * pool has them) is recorded failed rather than tried again. */
#define SCHED_JOB_FAILURES_MAX 2

typedef struct sched_event {
	sched_event_kind kind;
	const campaign_job *job; /* JOB_*: the job */
	const struct sched_slot *slot;
	int attempt;
	const char *verdict;       /* JOB_END: boxgate's verdict name, "FAILED" when none */
	const gate_result *result; /* JOB_END: the last result line (may be NULL) */
	double secs;               /* JOB_END/CUT: the invocation's wall time */
	const char *why;           /* a one-line reason, "" when none */
} sched_event;

typedef struct sched_box {
	const conf_box *box;
	gate_args *ga; /* per job: the gate's arguments translated for this box */
	bool *ga_ok;   /* per job: ga[j] was parsed */
	pthread_mutex_t mu;
	int failures;
	int64_t last_failure_ms; /* failures within FAILURE_WINDOW_MS count once */
	bool quarantined;
	int live; /* workers still taking jobs on it */
	bool manifest_read;
	char *pushed, *pushed_error;
	overlay *ov;   /* per candidate, prepared on first use */
	char **ov_env; /* per candidate: overlay_env=ROOT, or NULL */
} sched_box;

typedef struct sched_slot {
	struct sched *s;
	sched_box *b;
	char *gpus;  /* NULL: a CPU slot */
	char *label; /* "h3:gpu0" */
	remote_conn *conn;
	char *agent_path;
	pthread_t th;
	int running; /* index of the job whose gate runs (the agent holds the lock), -1 */
	int done;    /* jobs finished on it */
	/* The slot's other worker: while one runs a job the other has the next one's
	 * agent started and waiting for the lock, so the slot's setup time (channel,
	 * agent start, lock) is hidden behind the running gate. NULL: none. */
	struct sched_slot *partner;
	bool holding; /* has a job (running, or waiting for the lock) */
	bool standby; /* started its job while the partner held one: waits long */
} sched_slot;

typedef struct sched {
	const campaign_spec *spec;
	campaign_job *jobs;
	size_t n_jobs;
	const gate_agent *agent;
	const char *results; /* the file records go to */
	bool accept_new;
	char run_id[17];
	volatile sig_atomic_t *stop;
	void (*on_event)(void *ctx, const sched_event *ev);
	void *ctx;
	/* filled in / used by sched_run */
	sched_box *boxes;
	size_t n_boxes;
	sched_slot *slots;
	size_t n_slots;
	size_t n_groups; /* slots, not counting partners */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t *queue; /* job indices, a ring */
	size_t q_head, q_len;
	int running;
	int *attempts;  /* per job */
	bool *finished; /* per job: a final record was written */
	/* per job and box (job * n_boxes + box): FAILED_BOX, the box was charged;
	 * FAILED_JOB, the attempt was charged to the job */
	unsigned char *failed_on;
	int *job_failures; /* per job: attempts charged to it */
	char **failed_why; /* per job: why it was recorded failed (owned), else NULL */
	size_t n_failed_jobs;
	int seq;
	bool record_failed;
	bool stopping;
	char *stop_why; /* why the run stopped itself (owned), NULL when it did not */
} sched;

/* Runs every job of the queue (s->queue/q_len set by the caller) on the slots
 * (s->slots, each with its box, gpus, label, and conn/agent_path when already
 * open) until the queue is empty, no slot is left, or *stop. Returns when every
 * worker has ended. */
void sched_run(sched *s);

/* The kernel_paths entry of `box` for gate kind `kind` (borrowed), NULL if none. */
const char *sched_kernel_path(const conf_box *box, const char *kind);

#endif
