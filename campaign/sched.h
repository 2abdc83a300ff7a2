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
 * ends; "final": false marks an attempt that was cut and requeued.
 *
 * The scheduler prints nothing and never calls the front end: it connects with
 * the remote_connect_opts it is handed (host-key policy, where warnings go)
 * and says what happens through on_event. */
#ifndef BG_CAMPAIGN_SCHED_H
#define BG_CAMPAIGN_SCHED_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

#include "campaign/spec.h"
#include "conf/conf.h"
#include "gate/client/agent_install.h"
#include "gate/client/overlay.h"
#include "gate/client/run.h"
#include "gate/client/serve.h"
#include "remote/remote.h"

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
	/* JOB_END/CUT: round trips the gate's run waited for on the slot's
	 * connection (a serving agent's start included), for BOXGATE_TRACE */
	unsigned round_trips;
	bool served;     /* JOB_END/CUT: the job went to the worker's serving agent */
	const char *why; /* a one-line reason, "" when none */
} sched_event;

/* A job's gate on one box: its arguments translated through the box's shim
 * (the caller owns what spec points at). */
typedef struct sched_gate {
	gate_spec spec;
	double bar; /* the pass bar, 0: the default */
} sched_gate;

typedef struct sched_box {
	const conf_box *box;
	sched_gate *gate; /* per job */
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
	/* The worker's serving agent on conn: every job of the worker goes to it
	 * over its stdin (campaign key persistent_agent, default yes); NULL until
	 * the first job and after it was lost. */
	gate_served *served;
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
	const char *results;      /* the file records go to */
	remote_connect_opts link; /* how workers connect, where warnings go */
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

/* The queue sched_run takes: every job not `done` (per job; NULL: none
 * done), in the jobs' order (s->queue owned, s->q_len set). */
void sched_queue_pending(sched *s, const bool *done);

/* The jobs left after a run: neither done before it (`done`, per job) nor
 * finished by it. */
size_t sched_left(const sched *s, const bool *done);

/* Frees the queue and what sched_prepare made (the per-job arrays, each
 * job's failure reason, the stop reason); the boxes, slots and jobs are
 * the caller's. NULL-safe per part. */
void sched_release(sched *s);

/* The scheduler's decisions, each a function of its own (tests drive them on a
 * sched set up by sched_prepare, no worker running). */

/* What sched_run does before its workers start: the per-job arrays (zeroed,
 * the caller frees them), the lock and its condition, the run id, each slot's
 * box counted live. */
void sched_prepare(sched *s);

/* failed_on's values, per job and box. */
enum { FAILED_NONE, FAILED_BOX, FAILED_JOB };

/* How an attempt ended, for the queue. */
typedef enum {
	END_FINAL,      /* judged: recorded final */
	END_BOX_FAILED, /* the link, or the agent's own error: requeued, box or job charged */
	END_SLOT_LEFT,  /* the slot is held by another run or disabled: requeued */
	END_REQUEUE,    /* Slurm ended the step: requeued, nobody charged */
	END_STOPPED     /* the user stopped the run */
} sched_end;

/* An attempt's end from gate_run's rc and outcome, `stop` the user's stop
 * and `slurm` whether the box is a Slurm login node. */
sched_end sched_classify(int rc, const gate_outcome *o, bool stop, bool slurm);

/* The queue position (from its head) of the job slot sl takes next: the first
 * that did not fail on sl's box, or that failed on every box still in service
 * (it may fail here again rather than wait for ever). -1: none for this slot
 * now. Under s->mu. */
long sched_pick(const sched *s, const sched_slot *sl);

/* Job j is over on slot sl: back to the front of the queue when `requeue`;
 * `final` marks it finished. */
void sched_give_back(sched *s, sched_slot *sl, const campaign_job *j, bool requeue, bool final);

/* Counts a failure against box b; quarantines it at the spec's max_failures
 * (sl, one of its slots, names it in the SCHED_QUARANTINED event, sent once).
 * `windowed`: failures within FAILURE_WINDOW_MS of the last count once (a
 * box's connections die together). */
void sched_box_charge(sched *s, sched_box *b, sched_slot *sl, bool windowed, const char *why);

/* An attempt of job j failed on box b: marks failed_on (the box's fault, or
 * with `job_fault` the job's unless the box was charged already) and counts a
 * job fault. True when the job has now failed SCHED_JOB_FAILURES_MAX times:
 * recorded failed. */
bool sched_charge_attempt(sched *s, sched_box *b, const campaign_job *j, bool job_fault);

/* Job j ended well on sl's box: each other box where its agent vanished
 * (charged to the job then) was at fault after all, and is charged now. */
void sched_clear_job(sched *s, const sched_slot *sl, const campaign_job *j);

#endif
