/* CSV as boxgate writes it (results export, results compare --csv): RFC 4180
 * fields, formula cells neutralised, numbers in their shortest exact form. */
#ifndef BG_BASE_CSV_H
#define BG_BASE_CSV_H

#include "base/strbuf.h"

/* Appends `s` as one field: quoted when it holds a comma, a quote or a line
 * break (quotes doubled). A field a spreadsheet would run as a formula (one
 * starting with '=', '+', '-', '@', a tab or a carriage return, unless the
 * whole field is a number) gets a leading "'" (OWASP's CSV injection advice). */
void bg_csv_field(strbuf *b, const char *s);

/* The shortest decimal text that reads back as exactly `v` (%.1g to %.17g, as
 * Python's repr: 28709.151, not 28709.151000000002); "" when not finite. Owned. */
char *bg_num_text(double v);

#endif
