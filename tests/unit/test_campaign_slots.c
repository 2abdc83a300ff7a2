/* campaign/slots: a pool's boxes once each in pool order; the slots picked
 * from what each box's agent said (free and held rows taken, others left
 * out and said; a held slot gets no staging partner, a free one gets one; a
 * Slurm box gets max_jobs slots and no partners; the probe's connection goes
 * to the box's first slot; a failed probe quarantines its box, and no box
 * answering is the merged exit code); and where a dry run places jobs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <string.h>

#include "base/exit.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "campaign/slots.h"
#include "unit.h"
#include "unit_conf.h"

UNIT_SCRATCH_GROUP("campaign-slots")

static const char pool_ini[] = "[box g1]\nhost = h1\nrepo = /r\ngpus = 0-3\n"
			       "[box g2]\nhost = h2\nrepo = /r\ngpus = 0,5\n"
			       "[box c1]\nhost = h3\nrepo = /r\n"
			       "[pool p]\nslots = g2:5, g1:0-1, c1, g2:0, g1:3\n";

static void load(conf *c)
{
	unit_conf_load(c, pool_ini);
}

static void pool_boxes_once_in_order(void **state)
{
	(void)state;
	conf c;
	load(&c);
	size_t n = 0;
	sched_box *b = campaign_pool_boxes(&c, "p", &n);
	assert_int_equal(n, 3);
	assert_string_equal(b[0].box->name, "g2");
	assert_string_equal(b[1].box->name, "g1");
	assert_string_equal(b[2].box->name, "c1");
	free(b);
	conf_release(&c);
}

static void configured_slots_for_a_dry_run(void **state)
{
	(void)state;
	conf c;
	load(&c);
	size_t n = 0;
	char **v = campaign_slots_configured(&c, "p", &n);
	const char *want[] = {"g2:gpu5", "g1:gpu0", "g1:gpu1", "c1:cpu", "g2:gpu0", "g1:gpu3"};
	assert_int_equal(n, 6);
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(v[i], want[i]);
		free(v[i]);
	}
	free(v);
	v = campaign_slots_configured(&c, "no-such-pool", &n);
	assert_null(v);
	assert_int_equal(n, 0);
	conf_release(&c);
}

/* What the callbacks said, one line each. */
static void said_box(void *ctx, const conf_box *box, const char *why)
{
	strbuf_addf(ctx, "box %s: %s\n", box->name, why);
}

static void said_slot(void *ctx, const conf_box *box, const char *slot, const char *st,
		      const char *why)
{
	strbuf_addf(ctx, "left %s:%s %s %s\n", box->name, slot, st, why ? why : "-");
}

static void said_held(void *ctx, const conf_box *box, const char *slot, const char *tag)
{
	strbuf_addf(ctx, "held %s:%s %s\n", box->name, slot, tag ? tag : "-");
}

static void picks_free_and_held_slots(void **state)
{
	(void)state;
	conf_box b1 = {.name = "h1"}, b2 = {.name = "h2"},
		 b3 = {.name = "s1", .slurm = true, .max_jobs = 2};
	sched s = {0};
	sched_box boxes[3] = {{.box = &b1}, {.box = &b2}, {.box = &b3}};
	s.boxes = boxes;
	s.n_boxes = 3;
	slot_probe p[3] = {{.box = &b1}, {.box = &b2}, {.box = &b3}};
	p[0].rows = cJSON_Parse("[{\"slot\":\"gpu0\",\"gpu\":0,\"state\":\"free\"},"
				"{\"slot\":\"gpu1\",\"gpu\":1,\"state\":\"held\",\"tag\":\"ann\"},"
				"{\"slot\":\"gpu2\",\"gpu\":2,\"state\":\"disabled\","
				"\"why\":\"fan\"},"
				"{\"slot\":\"gpu3\",\"gpu\":3,\"state\":\"busy\"},"
				"{\"gpu\":4},"
				"{\"slot\":\"cpu\",\"state\":\"free\"}]");
	p[0].conn = (remote_conn *)&b1; /* stands for an open connection */
	p[0].agent_path = xstrdup("/a/boxgate-agent");
	p[1].code = BG_EXIT_CONNECT;
	p[1].error = "h2: connection refused";
	strbuf said = STRBUF_INIT;
	campaign_slots_cb cb = {said_box, said_slot, said_held, &said};
	assert_int_equal(campaign_slots_take(&s, p, 3, &cb), 0);
	assert_string_equal(said.buf, "held h1:gpu1 ann\n"
				      "left h1:gpu2 disabled fan\n"
				      "left h1:gpu3 busy -\n"
				      "left h1:? ? -\n"
				      "box h2: h2: connection refused\n");
	assert_false(boxes[0].quarantined);
	assert_true(boxes[1].quarantined);
	/* h1: gpu0, gpu1 (held), cpu; s1: two Slurm places; partners for gpu0 and cpu */
	assert_int_equal(s.n_groups, 5);
	assert_int_equal(s.n_slots, 7);
	const char *labels[] = {"h1:gpu0",   "h1:gpu1", "h1:cpu", "s1:slurm0",
				"s1:slurm1", "h1:gpu0", "h1:cpu"};
	for (size_t i = 0; i < s.n_slots; i++)
		assert_string_equal(s.slots[i].label, labels[i]);
	assert_string_equal(s.slots[0].gpus, "0");
	assert_string_equal(s.slots[1].gpus, "1");
	assert_null(s.slots[2].gpus);
	assert_null(s.slots[3].gpus);
	assert_string_equal(s.slots[5].gpus, "0");
	assert_ptr_equal(s.slots[0].b, &boxes[0]);
	assert_ptr_equal(s.slots[3].b, &boxes[2]);
	assert_ptr_equal(s.slots[6].b, &boxes[0]);
	/* the first slot took the connection that asked */
	assert_ptr_equal(s.slots[0].conn, &b1);
	assert_string_equal(s.slots[0].agent_path, "/a/boxgate-agent");
	assert_null(p[0].conn);
	assert_null(p[0].agent_path);
	assert_null(s.slots[2].conn);
	/* partners: free slots pair with their twins; held and Slurm ones have none */
	assert_ptr_equal(s.slots[0].partner, &s.slots[5]);
	assert_ptr_equal(s.slots[5].partner, &s.slots[0]);
	assert_ptr_equal(s.slots[2].partner, &s.slots[6]);
	assert_ptr_equal(s.slots[6].partner, &s.slots[2]);
	assert_null(s.slots[1].partner);
	assert_null(s.slots[3].partner);
	assert_null(s.slots[4].partner);
	s.slots[0].conn = NULL; /* not a real connection */
	campaign_slots_release(&s);
	assert_null(s.slots);
	assert_int_equal(s.n_slots, 0);
	cJSON_Delete(p[0].rows);
	strbuf_release(&said);
}

static void no_box_answered(void **state)
{
	(void)state;
	conf_box b1 = {.name = "h1"}, b2 = {.name = "h2"};
	sched_box boxes[2] = {{.box = &b1}, {.box = &b2}};
	sched s = {.boxes = boxes, .n_boxes = 2};
	slot_probe p[2] = {{.box = &b1, .code = BG_EXIT_CONNECT, .error = "refused"},
			   {.box = &b2, .code = BG_EXIT_FAIL, .error = "no agent"}};
	int want = bg_exit_merge(BG_EXIT_CONNECT, BG_EXIT_FAIL);
	assert_int_equal(campaign_slots_take(&s, p, 2, NULL), want);
	assert_true(boxes[0].quarantined && boxes[1].quarantined);
	assert_int_equal(s.n_slots, 0);
	assert_int_equal(s.n_groups, 0);
	campaign_slots_release(&s);

	/* a box that answered with no usable slot is still reached: 0, no slots */
	sched_box one[1] = {{.box = &b1}};
	sched t = {.boxes = one, .n_boxes = 1};
	slot_probe q[1] = {{.box = &b1}};
	q[0].rows = cJSON_Parse("[{\"slot\":\"gpu0\",\"gpu\":0,\"state\":\"busy\"}]");
	assert_int_equal(campaign_slots_take(&t, q, 1, NULL), 0);
	assert_int_equal(t.n_slots, 0);
	campaign_slots_release(&t);
	cJSON_Delete(q[0].rows);

	/* an agent that listed nothing (no rows at all): reached, no slot */
	sched t2 = {.boxes = one, .n_boxes = 1};
	slot_probe q2[1] = {{.box = &b1}};
	assert_int_equal(campaign_slots_take(&t2, q2, 1, NULL), 0);
	assert_int_equal(t2.n_slots, 0);
	campaign_slots_release(&t2);

	/* a probe of a box that is not the campaign's is passed over */
	conf_box stranger = {.name = "x9"};
	sched t3 = {.boxes = one, .n_boxes = 1};
	slot_probe q3[1] = {{.box = &stranger, .code = BG_EXIT_FAIL, .error = NULL}};
	assert_int_equal(campaign_slots_take(&t3, q3, 1, NULL), BG_EXIT_CONNECT);
	assert_false(one[0].quarantined);
	campaign_slots_release(&t3);

	/* a failed probe without a message says "" */
	strbuf said = STRBUF_INIT;
	campaign_slots_cb cb = {said_box, NULL, NULL, &said};
	sched t4 = {.boxes = one, .n_boxes = 1};
	slot_probe q4[1] = {{.box = &b1, .code = BG_EXIT_FAIL}};
	assert_int_equal(campaign_slots_take(&t4, q4, 1, &cb), BG_EXIT_FAIL);
	assert_string_equal(said.buf, "box h1: \n");
	strbuf_release(&said);
	campaign_slots_release(&t4);

	/* nothing asked at all: no box reached */
	sched u = {.boxes = one, .n_boxes = 1};
	one[0].quarantined = false;
	assert_int_equal(campaign_slots_take(&u, NULL, 0, NULL), BG_EXIT_CONNECT);
	campaign_slots_release(&u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pool_boxes_once_in_order),
		cmocka_unit_test(configured_slots_for_a_dry_run),
		cmocka_unit_test(picks_free_and_held_slots),
		cmocka_unit_test(no_box_answered),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
