/* The FAITHFUL_RESULT contract: parse one line, validate its fields, and
 * recompute the verdict from the numbers with boxgate's own policy.
 *
 * A line that does not parse is kept verbatim and judged INVALID; nothing
 * here can crash or stall on bad input. Parsing is strict: one JSON object
 * (RFC 8259) and nothing after it but blanks, strings in valid UTF-8 without
 * \u0000, no key twice in any object, finite numbers, no nesting deeper than
 * GATE_JSON_MAX_DEPTH, and field values that are physically possible. */
#ifndef BG_GATE_RESULT_H
#define BG_GATE_RESULT_H

#include <stdbool.h>
#include <stddef.h>

#include "gate/agent_proto.h"
#include "gate/client/json_scan.h"

#define RESULT_PREFIX AGENT_RESULT_PREFIX /* the agent prints result lines too */
/* A result line longer than this is INVALID (it is still passed on verbatim). */
#define GATE_RESULT_MAX_LEN (4 * 1024 * 1024)

/* Bounds of what a result may claim. */
/* A span (slowCTA, wall, sumCTA per worker) is a time a clock measured: at least a
 * nanosecond (no GPU or CPU timer resolves less) and at most an hour. */
#define GATE_SPAN_MIN_US 1e-3  /* one nanosecond */
#define GATE_SPAN_MAX_US 3.6e9 /* one hour */
#define GATE_COS_SLACK   1e-6  /* cos must lie in [-1 - slack, 1 + slack] (fp32 rounding) */
#define GATE_WORKERS_MAX 65536 /* num_workers, num_active */
#define GATE_BAR_MAX     1000.0
#define GATE_RATIO_MAX   1e6

typedef enum {
	VERDICT_NONE = 0,
	VERDICT_PASS_GATE,
	VERDICT_BELOW_BAR,
	VERDICT_TIMEOUT_HANG,
	VERDICT_INVALID,
	/* boxgate's own, never a gate's: the candidate measured alone (run
	 * --no-baseline), valid and correct, with no ratio to judge. */
	VERDICT_MEASURED
} gate_verdict;

typedef struct gate_policy {
	double min_cos; /* 0.99 */
	/* The user's slowCTA ratio base/cand to pass (run --bar), which wins over
	 * a "bar" the gate states; 0 when the user gave none: then the gate's
	 * bar, else GATE_DEFAULT_BAR. */
	double bar;
	double sum_tolerance; /* anti-sloughing: sumCTA may rise this fraction; 0.10 */
	/* The agent's --timeout plus --grace (0: not known). gate_run gives up on an
	 * agent whose end report has not come GATE_END_SLACK_S after that, counted
	 * from the slot's lock: a gate of the same user can SIGSTOP its agent. */
	int run_limit_s;
} gate_policy;

#define GATE_DEFAULT_BAR 1.0
#define GATE_POLICY_DEFAULT                                                                        \
	{                                                                                          \
		0.99, 0, 0.10, 0                                                                   \
	}

/* Who printed a line: the gate (anything on the channel), or the agent (a line
 * framed with the run's nonce, see gate/client/run.h). Only the agent may report
 * TIMEOUT_HANG or the agent's INVALID reasons (gpu_busy, no_gpu). */
typedef enum { GATE_FROM_GATE = 0, GATE_FROM_AGENT } gate_source;

typedef struct gate_side {
	bool present;
	double slowCTA_us, wall_us, sumCTA_us, cos;
	char status[32];
} gate_side;

typedef struct gate_result {
	char *raw;   /* the line as received, verbatim (owned) */
	bool parsed; /* the line passed the strict JSON check and parsed */
	gate_source source;
	gate_side cand, base;
	double ratio;    /* as stated, 0 when absent */
	double bar;      /* the bar boxgate judged against (0 when not reached) */
	double gate_bar; /* the "bar" the gate stated, 0 when absent */
	gate_verdict stated;
	gate_verdict verdict; /* boxgate's own */
	bool disagrees;       /* stated verdict or ratio differs from what the numbers say */
	bool forged;          /* a gate line claims a verdict only the agent may give */
	char problems[512]; /* why INVALID / BELOW_BAR / disagreement, "; "-joined, printable ASCII
			     */
	struct cJSON *json; /* the parsed object (owned), NULL when it did not parse */
} gate_result;

/* True when `line` (len bytes) is a result line. */
bool gate_is_result_line(const char *line, size_t len);

/* Parses and judges one result line printed by the gate; `r` is always filled
 * (never fails). `policy` NULL: GATE_POLICY_DEFAULT. */
void gate_result_parse(gate_result *r, const char *line, size_t len, const gate_policy *policy);
/* The same for a line of either source. */
void gate_result_parse_from(gate_result *r, const char *line, size_t len, const gate_policy *policy,
			    gate_source source);
void gate_result_release(gate_result *r);

/* True when a line of gate output reports a CUDA error ("CUDA error", a
 * cudaError / CUDA_ERROR_ name, an illegal memory access, ...). */
bool gate_line_cuda_error(const char *line, size_t len);

/* True when a gate that printed a result line stating `stated` and then exited
 * with `code` exited cleanly: 0, or the contract's own code for its stated
 * verdict (1 BELOW_BAR, 125 INVALID). */
bool gate_exit_clean(gate_verdict stated, int code);

const char *gate_verdict_name(gate_verdict v);
/* A verdict a gate may state (PASS_GATE ... INVALID); VERDICT_NONE otherwise. */
gate_verdict gate_verdict_from_name(const char *s);
/* boxgate's exit code for a verdict (README.md, "Exit codes"). */
int gate_verdict_exit_code(gate_verdict v);

#endif
