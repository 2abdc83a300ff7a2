/* measure/point: one point of repeated invocations judged (run --repeat, a
 * sweep's count): in-gate pairs, apart pairs, one run, sloughing, a gate that
 * states no ratio, the CV as a warning and as a rule under strict_noise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <string.h>

#include "measure/kernel.h"
#include "measure/point.h"

/* A judged result line: the candidate's slowCTA and sumCTA, and the baseline's
 * when base > 0 (measured in the same process). */
static gate_result line(double cand, double base, double csum, double bsum)
{
	gate_result r;
	memset(&r, 0, sizeof(r));
	r.cand.present = true;
	r.cand.slowCTA_us = cand;
	r.cand.sumCTA_us = csum;
	r.cand.wall_us = cand + 1;
	if (base > 0) {
		r.base.present = true;
		r.base.slowCTA_us = base;
		r.base.sumCTA_us = bsum;
	}
	return r;
}

static void add(measure_point *p, double cand, double base, gate_verdict v)
{
	gate_result r = line(cand, base, 100, 100);
	assert_true(measure_point_add(p, v, &r, false));
}

static void in_gate_pairs(void **state)
{
	(void)state;
	measure_point p;
	memset(&p, 0, sizeof(p));
	p.max_cv = 2;
	add(&p, 100, 130, VERDICT_PASS_GATE);
	add(&p, 101, 130, VERDICT_PASS_GATE);
	add(&p, 99, 130, VERDICT_PASS_GATE);
	measure_point_judge(&p, 0);
	assert_int_equal(p.verdict, VERDICT_PASS_GATE);
	assert_false(p.noisy);
	assert_true(p.decided && p.dec.pairs_as_samples);
	/* the bar 1.35 over ratios near 1.3: measurably below */
	measure_point_judge(&p, 1.35);
	assert_int_equal(p.verdict, VERDICT_BELOW_BAR);
	assert_false(p.noisy);
	/* a failed invocation gives no sample */
	gate_result none = line(1, 0, 1, 1);
	assert_false(measure_point_add(&p, VERDICT_INVALID, &none, false));
	assert_false(measure_point_add(&p, VERDICT_PASS_GATE, NULL, false));
}

static void two_runs_and_one(void **state)
{
	(void)state;
	measure_point p;
	memset(&p, 0, sizeof(p));
	p.max_cv = 2;
	add(&p, 100, 130, VERDICT_PASS_GATE);
	measure_point_judge(&p, 0);
	assert_true(p.single);
	assert_int_equal(p.verdict, VERDICT_PASS_GATE);
	add(&p, 100, 130, VERDICT_PASS_GATE);
	measure_point_judge(&p, 0);
	assert_true(p.noisy);
	assert_false(p.dec.interval);
	assert_int_equal(p.dec.lean, 1);
}

static void apart_and_cv(void **state)
{
	(void)state;
	measure_point p;
	memset(&p, 0, sizeof(p));
	p.max_cv = 2;
	p.apart = true;
	const double c[] = {50, 50, 50}, b[] = {100, 150, 200};
	for (int i = 0; i < 3; i++) {
		gate_result rc = line(c[i], 0, 100, 0), rb = line(b[i], 0, 100, 0);
		assert_true(measure_point_add(&p, VERDICT_PASS_GATE, &rc, false));
		assert_true(measure_point_add(&p, VERDICT_PASS_GATE, &rb, true));
	}
	assert_int_equal(measure_point_pairs(&p), 3);
	measure_point_judge(&p, 0);
	assert_int_equal(p.verdict, VERDICT_PASS_GATE);
	assert_true(p.cv_warn_b && !p.cv_warn);
	assert_false(p.noisy);
	p.strict_noise = true;
	measure_point_judge(&p, 0);
	assert_true(p.noisy);
}

static void slough_and_no_ratio(void **state)
{
	(void)state;
	measure_point p;
	memset(&p, 0, sizeof(p));
	p.max_cv = 2;
	for (int i = 0; i < 3; i++) {
		gate_result r = line(100, 130, 120, 100); /* sumCTA 20% over the baseline's */
		assert_true(measure_point_add(&p, VERDICT_BELOW_BAR, &r, false));
	}
	measure_point_judge(&p, 0);
	assert_true(p.sloughed);
	assert_int_equal(p.verdict, VERDICT_BELOW_BAR);
	assert_false(p.noisy);
	/* a gate that states no ratio: every run must have passed */
	memset(&p, 0, sizeof(p));
	p.max_cv = 2;
	add(&p, 100, 0, VERDICT_PASS_GATE);
	add(&p, 100, 0, VERDICT_BELOW_BAR);
	measure_point_judge(&p, 0);
	assert_int_equal(p.verdict, VERDICT_BELOW_BAR);
	assert_false(p.decided);
}

/* run's bookkeeping beside the numbers: the device a result names, a failed
 * invocation's exit and verdict, the point's exit code once judged. */
static void tally(void **state)
{
	(void)state;
	measure_point m;
	measure_tally t;
	memset(&m, 0, sizeof(m));
	memset(&t, 0, sizeof(t));
	m.max_cv = 2;
	t.cpus = t.workers = -1;
	gate_result r = line(100, 130, 100, 100);
	r.json = cJSON_Parse(
		"{\"device\":\"cuda\",\"device_name\":\"NVIDIA H200 with a "
		"name longer than the field that holds it, cut and never "
		"overrun, whatever the gate may print in it\",\"cpus\":-3,\"num_workers\":64}");
	assert_non_null(r.json);
	for (int i = 0; i < 5; i++)
		measure_tally_note(&t, &m, 0, VERDICT_PASS_GATE, &r, false);
	assert_int_equal(t.runs, 5);
	assert_string_equal(t.device, "cuda");
	assert_int_equal(strlen(t.device_name), sizeof(t.device_name) - 1);
	assert_int_equal(t.cpus, -1); /* negative: absent */
	assert_int_equal(t.workers, 64);
	measure_tally_judge(&t, &m, 0);
	assert_true(t.judged);
	assert_int_equal(t.code, 0);
	assert_int_equal(m.verdict, VERDICT_PASS_GATE);
	/* a record not kept: at least 1 */
	t.record_failed = true;
	measure_tally_judge(&t, &m, 0);
	assert_int_equal(t.code, 1);
	t.record_failed = false;
	/* a hang: no verdict on the point but the hang, its exit the point's */
	measure_tally_note(&t, &m, 124, VERDICT_TIMEOUT_HANG, NULL, false);
	measure_tally_note(&t, &m, 125, VERDICT_INVALID, NULL, false);
	assert_int_equal(t.runs, 7);
	assert_int_equal(t.bad_verdict, VERDICT_TIMEOUT_HANG);
	measure_tally_judge(&t, &m, 0);
	assert_int_equal(m.verdict, VERDICT_TIMEOUT_HANG);
	assert_false(m.noisy);
	assert_int_equal(t.code, 125); /* INVALID outranks TIMEOUT (base/exit.h) */
	cJSON_Delete(r.json);
	/* no invocation gave a sample: 1, no verdict */
	memset(&m, 0, sizeof(m));
	memset(&t, 0, sizeof(t));
	measure_tally_note(&t, &m, 0, VERDICT_PASS_GATE, NULL, false);
	measure_tally_judge(&t, &m, 0);
	assert_int_equal(t.code, 1);
	assert_int_equal(m.verdict, VERDICT_NONE);
}

static void gate_kind_and_kernel_path(void **state)
{
	(void)state;
	char *w[] = {"--kind", "a", "--x", "--kind=b", NULL};
	assert_string_equal(measure_gate_kind(w, 4), "b");
	assert_string_equal(measure_gate_kind(w, 2), "a");
	assert_null(measure_gate_kind(w, 1)); /* a dangling --kind names none */
	char *paths[] = {"ab:x.cuh", "a:k/a.cuh", "b"};
	conf_box box;
	memset(&box, 0, sizeof(box));
	box.kernel_paths = paths;
	box.n_kernel_paths = 3;
	assert_string_equal(measure_kernel_path(&box, "a"), "k/a.cuh");
	assert_string_equal(measure_kernel_path(&box, "ab"), "x.cuh");
	assert_null(measure_kernel_path(&box, "b"));
	assert_null(measure_kernel_path(&box, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(in_gate_pairs), cmocka_unit_test(two_runs_and_one),
		cmocka_unit_test(apart_and_cv),  cmocka_unit_test(slough_and_no_ratio),
		cmocka_unit_test(tally),         cmocka_unit_test(gate_kind_and_kernel_path),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
