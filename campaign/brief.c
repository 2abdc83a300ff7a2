#include "campaign/brief.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/quote.h"

/* The command line of one gate invocation for the shape, at `nw` (NULL: the
 * shape takes no worker count). */
static void gate_command_words(const campaign_points *p, const campaign_brief_opts *o,
			       const char *nw, strbuf *out);

/* The command as one line of printable text: names from the records may hold
 * control bytes, which never reach the terminal (each becomes '?'). */
static void gate_command(const campaign_points *p, const campaign_brief_opts *o, const char *nw,
			 strbuf *out)
{
	strbuf line = STRBUF_INIT;
	gate_command_words(p, o, nw, &line);
	for (size_t i = 0; i < line.len; i++)
		if (((unsigned char)line.buf[i] < 0x20 && line.buf[i] != '\n') ||
		    line.buf[i] == 0x7f)
			line.buf[i] = '?';
	strbuf_add(out, line.buf, line.len);
	strbuf_release(&line);
}

static void gate_command_words(const campaign_points *p, const campaign_brief_opts *o,
			       const char *nw, strbuf *out)
{
	strbuf_addstr(out, "  boxgate run --pool ");
	if (p->pool)
		bg_quote(out, p->pool);
	else
		strbuf_addstr(out, "POOL");
	if (!o->no_kernel) {
		strbuf_addstr(out, " --kernel ");
		if (o->kernel)
			bg_quote(out, o->kernel);
		else
			strbuf_addstr(out, "CANDIDATE_FILE");
	}
	strbuf_addstr(out, " --");
	for (size_t i = 0; i < p->n_gate_args; i++) {
		strbuf_addch(out, ' ');
		bg_quote(out, p->gate_args[i]);
	}
	strbuf_addstr(out, " --shape ");
	bg_quote(out, o->shape);
	strbuf_addstr(out, " --configs ");
	bg_quote(out, o->shape);
	if (nw)
		strbuf_addf(out, " --num-workers %s", nw);
	strbuf_addch(out, '\n');
}

static const campaign_cell *baseline_of(const campaign_point *pt)
{
	for (size_t k = 0; k < pt->n_cells; k++)
		if (pt->cells[k].baseline)
			return &pt->cells[k];
	return NULL;
}

static void num(strbuf *b, double v)
{
	if (isfinite(v))
		strbuf_addf(b, "%.3f", v);
	else
		strbuf_addch(b, '-');
}

static void nw_text(char *buf, size_t len, const campaign_point *pt)
{
	if (pt->has_num_workers)
		snprintf(buf, len, "%ld", pt->num_workers);
	else
		snprintf(buf, len, "-");
}

int campaign_brief_text(const campaign_points *p, const campaign_brief_opts *o, strbuf *out,
			bg_err *err)
{
	strbuf shapes = STRBUF_INIT;
	for (size_t s = 0; s < p->shapes.n; s++)
		strbuf_addf(&shapes, "%s%s", s ? ", " : "", p->shapes.v[s]);
	bool known = false, measured = false, any_nw = false;
	for (size_t i = 0; i < p->n_points; i++) {
		const campaign_point *pt = &p->points[i];
		if (strcmp(pt->shape, o->shape) != 0)
			continue;
		known = true;
		any_nw |= pt->has_num_workers;
		const campaign_cell *b = baseline_of(pt);
		measured |= b && b->n;
	}
	int rc = 0;
	if (!known) {
		rc = bg_fail(err, BG_EUSAGE, "campaign %s has no shape '%s' (shapes: %s)", p->name,
			     o->shape, shapes.buf);
		goto out;
	}
	if (!measured) {
		rc = bg_fail(err, BG_ENOTFOUND,
			     "shape '%s' has no baseline measurement in campaign %s: measure the "
			     "in-tree kernel first (shapes present: %s)",
			     o->shape, p->name, shapes.buf);
		goto out;
	}

	strbuf_addf(out, "Kernel brief: shape %s, campaign %s\n\n", o->shape, p->name);
	strbuf_addstr(out,
		      "The gate is the promotion authority: a candidate is promoted on the gate's\n"
		      "verdict (PASS_GATE) and on nothing measured any other way.\n\n");

	strbuf sweep = STRBUF_INIT;
	for (size_t i = 0; i < p->n_points; i++) {
		const campaign_point *pt = &p->points[i];
		if (strcmp(pt->shape, o->shape) == 0 && pt->has_num_workers)
			strbuf_addf(&sweep, "%s%ld", sweep.len ? " " : "", pt->num_workers);
	}
	if (o->no_command) {
		strbuf_addf(out, "Gate command: none that works on this configuration: %s\n",
			    o->note ? o->note : "it was refused");
	} else if (any_nw) {
		strbuf_addf(out, "Gate command, one run per worker count (N in %s):\n", sweep.buf);
		gate_command(p, o, "N", out);
		strbuf_addstr(out, "that is:\n");
		for (size_t i = 0; i < p->n_points; i++) {
			const campaign_point *pt = &p->points[i];
			char nw[32];
			nw_text(nw, sizeof(nw), pt);
			if (strcmp(pt->shape, o->shape) == 0 && pt->has_num_workers)
				gate_command(p, o, nw, out);
		}
	} else {
		strbuf_addstr(out, "Gate command (the shape takes no worker count):\n");
		gate_command(p, o, NULL, out);
	}
	if (!o->no_command && !o->kernel && !o->no_kernel)
		strbuf_addstr(out, "(CANDIDATE_FILE: the candidate kernel's file)\n");
	if (!o->no_command && o->note)
		strbuf_addf(out, "(%s)\n", o->note);

	strbuf_addstr(out, "\nMeasured in-tree baseline slowCTA (us) per num_workers:\n"
			   "  num_workers     median            min-max    CV%    n  GPU\n");
	for (size_t i = 0; i < p->n_points; i++) {
		const campaign_point *pt = &p->points[i];
		if (strcmp(pt->shape, o->shape) != 0)
			continue;
		const campaign_cell *b = baseline_of(pt);
		char nw[32];
		nw_text(nw, sizeof(nw), pt);
		strbuf_addf(out, "  %11s  ", nw);
		if (!b || !b->n) {
			strbuf_addstr(out, "no valid baseline sample\n");
			continue;
		}
		char mm[64];
		snprintf(mm, sizeof(mm), "%.3f-%.3f", b->slow_min, b->slow_max);
		strbuf_addf(out, "%9.3f  %17s  %5.1f  %3zu  ", b->slow_median, mm,
			    isfinite(b->slow_cv) ? b->slow_cv : 0.0, b->n);
		for (size_t g = 0; g < b->gpu_names.n; g++)
			strbuf_addf(out, "%s%s", g ? ", " : "", b->gpu_names.v[g]);
		strbuf_addstr(out, b->gpu_names.n ? "\n" : "-\n");
	}

	if (isfinite(o->reference))
		strbuf_addf(out,
			    "\nTarget per num_workers: reference / bar %.2f, the reference %.3f us "
			    "given with --reference:\n",
			    p->bar, o->reference);
	else
		strbuf_addf(out,
			    "\nTarget per num_workers: reference / bar %.2f, the reference the "
			    "measured baseline median (no --reference given):\n",
			    p->bar);
	strbuf_addstr(out, "  num_workers  reference  target slowCTA (us, at most)\n");
	for (size_t i = 0; i < p->n_points; i++) {
		const campaign_point *pt = &p->points[i];
		if (strcmp(pt->shape, o->shape) != 0)
			continue;
		const campaign_cell *b = baseline_of(pt);
		double ref = isfinite(o->reference) ? o->reference
			     : b && b->n            ? b->slow_median
						    : NAN;
		char nw[32];
		nw_text(nw, sizeof(nw), pt);
		strbuf_addf(out, "  %11s  %9.3f  %9.3f", nw, isfinite(ref) ? ref : 0.0,
			    isfinite(ref) ? ref / p->bar : 0.0);
		if (!isfinite(ref))
			strbuf_addstr(out, "  (no baseline sample)");
		strbuf_addch(out, '\n');
	}
	strbuf_addf(out, "\nWorker-count sweep set: %s (the candidate is judged at each)\n",
		    any_nw ? sweep.buf : "none (one point)");

	strbuf_addstr(out, "\nBest candidate so far:\n");
	bool any_best = false;
	for (size_t i = 0; i < p->n_points; i++) {
		const campaign_point *pt = &p->points[i];
		const campaign_cell *c = campaign_point_best(pt);
		if (strcmp(pt->shape, o->shape) != 0 || !c || c->baseline)
			continue;
		char nw[32];
		nw_text(nw, sizeof(nw), pt);
		strbuf_addf(out, "  num_workers %s: %s, slowCTA ", nw, c->candidate);
		num(out, c->slow_median);
		strbuf_addstr(out, " us, ratio ");
		num(out, c->ratio);
		strbuf_addf(out, " (%s", campaign_verdict_name(c->verdict));
		if (c->verdict == CAMPAIGN_NOISY && p->strict_noise && c->cv_warn)
			strbuf_addf(out, ", CV %.1f%% > %.1f%% (strict)", c->slow_cv, p->max_cv);
		if (c->decided && c->dec.interval)
			strbuf_addf(out, ", 90%% interval %.3f-%.3f", c->dec.lo, c->dec.hi);
		else if (c->single)
			strbuf_addstr(out, ", 1 run a side");
		if (pt->best_provisional && pt->runner_up >= 0)
			strbuf_addf(out, "; provisional: not measurably faster than %s",
				    pt->cells[pt->runner_up].candidate);
		else if (pt->best_provisional)
			strbuf_addstr(out, "; provisional");
		strbuf_addstr(out, ")\n");
		any_best = true;
	}
	if (!any_best) {
		/* the baseline leads everywhere; where it is not measurably faster, say so */
		strbuf prov = STRBUF_INIT;
		for (size_t i = 0; i < p->n_points; i++) {
			const campaign_point *pt = &p->points[i];
			if (strcmp(pt->shape, o->shape) != 0 || !pt->best_provisional ||
			    pt->runner_up < 0)
				continue;
			char nw[32];
			nw_text(nw, sizeof(nw), pt);
			strbuf_addf(&prov, "%s%s (%s)", prov.len ? ", " : "", nw,
				    pt->cells[pt->runner_up].candidate);
		}
		if (prov.len)
			strbuf_addf(out,
				    "  none measurably faster: the in-tree baseline leads at every "
				    "worker count, provisionally (not measurably faster than the "
				    "next) at num_workers %s\n",
				    prov.buf);
		else
			strbuf_addstr(
				out,
				"  none: the in-tree baseline is the best at every worker count\n");
		strbuf_release(&prov);
	}
	strbuf_release(&sweep);

	strbuf_addstr(
		out,
		"\nConstraints:\n"
		"  1. No block barrier (__syncthreads(), bar.sync) inside the persistent-sweep\n"
		"     tile loop. Each worker strides the tiles by num_workers and a worker with\n"
		"     fewer tiles exits the loop early, so a barrier inside it deadlocks (the\n"
		"     gate's watchdog then reports TIMEOUT_HANG). Each lane or warp does its "
		"whole\n"
		"     K sweep on its own; only a final intra-warp __shfl reduction is allowed.\n"
		"  2. Alignment crash-safety: vector loads only where the address is aligned to\n"
		"     the vector width; the tails of K and N (sizes not a multiple of the vector\n"
		"     or tile width) handled, never read or written past the end.\n"
		"  3. The candidate is overlaid with --kernel into a shadow tree on the box; the\n"
		"     production tree is never written. Change only the candidate file.\n"
		"  4. One shape per gate invocation: --configs names the same shape as --shape.\n");
out:
	strbuf_release(&shapes);
	return rc;
}
