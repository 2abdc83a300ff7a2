/* The results store: a JSON Lines file, one record (one JSON object) a line.
 *
 * A record is appended with one write(2) of the whole line on an O_APPEND
 * descriptor under flock(2) and fsync'd before the call returns, so a crash or SIGKILL at
 * any moment leaves every earlier line whole and at most the last one torn;
 * the reader skips a torn last line and reports it. */
#ifndef BG_RESULTS_STORE_H
#define BG_RESULTS_STORE_H

#include <stddef.h>

#include "base/error.h"

struct cJSON;

/* Appends `json` (one line, no '\n' inside) and a '\n' to `path`, creating
 * the file (0600) and its missing parent directories (0700). */
int results_append(const char *path, const char *json, size_t len, bg_err *err);
/* The same for a cJSON object, printed compact. */
int results_append_json(const char *path, const struct cJSON *rec, bg_err *err);

typedef struct results_read_stats {
	size_t records;   /* lines that were JSON objects, passed to the callback */
	size_t bad;       /* complete lines that were not (skipped) */
	size_t first_bad; /* the line number of the first of them, 0 if none */
	int torn;         /* the last line had no '\n' and did not parse (skipped) */
} results_read_stats;

/* Called for each record, in file order; `rec` is valid during the call only.
 * A nonzero return stops the read (results_read then returns it). */
typedef int (*results_record_fn)(void *ctx, const struct cJSON *rec, size_t line);

/* Reads every record of `path`. BG_ENOTFOUND when the file does not exist,
 * BG_EIO when it cannot be read; a bad or torn line is counted in *st (may be
 * NULL), not an error. */
int results_read(const char *path, results_record_fn fn, void *ctx, results_read_stats *st,
		 bg_err *err);

#endif
