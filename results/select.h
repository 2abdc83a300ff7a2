/* Selectors over the records of a results store: `results show`, `results
 * compare --before/--after` and `report --select` pick records with them.
 *
 * A selector is one or more terms KEY=VALUE joined by ',' (a ',' followed by
 * something that is not KEY= stays in the value, so `configs=a,b` is one
 * term); a record matches when every term does:
 *
 *   run=ID           the run id, or its first characters
 *   campaign=NAME    the campaign the record belongs to
 *   candidate=NAME   the point's candidate ("baseline" for the in-tree kernel)
 *   kind=K, shape=S  the point's gate kind and shape
 *   num-workers=N    the point's worker count
 *   box=NAME         the box it ran on
 *   device=TEXT      the GPU name contains TEXT (case-insensitive), or the
 *                    device is TEXT ("cpu")
 *   verdict=V        boxgate's verdict (PASS_GATE, NOISY, INVALID, ...)
 *   since=DATE       started at or after DATE (ISO 8601 UTC: 2026-12-03,
 *   until=DATE       2026-12-03T14, 2026-12-03T14:50:01 ...); until is
 *                    inclusive at the precision given (until=2026-12-03 holds
 *                    the whole day)
 *   NAME=VALUE       any other gate argument: --NAME VALUE or --NAME=VALUE
 *                    among the record's gate arguments (variant=nosplit)
 *
 * Pure: no printing, no file access. */
#ifndef BG_RESULTS_SELECT_H
#define BG_RESULTS_SELECT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

struct cJSON;

typedef struct results_term {
	char *key, *value; /* owned */
	int what;          /* which of the keys above (select.c) */
} results_term;

typedef struct results_selector {
	results_term *t;
	size_t n, cap;
} results_selector;

#define RESULTS_SELECTOR_INIT                                                                      \
	{                                                                                          \
		NULL, 0, 0                                                                         \
	}

/* Adds the terms of `text` to *s. BG_EUSAGE for a term that is not KEY=VALUE
 * with a KEY of [A-Za-z0-9_-] and a VALUE without control characters, an empty
 * VALUE, a date that is not ISO 8601, a run id that is not hex or a
 * num-workers that is not a whole number; err->msg names the term. Terms
 * added before the bad one stay. */
int results_selector_add(results_selector *s, const char *text, bg_err *err);

/* True when `rec` matches every term (an empty selector matches all). */
bool results_selector_match(const results_selector *s, const struct cJSON *rec);

/* The selector as text ("run=ab12,variant=nosplit"; "" when empty). Owned. */
char *results_selector_text(const results_selector *s);

void results_selector_release(results_selector *s);

/* The value of gate flag --NAME in a record's gate_args ("--NAME V" or
 * "--NAME=V", the last one given), NULL when absent. Borrowed from `rec`. */
const char *results_gate_arg(const struct cJSON *rec, const char *name);

#endif
