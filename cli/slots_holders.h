/* What `boxgate slots` prints of each pool's first-come line (read by
 * pool/lines.h). */
#ifndef BG_CLI_SLOTS_HOLDERS_H
#define BG_CLI_SLOTS_HOLDERS_H

#include <stdbool.h>
#include <stddef.h>

struct cJSON;

/* The table's line part: each pool's waiters, one row each, first in line
 * first; a pool with no one waiting is said only when `always`. */
void slots_print_lines(const struct cJSON *lines, bool always);

/* --json: one object per waiter, {"line": POOL, "box": ..., "position", ...}. */
void slots_print_lines_json(const struct cJSON *lines);

#endif
