/* What `boxgate run` prints and exports: one line per gate invocation, the
 * point's summary, a sweep's table (on stdout, whatever stdout is; colour
 * only on a terminal), the JSON point event of --json, the tail of the gate's
 * own stdout shown when an invocation fails without -v, and the point table
 * of --export-markdown and --export-json. */
#ifndef BG_CLI_RUN_OUTPUT_H
#define BG_CLI_RUN_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/gate_args.h"
#include "measure/point.h"

/* One point: the gate's arguments with one worker count (or as given),
 * run `repeat` times after `warmup` warm-up invocations. */
typedef struct run_point {
	cli_args args; /* the gate's arguments for this point */
	char *word;    /* the --num-workers word put in (owned; args.v owned with it) */
	gate_args ga;
	bool parsed;
	char *cmdline;
	int count;       /* the sweep's count, -1 without a sweep */
	measure_point m; /* the judged invocations' numbers and the judgement */
	measure_tally t; /* what else they said, and the point's exit code */
	int warm;        /* warm-up invocations finished */
	/* Baseline and candidate apart (m.apart): the gate's first result had no
	 * baseline side and no stated ratio, so each candidate invocation (C) is
	 * followed by one of the user's arguments plus --baseline (B) on the same slot. */
	bool checked;   /* the first invocation's result was looked at */
	cli_args bargs; /* args + "--baseline" (bargs.v owned) */
	gate_args bga;
	bool bparsed;
	char *bcmdline;
} run_point;

/* How an invocation's line names it: "  nw 8  warmup 1/2 C  ...". */
typedef struct run_label {
	int count;        /* the sweep's count, -1: no sweep */
	bool warmup;      /* a warm-up, outside the point's numbers */
	bool alone;       /* the run's one invocation: the full line, no label */
	int i, n;         /* its place, 1-based, among n */
	const char *role; /* "C" or "B" when measured apart, else NULL */
} run_label;

/* The human line of one result line (its own judgement) on stdout, after
 * `lead`: verdict, slowCTA (baseline, ratio), wall, sumCTA, cos, device. */
void run_out_result(const gate_result *r, const char *lead, bool color);

/* The one line of an invocation on stdout: its label, the last result's
 * slowCTA and ratio (when it has them), the final verdict (`code` names one
 * that has none) and the result's problems. A lone invocation whose result
 * said its final verdict gets run_out_result's full line instead. */
void run_out_invocation(const run_label *l, const gate_result *last, gate_verdict final, int code,
			bool said, bool color);

/* "PASS_GATE", "BELOW_BAR", "NOISY", "MEASURED" or "FAILED". */
const char *run_point_label(const run_point *p);

/* The point's summary: a JSON "point" event under --json, else the human
 * lines on stdout (medians, spread, ratio, the decision, warnings). */
void run_out_point(const run_point *p, int repeat, const char *run_id);

/* The sweep's table on stdout: one row per count run. */
void run_out_sweep(const run_point *pts, size_t n);

/* The gate's last stdout lines, kept while they are not shown (no -v). */
#define RUN_TAIL_LINES 8
typedef struct run_tail {
	char *line[RUN_TAIL_LINES]; /* owned; a ring, `next` the oldest once full */
	size_t next, n, dropped;
} run_tail;
void run_tail_add(run_tail *t, const char *line, size_t len);
/* Says them on stderr, "boxgate: BOX: the gate's last N stdout lines (-v
 * shows every line):", each indented; nothing when there are none. */
void run_tail_show(const run_tail *t, const char *box);
void run_tail_release(run_tail *t);

/* --export-markdown FILE and --export-json FILE checked before anything
 * connects: each writable, neither the results file nor the other. Prints
 * the refusal naming FILE; returns an exit code (0: fine). */
int run_export_check(const char *cmd, const char *md, const char *json, const char *results);

/* Writes the point table of the judged points among pts[0..n) to each FILE
 * given (atomically); prints why not, naming FILE. Returns an exit code. */
int run_export(const char *cmd, const run_point *pts, size_t n, const char *run_id, const char *md,
	       const char *json);

#endif
