/* results compare's engine: two sides (a results file and a selector each)
 * read into points (results/points.h), the points of one side paired with
 * those of the other (all fields equal, or all but one key, or one key's value
 * mapped A=B), and each pair called same, faster, slower or ambiguous by the
 * adapter in measure/delta.h on the slowCTA samples. */
#ifndef BG_MEASURE_COMPARE_H
#define BG_MEASURE_COMPARE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "measure/delta.h"
#include "results/points.h"
#include "results/select.h"
#include "results/stats.h"
#include "results/store.h"

enum { MEASURE_BEFORE, MEASURE_AFTER };

typedef struct measure_side {
	const char *path;        /* the results file (borrowed) */
	results_selector sel;    /* the records this side takes (the caller's) */
	results_points pts;      /* filled by measure_side_read (the caller releases) */
	size_t matched, skipped; /* records the selector took; of them without a sample */
} measure_side;

/* Reads s->path, every record s->sel takes into s->pts. */
int measure_side_read(measure_side *s, results_read_stats *st, bg_err *err);

/* What --pair says: the key the pairing leaves out (skip), or a value mapped
 * from A (before) to B (after); all owned. */
typedef struct measure_pairing {
	char *skip, *from, *to;
	bool inferred; /* skip not given: the one point field the selectors set apart */
} measure_pairing;

/* --pair GIVEN (NULL: not given, then the one point field both selectors name
 * with different values, if exactly one). BG_EUSAGE for a bad GIVEN. */
int measure_pairing_parse(const char *given, const results_selector *before,
			  const results_selector *after, measure_pairing *pr, bg_err *err);
void measure_pairing_release(measure_pairing *pr);

/* A row's call: a stats_call, or a point of one side alone. */
enum { MEASURE_ONLY_BEFORE = STATS_AMBIGUOUS + 1, MEASURE_ONLY_AFTER, MEASURE_N_CALLS };

typedef struct measure_row {
	const results_point *p[2]; /* borrowed from the sides; NULL: only on the other */
	char *label;               /* owned */
	results_delta d;
	int call;
} measure_row;

/* The rows: each before point with the after point it pairs with, then the
 * after points left alone. Two points of one side pairing the same point of
 * the other is BG_EUSAGE (samples of different points are never pooled);
 * *out is set either way and its labels are the caller's to free. */
int measure_pair_rows(const results_points *before, const results_points *after,
		      const measure_pairing *pr, measure_row **out, size_t *n_out, bg_err *err);

/* Both sides of the row have samples: it has a change, an interval and p. */
bool measure_row_has_both(const measure_row *r);

/* Sets r->d and r->call. */
void measure_row_decide(measure_row *r);

/* "only in before", "same", ...; and the JSON key ("only_before", "same"). */
const char *measure_row_call_name(int call);
const char *measure_row_call_key(int call);

#endif
