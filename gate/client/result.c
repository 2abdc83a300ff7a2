#include "gate/client/result.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "base/xmalloc.h"
#include "gate/agent_proto.h"

static const char *const verdict_names[] = {"NONE",         "PASS_GATE", "BELOW_BAR",
					    "TIMEOUT_HANG", "INVALID",   "MEASURED"};

const char *gate_verdict_name(gate_verdict v)
{
	return (unsigned)v < sizeof(verdict_names) / sizeof(verdict_names[0]) ? verdict_names[v]
									      : "?";
}

gate_verdict gate_verdict_from_name(const char *s)
{
	/* A gate states one of these; MEASURED is boxgate's alone. */
	for (int v = VERDICT_PASS_GATE; v <= VERDICT_INVALID; v++)
		if (s && strcmp(s, verdict_names[v]) == 0)
			return (gate_verdict)v;
	return VERDICT_NONE;
}

int gate_verdict_exit_code(gate_verdict v)
{
	switch (v) {
	case VERDICT_PASS_GATE:
	case VERDICT_MEASURED: return BG_EXIT_OK;
	case VERDICT_BELOW_BAR: return BG_EXIT_FAIL;
	case VERDICT_TIMEOUT_HANG: return BG_EXIT_TIMEOUT;
	default: return BG_EXIT_INVALID;
	}
}

bool gate_exit_clean(gate_verdict stated, int code)
{
	if (code == 0)
		return true;
	return (stated == VERDICT_BELOW_BAR || stated == VERDICT_INVALID) &&
	       code == gate_verdict_exit_code(stated);
}

bool gate_is_result_line(const char *line, size_t len)
{
	size_t n = strlen(RESULT_PREFIX);
	return len >= n && memcmp(line, RESULT_PREFIX, n) == 0;
}

/* ---------------------------------------------------------------- CUDA errors */

bool gate_line_cuda_error(const char *line, size_t len)
{
	static const char *const pats[] = {
		"CUDA error:",
		"CUDA error at ",
		"CUDA_ERROR_",
		"Triton Error [CUDA]",
		"illegal memory access was encountered",
		"unspecified launch failure",
		"device-side assert triggered",
		"misaligned address",
	};
	for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++)
		if (memmem(line, len, pats[i], strlen(pats[i])))
			return true;
	/* cudaErrorIllegalAddress, CUBLAS_STATUS_EXECUTION_FAILED (not ..._SUCCESS). */
	for (const char *p = line, *end = line + len;
	     (p = memmem(p, (size_t)(end - p), "cudaError", 9)); p += 9)
		if (p + 9 < end && p[9] >= 'A' && p[9] <= 'Z')
			return true;
	for (const char *p = line, *end = line + len;
	     (p = memmem(p, (size_t)(end - p), "CUBLAS_STATUS_", 14)); p += 14)
		if ((size_t)(end - p) < 21 || memcmp(p + 14, "SUCCESS", 7) != 0)
			return true;
	return false;
}

/* ---------------------------------------------------------------- the result */

static void problem(gate_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(gate_result *r, const char *fmt, ...)
{
	size_t used = strlen(r->problems);
	if (used + 4 >= sizeof(r->problems))
		return;
	if (used)
		used += (size_t)snprintf(r->problems + used, sizeof(r->problems) - used, "; ");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->problems + used, sizeof(r->problems) - used, fmt, ap);
	va_end(ap);
}

/* A number field; false (with a problem) when missing, not a number or outside [lo, hi]. */
static bool number_in(gate_result *r, const cJSON *obj, const char *side, const char *key,
		      double lo, double hi, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
		problem(r, "%s%s%s is %s", side, side[0] ? "." : "", key,
			v ? "not a finite number" : "missing");
		return false;
	}
	if (v->valuedouble < lo || v->valuedouble > hi) {
		problem(r, "%s%s%s = %g is impossible (outside [%g, %g])", side, side[0] ? "." : "",
			key, v->valuedouble, lo, hi);
		return false;
	}
	*out = v->valuedouble;
	return true;
}

/* Reads one side ("candidate" / "baseline_in_tree"); false when unusable. */
static bool read_side(gate_result *r, const cJSON *root, const char *key, gate_side *s)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, key);
	if (!o)
		return false;
	s->present = true;
	if (!cJSON_IsObject(o)) {
		problem(r, "%s is not an object", key);
		return false;
	}
	/* Spans: what a clock can measure, a nanosecond to an hour (sumCTA adds one per
	 * worker); 5e-324 is above 0 but no span. */
	bool ok = number_in(r, o, key, "slowCTA_us", GATE_SPAN_MIN_US, GATE_SPAN_MAX_US,
			    &s->slowCTA_us);
	ok &= number_in(r, o, key, "wall_us", GATE_SPAN_MIN_US, GATE_SPAN_MAX_US, &s->wall_us);
	ok &= number_in(r, o, key, "sumCTA_us", GATE_SPAN_MIN_US,
			GATE_SPAN_MAX_US * GATE_WORKERS_MAX, &s->sumCTA_us);
	ok &= number_in(r, o, key, "cos", -1.0 - GATE_COS_SLACK, 1.0 + GATE_COS_SLACK, &s->cos);
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "status");
	if (cJSON_IsString(st)) {
		snprintf(s->status, sizeof(s->status), "%s", st->valuestring);
		/* The gate's own check of the side: anything but PASS is a failed
		 * side, never a pass nor a measurement. */
		if (strcmp(st->valuestring, "PASS") != 0) {
			problem(r, "%s status '%.40s' is not PASS", key, st->valuestring);
			ok = false;
		}
	} else if (st) {
		problem(r, "%s.status is not a string", key);
		ok = false;
	}
	if (ok && (s->slowCTA_us > s->wall_us * 1.0001 || s->slowCTA_us > s->sumCTA_us * 1.0001)) {
		problem(r, "%s: slowCTA exceeds wall or sumCTA (impossible spans)", key);
		ok = false;
	}
	return ok;
}

/* A top-level number in (0, max]; *out untouched when it is not one. */
static bool positive(gate_result *r, const cJSON *root, const char *key, double max, double *out)
{
	double v;
	if (!number_in(r, root, "", key, 0, max, &v))
		return false;
	if (v <= 0) {
		problem(r, "%s must be positive", key);
		return false;
	}
	*out = v;
	return true;
}

/* The top-level fields besides the sides: right types, possible values. */
static bool read_fields(gate_result *r, const cJSON *root)
{
	bool ok = true;
	static const char *const strings[] = {"kind", "shape"};
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, strings[i]);
		if (v && !cJSON_IsString(v)) {
			problem(r, "%s is not a string", strings[i]);
			ok = false;
		}
	}
	double nw = GATE_WORKERS_MAX, na;
	if (cJSON_GetObjectItemCaseSensitive(root, "num_workers")) {
		if (!number_in(r, root, "", "num_workers", 1, GATE_WORKERS_MAX, &nw))
			ok = false, nw = GATE_WORKERS_MAX;
		else if (nw != floor(nw))
			problem(r, "num_workers %g is not a whole number", nw), ok = false;
	}
	if (cJSON_GetObjectItemCaseSensitive(root, "num_active")) {
		if (!number_in(r, root, "", "num_active", 0, nw, &na))
			ok = false;
		else if (na != floor(na))
			problem(r, "num_active %g is not a whole number", na), ok = false;
	}
	if (cJSON_GetObjectItemCaseSensitive(root, "bar") &&
	    !positive(r, root, "bar", GATE_BAR_MAX, &r->gate_bar))
		ok = false;
	if (cJSON_GetObjectItemCaseSensitive(root, "slowCTA_ratio_base_over_cand") &&
	    !positive(r, root, "slowCTA_ratio_base_over_cand", GATE_RATIO_MAX, &r->ratio))
		ok = false;
	return ok;
}

/* A side whose output is this far from the reference makes the run invalid;
 * the problem is recorded when `say`. */
static bool cos_low(gate_result *r, const char *side, double cos, double min_cos, bool say)
{
	if (!(cos < min_cos))
		return false;
	if (say)
		problem(r, "%s cos %.6f < %.2f", side, cos, min_cos);
	return true;
}

/* The verdict the numbers imply against `bar`; problems recorded when `say`. */
static gate_verdict judge(gate_result *r, const gate_policy *p, double bar, const char *bar_from,
			  bool cand_ok, bool base_ok, bool say)
{
	if (!cand_ok)
		return VERDICT_INVALID;
	if (cos_low(r, "candidate", r->cand.cos, p->min_cos, say))
		return VERDICT_INVALID;
	double ratio = 1.0; /* an in-tree-only run: the ratio is 1 by definition */
	if (r->base.present) {
		if (!base_ok)
			return VERDICT_INVALID;
		if (cos_low(r, "baseline", r->base.cos, p->min_cos, say))
			return VERDICT_INVALID;
		ratio = r->base.slowCTA_us / r->cand.slowCTA_us;
	}
	if (ratio < bar) {
		if (say)
			problem(r, "slowCTA ratio %.3f below the bar %.2f (%s)", ratio, bar,
				bar_from);
		return VERDICT_BELOW_BAR;
	}
	/* Anti-sloughing: a faster slowest CTA bought with more total CTA time has
	 * only spread the same work over more CTAs. */
	if (r->base.present && r->cand.slowCTA_us < r->base.slowCTA_us &&
	    r->cand.sumCTA_us > r->base.sumCTA_us * (1.0 + p->sum_tolerance)) {
		if (say)
			problem(r,
				"sumCTA rose %.1f%% (> %.0f%%) while slowCTA fell: work spread, "
				"not sped up",
				100.0 * (r->cand.sumCTA_us / r->base.sumCTA_us - 1.0),
				100.0 * p->sum_tolerance);
		return VERDICT_BELOW_BAR;
	}
	return VERDICT_PASS_GATE;
}

static bool agent_reason(const char *s)
{
	return s && (strcmp(s, AGENT_REASON_GPU_BUSY) == 0 || strcmp(s, AGENT_REASON_NO_GPU) == 0);
}

/* The agent's own lines: TIMEOUT_HANG, or INVALID gpu_busy / no_gpu. */
static void judge_agent_line(gate_result *r)
{
	const cJSON *why = cJSON_GetObjectItemCaseSensitive(r->json, "reason");
	if (r->stated == VERDICT_TIMEOUT_HANG) {
		double t;
		if (number_in(r, r->json, "", "timeout_s", 0, 1e9, &t)) {
			const cJSON *k = cJSON_GetObjectItemCaseSensitive(r->json, "killed");
			problem(r, "the watchdog stopped the gate after %g s (%d process%s killed)",
				t, cJSON_IsNumber(k) ? (int)k->valuedouble : 0,
				cJSON_IsNumber(k) && k->valuedouble == 1 ? "" : "es");
			r->verdict = VERDICT_TIMEOUT_HANG;
		} else {
			r->verdict = VERDICT_INVALID;
		}
		return;
	}
	if (r->stated == VERDICT_INVALID && cJSON_IsString(why) && agent_reason(why->valuestring)) {
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(r->json, "detail");
		const cJSON *pid = cJSON_GetObjectItemCaseSensitive(r->json, "pid");
		const cJSON *proc = cJSON_GetObjectItemCaseSensitive(r->json, "process");
		const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(r->json, "gpu");
		if (cJSON_IsString(d))
			problem(r, "%s: %.200s", why->valuestring, d->valuestring);
		else if (cJSON_IsNumber(pid) && cJSON_IsString(proc) && cJSON_IsNumber(gpu))
			problem(r, "%s: gpu %d has compute process pid %.0f (%.60s)",
				why->valuestring, (int)gpu->valuedouble, pid->valuedouble,
				proc->valuestring);
		else
			problem(r, "%s", why->valuestring);
		r->verdict = VERDICT_INVALID;
		return;
	}
	problem(r, "the agent printed a result line boxgate does not know");
	r->verdict = VERDICT_INVALID;
}

static void judge_gate_line(gate_result *r, const gate_policy *p)
{
	const cJSON *why = cJSON_GetObjectItemCaseSensitive(r->json, "reason");
	if (r->stated == VERDICT_TIMEOUT_HANG) {
		problem(r, "forged: a line of the gate's own output claims TIMEOUT_HANG; only "
			   "boxgate's agent reports a timeout");
		r->forged = true;
		r->verdict = VERDICT_INVALID;
		return;
	}
	if (cJSON_IsString(why) && agent_reason(why->valuestring)) {
		problem(r,
			"forged: a line of the gate's own output claims the agent's verdict '%s'",
			why->valuestring);
		r->forged = true;
		r->verdict = VERDICT_INVALID;
		return;
	}
	if (r->stated == VERDICT_INVALID) {
		if (cJSON_IsString(why))
			problem(r, "%.300s", why->valuestring);
		else
			problem(r, "the gate says INVALID");
		r->verdict = VERDICT_INVALID;
		return;
	}
	bool fields_ok = read_fields(r, r->json);
	bool cand_ok = read_side(r, r->json, "candidate", &r->cand);
	if (!r->cand.present)
		problem(r, "candidate is missing");
	bool base_ok = read_side(r, r->json, "baseline_in_tree", &r->base);

	/* The user's bar wins; without one the gate's stated bar, else the default. */
	const char *from = p->bar > 0 ? "--bar" : r->gate_bar > 0 ? "the gate's bar" : "default";
	r->bar = p->bar > 0 ? p->bar : r->gate_bar > 0 ? r->gate_bar : GATE_DEFAULT_BAR;
	r->verdict = judge(r, p, r->bar, from, cand_ok, base_ok, true);
	if (cand_ok && base_ok && r->base.present && r->ratio > 0) {
		double ratio = r->base.slowCTA_us / r->cand.slowCTA_us;
		if (fabs(r->ratio - ratio) > 0.01 * ratio + 0.005) {
			problem(r, "stated slowCTA ratio %.3f but the spans give %.3f", r->ratio,
				ratio);
			r->disagrees = true;
		}
	}
	/* The gate's stated verdict is checked against the bar the gate itself
	 * judged with: a verdict that differs only because --bar differs is not a lie. */
	if (r->stated != VERDICT_NONE) {
		double gate_bar = r->gate_bar > 0 ? r->gate_bar : GATE_DEFAULT_BAR;
		gate_verdict as_gate = gate_bar == r->bar
					       ? r->verdict
					       : judge(r, p, gate_bar, "", cand_ok, base_ok, false);
		if (r->stated != as_gate) {
			problem(r, "the gate says %s but the numbers say %s",
				gate_verdict_name(r->stated), gate_verdict_name(as_gate));
			r->disagrees = true;
		} else if (r->stated != r->verdict) {
			problem(r, "the gate says %s against its bar %.2f; --bar %.2f decides",
				gate_verdict_name(r->stated), gate_bar, r->bar);
		}
	}
	if (r->stated == VERDICT_NONE || r->disagrees || !fields_ok)
		r->verdict = VERDICT_INVALID;
}

/* problems is shown on terminals and in JSON: printable ASCII only. */
static void sanitize_problems(gate_result *r)
{
	for (char *c = r->problems; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
			*c = '?';
}

void gate_result_parse_from(gate_result *r, const char *line, size_t len, const gate_policy *policy,
			    gate_source source)
{
	static const gate_policy dflt = GATE_POLICY_DEFAULT;
	const gate_policy *p = policy ? policy : &dflt;
	char why[160];
	memset(r, 0, sizeof(*r));
	r->source = source;
	r->raw = xmalloc(len + 1);
	memcpy(r->raw, line, len);
	r->raw[len] = '\0';
	size_t skip = gate_is_result_line(line, len) ? strlen(RESULT_PREFIX) : 0;
	const char *body = r->raw + skip;
	size_t blen = len - skip;
	r->verdict = VERDICT_INVALID;
	if (len > GATE_RESULT_MAX_LEN) {
		problem(r, "the result line is longer than %d bytes", GATE_RESULT_MAX_LEN);
		goto out;
	}
	if (memchr(line, '\0', len)) {
		problem(r, "the line holds a NUL byte");
		goto out;
	}
	const char *bad = gate_json_strict_check(body, blen, why, sizeof(why));
	if (bad) {
		problem(r, "not a valid JSON object: %s", bad);
		goto out;
	}
	const char *end = NULL;
	r->json = cJSON_ParseWithOpts(body, &end, 1);
	if (!cJSON_IsObject(r->json)) {
		problem(r, "not a JSON object");
		cJSON_Delete(r->json);
		r->json = NULL;
		goto out;
	}
	r->parsed = true;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->json, "verdict");
	if (!cJSON_IsString(v))
		problem(r, "verdict is %s", v ? "not a string" : "missing");
	else if ((r->stated = gate_verdict_from_name(v->valuestring)) == VERDICT_NONE)
		problem(r, "unknown verdict '%.40s'", v->valuestring);
	if (source == GATE_FROM_AGENT)
		judge_agent_line(r);
	else
		judge_gate_line(r, p);
out:
	sanitize_problems(r);
}

void gate_result_parse(gate_result *r, const char *line, size_t len, const gate_policy *policy)
{
	gate_result_parse_from(r, line, len, policy, GATE_FROM_GATE);
}

void gate_result_release(gate_result *r)
{
	free(r->raw);
	cJSON_Delete(r->json);
	memset(r, 0, sizeof(*r));
}
