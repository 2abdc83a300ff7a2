/* A waiter's place in a pool's line (`run --pool P --wait S`): a ticket held by
 * the agent's queue command on the pool's first box, kept alive by heartbeats from
 * a thread of its own, so that waiters across clients are served in the order
 * they arrived and a waiter that dies or is cut off loses its place. */
#ifndef BG_POOL_LINE_H
#define BG_POOL_LINE_H

#include <signal.h>
#include <stdint.h>

#include "conf/conf.h"
#include "gate/client/agent_install.h"
#include "remote/remote.h"

typedef struct pool_line pool_line;

/* Connects to `box` (with `link`: the host-key policy and where warnings
 * go), makes sure the agent is there and takes a ticket in `pool`'s line,
 * its record naming the waiter `tag` (user@host:pid; NULL: none).
 * Returns 0, or a negative bg error (err says why). */
int pool_line_join(const conf_box *box, const char *pool, const char *tag, const gate_agent *agent,
		   const remote_connect_opts *link, pool_line **out, bg_err *err);
/* Waits until no live ticket is ahead (1), `deadline` (base/timer.h ms) passes
 * (0) or *stop is set or the line is lost (-1, err says why when lost), or the
 * count of waiters ahead is no longer *ahead as passed in (2: the caller may
 * say it and call again). *ahead is the last count of waiters ahead (-1 until
 * the agent said one). */
int pool_line_wait_head(pool_line *l, int64_t deadline, volatile sig_atomic_t *stop, int *ahead,
			bg_err *err);
/* Leaves the line (from any thread: the keeper thread sends "done"). */
void pool_line_leave(pool_line *l);
/* Leaves when not yet left, waits for the ticket to be gone, frees. */
void pool_line_free(pool_line *l);

/* The agent's queue command for `pool` (owned): AGENT queue --name POOL
 * --heartbeat S [--tag TAG], the pool's name and the tag quoted. */
char *pool_line_cmd(const char *agent_path, const char *pool, const char *tag);
/* The agent's words that list `pool`'s line (owned): queue-list --name POOL. */
char *pool_line_list_args(const char *pool);
/* The waiters of the agent's queue-list output, first in line first: JSON
 * objects {"ticket","position","pid","tag","since"} (other lines skipped;
 * a position that is not a whole number from 1 up is renumbered in order). */
struct cJSON *pool_line_waiters(const char *out);
/* What one line of the queue command says: 1 first in line (*ahead = 0),
 * 0 *ahead waiters ahead, -1 neither (*ahead unchanged; a count is never read
 * below zero or past INT_MAX). */
int pool_line_parse(const char *line, size_t len, int *ahead);

#endif
