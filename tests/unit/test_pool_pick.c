/* pool/pick: the slot a gate run takes, over boxes that cannot be reached (a
 * port nothing listens on): each refusal before anything connects (an unknown
 * pool, --gpu beside --pool, an exclusion that leaves no box, a box the
 * command's check refuses), every box of the pool checked in the pool's order,
 * and the sentence run says when no box answers. */
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
#include "pool/pick.h"
#include "unit.h"
#include "unit_conf.h"

UNIT_CONF_GROUP("pool-pick")

/* Port 1 of the loopback address: the connect is refused at once. */
static const char pool_ini[] = "[defaults]\nconnect_timeout_s = 5\n"
			       "[box g1]\nhost = 127.0.0.1\nport = 1\nrepo = /r\ngpus = 0-3\n"
			       "[box g2]\nhost = 127.0.0.1\nport = 1\nrepo = /r\ngpus = 0,5\n"
			       "[pool p]\nslots = g2:5, g1:0-1\n";

/* The boxes check_box saw, in order; it refuses `refuse` (NULL: none). */
static char seen[64];
static const char *refuse;

static int check_box(void *ctx, const conf_box *box)
{
	(void)ctx;
	strncat(seen, box->name, sizeof(seen) - strlen(seen) - 2);
	strcat(seen, " ");
	return refuse && strcmp(box->name, refuse) == 0 ? BG_EXIT_USAGE : 0;
}

static void pick_pool(const pool_pick_in *in, int want, const char *refusal)
{
	pool_line *line = NULL;
	broker_pick pick;
	memset(&pick, 0, sizeof(pick));
	strbuf r = STRBUF_INIT, note = STRBUF_INIT;
	seen[0] = '\0';
	int code = pool_pick_pool(in, &line, &pick, &r, &note);
	if (code != want)
		fail_msg("code %d, wanted %d (%s)", code, want, r.buf ? r.buf : "");
	if (refusal && !strstr(r.buf ? r.buf : "", refusal))
		fail_msg("refusal '%s', wanted '%s'", r.buf ? r.buf : "", refusal);
	if (!refusal)
		assert_int_equal(r.len, 0);
	assert_int_equal(note.len, 0);
	assert_null(pick.box);
	assert_null(line);
	strbuf_release(&r);
	strbuf_release(&note);
}

static void pool_refusals(void **state)
{
	(void)state;
	conf c;
	unit_conf_load(&c, pool_ini);
	gate_agent agent;
	memset(&agent, 0, sizeof(agent));
	remote_connect_opts link = {0};
	volatile sig_atomic_t stop = 0;
	pool_pick_in in = {.cf = &c,
			   .cmd = "run",
			   .pool = "nope",
			   .agent = &agent,
			   .link = &link,
			   .stop = &stop,
			   .check_box = check_box};

	pick_pool(&in, BG_EXIT_USAGE, "run: no pool 'nope' in ");
	assert_string_equal(seen, "");

	in.pool = "p";
	in.gpu = "1";
	pick_pool(&in, BG_EXIT_USAGE, "run: --gpu and --pool exclude each other");
	assert_string_equal(seen, "");

	in.gpu = NULL;
	in.exclude = "g1,g2";
	pick_pool(&in, BG_EXIT_USAGE, "--exclude took every box of pool 'p'");
	assert_string_equal(seen, "");
	in.exclude = "nobox";
	pick_pool(&in, BG_EXIT_USAGE, "nobox");
	assert_string_equal(seen, "");

	/* every box checked in the pool's order; the check's refusal is its own */
	in.exclude = NULL;
	refuse = "g1";
	pick_pool(&in, BG_EXIT_USAGE, NULL);
	assert_string_equal(seen, "g2 g1 ");
	refuse = "g2";
	pick_pool(&in, BG_EXIT_USAGE, NULL);
	assert_string_equal(seen, "g2 ");
	/* a box left out is not checked (nor asked) */
	in.exclude = "g2";
	pick_pool(&in, BG_EXIT_CONNECT, "run: no free slot in pool p:\n  g1: ");
	assert_string_equal(seen, "g1 ");
	refuse = NULL;

	/* checked, then no box answers: run's sentence, a connect failure */
	in.exclude = NULL;
	pick_pool(&in, BG_EXIT_CONNECT, "run: no free slot in pool p:\n  g2: ");
	assert_string_equal(seen, "g2 g1 ");
	in.wait_s = 30;
	pick_pool(&in, BG_EXIT_CONNECT, "run: pool p: cannot join the line on g2: ");

	/* stopped: nothing said */
	in.wait_s = 0;
	stop = 1;
	pick_pool(&in, BG_EXIT_INTERRUPTED, NULL);
	conf_release(&c);
}

static void box_refusals(void **state)
{
	(void)state;
	conf c;
	unit_conf_load(&c, pool_ini);
	gate_agent agent;
	memset(&agent, 0, sizeof(agent));
	remote_connect_opts link = {0};
	pool_pick_in in = {.cf = &c,
			   .cmd = "run",
			   .box = conf_find_box(&c, "g1"),
			   .agent = &agent,
			   .link = &link,
			   .check_box = check_box};
	broker_pick pick;
	memset(&pick, 0, sizeof(pick));
	strbuf r = STRBUF_INIT, note = STRBUF_INIT;

	seen[0] = '\0';
	refuse = "g1";
	assert_int_equal(pool_pick_box(&in, &pick, &r, &note), BG_EXIT_USAGE);
	assert_string_equal(seen, "g1 ");
	assert_int_equal(r.len, 0);

	refuse = NULL;
	assert_int_equal(pool_pick_box(&in, &pick, &r, &note), BG_EXIT_CONNECT);
	assert_non_null(
		strstr(r.buf, "run: no free slot on box g1 (give --gpu to wait for one):\n  g1: "));
	assert_int_equal(note.len, 0);
	assert_null(pick.box);
	strbuf_release(&r);
	strbuf_release(&note);
	conf_release(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pool_refusals),
		cmocka_unit_test(box_refusals),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
