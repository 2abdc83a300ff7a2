#include "base/parse.h"

#include <limits.h>

bool bg_parse_seconds(const char *s, long min, long max, long *out)
{
	long v = 0;
	if (!s || !*s)
		return false;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		if (v > (LONG_MAX - (*p - '0')) / 10)
			return false;
		v = v * 10 + (*p - '0');
	}
	if (v < min || v > max)
		return false;
	*out = v;
	return true;
}
