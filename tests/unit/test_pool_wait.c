/* pool/wait: run --pool --wait's engine over boxes that cannot be reached
 * (a port nothing listens on): no line is joined, no slot is taken, and each
 * end says which it is (a place refused, no slot, stopped) with the exit code
 * run returns; and the GPU count of a box's `gpus = ` list. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "base/exit.h"
#include "conf/conf.h"
#include "pool/wait.h"
#include "unit.h"
#include "unit_conf.h"

UNIT_CONF_GROUP("pool-wait")

/* Port 1 of the loopback address: the connect is refused at once. */
static const char pool_ini[] = "[defaults]\nconnect_timeout_s = 5\n"
			       "[box g1]\nhost = 127.0.0.1\nport = 1\nrepo = /r\ngpus = 0-3\n"
			       "[box g2]\nhost = 127.0.0.1\nport = 1\nrepo = /r\ngpus = 0,5\n"
			       "[pool p]\nslots = g2:5, g1:0-1\n";

static void load(conf *c)
{
	unit_conf_load(c, pool_ini);
}

static int n_ahead, n_first;

static void on_ahead(void *ctx, int ahead)
{
	(void)ctx;
	(void)ahead;
	n_ahead++;
}

static void on_first(void *ctx)
{
	(void)ctx;
	n_first++;
}

static void unreachable_pool(void **state)
{
	(void)state;
	conf c;
	load(&c);
	gate_agent agent;
	memset(&agent, 0, sizeof(agent));
	remote_connect_opts link = {0};
	volatile sig_atomic_t stop = 0;
	pool_wait_opts o = {.cf = &c,
			    .pool = "p",
			    .agent = &agent,
			    .link = &link,
			    .wait_s = 0,
			    .stop = &stop,
			    .on_ahead = on_ahead,
			    .on_first = on_first};
	pool_line *line = NULL;
	broker_pick pick;
	memset(&pick, 0, sizeof(pick));
	pool_wait_result r;

	/* no wait: one look at every box, none reached: no slot, a connect failure */
	int code = pool_wait_slot(&o, &line, &pick, &r);
	assert_int_equal(r.end, POOL_WAIT_NO_SLOT);
	assert_int_equal(code, r.code);
	assert_int_equal(code, BG_EXIT_CONNECT);
	assert_null(r.line_box);
	assert_null(line);
	assert_null(pick.box);
	strbuf_release(&r.why);

	/* a wait: the line on the pool's first box (g2) cannot be joined */
	o.wait_s = 30;
	code = pool_wait_slot(&o, &line, &pick, &r);
	assert_int_equal(r.end, POOL_WAIT_JOIN_FAILED);
	assert_int_equal(code, BG_EXIT_CONNECT);
	assert_string_equal(r.line_box, "g2");
	assert_true(r.err.msg[0] != '\0');
	assert_null(line);
	strbuf_release(&r.why);

	/* stopped before it begins: the interrupted exit code, no slot */
	o.wait_s = 0;
	stop = 1;
	code = pool_wait_slot(&o, &line, &pick, &r);
	assert_int_equal(r.end, POOL_WAIT_STOPPED);
	assert_int_equal(code, BG_EXIT_INTERRUPTED);
	assert_null(pick.box);
	strbuf_release(&r.why);

	/* a pool that does not exist: no line, the broker says no */
	stop = 0;
	o.pool = "nope";
	o.wait_s = 5;
	code = pool_wait_slot(&o, &line, &pick, &r);
	assert_int_equal(r.end, POOL_WAIT_NO_SLOT);
	assert_true(code != 0);
	assert_null(r.line_box);
	strbuf_release(&r.why);
	assert_int_equal(n_ahead, 0);
	conf_release(&c);
}

static void gpu_count(void **state)
{
	(void)state;
	static const struct {
		const char *gpus;
		int n;
	} cases[] = {
		{NULL, 0},   {"", 0},
		{"0", 1},    {"0-3", 4},
		{"0,5", 2},  {"0-3,2", 4},
		{"x", 0},    {"3-1", 0},
		{"-1", 0},   {"1023", 1},
		{"1024", 0}, {"0-1023", 1024},
		{"0,,1", 0}, {"99999999999999999999", 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int n = pool_gpu_count(cases[i].gpus);
		if (n != cases[i].n)
			fail_msg("'%s': %d, wanted %d", cases[i].gpus ? cases[i].gpus : "NULL", n,
				 cases[i].n);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(unreachable_pool),
		cmocka_unit_test(gpu_count),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
