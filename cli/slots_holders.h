/* What `boxgate slots` adds to the agents' slot rows: the campaign that holds
 * a slot (from its lock's holder tag "campaign:NAME ...", and, for a detached
 * campaign of this client, its state file: the job on that slot), and who waits
 * in each pool's first-come line (the tickets on the pool's first box). */
#ifndef BG_CLI_SLOTS_HOLDERS_H
#define BG_CLI_SLOTS_HOLDERS_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/cli.h"
#include "gate/client/agent_install.h"
#include "pool/slot_probe.h"

struct cJSON;

/* Marks each held row of `jobs` that a campaign holds: "campaign": NAME, and
 * when this client runs it detached, "campaign_detached": true and
 * "campaign_job": the job on that slot (when its state file names one). */
void slots_note_campaigns(slot_probe *jobs, size_t n);

/* The lines of the pools to show, over the probes' kept connections: with
 * `pool`, that pool's (its first box must be among jobs); else every pool of
 * the configuration whose first box is among jobs and answered. One object per
 * pool: {"pool","box","waiters":[...]} or, where it could not be read,
 * {"pool","box","error"} (owned array). */
struct cJSON *slots_lines(const conf *c, const char *pool, slot_probe *jobs, size_t n,
			  const gate_agent *agent);

/* The table's line part: each pool's waiters, one row each, first in line
 * first; a pool with no one waiting is said only when `always`. */
void slots_print_lines(const struct cJSON *lines, bool always);

/* --json: one object per waiter, {"line": POOL, "box": ..., "position", ...}. */
void slots_print_lines_json(const struct cJSON *lines);

#endif
