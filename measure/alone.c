/* The candidate alone: when a result is MEASURED (measure/alone.h). */
#include "measure/alone.h"

#include <cjson/cJSON.h>
#include <stdio.h>

#include "base/exit.h"

bool measure_only_candidate(const gate_result *r)
{
	return r->raw && r->json && r->source == GATE_FROM_GATE && r->cand.present &&
	       !r->base.present && !cJSON_GetObjectItemCaseSensitive(r->json, "baseline_in_tree") &&
	       !cJSON_GetObjectItemCaseSensitive(r->json, "slowCTA_ratio_base_over_cand");
}

void measure_alone_line(gate_result *r)
{
	if (!measure_only_candidate(r) ||
	    (r->verdict != VERDICT_PASS_GATE && r->verdict != VERDICT_BELOW_BAR))
		return;
	if (r->stated == VERDICT_PASS_GATE) {
		r->verdict = VERDICT_MEASURED;
		r->problems[0] = '\0'; /* a bar that does not apply */
	} else if (r->verdict == VERDICT_PASS_GATE) {
		/* the gate's own failing word stands: no bar applies to undo it */
		r->verdict = VERDICT_BELOW_BAR;
		snprintf(r->problems, sizeof(r->problems),
			 "the gate says %s of the candidate alone", gate_verdict_name(r->stated));
	}
}

int measure_alone_outcome(gate_result *last, gate_outcome *out, int code, bool said, char *why,
			  size_t why_n)
{
	/* a verdict from the last result line, with a clean end: nothing else */
	if (!last || !last->raw || !said ||
	    !(code == BG_EXIT_OK || (code == BG_EXIT_FAIL && out->verdict == VERDICT_BELOW_BAR)))
		return code;
	measure_alone_line(last);
	if (last->verdict == VERDICT_MEASURED) {
		out->verdict = VERDICT_MEASURED;
		out->problems[0] = '\0';
		snprintf(why, why_n, "MEASURED");
		return BG_EXIT_OK;
	}
	if (last->verdict == VERDICT_BELOW_BAR && code == BG_EXIT_OK) {
		out->verdict = VERDICT_BELOW_BAR;
		snprintf(out->problems, sizeof(out->problems), "%s", last->problems);
		snprintf(why, why_n, "BELOW_BAR: %s", last->problems);
		return BG_EXIT_FAIL;
	}
	return code;
}
