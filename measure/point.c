/* One point of repeated invocations and its judgement (measure/point.h). */
#include "measure/point.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/exit.h"
#include "results/stats.h"

double measure_cv_pct(const double *x, size_t n)
{
	return stats_cv(x, n) * 100.0;
}

bool measure_point_add(measure_point *p, gate_verdict v, const gate_result *last, bool baseline)
{
	bool judged = (v == VERDICT_PASS_GATE || v == VERDICT_BELOW_BAR || v == VERDICT_MEASURED) &&
		      last && last->cand.present;
	if (!judged)
		return false;
	if (baseline) {
		/* --baseline: the gate reports the in-tree kernel as its candidate. */
		if (p->n_b < MEASURE_REPEAT_MAX) {
			p->b_slow[p->n_b] = last->cand.slowCTA_us;
			p->b_sum[p->n_b] = last->cand.sumCTA_us;
			p->n_b++;
		}
		return true;
	}
	if (p->n_res >= MEASURE_REPEAT_MAX)
		return true;
	p->slow[p->n_res] = last->cand.slowCTA_us;
	p->wall[p->n_res] = last->cand.wall_us;
	p->sum[p->n_res] = last->cand.sumCTA_us;
	p->n_res++;
	p->n_pass += v == VERDICT_PASS_GATE;
	p->n_measured += v == VERDICT_MEASURED;
	if (last->base.present)
		p->base_sum[p->n_base++] = last->base.sumCTA_us;
	if (last->base.present && last->cand.slowCTA_us > 0) {
		p->ratio[p->n_ratio++] = last->base.slowCTA_us / last->cand.slowCTA_us;
		p->base_slow[p->n_base_slow++] = last->base.slowCTA_us;
	} else if (last->ratio > 0)
		p->ratio[p->n_ratio++] = last->ratio;
	if (last->bar > 0)
		p->bar = last->bar;
	return true;
}

size_t measure_point_pairs(const measure_point *p)
{
	return p->n_res < p->n_b ? p->n_res : p->n_b;
}

/* Apart: pair i's ratio is B_i.slowCTA / C_i.slowCTA; B's sumCTA is the
 * baseline's for anti-sloughing. */
static void pair_up(measure_point *p)
{
	size_t n = measure_point_pairs(p);
	p->n_ratio = 0;
	for (size_t i = 0; i < n; i++)
		if (p->slow[i] > 0)
			p->ratio[p->n_ratio++] = p->b_slow[i] / p->slow[i];
	memcpy(p->base_sum, p->b_sum, p->n_b * sizeof(*p->b_sum));
	p->n_base = p->n_b;
}

void measure_point_judge(measure_point *p, double bar)
{
	if (p->apart)
		pair_up(p);
	p->verdict = VERDICT_NONE;
	p->noisy = p->cv_warn = p->cv_warn_b = p->sloughed = p->single = p->decided = false;
	if (!p->n_res)
		return;
	bar = p->bar > 0 ? p->bar : bar > 0 ? bar : GATE_DEFAULT_BAR;
	p->bar_used = bar;
	/* Anti-sloughing on the medians, as on one result: a faster slowest CTA
	 * bought with more total CTA time is not a pass. */
	gate_policy policy = GATE_POLICY_DEFAULT;
	p->sloughed = p->n_base == p->n_res &&
		      stats_median(p->sum, p->n_res) >
			      stats_median(p->base_sum, p->n_base) * (1.0 + policy.sum_tolerance);
	p->cv_warn = p->n_res >= 2 && measure_cv_pct(p->slow, p->n_res) > p->max_cv;
	p->cv_warn_b = p->apart && p->n_b >= 2 && measure_cv_pct(p->b_slow, p->n_b) > p->max_cv;
	bool pass;
	if (p->n_measured == p->n_res) {
		/* The candidate alone: its numbers, nothing to judge them against. */
		p->verdict = VERDICT_MEASURED;
		p->noisy = p->strict_noise && p->cv_warn;
		return;
	}
	if (!p->n_ratio) {
		/* A gate that states no ratio and no baseline: every run must have passed. */
		pass = p->n_pass == p->n_res;
	} else if (p->n_ratio == 1) {
		p->single = true;
		pass = p->ratio[0] >= bar;
	} else {
		if (p->apart)
			measure_decide_pairs(p->b_slow, p->slow, measure_point_pairs(p), bar,
					     &p->dec);
		else if (p->n_base_slow == p->n_res)
			measure_decide_pairs(p->base_slow, p->slow, p->n_res, bar, &p->dec);
		else
			measure_decide_ratios(p->ratio, p->n_ratio, bar, &p->dec);
		p->decided = true;
		pass = p->dec.call == MEASURE_PASS;
		p->noisy = p->dec.call == MEASURE_NOISY && !p->sloughed;
	}
	p->verdict = pass && !p->sloughed ? VERDICT_PASS_GATE : VERDICT_BELOW_BAR;
	if (p->strict_noise && (p->cv_warn || p->cv_warn_b))
		p->noisy = true;
}

static void copy_str(char *dst, size_t n, const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (cJSON_IsString(v))
		snprintf(dst, n, "%s", v->valuestring);
}

static int int_of(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e9 ||
	    v->valuedouble != floor(v->valuedouble))
		return -1;
	return (int)v->valuedouble;
}

void measure_tally_note(measure_tally *t, measure_point *m, int code, gate_verdict v,
			const gate_result *last, bool baseline)
{
	t->runs++;
	if (!baseline && last && last->json) {
		t->device[0] = t->device_name[0] = '\0';
		copy_str(t->device, sizeof(t->device), last->json, "device");
		copy_str(t->device_name, sizeof(t->device_name), last->json, "device_name");
		t->cpus = int_of(last->json, "cpus");
		t->workers = int_of(last->json, "num_workers");
	}
	if (measure_point_add(m, v, last, baseline))
		return;
	t->bad = bg_exit_merge(t->bad, code ? code : BG_EXIT_FAIL);
	if (t->bad_verdict == VERDICT_NONE && (v == VERDICT_INVALID || v == VERDICT_TIMEOUT_HANG))
		t->bad_verdict = v;
}

void measure_tally_judge(measure_tally *t, measure_point *m, double bar)
{
	if (t->bad || !m->n_res) {
		m->verdict = t->bad_verdict;
		m->noisy = false;
		t->code = t->bad ? t->bad : BG_EXIT_FAIL;
	} else {
		measure_point_judge(m, bar);
		t->code = m->noisy ? BG_EXIT_FAIL : gate_verdict_exit_code(m->verdict);
	}
	if (t->record_failed)
		t->code = bg_exit_merge(t->code, BG_EXIT_FAIL);
	t->judged = true;
}
