/* A well-formedness check of XML 1.0 documents as boxgate writes them (its SVG): one
 * root element, tags that nest and match, attribute values quoted, unique per element
 * and free of '<', every '&' a reference to one of the five entities or a character,
 * every character one XML allows, no "]]>" in text, comments, a declaration and
 * processing instructions; no DOCTYPE or CDATA (boxgate writes none). Header only,
 * for the fuzz targets and the unit tests: xml_check() returns NULL when `s[0..n)`
 * is well-formed, else a static text saying what is not. Python's xml.etree and
 * rsvg-convert are the references the integration tests hold it against. */
#ifndef BG_TESTS_XML_CHECK_H
#define BG_TESTS_XML_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

typedef struct xml_scan {
	const unsigned char *p, *end;
} xml_scan;

static inline bool xml_char_ok(uint32_t c)
{
	return c == 0x9 || c == 0xa || c == 0xd || (c >= 0x20 && c <= 0xd7ff) ||
	       (c >= 0xe000 && c <= 0xfffd) || (c >= 0x10000 && c <= 0x10ffff);
}

/* One character at x->p into *c; false on invalid UTF-8 or a character XML forbids. */
static inline bool xml_next(xml_scan *x, uint32_t *c)
{
	if (x->p >= x->end)
		return false;
	size_t k = bg_utf8_seq(x->p, x->end, c);
	if (!k || !xml_char_ok(*c))
		return false;
	x->p += k;
	return true;
}

static inline bool xml_name_start(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == ':';
}

static inline bool xml_name_char(unsigned char c)
{
	return xml_name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

/* An ASCII name at x->p (boxgate writes no other); its length, 0 when none. */
static inline size_t xml_name(xml_scan *x)
{
	const unsigned char *s = x->p;
	if (x->p >= x->end || !xml_name_start(*x->p))
		return 0;
	while (x->p < x->end && xml_name_char(*x->p))
		x->p++;
	return (size_t)(x->p - s);
}

static inline void xml_blanks(xml_scan *x)
{
	while (x->p < x->end && (*x->p == ' ' || *x->p == '\t' || *x->p == '\n' || *x->p == '\r'))
		x->p++;
}

/* A reference after '&': &name; of the five, &#N; or &#xH; naming an allowed character. */
static inline bool xml_reference(xml_scan *x)
{
	static const char *const ents[] = {"amp;", "lt;", "gt;", "quot;", "apos;"};
	for (size_t i = 0; i < 5; i++) {
		size_t l = strlen(ents[i]);
		if ((size_t)(x->end - x->p) >= l && memcmp(x->p, ents[i], l) == 0) {
			x->p += l;
			return true;
		}
	}
	if (x->p >= x->end || *x->p != '#')
		return false;
	x->p++;
	int base = 10;
	if (x->p < x->end && *x->p == 'x')
		base = 16, x->p++;
	uint32_t v = 0;
	size_t digits = 0;
	while (x->p < x->end && *x->p != ';') {
		unsigned char c = *x->p++;
		int d = c >= '0' && c <= '9'                 ? c - '0'
			: base == 16 && c >= 'a' && c <= 'f' ? c - 'a' + 10
			: base == 16 && c >= 'A' && c <= 'F' ? c - 'A' + 10
							     : -1;
		if (d < 0 || ++digits > 8)
			return false;
		v = v * (uint32_t)base + (uint32_t)d;
	}
	if (x->p >= x->end || !digits || !xml_char_ok(v))
		return false;
	x->p++;
	return true;
}

/* Skips past `close` (e.g. "?>", "-->"), checking the characters on the way. */
static inline bool xml_until(xml_scan *x, const char *close)
{
	size_t l = strlen(close);
	while ((size_t)(x->end - x->p) >= l) {
		if (memcmp(x->p, close, l) == 0) {
			x->p += l;
			return true;
		}
		uint32_t c;
		if (!xml_next(x, &c))
			return false;
	}
	return false;
}

static inline const char *xml_check(const char *s, size_t n)
{
	xml_scan x = {(const unsigned char *)s, (const unsigned char *)s + n};
	/* the open elements: offsets and lengths of their names */
	size_t cap = 64, depth = 0, roots = 0;
	struct {
		const unsigned char *name;
		size_t len;
	} *stack = malloc(cap * sizeof(*stack));
	const char *why = NULL;
	if (!stack)
		abort();
	if (n >= 5 && memcmp(s, "<?xml", 5) == 0 && !xml_until(&x, "?>")) {
		why = "unterminated declaration";
		goto out;
	}
	while (x.p < x.end && !why) {
		if (*x.p != '<') {
			if (*x.p == '&') {
				x.p++;
				if (!xml_reference(&x))
					why = "'&' that is no reference";
				continue;
			}
			if (!depth && !strchr(" \t\r\n", *x.p)) {
				why = "text outside the root element";
				break;
			}
			if (x.end - x.p >= 3 && memcmp(x.p, "]]>", 3) == 0) {
				why = "']]>' in text";
				break;
			}
			uint32_t c;
			if (!xml_next(&x, &c))
				why = "a character XML does not allow (or invalid UTF-8)";
			continue;
		}
		x.p++;
		if (x.p < x.end && *x.p == '?') {
			if (!xml_until(&x, "?>"))
				why = "unterminated processing instruction";
			continue;
		}
		if (x.end - x.p >= 3 && memcmp(x.p, "!--", 3) == 0) {
			x.p += 3;
			const unsigned char *start = x.p;
			if (!xml_until(&x, "-->"))
				why = "unterminated comment";
			else
				for (const unsigned char *q = start; q + 3 < x.p; q++)
					if (q[0] == '-' && q[1] == '-')
						why = "'--' inside a comment";
			continue;
		}
		if (x.p < x.end && *x.p == '!') {
			why = "DOCTYPE or CDATA";
			break;
		}
		if (x.p < x.end && *x.p == '/') {
			x.p++;
			const unsigned char *name = x.p;
			size_t len = xml_name(&x);
			xml_blanks(&x);
			if (!len || x.p >= x.end || *x.p != '>') {
				why = "a bad end tag";
				break;
			}
			x.p++;
			if (!depth || stack[depth - 1].len != len ||
			    memcmp(stack[depth - 1].name, name, len) != 0) {
				why = "an end tag that does not match the open element";
				break;
			}
			depth--;
			continue;
		}
		const unsigned char *name = x.p;
		size_t len = xml_name(&x);
		if (!len) {
			why = "'<' that starts no tag";
			break;
		}
		if (!depth && roots++) {
			why = "a second root element";
			break;
		}
		/* attributes, each name once */
		const unsigned char *attr[64];
		size_t attr_len[64], n_attr = 0;
		for (;;) {
			const unsigned char *before = x.p;
			xml_blanks(&x);
			if (x.p < x.end && (*x.p == '>' || *x.p == '/'))
				break;
			const unsigned char *an = x.p;
			size_t al = xml_name(&x);
			if (!al || an == before) {
				why = "a bad attribute (no name, or no blank before it)";
				break;
			}
			for (size_t i = 0; i < n_attr; i++)
				if (attr_len[i] == al && memcmp(attr[i], an, al) == 0)
					why = "an attribute twice";
			if (n_attr < 64)
				attr[n_attr] = an, attr_len[n_attr++] = al;
			xml_blanks(&x);
			if (x.p >= x.end || *x.p != '=') {
				why = "an attribute without '='";
				break;
			}
			x.p++;
			xml_blanks(&x);
			if (x.p >= x.end || (*x.p != '"' && *x.p != '\'')) {
				why = "an unquoted attribute value";
				break;
			}
			unsigned char q = *x.p++;
			while (x.p < x.end && *x.p != q && !why) {
				uint32_t c;
				if (*x.p == '<')
					why = "'<' in an attribute value";
				else if (*x.p == '&') {
					x.p++;
					if (!xml_reference(&x))
						why = "'&' that is no reference (attribute)";
				} else if (!xml_next(&x, &c))
					why = "a character XML does not allow (attribute)";
			}
			if (why)
				break;
			if (x.p >= x.end) {
				why = "an unterminated attribute value";
				break;
			}
			x.p++;
		}
		if (why)
			break;
		if (x.p < x.end && *x.p == '/') {
			x.p++;
			if (x.p >= x.end || *x.p != '>')
				why = "'/' not followed by '>'";
			else
				x.p++;
			continue;
		}
		if (x.p >= x.end) {
			why = "an unterminated start tag";
			break;
		}
		x.p++; /* '>' */
		if (depth == cap) {
			cap *= 2;
			stack = realloc(stack, cap * sizeof(*stack));
			if (!stack)
				abort();
		}
		stack[depth].name = name;
		stack[depth++].len = len;
	}
	if (!why && depth)
		why = "an element left open";
	if (!why && !roots)
		why = "no root element";
out:
	free(stack);
	return why;
}

#endif
