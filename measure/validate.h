/* boxgate validate's three checks of a gate, each judged on one invocation:
 * the reference passes with cos >= 0.99, the stub is rejected with a score of
 * 0 (INVALID, cos 0), the drop-the-feature variant is rejected by the cos
 * gate (INVALID, cos < 0.99). */
#ifndef BG_MEASURE_VALIDATE_H
#define BG_MEASURE_VALIDATE_H

#include <stdbool.h>

#include "gate/client/result.h"
#include "gate/client/run.h"

/* The candidate's cos of the stub within this of 0 is a score of 0. */
#define VALIDATE_ZERO_COS 1e-6

typedef enum { VALIDATE_REF, VALIDATE_STUB, VALIDATE_DROP, VALIDATE_N } validate_check;

typedef struct validate_call {
	gate_verdict verdict; /* boxgate's verdict of the invocation, VERDICT_NONE if none */
	bool usable;          /* a parsed result with a candidate side */
	double cos;           /* that side's cos, when usable */
	bool holds;           /* the check holds */
	char fail[400];       /* why it does not ("" when it holds) */
} validate_call;

/* A verdict as validate's lines say it: PASS, FAILED (none), else its name. */
const char *measure_validate_short(gate_verdict g);

/* Judges check `which` on one invocation: its exit code (gate_outcome_judge's)
 * and outcome, its last result line (may be unparsed), and why it ended
 * (`why`, said when the reference fails). */
void measure_validate_judge(validate_check which, int code, const gate_outcome *out,
			    const gate_result *last, const char *why, validate_call *call);

#endif
