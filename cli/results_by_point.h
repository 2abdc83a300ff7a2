/* boxgate results show --by point: records grouped into points
 * (results/points.h), one row each with n, the slowCTA median and CV, the
 * gate's ratio with its interval and the verdict measure/delta.h gives it,
 * and the runs the records came from. */
#ifndef BG_CLI_RESULTS_BY_POINT_H
#define BG_CLI_RESULTS_BY_POINT_H

#include <stdbool.h>
#include <stddef.h>

struct cJSON;

/* Prints the points of recs[0..n) as an aligned table, or with `json` one
 * JSON object a point. */
void cli_results_by_point(struct cJSON *const *recs, size_t n, bool json);

#endif
