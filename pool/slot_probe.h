/* Asking boxes' agents about their slots, boxes in parallel: what `slots` prints
 * and what the broker in `run --pool` picks from. */
#ifndef BG_POOL_SLOT_PROBE_H
#define BG_POOL_SLOT_PROBE_H

#include <stdbool.h>
#include <stddef.h>

#include "conf/conf.h"
#include "gate/client/agent_install.h"
#include "remote/remote.h"
#include "remote/slurm.h"

struct cJSON;

typedef struct slot_probe {
	const conf_box *box;
	char *gpus;            /* the agent's --gpus value (owned); NULL: what it sees */
	const char *action;    /* NULL: list; else AGENT_CMD_SLOT_DISABLE or _ENABLE */
	const char *why;       /* disable's reason */
	const conf_pool *pool; /* its `disabled` slots are marked so in rows (may be NULL) */
	/* filled by slot_probe_all */
	struct cJSON *rows; /* the agent's slot objects in its order (listing) */
	char *out;          /* the agent's stdout (disable, enable) */
	remote_conn *conn;  /* kept open when asked to */
	char *agent_path;   /* the agent's command word on the box (owned) */
	int code;           /* 0, else the exit code of the failure (printed) */
	char *error;        /* that failure's message (owned) */
} slot_probe;

/* Connects to every probe's box in parallel (with `link`: the host-key policy
 * and where warnings go), makes sure the agent is there and runs its slots
 * command (or the probe's action). Failures are kept in code and error (the
 * caller says them). With `keep`, each connection stays open in conn for the
 * caller (slot_probe_release closes what is left). */
void slot_probe_all(slot_probe *p, size_t n, const gate_agent *agent,
		    const remote_connect_opts *link, bool keep);
void slot_probe_release(slot_probe *p, size_t n);

/* The probes of a pool's `slots =` list, one per box in the pool's order, each
 * box's GPUs joined, less the boxes `exclude` names (a spec; NULL: none);
 * NULL (err says why) when there is no such pool, the exclusion names an
 * unknown box or leaves no box. */
slot_probe *slot_probe_pool(const conf *c, const char *pool, const char *exclude, size_t *n,
			    bg_err *err);

/* The agent's words for probe p: its slots command, or p's action, with
 * --gpus, --why and --by (`who`) each quoted (owned). */
char *slot_probe_agent_args(const slot_probe *p, const char *who);
/* The agent's slots output (one JSON object a line; other lines skipped) as
 * rows, those the pool's `disabled` names marked disabled (owned). */
struct cJSON *slot_probe_rows(char *out, const slot_probe *p);
/* A Slurm box's rows: boxgate's steps from squeue (held: running; pending:
 * queued), then free places up to max_jobs (owned). */
struct cJSON *slot_probe_slurm_rows(const remote_slurm_job *jobs, size_t n, int max_jobs);

/* "user@host" of whoever runs boxgate here (owned). */
char *slot_probe_who(void);

#endif
