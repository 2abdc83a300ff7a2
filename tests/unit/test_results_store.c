/* results/store and results/record: append and read back, a torn last line,
 * a bad middle line, a record with '\n' refused; the schema-1 record. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/unit.h"
#include "base/exit.h"
#include "results/record.h"
#include "results/store.h"

struct seen {
	int n;
	double sum; /* of the records' "i" */
	size_t lines[8];
};

static int collect(void *ctx, const cJSON *rec, size_t line)
{
	struct seen *s = ctx;
	const cJSON *i = cJSON_GetObjectItemCaseSensitive(rec, "i");
	assert_true(cJSON_IsNumber(i));
	s->sum += i->valuedouble;
	if (s->n < 8)
		s->lines[s->n] = line;
	s->n++;
	return 0;
}

static char *scratch(const char *name)
{
	return xasprintf("%s/%s%d/sub/dir/results.jsonl", tmpdir, name, ++counter);
}

static void append_and_read(void **state)
{
	(void)state;
	char *p = scratch("a");
	bg_err err = {0};
	for (int i = 1; i <= 3; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "i", i);
		cJSON_AddStringToObject(o, "s", "a \"quoted\"\nline");
		assert_int_equal(results_append_json(p, o, &err), 0);
		cJSON_Delete(o);
	}
	struct seen s = {0};
	results_read_stats st;
	assert_int_equal(results_read(p, collect, &s, &st, &err), 0);
	assert_int_equal(s.n, 3);
	assert_true(s.sum == 6);
	assert_int_equal(st.records, 3);
	assert_int_equal(st.bad, 0);
	assert_int_equal(st.torn, 0);
	assert_int_equal(s.lines[2], 3);
	struct stat sb;
	assert_int_equal(stat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	free(p);
}

static void torn_last_line(void **state)
{
	(void)state;
	char *p = unit_file("t", ".jsonl", "{\"i\":1}\n{\"i\":2}\n{\"i\":3,\"x\":");
	struct seen s = {0};
	results_read_stats st;
	bg_err err = {0};
	assert_int_equal(results_read(p, collect, &s, &st, &err), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(st.records, 2);
	assert_int_equal(st.torn, 1);
	assert_int_equal(st.bad, 0);
	/* A whole last record without its '\n' is still a record. */
	char *q = unit_file("t", ".jsonl", "{\"i\":1}\n{\"i\":2}");
	memset(&s, 0, sizeof(s));
	assert_int_equal(results_read(q, collect, &s, &st, &err), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(st.torn, 0);
	/* An append after a torn line ends it first: the new record is whole and
	 * the torn one becomes a bad line. */
	bg_err e2 = {0};
	assert_int_equal(results_append(p, "{\"i\":4}", 7, &e2), 0);
	memset(&s, 0, sizeof(s));
	assert_int_equal(results_read(p, collect, &s, &st, &err), 0);
	assert_int_equal(s.n, 3);
	assert_true(s.sum == 7);
	assert_int_equal(st.torn, 0);
	assert_int_equal(st.bad, 1);
	assert_int_equal(st.first_bad, 3);
	free(p);
	free(q);
}

static void bad_middle_lines(void **state)
{
	(void)state;
	char *p = unit_file(
		"b", ".jsonl",
		"{\"i\":1}\nnot json\n[1,2]\n\n{\"i\":2}\n{\"i\":3} trailing\n{\"i\":4}\n");
	struct seen s = {0};
	results_read_stats st;
	bg_err err = {0};
	assert_int_equal(results_read(p, collect, &s, &st, &err), 0);
	assert_int_equal(s.n, 3);
	assert_true(s.sum == 7);
	assert_int_equal(st.bad,
			 3); /* not json, an array, trailing text; the blank line is not counted */
	assert_int_equal(st.first_bad, 2);
	assert_int_equal(st.torn, 0);
	assert_int_equal(s.lines[1], 5);
	free(p);
}

static void newline_refused(void **state)
{
	(void)state;
	char *p = scratch("n");
	bg_err err = {0};
	assert_int_equal(results_append(p, "{\"i\":1}\n{\"i\":2}", 15, &err), BG_EUSAGE);
	assert_non_null(strstr(err.msg, "one line"));
	/* Nothing was written. */
	assert_int_equal(results_read(p, NULL, NULL, NULL, &err), BG_ENOTFOUND);
	assert_non_null(strstr(err.msg, p));
	free(p);
}

static void missing_file(void **state)
{
	(void)state;
	bg_err err = {0};
	char *p = xasprintf("%s/nope.jsonl", tmpdir);
	assert_int_equal(results_read(p, NULL, NULL, NULL, &err), BG_ENOTFOUND);
	assert_non_null(strstr(err.msg, "nope.jsonl"));
	free(p);
}

/* A FIFO or a directory named as the results file: refused at once, never a
 * read that waits for a writer. */
static void not_regular(void **state)
{
	(void)state;
	bg_err err = {0};
	char *p = xasprintf("%s/fifo.jsonl", tmpdir);
	assert_int_equal(mkfifo(p, 0600), 0);
	assert_int_equal(results_read(p, NULL, NULL, NULL, &err), BG_EIO);
	assert_non_null(strstr(err.msg, "not a regular file"));
	unlink(p);
	assert_int_equal(results_read(tmpdir, NULL, NULL, NULL, &err), BG_EIO);
	assert_non_null(strstr(err.msg, "not a regular file"));
	free(p);
}

static const char *jstr(const cJSON *o, const char *path)
{
	char key[64];
	while (o && *path) {
		size_t n = strcspn(path, ".");
		memcpy(key, path, n);
		key[n] = '\0';
		o = cJSON_GetObjectItemCaseSensitive(o, key);
		path += n + (path[n] == '.');
	}
	if (cJSON_IsNull(o))
		return "null";
	if (cJSON_IsNumber(o)) {
		static char buf[64];
		snprintf(buf, sizeof(buf), "%g", o->valuedouble);
		return buf;
	}
	return cJSON_IsString(o) ? o->valuestring : "(absent)";
}

static void record_fields(void **state)
{
	(void)state;
	static const char line[] =
		"FAITHFUL_RESULT {\"kind\":\"demo\",\"shape\":\"q_b\",\"num_workers\":8,"
		"\"candidate\":{\"slowCTA_us\":10.0,\"wall_us\":20.0,\"sumCTA_us\":30.0,"
		"\"cos\":1.0,\"status\":\"PASS\",\"variant\":\"candidate\"},"
		"\"baseline_in_tree\":{\"slowCTA_us\":20.0,\"wall_us\":40.0,\"sumCTA_us\":60.0,"
		"\"cos\":1.0,\"status\":\"PASS\"},\"slowCTA_ratio_base_over_cand\":2.0,"
		"\"verdict\":\"PASS_GATE\",\"device\":\"cuda\",\"device_name\":\"NVIDIA H200\"}";
	gate_result r;
	gate_result_parse(&r, line, strlen(line), NULL);
	assert_true(r.parsed);
	gate_outcome o = {.agent_end = true,
			  .agent_rc = 0,
			  .gate_exit = 0,
			  .gate_signal = -1,
			  .verdict = VERDICT_PASS_GATE};
	strcpy(o.agent_why, "exited");
	const char *args[] = {"--kind", "other", "--shape=q_c", "--num-workers", "64"};
	results_record_in in = {
		.run_id = "0123456789abcdef",
		.seq = 2,
		.version = "9.9",
		.box = "b1",
		.host = "b1.example",
		.transport = "ssh",
		.gpus = "0,1",
		.command = "agent run -- g",
		.gate_args = args,
		.n_gate_args = 5,
		.start_ms = 1796309401123LL,
		.end_ms = 1796309402005LL,
		.exit_code = 0,
		.why = "",
		.outcome = &o,
		.last = &r,
	};
	cJSON *rec = results_record_build(&in);
	assert_string_equal(jstr(rec, "schema"), "1");
	assert_string_equal(jstr(rec, "run_id"), "0123456789abcdef");
	assert_string_equal(jstr(rec, "seq"), "2");
	assert_string_equal(jstr(rec, "gpus"), "0,1");
	assert_string_equal(jstr(rec, "gpu_name"), "NVIDIA H200");
	assert_string_equal(jstr(rec, "device"), "cuda");
	assert_string_equal(jstr(rec, "start"), "2026-12-03T14:50:01.123Z");
	assert_string_equal(jstr(rec, "end"), "2026-12-03T14:50:02.005Z");
	assert_string_equal(jstr(rec, "agent.rc"), "0");
	assert_string_equal(jstr(rec, "agent.why"), "exited");
	assert_string_equal(jstr(rec, "agent.gate_signal"), "null");
	assert_string_equal(jstr(rec, "verdict"), "PASS_GATE");
	assert_string_equal(jstr(rec, "stated"), "PASS_GATE");
	assert_string_equal(jstr(rec, "why"), "null");
	/* The result's own fields win over the gate arguments. */
	assert_string_equal(jstr(rec, "point.kind"), "demo");
	assert_string_equal(jstr(rec, "point.shape"), "q_b");
	assert_string_equal(jstr(rec, "point.num_workers"), "8");
	assert_string_equal(jstr(rec, "point.candidate"), "candidate");
	assert_string_equal(jstr(rec, "raw"), line);
	/* The result is the gate's text, verbatim, inside the record. */
	char *text = cJSON_PrintUnformatted(rec);
	assert_non_null(strstr(text,
			       "\"result\":{\"kind\":\"demo\",\"shape\":\"q_b\",\"num_workers\":8,"
			       "\"candidate\":{\"slowCTA_us\":10.0,"));
	cJSON *back = cJSON_Parse(text);
	assert_non_null(back);
	assert_string_equal(jstr(back, "result.device_name"), "NVIDIA H200");
	assert_string_equal(jstr(back, "result.candidate.slowCTA_us"), "10");
	cJSON_Delete(back);
	free(text);
	const cJSON *ga = cJSON_GetObjectItemCaseSensitive(rec, "gate_args");
	assert_int_equal(cJSON_GetArraySize(ga), 5);
	assert_string_equal(cJSON_GetArrayItem(ga, 2)->valuestring, "--shape=q_c");
	cJSON_Delete(rec);
	gate_result_release(&r);
}

static void record_without_result(void **state)
{
	(void)state;
	/* A gate that crashed before any result: the point comes from the
	 * arguments, the candidate from --kernel, verdict and result are null. */
	gate_outcome o = {.agent_end = true, .agent_rc = 1, .gate_exit = -1, .gate_signal = 11};
	strcpy(o.agent_why, "exited");
	const char *args[] = {"--kind",   "gemv_m1", "--shape", "q_b", "--num-workers=136",
			      "--kernel", "k7.cu"};
	results_record_in in = {
		.run_id = "ffffffffffffffff",
		.version = "9.9",
		.box = "local",
		.host = "localhost",
		.transport = "local",
		.command = "c",
		.gate_args = args,
		.n_gate_args = 7,
		.exit_code = BG_EXIT_FAIL,
		.why = "the gate was killed by signal 11",
		.outcome = &o,
	};
	cJSON *rec = results_record_build(&in);
	assert_string_equal(jstr(rec, "gpus"), "null");
	assert_string_equal(jstr(rec, "device"), "null");
	assert_string_equal(jstr(rec, "verdict"), "null");
	assert_string_equal(jstr(rec, "stated"), "null");
	assert_string_equal(jstr(rec, "result"), "null");
	assert_string_equal(jstr(rec, "raw"), "null");
	assert_string_equal(jstr(rec, "exit"), "1");
	assert_string_equal(jstr(rec, "agent.gate_exit"), "null");
	assert_string_equal(jstr(rec, "agent.gate_signal"), "11");
	assert_string_equal(jstr(rec, "why"), "the gate was killed by signal 11");
	assert_string_equal(jstr(rec, "point.kind"), "gemv_m1");
	assert_string_equal(jstr(rec, "point.num_workers"), "136");
	assert_string_equal(jstr(rec, "point.candidate"), "k7.cu");
	cJSON_Delete(rec);
	/* --baseline names the candidate; a list of counts is no count. */
	const char *args2[] = {"--baseline", "--num-workers", "8,64"};
	in.gate_args = args2;
	in.n_gate_args = 3;
	in.exit_code = BG_EXIT_TIMEOUT;
	rec = results_record_build(&in);
	assert_string_equal(jstr(rec, "point.candidate"), "baseline");
	assert_string_equal(jstr(rec, "point.num_workers"), "null");
	assert_string_equal(jstr(rec, "verdict"), "TIMEOUT_HANG");
	cJSON_Delete(rec);
}

/* Threads of one campaign append at once, records large enough that a write is
 * seen half done: no append may take another's for a torn line (a blank line). */
struct appender {
	const char *path;
	int id;
	int failures;
};

static void *append_many(void *arg)
{
	struct appender *a = arg;
	size_t len = 256 * 1024;
	char *rec = xmalloc(len + 1);
	for (int k = 0; k < 16; k++) {
		int n = snprintf(rec, len, "{\"t\":%d,\"k\":%d,\"pad\":\"", a->id, k);
		memset(rec + n, 'x', len - (size_t)n - 2);
		memcpy(rec + len - 2, "\"}", 2);
		rec[len] = '\0';
		bg_err err = {0};
		a->failures += results_append(a->path, rec, len, &err) != 0;
	}
	free(rec);
	return NULL;
}

static int count_record(void *ctx, const cJSON *rec, size_t line)
{
	(void)rec, (void)line;
	(*(size_t *)ctx)++;
	return 0;
}

static void concurrent_appends(void **state)
{
	(void)state;
	char *path = xasprintf("%s/concurrent.jsonl", tmpdir);
	pthread_t th[8];
	struct appender a[8];
	for (int i = 0; i < 8; i++) {
		a[i] = (struct appender){path, i, 0};
		assert_int_equal(pthread_create(&th[i], NULL, append_many, &a[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(a[i].failures, 0);
	}
	size_t n = 0;
	results_read_stats st = {0};
	bg_err err = {0};
	assert_int_equal(results_read(path, count_record, &n, &st, &err), 0);
	assert_int_equal(n, 8 * 16);
	assert_int_equal(st.bad, 0);
	assert_int_equal(st.torn, 0);
	FILE *f = fopen(path, "r");
	int c, prev = '\n', blank = 0;
	while ((c = fgetc(f)) != EOF) {
		blank += c == '\n' && prev == '\n';
		prev = c;
	}
	fclose(f);
	assert_int_equal(blank, 0);
	free(path);
}

static void run_ids(void **state)
{
	(void)state;
	char a[17], b[17];
	results_new_run_id(a);
	results_new_run_id(b);
	assert_int_equal(strlen(a), 16);
	assert_int_equal(strspn(a, "0123456789abcdef"), 16);
	assert_string_not_equal(a, b);
}

UNIT_SCRATCH_GROUP("results")

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(append_and_read),  cmocka_unit_test(torn_last_line),
		cmocka_unit_test(bad_middle_lines), cmocka_unit_test(newline_refused),
		cmocka_unit_test(missing_file),     cmocka_unit_test(not_regular),
		cmocka_unit_test(record_fields),    cmocka_unit_test(record_without_result),
		cmocka_unit_test(run_ids),          cmocka_unit_test(concurrent_appends),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
