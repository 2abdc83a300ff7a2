/* measure/gate_args: a gate invocation for one box from a command's options
 * (--bar, --gpu, --timeout, --holder) and the gate's words through the box's
 * shim: each refusal and its sentence, the timeout's sources in order, the
 * slot's GPUs, the spec gate_run takes; a candidate's baseline run; the
 * worker-count list of a sweep. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <unistd.h>

#include "base/strbuf.h"
#include "measure/gate_args.h"
#include "unit.h"
#include "unit_conf.h"

UNIT_CONF_GROUP("gate-args")

static const char ini[] = "[box g]\nhost = h1\nrepo = /r\ngate = gate.py\ngpus = 0-3,7\n"
			  "gate_timeout_s = 600\n"
			  "allow = --kind --num-workers --baseline\n"
			  "env --slow = MPK_GATE_TIMEOUT_S=0090\n"
			  "env --huge = MPK_GATE_TIMEOUT_S=9999999\n"
			  "[box nogpus]\nhost = h2\nrepo = /r\ngate = gate.py\n"
			  "[box nogate]\nhost = h3\nrepo = /r\n"
			  "[box local]\ntransport = local\n"
			  "[pool p]\nslots = g:0, nogpus\n";

static conf cf;
static gate_agent agent = {.binary = (char *)"/lx/boxgate-agent",
			   .source = (char *)"/lx/boxgate-agent.c",
			   .libexec = (char *)"/lx"};

/* gate_args_build on `box` with --gpu/--bar/--timeout and the words w[0..n). */
static int build(const char *box, const char *gpu, const char *bar, int timeout_s, const char **w,
		 size_t n, gate_args *ga, bg_err *err)
{
	gate_args_in in = {.cmd = "run",
			   .box = box,
			   .gpu = gpu,
			   .bar = bar,
			   .timeout_s = timeout_s,
			   .holder = "tagme",
			   .agent = &agent};
	return gate_args_build(&cf, &in, (char *const *)w, n, ga, err);
}

/* Fails unless build refuses with BG_EUSAGE and a sentence holding `want`. */
static void refused(const char *box, const char *gpu, const char *bar, const char **w, size_t n,
		    const char *want)
{
	gate_args ga;
	bg_err err = {0};
	int rc = build(box, gpu, bar, 0, w, n, &ga, &err);
	gate_args_release(&ga);
	if (rc != BG_EUSAGE || !strstr(err.msg, want))
		fail_msg("rc %d, [%s], wanted [%s]", rc, err.msg, want);
}

static void a_box_and_its_spec(void **state)
{
	(void)state;
	const char *w[] = {"--kind", "demo"};
	gate_args ga;
	bg_err err = {0};
	assert_int_equal(build("g", "7,2-3", "1.25", 0, w, 2, &ga, &err), 0);
	assert_string_equal(ga.box->name, "g");
	assert_string_equal(ga.gpus, "2,3,7"); /* ascending, canonical */
	assert_string_equal(ga.spec.gpus, "2,3,7");
	assert_true(ga.bar == 1.25);
	assert_int_equal(ga.timeout_s, 600); /* the box's gate_timeout_s */
	assert_int_equal(ga.spec.timeout_s, 600);
	assert_string_equal(ga.entry, "gate.py");
	assert_string_equal(ga.spec.box.repo, "/r");
	assert_int_equal(ga.spec.grace_ms, 5000);
	assert_int_equal(ga.spec.heartbeat_ms, 15000);
	assert_non_null(strstr(ga.tag, "tagme tester@"));
	assert_string_equal(ga.agent.binary, "/lx/boxgate-agent");
	gate_args_release(&ga);

	/* --timeout wins over the shim's, the shim's over the box's, in canonical form */
	const char *slow[] = {"--slow"};
	assert_int_equal(build("g", NULL, NULL, 30, slow, 1, &ga, &err), 0);
	assert_int_equal(ga.timeout_s, 30);
	assert_null(ga.gpus);
	gate_args_release(&ga);
	assert_int_equal(build("g", NULL, NULL, 0, slow, 1, &ga, &err), 0);
	assert_int_equal(ga.timeout_s, 90);
	assert_string_equal(ga.shim.env[0], "MPK_GATE_TIMEOUT_S=90");
	gate_args_release(&ga);

	/* the local box without a gate runs the demo gate beside the agent */
	assert_int_equal(build("local", "0", NULL, 0, NULL, 0, &ga, &err), 0);
	assert_string_equal(ga.entry, "/lx/boxgate-demo-gate");
	assert_string_equal(ga.gpus, "0");
	assert_int_equal(ga.timeout_s, 420);
	gate_args_release(&ga);
}

static void refusals(void **state)
{
	(void)state;
	const char *ok[] = {"--kind", "demo"};
	static const char *bars[] = {"0",     "-1", "1e3", "0x2", "inf", "nan",
				     "1.2.3", ".5", "",    " 1",  "1001"};
	for (size_t i = 0; i < sizeof(bars) / sizeof(bars[0]); i++)
		refused("g", NULL, bars[i], ok, 2, "--bar wants a positive ratio");
	refused("nosuch", NULL, NULL, ok, 2, "nosuch");
	refused("g,nogpus", NULL, NULL, ok, 2,
		"run: 'g,nogpus' names several boxes; run takes one");
	const char *bad[] = {"--rm-rf"};
	refused("g", NULL, NULL, bad, 1, "--rm-rf");
	refused("nogate", NULL, NULL, NULL, 0, "run: box nogate has no gate");
	refused("g", "8", NULL, ok, 2, "run: --gpu 8: GPU 8 is not one of box g's gpus (0-3,7)");
	refused("g", "1,1", NULL, ok, 2, "GPU 1 is named twice");
	refused("g", "0-2,2", NULL, ok, 2, "GPU 2 is named twice");
	refused("g", "0, 1", NULL, ok, 2, "blank in the list");
	refused("g", "", NULL, ok, 2, "run: --gpu wants GPU indices");
	refused("g", "x", NULL, ok, 2, "run: --gpu wants GPU indices");
	refused("nogpus", "0", NULL, NULL, 0, "box nogpus lists no gpus");
	const char *huge[] = {"--huge"};
	refused("g", NULL, NULL, huge, 1,
		"run: --huge wants whole seconds from 1 to 604800, got '9999999'");
}

static void a_baseline_run(void **state)
{
	(void)state;
	const char *w[] = {"--kind", "demo"};
	gate_args ga, b;
	bg_err err = {0};
	assert_int_equal(build("g", "3", NULL, 0, w, 2, &ga, &err), 0);
	ga.agent_path = xstrdup("'.cache/boxgate/agent'");
	ga.spec.agent = ga.agent_path;
	ga.spec.lock_wait_s = 17;
	gate_args_in in = {.cmd = "run", .box = "g", .agent = &agent}; /* no --gpu */
	char **bv = NULL, *cmdline = NULL;
	size_t bn = 0;
	assert_int_equal(gate_args_baseline(&cf, &in, &ga, (char *const *)w, 2, &bv, &bn, &b,
					    &cmdline, &err),
			 0);
	assert_int_equal(bn, 3);
	assert_string_equal(bv[2], "--baseline");
	assert_string_equal(b.gpus, "3"); /* the candidate's slot */
	assert_string_equal(b.spec.agent, "'.cache/boxgate/agent'");
	assert_int_equal(b.spec.lock_wait_s, 17);
	assert_non_null(strstr(cmdline, "--baseline"));
	free(cmdline);
	free(bv);
	gate_args_release(&b);

	/* a box that does not allow --baseline: refused, nothing to run */
	gate_args_in in2 = {.cmd = "run", .box = "nogpus", .agent = &agent};
	gate_args c;
	assert_int_equal(gate_args_build(&cf, &in2, (char *const *)w, 0, &c, &err), 0);
	assert_int_equal(gate_args_baseline(&cf, &in2, &c, NULL, 0, &bv, &bn, &b, &cmdline, &err),
			 BG_EUSAGE);
	assert_null(cmdline);
	free(bv);
	gate_args_release(&b);
	gate_args_release(&c);
	gate_args_release(&ga);
}

static int sweep(const char **words, size_t n, gate_sweep *sw)
{
	bg_err err = {0};
	return gate_sweep_read("run", (char *const *)words, n, sw, &err);
}

static void sweep_lists(void **state)
{
	(void)state;
	gate_sweep sw;
	const char *w1[] = {"--kind", "demo", "--num-workers", "8,64,68", "--shape", "q_b"};
	assert_int_equal(sweep(w1, 6, &sw), 0);
	assert_int_equal(sw.n, 3);
	assert_int_equal(sw.counts[0], 8);
	assert_int_equal(sw.counts[2], 68);
	assert_int_equal(sw.at, 3);
	assert_false(sw.equals);
	char *word;
	char **v = gate_sweep_words((char *const *)w1, 6, &sw, 1, &word);
	assert_string_equal(v[3], "64");
	assert_string_equal(v[2], "--num-workers");
	assert_null(v[6]);
	assert_string_equal(w1[3], "8,64,68"); /* the user's words are left alone */
	free(v);
	free(word);

	const char *w2[] = {"--num-workers=4,65536"};
	assert_int_equal(sweep(w2, 1, &sw), 0);
	assert_int_equal(sw.n, 2);
	assert_true(sw.equals);
	v = gate_sweep_words((char *const *)w2, 1, &sw, 1, &word);
	assert_string_equal(v[0], "--num-workers=65536");
	free(v);
	free(word);

	const char *w3[] = {"--kind", "demo", "--num-workers"}; /* no value after it */
	assert_int_equal(sweep(w3, 3, &sw), 0);
	assert_int_equal(sw.n, 0);
	const char *w4[] = {"--num-workers", "12"};
	assert_int_equal(sweep(w4, 2, &sw), 0);
	assert_int_equal(sw.n, 1);
	assert_int_equal(sweep(NULL, 0, &sw), 0);

	static const char *bad[] = {"8,x", "8,8",   "0",  "",     "8,",
				    ",8",  "65537", "-8", "8 ,9", "1000000"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *w[] = {"--num-workers", bad[i]};
		assert_int_equal(sweep(w, 2, &sw), BG_EUSAGE);
		assert_int_equal(sw.n, 0);
	}
	/* at most GATE_SWEEP_MAX counts */
	strbuf s = STRBUF_INIT;
	for (int i = 1; i <= GATE_SWEEP_MAX + 1; i++)
		strbuf_addf(&s, "%s%d", i > 1 ? "," : "", i);
	const char *w5[] = {"--num-workers", s.buf};
	bg_err err = {0};
	assert_int_equal(gate_sweep_read("run", (char *const *)w5, 2, &sw, &err), BG_EUSAGE);
	assert_non_null(strstr(err.msg, "at most 64 counts"));
	strbuf_release(&s);
}

static int group_setup(void **state)
{
	if (setup(state))
		return -1;
	unit_conf_load(&cf, ini);
	return 0;
}

static int group_teardown(void **state)
{
	conf_release(&cf);
	return teardown(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_box_and_its_spec),
		cmocka_unit_test(refusals),
		cmocka_unit_test(a_baseline_run),
		cmocka_unit_test(sweep_lists),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
