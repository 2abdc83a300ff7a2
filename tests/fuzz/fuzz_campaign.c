/* libFuzzer target for campaign/: the campaign file reader (spec.c) with the job
 * expansion, and what report and the campaign's summary make of any results file
 * (points.c, svg.c): a user's file and records written by other runs, or torn by a
 * crash, come back through them.
 *
 * Input: one control byte, then the bytes. Control bit 0: the bytes are a campaign
 * file (else a results file).
 *
 * Invariants checked:
 *   - a campaign file that loads has a pool, shapes of safe characters, candidates,
 *     1-100 repeats and a results path; its jobs number shapes x worker counts x
 *     candidates x repeats, every key is unique and names its shape and candidate,
 *     and every job's words hold --shape SHAPE;
 *   - a results file that reads gives a summary, a JSON form and SVG plots that
 *     hold an <svg element, end with </svg>, never print nan or inf, are well-formed
 *     XML (tests/xml_check.h) and stay within a size bound linear in what the
 *     records hold (points, cells, shapes, candidates), whatever the names and
 *     values; drawing one returns (no value makes an axis loop).
 */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "tests/xml_check.h"
#include "base/error.h"
#include "base/strbuf.h"
#include "campaign/points.h"
#include "campaign/spec.h"
#include "campaign/svg.h"

static char dir[64], ini[96], results[96];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_tmpdir(dir, sizeof(dir), "campaign");
	snprintf(ini, sizeof(ini), "%s/c.ini", dir);
	snprintf(results, sizeof(results), "%s/r.jsonl", dir);
	return 0;
}

static void write_file(const char *path, const uint8_t *d, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		abort();
	if (n && fwrite(d, 1, n, f) != n)
		abort();
	fclose(f);
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(((const campaign_job *)a)->key, ((const campaign_job *)b)->key);
}

static void spec_case(void)
{
	campaign_spec s;
	bg_err err = {0};
	if (campaign_spec_load(ini, NULL, &s, &err) != 0) {
		CHECK(err.msg[0]);
		return;
	}
	CHECK(s.pool && s.n_shapes && s.n_cands && s.results);
	CHECK(s.repeats >= 1 && s.repeats <= CAMPAIGN_REPEATS_MAX);
	for (size_t i = 0; i < s.n_shapes; i++)
		CHECK(strspn(s.shapes[i], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
					  "0123456789._-") == strlen(s.shapes[i]));
	campaign_job *jobs = NULL;
	size_t n = 0;
	CHECK(campaign_jobs_expand(&s, &jobs, &n, &err) == 0);
	CHECK(n ==
	      s.n_shapes * (s.n_num_workers ? s.n_num_workers : 1) * s.n_cands * (size_t)s.repeats);
	for (size_t i = 0; i < n; i++) {
		const campaign_job *j = &jobs[i];
		char want[CAMPAIGN_KEY_MAX];
		snprintf(want, sizeof(want), "%s/%s/", s.name, s.shapes[j->shape]);
		CHECK(strncmp(j->key, want, strlen(want)) == 0);
		CHECK(strstr(j->key, s.cands[j->cand].name));
		bool shape = false;
		for (size_t w = 0; w + 1 < j->n_words; w++)
			shape = shape || (strcmp(j->words[w], "--shape") == 0 &&
					  strcmp(j->words[w + 1], s.shapes[j->shape]) == 0);
		CHECK(shape);
	}
	if (n) {
		cJSON *o = campaign_job_json(&s, &jobs[0], n, 1, true);
		CHECK(cJSON_IsObject(o));
		cJSON_Delete(o);
	}
	qsort(jobs, n, sizeof(*jobs), cmp_key);
	for (size_t i = 1; i < n; i++)
		CHECK(strcmp(jobs[i - 1].key, jobs[i].key) != 0);
	campaign_jobs_free(jobs, n);
	campaign_spec_release(&s);
}

/* Whether a name the records hold could itself spell nan or inf in the output. */
static bool names_spell_nonfinite(const campaign_points *p)
{
	const campaign_names *lists[] = {&p->shapes, &p->candidates};
	if (p->name && (strcasestr(p->name, "nan") || strcasestr(p->name, "inf")))
		return true;
	for (size_t l = 0; l < 2; l++)
		for (size_t i = 0; i < lists[l]->n; i++)
			if (strcasestr(lists[l]->v[i], "nan") || strcasestr(lists[l]->v[i], "inf"))
				return true;
	return false;
}

/* The most an SVG of `p` may take: a fixed part (axes, legend, notes) and a part per
 * cell, point, shape and candidate (a name is drawn cut to 80 characters, at most 6
 * bytes each once escaped). */
static size_t svg_bound(const campaign_points *p)
{
	size_t cells = 0;
	for (size_t i = 0; i < p->n_points; i++)
		cells += p->points[i].n_cells;
	size_t drawn = p->shapes.n * p->candidates.n * (p->n_points + 1);
	if (drawn > CAMPAIGN_SVG_MAX_CELLS)
		drawn = CAMPAIGN_SVG_MAX_CELLS;
	return 16384 + 2048 * (cells + p->n_points + drawn) +
	       1024 * (p->shapes.n + p->n_points + 1) * (p->candidates.n + 1);
}

static void svg_ok(const campaign_points *p, const strbuf *b)
{
	CHECK(b->len > 7 && strstr(b->buf, "<svg "));
	CHECK(strcmp(b->buf + b->len - 7, "</svg>\n") == 0);
	if (!names_spell_nonfinite(p))
		CHECK(!strcasestr(b->buf, "nan") && !strcasestr(b->buf, "inf"));
	const char *why = xml_check(b->buf, b->len);
	if (why)
		fprintf(stderr, "not well-formed: %s\n", why);
	CHECK(!why);
	CHECK(b->len <= svg_bound(p));
}

static void results_case(void)
{
	campaign_points p;
	bg_err err = {0};
	int rc = campaign_points_read(results, NULL, &p, &err);
	if (rc == 0) {
		strbuf b = STRBUF_INIT;
		campaign_summary_text(&p, &b);
		CHECK(b.len);
		cJSON *o = campaign_points_json(&p);
		CHECK(cJSON_IsObject(o));
		cJSON_Delete(o);
		for (size_t i = 0; i < p.shapes.n; i++) {
			strbuf_reset(&b);
			campaign_svg_slowcta(&p, p.shapes.v[i], &b);
			svg_ok(&p, &b);
		}
		strbuf_reset(&b);
		campaign_svg_ratio(&p, &b);
		svg_ok(&p, &b);
		strbuf_release(&b);
	} else {
		CHECK(err.msg[0]);
	}
	campaign_points_release(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	bool spec = data[0] & 1;
	write_file(spec ? ini : results, data + 1, size - 1);
	if (spec)
		spec_case();
	else
		results_case();
	return 0;
}
