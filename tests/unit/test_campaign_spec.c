/* campaign/spec: reading [campaign NAME] (keys, defaults, continuation lines,
 * inline comments, every refusal with FILE:LINE) and expanding the matrix into
 * keyed jobs in their order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include <sys/stat.h>
#include <unistd.h>

#include "base/sha256.h"
#include "campaign/spec.h"
#include "unit.h"

UNIT_SCRATCH_GROUP("campaign")

static campaign_spec load_ok(const char *text, const char *name)
{
	char *p = unit_file("c", ".ini", text);
	campaign_spec s;
	bg_err err = {0};
	if (campaign_spec_load(p, name, &s, &err) != 0)
		fail_msg("load failed: %s", err.msg);
	free(p);
	return s;
}

/* The error for `text`, with "%s" in `want` standing for the file's path. */
static void load_fails(const char *text, const char *want)
{
	char *p = unit_file("bad", ".ini", text);
	campaign_spec s;
	bg_err err = {0};
	char *w = xasprintf(want, p, p);
	if (campaign_spec_load(p, NULL, &s, &err) == 0)
		fail_msg("loaded, wanted [%s]", w);
	if (strcmp(err.msg, w) != 0)
		fail_msg("error [%s], wanted [%s]", err.msg, w);
	free(w);
	free(p);
}

static void keys_and_defaults(void **state)
{
	(void)state;
	campaign_spec s = load_ok("; a campaign\n"
				  "[box other]\nhost = x\n"
				  "[campaign w13]\n"
				  "pool = b200\n"
				  "gate_args = --kind largem_compact   ; every job\n"
				  "shapes = w13,\n"
				  "   q_b\n"
				  "num_workers = 8 64 68\n"
				  "candidate.fast = --variant candidate\n"
				  "candidates = baseline fast\n"
				  "repeats = 3\n"
				  "bar = 1.2\n",
				  NULL);
	assert_string_equal(s.name, "w13");
	assert_string_equal(s.pool, "b200");
	assert_int_equal(s.n_gate_args, 2);
	assert_string_equal(s.gate_args[1], "largem_compact");
	assert_int_equal(s.n_shapes, 2);
	assert_string_equal(s.shapes[1], "q_b");
	assert_int_equal(s.n_num_workers, 3);
	assert_int_equal(s.num_workers[2], 68);
	assert_int_equal(s.n_cands, 2);
	assert_string_equal(s.cands[0].flags[0], "--baseline");
	assert_string_equal(s.cands[1].flags[1], "candidate");
	assert_int_equal(s.repeats, 3);
	assert_true(s.bar > 1.19 && s.bar < 1.21);
	/* the defaults */
	assert_true(s.max_cv < 0);
	assert_false(s.strict_noise);
	assert_false(s.per_job_agent); /* a serving agent per worker */
	assert_int_equal(s.max_failures, 2);
	assert_int_equal(s.lock_wait_s, 30);
	assert_int_equal(s.timeout_s, 0);
	char *want = xasprintf("%s/w13.results.jsonl", tmpdir);
	assert_string_equal(s.results, want);
	free(want);

	campaign_job *jobs;
	size_t n;
	bg_err err = {0};
	assert_int_equal(campaign_jobs_expand(&s, &jobs, &n, &err), 0);
	assert_int_equal(n, 2 * 3 * 2 * 3);
	/* repeat-major, then shape, worker count, candidate */
	/* the definitions as Python's hashlib computes them over the documented
	 * serialisation (pinned: a change would make every recorded job new) */
	assert_string_equal(jobs[0].key, "w13/w13/8/baseline@e22ce2912da5/0");
	assert_string_equal(jobs[1].key, "w13/w13/8/fast@f59f7d679271/0");
	assert_string_equal(jobs[2].key, "w13/w13/64/baseline@e22ce2912da5/0");
	assert_string_equal(jobs[11].key, "w13/q_b/68/fast@f59f7d679271/0");
	assert_string_equal(jobs[12].key, "w13/w13/8/baseline@e22ce2912da5/1");
	const char *w1[] = {"--kind", "largem_compact", "--shape", "q_b",       "--configs",
			    "q_b",    "--num-workers",  "68",      "--variant", "candidate"};
	assert_int_equal(jobs[11].n_words, 10);
	for (size_t i = 0; i < 10; i++)
		assert_string_equal(jobs[11].words[i], w1[i]);
	assert_null(jobs[11].words[10]);
	cJSON *o = campaign_job_json(&s, &jobs[11], n, 2, false);
	assert_string_equal(cJSON_GetObjectItem(o, "job")->valuestring,
			    "w13/q_b/68/fast@f59f7d679271/0");
	/* the key its fields define is the job's key */
	char rk[CAMPAIGN_KEY_MAX];
	assert_true(campaign_record_key(o, rk));
	assert_string_equal(rk, jobs[11].key);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(o, "final")));
	assert_int_equal(cJSON_GetObjectItem(o, "attempt")->valueint, 2);
	assert_int_equal(cJSON_GetObjectItem(o, "jobs")->valueint, 36);
	/* strict_noise goes into the records only when set: report and brief judge by it */
	assert_null(cJSON_GetObjectItem(o, "strict_noise"));
	cJSON_Delete(o);
	s.strict_noise = true;
	o = campaign_job_json(&s, &jobs[11], n, 2, false);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "strict_noise")));
	cJSON_Delete(o);
	campaign_jobs_free(jobs, n);
	campaign_spec_release(&s);
}

static void persistent_agent_key(void **state)
{
	(void)state;
	campaign_spec s =
		load_ok("[campaign x]\npool = p\nshapes = q_b\npersistent_agent = no\n", NULL);
	assert_true(s.per_job_agent);
	campaign_spec_release(&s);
	s = load_ok("[campaign x]\npool = p\nshapes = q_b\npersistent_agent = yes\n", NULL);
	assert_false(s.per_job_agent);
	campaign_spec_release(&s);
}

static void kernel_files(void **state)
{
	(void)state;
	char *k = xasprintf("%s/cand_a.cuh", tmpdir);
	write_text(k, "speed 2\n");
	char sha[65];
	bg_err err = {0};
	assert_int_equal(bg_sha256_file(k, sha, &err), 0);
	campaign_spec s = load_ok("[campaign x]\npool = p\nshapes = q_b\n"
				  "candidates = baseline cand_a.cuh\nresults = out/r.jsonl\n",
				  NULL);
	assert_int_equal(s.n_num_workers, 0);
	assert_string_equal(s.cands[1].name, "cand_a");
	assert_string_equal(s.cands[1].file, k);
	assert_string_equal(s.cands[1].sha, sha);
	char *want = xasprintf("%s/out/r.jsonl", tmpdir);
	assert_string_equal(s.results, want);
	campaign_job *jobs;
	size_t n;
	assert_int_equal(campaign_jobs_expand(&s, &jobs, &n, &err), 0);
	assert_int_equal(n, 2);
	char key[128], def[CAMPAIGN_DEF_LEN + 1];
	campaign_def_of(NULL, 0, NULL, 0, sha, def);
	snprintf(key, sizeof(key), "x/q_b/-/cand_a@%s/0", def);
	assert_string_equal(jobs[1].key, key);
	cJSON *o = campaign_job_json(&s, &jobs[1], n, 1, true);
	char rk[CAMPAIGN_KEY_MAX];
	assert_true(campaign_record_key(o, rk));
	assert_string_equal(rk, key);
	cJSON_Delete(o);
	/* no --num-workers without num_workers; a file candidate adds no flag */
	assert_int_equal(jobs[1].n_words, 4);
	campaign_jobs_free(jobs, n);
	campaign_spec_release(&s);
	free(want);
	free(k);
}

/* The key of a job for a campaign text, its job `i`. */
static void key_of(const char *text, size_t i, char key[CAMPAIGN_KEY_MAX])
{
	campaign_spec s = load_ok(text, NULL);
	campaign_job *jobs;
	size_t n;
	bg_err err = {0};
	assert_int_equal(campaign_jobs_expand(&s, &jobs, &n, &err), 0);
	assert_true(i < n);
	snprintf(key, CAMPAIGN_KEY_MAX, "%s", jobs[i].key);
	campaign_jobs_free(jobs, n);
	campaign_spec_release(&s);
}

/* Everything that defines a job is in its key: an edited candidate flag,
 * gate_args word or kernel file is a new job; what only judges (bar, repeats'
 * count, timeouts) or how a list is spelt (blanks, commas) is the same job. */
static void definition_in_key(void **state)
{
	(void)state;
	char a[CAMPAIGN_KEY_MAX], b[CAMPAIGN_KEY_MAX];
	const char *base = "[campaign x]\npool = p\nshapes = q_b\ngate_args = --kind f\n"
			   "candidates = baseline fast\ncandidate.fast = --speed 1.25\n";
	key_of(base, 1, a);
	key_of("[campaign x]\npool = p\nshapes = q_b\ngate_args = --kind f\n"
	       "candidates = baseline fast\ncandidate.fast = --speed 2\n",
	       1, b);
	assert_string_not_equal(a, b);
	key_of("[campaign x]\npool = p\nshapes = q_b\ngate_args = --kind g\n"
	       "candidates = baseline fast\ncandidate.fast = --speed 1.25\n",
	       1, b);
	assert_string_not_equal(a, b);
	/* the baseline changes with gate_args too */
	key_of(base, 0, a);
	key_of("[campaign x]\npool = p\nshapes = q_b\ngate_args = --kind g\n"
	       "candidates = baseline fast\ncandidate.fast = --speed 1.25\n",
	       0, b);
	assert_string_not_equal(a, b);
	/* words move between lists: a different job */
	key_of("[campaign x]\npool = p\nshapes = q_b\ngate_args = --kind f --speed\n"
	       "candidates = baseline fast\ncandidate.fast = 1.25\n",
	       1, b);
	key_of(base, 1, a);
	assert_string_not_equal(a, b);
	/* the same definition spelt otherwise, with judging settings changed */
	key_of("[campaign x]\npool = p\nshapes = q_b\ngate_args =   --kind   f\n"
	       "candidates = baseline, fast\ncandidate.fast = --speed   1.25\nbar = 1.5\n"
	       "timeout_s = 9\nrepeats = 2\n",
	       1, b);
	assert_string_equal(a, b);

	/* an edited kernel file: a new job */
	char *k = xasprintf("%s/kd.cuh", tmpdir);
	write_text(k, "speed 2\n");
	key_of("[campaign x]\npool = p\nshapes = q_b\ncandidates = kd.cuh\n", 0, a);
	write_text(k, "speed 3\n");
	key_of("[campaign x]\npool = p\nshapes = q_b\ncandidates = kd.cuh\n", 0, b);
	assert_string_not_equal(a, b);
	free(k);
}

/* A record's key comes from its fields: a record written with the old key
 * form (no definition) compares with the job of the same definition, and one
 * whose fields are missing has none. */
static void record_keys(void **state)
{
	(void)state;
	char key[CAMPAIGN_KEY_MAX];
	cJSON *c = cJSON_Parse("{\"name\":\"w13\",\"job\":\"w13/q_b/68/fast/0\","
			       "\"gate_args\":[\"--kind\",\"largem_compact\"],"
			       "\"shape\":\"q_b\",\"num_workers\":68,\"candidate\":\"fast\","
			       "\"candidate_file\":null,\"candidate_sha256\":null,"
			       "\"candidate_flags\":[\"--variant\",\"candidate\"],\"repeat\":0}");
	assert_true(campaign_record_key(c, key));
	assert_string_equal(key, "w13/q_b/68/fast@f59f7d679271/0");
	cJSON_ReplaceItemInObject(c, "num_workers", cJSON_CreateNull());
	assert_true(campaign_record_key(c, key));
	assert_string_equal(key, "w13/q_b/-/fast@f59f7d679271/0");
	const char *bad[] = {"gate_args", "candidate_flags", "repeat", "num_workers"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cJSON *d = cJSON_Duplicate(c, 1);
		cJSON_ReplaceItemInObject(d, bad[i], cJSON_CreateString("x"));
		assert_false(campaign_record_key(d, key));
		cJSON_Delete(d);
	}
	cJSON *d = cJSON_Duplicate(c, 1);
	cJSON_ReplaceItemInObject(d, "repeat", cJSON_CreateNumber(0.5));
	assert_false(campaign_record_key(d, key));
	cJSON_ReplaceItemInObject(d, "repeat", cJSON_CreateNumber(0));
	cJSON_ReplaceItemInObject(d, "shape", cJSON_CreateNumber(1));
	assert_false(campaign_record_key(d, key));
	cJSON_Delete(d);
	cJSON_Delete(c);
}

static void named_campaigns(void **state)
{
	(void)state;
	const char *two =
		"[campaign a]\npool = p\nshapes = s1\n[campaign b]\npool = q\nshapes = s2\n";
	campaign_spec s = load_ok(two, "b");
	assert_string_equal(s.pool, "q");
	campaign_spec_release(&s);
	load_fails(two, "%s holds 2 campaigns (a, b): name one with --name");
	char *p = unit_file("two", ".ini", two);
	bg_err err = {0};
	assert_int_equal(campaign_spec_load(p, "c", &s, &err), BG_EUSAGE);
	char *w = xasprintf("%s: no [campaign c] (it holds a, b)", p);
	assert_string_equal(err.msg, w);
	free(w);
	free(p);
}

static void refusals(void **state)
{
	(void)state;
	load_fails("[box a]\nhost = x\n", "%s: no [campaign NAME] section");
	load_fails("[campaign x]\nshapes = q\n", "%s:1: [campaign x] needs pool = ...");
	load_fails("[campaign x]\npool = p\n", "%s:1: [campaign x] needs shapes = ...");
	load_fails("[campaign x]\npool = p\nshapes =\n", "%s:3: shapes: no value");
	load_fails("[campaign x]\npool = p\nshapes = a\nshapes = b\n",
		   "%s:4: 'shapes' set twice in [campaign x], first at line 3");
	load_fails("[campaign x]\npool = p\nshape = a\n",
		   "%s:3: unknown key 'shape' in [campaign x] (did you mean 'shapes'?)");
	load_fails("[campaign x]\npool = p\nshapes = a\nnum_workers = 8 x\n",
		   "%s:4: num_workers: 'x' is not a whole number from 1 to 65536");
	load_fails("[campaign x]\npool = p\nshapes = a\nnum_workers = 65537\n",
		   "%s:4: num_workers: '65537' is not a whole number from 1 to 65536");
	load_fails("[campaign x]\npool = p\nshapes = a a\n", "%s:3: shapes: 'a' listed twice");
	load_fails("[campaign x]\npool = p\nshapes = a$(id)\n",
		   "%s:3: shapes: bad shape name 'a$(id)' (letters, digits, '.', '_' and '-' only, "
		   "at most 64)");
	load_fails("[campaign x]\npool = p\nshapes = a\nrepeats = 101\n",
		   "%s:4: repeats: '101' is not a whole number from 1 to 100");
	load_fails("[campaign x]\npool = p\nshapes = a\nbar = -1\n",
		   "%s:4: bar: '-1' is not a positive number such as 1.2");
	load_fails("[campaign x]\npool = p\nshapes = a\nmax_cv = 2%\n",
		   "%s:4: max_cv: '2%%' is not a percentage such as 2 or 0.5");
	load_fails("[campaign x]\npool = p\nshapes = a\nstrict_noise = maybe\n",
		   "%s:4: strict_noise: 'maybe' is not yes or no");
	load_fails("[campaign x]\npool = p\nshapes = a\npersistent_agent = 1\n",
		   "%s:4: persistent_agent: '1' is not yes or no");
	load_fails("[campaign x]\npool = p\nshapes = a\ntimeout_s = 0\n",
		   "%s:4: timeout_s: '0' is not a whole number from 1 to 604800");
	load_fails(
		"[campaign x]\npool = p\nshapes = a\ncandidates = baseline baseline\n",
		"%s:4: two candidates named 'baseline' (baseline and baseline): rename one file");
	load_fails("[campaign x]\npool = p\nshapes = a\ncandidate.f =\ncandidates = f\n",
		   "%s:4: candidate.f names no gate flags");
	load_fails("[campaign x y]\npool = p\n", "%s:1: bad campaign name 'x y' (letters, digits, "
						 "'.', '_' and '-' only, at most 64)");
	load_fails("[campaign x]\npool = p\n[campaign x]\n",
		   "%s:3: campaign 'x' defined twice, first at line 1");
	load_fails("[campaign x]\npool p\n", "%s:2: expected 'key = value', got 'pool p'");
	load_fails("[campaign x]\npool = p\nshapes = "
		   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
		   "%s:3: shapes: bad shape name "
		   "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' (letters, "
		   "digits, '.', '_' and '-' only, at most 64)");
	load_fails("[campaign x\n", "%s:1: section header '[campaign x' lacks its closing ']'");
	load_fails("[campaign x]\npool = p\nshapes = a b c\nnum_workers = 1 2 3 4 5 6 7 8 9 10\n"
		   "candidate.a = --a\ncandidate.b = --b\ncandidate.c = --c\n"
		   "candidates = baseline a b c\nrepeats = 100\n",
		   "%s:1: [campaign x] makes 12000 jobs (at most 10000)");
	/* control characters reach command lines, records and terminals */
	load_fails("[campaign x]\npool = p\nshapes = q_b\ncandidate.f = --speed \033[2J\n"
		   "candidates = f\n",
		   "%s:4: candidate.f: a control character (0x1b) in the value");
	load_fails("[campaign x]\npool = p\nshapes = q_b\ngate_args = --kind\001 k\n",
		   "%s:4: gate_args: a control character (0x01) in the value");
	/* a FIFO as a kernel file or push file: refused, never read (it would block) */
	char *fifo = xasprintf("%s/k.fifo", tmpdir), *file;
	unlink(fifo);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	file = unit_file("bad", ".ini",
			 "[campaign x]\npool = p\nshapes = q_b\ncandidates = k.fifo\n");
	campaign_spec s;
	bg_err err = {0};
	assert_int_not_equal(campaign_spec_load(file, NULL, &s, &err), 0);
	assert_non_null(strstr(err.msg, "is not a regular file"));
	free(file);
	file = unit_file("bad", ".ini", "[campaign x]\npool = p\nshapes = q_b\npush = k.fifo\n");
	assert_int_not_equal(campaign_spec_load(file, NULL, &s, &err), 0);
	assert_non_null(strstr(err.msg, "push: no such readable file"));
	free(file);
	unlink(fifo);
	free(fifo);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(keys_and_defaults),    cmocka_unit_test(definition_in_key),
		cmocka_unit_test(record_keys),          cmocka_unit_test(kernel_files),
		cmocka_unit_test(named_campaigns),      cmocka_unit_test(refusals),
		cmocka_unit_test(persistent_agent_key),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
