/* The candidate alone (run --no-baseline, a box's no_baseline = yes, a
 * campaign with no baseline candidate): a gate's result that reports only the
 * candidate, valid, correct and called PASS_GATE by the gate, is the
 * candidate's timings, verdict MEASURED; nothing else becomes MEASURED. */
#ifndef BG_MEASURE_ALONE_H
#define BG_MEASURE_ALONE_H

#include <stdbool.h>
#include <stddef.h>

#include "gate/client/result.h"
#include "gate/client/run.h"

/* True when a gate's result reports only the candidate: a parsed line from
 * the gate with a candidate side, no baseline side and no stated ratio. */
bool measure_only_candidate(const gate_result *r);

/* Judges one result line of the candidate alone: PASS_GATE or BELOW_BAR
 * (valid, cos good, status PASS) that the gate itself calls PASS_GATE becomes
 * MEASURED (no bar applies); one the gate calls BELOW_BAR stays BELOW_BAR
 * whatever the user's bar; anything else keeps its verdict. */
void measure_alone_line(gate_result *r);

/* The same for an invocation: its last line `last` (NULL: none), its outcome
 * and exit `code` as gate_outcome_judge gave them (`said`: from a result) are
 * turned to MEASURED (code 0, why "MEASURED") or to BELOW_BAR (code 1, why
 * saying so) as the rule says. Returns the code. */
int measure_alone_outcome(gate_result *last, gate_outcome *out, int code, bool said, char *why,
			  size_t why_n);

#endif
