/* sync's words and JSON for results: state keys fit JSON (no spaces, one per
 * state), manifest lines are read as run records read them, and a file
 * push created (listed, no .bak) says so in status's JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "sync/sync.h"

static void test_state_keys(void **state)
{
	(void)state;
	for (int s = 0; s < SYNC_STATE_COUNT; s++) {
		const char *k = sync_state_key((sync_state)s);
		assert_non_null(k);
		assert_true(strlen(k) > 0);
		for (const char *c = k; *c; c++)
			assert_true((*c >= 'a' && *c <= 'z') || *c == '_');
		for (int t = 0; t < s; t++)
			assert_string_not_equal(k, sync_state_key((sync_state)t));
	}
	assert_string_equal(sync_state_key(SYNC_ROLLED_BACK), "rolled_back");
	assert_string_equal(sync_state_key(SYNC_NO_LOCAL), "no_local_file");
	assert_string_equal(sync_state_key(SYNC_WOULD_UPDATE), "would_update");
	/* People keep their words. */
	assert_string_equal(sync_state_name(SYNC_ROLLED_BACK), "rolled back");
	assert_string_equal(sync_state_name(SYNC_NO_LOCAL), "no local file");
}

#define SHA_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_manifest_lines(void **state)
{
	(void)state;
	sync_manifest_entry e;
	const char *ok = SHA_A "\t1733353200\tscripts/a b.py";
	assert_true(sync_manifest_line(ok, strlen(ok), &e));
	assert_string_equal(e.sha, SHA_A);
	assert_int_equal(e.epoch, 1733353200);
	assert_int_equal(e.path_len, strlen("scripts/a b.py"));
	assert_memory_equal(e.path, "scripts/a b.py", e.path_len);
	static const char *const bad[] = {
		"x",
		SHA_A "\t12",                          /* no path */
		SHA_A "\tsoon\tscripts/c.py",          /* not a time */
		SHA_A "\t\tscripts/c.py",              /* no time */
		SHA_A "\t1\t",                         /* empty path */
		SHA_A "\t9999999999999\tscripts/c.py", /* 13 digits */
		SHA_A "\t253402300800\tscripts/c.py",  /* after year 9999 */
		"0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef\t1\tp",
		"0123\t1\tp",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(sync_manifest_line(bad[i], strlen(bad[i]), &e));
	sync_manifest_entry *all = NULL;
	size_t n = sync_manifest_parse("x\n" SHA_A "\t1\ta.py\n\n" SHA_A "\t2\tdir/b.py", &all);
	assert_int_equal(n, 2);
	assert_memory_equal(all[0].path, "a.py", 4);
	assert_int_equal(all[1].epoch, 2);
	assert_memory_equal(all[1].path, "dir/b.py", 8);
	free(all);
	assert_int_equal(sync_manifest_parse("", &all), 0);
	free(all);
}

/* One status result as status's JSON writes it. */
static cJSON *status_json(bool pushed, sync_ftype bak)
{
	static sync_target box = {.name = "h1"};
	static sync_item item = {.rel = "scripts/new.py", .sha = SHA_A};
	static sync_plan plan;
	static sync_file file;
	static sync_box b;
	plan = (sync_plan){.items = &item, .n = 1};
	file = (sync_file){.state = SYNC_SAME,
			   .rtype = SYNC_FT_FILE,
			   .btype = bak,
			   .pushed = pushed,
			   .pushed_sha = SHA_A,
			   .pushed_at = 86400};
	memcpy(file.rsha, SHA_A, sizeof(file.rsha));
	b = (sync_box){.box = &box, .plan = &plan, .files = &file};
	return sync_file_json(&b, 0);
}

static void test_status_json(void **state)
{
	(void)state;
	cJSON *o = status_json(true, SYNC_FT_MISSING);
	assert_string_equal(cJSON_GetObjectItem(o, "state")->valuestring, "same");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "pushed")));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "created_by_push")));
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(o, "bak")));
	assert_string_equal(cJSON_GetObjectItem(o, "pushed_at")->valuestring,
			    "1970-01-02T00:00:00Z");
	assert_string_equal(cJSON_GetObjectItem(o, "pushed_sha256")->valuestring, SHA_A);
	/* Every key is a word of letters, digits and underscores. */
	for (cJSON *k = o->child; k; k = k->next)
		assert_int_equal(strspn(k->string, "abcdefghijklmnopqrstuvwxyz0123456789_"),
				 strlen(k->string));
	cJSON_Delete(o);
	o = status_json(true, SYNC_FT_FILE);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "pushed")));
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(o, "created_by_push")));
	cJSON_Delete(o);
	o = status_json(false, SYNC_FT_MISSING);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(o, "pushed")));
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(o, "created_by_push")));
	assert_null(cJSON_GetObjectItem(o, "pushed_at"));
	cJSON_Delete(o);
}

static void test_describe_created(void **state)
{
	(void)state;
	static sync_target box = {.name = "h1"};
	sync_item item = {.rel = "scripts/new.py", .sha = SHA_A, .local = "/x"};
	sync_plan plan = {.items = &item, .n = 1};
	sync_file file = {.state = SYNC_SAME,
			  .rtype = SYNC_FT_FILE,
			  .btype = SYNC_FT_MISSING,
			  .pushed = true,
			  .pushed_sha = SHA_A};
	memcpy(file.rsha, SHA_A, sizeof(file.rsha));
	sync_box b = {.box = &box, .plan = &plan, .files = &file};
	char *line = sync_file_describe(&b, 0);
	assert_non_null(strstr(line, "scripts/new.py: same ("));
	assert_non_null(strstr(line, "created by push, no .bak"));
	free(line);
	/* Changed on the box since: both said. */
	file.rsha[0] = 'f';
	file.state = SYNC_DIFFERS;
	line = sync_file_describe(&b, 0);
	assert_non_null(strstr(line, "differs ("));
	assert_non_null(strstr(line, "changed on the box since push placed 0123456789ab"));
	free(line);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_keys),
		cmocka_unit_test(test_manifest_lines),
		cmocka_unit_test(test_status_json),
		cmocka_unit_test(test_describe_created),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
