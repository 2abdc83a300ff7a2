/* pool/: a pool's probes from the configuration (a box's slot lists joined, in
 * the pool's order, --exclude honoured), the agent's words for each probe, its
 * slot rows with the pool's `disabled` slots marked, a Slurm box's rows, the
 * broker's first-come choice of the first free slot in pool order (and why
 * none was free), and the line's queue command and lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include <unistd.h>

#include "base/exit.h"
#include "conf/conf.h"
#include "pool/broker.h"
#include "pool/line.h"
#include "pool/slot_probe.h"
#include "unit.h"
#include "unit_conf.h"

UNIT_CONF_GROUP("pool")

static const char pool_ini[] = "[box g1]\nhost = h1\nrepo = /r\ngpus = 0-3\n"
			       "[box g2]\nhost = h2\nrepo = /r\ngpus = 0,5\n"
			       "[box c1]\nhost = h3\nrepo = /r\n"
			       "[pool p]\nslots = g2:5, g1:0-1, c1, g2:0, g1:3\n"
			       "disabled = g1:1 c1\ndisabled_why = broken fan\n";

static void load(conf *c)
{
	unit_conf_load(c, pool_ini);
}

static void probes_of_a_pool(void **state)
{
	(void)state;
	conf c;
	load(&c);
	bg_err err = {0};
	size_t n = 0;
	slot_probe *p = slot_probe_pool(&c, "p", NULL, &n, &err);
	assert_non_null(p);
	/* one probe per box, in the order the pool first names it, its GPUs joined */
	assert_int_equal(n, 3);
	assert_string_equal(p[0].box->name, "g2");
	assert_string_equal(p[0].gpus, "5,0");
	assert_string_equal(p[1].box->name, "g1");
	assert_string_equal(p[1].gpus, "0-1,3");
	assert_string_equal(p[2].box->name, "c1");
	assert_null(p[2].gpus); /* a CPU box: what the agent sees */
	assert_ptr_equal(p[0].pool, conf_find_pool(&c, "p"));
	slot_probe_release(p, n);

	p = slot_probe_pool(&c, "p", "g2", &n, &err);
	assert_non_null(p);
	assert_int_equal(n, 2);
	assert_string_equal(p[0].box->name, "g1");
	slot_probe_release(p, n);

	/* refusals name what is wrong; nothing is printed */
	assert_null(slot_probe_pool(&c, "nope", NULL, &n, &err));
	assert_non_null(strstr(err.msg, "no pool 'nope' in "));
	assert_null(slot_probe_pool(&c, "p", "g1,g2,c1", &n, &err));
	assert_string_equal(err.msg, "the selection matched no box (--exclude took every box "
				     "of pool 'p')");
	assert_null(slot_probe_pool(&c, "p", "zz", &n, &err));
	assert_non_null(strstr(err.msg, "zz"));
	conf_release(&c);
}

static void agent_words(void **state)
{
	(void)state;
	slot_probe p = {.gpus = "0,1"};
	char *a = slot_probe_agent_args(&p, "me@here");
	assert_string_equal(a, "slots --gpus 0,1");
	free(a);
	p = (slot_probe){.action = "slot-disable", .gpus = "3", .why = "it's hot; reboot"};
	a = slot_probe_agent_args(&p, "a b@c");
	assert_string_equal(a, "slot-disable --gpus 3 --why 'it'\\''s hot; reboot' --by 'a b@c'");
	free(a);
	char *who = slot_probe_who();
	assert_non_null(strchr(who, '@'));
	free(who);
}

static const char *row_str(const cJSON *row, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void rows_with_the_pool_disabled(void **state)
{
	(void)state;
	conf c;
	load(&c);
	const conf_pool *pool = conf_find_pool(&c, "p");
	slot_probe g1 = {.box = conf_find_box(&c, "g1"), .pool = pool};
	char out[] = "{\"slot\":\"gpu0\",\"gpu\":0,\"state\":\"free\"}\n"
		     "not json\n"
		     "{\"slot\":\"gpu1\",\"gpu\":1,\"state\":\"free\"}\n"
		     "[1,2]\n"
		     "{\"slot\":\"gpu3\",\"gpu\":3,\"state\":\"held\",\"tag\":\"x\"}";
	cJSON *rows = slot_probe_rows(out, &g1);
	assert_int_equal(cJSON_GetArraySize(rows), 3);
	const cJSON *r1 = cJSON_GetArrayItem(rows, 1);
	assert_string_equal(row_str(r1, "state"), "disabled");
	assert_string_equal(row_str(r1, "why"), "broken fan");
	assert_non_null(strstr(row_str(r1, "disabled_by"), "pool p in "));
	assert_string_equal(row_str(cJSON_GetArrayItem(rows, 0), "state"), "free");
	/* a held slot the pool disables stays held (its state is the lock's) */
	const cJSON *r2 = cJSON_GetArrayItem(rows, 2);
	assert_string_equal(row_str(r2, "state"), "held");
	cJSON_Delete(rows);
	/* "c1" names c1's cpu slot, and no GPU slot of a box named like it */
	slot_probe c1 = {.box = conf_find_box(&c, "c1"), .pool = pool};
	char cpu[] =
		"{\"slot\":\"cpu\",\"state\":\"free\"}\n{\"slot\":\"gpu1\",\"state\":\"free\"}\n";
	rows = slot_probe_rows(cpu, &c1);
	assert_string_equal(row_str(cJSON_GetArrayItem(rows, 0), "state"), "disabled");
	assert_string_equal(row_str(cJSON_GetArrayItem(rows, 1), "state"), "free");
	cJSON_Delete(rows);
	conf_release(&c);
}

static void slurm_rows(void **state)
{
	(void)state;
	remote_slurm_job jobs[] = {
		{"7", "RUNNING", "gpu:1", "n1", "0:10", "alice", "boxgate-a"},
		{"8", "PENDING", "gpu:1", "(Resources)", "0:00", "bob", "boxgate-b"},
		{"9", "COMPLETING", "gpu:1", "n2", "0:05", "carol", "boxgate-c"},
	};
	cJSON *rows = slot_probe_slurm_rows(jobs, 3, 5);
	assert_int_equal(cJSON_GetArraySize(rows), 5);
	assert_string_equal(row_str(cJSON_GetArrayItem(rows, 0), "slot"), "slurm:7");
	assert_string_equal(row_str(cJSON_GetArrayItem(rows, 0), "state"), "held");
	assert_string_equal(row_str(cJSON_GetArrayItem(rows, 1), "state"), "pending");
	assert_string_equal(row_str(cJSON_GetArrayItem(rows, 2), "state"), "COMPLETING");
	assert_string_equal(row_str(cJSON_GetArrayItem(rows, 1), "tag"), "bob");
	assert_string_equal(row_str(cJSON_GetArrayItem(rows, 3), "slot"), "slurm3");
	assert_string_equal(row_str(cJSON_GetArrayItem(rows, 4), "state"), "free");
	cJSON_Delete(rows);
	/* more steps than places: no free place, none negative */
	rows = slot_probe_slurm_rows(jobs, 3, 2);
	assert_int_equal(cJSON_GetArraySize(rows), 3);
	cJSON_Delete(rows);
}

static cJSON *rows_of(const char *json)
{
	cJSON *r = cJSON_Parse(json);
	assert_non_null(r);
	return r;
}

static void broker_first_free_in_order(void **state)
{
	(void)state;
	conf c;
	load(&c);
	slot_probe p[3] = {
		{.box = conf_find_box(&c, "g2")},
		{.box = conf_find_box(&c, "g1")},
		{.box = conf_find_box(&c, "c1")},
	};
	p[0].rows = rows_of("[{\"slot\":\"gpu5\",\"gpu\":5,\"state\":\"held\",\"tag\":\"t1\","
			    "\"since\":\"10:00\"},{\"slot\":\"gpu0\",\"gpu\":0,\"state\":"
			    "\"disabled\",\"why\":\"fan\"}]");
	p[1].rows = rows_of("[{\"slot\":\"gpu0\",\"gpu\":0,\"state\":\"busy\",\"procs\":[{\"pid\":"
			    "42,\"name\":\"python\"}]},{\"slot\":\"gpu1\",\"gpu\":1,\"state\":"
			    "\"free\"}]");
	p[2].rows = rows_of("[{\"slot\":\"cpu\",\"state\":\"free\"}]");
	broker_pick pick = {0};
	strbuf why = STRBUF_INIT;
	assert_int_equal(broker_choose(p, 3, &pick, &why), BG_EXIT_OK);
	/* the first free slot in pool order, not the first free box */
	assert_string_equal(pick.box->name, "g1");
	assert_string_equal(pick.slot, "gpu1");
	assert_string_equal(pick.gpus, "1");
	assert_string_equal(why.buf, "\n  g2:gpu5 held by t1 since 10:00\n  g2:gpu0 disabled: fan"
				     "\n  g1:gpu0 busy: compute process pid 42 (python)");
	broker_pick_release(&pick);
	strbuf_release(&why);

	/* none free: FAIL, every slot said */
	cJSON_Delete(p[1].rows);
	p[1].rows = rows_of("[]");
	cJSON_Delete(p[2].rows);
	p[2].rows = NULL;
	p[2].code = BG_EXIT_CONNECT;
	p[2].error = xstrdup("c1: connect: refused");
	why = (strbuf)STRBUF_INIT;
	assert_int_equal(broker_choose(p, 3, &pick, &why), BG_EXIT_FAIL);
	assert_null(pick.box);
	assert_non_null(strstr(why.buf, "\n  c1: c1: connect: refused"));
	strbuf_release(&why);

	/* no box could be asked: the most serious box error */
	for (int i = 0; i < 2; i++) {
		cJSON_Delete(p[i].rows);
		p[i].rows = NULL;
		p[i].code = i ? BG_EXIT_USAGE : BG_EXIT_CONNECT;
		p[i].error = xstrdup("down");
	}
	why = (strbuf)STRBUF_INIT;
	int code = broker_choose(p, 3, &pick, &why);
	assert_int_equal(code, bg_exit_merge(BG_EXIT_CONNECT, BG_EXIT_USAGE));
	strbuf_release(&why);
	for (int i = 0; i < 3; i++)
		free(p[i].error);
	conf_release(&c);
}

static void broker_passes_over_boxes_not_asked(void **state)
{
	(void)state;
	conf c;
	load(&c);
	/* the first box had a free slot, so the others were not asked */
	slot_probe p[2] = {{.box = conf_find_box(&c, "g2")}, {.box = conf_find_box(&c, "g1")}};
	p[0].rows = rows_of("[{\"slot\":\"cpu\",\"state\":\"free\"}]");
	broker_pick pick = {0};
	strbuf why = STRBUF_INIT;
	assert_int_equal(broker_choose(p, 2, &pick, &why), BG_EXIT_OK);
	assert_string_equal(pick.slot, "cpu");
	assert_null(pick.gpus); /* a CPU slot */
	assert_int_equal(why.len, 0);
	broker_pick_release(&pick);
	strbuf_release(&why);
	/* an empty pool */
	why = (strbuf)STRBUF_INIT;
	assert_int_equal(broker_choose(p, 0, &pick, &why), BG_EXIT_FAIL);
	assert_string_equal(why.buf, "\n  (the pool lists no slot)");
	strbuf_release(&why);
	cJSON_Delete(p[0].rows);
	conf_release(&c);
}

static void line_lines(void **state)
{
	(void)state;
	int ahead = -1;
	assert_int_equal(pool_line_parse("ahead 3", 7, &ahead), 0);
	assert_int_equal(ahead, 3);
	assert_int_equal(pool_line_parse("ahead 0", 7, &ahead), 0);
	assert_int_equal(ahead, 0);
	ahead = 5;
	assert_int_equal(pool_line_parse("head", 4, &ahead), 1);
	assert_int_equal(ahead, 0);
	/* never less than nothing, nor more than an int, nor a count with junk */
	ahead = 7;
	assert_int_equal(pool_line_parse("ahead -1", 8, &ahead), -1);
	assert_int_equal(pool_line_parse("ahead 99999999999", 17, &ahead), -1);
	assert_int_equal(pool_line_parse("ahead 3x", 8, &ahead), -1);
	assert_int_equal(pool_line_parse("ahead ", 6, &ahead), -1);
	assert_int_equal(pool_line_parse("heads", 5, &ahead), -1);
	assert_int_equal(pool_line_parse("ticket 4", 8, &ahead), -1);
	/* only len bytes count: "head" then more that is no part of the line */
	assert_int_equal(pool_line_parse("head and more", 4, &ahead), 1);
	assert_int_equal(pool_line_parse("ahead 12345", 7, &ahead), 0);
	assert_int_equal(ahead, 1);
	char *cmd = pool_line_cmd("'/a b/agent'", "p o'ol", NULL);
	assert_string_equal(cmd, "'/a b/agent' queue --name 'p o'\\''ol' --heartbeat 15");
	free(cmd);
	cmd = pool_line_cmd("agent", "p", "me@h:1 $(x)");
	assert_string_equal(cmd, "agent queue --name p --heartbeat 15 --tag 'me@h:1 $(x)'");
	free(cmd);
	cmd = pool_line_list_args("p;q");
	assert_string_equal(cmd, "queue-list --name 'p;q'");
	free(cmd);
}

/* The waiters of a queue-list: the agent's order, positions counted here,
 * lines that are not tickets skipped. */
static void line_waiters(void **state)
{
	(void)state;
	cJSON *w = pool_line_waiters("{\"ticket\":4,\"position\":1,\"pid\":9,\"tag\":\"a@h:1\","
				     "\"since\":\"T\"}\nnoise\n{\"position\":7}\n[1]\n"
				     "{\"ticket\":9,\"position\":-3,\"pid\":null,\"tag\":\"\"}");
	assert_int_equal(cJSON_GetArraySize(w), 2);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(w, 0), "position")->valueint, 1);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(w, 1), "position")->valueint, 2);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(w, 1), "ticket")->valueint, 9);
	cJSON_Delete(w);
	w = pool_line_waiters("");
	assert_int_equal(cJSON_GetArraySize(w), 0);
	cJSON_Delete(w);
	w = pool_line_waiters(NULL);
	assert_int_equal(cJSON_GetArraySize(w), 0);
	cJSON_Delete(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(probes_of_a_pool),
		cmocka_unit_test(agent_words),
		cmocka_unit_test(rows_with_the_pool_disabled),
		cmocka_unit_test(slurm_rows),
		cmocka_unit_test(broker_first_free_in_order),
		cmocka_unit_test(broker_passes_over_boxes_not_asked),
		cmocka_unit_test(line_lines),
		cmocka_unit_test(line_waiters),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
