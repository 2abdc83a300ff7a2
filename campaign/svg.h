/* The report's plots as SVG text: slowCTA against num_workers per shape, and
 * a heat map of the ratio per candidate. Deterministic: the same points give
 * the same bytes; no NaN or infinity is ever printed. */
#ifndef BG_CAMPAIGN_SVG_H
#define BG_CAMPAIGN_SVG_H

#include <stdbool.h>
#include <stddef.h>

#include "base/strbuf.h"
#include "campaign/points.h"

/* Appends `s` escaped for XML text and attribute values: the five special
 * characters as entities; invalid UTF-8, what XML 1.0 forbids (C0 controls,
 * U+FFFE, U+FFFF), C1 controls and the bidirectional controls as '?'. At most
 * `max_chars` characters (0: no limit), a longer text cut with an ellipsis. */
void campaign_svg_escape(strbuf *out, const char *s, size_t max_chars);

/* The colour ("#rrggbb", static) of the candidate at index `i` of
 * p->candidates: the same candidate has the same colour in every plot. */
const char *campaign_svg_colour(size_t i);

/* slowCTA (median, min-max bars) against num_workers, one line per
 * candidate, for the points of `shape`. The legend's swatches carry
 * id="legend-I" (I: the index in p->candidates). */
void campaign_svg_slowcta(const campaign_points *p, const char *shape, strbuf *out);

/* The ratio heat map: one panel per candidate other than the baseline, rows
 * the shapes, columns the num_workers. Each cell is a rect with
 * id="cell-P-R-C" (panel, row, column from 0) holding a <title>. Past
 * CAMPAIGN_SVG_MAX_CELLS cells in all, a note says so in place of the grid. */
#define CAMPAIGN_SVG_MAX_CELLS 10000
void campaign_svg_ratio(const campaign_points *p, strbuf *out);

#endif
