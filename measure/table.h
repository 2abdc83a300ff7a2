/* The point table of a run: one row per point (a worker count of a sweep, or
 * the run's one point) with its medians, spread, CV, n, the ratio and its
 * interval, and the verdict; as Markdown and as JSON, for `run
 * --export-markdown` and `--export-json`. Pure: the caller writes the text. */
#ifndef BG_MEASURE_TABLE_H
#define BG_MEASURE_TABLE_H

#include <stddef.h>

#include "base/strbuf.h"
#include "measure/point.h"

struct cJSON;

typedef struct measure_row {
	const measure_point *m; /* the point's numbers and judgement (borrowed) */
	int num_workers;        /* -1: the gate was given none */
	const char *verdict;    /* PASS_GATE, BELOW_BAR, NOISY, MEASURED or FAILED */
	int runs;               /* invocations counted (warm-ups left out) */
	int warmup;             /* warm-up invocations run first, outside the numbers */
	const char *source;     /* where the number came from: device, workers, cpus */
	int exit_code;          /* the point's exit code */
} measure_row;

typedef struct measure_table {
	const char *box, *run_id;
	const measure_row *rows;
	size_t n;
} measure_table;

/* A title line, a blank line and a GitHub Markdown table: a header, the
 * alignment row and one row per point, every row with the same number of
 * cells; numbers to 3 decimals, "-" where there is none; '|' in a cell is
 * escaped and control bytes become spaces. */
void measure_table_markdown(const measure_table *t, strbuf *out);

/* {"box", "run_id", "points": [{num_workers, verdict, exit, n, runs, warmup,
 * slowCTA_us, wall_us, sumCTA_us: {median, min, max, cv_pct}, ratio: {median,
 * lo, hi, level, method} | null, bar, decision | null, baseline_slowCTA_us
 * (apart), source}]} (owned by the caller). */
struct cJSON *measure_table_json(const measure_table *t);

#endif
