/* campaign/holders and pool/lines, what `boxgate slots` adds to the agents'
 * rows: the campaign holding a slot from its lock's tag, and for a campaign
 * this client runs detached, its state file's job on that slot; each pool's
 * first-come line, or why it was not read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include <unistd.h>

#include "base/json.h"
#include "campaign/holders.h"
#include "campaign/state.h"
#include "conf/conf.h"
#include "pool/lines.h"
#include "unit.h"
#include "unit_conf.h"

static int setup(void **state)
{
	(void)state;
	if (unit_tmpdir_make("holders") < 0)
		return -1;
	setenv("HOME", home, 1);
	setenv("USER", "tester", 1);
	unsetenv("XDG_STATE_HOME");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unit_tmpdir_remove();
	return 0;
}

static const char ini[] = "[box g1]\nhost = h1\nrepo = /r\ngpus = 0-3\n"
			  "[box g2]\nhost = h2\nrepo = /r\ngpus = 0-1\n"
			  "[pool p]\nslots = g1:0-1, g2:0\n"
			  "[pool q]\nslots = g2:1\n";

static cJSON *row(const char *slot, const char *state, const char *tag)
{
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "slot", slot);
	cJSON_AddStringToObject(r, "state", state);
	if (tag)
		cJSON_AddStringToObject(r, "tag", tag);
	return r;
}

static void campaigns_holding_slots(void **state)
{
	(void)state;
	conf c;
	unit_conf_load(&c, ini);
	/* campaign w13 runs detached here: its lock held, its state naming a job */
	bg_err err = {0};
	char *dir = campaign_state_dir(&err);
	assert_non_null(dir);
	int fd = -1;
	assert_int_equal(campaign_state_lock(dir, "w13", &fd, &err), 0);
	campaign_state *st = campaign_state_new(dir, "w13", "w13.ini", "w13.jsonl", "w13.log");
	campaign_state_begin(st, "0123456789abcdef", 4, 0, 2);
	campaign_state_job_start(st, "g1:1", "w13/q_b/8/fast@abc/1");

	slot_probe jobs[1] = {{.box = conf_find_box(&c, "g1")}};
	jobs[0].rows = cJSON_CreateArray();
	cJSON_AddItemToArray(jobs[0].rows, row("0", "held", "campaign:old user@h:9"));
	cJSON_AddItemToArray(jobs[0].rows, row("1", "held", "campaign:w13 tester@here:4"));
	cJSON_AddItemToArray(jobs[0].rows, row("2", "held", "alice@h:3"));
	cJSON_AddItemToArray(jobs[0].rows, row("3", "free", "campaign:w13 x"));
	cJSON *more = cJSON_CreateArray();
	cJSON_AddItemToArray(more, row("0", "held", "campaign:../etc x"));
	cJSON_AddItemToArray(more, row("1", "held", "campaign: x"));
	cJSON_AddItemToArray(more, row("2", "held", NULL));
	cJSON *r;
	cJSON_ArrayForEach(r, more) cJSON_AddItemReferenceToArray(jobs[0].rows, r);
	campaign_note_holders(jobs, 1);

	const cJSON *r0 = cJSON_GetArrayItem(jobs[0].rows, 0);
	assert_string_equal(bg_json_str(r0, "campaign"), "old"); /* not running here */
	assert_null(cJSON_GetObjectItem(r0, "campaign_detached"));
	const cJSON *r1 = cJSON_GetArrayItem(jobs[0].rows, 1);
	assert_string_equal(bg_json_str(r1, "campaign"), "w13");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r1, "campaign_detached")));
	assert_string_equal(bg_json_str(r1, "campaign_job"), "w13/q_b/8/fast@abc/1");
	/* no campaign's tag, a free slot */
	assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(jobs[0].rows, 2), "campaign"));
	assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(jobs[0].rows, 3), "campaign"));
	/* a name from the box is never a path here: named, never looked up */
	const cJSON *r4 = cJSON_GetArrayItem(jobs[0].rows, 4);
	assert_string_equal(bg_json_str(r4, "campaign"), "../etc");
	assert_null(cJSON_GetObjectItem(r4, "campaign_detached"));
	assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(jobs[0].rows, 5), "campaign"));
	assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(jobs[0].rows, 6), "campaign"));

	cJSON_Delete(jobs[0].rows);
	cJSON_Delete(more);
	campaign_state_free(st);
	close(fd);
	free(dir);
	conf_release(&c);
}

static void pool_lines(void **state)
{
	(void)state;
	conf c;
	unit_conf_load(&c, ini);
	gate_agent agent = {0};
	/* g1 answered but kept no connection; g2 failed */
	slot_probe jobs[2] = {{.box = conf_find_box(&c, "g1")},
			      {.box = conf_find_box(&c, "g2"), .code = 3, .error = "refused"}};
	/* every pool: only those whose first box answered */
	cJSON *l = pool_lines_read(&c, NULL, jobs, 2, &agent);
	assert_int_equal(cJSON_GetArraySize(l), 1);
	const cJSON *o = cJSON_GetArrayItem(l, 0);
	assert_string_equal(bg_json_str(o, "pool"), "p");
	assert_string_equal(bg_json_str(o, "box"), "g1");
	assert_string_equal(bg_json_str(o, "error"), "not reached");
	cJSON_Delete(l);
	/* one pool named: its line, or why not */
	l = pool_lines_read(&c, "q", jobs, 2, &agent);
	assert_int_equal(cJSON_GetArraySize(l), 1);
	assert_string_equal(bg_json_str(cJSON_GetArrayItem(l, 0), "error"), "refused");
	cJSON_Delete(l);
	l = pool_lines_read(&c, "q", jobs, 1, &agent);
	assert_string_equal(bg_json_str(cJSON_GetArrayItem(l, 0), "error"),
			    "its first box was not listed");
	cJSON_Delete(l);
	l = pool_lines_read(&c, "nosuch", jobs, 2, &agent);
	assert_int_equal(cJSON_GetArraySize(l), 0);
	cJSON_Delete(l);
	conf_release(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(campaigns_holding_slots),
		cmocka_unit_test(pool_lines),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
