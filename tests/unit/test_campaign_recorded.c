/* campaign/recorded: what earlier runs of a campaign recorded. Final records
 * of its jobs count (cut attempts, other campaigns, torn lines do not); a
 * candidate whose kernel file changed since its records makes its cells
 * "changed" (they run again) with what changed said; a results file that does
 * not exist holds nothing. */
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
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "campaign/recorded.h"
#include "unit.h"

UNIT_SCRATCH_GROUP("campaign-recorded")

static const char spec_text[] = "[campaign x]\npool = p\nshapes = q_a q_b\n"
				"candidates = baseline cand_a.cuh\nresults = r.jsonl\n";

static void load(campaign_spec *s, campaign_job **jobs, size_t *n)
{
	char *p = unit_file("c", ".ini", spec_text);
	bg_err err = {0};
	if (campaign_spec_load(p, NULL, s, &err) != 0)
		fail_msg("load: %s", err.msg);
	free(p);
	assert_int_equal(campaign_jobs_expand(s, jobs, n, &err), 0);
}

/* One record line of job i (final or cut), as the scheduler writes it. */
static void add_record(strbuf *b, const campaign_spec *s, const campaign_job *jobs, size_t n,
		       size_t i, bool final)
{
	cJSON *rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "run_id", "ab12");
	cJSON_AddItemToObject(rec, "campaign", campaign_job_json(s, &jobs[i], n, 1, final));
	char *text = cJSON_PrintUnformatted(rec);
	strbuf_addf(b, "%s\n", text);
	free(text);
	cJSON_Delete(rec);
}

static void scan(void **state)
{
	(void)state;
	char *k = xasprintf("%s/cand_a.cuh", tmpdir);
	write_text(k, "speed 2\n");
	campaign_spec s;
	campaign_job *jobs;
	size_t n;
	load(&s, &jobs, &n);
	assert_int_equal(n, 4);
	/* a file that does not exist: nothing recorded, no error */
	campaign_recorded r;
	bg_err err = {0};
	assert_int_equal(campaign_recorded_scan(&s, jobs, n, s.results, &r, NULL, &err), 0);
	assert_int_equal(r.count, 0);
	campaign_recorded_release(&r);

	strbuf b = STRBUF_INIT;
	add_record(&b, &s, jobs, n, 0, true);
	add_record(&b, &s, jobs, n, 0, true); /* twice: counted once */
	add_record(&b, &s, jobs, n, 3, true);
	add_record(&b, &s, jobs, n, 1, false); /* cut: runs again */
	strbuf_addstr(&b, "{\"campaign\":{\"name\":\"other\",\"final\":true,\"job\":\"x\"}}\n");
	strbuf_addstr(&b, "{\"campaign\":{\"name\":\"x\",\"final\":true,\"job\":\"no/such\"}}\n");
	strbuf_addstr(&b, "{\"campaign\":{\"name\":\"x\",\"final\":tr"); /* torn */
	write_text(s.results, b.buf);
	results_read_stats st = {0};
	assert_int_equal(campaign_recorded_scan(&s, jobs, n, s.results, &r, &st, &err), 0);
	assert_int_equal(r.count, 2);
	assert_true(r.done[0] && r.done[3]);
	assert_false(r.done[1] || r.done[2]);
	assert_int_equal(st.torn, 1);
	bool cand_changed[2] = {false, false};
	assert_int_equal(campaign_recorded_changed_cells(&s, jobs, n, &r, cand_changed), 0);
	campaign_recorded_release(&r);

	/* the candidate's kernel changes: its records are of an earlier definition */
	write_text(k, "speed 3\n");
	campaign_spec s2;
	campaign_job *jobs2;
	size_t n2;
	load(&s2, &jobs2, &n2);
	assert_int_equal(campaign_recorded_scan(&s2, jobs2, n2, s2.results, &r, NULL, &err), 0);
	/* the baseline's records still count; cand_a's do not */
	size_t cand_jobs_done = 0, changed = 0;
	for (size_t i = 0; i < n2; i++) {
		if (jobs2[i].cand == 1)
			cand_jobs_done += r.done[i];
		changed += r.changed[i];
	}
	assert_int_equal(cand_jobs_done, 0);
	assert_true(changed >= 1);
	assert_non_null(r.why[1]);
	assert_null(r.why[0]);
	assert_true(campaign_recorded_changed_cells(&s2, jobs2, n2, &r, cand_changed) >= 1);
	assert_true(cand_changed[1]);
	assert_false(cand_changed[0]);
	campaign_recorded_release(&r);
	campaign_recorded_release(&r); /* twice: nothing left to free */
	campaign_jobs_free(jobs2, n2);
	campaign_spec_release(&s2);
	campaign_jobs_free(jobs, n);
	campaign_spec_release(&s);
	strbuf_release(&b);
	free(k);
}

/* The results file's lock: taken at once when free; a run that finds it
 * held says so once and waits for it; a signal with the stop flag set ends
 * the wait; what is not a regular file is refused before it is opened. */
struct lock_wait {
	int holder; /* the other run's descriptor, closed to release it */
	int waited;
	volatile sig_atomic_t *stop; /* set and a signal arranged instead */
};

static void release_other(void *ctx)
{
	struct lock_wait *w = ctx;
	w->waited++;
	if (w->stop) {
		*w->stop = 1;
		/* a signal every 50 ms: one lands while the lock is waited for */
		struct itimerval it = {{0, 50000}, {0, 50000}};
		setitimer(ITIMER_REAL, &it, NULL);
	} else {
		close(w->holder);
	}
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void results_lock(void **state)
{
	(void)state;
	campaign_spec sp = {.name = "x"};
	sp.results = xasprintf("%s/r.jsonl", tmpdir);
	volatile sig_atomic_t stop = 0;
	bg_err err = {0};
	bool stopped = true;
	int fd = -1;
	/* free: taken at once, the file created */
	assert_int_equal(campaign_results_lock(&sp, &stop, NULL, NULL, &fd, &stopped, &err), 0);
	assert_false(stopped);
	struct stat st;
	assert_int_equal(stat(sp.results, &st), 0);
	assert_true(S_ISREG(st.st_mode));

	/* held by "another run" (fd): waits once, takes it when released */
	struct lock_wait w = {.holder = fd};
	int fd2 = -1;
	assert_int_equal(campaign_results_lock(&sp, &stop, release_other, &w, &fd2, &stopped, &err),
			 0);
	assert_int_equal(w.waited, 1);
	assert_false(stopped);

	/* held, and stopped while waiting */
	struct sigaction sa = {.sa_handler = on_alarm}, old;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, &old);
	struct lock_wait w2 = {.stop = &stop};
	int fd3 = -1;
	assert_int_equal(
		campaign_results_lock(&sp, &stop, release_other, &w2, &fd3, &stopped, &err),
		BG_EIO);
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &old, NULL);
	assert_true(stopped);
	assert_int_equal(w2.waited, 1);
	assert_string_equal(err.msg,
			    "campaign x: stopped while waiting for the other run; nothing was run");
	close(fd3);
	close(fd2);

	/* not a regular file: refused, nothing opened (a FIFO would block) */
	char *fifo = xasprintf("%s/fifo", tmpdir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	free(sp.results);
	sp.results = fifo;
	fd = -1;
	assert_int_equal(campaign_results_lock(&sp, &stop, NULL, NULL, &fd, &stopped, &err),
			 BG_EIO);
	assert_int_equal(fd, -1);
	assert_non_null(strstr(err.msg, "is not a regular file"));
	free(fifo);
	sp.results = xstrdup(tmpdir); /* a directory */
	assert_int_equal(campaign_results_lock(&sp, &stop, NULL, NULL, &fd, &stopped, &err),
			 BG_EIO);
	assert_int_equal(fd, -1);
	free(sp.results);
	sp.results = xasprintf("%s/no/such/dir/r.jsonl", tmpdir);
	assert_int_equal(campaign_results_lock(&sp, &stop, NULL, NULL, &fd, &stopped, &err),
			 BG_EIO);
	assert_non_null(strstr(err.msg, "cannot open the results file"));
	free(sp.results);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(scan),
		cmocka_unit_test(results_lock),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
