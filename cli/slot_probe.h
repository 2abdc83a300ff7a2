/* Asking boxes' agents about their slots, boxes in parallel: what `slots` prints
 * and what the broker in `run --pool` picks from. */
#ifndef BG_CLI_SLOT_PROBE_H
#define BG_CLI_SLOT_PROBE_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/cli.h"
#include "gate/agent_install.h"

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

/* Connects to every probe's box in parallel, makes sure the agent is there and
 * runs its slots command (or the probe's action). Failures are kept in code and
 * error and printed unless `quiet`. With `keep`, each connection stays open in
 * conn for the caller (slot_probe_release closes what is left). */
void slot_probe_all(slot_probe *p, size_t n, const gate_agent *agent, bool accept_new, bool keep,
		    bool quiet);
void slot_probe_release(slot_probe *p, size_t n);

/* The probes of a pool's `slots =` list, one per box in the pool's order, each
 * box's GPUs joined, less the boxes `exclude` names (a spec; NULL: none);
 * NULL (error printed) when there is no such pool, the exclusion names an
 * unknown box or leaves no box. */
slot_probe *slot_probe_pool(const conf *c, const char *pool, const char *exclude, size_t *n);

/* "user@host" of whoever runs boxgate here (owned). */
char *slot_probe_who(void);

#endif
