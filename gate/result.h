/* The FAITHFUL_RESULT contract: parse one line, validate its fields, and
 * recompute the verdict from the numbers with boxgate's own policy.
 *
 * A line that does not parse is kept verbatim and judged INVALID; nothing
 * here can crash or stall on bad input. */
#ifndef BG_GATE_RESULT_H
#define BG_GATE_RESULT_H

#include <stdbool.h>
#include <stddef.h>

#define RESULT_PREFIX "FAITHFUL_RESULT "

typedef enum {
	VERDICT_NONE = 0,
	VERDICT_PASS_GATE,
	VERDICT_BELOW_BAR,
	VERDICT_TIMEOUT_HANG,
	VERDICT_INVALID
} gate_verdict;

typedef struct gate_policy {
	double min_cos;       /* 0.99 */
	double bar;           /* slowCTA ratio base/cand to pass; 1.0 */
	double sum_tolerance; /* anti-sloughing: sumCTA may rise this fraction; 0.10 */
} gate_policy;

#define GATE_POLICY_DEFAULT { 0.99, 1.0, 0.10 }

typedef struct gate_side {
	bool present;
	double slowCTA_us, wall_us, sumCTA_us, cos;
	char status[32];
} gate_side;

typedef struct gate_result {
	char *raw;        /* the line as received, verbatim (owned) */
	bool parsed;      /* the JSON object parsed */
	gate_side cand, base;
	double ratio;     /* as stated, 0 when absent */
	gate_verdict stated;
	gate_verdict verdict; /* boxgate's own */
	bool disagrees;   /* stated verdict or ratio differs from what the numbers say */
	char problems[512]; /* why INVALID / BELOW_BAR / disagreement, "; "-joined */
	struct cJSON *json; /* the parsed object (owned), NULL when it did not parse */
} gate_result;

/* True when `line` (len bytes) is a result line. */
bool gate_is_result_line(const char *line, size_t len);

/* Parses and judges one result line; `r` is always filled (never fails). */
void gate_result_parse(gate_result *r, const char *line, size_t len, const gate_policy *policy);
void gate_result_release(gate_result *r);

const char *gate_verdict_name(gate_verdict v);
gate_verdict gate_verdict_from_name(const char *s);
/* boxgate's exit code for a verdict (DESIGN.md). */
int gate_verdict_exit_code(gate_verdict v);

#endif
