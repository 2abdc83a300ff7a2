/* campaign/points: a campaign's records gathered into points and cells,
 * their medians, ratio sources, verdict rules, best cells and winner flips,
 * on results files written here line by line. Expected values worked out by
 * hand (medians of three, CVs with Python's statistics module). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <math.h>

#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "campaign/points.h"
#include "results/select.h"
#include "campaign/report.h"
#include "campaign/svg.h"
#include "tests/xml_check.h"
#include "campaign/spec.h"
#include "unit.h"

UNIT_SCRATCH_GROUP("campaign-points")

static void assert_near(double got, double want, double tol)
{
	if (!(fabs(got - want) <= tol))
		fail_msg("got %.12g, wanted %.12g (+-%g)", got, want, tol);
}

/* The settings every record of a test carries. */
static const char *settings = "\"bar\":1.2,\"max_cv\":2.0,\"sum_tolerance\":10.0,\"jobs\":12";
static const char *const settings_plain =
	"\"bar\":1.2,\"max_cv\":2.0,\"sum_tolerance\":10.0,\"jobs\":12";

static int seq;

/* One campaign record as a line. `result_extra` is added to the result
 * object (a gate ratio, a baseline side); a NULL verdict is null. */
static void rec(strbuf *f, const char *camp, const char *shape, int nw, const char *cand,
		const char *verdict, double slow, double sum, const char *result_extra, bool final,
		const char *job)
{
	char jobkey[128];
	if (!job) {
		snprintf(jobkey, sizeof(jobkey), "%s/%s/%d/%s/%d", camp, shape, nw, cand, ++seq);
		job = jobkey;
	}
	strbuf_addf(f, "{\"schema\":1,\"box\":\"b%d\",\"gpus\":\"0\",\"gpu_name\":\"NVIDIA H200\",",
		    seq % 2);
	strbuf_addf(f, "\"start\":\"2026-01-01T00:00:%02d.000Z\",", seq % 60);
	if (verdict)
		strbuf_addf(f, "\"verdict\":\"%s\",", verdict);
	else
		strbuf_addstr(f, "\"verdict\":null,");
	if (slow > 0)
		strbuf_addf(f,
			    "\"result\":{\"candidate\":{\"slowCTA_us\":%.17g,\"wall_us\":%.17g,"
			    "\"sumCTA_us\":%.17g,\"cos\":0.9999}%s%s},",
			    slow, slow * 2, sum, result_extra ? "," : "",
			    result_extra ? result_extra : "");
	else
		strbuf_addstr(f, "\"result\":null,");
	strbuf_addf(f,
		    "\"campaign\":{\"name\":\"%s\",\"pool\":\"p\",\"gate_args\":[\"--kind\",\"k\"],"
		    "\"job\":\"%s\",\"shape\":\"%s\",",
		    camp, job, shape);
	if (nw >= 0)
		strbuf_addf(f, "\"num_workers\":%d,", nw);
	else
		strbuf_addstr(f, "\"num_workers\":null,");
	strbuf_addf(f, "\"candidate\":\"%s\",\"final\":%s,%s}}\n", cand, final ? "true" : "false",
		    settings);
}

/* Three samples of a cell, all judged `verdict`. */
static void three(strbuf *f, const char *shape, int nw, const char *cand, double a, double b,
		  double c, double sum)
{
	const char *v = strcmp(cand, "baseline") == 0 ? "PASS_GATE" : "BELOW_BAR";
	rec(f, "c1", shape, nw, cand, v, a, sum, NULL, true, NULL);
	rec(f, "c1", shape, nw, cand, v, b, sum, NULL, true, NULL);
	rec(f, "c1", shape, nw, cand, v, c, sum, NULL, true, NULL);
}

static const campaign_cell *cell_of(const campaign_points *p, const char *shape, long nw,
				    const char *cand)
{
	for (size_t i = 0; i < p->n_points; i++) {
		const campaign_point *pt = &p->points[i];
		if (strcmp(pt->shape, shape) != 0 || (nw >= 0 && pt->num_workers != nw) ||
		    (nw < 0 && pt->has_num_workers))
			continue;
		for (size_t k = 0; k < pt->n_cells; k++)
			if (strcmp(pt->cells[k].candidate, cand) == 0)
				return &pt->cells[k];
	}
	fail_msg("no cell %s %ld %s", shape, nw, cand);
	return NULL;
}

static const char *best_of(const campaign_points *p, const char *shape, long nw)
{
	for (size_t i = 0; i < p->n_points; i++)
		if (strcmp(p->points[i].shape, shape) == 0 && p->points[i].num_workers == nw) {
			const campaign_cell *c = campaign_point_best(&p->points[i]);
			return c ? c->candidate : "none";
		}
	return "?";
}

static void read_ok(const strbuf *f, const char *name, campaign_points *p)
{
	char *path = unit_file("r", ".jsonl", f->buf);
	bg_err err = {0};
	int rc = campaign_points_read(path, name, p, &err);
	if (rc)
		fail_msg("campaign_points_read: %d %s", rc, err.msg);
	free(path);
}

static void medians_and_jobs_ratio(void **state)
{
	(void)state;
	strbuf f = STRBUF_INIT;
	/* the candidate first in the file: the baseline still comes first in the point */
	three(&f, "s", 64, "cand", 8.0, 8.04, 7.96, 100);
	three(&f, "s", 64, "baseline", 10.0, 10.02, 9.98, 100);
	three(&f, "s", 8, "baseline", 5.0, 5.0, 5.0, 100);
	three(&f, "s", 8, "cand", 4.5, 4.5, 4.5, 100);
	campaign_points p;
	read_ok(&f, NULL, &p);
	assert_string_equal(p.name, "c1");
	assert_int_equal(p.n_points, 2);
	/* num_workers ascending whatever the file order */
	assert_int_equal(p.points[0].num_workers, 8);
	assert_int_equal(p.points[1].num_workers, 64);
	assert_string_equal(p.points[1].cells[0].candidate, "baseline");
	const campaign_cell *b = cell_of(&p, "s", 64, "baseline"),
			    *c = cell_of(&p, "s", 64, "cand");
	assert_near(b->slow_median, 10.0, 1e-12);
	assert_near(b->slow_min, 9.98, 1e-12);
	assert_near(b->slow_max, 10.02, 1e-12);
	assert_near(b->slow_cv, 0.2, 1e-9); /* stdev 0.02 over mean 10 */
	assert_near(c->slow_median, 8.0, 1e-12);
	assert_near(c->wall_median, 16.0, 1e-12);
	assert_near(c->cos_min, 0.9999, 1e-12);
	assert_near(c->ratio, 1.25, 1e-12);
	assert_int_equal(c->ratio_source, CAMPAIGN_RATIO_JOBS);
	assert_int_equal(c->verdict, CAMPAIGN_PASS_GATE);
	assert_int_equal(b->verdict, CAMPAIGN_BASELINE);
	assert_int_equal(c->n, 3);
	/* ratio 5/4.5 = 1.111 is below the bar 1.2 */
	assert_int_equal(cell_of(&p, "s", 8, "cand")->verdict, CAMPAIGN_BELOW_BAR);
	assert_string_equal(best_of(&p, "s", 8), "cand"); /* BELOW_BAR but the fastest */
	assert_int_equal(p.jobs_recorded, 12);
	assert_int_equal(p.jobs_expected, 12);
	assert_int_equal(p.boxes.n, 2);
	campaign_points_release(&p);
	strbuf_release(&f);
}

static void in_gate_ratio(void **state)
{
	(void)state;
	strbuf f = STRBUF_INIT;
	/* no baseline jobs: the gate's own ratio, else its in-tree side */
	rec(&f, "c1", "s", 8, "cand", "PASS_GATE", 4, 10, "\"slowCTA_ratio_base_over_cand\":1.5",
	    true, NULL);
	rec(&f, "c1", "s", 8, "cand", "PASS_GATE", 4, 10, "\"slowCTA_ratio_base_over_cand\":1.3",
	    true, NULL);
	rec(&f, "c1", "s", 8, "cand", "PASS_GATE", 4, 10,
	    "\"baseline_in_tree\":{\"slowCTA_us\":5.6,\"sumCTA_us\":10}", true, NULL);
	/* a cell without any ratio at all */
	rec(&f, "c1", "s", 16, "cand", "BELOW_BAR", 4, 10, NULL, true, NULL);
	campaign_points p;
	read_ok(&f, "c1", &p);
	const campaign_cell *c = cell_of(&p, "s", 8, "cand");
	assert_int_equal(c->ratio_source, CAMPAIGN_RATIO_IN_GATE);
	assert_near(c->ratio, 1.4, 1e-12); /* median of 1.5, 1.3, 5.6/4 */
	/* three ratios, as pairs, have no interval at 90% (five needed): NOISY,
	 * leaning above the bar, never a claimed PASS_GATE */
	assert_int_equal(c->verdict, CAMPAIGN_NOISY);
	assert_true(c->decided && !c->dec.interval);
	assert_int_equal(c->dec.lean, 1);
	const campaign_cell *d = cell_of(&p, "s", 16, "cand");
	assert_int_equal(d->ratio_source, CAMPAIGN_RATIO_NONE);
	assert_true(isnan(d->ratio));
	assert_int_equal(d->verdict, CAMPAIGN_BELOW_BAR);
	campaign_points_release(&p);
	strbuf_release(&f);
}

/* A MEASURED record (run --no-baseline: the candidate alone) is a sample of
 * the candidate, not a failure; with no ratio it is no pass either. */
static void measured_records(void **state)
{
	(void)state;
	strbuf f = STRBUF_INIT;
	for (int i = 0; i < 3; i++) {
		rec(&f, "c1", "s", 8, "baseline", "PASS_GATE", 10, 100, NULL, true, NULL);
		rec(&f, "c1", "s", 8, "cand", "MEASURED", 5, 100, NULL, true, NULL);
		rec(&f, "c1", "s", 16, "alone", "MEASURED", 5, 100, NULL, true, NULL);
	}
	campaign_points p;
	read_ok(&f, "c1", &p);
	const campaign_cell *c = cell_of(&p, "s", 8, "cand");
	assert_int_equal(c->n, 3);
	assert_int_equal(c->n_bad, 0);
	assert_int_equal(c->ratio_source, CAMPAIGN_RATIO_JOBS);
	assert_near(c->ratio, 2, 1e-12);
	const campaign_cell *a = cell_of(&p, "s", 16, "alone");
	assert_int_equal(a->n, 3);
	assert_int_equal(a->n_bad, 0);
	assert_int_equal(a->ratio_source, CAMPAIGN_RATIO_NONE);
	assert_int_equal(a->verdict, CAMPAIGN_MEASURED);
	assert_string_equal(campaign_verdict_name(a->verdict), "MEASURED");
	/* nothing to compare: no cell of that point is its best */
	for (size_t i = 0; i < p.n_points; i++)
		if (p.points[i].num_workers == 16)
			assert_int_equal(p.points[i].best, -1);
	/* against the baseline's jobs a MEASURED candidate is judged as any other */
	assert_int_equal(c->verdict, CAMPAIGN_PASS_GATE);
	campaign_points_release(&p);
	/* a cell that mixes MEASURED with runs judged against no ratio is not MEASURED */
	strbuf_reset(&f);
	rec(&f, "c1", "s", 8, "mix", "MEASURED", 5, 100, NULL, true, NULL);
	rec(&f, "c1", "s", 8, "mix", "PASS_GATE", 5, 100, NULL, true, NULL);
	read_ok(&f, "c1", &p);
	assert_int_equal(cell_of(&p, "s", 8, "mix")->verdict, CAMPAIGN_BELOW_BAR);
	campaign_points_release(&p);
	strbuf_release(&f);
}

static void verdict_rules(void **state)
{
	(void)state;
	strbuf f = STRBUF_INIT;
	three(&f, "s", 8, "baseline", 10, 10, 10, 100);
	/* NOISY: 9, 10, 11 has CV 10% > 2% */
	three(&f, "s", 8, "noisy", 9, 10, 11, 100);
	/* sloughed: fast, but sumCTA 111 > 100 x 1.1 */
	three(&f, "s", 8, "slough", 5, 5, 5, 111);
	/* within the tolerance: 110 is not above 110 */
	three(&f, "s", 8, "fair", 6, 6, 6, 110);
	/* a hang and an INVALID: the hang dominates */
	three(&f, "s", 8, "hang", 4, 4, 4, 100);
	rec(&f, "c1", "s", 8, "hang", "INVALID", 0, 0, NULL, true, NULL);
	rec(&f, "c1", "s", 8, "hang", "TIMEOUT_HANG", 0, 0, NULL, true, NULL);
	/* one INVALID among good runs: not promotable */
	three(&f, "s", 8, "once", 3, 3, 3, 100);
	rec(&f, "c1", "s", 8, "once", "INVALID", 0, 0, NULL, true, NULL);
	/* no verdict at all */
	rec(&f, "c1", "s", 8, "nov", NULL, 3, 100, NULL, true, NULL);
	campaign_points p;
	read_ok(&f, NULL, &p);
	/* CV 10% > 2% is a warning: 9-11 against 10 is measurably under the bar 1.2 */
	assert_int_equal(cell_of(&p, "s", 8, "noisy")->verdict, CAMPAIGN_BELOW_BAR);
	assert_true(cell_of(&p, "s", 8, "noisy")->cv_warn);
	assert_near(cell_of(&p, "s", 8, "noisy")->slow_cv, 10, 1e-9);
	const campaign_cell *s = cell_of(&p, "s", 8, "slough");
	assert_int_equal(s->verdict, CAMPAIGN_BELOW_BAR);
	assert_true(s->sloughed);
	assert_near(s->ratio, 2, 1e-12);
	assert_int_equal(cell_of(&p, "s", 8, "fair")->verdict, CAMPAIGN_PASS_GATE);
	const campaign_cell *h = cell_of(&p, "s", 8, "hang");
	assert_int_equal(h->verdict, CAMPAIGN_TIMEOUT_HANG);
	assert_int_equal(h->n_bad, 2);
	assert_string_equal(h->worst_bad, "TIMEOUT_HANG");
	assert_int_equal(cell_of(&p, "s", 8, "once")->verdict, CAMPAIGN_INVALID);
	assert_int_equal(cell_of(&p, "s", 8, "nov")->verdict, CAMPAIGN_INVALID);
	assert_int_equal(cell_of(&p, "s", 8, "nov")->n, 0);
	/* the sloughed cell is the fastest, but a sloughed candidate is no winner */
	assert_string_equal(best_of(&p, "s", 8), "fair");
	assert_string_equal(campaign_verdict_name(CAMPAIGN_NOISY), "NOISY");
	campaign_points_release(&p);
	strbuf_release(&f);
}

/* Records of one cell with the given slowCTAs, all BELOW_BAR as the gate saw them. */
static void samples(strbuf *f, const char *shape, int nw, const char *cand, const double *x,
		    size_t n)
{
	for (size_t i = 0; i < n; i++)
		rec(f, "c1", shape, nw, cand, "BELOW_BAR", x[i], 100, NULL, true, NULL);
}

static void decisions_and_provisional_best(void **state)
{
	(void)state;
	strbuf f = STRBUF_INIT;
	/* A CPU twin under load: the baseline near 28700 us with CV 36%, two
	 * candidates 5x and 6x faster with CV 4-36%: every cell's CV is over
	 * max_cv, yet the candidates are measurably above the bar. */
	const double base[] = {28709.151, 17000, 39000}, a[] = {5600, 5900, 5400},
		     b[] = {4700, 3000, 6400};
	samples(&f, "kv_a", 8, "baseline", base, 3);
	samples(&f, "kv_a", 8, "cand_a", a, 3);
	samples(&f, "kv_a", 8, "cand_b", b, 3);
	/* one run a side: judged on the one ratio, single, the best provisional */
	samples(&f, "kv_a", 64, "baseline", base, 1);
	samples(&f, "kv_a", 64, "cand_a", a, 1);
	/* two runs a side: no interval exists, NOISY leaning above */
	samples(&f, "kv_a", 128, "baseline", base, 2);
	samples(&f, "kv_a", 128, "cand_a", a, 2);
	/* a clear winner: measurably faster than the next */
	const double fast[] = {1000, 1010, 990};
	samples(&f, "kv_a", 132, "baseline", base, 3);
	samples(&f, "kv_a", 132, "cand_a", a, 3);
	samples(&f, "kv_a", 132, "cand_b", fast, 3);
	campaign_points p;
	read_ok(&f, NULL, &p);
	const campaign_cell *ca = cell_of(&p, "kv_a", 8, "cand_a");
	assert_int_equal(ca->verdict, CAMPAIGN_PASS_GATE);
	assert_true(ca->cv_warn || ca->slow_cv <= 2);
	assert_true(ca->decided && ca->dec.interval && ca->dec.lo > 1.2);
	assert_int_equal(cell_of(&p, "kv_a", 8, "cand_b")->verdict, CAMPAIGN_PASS_GATE);
	assert_int_equal(cell_of(&p, "kv_a", 8, "baseline")->verdict, CAMPAIGN_BASELINE);
	/* the faster median wins, provisionally: 4700 against 5600 is not measurable */
	assert_string_equal(best_of(&p, "kv_a", 8), "cand_b");
	assert_true(p.points[0].best_provisional);
	const campaign_cell *s64 = cell_of(&p, "kv_a", 64, "cand_a");
	assert_true(s64->single);
	assert_int_equal(s64->verdict, CAMPAIGN_PASS_GATE);
	assert_string_equal(best_of(&p, "kv_a", 64), "cand_a");
	assert_true(p.points[1].best_provisional);
	const campaign_cell *s128 = cell_of(&p, "kv_a", 128, "cand_a");
	assert_int_equal(s128->verdict, CAMPAIGN_NOISY);
	assert_false(s128->dec.interval);
	assert_int_equal(s128->dec.lean, 1);
	assert_string_equal(best_of(&p, "kv_a", 128), "cand_a"); /* NOISY may lead */
	assert_string_equal(best_of(&p, "kv_a", 132), "cand_b");
	assert_false(p.points[3].best_provisional);
	strbuf text = STRBUF_INIT;
	campaign_summary_text(&p, &text);
	assert_non_null(strstr(text.buf, "cand_b *?"));
	cJSON *j = campaign_points_json(&p);
	cJSON *pt0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "points"), 0);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(pt0, "best_provisional")));
	cJSON_Delete(j);
	strbuf_release(&text);
	campaign_points_release(&p);
	strbuf_reset(&f);

	/* strict_noise: a CV over max_cv is NOISY, as before */
	settings = "\"bar\":1.2,\"max_cv\":2.0,\"sum_tolerance\":10.0,\"jobs\":12,"
		   "\"strict_noise\":true";
	samples(&f, "kv_a", 8, "baseline", base, 3);
	samples(&f, "kv_a", 8, "cand_a", a, 3);
	settings = settings_plain;
	read_ok(&f, NULL, &p);
	assert_true(p.strict_noise);
	assert_int_equal(cell_of(&p, "kv_a", 8, "cand_a")->verdict, CAMPAIGN_NOISY);
	assert_int_equal(cell_of(&p, "kv_a", 8, "baseline")->verdict, CAMPAIGN_NOISY);
	/* still the best, provisionally */
	assert_string_equal(best_of(&p, "kv_a", 8), "cand_a");
	campaign_points_release(&p);
	strbuf_release(&f);
}

static void in_gate_five(void **state)
{
	(void)state;
	strbuf f = STRBUF_INIT;
	const double r[] = {1.5, 1.45, 1.6, 1.55, 1.7};
	for (int i = 0; i < 5; i++) {
		char extra[64];
		snprintf(extra, sizeof(extra), "\"slowCTA_ratio_base_over_cand\":%g", r[i]);
		rec(&f, "c1", "s", 8, "cand", "PASS_GATE", 4, 10, extra, true, NULL);
	}
	campaign_points p;
	read_ok(&f, NULL, &p);
	const campaign_cell *c = cell_of(&p, "s", 8, "cand");
	assert_int_equal(c->verdict, CAMPAIGN_PASS_GATE);
	assert_true(c->dec.paired && c->dec.interval);
	assert_near(c->dec.lo, 1.45, 1e-12);
	campaign_points_release(&p);
	strbuf_release(&f);
}

static void baseline_wins_and_flips(void **state)
{
	(void)state;
	strbuf f = STRBUF_INIT;
	const int nw[] = {8, 16, 32, 64, 68, 136};
	/* a wins at 8-32, the baseline at 64-68, b at 136 */
	const double a[] = {5, 5, 5, 12, 12, 12}, b[] = {9, 9, 9, 11, 11, 6};
	for (int i = 0; i < 6; i++) {
		three(&f, "q_b", nw[i], "baseline", 10, 10, 10, 100);
		three(&f, "q_b", nw[i], "a", a[i], a[i], a[i], 100);
		three(&f, "q_b", nw[i], "b", b[i], b[i], b[i], 100);
	}
	/* a second shape with one point and no num_workers */
	three(&f, "solo", -1, "baseline", 10, 10, 10, 100);
	campaign_points p;
	read_ok(&f, NULL, &p);
	assert_string_equal(best_of(&p, "q_b", 64), "baseline");
	strbuf t = STRBUF_INIT;
	campaign_flips_text(&p, "q_b", &t);
	assert_string_equal(t.buf, "q_b: a best at 8-32, baseline at 64-68, b at 136");
	strbuf_reset(&t);
	campaign_flips_text(&p, "solo", &t);
	assert_string_equal(t.buf, "solo: baseline best at -");
	strbuf_reset(&t);
	campaign_summary_text(&p, &t);
	assert_non_null(strstr(t.buf, "q_b: a best at 8-32, baseline at 64-68, b at 136\n"));
	assert_non_null(strstr(t.buf, "a *"));
	assert_non_null(strstr(t.buf, "jobs recorded 57 of 12"));
	strbuf_release(&t);
	cJSON *j = campaign_points_json(&p);
	char *s = cJSON_PrintUnformatted(j);
	assert_non_null(strstr(
		s, "\"flips\":{\"q_b\":\"q_b: a best at 8-32, baseline at 64-68, b at 136\""));
	assert_non_null(strstr(s, "\"num_workers\":null"));
	free(s);
	cJSON_Delete(j);
	campaign_points_release(&p);
	strbuf_release(&f);
}

static void duplicates_and_cut_attempts(void **state)
{
	(void)state;
	strbuf f = STRBUF_INIT;
	three(&f, "s", 8, "baseline", 10, 10, 10, 100);
	/* the job recorded final twice: the last record counts */
	rec(&f, "c1", "s", 8, "a", "PASS_GATE", 100, 100, NULL, true, "j1");
	rec(&f, "c1", "s", 8, "a", "PASS_GATE", 5, 100, NULL, true, "j1");
	/* a cut attempt: never counted */
	rec(&f, "c1", "s", 8, "a", "PASS_GATE", 0.001, 100, NULL, false, "j2");
	rec(&f, "c1", "s", 8, "a", "PASS_GATE", 5, 100, NULL, true, "j2");
	strbuf_addstr(&f, "not json\n{\"torn");
	campaign_points p;
	read_ok(&f, NULL, &p);
	const campaign_cell *a = cell_of(&p, "s", 8, "a");
	assert_int_equal(a->n, 2);
	assert_near(a->slow_max, 5, 0);
	assert_int_equal(p.duplicates, 1);
	assert_int_equal(p.not_final, 1);
	assert_int_equal(p.jobs_recorded, 5);
	assert_int_equal(p.bad_lines, 1);
	assert_true(p.torn);
	campaign_points_release(&p);
	strbuf_release(&f);
}

/* A record with every field that defines its job: `flags` a JSON array or
 * null, the job key as the record states it. */
static void def_rec(strbuf *f, const char *cand, const char *flags, int repeat, double slow,
		    const char *job)
{
	strbuf_addf(f,
		    "{\"box\":\"b\",\"verdict\":\"PASS_GATE\",\"result\":{\"candidate\":"
		    "{\"slowCTA_us\":%g,\"sumCTA_us\":100}},\"campaign\":{\"name\":\"c1\","
		    "\"gate_args\":[\"--kind\",\"k\"],\"job\":\"%s\",\"shape\":\"s\","
		    "\"num_workers\":8,\"candidate\":\"%s\",\"candidate_file\":null,"
		    "\"candidate_sha256\":null,\"candidate_flags\":%s,\"repeat\":%d,"
		    "\"final\":true,%s}}\n",
		    slow, job, cand, flags, repeat, settings);
}

/* An edited candidate is a new job: its cell counts only the records of its
 * current definition (the campaign file's when given, else its last
 * record's); old records are superseded, never mixed in. A record written
 * with the old key form (no definition in it) is the same job as one of the
 * same definition with the new form. */
static void edited_definitions(void **state)
{
	(void)state;
	strbuf f = STRBUF_INIT;
	const char *b = "[\"--baseline\"]", *f125 = "[\"--speed\",\"1.25\"]";
	const char *f2 = "[\"--speed\",\"2\"]";
	for (int r = 0; r < 3; r++) {
		def_rec(&f, "baseline", b, r, 10, "old-form");
		def_rec(&f, "fast", f125, r, 8, "c1/s/8/fast/0");
	}
	/* the same job (definition and repeat) again, keyed the new way: a duplicate */
	def_rec(&f, "fast", f125, 0, 8, "c1/s/8/fast@x/0");
	def_rec(&f, "fast", f2, 0, 5, "c1/s/8/fast@y/0");
	campaign_points p;
	read_ok(&f, NULL, &p);
	const campaign_cell *c = cell_of(&p, "s", 8, "fast");
	assert_int_equal(c->n, 1);
	assert_near(c->slow_median, 5, 0);
	assert_near(c->ratio, 2, 1e-12);
	assert_int_equal(cell_of(&p, "s", 8, "baseline")->n, 3);
	assert_int_equal(p.superseded, 3);
	assert_int_equal(p.duplicates, 1);
	assert_int_equal(p.jobs_recorded, 4);
	assert_int_equal(p.superseded_candidates.n, 1);
	assert_string_equal(p.superseded_candidates.v[0], "fast");
	strbuf sum = STRBUF_INIT;
	campaign_summary_text(&p, &sum);
	assert_non_null(strstr(sum.buf, "records of an earlier definition 3 (fast; not counted)"));
	strbuf_release(&sum);
	campaign_points_release(&p);

	/* the campaign file says --speed 1.25 again: those records count */
	char def[CAMPAIGN_DEF_LEN + 1];
	char *w[] = {"--kind", "k"}, *fl[] = {"--speed", "1.25"};
	campaign_def_of(w, 2, fl, 2, NULL, def);
	campaign_current cur = {"fast", def};
	char *path = unit_file("r", ".jsonl", f.buf);
	bg_err err = {0};
	assert_int_equal(campaign_points_read_current(path, NULL, &cur, 1, &p, &err), 0);
	c = cell_of(&p, "s", 8, "fast");
	assert_int_equal(c->n, 3);
	assert_near(c->slow_median, 8, 0);
	assert_int_equal(p.superseded, 1);
	campaign_points_release(&p);
	free(path);
	strbuf_release(&f);
}

static void several_campaigns(void **state)
{
	(void)state;
	strbuf f = STRBUF_INIT;
	rec(&f, "one", "s", 8, "baseline", "PASS_GATE", 10, 100, NULL, true, NULL);
	rec(&f, "two", "t", 8, "baseline", "PASS_GATE", 20, 100, NULL, true, NULL);
	strbuf_addstr(&f, "{\"schema\":1,\"box\":\"b\"}\n");
	char *path = unit_file("r", ".jsonl", f.buf);
	campaign_points p;
	bg_err err = {0};
	assert_int_equal(campaign_points_read(path, NULL, &p, &err), BG_EUSAGE);
	assert_non_null(strstr(err.msg, "2 campaigns: one, two"));
	campaign_points_release(&p);
	assert_int_equal(campaign_points_read(path, "nope", &p, &err), BG_EUSAGE);
	assert_non_null(strstr(err.msg, "no campaign 'nope' (campaigns in it: one, two)"));
	campaign_points_release(&p);
	assert_int_equal(campaign_points_read(path, "two", &p, &err), 0);
	assert_int_equal(p.n_points, 1);
	assert_string_equal(p.points[0].shape, "t");
	campaign_points_release(&p);
	char *plain = unit_file("plain", ".jsonl", "{\"schema\":1}\n");
	assert_int_equal(campaign_points_read(plain, NULL, &p, &err), BG_ENOTFOUND);
	assert_non_null(strstr(err.msg, "holds no campaign records"));
	campaign_points_release(&p);
	char *missing = xasprintf("%s/missing.jsonl", tmpdir);
	assert_int_equal(campaign_points_read(missing, NULL, &p, &err), BG_ENOTFOUND);
	campaign_points_release(&p);
	free(missing);
	free(plain);
	free(path);
	strbuf_release(&f);
}

/* Every plot of `p` is well-formed XML within `max` bytes. */
static void plots_ok(const campaign_points *p, size_t max)
{
	strbuf b = STRBUF_INIT;
	for (size_t i = 0; i <= p->shapes.n; i++) {
		strbuf_reset(&b);
		if (i < p->shapes.n)
			campaign_svg_slowcta(p, p->shapes.v[i], &b);
		else
			campaign_svg_ratio(p, &b);
		const char *why = xml_check(b.buf, b.len);
		if (why)
			fail_msg("plot %zu not well-formed: %s", i, why);
		if (b.len > max)
			fail_msg("plot %zu is %zu bytes (> %zu)", i, b.len, max);
		if (strcasestr(b.buf, "nan") || strcasestr(b.buf, "inf"))
			fail_msg("plot %zu prints nan or inf", i);
	}
	strbuf_release(&b);
}

/* Values a span cannot have (what the result check refused or an old record or a
 * hand edit holds): not samples, and the plots stay bounded; the log axis's tick
 * loop used to run forever on 5e-324 and 1.797e308 (8.9e307 here: the wall
 * this file writes is twice the slowCTA). */
static void impossible_spans(void **state)
{
	(void)state;
	strbuf f = STRBUF_INIT;
	rec(&f, "c1", "tiny", 8, "baseline", "PASS_GATE", 5e-324, 100, NULL, true, NULL);
	rec(&f, "c1", "tiny", 8, "cand", "PASS_GATE", 1.0, 100, NULL, true, NULL);
	rec(&f, "c1", "huge", 8, "baseline", "PASS_GATE", 8.9e307, 100, NULL, true, NULL);
	rec(&f, "c1", "huge", 8, "cand", "PASS_GATE", 2.0, 100, NULL, true, NULL);
	rec(&f, "c1", "both", 8, "baseline", "PASS_GATE", 5e-324, 100, NULL, true, NULL);
	rec(&f, "c1", "both", 16, "baseline", "PASS_GATE", 8.9e307, 100, NULL, true, NULL);
	rec(&f, "c1", "both", 16, "cand", "PASS_GATE", 1e-3, 1e-3, NULL, true, NULL);
	rec(&f, "c1", "both", 32, "cand", "PASS_GATE", 3.6e9, 3.6e9, NULL, true, NULL);
	campaign_points p;
	read_ok(&f, NULL, &p);
	const campaign_cell *c = cell_of(&p, "tiny", 8, "baseline");
	assert_int_equal(c->n, 0);
	assert_int_equal(c->n_bad, 1);
	assert_string_equal(c->worst_bad, "impossible span");
	assert_int_equal(cell_of(&p, "huge", 8, "baseline")->n, 0);
	assert_int_equal(cell_of(&p, "both", 16, "cand")->n, 1);
	plots_ok(&p, 64 * 1024);
	campaign_points_release(&p);
	strbuf_release(&f);
}

/* Names no one would choose: markup, "]]>", control characters, what XML forbids
 * (U+FFFE, U+FFFF), bidirectional overrides, invalid UTF-8 and 3000 bytes. */
static void hostile_names(void **state)
{
	(void)state;
	static const char *const shapes[] = {
		"a<&\\\"'b]]>",         "\\u0001\\u001f\\u007f\\u0085x",
		"\\ufffe\\uffff",       "rtl\\u202egnp.exe\\u2066",
		"\\ud83d\\ude00 emoji",
	};
	strbuf f = STRBUF_INIT;
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		rec(&f, "c1", shapes[i], 8, "baseline", "PASS_GATE", 10, 100, NULL, true, NULL);
		rec(&f, "c1", shapes[i], 8, "c]]>\\ufffe<x", "PASS_GATE", 5, 100, NULL, true, NULL);
	}
	char *big = xmalloc(3001);
	memset(big, 'x', 3000);
	big[3000] = 0;
	rec(&f, "c1", big, 8, "baseline", "PASS_GATE", 10, 100, NULL, true, NULL);
	rec(&f, "c1", big, 8, big, "PASS_GATE", 5, 100, NULL, true, NULL);
	campaign_points p;
	read_ok(&f, NULL, &p);
	assert_int_equal(p.shapes.n, 6);
	plots_ok(&p, 64 * 1024);
	/* a 3000-byte shape gives a file name that fits NAME_MAX */
	char *part = campaign_report_shape_file(big);
	assert_int_equal(strlen(part), CAMPAIGN_REPORT_SHAPE_MAX);
	free(part);
	part = campaign_report_shape_file("a<b"); /* shorter than the cap: read to its end only */
	assert_string_equal(part, "a_b");
	free(part);
	free(big);
	campaign_points_release(&p);
	strbuf_release(&f);
}

/* Thousands of points of distinct shapes and worker counts: the heat map would hold
 * shapes x columns x candidates cells; past the cap it says so instead. */
static void many_points(void **state)
{
	(void)state;
	strbuf f = STRBUF_INIT;
	for (int i = 0; i < 3000; i++) {
		char shape[32];
		snprintf(shape, sizeof(shape), "s%d", i);
		rec(&f, "c1", shape, i + 1, i % 2 ? "cand" : "baseline", "PASS_GATE", 1 + i, 1e4,
		    NULL, true, NULL);
	}
	campaign_points p;
	read_ok(&f, NULL, &p);
	strbuf b = STRBUF_INIT;
	campaign_svg_ratio(&p, &b);
	assert_null(xml_check(b.buf, b.len));
	assert_true(b.len < 64 * 1024);
	assert_non_null(strstr(b.buf, "too many cells to draw"));
	strbuf_release(&b);
	campaign_points_release(&p);
	strbuf_release(&f);
}

/* A run's record (no campaign): what run writes for one invocation. */
static void run_rec(strbuf *f, const char *gpu, const char *shape, int nw, const char *variant,
		    double slow)
{
	strbuf_addf(
		f,
		"{\"schema\":1,\"run_id\":\"00000000000000a1\",\"box\":\"b\","
		"\"gpu_name\":\"%s\",\"verdict\":\"PASS_GATE\",\"start\":\"2026-12-0%dT10:00Z\","
		"\"gate_args\":[\"--kind\",\"k\",\"--dir\",\"d\",\"--variant\",\"%s\"],"
		"\"point\":{\"kind\":\"k\",\"shape\":\"%s\",\"num_workers\":%d,"
		"\"candidate\":null},\"result\":{\"candidate\":{\"slowCTA_us\":%g},"
		"\"slowCTA_ratio_base_over_cand\":%g}}\n",
		gpu, nw % 9 + 1, variant, shape, nw, slow, 130 / slow);
}

static void any_results_file(void **state)
{
	(void)state;
	strbuf f = STRBUF_INIT;
	for (int i = 0; i < 3; i++) {
		run_rec(&f, "H200", "q_a", 8, "split", 100 + i);
		run_rec(&f, "H200", "q_a", 8, "nosplit", 120 + i);
		run_rec(&f, "H100", "q_a", 8, "split", 200 + i);
	}
	char *path = unit_file("runs", ".jsonl", f.buf);
	campaign_points p;
	bg_err err = {0};
	/* the campaign readers see no records of runs */
	assert_int_equal(campaign_points_read(path, NULL, &p, &err), BG_ENOTFOUND);
	campaign_points_release(&p);
	assert_int_equal(campaign_points_read_any(path, NULL, NULL, &p, &err), 0);
	assert_true(p.no_campaign);
	assert_int_equal(strncmp(p.name, "runs", 4), 0); /* the file's stem */
	assert_int_equal(p.run_records, 9);
	/* two devices: a shape each; the variant, the one argument that differs, names the cell */
	assert_int_equal(p.shapes.n, 2);
	assert_string_equal(p.shapes.v[0], "q_a on H200");
	assert_string_equal(p.shapes.v[1], "q_a on H100");
	const campaign_cell *c = cell_of(&p, "q_a on H200", 8, "candidate --variant nosplit");
	assert_int_equal(c->n, 3);
	assert_true(fabs(c->slow_median - 121) < 1e-12);
	assert_int_equal(c->ratio_source, CAMPAIGN_RATIO_IN_GATE);
	c = cell_of(&p, "q_a on H100", 8, "candidate --variant split");
	assert_int_equal(c->n, 3);
	campaign_points_release(&p);

	/* a selector picks; one that picks nothing is BG_ENOTFOUND naming it */
	results_selector sel = RESULTS_SELECTOR_INIT;
	assert_int_equal(results_selector_add(&sel, "device=h200,variant=split", &err), 0);
	assert_int_equal(campaign_points_read_any(path, NULL, &sel, &p, &err), 0);
	assert_int_equal(p.shapes.n, 1);
	assert_string_equal(p.shapes.v[0], "q_a"); /* one device: the shape as it is */
	assert_int_equal(p.points[0].n_cells, 1);
	assert_string_equal(p.points[0].cells[0].candidate, "candidate"); /* nothing differs */
	campaign_points_release(&p);
	results_selector_release(&sel);
	assert_int_equal(results_selector_add(&sel, "run=ff", &err), 0);
	assert_int_equal(campaign_points_read_any(path, NULL, &sel, &p, &err), BG_ENOTFOUND);
	assert_non_null(strstr(err.msg, "matches --select 'run=ff'"));
	campaign_points_release(&p);
	results_selector_release(&sel);

	/* a campaign beside the runs: together without a name; a name is the campaign alone */
	three(&f, "q_a", 8, "baseline", 100, 101, 102, 1000);
	free(path);
	path = unit_file("mix", ".jsonl", f.buf);
	assert_int_equal(campaign_points_read_any(path, NULL, NULL, &p, &err), 0);
	assert_false(p.no_campaign);
	assert_string_equal(p.name, "c1");
	assert_int_equal(p.run_records, 9);
	assert_int_equal(p.jobs_recorded, 12);
	campaign_points_release(&p);
	assert_int_equal(campaign_points_read_any(path, "c1", NULL, &p, &err), 0);
	assert_int_equal(p.run_records, 0);
	assert_int_equal(p.jobs_recorded, 3);
	campaign_points_release(&p);
	free(path);
	strbuf_release(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(medians_and_jobs_ratio),
		cmocka_unit_test(in_gate_ratio),
		cmocka_unit_test(measured_records),
		cmocka_unit_test(verdict_rules),
		cmocka_unit_test(decisions_and_provisional_best),
		cmocka_unit_test(in_gate_five),
		cmocka_unit_test(baseline_wins_and_flips),
		cmocka_unit_test(duplicates_and_cut_attempts),
		cmocka_unit_test(several_campaigns),
		cmocka_unit_test(impossible_spans),
		cmocka_unit_test(hostile_names),
		cmocka_unit_test(many_points),
		cmocka_unit_test(edited_definitions),
		cmocka_unit_test(any_results_file),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
