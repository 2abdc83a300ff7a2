/* Who waits in each pool's first-come line, for `boxgate slots`: the
 * tickets on each pool's first box, read over the connections the slot
 * probes kept. */
#ifndef BG_POOL_LINES_H
#define BG_POOL_LINES_H

#include <stddef.h>

#include "conf/conf.h"
#include "gate/client/agent_install.h"
#include "pool/slot_probe.h"

struct cJSON;

/* The lines of the pools to show, over the probes' kept connections: with
 * `pool`, that pool's (its first box must be among jobs); else every pool of
 * the configuration whose first box is among jobs and answered. One object per
 * pool: {"pool","box","waiters":[...]} or, where it could not be read,
 * {"pool","box","error"} (owned array); a Slurm box keeps no line. */
struct cJSON *pool_lines_read(const conf *c, const char *pool, slot_probe *jobs, size_t n,
			      const gate_agent *agent);

#endif
