/* measure/record: what run and the campaign scheduler put into an
 * invocation's record beside the gate's words: where it ran (a local box is
 * "localhost" over "local", others their host over "ssh"); for an invocation
 * of a run's point its repeat (none for a warm-up, which is marked one), its
 * role when baseline and candidate are measured apart, the overlay only on
 * the candidate's records, no reason when it succeeded; and the record
 * appended to a results file as one line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "base/exit.h"
#include "base/xmalloc.h"
#include "measure/record.h"
#include "unit.h"

UNIT_SCRATCH_GROUP("measure-record")

static const char *str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void where_it_ran(void **state)
{
	(void)state;
	conf_box local = {.name = "here", .hostname = "ignored", .transport = CONF_TRANSPORT_LOCAL};
	conf_box ssh = {.name = "g1", .hostname = "gpu1.example"};
	results_record_in in = {0};
	measure_record_where(&in, &local);
	assert_string_equal(in.box, "here");
	assert_string_equal(in.host, "localhost");
	assert_string_equal(in.transport, "local");
	assert_true(in.version && in.version[0]);
	measure_record_where(&in, &ssh);
	assert_string_equal(in.box, "g1");
	assert_string_equal(in.host, "gpu1.example");
	assert_string_equal(in.transport, "ssh");
}

/* The record of one invocation of a point as run fills it. */
static cJSON *point_record(const measure_point *m, bool baseline, bool warm, int code,
			   const cJSON *ov)
{
	static const conf_box box = {.name = "g1", .hostname = "gpu1"};
	gate_outcome o = {0};
	const char *args[] = {"--shape", "q"};
	results_record_in in = {
		.run_id = "0123456789abcdef",
		.seq = 2,
		.command = "agent run -- gate",
		.gate_args = args,
		.n_gate_args = 2,
		.exit_code = code,
		.why = "the gate said no",
		.outcome = &o,
	};
	measure_record_where(&in, &box);
	measure_record_point(&in, m, baseline, warm, 1, 3, ov);
	return results_record_build(&in);
}

static void a_points_invocations(void **state)
{
	(void)state;
	measure_point m = {0};
	cJSON *ov = cJSON_Parse("{\"files\":[]}");

	/* together: no role; the candidate's overlay; repeat 1 of 3; no reason on success */
	cJSON *r = point_record(&m, false, false, 0, ov);
	assert_null(cJSON_GetObjectItemCaseSensitive(r, "role"));
	assert_null(cJSON_GetObjectItemCaseSensitive(r, "warmup"));
	assert_true(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(r, "overlay")));
	const cJSON *rp = cJSON_GetObjectItemCaseSensitive(r, "repeat");
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(rp, "i")->valueint, 1);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(rp, "n")->valueint, 3);
	assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(r, "why")));
	assert_string_equal(str(r, "host"), "gpu1");
	cJSON_Delete(r);

	/* a failure keeps its reason */
	r = point_record(&m, false, false, BG_EXIT_FAIL, ov);
	assert_string_equal(str(r, "why"), "the gate said no");
	cJSON_Delete(r);

	/* a warm-up: marked, no repeat */
	r = point_record(&m, false, true, 0, ov);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "warmup")));
	assert_null(cJSON_GetObjectItemCaseSensitive(r, "repeat"));
	cJSON_Delete(r);

	/* apart: the candidate and the baseline by role; the baseline has no overlay */
	m.apart = true;
	r = point_record(&m, false, false, 0, ov);
	assert_string_equal(str(r, "role"), "candidate");
	assert_true(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(r, "overlay")));
	cJSON_Delete(r);
	r = point_record(&m, true, false, 0, ov);
	assert_string_equal(str(r, "role"), "baseline");
	assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(r, "overlay")));
	assert_string_equal(str(cJSON_GetObjectItemCaseSensitive(r, "point"), "candidate"),
			    "baseline");
	cJSON_Delete(r);
	cJSON_Delete(ov);
}

static void appended_as_a_line(void **state)
{
	(void)state;
	conf_box box = {.name = "g1", .hostname = "gpu1"};
	gate_outcome o = {0};
	results_record_in in = {.run_id = "0123456789abcdef", .outcome = &o};
	measure_record_where(&in, &box);
	char *path = xasprintf("%s/r.jsonl", tmpdir);
	bg_err err = {0};
	assert_int_equal(measure_record_append(path, &in, &err), 0);
	in.seq = 1;
	assert_int_equal(measure_record_append(path, &in, &err), 0);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char line[8192];
	int n = 0;
	while (fgets(line, sizeof(line), f)) {
		cJSON *r = cJSON_Parse(line);
		assert_non_null(r);
		assert_int_equal(cJSON_GetObjectItemCaseSensitive(r, "seq")->valueint, n);
		assert_string_equal(str(r, "box"), "g1");
		cJSON_Delete(r);
		n++;
	}
	fclose(f);
	assert_int_equal(n, 2);
	/* a results path that is a directory: an error, nothing written */
	assert_true(measure_record_append(tmpdir, &in, &err) < 0);
	assert_true(err.msg[0] != 0);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(where_it_ran),
		cmocka_unit_test(a_points_invocations),
		cmocka_unit_test(appended_as_a_line),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
