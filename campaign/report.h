/* `boxgate report`: a campaign's points written as a Markdown report and SVG
 * plots next to its results file. Writes files, never prints. */
#ifndef BG_CAMPAIGN_REPORT_H
#define BG_CAMPAIGN_REPORT_H

#include "base/error.h"
#include "base/strbuf.h"
#include "campaign/points.h"

/* The stem of a results file: its base name without ".jsonl"
 * ("dir/w13.results.jsonl" -> "w13.results"), cut to CAMPAIGN_REPORT_STEM_MAX
 * bytes (at a UTF-8 boundary) so that every name made from it fits NAME_MAX.
 * Owned. */
#define CAMPAIGN_REPORT_STEM_MAX  160
#define CAMPAIGN_REPORT_SHAPE_MAX 64
char *campaign_report_stem(const char *results_path);

/* The file name part for `shape` in "STEM.slowcta.SHAPE.svg": bytes other
 * than [A-Za-z0-9._-] become '_' and a leading '.' too, so a name from a
 * user file never leaves the directory; at most CAMPAIGN_REPORT_SHAPE_MAX
 * bytes (two shapes that clean up alike are numbered). Owned. */
char *campaign_report_shape_file(const char *shape);

/* The Markdown report of `p`; `svg_shapes[i]` is the plot file name of
 * p->shapes.v[i] and `svg_ratio` that of the heat map (relative links). */
void campaign_report_markdown(const campaign_points *p, const char *results_path,
			      char *const *svg_shapes, const char *svg_ratio, strbuf *out);

/* Writes STEM.report.md, STEM.slowcta.SHAPE.svg per shape and
 * STEM.ratio.svg into `out_dir` (NULL: the results file's directory;
 * created when missing), each through a temporary file renamed into place.
 * The paths written are added to *written, in order. BG_EIO on a write
 * failure (what was written before stays). */
int campaign_report_write(const campaign_points *p, const char *results_path, const char *out_dir,
			  campaign_names *written, bg_err *err);

#endif
