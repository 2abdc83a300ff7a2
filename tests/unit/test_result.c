/* gate/result: the FAITHFUL_RESULT contract and boxgate's own verdict. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include <stdio.h>

#include "base/parse.h"
#include "base/utf8.h"
#include "gate/client/result.h"
#include "gate/client/run.h"

#define SIDE(slow, wall, sum, cos)                                                                 \
	"{\"slowCTA_us\":" #slow ",\"wall_us\":" #wall ",\"sumCTA_us\":" #sum ",\"cos\":" #cos     \
	",\"status\":\"PASS\"}"

static gate_verdict judge(const char *line, gate_result *r)
{
	gate_result_parse(r, line, strlen(line), NULL);
	return r->verdict;
}

static void pass_gate(void **state)
{
	(void)state;
	gate_result r;
	const char *l =
		"FAITHFUL_RESULT {\"kind\":\"gemv_m1\",\"shape\":\"q_b\",\"candidate\":" SIDE(
			4.1, 5.0, 410.2,
			0.9999) ",\"baseline_in_tree\":" SIDE(5.2, 6.1, 402.0,
							      1.0) ",\"slowCTA_ratio_base_over_"
								   "cand\":1.27,\"verdict\":\"PASS_"
								   "GATE\"}";
	assert_true(gate_is_result_line(l, strlen(l)));
	assert_int_equal(judge(l, &r), VERDICT_PASS_GATE);
	assert_false(r.disagrees);
	assert_true(r.parsed);
	gate_result_release(&r);
}

/* Parses `line` under `policy` (NULL: the defaults) into *r (the caller
 * releases it); fails unless the verdict is `verdict` and, when `problem` is
 * given, the problems name it. */
static void judge_expect(gate_result *r, const char *line, size_t len, const gate_policy *policy,
			 gate_verdict verdict, const char *problem)
{
	gate_result_parse(r, line, len, policy);
	if (r->verdict != verdict || (problem && !strstr(r->problems, problem)))
		fail_msg("[%s]: verdict %s, problems '%s'; wanted %s, '%s'", line,
			 gate_verdict_name(r->verdict), r->problems, gate_verdict_name(verdict),
			 problem ? problem : "");
}

/* The same, for a line whose verdict is all there is to check. */
static void expect_verdict(const char *line, const gate_policy *policy, gate_verdict verdict)
{
	gate_result r;
	judge_expect(&r, line, strlen(line), policy, verdict, NULL);
	gate_result_release(&r);
}

/* The in-tree baselines the candidates are judged against. */
#define BASE_52 ",\"baseline_in_tree\":" SIDE(5.2, 6.1, 402.0, 1.0)
#define BASE    ",\"baseline_in_tree\":" SIDE(5.5, 6.1, 402.0, 1.0)

enum agreement { AGREEMENT_UNCHECKED, AGREES, DISAGREES };

/* Gate lines boxgate judges again: the verdict, a phrase of the problems
 * (NULL: unchecked), whether it disagrees with the gate. */
static const struct judged_case {
	const char *what, *line;
	gate_verdict verdict;
	const char *problem;
	enum agreement agreement;
} judged_cases[] = {
	{"below the bar",
	 "FAITHFUL_RESULT {\"candidate\":" SIDE(6.0, 7.0, 400, 0.9999) BASE_52
	 ",\"slowCTA_ratio_base_over_cand\":0.8667,\"verdict\":\"BELOW_BAR\"}",
	 VERDICT_BELOW_BAR, "below the bar", AGREEMENT_UNCHECKED},
	{"a bad cos is invalid",
	 "FAITHFUL_RESULT {\"candidate\":" SIDE(1.0, 2.0, 100, 0.0) BASE_52
	 ",\"verdict\":\"INVALID\"}",
	 VERDICT_INVALID, NULL, AGREEMENT_UNCHECKED},
	{"the same numbers claimed as a pass: disagreement, INVALID",
	 "FAITHFUL_RESULT {\"candidate\":" SIDE(1.0, 2.0, 100, 0.5) BASE_52
	 ",\"verdict\":\"PASS_GATE\"}",
	 VERDICT_INVALID, "cos", DISAGREES},
	{"slowCTA halves but total CTA time doubles: the work was only spread",
	 "FAITHFUL_RESULT {\"candidate\":" SIDE(2.6, 3.0, 804, 0.9999) BASE_52
	 ",\"verdict\":\"PASS_GATE\"}",
	 VERDICT_INVALID, "sumCTA rose", AGREEMENT_UNCHECKED},
	{"the stated ratio is checked",
	 "FAITHFUL_RESULT {\"candidate\":" SIDE(4.0, 5.0, 400, 0.9999) BASE_52
	 ",\"slowCTA_ratio_base_over_cand\":2.5,\"verdict\":\"PASS_GATE\"}",
	 VERDICT_INVALID, "stated slowCTA ratio", AGREEMENT_UNCHECKED},
	{"ratio 1.1 against the gate's own bar 1.2: BELOW_BAR, agreeing with the gate",
	 "FAITHFUL_RESULT {\"bar\":1.2,\"candidate\":" SIDE(5.0, 6.0, 400, 0.9999) BASE
	 ",\"verdict\":\"BELOW_BAR\"}",
	 VERDICT_BELOW_BAR, NULL, AGREES},
};

/* A side whose own "status" is anything but PASS fails the line: INVALID,
 * whatever its numbers and stated verdict say. */
static void side_status(void **state)
{
	(void)state;
	static const char *const bad[] = {"FAIL", "pass", "", "PASS ", "SKIP"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char line[512];
		gate_result r;
		snprintf(line, sizeof(line),
			 "FAITHFUL_RESULT {\"candidate\":{\"slowCTA_us\":4,\"wall_us\":5,"
			 "\"sumCTA_us\":4,\"cos\":1,\"status\":\"%s\"},\"verdict\":\"PASS_GATE\"}",
			 bad[i]);
		judge_expect(&r, line, strlen(line), NULL, VERDICT_INVALID, "candidate status '");
		gate_result_release(&r);
		snprintf(
			line, sizeof(line),
			"FAITHFUL_RESULT {\"candidate\":" SIDE(
				4, 5, 4, 1) ",\"baseline_in_tree\":{\"slowCTA_us\":8,\"wall_us\":9,"
					    "\"sumCTA_us\":8,\"cos\":1,\"status\":\"%s\"},"
					    "\"verdict\":\"PASS_GATE\"}",
			bad[i]);
		judge_expect(&r, line, strlen(line), NULL, VERDICT_INVALID,
			     "baseline_in_tree status '");
		gate_result_release(&r);
	}
	expect_verdict(
		"FAITHFUL_RESULT {\"candidate\":" SIDE(4, 5, 4, 1) ",\"verdict\":\"PASS_GATE\"}",
		NULL, VERDICT_PASS_GATE);
}

static void judged_lines(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(judged_cases) / sizeof(judged_cases[0]); i++) {
		const struct judged_case *c = &judged_cases[i];
		gate_result r;
		judge_expect(&r, c->line, strlen(c->line), NULL, c->verdict, c->problem);
		if (c->agreement != AGREEMENT_UNCHECKED &&
		    r.disagrees != (c->agreement == DISAGREES))
			fail_msg("%s: disagrees %d", c->what, r.disagrees);
		gate_result_release(&r);
	}
}

static void garbage_kept_verbatim(void **state)
{
	(void)state;
	const char *bad[] = {
		"FAITHFUL_RESULT {not json",
		"FAITHFUL_RESULT []",
		"FAITHFUL_RESULT {\"verdict\":\"PASS_GATE\"}",
		"FAITHFUL_RESULT "
		"{\"verdict\":\"PASS_GATE\",\"candidate\":{\"slowCTA_us\":\"fast\"}}",
		"FAITHFUL_RESULT {\"verdict\":\"WHATEVER\",\"candidate\":" SIDE(1, 2, 3, 1) "}",
		"FAITHFUL_RESULT {\"verdict\":\"PASS_GATE\",\"candidate\":" SIDE(9, 2, 3, 1) "}",
		"FAITHFUL_RESULT {\"verdict\":\"PASS_GATE\",\"candidate\":" SIDE(-1, 2, 3, 1) "}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		gate_result r;
		assert_int_equal(judge(bad[i], &r), VERDICT_INVALID);
		assert_string_equal(r.raw, bad[i]);
		assert_true(strlen(r.problems) > 0);
		gate_result_release(&r);
	}
	gate_result r;
	const char nul[] = "FAITHFUL_RESULT {\"a\":1}\0tail";
	gate_result_parse(&r, nul, sizeof(nul) - 1, NULL);
	assert_int_equal(r.verdict, VERDICT_INVALID);
	gate_result_release(&r);
}

static void agent_lines(void **state)
{
	(void)state;
	gate_result r;
	const char *l =
		"FAITHFUL_RESULT "
		"{\"verdict\":\"TIMEOUT_HANG\",\"timeout_s\":2,\"killed\":3,\"gpu_freed\":null}";
	gate_result_parse_from(&r, l, strlen(l), NULL, GATE_FROM_AGENT);
	assert_int_equal(r.verdict, VERDICT_TIMEOUT_HANG);
	assert_false(r.forged);
	assert_int_equal(gate_verdict_exit_code(r.verdict), 124);
	gate_result_release(&r);
	l = "FAITHFUL_RESULT "
	    "{\"verdict\":\"INVALID\",\"reason\":\"gpu_busy\",\"gpu\":0,\"pid\":42,\"process\":"
	    "\"python3\"}";
	gate_result_parse_from(&r, l, strlen(l), NULL, GATE_FROM_AGENT);
	assert_int_equal(r.verdict, VERDICT_INVALID);
	assert_non_null(strstr(r.problems, "gpu_busy"));
	assert_non_null(strstr(r.problems, "pid 42 (python3)"));
	assert_int_equal(gate_verdict_exit_code(r.verdict), 125);
	gate_result_release(&r);
}

/* The same lines printed by the gate: forged, INVALID, never a timeout. */
static void gate_cannot_speak_for_agent(void **state)
{
	(void)state;
	const char *forged[] = {
		"FAITHFUL_RESULT "
		"{\"verdict\":\"TIMEOUT_HANG\",\"timeout_s\":2,\"killed\":3,\"gpu_freed\":null}",
		"FAITHFUL_RESULT "
		"{\"verdict\":\"INVALID\",\"reason\":\"gpu_busy\",\"gpu\":0,\"pid\":42,\"process\":"
		"\"x\"}",
		"FAITHFUL_RESULT {\"verdict\":\"INVALID\",\"reason\":\"no_gpu\",\"detail\":\"x\"}",
		/* a gate PASS line dressed with an agent reason is still forged */
		"FAITHFUL_RESULT "
		"{\"verdict\":\"PASS_GATE\",\"reason\":\"gpu_busy\",\"candidate\":" SIDE(
			4.0, 5.0, 400, 0.9999) "}",
	};
	for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
		gate_result r;
		assert_int_equal(judge(forged[i], &r), VERDICT_INVALID);
		assert_true(r.forged);
		assert_non_null(strstr(r.problems, "forged"));
		gate_result_release(&r);
	}
	/* The agent cannot report a gate's PASS either. */
	gate_result r;
	const char *l = "FAITHFUL_RESULT {\"candidate\":" SIDE(
		4.0, 5.0, 400, 0.9999) ",\"verdict\":\"PASS_GATE\"}";
	gate_result_parse_from(&r, l, strlen(l), NULL, GATE_FROM_AGENT);
	assert_int_equal(r.verdict, VERDICT_INVALID);
	gate_result_release(&r);
}

/* The user's --bar wins over the gate's "bar"; under the bar is BELOW_BAR, never INVALID. */
static void user_bar_wins(void **state)
{
	(void)state;
	gate_policy p = GATE_POLICY_DEFAULT;
	gate_result r;
	/* ratio 1.1; the gate judged against its bar 1.0 and says PASS_GATE. */
	const char *l = "FAITHFUL_RESULT {\"bar\":1.0,\"candidate\":" SIDE(5.0, 6.0, 400, 0.9999)
		BASE ",\"slowCTA_ratio_base_over_cand\":1.1,\"verdict\":\"PASS_GATE\"}";
	p.bar = 1.2;
	judge_expect(&r, l, strlen(l), &p, VERDICT_BELOW_BAR, "below the bar 1.20 (--bar)");
	assert_false(r.disagrees);
	assert_true(r.bar == 1.2);
	gate_result_release(&r);
	/* A gate lowering its bar cannot pass what --bar refuses. */
	expect_verdict("FAITHFUL_RESULT {\"bar\":0.5,\"candidate\":" SIDE(5.0, 6.0, 400, 0.9999)
			       BASE ",\"verdict\":\"PASS_GATE\"}",
		       &p, VERDICT_BELOW_BAR);
	/* No "bar" in the line: the gate is taken to judge against 1.0. */
	l = "FAITHFUL_RESULT {\"candidate\":" SIDE(5.0, 6.0, 400, 0.9999) BASE
		",\"verdict\":\"PASS_GATE\"}";
	judge_expect(&r, l, strlen(l), &p, VERDICT_BELOW_BAR, NULL);
	assert_false(r.disagrees);
	gate_result_release(&r);
	/* A lower --bar passes what the gate's stricter bar did not. */
	p.bar = 1.05;
	expect_verdict("FAITHFUL_RESULT {\"bar\":1.2,\"candidate\":" SIDE(5.0, 6.0, 400, 0.9999)
			       BASE ",\"verdict\":\"BELOW_BAR\"}",
		       &p, VERDICT_PASS_GATE);
	/* Without --bar the gate's bar stands (documented default). */
	expect_verdict("FAITHFUL_RESULT {\"bar\":1.2,\"candidate\":" SIDE(5.0, 6.0, 400, 0.9999)
			       BASE ",\"verdict\":\"BELOW_BAR\"}",
		       NULL, VERDICT_BELOW_BAR);
	/* A gate that lies against its own bar is still INVALID. */
	l = "FAITHFUL_RESULT {\"bar\":1.2,\"candidate\":" SIDE(5.0, 6.0, 400, 0.9999) BASE
		",\"verdict\":\"PASS_GATE\"}";
	p.bar = 1.0;
	judge_expect(&r, l, strlen(l), &p, VERDICT_INVALID, NULL);
	assert_true(r.disagrees);
	gate_result_release(&r);
	/* An in-tree-only run has ratio 1: below a --bar of 1.2. */
	p.bar = 1.2;
	expect_verdict("FAITHFUL_RESULT {\"candidate\":" SIDE(5.0, 6.0, 400,
							      0.9999) ",\"verdict\":\"PASS_GATE\"}",
		       &p, VERDICT_BELOW_BAR);
}

#define GOOD_BODY "\"candidate\":" SIDE(4.0, 5.0, 400, 0.9999) BASE ",\"verdict\":\"PASS_GATE\""

static void strict_json(void **state)
{
	(void)state;
	static const struct {
		const char *line;
		size_t len; /* 0: strlen */
		const char *why;
	} bad[] = {
		{"FAITHFUL_RESULT {\"verdict\":\"BELOW_BAR\"," GOOD_BODY "}", 0,
		 "duplicate key \"verdict\""},
		{"FAITHFUL_RESULT {" GOOD_BODY ",\"candidate\":" SIDE(9.0, 9.5, 400, 0.9999) "}", 0,
		 "duplicate key \"candidate\""},
		/* nested duplicate, and one spelled with an escape */
		{"FAITHFUL_RESULT "
		 "{\"candidate\":{\"slowCTA_us\":4,\"wall_us\":5,\"sumCTA_us\":400,\"cos\":1,"
		 "\"cos\":0.1},"
		 "\"verdict\":\"PASS_GATE\"}",
		 0, "duplicate key \"cos\""},
		{"FAITHFUL_RESULT "
		 "{\"verdict\":\"PASS_GATE\",\"x\":{\"a\":1,\"\\u0061\":2}," GOOD_BODY "}",
		 0, "duplicate key"},
		{"FAITHFUL_RESULT {" GOOD_BODY "}{\"verdict\":\"BELOW_BAR\"}", 0, "trailing bytes"},
		{"FAITHFUL_RESULT {" GOOD_BODY "} x", 0, "trailing bytes"},
		{"FAITHFUL_RESULT {" GOOD_BODY ",\"kind\":\"a\xff\"}", 0, "invalid UTF-8"},
		{"FAITHFUL_RESULT {" GOOD_BODY ",\"kind\":\"\xed\xa0\x80\"}", 0,
		 "invalid UTF-8"}, /* surrogate */
		{"FAITHFUL_RESULT {" GOOD_BODY ",\"kind\":\"\xc0\xaf\"}", 0,
		 "invalid UTF-8"}, /* overlong */
		{"FAITHFUL_RESULT {" GOOD_BODY ",\"kind\":\"\xf4\x90\x80\x80\"}", 0,
		 "invalid UTF-8"}, /* > U+10FFFF */
		{"FAITHFUL_RESULT {" GOOD_BODY ",\"k\xff\":1}", 0, "invalid UTF-8"},
		{"FAITHFUL_RESULT {" GOOD_BODY ",\"kind\":\"a\\u0000b\"}", 0, "\\u0000"},
		{"FAITHFUL_RESULT {" GOOD_BODY ",\"kind\":\"\\ud800\"}", 0, "surrogate"},
		{"FAITHFUL_RESULT {" GOOD_BODY ",\"x\":1e999}", 0, "not finite"},
		{"FAITHFUL_RESULT {" GOOD_BODY ",\"x\":NaN}", 0, "unexpected byte"},
		{"FAITHFUL_RESULT {" GOOD_BODY ",\"x\":Infinity}", 0, "unexpected byte"},
		{"FAITHFUL_RESULT {" GOOD_BODY ",\"x\":01}", 0, "expected"},
		{"FAITHFUL_RESULT {" GOOD_BODY ",\"x\":+1}", 0, "unexpected byte"},
		{"FAITHFUL_RESULT {" GOOD_BODY ",\"x\":1.}", 0, "fraction"},
		{"FAITHFUL_RESULT {" GOOD_BODY ",}", 0, "expected a key"},
		{"FAITHFUL_RESULT {" GOOD_BODY ",\"x\":\"a\tb\"}", 0, "control byte"},
		{"FAITHFUL_RESULT {'verdict':'PASS_GATE'}", 0, "expected a key"},
		{"FAITHFUL_RESULT "
		 "{\"a\":"
		 "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
		 "}",
		 0, "nested too deep"},
		{"FAITHFUL_RESULT {" GOOD_BODY "}\0junk",
		 sizeof("FAITHFUL_RESULT {" GOOD_BODY "}\0junk") - 1, "NUL"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		gate_result r;
		size_t n = bad[i].len ? bad[i].len : strlen(bad[i].line);
		judge_expect(&r, bad[i].line, n, NULL, VERDICT_INVALID, bad[i].why);
		assert_null(r.json);
		for (const char *c = r.problems; *c; c++)
			assert_true(*c >= 0x20 && *c < 0x7f);
		gate_result_release(&r);
	}
	/* Blanks around the object are JSON; so is valid UTF-8 and an escaped pair. */
	expect_verdict("FAITHFUL_RESULT  {" GOOD_BODY
		       ",\"kind\":\"caf\xc3\xa9 \xf0\x9f\x9a\x80 \\ud83d\\ude80\"} \r",
		       NULL, VERDICT_PASS_GATE);
}

static void absurd_numbers(void **state)
{
	(void)state;
	static const struct {
		const char *line, *why;
	} bad[] = {
		{"FAITHFUL_RESULT {\"candidate\":" SIDE(4.0, 5.0, 400, 1.5) BASE
		 ",\"verdict\":\"PASS_GATE\"}",
		 "candidate.cos"},
		{"FAITHFUL_RESULT {\"candidate\":" SIDE(4.0, 5.0, 400, -1.01) BASE
		 ",\"verdict\":\"PASS_GATE\"}",
		 "candidate.cos"},
		{"FAITHFUL_RESULT {\"candidate\":" SIDE(
			 4.0, 5.0, 400,
			 0.9999) ",\"baseline_in_tree\":" SIDE(5.5, 6.1, 402.0,
							       2) ",\"verdict\":\"PASS_GATE\"}",
		 "baseline_in_tree.cos"},
		{"FAITHFUL_RESULT {\"candidate\":" SIDE(-4.0, 5.0, 400, 0.9999) BASE
		 ",\"verdict\":\"PASS_GATE\"}",
		 "slowCTA_us"},
		{"FAITHFUL_RESULT {\"candidate\":" SIDE(4.0, 5e9, 400, 0.9999) BASE
		 ",\"verdict\":\"PASS_GATE\"}",
		 "wall_us"},
		{"FAITHFUL_RESULT {\"candidate\":" SIDE(4.0e9, 5e9, 5e9, 0.9999) BASE
		 ",\"verdict\":\"PASS_GATE\"}",
		 "slowCTA_us"},
		/* above 0 but below what any clock resolves: refused, naming the field */
		{"FAITHFUL_RESULT {\"candidate\":" SIDE(5e-324, 5.0, 400, 0.9999) BASE
		 ",\"verdict\":\"PASS_GATE\"}",
		 "candidate.slowCTA_us = 4.94066e-324 is impossible"},
		{"FAITHFUL_RESULT {\"candidate\":" SIDE(4.0, 5.0, 1e-4, 0.9999) BASE
		 ",\"verdict\":\"PASS_GATE\"}",
		 "candidate.sumCTA_us"},
		{"FAITHFUL_RESULT {\"candidate\":" SIDE(-0.0, 5.0, 400, 0.9999) BASE
		 ",\"verdict\":\"PASS_GATE\"}",
		 "candidate.slowCTA_us"},
		{"FAITHFUL_RESULT {\"candidate\":" SIDE(1.797e308, 1.797e308, 1.797e308, 0.9999)
			 BASE ",\"verdict\":\"PASS_GATE\"}",
		 "candidate.slowCTA_us"},
		{"FAITHFUL_RESULT {\"num_workers\":0," GOOD_BODY "}", "num_workers"},
		{"FAITHFUL_RESULT {\"num_workers\":-8," GOOD_BODY "}", "num_workers"},
		{"FAITHFUL_RESULT {\"num_workers\":8.5," GOOD_BODY "}", "whole number"},
		{"FAITHFUL_RESULT {\"num_workers\":1e9," GOOD_BODY "}", "num_workers"},
		{"FAITHFUL_RESULT {\"num_workers\":\"8\"," GOOD_BODY "}",
		 "num_workers is not a finite number"},
		{"FAITHFUL_RESULT {\"num_workers\":8,\"num_active\":9," GOOD_BODY "}",
		 "num_active"},
		{"FAITHFUL_RESULT {\"bar\":0," GOOD_BODY "}", "bar must be positive"},
		{"FAITHFUL_RESULT {\"bar\":-1," GOOD_BODY "}", "bar"},
		{"FAITHFUL_RESULT {\"bar\":\"1.0\"," GOOD_BODY "}", "bar is not a finite number"},
		{"FAITHFUL_RESULT {\"slowCTA_ratio_base_over_cand\":-1.375," GOOD_BODY "}",
		 "slowCTA_ratio"},
		{"FAITHFUL_RESULT {\"kind\":7," GOOD_BODY "}", "kind is not a string"},
		{"FAITHFUL_RESULT {\"verdict\":1,"
		 "\"candidate\":" SIDE(4.0, 5.0, 400, 0.9999) "}",
		 "verdict is not a string"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		gate_result r;
		judge_expect(&r, bad[i].line, strlen(bad[i].line), NULL, VERDICT_INVALID,
			     bad[i].why);
		gate_result_release(&r);
	}
	/* a nanosecond is a span */
	expect_verdict("FAITHFUL_RESULT {\"candidate\":" SIDE(1e-3, 1e-3, 1e-3,
							      0.9999) ",\"verdict\":\"PASS_GATE\"}",
		       NULL, VERDICT_PASS_GATE);
	/* fp32 rounding just above 1 is not absurd. */
	expect_verdict("FAITHFUL_RESULT {\"num_workers\":128,\"num_active\":8,\"candidate\":" SIDE(
			       4.0, 5.0, 400, 1.0000001) BASE ",\"verdict\":\"PASS_GATE\"}",
		       NULL, VERDICT_PASS_GATE);
}

static void utf8_and_cuda(void **state)
{
	(void)state;
	assert_true(bg_utf8_valid("caf\xc3\xa9", 5));
	assert_true(bg_utf8_valid("\xf4\x8f\xbf\xbf", 4));
	assert_false(bg_utf8_valid("\xed\xa0\x80", 3));
	assert_false(bg_utf8_valid("\xe0\x80\x80", 3));
	assert_false(bg_utf8_valid("\xf0\x80\x80\x80", 4));
	assert_false(bg_utf8_valid("\xf4\x90\x80\x80", 4));
	assert_false(bg_utf8_valid("a\0b", 3));
	assert_false(bg_utf8_valid("\xc3", 1));
	const char *yes[] = {
		"RuntimeError: CUDA error: an illegal memory access was encountered",
		"CUDA error at gemv.cu:88 code=700(cudaErrorIllegalAddress)",
		"cupy.cuda.runtime.CUDARuntimeError: cudaErrorLaunchFailure: unspecified launch "
		"failure",
		"CUDA_ERROR_ILLEGAL_ADDRESS",
		"CUBLAS_STATUS_EXECUTION_FAILED",
		"../aten/src/ATen/native/cuda/IndexKernel.cu:92: block: [0,0,0] Assertion failed; "
		"device-side assert triggered",
	};
	const char *no[] = {"no CUDA errors seen", "cudaSuccess", "CUBLAS_STATUS_SUCCESS",
			    "checking cudaError handling: ok"};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		assert_true(gate_line_cuda_error(yes[i], strlen(yes[i])));
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		assert_false(gate_line_cuda_error(no[i], strlen(no[i])));
}

static void clean_exit(void **state)
{
	(void)state;
	assert_true(gate_exit_clean(VERDICT_PASS_GATE, 0));
	assert_false(gate_exit_clean(VERDICT_PASS_GATE, 1));
	assert_false(gate_exit_clean(VERDICT_PASS_GATE, 139));
	assert_true(gate_exit_clean(VERDICT_BELOW_BAR, 1));
	assert_true(gate_exit_clean(VERDICT_INVALID, 125));
	assert_false(gate_exit_clean(VERDICT_BELOW_BAR, 124));
}

/* gate/client/run.c's verdict over a whole run: the agent's report, the result, the exit. */
static gate_outcome exited(int gate_exit, int gate_signal)
{
	gate_outcome o = {0};
	o.status.how = REMOTE_EXITED;
	o.status.code = gate_signal > 0 ? 128 + gate_signal : gate_exit;
	o.agent_end = true;
	o.agent_rc = o.status.code;
	snprintf(o.agent_why, sizeof(o.agent_why), "exited");
	o.gate_exit = gate_signal > 0 ? -1 : gate_exit;
	o.gate_signal = gate_signal > 0 ? gate_signal : -1;
	o.verdict = o.stated = VERDICT_PASS_GATE;
	o.n_results = o.n_gate_results = 1;
	return o;
}

static void outcome_verdicts(void **state)
{
	(void)state;
	char why[700];
	bool said;
	gate_outcome o = exited(0, 0);
	assert_int_equal(gate_outcome_judge(&o, why, sizeof(why), &said), 0);
	assert_true(said);
	/* PASS then a crash: INVALID. */
	o = exited(0, 11);
	assert_int_equal(gate_outcome_judge(&o, why, sizeof(why), &said), 125);
	assert_non_null(strstr(why, "killed by signal 11"));
	assert_false(said);
	o = exited(1, 0);
	assert_int_equal(gate_outcome_exit_code(&o, why, sizeof(why)), 125);
	assert_non_null(strstr(why, "exited 1"));
	o = exited(0, 0);
	o.cuda_error = true;
	assert_int_equal(gate_outcome_exit_code(&o, why, sizeof(why)), 125);
	assert_non_null(strstr(why, "CUDA error"));
	/* BELOW_BAR with the demo gate's exit 1 is clean. */
	o = exited(1, 0);
	o.verdict = o.stated = VERDICT_BELOW_BAR;
	assert_int_equal(gate_outcome_exit_code(&o, why, sizeof(why)), 1);
	/* A gate exiting 124 itself is no timeout; nor is a 75 a busy slot. */
	o = exited(124, 0);
	o.n_results = o.n_gate_results = 0;
	assert_int_equal(gate_outcome_exit_code(&o, why, sizeof(why)), 1);
	o = exited(75, 0);
	o.n_results = o.n_gate_results = 0;
	assert_int_equal(gate_outcome_exit_code(&o, why, sizeof(why)), 1);
	assert_null(strstr(why, "busy"));
	/* The agent refused the slot: the slot it names, held or disabled, never "GPU" for
	 * the CPU slot. */
	o = exited(75, 0);
	o.n_results = o.n_gate_results = 0;
	snprintf(o.agent_why, sizeof(o.agent_why), "busy");
	assert_int_equal(gate_outcome_exit_code(&o, why, sizeof(why)), 1);
	assert_string_equal(why, "the slot is busy (held by another run)");
	snprintf(o.agent_slot, sizeof(o.agent_slot), "cpu");
	gate_outcome_exit_code(&o, why, sizeof(why));
	assert_string_equal(why, "the CPU slot is busy (held by another run)");
	o.slot_disabled = true;
	gate_outcome_exit_code(&o, why, sizeof(why));
	assert_string_equal(why, "the CPU slot is disabled");
	snprintf(o.agent_slot, sizeof(o.agent_slot), "gpu1");
	gate_outcome_exit_code(&o, why, sizeof(why));
	assert_string_equal(why, "the slot gpu1 is disabled");
	/* Exit 124 without the agent's report: refused. */
	o = exited(0, 0);
	o.agent_end = false;
	o.status.code = 124;
	o.n_results = o.n_gate_results = 0;
	assert_int_equal(gate_outcome_exit_code(&o, why, sizeof(why)), 125);
	/* The agent's timeout needs both its line and its exit 124. */
	o = exited(0, 0);
	snprintf(o.agent_why, sizeof(o.agent_why), "timeout");
	o.agent_rc = o.status.code = 124;
	o.verdict = VERDICT_TIMEOUT_HANG;
	o.agent_timeout = true;
	assert_int_equal(gate_outcome_exit_code(&o, why, sizeof(why)), 124);
	o.agent_timeout = false;
	assert_int_equal(gate_outcome_exit_code(&o, why, sizeof(why)), 125);
	o.agent_timeout = true;
	o.status.code = 0; /* the report says 124, the box says 0 */
	assert_int_equal(gate_outcome_exit_code(&o, why, sizeof(why)), 125);
	/* A TIMEOUT_HANG line with an "exited" report. */
	o = exited(0, 0);
	o.agent_timeout = true;
	assert_int_equal(gate_outcome_exit_code(&o, why, sizeof(why)), 125);
	/* A forgery anywhere in the run: INVALID, whatever came last. */
	o = exited(0, 0);
	o.forged = true;
	snprintf(o.forged_why, sizeof(o.forged_why), "forged: x");
	assert_int_equal(gate_outcome_exit_code(&o, why, sizeof(why)), 125);
	assert_non_null(strstr(why, "forged"));
	/* Slot busy only from the agent's report. */
	o = exited(0, 0);
	snprintf(o.agent_why, sizeof(o.agent_why), "busy");
	o.agent_rc = o.status.code = 75;
	o.n_results = o.n_gate_results = 0;
	assert_int_equal(gate_outcome_exit_code(&o, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "busy"));
	/* A gate exiting 0 without a result. */
	o = exited(0, 0);
	o.n_results = o.n_gate_results = 0;
	assert_int_equal(gate_outcome_exit_code(&o, why, sizeof(why)), 125);
	o.status.how = REMOTE_LOST;
	assert_int_equal(gate_outcome_exit_code(&o, why, sizeof(why)), 3);
	o.interrupted = true;
	assert_int_equal(gate_outcome_exit_code(&o, why, sizeof(why)), 130);
}

static void gpu_lists(void **state)
{
	(void)state;
	bool set[BG_MAX_GPUS];
	const char *why;
	assert_true(bg_gpus_parse("0-1", set, &why));
	assert_true(set[0] && set[1] && !set[2]);
	assert_true(bg_gpus_parse(" 3 , 5-6 ", set, &why));
	assert_true(set[3] && set[5] && set[6] && !set[4]);
	const char *bad[] = {"",     "a",  "1-",  "3-1",         "1,",
			     "1;id", "-5", "2.5", "99999999999", "1024"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(bg_gpus_parse(bad[i], set, &why));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pass_gate),      cmocka_unit_test(judged_lines),
		cmocka_unit_test(side_status),    cmocka_unit_test(garbage_kept_verbatim),
		cmocka_unit_test(agent_lines),    cmocka_unit_test(gate_cannot_speak_for_agent),
		cmocka_unit_test(user_bar_wins),  cmocka_unit_test(strict_json),
		cmocka_unit_test(absurd_numbers), cmocka_unit_test(utf8_and_cuda),
		cmocka_unit_test(clean_exit),     cmocka_unit_test(outcome_verdicts),
		cmocka_unit_test(gpu_lists),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
