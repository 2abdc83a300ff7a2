/* The read side of a campaign: its records in a results file gathered into
 * points (one per shape and num_workers), each holding one cell per
 * candidate, judged and ranked. Pure: reads the file, never prints.
 *
 * Only records whose campaign.final is true count (a cut attempt was
 * requeued and recorded again); a job key recorded final twice keeps its
 * last record. A candidate's cells count the records of its current
 * definition only (its gate_args, flags and kernel file: an edit makes new
 * jobs); records of an earlier definition are counted as superseded. A cell's samples are its
 * PASS_GATE and BELOW_BAR records with a candidate side; its verdict:
 *
 *   any TIMEOUT_HANG                       TIMEOUT_HANG
 *   any INVALID, no verdict, or no sample  INVALID (a candidate that failed
 *                                          once is not promotable)
 *   strict_noise and n >= 2 and slowCTA CV% > max_cv
 *                                          NOISY (without strict_noise the CV
 *                                          is a warning, cv_warn)
 *   the baseline cell                      BASELINE
 *   no ratio (no baseline at the point, none in the gate) and every sample
 *   a MEASURED record (run --no-baseline)  MEASURED (never best, never
 *                                          below the bar)
 *   median sumCTA > baseline median sumCTA x (1 + sum_tolerance/100)
 *                                          BELOW_BAR (sloughed work)
 *   one sample a side                      ratio >= bar: PASS_GATE, else
 *                                          BELOW_BAR (single: no interval)
 *   otherwise                              the decision of measure/decide.h:
 *                                          PASS_GATE, BELOW_BAR or NOISY
 *
 * ratio = median(baseline slowCTA) / median(cell slowCTA) when the point has
 * a baseline cell with samples (source "jobs"; decided on the two samples,
 * unpaired), else the median of the gate's own ratio over the cell's records
 * (source "in-gate"; decided on those ratios as pairs), else none (BELOW_BAR).
 * The best cell of a point has the lowest median slowCTA among the cells
 * judged PASS_GATE, BELOW_BAR, NOISY or BASELINE, not sloughed and with a
 * ratio (the baseline aside): the baseline may win; a point where no baseline
 * was run and no gate measured one has no best. It is provisional when it is not measurably faster
 * than the next fastest (their ratio's interval does not lie above 1) or rests on single runs. */
#ifndef BG_CAMPAIGN_POINTS_H
#define BG_CAMPAIGN_POINTS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "base/strbuf.h"
#include "measure/decide.h"

struct cJSON;

typedef enum campaign_verdict {
	CAMPAIGN_PASS_GATE,
	CAMPAIGN_BELOW_BAR,
	CAMPAIGN_NOISY,
	CAMPAIGN_INVALID,
	CAMPAIGN_TIMEOUT_HANG,
	CAMPAIGN_BASELINE,
	/* the candidate measured alone (run --no-baseline): its timings with no
	 * baseline to hold them against; neither a pass nor below the bar */
	CAMPAIGN_MEASURED
} campaign_verdict;

/* "PASS_GATE", "BELOW_BAR", "NOISY", "INVALID", "TIMEOUT_HANG", "baseline",
 * "MEASURED". */
const char *campaign_verdict_name(campaign_verdict v);

typedef enum campaign_ratio_source {
	CAMPAIGN_RATIO_NONE,
	CAMPAIGN_RATIO_JOBS,   /* the baseline's jobs at the same point */
	CAMPAIGN_RATIO_IN_GATE /* the gate's own in-tree measurement */
} campaign_ratio_source;

/* "none", "jobs", "in-gate". */
const char *campaign_ratio_source_name(campaign_ratio_source s);

/* A growable list of distinct strings (owned), in order of first sight. */
typedef struct campaign_names {
	char **v;
	size_t n, cap;
} campaign_names;

/* Adds a copy of `s` (NULL: nothing) unless it is there already. */
void campaign_names_add(campaign_names *l, const char *s);
void campaign_names_release(campaign_names *l);

/* One candidate at one point. Numbers not measured are NAN. */
typedef struct campaign_cell {
	char *candidate;                 /* owned */
	bool baseline;                   /* the in-tree kernel ("baseline") */
	size_t n;                        /* samples */
	size_t n_measured;               /* ... of them MEASURED records (the candidate alone) */
	double *slow, *wall, *sum, *cos; /* the samples (owned), NAN where a record lacked one */
	double slow_median, slow_min, slow_max, slow_cv; /* CV in percent */
	double wall_median, sum_median, cos_min;
	size_t n_bad;          /* INVALID, TIMEOUT_HANG, no verdict or no result */
	const char *worst_bad; /* the worst of them ("TIMEOUT_HANG" first), NULL if none; static */
	double *gate_ratio;    /* the gate's own ratios (owned) */
	size_t n_gate_ratio;
	double *gate_base_sum; /* the gate's in-tree sumCTA (owned) */
	size_t n_gate_base_sum;
	double ratio; /* baseline over candidate, NAN when none */
	campaign_ratio_source ratio_source;
	bool sloughed; /* BELOW_BAR because its sumCTA exceeds the baseline's by the tolerance */
	bool cv_warn;  /* n >= 2 and its slowCTA CV exceeds max_cv */
	bool single;   /* judged on one sample a side: no interval */
	bool decided;  /* dec holds the decision of its ratio (n >= 2 on a side) */
	measure_decision dec;
	campaign_verdict verdict;
	campaign_names boxes, slots, gpu_names; /* seen in its records: "box", "box:gpus" */
	size_t cap_samples, cap_gate_ratio, cap_gate_base_sum;
} campaign_cell;

typedef struct campaign_point {
	char *shape; /* owned */
	bool has_num_workers;
	long num_workers;
	campaign_cell *cells; /* the baseline first, then in order of first appearance */
	size_t n_cells, cap_cells;
	long best;             /* index into cells, -1 when no cell qualifies */
	bool best_provisional; /* not measurably faster than the next, or single runs */
	long runner_up;        /* the next fastest qualifying cell, -1 when none */
} campaign_point;

/* A campaign read from a results file. */
typedef struct campaign_points {
	char *name, *file, *pool; /* owned; file and pool NULL when not recorded */
	char **gate_args;         /* the campaign's own gate words (owned) */
	size_t n_gate_args;
	double bar, max_cv, sum_tolerance; /* the last record's, else 1.2, 2.0 and 10.0 */
	bool strict_noise;                 /* the last record's, else false */
	campaign_point *points; /* by shape (first appearance), then num_workers ascending,
				   a point without num_workers first */
	size_t n_points, cap_points;
	campaign_names shapes;     /* in order of first appearance */
	campaign_names candidates; /* the baseline first, then in order of first appearance */
	campaign_names boxes, gpu_names;
	char *first_start, *last_end; /* the records' time span, NULL when not recorded */
	size_t jobs_recorded;         /* distinct final job keys */
	size_t jobs_expected;         /* campaign.jobs (0 when not recorded) */
	size_t duplicates;            /* final records of a job already recorded */
	size_t not_final;             /* records of cut attempts, not counted */
	size_t superseded; /* final records of an earlier definition of their candidate */
	campaign_names superseded_candidates; /* whose they are */
	size_t bad_lines, first_bad;          /* lines of the file that were not records */
	bool torn;                            /* the file's last line was torn */
	/* campaign_points_read_any: records of runs (not of a campaign) counted, and
	 * whether no campaign is among them (name is then the file's stem) */
	size_t run_records;
	bool no_campaign;
} campaign_points;

/* Reads the campaign `name` (NULL: the file's only campaign) from the
 * results file at `results_path` into *out (released by
 * campaign_points_release, also after an error). BG_ENOTFOUND when the file
 * does not exist or holds no campaign records, BG_EIO when it cannot be read,
 * BG_EUSAGE when `name` is not in the file or is NULL and the file holds
 * several campaigns (err->msg lists them). */
int campaign_points_read(const char *results_path, const char *name, campaign_points *out,
			 bg_err *err);
void campaign_points_release(campaign_points *p);

/* A candidate's current definition (campaign_candidate.def), both borrowed. */
typedef struct campaign_current {
	const char *candidate, *def;
} campaign_current;

/* As campaign_points_read, with the definitions a campaign file gives now:
 * a candidate's records of any other definition are not counted (without
 * them, the definition of its last final record is the current one). */
int campaign_points_read_current(const char *results_path, const char *name,
				 const campaign_current *cur, size_t n_cur, campaign_points *out,
				 bg_err *err);

struct results_selector;

/* As campaign_points_read, for any results file: the records `sel` picks
 * (NULL: all), those of runs too: a run's record is a final record of its
 * point's shape, worker count and candidate. Without `name`, a file holding one
 * campaign and records of runs reports them together; several campaigns need
 * `name` (or a selector that picks one), which then counts its records alone.
 * BG_ENOTFOUND when nothing is left to report. */
int campaign_points_read_any(const char *results_path, const char *name,
			     const struct results_selector *sel, campaign_points *out, bg_err *err);

/* The best cell of point `pt`, NULL when none. Borrowed. */
const campaign_cell *campaign_point_best(const campaign_point *pt);

/* Appends the winner flips of `shape`, walking num_workers ascending, as
 * "SHAPE: cand_a best at 8-64, baseline at 68-136" (no newline); "none"
 * stands for points without a best. */
void campaign_flips_text(const campaign_points *p, const char *shape, strbuf *out);

/* Appends the closing summary of the campaign command: one aligned table per
 * shape (the best of each point marked '*'), the flips, then the counts. */
void campaign_summary_text(const campaign_points *p, strbuf *out);

/* The points as one JSON object (owned by the caller): the campaign, its
 * counts, the points with their cells and best, and the flips per shape.
 * Numbers not measured are null. */
struct cJSON *campaign_points_json(const campaign_points *p);

#endif
