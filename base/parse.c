#include "base/parse.h"

#include <ctype.h>
#include <limits.h>
#include <string.h>

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

bool bg_parse_seconds_ms(const char *s, long long min_ms, long long max_ms, long long *out_ms)
{
	long long whole = 0, frac = 0;
	const char *p = s;
	if (!s || !(*p >= '0' && *p <= '9'))
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (whole > 1000000000LL)
			return false;
		whole = whole * 10 + (*p - '0');
	}
	if (*p == '.') {
		int digits = 0;
		for (p++; *p >= '0' && *p <= '9'; p++, digits++) {
			if (digits == 3)
				return false; /* finer than a millisecond */
			frac = frac * 10 + (*p - '0');
		}
		if (digits == 0)
			return false;
		for (; digits < 3; digits++)
			frac *= 10;
	}
	if (*p)
		return false;
	long long ms = whole * 1000 + frac;
	if (ms < min_ms || ms > max_ms)
		return false;
	*out_ms = ms;
	return true;
}

static bool parse_uint(const char **p, unsigned long *v)
{
	const char *s = *p;
	if (!isdigit((unsigned char)*s))
		return false;
	unsigned long x = 0;
	while (isdigit((unsigned char)*s)) {
		x = x * 10 + (unsigned long)(*s - '0');
		if (x > 1000000)
			return false;
		s++;
	}
	*p = s;
	*v = x;
	return true;
}

bool bg_gpus_parse(const char *s, bool *set, const char **why)
{
	memset(set, 0, BG_MAX_GPUS * sizeof(*set));
	const char *p = s;
	bool any = false;
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		unsigned long lo, hi;
		if (!parse_uint(&p, &lo)) {
			*why = "expected a GPU index";
			return false;
		}
		hi = lo;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '-') {
			p++;
			while (*p == ' ' || *p == '\t')
				p++;
			if (!parse_uint(&p, &hi)) {
				*why = "expected a GPU index after '-'";
				return false;
			}
			if (hi < lo) {
				*why = "range goes backwards";
				return false;
			}
		}
		if (hi >= BG_MAX_GPUS) {
			*why = "GPU index too large";
			return false;
		}
		for (unsigned long g = lo; g <= hi; g++)
			set[g] = true;
		any = true;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0')
			break;
		if (*p != ',') {
			*why = "expected ',' between GPU indices";
			return false;
		}
		p++;
	}
	return any;
}
