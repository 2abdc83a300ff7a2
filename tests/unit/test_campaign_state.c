/* campaign/state: the state directory (made private, refused when others can
 * write it), the lock a detached campaign holds, the state file's events read
 * back as JSON, the list of campaigns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/unit.h"
#include "base/error.h"
#include "campaign/state.h"

UNIT_SCRATCH_GROUP("campaign-state")

static char *state_dir(void)
{
	char *xdg = xasprintf("%s/xdg-%d", tmpdir, ++counter);
	setenv("XDG_STATE_HOME", xdg, 1);
	free(xdg);
	bg_err err = {0};
	char *dir = campaign_state_dir(&err);
	if (!dir)
		fail_msg("campaign_state_dir: %s", err.msg);
	return dir;
}

static void dir_is_made_private(void **state)
{
	(void)state;
	char *dir = state_dir();
	struct stat st;
	assert_int_equal(stat(dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 077, 0);
	assert_non_null(strstr(dir, "/boxgate/campaigns"));
	/* others can write it: refused, never used */
	chmod(dir, 0777);
	bg_err err = {0};
	char *again = campaign_state_dir(&err);
	assert_null(again);
	assert_non_null(strstr(err.msg, "others can write it"));
	chmod(dir, 0700);
	free(dir);
	/* a relative XDG_STATE_HOME is ignored for HOME's ~/.local/state */
	setenv("XDG_STATE_HOME", "relative", 1);
	setenv("HOME", home, 1);
	dir = campaign_state_dir(&err);
	assert_non_null(dir);
	char *want = xasprintf("%s/.local/state/boxgate/campaigns", home);
	assert_string_equal(dir, want);
	free(want);
	free(dir);
}

static void lock_is_exclusive_and_seen(void **state)
{
	(void)state;
	char *dir = state_dir();
	bg_err err = {0};
	int fd = -1, fd2 = -1;
	assert_false(campaign_state_running(dir, "a"));
	assert_int_equal(campaign_state_lock(dir, "a", &fd, &err), 0);
	assert_true(campaign_state_running(dir, "a"));
	assert_false(campaign_state_running(dir, "b"));
	assert_int_equal(campaign_state_lock(dir, "a", &fd2, &err), BG_EBUSY);
	assert_non_null(strstr(err.msg, "campaign a is already running detached"));
	/* another process sees it held too */
	pid_t pid = fork();
	if (pid == 0)
		_exit(campaign_state_running(dir, "a") ? 0 : 1);
	int status;
	waitpid(pid, &status, 0);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(fd);
	assert_false(campaign_state_running(dir, "a"));
	assert_int_equal(campaign_state_lock(dir, "a", &fd2, &err), 0);
	close(fd2);
	free(dir);
}

static const char *str_of(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num_of(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	assert_true(cJSON_IsNumber(v));
	return v->valuedouble;
}

static void events_are_written(void **state)
{
	(void)state;
	char *dir = state_dir();
	bg_err err = {0};
	cJSON *o = NULL;
	assert_int_equal(campaign_state_read(dir, "w", &o, &err), BG_ENOTFOUND);
	campaign_state *st = campaign_state_new(dir, "w", "/f.ini", "/r.jsonl", "/w.log");
	campaign_state_begin(st, "0123456789abcdef", 10, 3, 2);
	campaign_state_job_start(st, "h1:gpu0", "w/q_b/8/baseline@aaaaaaaaaaaa/0");
	campaign_state_job_start(st, "h2:gpu0", "w/q_b/64/baseline@aaaaaaaaaaaa/0");
	campaign_state_job_end(st, "w/q_b/8/baseline@aaaaaaaaaaaa/0", true, 2.0);
	campaign_state_job_end(st, "w/never/started", false, 1.0);
	campaign_state_quarantined(st, "h3");
	assert_int_equal(campaign_state_read(dir, "w", &o, &err), 0);
	assert_string_equal(str_of(o, "state"), "running");
	assert_string_equal(str_of(o, "run_id"), "0123456789abcdef");
	assert_int_equal((int)num_of(o, "jobs"), 10);
	assert_int_equal((int)num_of(o, "recorded_before"), 3);
	assert_int_equal((int)num_of(o, "ran"), 1);
	assert_int_equal((int)num_of(o, "cut"), 1);
	assert_int_equal((int)num_of(o, "pid"), (int)getpid());
	assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "left")));
	const cJSON *run = cJSON_GetObjectItemCaseSensitive(o, "running");
	assert_int_equal(cJSON_GetArraySize(run), 1);
	assert_string_equal(str_of(cJSON_GetArrayItem(run, 0), "slot"), "h2:gpu0");
	assert_string_equal(
		cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "quarantined"), 0)
			->valuestring,
		"h3");
	cJSON_Delete(o);
	campaign_state_end(st, "stopped", 1, 6, "no usable slot");
	campaign_state_free(st);
	assert_int_equal(campaign_state_read(dir, "w", &o, &err), 0);
	assert_string_equal(str_of(o, "state"), "stopped");
	assert_string_equal(str_of(o, "why"), "no usable slot");
	assert_int_equal((int)num_of(o, "exit"), 1);
	assert_int_equal((int)num_of(o, "left"), 6);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "running")), 0);
	cJSON_Delete(o);
	/* no temporary file is left beside it */
	char **names;
	size_t n;
	assert_int_equal(campaign_state_list(dir, &names, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(names[0], "w");
	free(names[0]);
	free(names);
	/* a damaged state file is an error that names it, not a crash */
	char *path = campaign_state_path(dir, "w", "json");
	write_text(path, "{\"state\": ");
	assert_int_equal(campaign_state_read(dir, "w", &o, &err), BG_EPROTO);
	assert_non_null(strstr(err.msg, path));
	free(path);
	free(dir);
}

static void list_is_sorted(void **state)
{
	(void)state;
	char *dir = state_dir();
	const char *made[] = {"zeta", "alpha", "m.1"};
	for (size_t i = 0; i < 3; i++) {
		campaign_state *st = campaign_state_new(dir, made[i], "f", "r", "l");
		bg_err err = {0};
		assert_int_equal(campaign_state_write(st, &err), 0);
		campaign_state_free(st);
	}
	char *junk = xasprintf("%s/.hidden.json", dir);
	write_text(junk, "{}");
	free(junk);
	char **names;
	size_t n;
	bg_err err = {0};
	assert_int_equal(campaign_state_list(dir, &names, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(names[0], "alpha");
	assert_string_equal(names[1], "m.1");
	assert_string_equal(names[2], "zeta");
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(dir_is_made_private),
		cmocka_unit_test(lock_is_exclusive_and_seen),
		cmocka_unit_test(events_are_written),
		cmocka_unit_test(list_is_sorted),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
