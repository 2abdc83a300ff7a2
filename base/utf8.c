#include "base/utf8.h"

size_t bg_utf8_seq(const unsigned char *p, const unsigned char *end, uint32_t *cp)
{
	unsigned c = p[0];
	size_t n;
	uint32_t v, min;
	if (c < 0x80) {
		if (cp)
			*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, v = c & 0x1f, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, v = c & 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, v = c & 0x07, min = 0x10000;
	else
		return 0;
	if ((size_t)(end - p) < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (p[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	if (cp)
		*cp = v;
	return n;
}

bool bg_utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	while (p < end) {
		uint32_t cp;
		size_t k = bg_utf8_seq(p, end, &cp);
		if (!k || cp == 0)
			return false;
		p += k;
	}
	return true;
}
