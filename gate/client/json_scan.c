#include "gate/client/json_scan.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/utf8.h"
#include "base/xmalloc.h"

/* A recursive-descent check of RFC 8259 with boxgate's extra rules. cJSON
 * takes the last of two equal keys, ignores bytes after the value, passes
 * invalid UTF-8 through and cuts strings at \u0000: each is refused here
 * before cJSON sees the line. */
struct jscan {
	const unsigned char *p, *start, *end;
	int depth;
	const char *why;
	char *buf;
	size_t bufn;
};

static bool jfail(struct jscan *j, const char *what)
{
	if (!j->why) {
		snprintf(j->buf, j->bufn, "%s at byte %zu", what, (size_t)(j->p - j->start));
		j->why = j->buf;
	}
	return false;
}

static void jws(struct jscan *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\r' || *j->p == '\n'))
		j->p++;
}

static int hexval(unsigned c)
{
	if (c >= '0' && c <= '9')
		return (int)(c - '0');
	if (c >= 'a' && c <= 'f')
		return (int)(c - 'a' + 10);
	if (c >= 'A' && c <= 'F')
		return (int)(c - 'A' + 10);
	return -1;
}

/* Consumes `c` when it comes next. */
static bool jaccept(struct jscan *j, char c)
{
	if (j->p >= j->end || *j->p != c)
		return false;
	j->p++;
	return true;
}

static bool jhex4(struct jscan *j, uint32_t *out)
{
	uint32_t v = 0;
	if (j->end - j->p < 4)
		return jfail(j, "short \\u escape");
	for (int i = 0; i < 4; i++) {
		int h = hexval(j->p[i]);
		if (h < 0)
			return jfail(j, "bad \\u escape");
		v = (v << 4) | (uint32_t)h;
	}
	j->p += 4;
	*out = v;
	return true;
}

static void put_utf8(strbuf *o, uint32_t cp)
{
	char b[4];
	size_t n;
	if (cp < 0x80) {
		b[0] = (char)cp, n = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xc0 | (cp >> 6)), b[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xe0 | (cp >> 12)), b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
	} else {
		b[0] = (char)(0xf0 | (cp >> 18)), b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), b[3] = (char)(0x80 | (cp & 0x3f)), n = 4;
	}
	strbuf_add(o, b, n);
}

/* A string at j->p ('"'); its decoded bytes are appended to `out` when given. */
static bool jstring(struct jscan *j, strbuf *out)
{
	j->p++;
	for (;;) {
		if (j->p >= j->end)
			return jfail(j, "unterminated string");
		unsigned c = *j->p;
		if (c == '"') {
			j->p++;
			return true;
		}
		if (c < 0x20)
			return jfail(j, "raw control byte in a string");
		if (c == '\\') {
			j->p++;
			if (j->p >= j->end)
				return jfail(j, "unterminated escape");
			unsigned e = *j->p++;
			const char *simple = strchr("\"\\/bfnrt", (int)e);
			if (e && simple) {
				static const char map[] = "\"\\/\b\f\n\r\t";
				if (out)
					strbuf_addch(out, map[simple - "\"\\/bfnrt"]);
				continue;
			}
			if (e != 'u')
				return jfail(j, "bad escape");
			uint32_t cp;
			if (!jhex4(j, &cp))
				return false;
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return jfail(j, "lone low surrogate escape");
			if (cp >= 0xd800 && cp <= 0xdbff) {
				uint32_t lo;
				if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u')
					return jfail(j, "lone high surrogate escape");
				j->p += 2;
				if (!jhex4(j, &lo))
					return false;
				if (lo < 0xdc00 || lo > 0xdfff)
					return jfail(j, "bad surrogate pair");
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			}
			if (cp == 0)
				return jfail(j, "\\u0000 in a string");
			if (out)
				put_utf8(out, cp);
			continue;
		}
		uint32_t cp;
		size_t k = bg_utf8_seq(j->p, j->end, &cp);
		if (!k)
			return jfail(j, "invalid UTF-8 in a string");
		if (out)
			strbuf_add(out, j->p, k);
		j->p += k;
	}
}

static bool jdigits(struct jscan *j)
{
	const unsigned char *s = j->p;
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	return j->p > s;
}

static bool jnumber(struct jscan *j)
{
	const unsigned char *s = j->p;
	if (*j->p == '-')
		j->p++;
	if (j->p < j->end && *j->p == '0')
		j->p++;
	else if (j->p >= j->end || *j->p < '1' || *j->p > '9' || !jdigits(j))
		return jfail(j, "bad number");
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (!jdigits(j))
			return jfail(j, "bad number fraction");
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (!jdigits(j))
			return jfail(j, "bad number exponent");
	}
	char tmp[128];
	size_t n = (size_t)(j->p - s);
	if (n >= sizeof(tmp)) {
		j->p = s;
		return jfail(j, "number longer than 127 characters");
	}
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	if (!isfinite(strtod(tmp, NULL))) {
		j->p = s;
		return jfail(j, "number out of range (not finite)");
	}
	return true;
}

static bool jvalue(struct jscan *j);

struct keyref {
	const char *k;
	size_t n;
};

static int keyref_cmp(const void *a, const void *b)
{
	const struct keyref *x = a, *y = b;
	size_t n = x->n < y->n ? x->n : y->n;
	int c = memcmp(x->k, y->k, n);
	return c ? c : (x->n > y->n) - (x->n < y->n);
}

static bool jobject(struct jscan *j)
{
	strbuf keys = STRBUF_INIT; /* decoded keys, back to back */
	size_t *offs = NULL, nkeys = 0, cap = 0;
	bool ok = false;
	j->p++;
	jws(j);
	if (jaccept(j, '}'))
		return true;
	for (;;) {
		if (j->p >= j->end || *j->p != '"') {
			jfail(j, "expected a key");
			goto out;
		}
		offs = xgrow(offs, &cap, nkeys + 2, sizeof(*offs));
		offs[nkeys] = keys.len;
		if (!jstring(j, &keys))
			goto out;
		offs[++nkeys] = keys.len;
		jws(j);
		if (j->p >= j->end || *j->p != ':') {
			jfail(j, "expected ':'");
			goto out;
		}
		j->p++;
		if (!jvalue(j))
			goto out;
		jws(j);
		if (jaccept(j, ',')) {
			jws(j);
			continue;
		}
		if (jaccept(j, '}'))
			break;
		jfail(j, "expected ',' or '}'");
		goto out;
	}
	if (nkeys > 1) {
		struct keyref *v = xmalloc(nkeys * sizeof(*v));
		for (size_t i = 0; i < nkeys; i++)
			v[i] = (struct keyref){keys.buf + offs[i], offs[i + 1] - offs[i]};
		qsort(v, nkeys, sizeof(*v), keyref_cmp);
		for (size_t i = 1; i < nkeys; i++)
			if (keyref_cmp(&v[i - 1], &v[i]) == 0) {
				char what[96];
				snprintf(what, sizeof(what), "duplicate key \"%.*s\"",
					 (int)(v[i].n > 40 ? 40 : v[i].n), v[i].k);
				free(v);
				jfail(j, what);
				goto out;
			}
		free(v);
	}
	ok = true;
out:
	strbuf_release(&keys);
	free(offs);
	return ok;
}

static bool jarray(struct jscan *j)
{
	j->p++;
	jws(j);
	if (jaccept(j, ']'))
		return true;
	for (;;) {
		if (!jvalue(j))
			return false;
		jws(j);
		if (jaccept(j, ','))
			continue;
		if (jaccept(j, ']'))
			return true;
		return jfail(j, "expected ',' or ']'");
	}
}

static bool jliteral(struct jscan *j, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0)
		return jfail(j, "unexpected byte");
	j->p += n;
	return true;
}

static bool jvalue(struct jscan *j)
{
	jws(j);
	if (j->p >= j->end)
		return jfail(j, "expected a value");
	bool ok;
	switch (*j->p) {
	case '{':
	case '[':
		if (++j->depth > GATE_JSON_MAX_DEPTH)
			return jfail(j, "nested too deep");
		ok = *j->p == '{' ? jobject(j) : jarray(j);
		j->depth--;
		return ok;
	case '"': return jstring(j, NULL);
	case 't': return jliteral(j, "true");
	case 'f': return jliteral(j, "false");
	case 'n': return jliteral(j, "null");
	default:
		if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9'))
			return jnumber(j);
		return jfail(j, "unexpected byte");
	}
}

const char *gate_json_strict_check(const char *s, size_t n, char *buf, size_t bufn)
{
	struct jscan j = {(const unsigned char *)s,
			  (const unsigned char *)s,
			  (const unsigned char *)s + n,
			  0,
			  NULL,
			  buf,
			  bufn};
	jws(&j);
	if (j.p >= j.end || *j.p != '{') {
		jfail(&j, "not a JSON object");
		return j.why;
	}
	if (!jvalue(&j))
		return j.why;
	jws(&j);
	if (j.p < j.end) {
		jfail(&j, "trailing bytes after the object");
		return j.why;
	}
	return NULL;
}
