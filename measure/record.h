/* What `run` and the campaign scheduler put into an invocation's record
 * beside what the gate said: where it ran, and for an invocation of one of
 * run's points its place, role and overlay. The record itself is
 * results/record.c's. */
#ifndef BG_MEASURE_RECORD_H
#define BG_MEASURE_RECORD_H

#include <stdbool.h>

#include "base/error.h"
#include "conf/conf.h"
#include "measure/point.h"
#include "results/record.h"

/* Where the invocation ran: boxgate's version, the box, its host
 * ("localhost" on the local transport) and transport ("local" or "ssh"). */
void measure_record_where(results_record_in *in, const conf_box *box);

/* An invocation of a point of `run`, m its point: repeat i of n (n 0: no
 * --repeat; a warm-up has no repeat and is marked one), the role when
 * baseline and candidate are measured apart (m->apart), the candidate's
 * overlay (a baseline run has none), and no reason when it succeeded.
 * Fill exit_code and why first. */
void measure_record_point(results_record_in *in, const measure_point *m, bool baseline, bool warmup,
			  int i, int n, const struct cJSON *overlay);

/* Builds the record of `in` and appends it to the results file at path. */
int measure_record_append(const char *path, const results_record_in *in, bg_err *err);

#endif
