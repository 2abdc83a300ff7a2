/* CSV fields and number text (base/csv.h). */
#include "base/csv.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"

static bool is_number(const char *s)
{
	char *end = NULL;
	if (!*s)
		return false;
	double v = strtod(s, &end);
	return end && !*end && isfinite(v) && !strchr(s, 'x') && !strchr(s, 'X');
}

void bg_csv_field(strbuf *b, const char *s)
{
	bool formula = *s && strchr("=+-@\t\r", *s) && !is_number(s);
	if (!formula && !s[strcspn(s, ",\"\r\n")]) {
		strbuf_addstr(b, s);
		return;
	}
	bool quote = s[strcspn(s, ",\"\r\n")] != '\0';
	if (quote)
		strbuf_addch(b, '"');
	if (formula)
		strbuf_addch(b, '\'');
	for (; *s; s++) {
		if (*s == '"')
			strbuf_addch(b, '"');
		strbuf_addch(b, *s);
	}
	if (quote)
		strbuf_addch(b, '"');
}

char *bg_num_text(double v)
{
	if (!isfinite(v))
		return xstrdup("");
	char buf[400];
	int prec = 1;
	for (; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	/* 110, not 1.1e+02: plain digits where they are few */
	if (strchr(buf, 'e') && fabs(v) >= 1 && fabs(v) < 1e15) {
		int d = prec - 1 - (int)floor(log10(fabs(v)));
		snprintf(buf, sizeof(buf), "%.*f", d > 0 ? d : 0, v);
	}
	return xstrdup(buf);
}
