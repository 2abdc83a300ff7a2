/* validate's checks judged (measure/validate.h). */
#include "measure/validate.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "results/record.h"

/* The candidate's cos as the gate printed it: a gate that states INVALID
 * itself is not read further by gate/client/result.c, but its cos is the score. */
static bool candidate_cos(const gate_result *r, double *cos)
{
	if (!r || !r->parsed || r->source != GATE_FROM_GATE)
		return false;
	const cJSON *cand = cJSON_GetObjectItemCaseSensitive(r->json, "candidate");
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(cand, "cos");
	if (!cJSON_IsNumber(c) || !isfinite(c->valuedouble) ||
	    fabs(c->valuedouble) > 1 + GATE_COS_SLACK)
		return false;
	*cos = c->valuedouble;
	return true;
}

const char *measure_validate_short(gate_verdict g)
{
	return g == VERDICT_PASS_GATE ? "PASS"
	       : g == VERDICT_NONE    ? "FAILED"
				      : gate_verdict_name(g);
}

void measure_validate_judge(validate_check which, int code, const gate_outcome *out,
			    const gate_result *last, const char *why, validate_call *call)
{
	char got[120];
	memset(call, 0, sizeof(*call));
	/* what run would have exited with; a result of the candidate alone is a pass here */
	call->verdict = results_verdict_of(code, out);
	if (call->verdict == VERDICT_MEASURED)
		call->verdict = VERDICT_PASS_GATE;
	call->usable = candidate_cos(last, &call->cos);
	if (call->usable)
		snprintf(got, sizeof(got), "%s cos %.5f", measure_validate_short(call->verdict),
			 call->cos);
	else
		snprintf(got, sizeof(got), "%s without a usable result",
			 measure_validate_short(call->verdict));
	switch (which) {
	case VALIDATE_REF:
		call->holds = (call->verdict == VERDICT_PASS_GATE ||
			       call->verdict == VERDICT_BELOW_BAR) &&
			      call->usable && call->cos >= 0.99;
		if (!call->holds)
			snprintf(call->fail, sizeof(call->fail),
				 "the reference must pass with cos >= 0.99, got %s (%s)", got,
				 why ? why : "");
		break;
	case VALIDATE_STUB:
		call->holds = call->verdict == VERDICT_INVALID &&
			      (!call->usable || fabs(call->cos) <= VALIDATE_ZERO_COS);
		if (!call->holds)
			snprintf(call->fail, sizeof(call->fail),
				 "the stub must be rejected with score 0 (INVALID, cos 0), got %s",
				 got);
		break;
	default:
		call->holds = call->verdict == VERDICT_INVALID && call->usable && call->cos < 0.99;
		if (!call->holds)
			snprintf(call->fail, sizeof(call->fail),
				 "the drop-the-feature variant must be rejected by the cos gate "
				 "(INVALID, cos < 0.99), got %s",
				 got);
		break;
	}
}
