/* SVG written by hand rather than through a plotting library. Plotting
 * libraries in C (PLplot, cairo with a chart layer, gnuplot as a child
 * process) were weighed and none fits better here: the two plots are a few
 * lines, rectangles and labels; writing the elements ourselves keeps text as
 * text (searchable, selectable, escaped by one function), the output small
 * and deterministic (diffable from run to run, fixed number formatting), and
 * adds no dependency to a tool that is built on boxes. The tests check the
 * rendering itself with librsvg (rsvg-convert), not only the XML. */
#include "campaign/svg.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "base/xmalloc.h"
#include "gate/client/result.h"

/* A character XML 1.0 allows (U+FFFE and U+FFFF are not, nor C0 controls) and that
 * draws as itself: C1 controls and the bidirectional overrides and isolates, which
 * would reorder the text around them, are left out too. */
static bool svg_char_ok(uint32_t cp)
{
	if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0xfffe || cp == 0xffff)
		return false;
	if ((cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200e ||
	    cp == 0x200f || cp == 0x061c)
		return false;
	return true;
}

void campaign_svg_escape(strbuf *out, const char *s, size_t max_chars)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s);
	size_t chars = 0;
	while (p < end) {
		if (max_chars && chars == max_chars) {
			strbuf_addstr(out, "\xe2\x80\xa6"); /* U+2026 */
			return;
		}
		chars++;
		uint32_t cp = 0;
		size_t len = bg_utf8_seq(p, end, &cp);
		if (!len || !svg_char_ok(cp)) {
			strbuf_addch(out, '?');
			p += len ? len : 1;
			continue;
		}
		switch (*p) {
		case '&': strbuf_addstr(out, "&amp;"); break;
		case '<': strbuf_addstr(out, "&lt;"); break;
		case '>': strbuf_addstr(out, "&gt;"); break;
		case '"': strbuf_addstr(out, "&quot;"); break;
		case '\'': strbuf_addstr(out, "&apos;"); break;
		default: strbuf_add(out, p, len);
		}
		p += len;
	}
}

/* A name in a tooltip is cut here: the file stays small whatever the records hold. */
enum { SVG_TITLE_CHARS = 80 };

/* Tableau's ten: distinct from one another, baseline (index 0) blue. */
static const char *const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
				      "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};

const char *campaign_svg_colour(size_t i)
{
	return palette[i % (sizeof(palette) / sizeof(palette[0]))];
}

/* A coordinate or label number: fixed decimals, 0 in place of what is not
 * finite, so no NaN or inf reaches the file. */
static void num(strbuf *b, double v, int digits)
{
	strbuf_addf(b, "%.*f", digits, isfinite(v) ? v : 0.0);
}

static void svg_open(strbuf *b, int w, int h)
{
	strbuf_addf(b,
		    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		    "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Arial, sans-serif\" "
		    "font-size=\"12\">\n"
		    "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
		    w, h, w, h, w, h);
}

static void text(strbuf *b, double x, double y, const char *anchor, const char *extra,
		 const char *s, size_t max_chars);

/* "campaign NAME" or "results NAME" (records of runs), escaped. */
static void title_name(strbuf *b, const campaign_points *p)
{
	strbuf_addstr(b, p->no_campaign ? "results " : "campaign ");
	campaign_svg_escape(b, p->name, 40);
}

/* The line under a plot's title: the devices and the time span, so a plot
 * read alone still says what it measured and when. */
static void subtitle(strbuf *b, const campaign_points *p, const campaign_names *devs, double x,
		     double y, const char *anchor)
{
	strbuf t = STRBUF_INIT;
	strbuf_addstr(&t, devs->n ? "" : "device not recorded");
	for (size_t i = 0; i < devs->n && i < 3; i++)
		strbuf_addf(&t, "%s%s", i ? ", " : "", devs->v[i]);
	if (devs->n > 3)
		strbuf_addf(&t, " +%zu", devs->n - 3);
	const char *from = p->first_start, *to = p->last_end ? p->last_end : p->first_start;
	if (from) {
		/* 2026-12-03T14:50:01.123Z -> 2026-12-03 14:50 */
		strbuf_addf(&t, ", %.10s %.5s", from, strlen(from) > 11 ? from + 11 : "");
		if (to && strncmp(from, to, 16) != 0)
			strbuf_addf(&t, " to %.10s %.5s", to, strlen(to) > 11 ? to + 11 : "");
		strbuf_addstr(&t, " UTC");
	} else {
		strbuf_addstr(&t, ", date not recorded");
	}
	text(b, x, y, anchor, "font-size=\"11\" fill=\"#404040\" id=\"subtitle\"", t.buf, 110);
	strbuf_release(&t);
}

static void text(strbuf *b, double x, double y, const char *anchor, const char *extra,
		 const char *s, size_t max_chars)
{
	strbuf_addstr(b, "<text x=\"");
	num(b, x, 1);
	strbuf_addstr(b, "\" y=\"");
	num(b, y, 1);
	strbuf_addf(b, "\" text-anchor=\"%s\"%s%s>", anchor, extra ? " " : "", extra ? extra : "");
	campaign_svg_escape(b, s, max_chars);
	strbuf_addstr(b, "</text>\n");
}

/* One legend row below *ly: a circle with ATTRS, then LABEL. */
static void legend_mark(strbuf *out, double *ly, const char *attrs, const char *label)
{
	strbuf_addf(out, "<circle cx=\"597.0\" cy=\"%.1f\" %s/>\n", *ly - 3, attrs);
	text(out, 612, *ly + 2, "start", NULL, label, 0);
	*ly += 22;
}

static void line(strbuf *b, double x1, double y1, double x2, double y2, const char *stroke,
		 double width)
{
	strbuf_addstr(b, "<line x1=\"");
	num(b, x1, 1);
	strbuf_addstr(b, "\" y1=\"");
	num(b, y1, 1);
	strbuf_addstr(b, "\" x2=\"");
	num(b, x2, 1);
	strbuf_addstr(b, "\" y2=\"");
	num(b, y2, 1);
	strbuf_addf(b, "\" stroke=\"%s\" stroke-width=\"", stroke);
	num(b, width, 1);
	strbuf_addstr(b, "\"/>\n");
}

/* A step of 1, 2 or 5 times a power of ten near range/5. */
static double nice_step(double range)
{
	double raw = range / 5, mag = pow(10, floor(log10(raw))), f = raw / mag;
	return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

static int step_digits(double step)
{
	int d = (int)-floor(log10(step) + 1e-9);
	return d < 0 ? 0 : d > 6 ? 6 : d;
}

/* The plot area of the slowCTA plot. */
enum { PW = 780, PH = 460, PX0 = 80, PX1 = 570, PY0 = 50, PY1 = 400 };

static double xpos(const long *xs, size_t nx, bool any_nw, const campaign_point *pt, double pad)
{
	size_t xi = 0;
	while (xi < nx && xs[xi] != pt->num_workers)
		xi++;
	if (!any_nw || nx < 2 || !pt->has_num_workers)
		return (PX0 + PX1) / 2.0;
	return PX0 + pad + (double)xi / (double)(nx - 1) * (PX1 - PX0 - 2 * pad);
}

/* The y axis: linear, or logarithmic past a decade of spread. */
typedef struct yaxis {
	bool logy;
	double lo, hi, step;
	int dig;
} yaxis;

/* The axis over [ylo, yhi], clamped to what a span can be (gate/client/result.h) so that
 * no value a record holds makes it degenerate or its tick loop long. */
static void yaxis_fit(yaxis *a, double ylo, double yhi, bool have_y)
{
	if (!have_y)
		ylo = 0, yhi = 1;
	else {
		ylo = fmin(fmax(ylo, GATE_SPAN_MIN_US), GATE_SPAN_MAX_US);
		yhi = fmin(fmax(yhi, ylo), GATE_SPAN_MAX_US);
	}
	/* A candidate tens of times faster than the baseline would lie flat on a linear
	 * axis: past a decade of spread the axis is logarithmic. */
	a->logy = have_y && yhi / ylo > 10;
	if (a->logy) {
		a->lo = pow(10, floor(log10(ylo)));
		a->hi = pow(10, ceil(log10(yhi)));
		a->step = 0;
		a->dig = 0;
		return;
	}
	/* a spread too small for the digits a label has is drawn as 20% of the value */
	double range = yhi - ylo;
	if (!(range > fabs(yhi) * 1e-6))
		range = fabs(yhi) > 0 ? fabs(yhi) * 0.2 : 1;
	double step = nice_step(range);
	double lo = floor(ylo / step) * step, hi = ceil(yhi / step) * step;
	if (hi - lo < step)
		lo -= step / 2, hi += step / 2;
	a->lo = lo, a->hi = hi, a->step = step, a->dig = step_digits(step);
}

/* The y of value v, kept inside the plot area. */
static double ypos(const yaxis *a, double v)
{
	if (!isfinite(v) || v < a->lo)
		v = a->lo;
	if (v > a->hi)
		v = a->hi;
	if (a->logy)
		return PY1 -
		       (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo)) * (PY1 - PY0);
	return PY1 - (v - a->lo) / (a->hi - a->lo) * (PY1 - PY0);
}

/* No axis gets more ticks than this, whatever the values. */
enum { MAX_TICKS = 64 };

void campaign_svg_slowcta(const campaign_points *p, const char *shape, strbuf *out)
{
	/* The x positions: the shape's distinct num_workers, ascending. */
	long *xs = xcalloc(p->n_points + 1, sizeof(*xs));
	size_t nx = 0;
	bool any_nw = false;
	double ylo = INFINITY, yhi = -INFINITY;
	for (size_t i = 0; i < p->n_points; i++) {
		const campaign_point *pt = &p->points[i];
		if (strcmp(pt->shape, shape) != 0)
			continue;
		if (pt->has_num_workers) {
			any_nw = true;
			if (!nx || xs[nx - 1] != pt->num_workers)
				xs[nx++] = pt->num_workers;
		}
		for (size_t k = 0; k < pt->n_cells; k++)
			if (pt->cells[k].n) {
				ylo = fmin(ylo, pt->cells[k].slow_min);
				yhi = fmax(yhi, pt->cells[k].slow_max);
			}
	}
	bool have_y = isfinite(ylo) && isfinite(yhi);
	yaxis ax;
	yaxis_fit(&ax, ylo, yhi, have_y);
	bool logy = ax.logy;
	double lo = ax.lo, hi = ax.hi, step = ax.step;
	int dig = ax.dig;
	double pad = (PX1 - PX0) * 0.06;

	/* The x of a point: the worker counts are a sweep set, evenly spaced in ascending
	 * order (64 and 68 would overlap on a linear scale); a lone x (or none) in the middle. */
#define XPOS(pt) xpos(xs, nx, any_nw, (pt), pad)
#define YPOS(v)  ypos(&ax, (v))

	svg_open(out, PW, PH);
	strbuf_addstr(out, "<title>slowCTA against num_workers, shape ");
	campaign_svg_escape(out, shape, SVG_TITLE_CHARS);
	strbuf_addstr(out, "</title>\n");
	strbuf_addstr(out, "<text x=\"325.0\" y=\"28.0\" text-anchor=\"middle\" font-size=\"15\" "
			   "font-weight=\"bold\">");
	title_name(out, p);
	strbuf_addstr(out, ": slowCTA, shape ");
	campaign_svg_escape(out, shape, 40);
	strbuf_addstr(out, "</text>\n");
	/* the devices of this shape's cells */
	campaign_names devs = {0};
	for (size_t i = 0; i < p->n_points; i++)
		for (size_t k = 0;
		     strcmp(p->points[i].shape, shape) == 0 && k < p->points[i].n_cells; k++)
			for (size_t g = 0; g < p->points[i].cells[k].gpu_names.n; g++)
				campaign_names_add(&devs, p->points[i].cells[k].gpu_names.v[g]);
	subtitle(out, p, &devs, 325, 44, "middle");
	campaign_names_release(&devs);

	/* Grid, ticks and labels: 1, 2 and 5 of each decade on a log axis. */
	for (int i = 0; i < MAX_TICKS; i++) {
		double v = lo + i * step;
		if (logy) {
			v = lo * pow(10, i / 3) * (i % 3 == 0 ? 1 : i % 3 == 1 ? 2 : 5);
			dig = v < 1 ? step_digits(v) : 0;
		}
		if (v > hi * (1 + 1e-9) + (logy ? 0 : step * 1e-6))
			break;
		double y = YPOS(v);
		line(out, PX0, y, PX1, y, "#e0e0e0", 1);
		line(out, PX0 - 5, y, PX0, y, "#000000", 1);
		strbuf_addstr(out, "<text x=\"72.0\" y=\"");
		num(out, y + 4, 1);
		strbuf_addstr(out, "\" text-anchor=\"end\">");
		num(out, v, dig);
		strbuf_addstr(out, "</text>\n");
	}
	size_t every = nx > 12 ? (nx + 11) / 12 : 1;
	for (size_t i = 0; i < p->n_points; i++) {
		const campaign_point *pt = &p->points[i];
		if (strcmp(pt->shape, shape) != 0 || (any_nw && !pt->has_num_workers))
			continue;
		size_t xi = 0;
		while (xi < nx && xs[xi] != pt->num_workers)
			xi++;
		double x = XPOS(pt);
		line(out, x, PY1, x, PY1 + 5, "#000000", 1);
		if (xi % every == 0) {
			char lab[32] = "-";
			if (pt->has_num_workers)
				snprintf(lab, sizeof(lab), "%ld", pt->num_workers);
			text(out, x, PY1 + 19, "middle", NULL, lab, 0);
		}
	}
	line(out, PX0, PY0, PX0, PY1, "#000000", 1);
	line(out, PX0, PY1, PX1, PY1, "#000000", 1);
	text(out, (PX0 + PX1) / 2.0, PY1 + 42, "middle", NULL, "num_workers (the sweep set)", 0);
	strbuf_addf(
		out,
		"<text x=\"22.0\" y=\"%.1f\" text-anchor=\"middle\" "
		"transform=\"rotate(-90 22.0 %.1f)\">slowCTA (us%s), median and min-max</text>\n",
		(PY0 + PY1) / 2.0, (PY0 + PY1) / 2.0, logy ? ", log scale" : "");
	if (!have_y)
		text(out, (PX0 + PX1) / 2.0, (PY0 + PY1) / 2.0, "middle", "fill=\"#808080\"",
		     "no valid samples", 0);

	/* One series per candidate, in the campaign's candidate order. */
	double ly = PY0 + 10;
	bool any_noisy = false, any_prov = false;
	for (size_t ci = 0; ci < p->candidates.n; ci++) {
		const char *cand = p->candidates.v[ci], *col = campaign_svg_colour(ci);
		strbuf pts = STRBUF_INIT, marks = STRBUF_INIT;
		size_t n_pts = 0;
		bool in_shape = false;
		for (size_t i = 0; i < p->n_points; i++) {
			const campaign_point *pt = &p->points[i];
			if (strcmp(pt->shape, shape) != 0)
				continue;
			for (size_t k = 0; k < pt->n_cells; k++) {
				const campaign_cell *c = &pt->cells[k];
				if (strcmp(c->candidate, cand) != 0)
					continue;
				in_shape = true;
				if (!c->n || (any_nw && !pt->has_num_workers))
					continue;
				double x = XPOS(pt), y = YPOS(c->slow_median);
				if (n_pts++)
					strbuf_addch(&pts, ' ');
				num(&pts, x, 1);
				strbuf_addch(&pts, ',');
				num(&pts, y, 1);
				line(&marks, x, YPOS(c->slow_min), x, YPOS(c->slow_max), col, 1.5);
				line(&marks, x - 4, YPOS(c->slow_min), x + 4, YPOS(c->slow_min),
				     col, 1.5);
				line(&marks, x - 4, YPOS(c->slow_max), x + 4, YPOS(c->slow_max),
				     col, 1.5);
				/* a NOISY point is hollow: its median is not to be read as
				 * decided */
				bool noisy = c->verdict == CAMPAIGN_NOISY;
				any_noisy = any_noisy || noisy;
				strbuf_addstr(&marks, "<circle cx=\"");
				num(&marks, x, 1);
				strbuf_addstr(&marks, "\" cy=\"");
				num(&marks, y, 1);
				if (noisy)
					strbuf_addf(&marks,
						    "\" r=\"5\" fill=\"#ffffff\" stroke=\"%s\" "
						    "stroke-width=\"2.5\" class=\"noisy\"/>\n",
						    col);
				else
					strbuf_addf(&marks, "\" r=\"4.5\" fill=\"%s\"/>\n", col);
				/* the best of its point has a ring, dashed while provisional */
				if (pt->best == (long)k) {
					any_prov = any_prov || pt->best_provisional;
					strbuf_addstr(&marks, "<circle cx=\"");
					num(&marks, x, 1);
					strbuf_addstr(&marks, "\" cy=\"");
					num(&marks, y, 1);
					strbuf_addf(&marks,
						    "\" r=\"9\" fill=\"none\" stroke=\"#000000\" "
						    "stroke-width=\"1.5\"%s/>\n",
						    pt->best_provisional
							    ? " stroke-dasharray=\"3,2\" "
							      "class=\"provisional\""
							    : " class=\"best\"");
				}
			}
		}
		if (!in_shape) {
			strbuf_release(&pts);
			strbuf_release(&marks);
			continue;
		}
		if (n_pts > 1)
			strbuf_addf(out,
				    "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2.5\" "
				    "points=\"%s\"/>\n",
				    col, pts.buf);
		if (marks.len)
			strbuf_addstr(out, marks.buf);
		strbuf_addf(out, "<rect id=\"legend-%zu\" x=\"590.0\" y=\"", ci);
		num(out, ly - 10, 1);
		strbuf_addf(out, "\" width=\"14\" height=\"14\" fill=\"%s\"/>\n", col);
		strbuf legend = STRBUF_INIT;
		strbuf_addf(&legend, "%s%s", cand, n_pts ? "" : " (no valid samples)");
		text(out, 612, ly + 2, "start", NULL, legend.buf, 24);
		strbuf_release(&legend);
		ly += 22;
		strbuf_release(&pts);
		strbuf_release(&marks);
	}
	if (any_noisy)
		legend_mark(out, &ly,
			    "r=\"5\" fill=\"#ffffff\" stroke=\"#404040\" stroke-width=\"2.5\"",
			    "NOISY (undecided)");
	legend_mark(out, &ly, "r=\"7\" fill=\"none\" stroke=\"#000000\" stroke-width=\"1.5\"",
		    "best of its point");
	if (any_prov)
		legend_mark(out, &ly,
			    "r=\"7\" fill=\"none\" stroke=\"#000000\" stroke-width=\"1.5\" "
			    "stroke-dasharray=\"3,2\"",
			    "provisional best");
	strbuf_addstr(out, "</svg>\n");
	free(xs);
#undef XPOS
#undef YPOS
}

typedef struct rgb {
	int r, g, b;
} rgb;

static rgb mix(rgb a, rgb b, double t)
{
	t = t < 0 ? 0 : t > 1 ? 1 : t;
	return (rgb){(int)lround(a.r + (b.r - a.r) * t), (int)lround(a.g + (b.g - a.g) * t),
		     (int)lround(a.b + (b.b - a.b) * t)};
}

/* A ramp through `n` stops at t in [0, 1]. */
static rgb ramp(const rgb *stops, size_t n, double t)
{
	t = t < 0 ? 0 : t > 1 ? 1 : t;
	double at = t * (double)(n - 1);
	size_t k = (size_t)at;
	if (k >= n - 1)
		return stops[n - 1];
	return mix(stops[k], stops[k + 1], at - (double)k);
}

/* The ratio's colour on a log scale around the bar, so that no ratio a kernel
 * reaches saturates it (4x and 6x differ): below 1.0 reds, from a light red at
 * 1.0 to a dark one at 1/8; from 1.0 to the bar white to pale green; from the
 * bar greens darkening over four doublings (16 x the bar). */
#define RATIO_RED_SPAN   8.0
#define RATIO_GREEN_SPAN 16.0
static rgb ratio_colour(double r, double bar)
{
	static const rgb reds[] = {{252, 187, 161}, {239, 59, 44}, {165, 15, 21}},
			 greens[] = {{161, 217, 155}, {65, 171, 93}, {0, 109, 44}, {0, 55, 30}};
	static const rgb white = {247, 247, 247}, pale = {217, 240, 211};
	if (r < 1)
		return ramp(reds, 3, log(1 / r) / log(RATIO_RED_SPAN));
	if (r < bar)
		return mix(white, pale, log(r) / log(bar));
	return ramp(greens, 4, log(r / bar) / log(RATIO_GREEN_SPAN));
}

/* Text on a cell: white on a dark fill, black on a light one. */
static const char *ink(rgb k)
{
	return 0.299 * k.r + 0.587 * k.g + 0.114 * k.b < 120 ? "#ffffff" : "#000000";
}

static const char grey[] = "#bdbdbd";

enum { CW = 58, CH = 32, TOP = 56, PANEL_HEAD = 58, PANEL_GAP = 16, AXIS_W = 22 };

void campaign_svg_ratio(const campaign_points *p, strbuf *out)
{
	/* Columns: a point without num_workers first ("-"), then the distinct values. */
	bool any_null = false;
	long *cols = xcalloc(p->n_points + 1, sizeof(*cols));
	size_t nc = 0;
	for (size_t i = 0; i < p->n_points; i++) {
		const campaign_point *pt = &p->points[i];
		if (!pt->has_num_workers) {
			any_null = true;
			continue;
		}
		size_t k = 0;
		while (k < nc && cols[k] != pt->num_workers)
			k++;
		if (k == nc)
			cols[nc++] = pt->num_workers;
	}
	for (size_t i = 1; i < nc; i++)
		for (size_t j = i; j > 0 && cols[j - 1] > cols[j]; j--) {
			long t = cols[j];
			cols[j] = cols[j - 1];
			cols[j - 1] = t;
		}
	size_t ncol = nc + (any_null ? 1 : 0), nrow = p->shapes.n;
	size_t longest = 4;
	for (size_t s = 0; s < nrow; s++) {
		size_t l = strlen(p->shapes.v[s]);
		longest = l > longest ? l : longest;
	}
	int label_w = AXIS_W + 20 + 7 * (int)(longest > 24 ? 24 : longest);
	size_t panels = 0;
	for (size_t ci = 0; ci < p->candidates.n; ci++)
		if (strcmp(p->candidates.v[ci], "baseline") != 0)
			panels++;
	/* Rows, columns and panels multiply: a grid past the cap (records of many shapes,
	 * worker counts and candidates) is not drawn, the Markdown report has it all. */
	bool too_many = panels && nrow && ncol &&
			(ncol > CAMPAIGN_SVG_MAX_CELLS / nrow ||
			 panels > CAMPAIGN_SVG_MAX_CELLS / (nrow * ncol));
	size_t n_panels = panels;
	if (too_many)
		ncol = 0, nrow = 0, panels = 0;
	int grid_w = label_w + (int)ncol * CW;
	/* wide enough for the title too (about 9 px a character, bold at 15 px) */
	size_t name_len = strlen(p->name) > 40 ? 40 : strlen(p->name);
	int title_w = 40 + 9 * (int)(name_len + 45);
	int w = grid_w + 40 + 190, panel_h = PANEL_HEAD + (int)nrow * CH + PANEL_GAP;
	int h = TOP + (int)(panels ? panels : 1) * panel_h + 20;
	if (h < TOP + 310)
		h = TOP + 310;
	if (w < title_w)
		w = title_w;
	svg_open(out, w, h);
	strbuf_addstr(out, "<title>ratio baseline over candidate (slowCTA medians)</title>\n");
	strbuf_addf(out, "<text x=\"20.0\" y=\"26.0\" font-size=\"15\" font-weight=\"bold\">");
	title_name(out, p);
	strbuf_addf(out, ": ratio baseline/candidate, bar %.2f</text>\n", p->bar);
	subtitle(out, p, &p->gpu_names, 20, 44, "start");
	if (too_many) {
		strbuf t = STRBUF_INIT;
		strbuf_addf(&t,
			    "%zu candidates x %zu shapes x %zu worker counts: too many cells to "
			    "draw (more than %d); the report's tables hold them",
			    n_panels, p->shapes.n, nc + (any_null ? 1 : 0), CAMPAIGN_SVG_MAX_CELLS);
		text(out, 20, TOP + 30, "start", "fill=\"#808080\"", t.buf, 0);
		strbuf_release(&t);
	} else if (!panels) {
		text(out, 20, TOP + 30, "start", "fill=\"#808080\"",
		     "no candidate besides the baseline", 0);
	}

	size_t panel = 0;
	bool any_prov_cell = false;
	for (size_t ci = 0; ci < p->candidates.n && !too_many; ci++) {
		const char *cand = p->candidates.v[ci];
		if (strcmp(cand, "baseline") == 0)
			continue;
		double y0 = TOP + (double)panel * panel_h;
		strbuf t = STRBUF_INIT;
		strbuf_addf(&t, "candidate %s", cand);
		text(out, 20, y0 + 18, "start", "font-weight=\"bold\"", t.buf, 50);
		strbuf_release(&t);
		/* the axis titles: worker counts across, shapes down */
		text(out, label_w + (double)ncol * CW / 2.0, y0 + 36, "middle",
		     "font-style=\"italic\" class=\"axis-title\"", "num_workers", 0);
		double mid = y0 + PANEL_HEAD + (double)nrow * CH / 2.0;
		strbuf_addf(out,
			    "<text x=\"14.0\" y=\"%.1f\" text-anchor=\"middle\" "
			    "font-style=\"italic\" class=\"axis-title\" "
			    "transform=\"rotate(-90 14.0 %.1f)\">shape</text>\n",
			    mid, mid);
		for (size_t c = 0; c < ncol; c++) {
			char lab[32] = "-";
			if (!any_null || c > 0)
				snprintf(lab, sizeof(lab), "%ld", cols[c - (any_null ? 1 : 0)]);
			text(out, label_w + c * CW + CW / 2.0, y0 + PANEL_HEAD - 6, "middle", NULL,
			     lab, 0);
		}
		for (size_t r = 0; r < nrow; r++) {
			const char *shape = p->shapes.v[r];
			double ry = y0 + PANEL_HEAD + (double)r * CH;
			text(out, label_w - 8, ry + CH / 2.0 + 4, "end", NULL, shape, 24);
			for (size_t c = 0; c < ncol; c++) {
				bool null_col = any_null && c == 0;
				long nw = null_col ? 0 : cols[c - (any_null ? 1 : 0)];
				const campaign_cell *cell = NULL;
				const campaign_point *cell_pt = NULL;
				for (size_t i = 0; i < p->n_points && !cell; i++) {
					const campaign_point *pt = &p->points[i];
					cell_pt = pt;
					if (strcmp(pt->shape, shape) != 0 ||
					    pt->has_num_workers == null_col ||
					    (!null_col && pt->num_workers != nw))
						continue;
					for (size_t k = 0; k < pt->n_cells; k++)
						if (strcmp(pt->cells[k].candidate, cand) == 0)
							cell = &pt->cells[k];
				}
				bool bad = !cell || cell->verdict == CAMPAIGN_INVALID ||
					   cell->verdict == CAMPAIGN_TIMEOUT_HANG ||
					   !isfinite(cell->ratio);
				char fill[8];
				rgb k = {189, 189, 189};
				if (bad) {
					snprintf(fill, sizeof(fill), "%s", grey);
				} else {
					k = ratio_colour(cell->ratio, p->bar);
					snprintf(fill, sizeof(fill), "#%02x%02x%02x", k.r & 0xff,
						 k.g & 0xff, k.b & 0xff);
				}
				double x = label_w + (double)c * CW;
				strbuf_addf(out, "<rect id=\"cell-%zu-%zu-%zu\" x=\"", panel, r, c);
				num(out, x, 1);
				strbuf_addstr(out, "\" y=\"");
				num(out, ry, 1);
				bool prov = cell && cell_pt && cell_pt->best >= 0 &&
					    &cell_pt->cells[cell_pt->best] == cell &&
					    cell_pt->best_provisional;
				any_prov_cell = any_prov_cell || prov;
				strbuf_addf(out,
					    "\" width=\"%d\" height=\"%d\" fill=\"%s\" "
					    "stroke=\"%s\" stroke-width=\"%s\"%s><title>",
					    CW, CH, fill, prov ? "#000000" : "#ffffff",
					    prov ? "2" : "1",
					    prov ? " stroke-dasharray=\"4,3\" class=\"provisional\""
						 : "");
				campaign_svg_escape(out, shape, SVG_TITLE_CHARS);
				strbuf_addf(out, " nw %s ", null_col ? "-" : "");
				if (!null_col)
					strbuf_addf(out, "%ld ", nw);
				campaign_svg_escape(out, cand, SVG_TITLE_CHARS);
				strbuf_addf(out, ": %s%s</title></rect>\n",
					    cell ? campaign_verdict_name(cell->verdict) : "no data",
					    prov ? ", provisional best" : "");
				strbuf label = STRBUF_INIT;
				if (!cell)
					strbuf_addstr(&label, "");
				else if (cell->verdict == CAMPAIGN_TIMEOUT_HANG)
					strbuf_addstr(&label, "HANG");
				else if (cell->verdict == CAMPAIGN_MEASURED)
					strbuf_addstr(&label, "MEAS");
				else if (cell->verdict == CAMPAIGN_INVALID ||
					 !isfinite(cell->ratio))
					strbuf_addstr(&label, "INV");
				else
					strbuf_addf(&label, "%.2f%s", cell->ratio,
						    cell->verdict == CAMPAIGN_NOISY ? "~" : "");
				if (label.len) {
					char style[48];
					snprintf(style, sizeof(style),
						 "font-size=\"11\" fill=\"%s\"", ink(k));
					text(out, x + CW / 2.0, ry + CH / 2.0 + 8, "middle", style,
					     label.buf, 0);
				}
				strbuf_release(&label);
			}
		}
		panel++;
	}

	/* The colour legend: swatches on the log scale, 1/8 to 16 x the bar. */
	double lx = grid_w + 40, ly = TOP + 10;
	text(out, lx, ly, "start", "font-weight=\"bold\"", "ratio (log scale)", 0);
	const double marks[] = {0.125,      0.5,        0.8,        1.0,        p->bar,
				2 * p->bar, 4 * p->bar, 8 * p->bar, 16 * p->bar};
	size_t shown = 0;
	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
		/* a bar at or under 1.0 makes marks repeat or go back: each once, rising */
		if (i && marks[i] <= marks[i - 1] + 1e-9)
			continue;
		rgb k = ratio_colour(marks[i], p->bar);
		double y = ly + 10 + (double)shown++ * 22;
		strbuf_addstr(out, "<rect x=\"");
		num(out, lx, 1);
		strbuf_addstr(out, "\" y=\"");
		num(out, y, 1);
		strbuf_addf(out,
			    "\" width=\"28\" height=\"18\" fill=\"#%02x%02x%02x\" "
			    "stroke=\"#808080\" stroke-width=\"0.5\"/>\n",
			    k.r & 0xff, k.g & 0xff, k.b & 0xff);
		strbuf_addstr(out, "<text x=\"");
		num(out, lx + 36, 1);
		strbuf_addstr(out, "\" y=\"");
		num(out, y + 13, 1);
		strbuf_addstr(out, "\">");
		strbuf_addf(out, "%g", marks[i]);
		if (marks[i] == p->bar)
			strbuf_addstr(out, " (bar)");
		strbuf_addstr(out, "</text>\n");
	}
	double gy = ly + 10 + (double)shown * 22;
	strbuf_addstr(out, "<rect x=\"");
	num(out, lx, 1);
	strbuf_addstr(out, "\" y=\"");
	num(out, gy, 1);
	strbuf_addf(out, "\" width=\"28\" height=\"18\" fill=\"%s\"/>\n", grey);
	text(out, lx + 36, gy + 13, "start", NULL, "no data, INVALID", 0);
	text(out, lx, gy + 40, "start", "font-size=\"10\"", "~ NOISY (undecided)", 0);
	if (any_prov_cell)
		text(out, lx, gy + 56, "start", "font-size=\"10\"",
		     "dashed border: provisional best", 0);
	strbuf_addstr(out, "</svg>\n");
	free(cols);
}
