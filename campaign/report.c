#include "campaign/report.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/atomic.h"
#include "base/xmalloc.h"
#include "campaign/svg.h"

char *campaign_report_stem(const char *results_path)
{
	const char *base = strrchr(results_path, '/');
	base = base ? base + 1 : results_path;
	size_t n = strlen(base);
	if (n > 6 && strcmp(base + n - 6, ".jsonl") == 0)
		n -= 6;
	if (n > CAMPAIGN_REPORT_STEM_MAX) {
		n = CAMPAIGN_REPORT_STEM_MAX;
		while (n && ((unsigned char)base[n] & 0xc0) == 0x80)
			n--;
	}
	return xstrndup(base, n);
}

char *campaign_report_shape_file(const char *shape)
{
	const char *from = *shape ? shape : "_";
	char *s = xstrndup(from, strnlen(from, CAMPAIGN_REPORT_SHAPE_MAX));
	for (char *c = s; *c; c++)
		if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
		      (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' || *c == '-'))
			*c = '_';
	if (s[0] == '.')
		s[0] = '_';
	return s;
}

/* Text from a user file into Markdown: the characters Markdown or HTML would
 * read as markup are escaped (a '|' would split a table cell), control bytes
 * become '?'. */
static void md(strbuf *b, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7f)
			strbuf_addch(b, '?');
		else if (c == '<')
			strbuf_addstr(b, "&lt;");
		else if (c == '>')
			strbuf_addstr(b, "&gt;");
		else if (c == '&')
			strbuf_addstr(b, "&amp;");
		else if (strchr("\\`*_[]|", c))
			strbuf_addf(b, "\\%c", c);
		else
			strbuf_addch(b, (char)c);
	}
}

/* A relative link target: bytes outside the unreserved set percent-encoded. */
static void url(strbuf *b, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    strchr("-._~", c))
			strbuf_addch(b, (char)c);
		else
			strbuf_addf(b, "%%%02X", c);
	}
}

static void md_num(strbuf *b, double v, int digits)
{
	if (isfinite(v))
		strbuf_addf(b, "%.*f", digits, v);
	else
		strbuf_addch(b, '-');
}

static void md_names(strbuf *b, const campaign_names *l)
{
	if (!l->n)
		strbuf_addstr(b, "-");
	for (size_t i = 0; i < l->n; i++) {
		if (i)
			strbuf_addstr(b, ", ");
		md(b, l->v[i]);
	}
}

static void md_nw(strbuf *b, const campaign_point *pt)
{
	if (pt->has_num_workers)
		strbuf_addf(b, "%ld", pt->num_workers);
	else
		strbuf_addch(b, '-');
}

static void md_row(strbuf *b, const campaign_points *p, const campaign_point *pt, size_t k)
{
	const campaign_cell *c = &pt->cells[k];
	bool best = pt->best == (long)k;
	const char *bold = best ? "**" : "";
	strbuf_addstr(b, "| ");
	md_nw(b, pt);
	strbuf_addf(b, " | %s", bold);
	md(b, c->candidate);
	strbuf_addf(b, "%s | %s", bold, bold);
	md_num(b, c->slow_median, 2);
	strbuf_addf(b, "%s | ", bold);
	if (c->n) {
		strbuf_addf(b, "%.2f-%.2f (", c->slow_min, c->slow_max);
		md_num(b, c->slow_cv, 1);
		strbuf_addstr(b, "%)");
	} else {
		strbuf_addch(b, '-');
	}
	strbuf_addstr(b, " | ");
	md_num(b, c->ratio, 3);
	strbuf_addf(b, " | %s | ", c->baseline ? "-" : campaign_ratio_source_name(c->ratio_source));
	md_num(b, c->wall_median, 2);
	strbuf_addstr(b, " | ");
	md_num(b, c->sum_median, 1);
	strbuf_addstr(b, " | ");
	md_num(b, c->cos_min, 5);
	strbuf_addstr(b, " | ");
	if (c->verdict == CAMPAIGN_NOISY && p->strict_noise && c->cv_warn) {
		strbuf_addf(b, "**NOISY** (CV %.1f%% > %.1f%%)", c->slow_cv, p->max_cv);
	} else if (c->verdict == CAMPAIGN_NOISY) {
		strbuf t = STRBUF_INIT;
		measure_decision_text(&c->dec, p->bar, &t);
		strbuf_addstr(b, "**NOISY** (");
		md(b, t.buf);
		strbuf_addch(b, ')');
		strbuf_release(&t);
	} else if (c->sloughed) {
		strbuf_addstr(b, "BELOW_BAR (sumCTA above the baseline's tolerance)");
	} else {
		strbuf_addstr(b, campaign_verdict_name(c->verdict));
		if (c->single && !c->baseline)
			strbuf_addstr(b, " (1 run a side: no interval)");
		else if (c->decided && c->dec.interval &&
			 (c->verdict == CAMPAIGN_PASS_GATE || c->verdict == CAMPAIGN_BELOW_BAR))
			strbuf_addf(b, " (90%% interval %.3f-%.3f)", c->dec.lo, c->dec.hi);
		if (c->cv_warn)
			strbuf_addf(b, " (CV %.1f%% > %.1f%%: a warning)", c->slow_cv, p->max_cv);
	}
	strbuf_addf(b, " | %zu", c->n);
	if (c->n_bad)
		strbuf_addf(b, " (+%zu %s)", c->n_bad, c->worst_bad);
	strbuf_addstr(b, " |\n");
}

void campaign_report_markdown(const campaign_points *p, const char *results_path,
			      char *const *svg_shapes, const char *svg_ratio, strbuf *out)
{
	strbuf_addstr(out, p->no_campaign ? "# Results " : "# Campaign ");
	md(out, p->name);
	strbuf_addstr(out, "\n\n- results file: ");
	md(out, results_path);
	if (p->file) {
		strbuf_addstr(out, "\n- campaign file: ");
		md(out, p->file);
	}
	if (p->pool) {
		strbuf_addstr(out, "\n- pool: ");
		md(out, p->pool);
	}
	strbuf_addf(out, "\n- %s: %zu", p->no_campaign ? "records" : "jobs recorded",
		    p->jobs_recorded);
	if (p->jobs_expected)
		strbuf_addf(out, " of %zu", p->jobs_expected);
	strbuf_addstr(out, "\n- boxes: ");
	md_names(out, &p->boxes);
	strbuf_addstr(out, "\n- GPUs: ");
	md_names(out, &p->gpu_names);
	strbuf_addstr(out, "\n- time: ");
	md(out, p->first_start ? p->first_start : "-");
	strbuf_addstr(out, " to ");
	md(out, p->last_end ? p->last_end : "-");
	strbuf_addf(out,
		    "\n- bar %.2f, max CV %.1f%%, sumCTA tolerance %.1f%%\n\n"
		    "The ratio is the baseline's median slowCTA over the candidate's: from the "
		    "baseline's own jobs at the same point (source jobs), else from the gate's "
		    "in-tree measurement (in-gate). A verdict is decided on the ratio's 90%% "
		    "interval (Hodges-Lehmann): PASS_GATE when it lies above the bar, BELOW_BAR "
		    "below, NOISY when it straddles the bar or no interval exists yet; MEASURED: "
		    "the candidate measured alone, with no baseline to compare (never best). The "
		    "best of "
		    "each point (bold) has the lowest median slowCTA among PASS_GATE, BELOW_BAR "
		    "(not sloughed), NOISY and the baseline; provisional when it is not measurably "
		    "faster than the next.\n",
		    p->bar, p->max_cv, p->sum_tolerance);

	for (size_t s = 0; s < p->shapes.n; s++) {
		const char *shape = p->shapes.v[s];
		strbuf_addstr(out, "\n## Shape ");
		md(out, shape);
		strbuf_addstr(out, "\n\n| num_workers | candidate | slowCTA median (us) | spread "
				   "min-max (CV) | ratio | ratio source | wall (us) | sumCTA (us) "
				   "| cos min | verdict | n |\n"
				   "|---:|---|---:|---|---:|---|---:|---:|---:|---|---:|\n");
		for (size_t i = 0; i < p->n_points; i++)
			if (strcmp(p->points[i].shape, shape) == 0)
				for (size_t k = 0; k < p->points[i].n_cells; k++)
					md_row(out, p, &p->points[i], k);
		strbuf_addstr(out, "\nBest per point: ");
		bool first = true;
		for (size_t i = 0; i < p->n_points; i++) {
			const campaign_point *pt = &p->points[i];
			if (strcmp(pt->shape, shape) != 0)
				continue;
			const campaign_cell *b = campaign_point_best(pt);
			strbuf_addstr(out, first ? "" : ", ");
			first = false;
			md_nw(out, pt);
			strbuf_addstr(out, " ");
			md(out, b ? b->candidate : "none");
			if (b && pt->best_provisional)
				strbuf_addstr(out, " (provisional)");
		}
		strbuf_addstr(out, "\n\nWinner flips: ");
		strbuf flips = STRBUF_INIT;
		campaign_flips_text(p, shape, &flips);
		md(out, flips.buf);
		strbuf_release(&flips);
		strbuf_addstr(out, "\n\n![slowCTA against num_workers, shape ");
		md(out, shape);
		strbuf_addstr(out, "](");
		url(out, svg_shapes[s]);
		strbuf_addstr(out, ")\n");
	}
	strbuf_addstr(out, "\n## Ratio per shape and num_workers\n\n![ratio heat map](");
	url(out, svg_ratio);
	strbuf_addstr(out, ")\n\n## Notes\n\n");
	size_t notes = 0;
	if (p->run_records) {
		strbuf_addf(out,
			    "- %zu record%s of runs (not of a campaign): each is a final record of "
			    "its point; other gate arguments make another candidate, another "
			    "device another shape\n",
			    p->run_records, p->run_records == 1 ? "" : "s");
		notes++;
	}
	if (p->jobs_expected > p->jobs_recorded) {
		strbuf_addf(out, "- %zu of %zu jobs not recorded (missing)\n",
			    p->jobs_expected - p->jobs_recorded, p->jobs_expected);
		notes++;
	}
	if (p->duplicates) {
		strbuf_addf(out, "- %zu duplicate final record%s of a job (the last one kept)\n",
			    p->duplicates, p->duplicates == 1 ? "" : "s");
		notes++;
	}
	if (p->not_final) {
		strbuf_addf(out, "- %zu record%s of cut attempts (requeued) not counted\n",
			    p->not_final, p->not_final == 1 ? "" : "s");
		notes++;
	}
	if (p->superseded) {
		strbuf_addf(out,
			    "- %zu record%s of an earlier definition (gate_args, flags or kernel "
			    "file since edited) not counted: ",
			    p->superseded, p->superseded == 1 ? "" : "s");
		for (size_t i = 0; i < p->superseded_candidates.n; i++) {
			if (i)
				strbuf_addstr(out, ", ");
			md(out, p->superseded_candidates.v[i]);
		}
		strbuf_addch(out, '\n');
		notes++;
	}
	if (p->bad_lines) {
		strbuf_addf(out,
			    "- %zu line%s of the results file not a record (first: line %zu)\n",
			    p->bad_lines, p->bad_lines == 1 ? "" : "s", p->first_bad);
		notes++;
	}
	if (p->torn) {
		strbuf_addstr(out, "- the last line of the results file is torn (an interrupted "
				   "write), skipped\n");
		notes++;
	}
	if (!notes)
		strbuf_addstr(out, "- none\n");
}

/* An error about `path` with the reason: a path too long for the message is
 * shown by its start and end, so the reason is never what gets cut. */
static int fail_path(bg_err *err, const char *path, int e)
{
	size_t n = strlen(path);
	if (n <= 400)
		return bg_fail(err, BG_EIO, "%s: %s", path, strerror(e));
	return bg_fail(err, BG_EIO, "%.200s...%s (%zu bytes): %s", path, path + n - 150, n,
		       strerror(e));
}

/* Writes `data` to DIR/NAME through a temporary file in DIR renamed into
 * place, so a reader never sees half a file. */
static int write_atomic(const char *dir, const char *name, const strbuf *data, char **path_out,
			bg_err *err)
{
	char *path = xasprintf("%s/%s", dir, name);
	int rc = bg_write_atomic(path, data->buf, data->len, err);
	if (rc < 0) {
		free(path);
		return rc;
	}
	*path_out = path;
	return 0;
}

int campaign_report_write(const campaign_points *p, const char *results_path, const char *out_dir,
			  campaign_names *written, bg_err *err)
{
	char *stem = campaign_report_stem(results_path);
	char *dir = NULL, **shape_files = xcalloc(p->shapes.n + 1, sizeof(char *));
	char *ratio_file = xasprintf("%s.ratio.svg", stem);
	int rc = 0;
	if (out_dir) {
		dir = xstrdup(out_dir);
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			rc = fail_path(err, dir, errno);
			goto out;
		}
	} else {
		const char *slash = strrchr(results_path, '/');
		dir = slash ? xstrndup(results_path,
				       slash == results_path ? 1 : (size_t)(slash - results_path))
			    : xstrdup(".");
	}
	/* Two shapes may clean up to the same file name: the later ones are numbered. */
	for (size_t s = 0; s < p->shapes.n; s++) {
		char *part = campaign_report_shape_file(p->shapes.v[s]);
		char *name = xasprintf("%s.slowcta.%s.svg", stem, part);
		for (int k = 2;; k++) {
			bool taken = strcmp(name, ratio_file) == 0;
			for (size_t j = 0; j < s && !taken; j++)
				taken = strcmp(shape_files[j], name) == 0;
			if (!taken)
				break;
			free(name);
			name = xasprintf("%s.slowcta.%s-%d.svg", stem, part, k);
		}
		free(part);
		shape_files[s] = name;
	}
	for (size_t s = 0; s < p->shapes.n && !rc; s++) {
		strbuf svg = STRBUF_INIT;
		char *path = NULL;
		campaign_svg_slowcta(p, p->shapes.v[s], &svg);
		rc = write_atomic(dir, shape_files[s], &svg, &path, err);
		strbuf_release(&svg);
		campaign_names_add(written, path);
		free(path);
	}
	if (!rc) {
		strbuf svg = STRBUF_INIT;
		char *path = NULL;
		campaign_svg_ratio(p, &svg);
		rc = write_atomic(dir, ratio_file, &svg, &path, err);
		strbuf_release(&svg);
		campaign_names_add(written, path);
		free(path);
	}
	if (!rc) {
		strbuf text = STRBUF_INIT;
		char *path = NULL, *name = xasprintf("%s.report.md", stem);
		campaign_report_markdown(p, results_path, shape_files, ratio_file, &text);
		rc = write_atomic(dir, name, &text, &path, err);
		strbuf_release(&text);
		campaign_names_add(written, path);
		free(path);
		free(name);
	}
out:
	for (size_t s = 0; s < p->shapes.n; s++)
		free(shape_files[s]);
	free(shape_files);
	free(ratio_file);
	free(dir);
	free(stem);
	return rc;
}
