/* campaign/detach: whether a campaign runs (its lock and what its state says),
 * its records counted in a results file, the detaching fork (the lock taken,
 * output into the log, the first process told the pid), its log copied out, and
 * its stop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/unit.h"
#include "base/error.h"
#include "base/strbuf.h"
#include "campaign/detach.h"
#include "campaign/state.h"

UNIT_SCRATCH_GROUP("campaign-detach")

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

static void liveness(void **state)
{
	(void)state;
	char *dir = state_dir();
	static const struct {
		const char *st; /* NULL: no "state" */
		bool locked;
		const char *want;
	} cases[] = {
		{"running", true, "running"},
		{"starting", true, "starting"},
		{"finished", true, "ending"},
		{"running", false, "died"},
		{"starting", false, "died"},
		{"finished", false, "finished"},
		{"cancelled", false, "cancelled"},
		{NULL, false, "died"},
		{NULL, true, "ending"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int fd = -1;
		bg_err err = {0};
		if (cases[i].locked)
			assert_int_equal(campaign_state_lock(dir, "c1", &fd, &err), 0);
		cJSON *st = cJSON_CreateObject();
		if (cases[i].st)
			cJSON_AddStringToObject(st, "state", cases[i].st);
		const char *got = campaign_liveness(dir, "c1", st);
		if (strcmp(got, cases[i].want) != 0)
			fail_msg("state %s locked %d: %s, wanted %s",
				 cases[i].st ? cases[i].st : "(none)", cases[i].locked, got,
				 cases[i].want);
		cJSON_Delete(st);
		if (fd >= 0)
			close(fd);
	}
	free(dir);
}

static void count_run(void **state)
{
	(void)state;
	char *path = unit_file("results", ".jsonl",
			       "{\"run_id\":\"r1\",\"campaign\":{\"final\":true}}\n"
			       "{\"run_id\":\"r1\",\"campaign\":{\"final\":false}}\n"
			       "{\"run_id\":\"r1\",\"campaign\":{}}\n"
			       "{\"run_id\":\"r1\"}\n"
			       "{\"run_id\":\"r2\",\"campaign\":{\"final\":true}}\n"
			       "{\"run_id\":\"r1\",\"campaign\":\"x\"}\n"
			       "{\"run_id\":\"r1\",\"campaign\":{\"final\":true}}\n");
	size_t final = 9, cut = 9;
	bg_err err = {0};
	assert_int_equal(campaign_count_run(path, "r1", &final, &cut, &err), 0);
	assert_int_equal(final, 2);
	assert_int_equal(cut, 2);
	assert_int_equal(campaign_count_run(path, "none", &final, &cut, &err), 0);
	assert_int_equal(final + cut, 0);
	char *missing = xasprintf("%s/no-such.jsonl", tmpdir);
	campaign_count_run(missing, "r1", &final, &cut, &err);
	assert_int_equal(final + cut, 0);
	free(missing);
	free(path);
}

static void collect(void *ctx, const char *buf, size_t n)
{
	strbuf_add(ctx, buf, n);
}

/* The detached process writes a line to its log, says it runs, and waits to be
 * stopped; the first process gets its pid, the lock is held, a second detach
 * of the same name is refused, the log reads back, and a stop ends it. */
static void detach_and_stop(void **state)
{
	(void)state;
	char *dir = state_dir();
	/* the test's own process must live on: the fork runs in a child of it */
	int back[2];
	assert_int_equal(pipe(back), 0);
	pid_t outer = fork();
	assert_true(outer >= 0);
	if (outer == 0) {
		close(back[0]);
		campaign_detached d;
		bg_err err = {0};
		int rc = campaign_detach_fork(dir, "c2", "camp.ini", "res.jsonl", &d, &err);
		if (rc == 1) {
			close(back[1]);
			printf("detached line\n");
			fflush(stdout);
			campaign_detach_ready(&d);
			alarm(120); /* never outlives a failed test for long */
			for (;;)
				pause(); /* until SIGTERM */
		}
		char msg[64];
		int len = snprintf(msg, sizeof(msg), "%d %ld\n", rc, rc == 0 ? d.pid : 0L);
		if (write(back[1], msg, (size_t)len) != len)
			_exit(3);
		_exit(0);
	}
	close(back[1]);
	char msg[64] = "";
	ssize_t got = read(back[0], msg, sizeof(msg) - 1);
	close(back[0]);
	int status;
	waitpid(outer, &status, 0);
	assert_true(got > 0);
	int rc = -99;
	long pid = 0;
	assert_int_equal(sscanf(msg, "%d %ld", &rc, &pid), 2);
	assert_int_equal(rc, 0);
	assert_true(pid > 1);
	assert_true(campaign_state_running(dir, "c2"));
	/* a second one: refused while the first holds the lock */
	campaign_detached d2;
	bg_err err = {0};
	assert_int_equal(campaign_detach_fork(dir, "c2", "camp.ini", "res.jsonl", &d2, &err),
			 BG_EBUSY);
	strbuf log = STRBUF_INIT;
	assert_int_equal(campaign_log_copy(dir, "c2", false, collect, &log, &err), 0);
	assert_non_null(log.buf);
	assert_non_null(strstr(log.buf, "detached line\n"));
	strbuf_release(&log);
	assert_int_equal(campaign_stop(dir, "c2", pid, &err), 0);
	assert_int_equal(campaign_wait_end(dir, "c2", 60 * 1000L), 0);
	assert_false(campaign_state_running(dir, "c2"));
	/* stopped: nothing more to stop, and a follow copies and returns at once */
	assert_int_equal(campaign_stop(dir, "c2", pid, &err), BG_ENOTFOUND);
	strbuf again = STRBUF_INIT;
	assert_int_equal(campaign_log_copy(dir, "c2", true, collect, &again, &err), 0);
	assert_non_null(strstr(again.buf, "detached line\n"));
	strbuf_release(&again);
	free(dir);
}

static void stop_refusals(void **state)
{
	(void)state;
	char *dir = state_dir();
	bg_err err = {0};
	strbuf out = STRBUF_INIT;
	assert_int_equal(campaign_log_copy(dir, "none", false, collect, &out, &err), BG_ENOTFOUND);
	assert_int_equal(campaign_stop(dir, "none", 12345, &err), BG_ENOTFOUND);
	int fd;
	assert_int_equal(campaign_state_lock(dir, "held", &fd, &err), 0);
	/* running, but its state names no usable pid: never a signal to 0, -1 or 1 */
	assert_int_equal(campaign_stop(dir, "held", 0, &err), BG_EIO);
	assert_non_null(strstr(err.msg, "no pid in its state"));
	assert_int_equal(campaign_stop(dir, "held", -1, &err), BG_EIO);
	assert_int_equal(campaign_stop(dir, "held", 1, &err), BG_EIO);
	assert_int_equal(campaign_wait_end(dir, "held", 200), BG_ETIMEOUT);
	/* a log that is a symlink is not followed */
	char *log = campaign_state_path(dir, "held", "log");
	assert_int_equal(symlink("/etc/passwd", log), 0);
	assert_int_equal(campaign_log_copy(dir, "held", false, collect, &out, &err), BG_EIO);
	assert_null(out.buf);
	free(log);
	close(fd);
	strbuf_release(&out);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(liveness),
		cmocka_unit_test(count_run),
		cmocka_unit_test(detach_and_stop),
		cmocka_unit_test(stop_refusals),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
