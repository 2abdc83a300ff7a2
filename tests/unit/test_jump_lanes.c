/* The choice of a connection to a jump host for one more box behind it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "remote/jump_lanes.h"

/* Eight boxes arriving one after the other once the first lane is up, as
 * remote_jump_connect sees them: the lanes used and when the last channel
 * would be open. */
static int fan_out_cpu(int boxes, int64_t connect_ms, int64_t open_ms, int64_t cpu_ms,
		       bool first_connecting, int64_t elapsed_ms, int *lanes_used)
{
	remote_jump_lane l[4] = {{1, first_connecting, elapsed_ms, open_ms}};
	int n = 1;
	for (int b = 1; b < boxes; b++) {
		int i = remote_jump_lane_choose(l, n, connect_ms, open_ms, cpu_ms, 4);
		if (i < 0) {
			l[n] = (remote_jump_lane){1, true, 0, 0};
			n++;
		} else {
			l[i].pending++;
		}
	}
	*lanes_used = n;
	int64_t last = 0;
	for (int i = 0; i < n; i++) {
		int64_t t = (l[i].connecting ? connect_ms - l[i].elapsed_ms : 0) +
			    l[i].pending * open_ms;
		if (t > last)
			last = t;
	}
	return (int)last;
}

static int fan_out(int boxes, int64_t connect_ms, int64_t open_ms, int *lanes_used)
{
	return fan_out_cpu(boxes, connect_ms, open_ms, 0, false, 0, lanes_used);
}

/* The boxes choose as soon as the first lane's TCP connect is done, its
 * handshake still ahead, from the estimates that round trip gives. */
static void test_early_choice(void **state)
{
	(void)state;
	int64_t connect, open;
	int lanes;
	/* 10 ms each way: a TCP connect of 21 ms. The first lane alone would
	 * queue 8 opens of 43 ms behind its connect: more lanes start now. */
	remote_jump_lane_estimate(21, 21, &connect, &open);
	assert_int_equal(open, 43);
	assert_true(connect > 21 + 4 * 21);
	int last = fan_out_cpu(8, connect, open, REMOTE_JUMP_HANDSHAKE_CPU_MS, true, 21, &lanes);
	assert_true(lanes >= 2);
	assert_true(lanes <= 4);
	assert_true(last < connect - 21 + 8 * open);
	/* next to the jump host (a TCP connect under 1 ms, or a few on a loaded
	 * machine): an open costs next to nothing, one lane serves all */
	for (int64_t rtt = 0; rtt <= 4; rtt++) {
		remote_jump_lane_estimate(rtt, rtt, &connect, &open);
		fan_out_cpu(8, connect, open, REMOTE_JUMP_HANDSHAKE_CPU_MS, true, rtt, &lanes);
		assert_int_equal(lanes, 1);
	}
	/* 30 ms each way: a few lanes, never more than the cap */
	remote_jump_lane_estimate(61, 61, &connect, &open);
	fan_out_cpu(8, connect, open, REMOTE_JUMP_HANDSHAKE_CPU_MS, true, 61, &lanes);
	assert_true(lanes >= 2 && lanes <= 4);
	fan_out_cpu(64, connect, open, REMOTE_JUMP_HANDSHAKE_CPU_MS, true, 61, &lanes);
	assert_int_equal(lanes, 4);
}

static void test_lane_cpu(void **state)
{
	(void)state;
	/* a new lane must beat the shortest queue by its handshake's CPU */
	remote_jump_lane l[1] = {{3, false, 0, 40}};
	assert_int_equal(remote_jump_lane_choose(l, 1, 100, 40, 0, 4), -1);
	assert_int_equal(remote_jump_lane_choose(l, 1, 100, 40, 20, 4), 0);
	assert_int_equal(remote_jump_lane_choose(l, 1, 100, 40, 19, 4), -1);
}

static void test_near_one_lane(void **state)
{
	(void)state;
	int lanes;
	/* 0 ms: an open costs 1 ms, a connection 80 ms: one lane serves all. */
	int last = fan_out(8, 80, 1, &lanes);
	assert_int_equal(lanes, 1);
	assert_int_equal(last, 8);
}

static void test_far_spreads(void **state)
{
	(void)state;
	int lanes;
	/* 10 ms each way: an open 42 ms (the jump host's round trip and its
	 * connect to the box), a connection 180 ms. One lane would finish at
	 * 8 x 42 = 336 ms; spread, the last channel opens sooner. */
	int last = fan_out(8, 180, 42, &lanes);
	assert_true(lanes > 1);
	assert_true(lanes <= 4);
	assert_true(last < 8 * 42);
	/* 32 boxes: the cap holds, and the queue is still shorter than one lane's */
	last = fan_out(32, 180, 42, &lanes);
	assert_int_equal(lanes, 4);
	assert_true(last < 32 * 42 / 2);
}

static void test_choice(void **state)
{
	(void)state;
	/* the shortest queue wins; a connecting lane counts what is left of its connect */
	remote_jump_lane l[3] = {{5, false, 0, 40}, {1, true, 150, 0}, {2, false, 0, 40}};
	assert_int_equal(remote_jump_lane_choose(l, 3, 180, 40, 0, 3), 1);
	l[1].elapsed_ms = 0; /* just started: 180 + 40 */
	assert_int_equal(remote_jump_lane_choose(l, 3, 180, 40, 0, 3), 2);
	/* at the cap, never a new lane however long the queues */
	remote_jump_lane full[2] = {{100, false, 0, 40}, {100, false, 0, 40}};
	assert_int_equal(remote_jump_lane_choose(full, 2, 10, 40, 0, 2), 0);
	assert_int_equal(remote_jump_lane_choose(full, 2, 10, 40, 0, 3), -1);
	/* nothing pending: the lane costs nothing, a zero-cost connect does not beat it */
	remote_jump_lane idle[1] = {{0, false, 0, 40}};
	assert_int_equal(remote_jump_lane_choose(idle, 1, 0, 40, 0, 4), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_near_one_lane), cmocka_unit_test(test_far_spreads),
		cmocka_unit_test(test_choice),        cmocka_unit_test(test_early_choice),
		cmocka_unit_test(test_lane_cpu),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
