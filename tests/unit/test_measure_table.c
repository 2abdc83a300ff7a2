/* measure/table: the point table run --export-markdown and --export-json
 * write (its Markdown shape, cells escaped, its JSON checked field by
 * field); base/atomic, which writes them; and a warm-up's record, which no
 * point counts (results_record_is_warmup, results_points_add). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/atomic.h"
#include "base/exit.h"
#include "measure/table.h"
#include "results/points.h"
#include "results/record.h"
#include "unit.h"

UNIT_SCRATCH_GROUP("table")

static void add(measure_point *p, double cand, double base)
{
	gate_result r;
	memset(&r, 0, sizeof(r));
	r.cand.present = true;
	r.cand.slowCTA_us = cand;
	r.cand.sumCTA_us = cand * 10;
	r.cand.wall_us = cand + 1;
	r.base.present = true;
	r.base.slowCTA_us = base;
	r.base.sumCTA_us = cand * 10;
	assert_true(measure_point_add(p, VERDICT_PASS_GATE, &r, false));
}

/* The cells of one Markdown row "| a | b \| c |": n, and the k-th in `out`. */
static size_t cells(const char *row, size_t k, char *out, size_t n)
{
	size_t count = 0, len = 0;
	assert_true(row[0] == '|');
	for (const char *s = row + 1; *s && *s != '\n'; s++) {
		if (*s == '\\' && s[1]) {
			if (count == k && len + 1 < n)
				out[len++] = s[1];
			s++;
			continue;
		}
		if (*s == '|') {
			if (count == k)
				out[len] = '\0';
			count++;
			continue;
		}
		if (count == k && len + 1 < n)
			out[len++] = *s;
	}
	return count;
}

/* The line `i` (0-based) of `text`. */
static const char *line_at(const char *text, int i)
{
	const char *s = text;
	for (; i > 0 && s; i--) {
		s = strchr(s, '\n');
		s = s ? s + 1 : NULL;
	}
	assert_non_null(s);
	return s;
}

static int nlines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void markdown_shape(void **state)
{
	(void)state;
	measure_point a = {.max_cv = 2}, b = {.max_cv = 2};
	double cand[] = {100, 101, 99, 100, 100};
	for (int i = 0; i < 5; i++)
		add(&a, cand[i], 130);
	measure_point_judge(&a, 1.0);
	add(&b, 140, 130); /* one run: no interval */
	measure_point_judge(&b, 1.0);
	measure_row rows[] = {
		{&a, 8, "PASS_GATE", 5, 2, "CPU twin (AMD | EPYC\nx), 8 workers", 0},
		{&b, -1, "BELOW_BAR", 1, 0, "", 1},
	};
	measure_table t = {"b|ox\n", "0123456789abcdef", rows, 2};
	strbuf md = STRBUF_INIT;
	measure_table_markdown(&t, &md);
	/* a title on one line, a blank line, the header, the alignment row, 2 rows */
	assert_true(strncmp(md.buf, "# boxgate run b|ox  (run 0123456789abcdef)\n\n", 44) == 0);
	char c[256];
	size_t ncol = cells(line_at(md.buf, 2), 0, c, sizeof(c));
	assert_int_equal(ncol, 11);
	for (int i = 3; i <= 5; i++)
		assert_int_equal(cells(line_at(md.buf, i), 0, c, sizeof(c)), ncol);
	assert_int_equal(nlines(md.buf), 6); /* and nothing after the rows */
	cells(line_at(md.buf, 3), 1, c, sizeof(c));
	assert_string_equal(c, " ---: ");
	cells(line_at(md.buf, 4), 0, c, sizeof(c));
	assert_string_equal(c, " 8 ");
	cells(line_at(md.buf, 4), 2, c, sizeof(c));
	assert_string_equal(c, " 100.000 ");
	cells(line_at(md.buf, 4), 3, c, sizeof(c));
	assert_string_equal(c, " 99.000-101.000 ");
	cells(line_at(md.buf, 4), 7, c, sizeof(c));
	assert_string_equal(c, " 1.300 ");
	cells(line_at(md.buf, 4), 8, c, sizeof(c));
	assert_non_null(strstr(c, "(9"));            /* the interval's level */
	cells(line_at(md.buf, 4), 10, c, sizeof(c)); /* '|' escaped, the newline a space */
	assert_string_equal(c, " CPU twin (AMD | EPYC x), 8 workers ");
	cells(line_at(md.buf, 5), 0, c, sizeof(c));
	assert_string_equal(c, " - ");
	cells(line_at(md.buf, 5), 8, c, sizeof(c)); /* one run: no interval */
	assert_string_equal(c, " - ");
	cells(line_at(md.buf, 5), 9, c, sizeof(c));
	assert_string_equal(c, " BELOW_BAR ");
	strbuf_release(&md);

	/* JSON */
	cJSON *o = measure_table_json(&t);
	const cJSON *pts = cJSON_GetObjectItemCaseSensitive(o, "points");
	assert_int_equal(cJSON_GetArraySize(pts), 2);
	const cJSON *p0 = cJSON_GetArrayItem(pts, 0), *p1 = cJSON_GetArrayItem(pts, 1);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(p0, "num_workers")->valueint, 8);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(p0, "warmup")->valueint, 2);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(p0, "n")->valueint, 5);
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(p0, "slowCTA_us");
	assert_true(cJSON_GetObjectItemCaseSensitive(s, "median")->valuedouble == 100);
	assert_true(cJSON_GetObjectItemCaseSensitive(s, "min")->valuedouble == 99);
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(p0, "ratio");
	assert_true(fabs(cJSON_GetObjectItemCaseSensitive(r, "median")->valuedouble - 1.3) < 1e-9);
	assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(r, "lo")));
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(r, "method")->valuestring,
			    "signed-rank");
	assert_true(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(p0, "decision")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(p1, "num_workers")));
	r = cJSON_GetObjectItemCaseSensitive(p1, "ratio");
	assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(r, "lo")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(p1, "decision")));
	cJSON_Delete(o);

	/* no rows: the header alone */
	measure_table none = {"b", NULL, NULL, 0};
	strbuf e = STRBUF_INIT;
	measure_table_markdown(&none, &e);
	assert_non_null(strstr(e.buf, "(run -)"));
	assert_int_equal(nlines(e.buf), 4);
	strbuf_release(&e);
}

static void atomic_write(void **state)
{
	(void)state;
	bg_err err = {0};
	char *path = xasprintf("%s/t.md", tmpdir);
	assert_int_equal(bg_write_atomic_check(path, &err), 0);
	assert_int_equal(access(path, F_OK), -1); /* the check leaves nothing */
	assert_int_equal(bg_write_atomic(path, "one\n", 4, &err), 0);
	assert_int_equal(bg_write_atomic(path, "two\n", 4, &err), 0);
	char buf[16] = "";
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "two\n");
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	/* a directory, a missing directory, an empty name, a name ending in '/' */
	assert_int_equal(bg_write_atomic_check(tmpdir, &err), BG_EIO);
	assert_non_null(strstr(err.msg, "a directory"));
	char *missing = xasprintf("%s/nope/t.json", tmpdir);
	assert_int_equal(bg_write_atomic_check(missing, &err), BG_EIO);
	assert_non_null(strstr(err.msg, missing));
	assert_int_equal(bg_write_atomic(missing, "x", 1, &err), BG_EIO);
	assert_int_equal(bg_write_atomic_check("", &err), BG_EIO);
	char *slash = xasprintf("%s/", path);
	assert_int_equal(bg_write_atomic_check(slash, &err), BG_EIO);
	assert_int_equal(bg_write_atomic_check("/dev/null", &err), BG_EIO);
	free(slash);
	free(missing);
	free(path);
}

static cJSON *record(bool warmup, double slow)
{
	char raw[512];
	snprintf(raw, sizeof(raw),
		 "{\"run_id\":\"0123456789abcdef\",\"verdict\":\"PASS_GATE\",%s\"point\":{\"kind\":"
		 "\"k\",\"shape\":\"q\",\"num_workers\":8},\"result\":{\"candidate\":{"
		 "\"slowCTA_us\":%g},\"slowCTA_ratio_base_over_cand\":1.3,\"warmup\":3}}",
		 warmup ? "\"warmup\":true," : "", slow);
	cJSON *r = cJSON_Parse(raw);
	assert_non_null(r);
	return r;
}

static void warmup_left_out(void **state)
{
	(void)state;
	cJSON *w = record(true, 500), *a = record(false, 100), *b = record(false, 101);
	assert_true(results_record_is_warmup(w));
	assert_false(results_record_is_warmup(a)); /* the gate's own "warmup" is not ours */
	results_points ps = RESULTS_POINTS_INIT;
	results_points_add(&ps, w);
	results_points_add(&ps, a);
	results_points_add(&ps, b);
	results_points_add(&ps, w);
	assert_int_equal(ps.n, 1);
	assert_int_equal(ps.v[0].n, 2);
	assert_true(ps.v[0].slow[0] == 100 && ps.v[0].slow[1] == 101);
	results_points_release(&ps);
	/* a record built for a warm-up says so; one built otherwise has no key */
	gate_outcome o = {0};
	results_record_in in = {.run_id = "0123456789abcdef",
				.version = "0",
				.box = "b",
				.host = "h",
				.transport = "ssh",
				.outcome = &o,
				.warmup = true};
	cJSON *rec = results_record_build(&in);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rec, "warmup")));
	assert_null(cJSON_GetObjectItemCaseSensitive(rec, "repeat"));
	cJSON_Delete(rec);
	in.warmup = false;
	rec = results_record_build(&in);
	assert_null(cJSON_GetObjectItemCaseSensitive(rec, "warmup"));
	cJSON_Delete(rec);
	cJSON_Delete(w);
	cJSON_Delete(a);
	cJSON_Delete(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(markdown_shape),
		cmocka_unit_test(atomic_write),
		cmocka_unit_test(warmup_left_out),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
