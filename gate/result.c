#include "gate/result.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"

static const char *const verdict_names[] = {"NONE", "PASS_GATE", "BELOW_BAR", "TIMEOUT_HANG", "INVALID"};

const char *gate_verdict_name(gate_verdict v)
{
	return verdict_names[v];
}

gate_verdict gate_verdict_from_name(const char *s)
{
	for (int v = VERDICT_PASS_GATE; v <= VERDICT_INVALID; v++)
		if (s && strcmp(s, verdict_names[v]) == 0)
			return (gate_verdict)v;
	return VERDICT_NONE;
}

int gate_verdict_exit_code(gate_verdict v)
{
	switch (v) {
	case VERDICT_PASS_GATE: return 0;
	case VERDICT_BELOW_BAR: return 1;
	case VERDICT_TIMEOUT_HANG: return 124;
	default: return 125;
	}
}

bool gate_is_result_line(const char *line, size_t len)
{
	size_t n = strlen(RESULT_PREFIX);
	return len >= n && memcmp(line, RESULT_PREFIX, n) == 0;
}

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

static bool number(gate_result *r, const cJSON *obj, const char *side, const char *key, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
		problem(r, "%s.%s is %s", side, key, v ? "not a finite number" : "missing");
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
	if (!cJSON_IsObject(o)) {
		problem(r, "%s is not an object", key);
		return false;
	}
	s->present = true;
	bool ok = number(r, o, key, "slowCTA_us", &s->slowCTA_us);
	ok &= number(r, o, key, "wall_us", &s->wall_us);
	ok &= number(r, o, key, "sumCTA_us", &s->sumCTA_us);
	ok &= number(r, o, key, "cos", &s->cos);
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "status");
	if (cJSON_IsString(st))
		snprintf(s->status, sizeof(s->status), "%s", st->valuestring);
	if (ok && (s->slowCTA_us <= 0 || s->wall_us <= 0 || s->sumCTA_us <= 0)) {
		problem(r, "%s has a non-positive span", key);
		ok = false;
	}
	if (ok && (s->slowCTA_us > s->wall_us * 1.0001 || s->slowCTA_us > s->sumCTA_us * 1.0001)) {
		problem(r, "%s: slowCTA exceeds wall or sumCTA (impossible spans)", key);
		ok = false;
	}
	return ok;
}

/* The verdict the numbers imply. */
static gate_verdict judge(gate_result *r, const gate_policy *p, bool cand_ok, bool base_ok)
{
	if (!cand_ok)
		return VERDICT_INVALID;
	if (r->cand.cos < p->min_cos) {
		problem(r, "candidate cos %.6f < %.2f", r->cand.cos, p->min_cos);
		return VERDICT_INVALID;
	}
	if (!r->base.present)
		return VERDICT_PASS_GATE; /* an in-tree-only run: the ratio is 1 by definition */
	if (!base_ok)
		return VERDICT_INVALID;
	if (r->base.cos < p->min_cos) {
		problem(r, "baseline cos %.6f < %.2f", r->base.cos, p->min_cos);
		return VERDICT_INVALID;
	}
	double ratio = r->base.slowCTA_us / r->cand.slowCTA_us;
	if (r->ratio > 0 && fabs(r->ratio - ratio) > 0.01 * ratio + 0.005) {
		problem(r, "stated slowCTA ratio %.3f but the spans give %.3f", r->ratio, ratio);
		r->disagrees = true;
	}
	if (ratio < p->bar) {
		problem(r, "slowCTA ratio %.3f below the bar %.2f", ratio, p->bar);
		return VERDICT_BELOW_BAR;
	}
	/* Anti-sloughing: a faster slowest CTA bought with more total CTA time has
	 * only spread the same work over more CTAs. */
	if (r->cand.slowCTA_us < r->base.slowCTA_us &&
	    r->cand.sumCTA_us > r->base.sumCTA_us * (1.0 + p->sum_tolerance)) {
		problem(r, "sumCTA rose %.1f%% (> %.0f%%) while slowCTA fell: work spread, not sped up",
			100.0 * (r->cand.sumCTA_us / r->base.sumCTA_us - 1.0), 100.0 * p->sum_tolerance);
		return VERDICT_BELOW_BAR;
	}
	return VERDICT_PASS_GATE;
}

void gate_result_parse(gate_result *r, const char *line, size_t len, const gate_policy *policy)
{
	static const gate_policy dflt = GATE_POLICY_DEFAULT;
	gate_policy p = policy ? *policy : dflt;
	memset(r, 0, sizeof(*r));
	r->raw = xstrndup(line, len);
	size_t skip = strlen(RESULT_PREFIX);
	const char *body = len >= skip ? r->raw + skip : r->raw;
	if (memchr(line, '\0', len)) {
		problem(r, "the line holds a NUL byte");
		r->verdict = VERDICT_INVALID;
		return;
	}
	r->json = cJSON_Parse(body);
	if (!cJSON_IsObject(r->json)) {
		problem(r, "not a JSON object");
		r->verdict = VERDICT_INVALID;
		return;
	}
	r->parsed = true;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->json, "verdict");
	if (!cJSON_IsString(v))
		problem(r, "verdict is missing");
	else if ((r->stated = gate_verdict_from_name(v->valuestring)) == VERDICT_NONE)
		problem(r, "unknown verdict '%.40s'", v->valuestring);
	const cJSON *bar = cJSON_GetObjectItemCaseSensitive(r->json, "bar");
	if (cJSON_IsNumber(bar) && bar->valuedouble > 0)
		p.bar = bar->valuedouble; /* the gate states the bar it judged against */
	const cJSON *ratio = cJSON_GetObjectItemCaseSensitive(r->json, "slowCTA_ratio_base_over_cand");
	if (cJSON_IsNumber(ratio))
		r->ratio = ratio->valuedouble;

	/* The agent's watchdog and exclusivity lines carry no spans. */
	if (r->stated == VERDICT_TIMEOUT_HANG || r->stated == VERDICT_INVALID) {
		const cJSON *why = cJSON_GetObjectItemCaseSensitive(r->json, "reason");
		if (cJSON_IsString(why))
			problem(r, "%s", why->valuestring);
		r->verdict = r->stated;
		return;
	}
	bool cand_ok = read_side(r, r->json, "candidate", &r->cand);
	if (!r->cand.present)
		problem(r, "candidate is missing");
	bool base_ok = read_side(r, r->json, "baseline_in_tree", &r->base);
	r->verdict = judge(r, &p, cand_ok, base_ok);
	if (r->stated != VERDICT_NONE && r->stated != r->verdict) {
		problem(r, "the gate says %s but the numbers say %s", gate_verdict_name(r->stated),
			gate_verdict_name(r->verdict));
		r->disagrees = true;
	}
	if (r->stated == VERDICT_NONE || r->disagrees)
		r->verdict = VERDICT_INVALID;
}

void gate_result_release(gate_result *r)
{
	free(r->raw);
	cJSON_Delete(r->json);
	memset(r, 0, sizeof(*r));
}
