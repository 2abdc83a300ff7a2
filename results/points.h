/* Records grouped into points, for `results compare` and `results show --by
 * point`. A point is what a record measured: (device: the GPU name, else the
 * box; gate kind; shape; num_workers; candidate; every other gate argument,
 * so --dtype fp8 is never pooled with bf16). Each key field has a name, which
 * `--pair NAME` leaves out when pairing the points of two sides: "device",
 * "kind", "shape", "num-workers", "candidate", or a gate argument's flag
 * without its dashes ("variant" for --variant X).
 *
 * A record gives a sample when its verdict is neither INVALID nor
 * TIMEOUT_HANG and its candidate slowCTA is a span a clock can measure
 * (gate/result.h: GATE_SPAN_MIN_US to GATE_SPAN_MAX_US); others are counted
 * as bad. Pure: never prints. */
#ifndef BG_RESULTS_POINTS_H
#define BG_RESULTS_POINTS_H

#include <stdbool.h>
#include <stddef.h>

struct cJSON;

/* One key field: name and value (both owned). */
typedef struct results_field {
	char *name, *value;
} results_field;

enum { RESULTS_F_DEVICE, RESULTS_F_KIND, RESULTS_F_SHAPE, RESULTS_F_NW, RESULTS_F_CANDIDATE };
#define RESULTS_FIXED_FIELDS 5

typedef struct results_point {
	/* fields[0..5): device, kind, shape, num-workers, candidate (value "-" when
	 * not recorded); then the other gate arguments in their order */
	results_field *fields;
	size_t n_fields;
	double *slow; /* candidate slowCTA samples, in file order */
	size_t n, cap;
	double *ratio; /* the gate's own ratios baseline/candidate */
	size_t n_ratio, cap_ratio;
	size_t n_bad; /* INVALID, TIMEOUT_HANG or no usable sample */
	bool hang;    /* some record was TIMEOUT_HANG */
	double bar;   /* the last bar a record states, NAN when none */
	char **runs;  /* distinct run ids, in order of first sight (owned) */
	size_t n_runs, cap_runs;
	char *first_start, *last_start; /* owned, NULL when not recorded */
} results_point;

typedef struct results_points {
	results_point *v;
	size_t n, cap;
} results_points;

#define RESULTS_POINTS_INIT                                                                        \
	{                                                                                          \
		NULL, 0, 0                                                                         \
	}

/* Adds `rec` to its point (made when new); a warm-up's record
 * (results_record_is_warmup) is left out. */
void results_points_add(results_points *ps, const struct cJSON *rec);
void results_points_release(results_points *ps);

/* The point's label: its field values joined by spaces ("nw" before the worker
 * count, a gate argument as --NAME VALUE), leaving out the field named `skip`
 * (NULL: none). Owned. */
char *results_point_label(const results_point *p, const char *skip);

/* A record's gate arguments other than the point's own (--kind, --shape,
 * --configs, --num-workers, --kernel, --candidate, --baseline), as
 * "--dtype fp8 --variant nosplit"; "" when none. Owned. */
char *results_record_other_args(const struct cJSON *rec);

/* The value of field `name` (NULL when the point has none). Borrowed. */
const char *results_point_field(const results_point *p, const char *name);

/* True when a and b have the same fields and values, `skip` left out; a value
 * of b equal to `map_to` (when set) compares as `map_from`. */
bool results_point_pairs(const results_point *a, const results_point *b, const char *skip,
			 const char *map_from, const char *map_to);

#endif
