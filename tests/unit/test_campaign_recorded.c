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
#include <stdio.h>

#include "base/strbuf.h"
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(scan),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
