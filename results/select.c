/* Selectors over results records (results/select.h). */
#include "results/select.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/strbuf.h"
#include "base/xmalloc.h"

enum {
	SEL_RUN,
	SEL_CAMPAIGN,
	SEL_CANDIDATE,
	SEL_KIND,
	SEL_SHAPE,
	SEL_NUM_WORKERS,
	SEL_BOX,
	SEL_DEVICE,
	SEL_VERDICT,
	SEL_SINCE,
	SEL_UNTIL,
	SEL_GATE_ARG
};

static const struct {
	const char *key;
	int what;
} known[] = {
	{"run", SEL_RUN},
	{"campaign", SEL_CAMPAIGN},
	{"candidate", SEL_CANDIDATE},
	{"kind", SEL_KIND},
	{"shape", SEL_SHAPE},
	{"num-workers", SEL_NUM_WORKERS},
	{"num_workers", SEL_NUM_WORKERS},
	{"box", SEL_BOX},
	{"device", SEL_DEVICE},
	{"verdict", SEL_VERDICT},
	{"since", SEL_SINCE},
	{"until", SEL_UNTIL},
};

static bool key_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

/* The length of a KEY= at `s` (KEY and '='), 0 when `s` does not start with one. */
static size_t key_len(const char *s)
{
	size_t n = 0;
	while (key_char(s[n]))
		n++;
	return n && s[n] == '=' ? n + 1 : 0;
}

/* An ISO 8601 UTC date or date-time prefix: YYYY-MM-DD, then optionally
 * THH, :MM, :SS, .fff and Z, each part in its range. */
static bool iso_date(const char *v)
{
	static const char shape[] = "dddd-dd-dd";
	size_t n = strlen(v);
	if (n < 10)
		return false;
	for (size_t i = 0; i < 10; i++)
		if (shape[i] == 'd' ? !isdigit((unsigned char)v[i]) : v[i] != shape[i])
			return false;
	int mo = atoi(v + 5), d = atoi(v + 8);
	if (mo < 1 || mo > 12 || d < 1 || d > 31)
		return false;
	const char *p = v + 10;
	if (!*p)
		return true;
	if (*p != 'T' || !isdigit((unsigned char)p[1]) || !isdigit((unsigned char)p[2]) ||
	    atoi(p + 1) > 23)
		return false;
	p += 3;
	for (int part = 0; part < 2 && *p == ':'; part++) {
		if (!isdigit((unsigned char)p[1]) || !isdigit((unsigned char)p[2]) ||
		    atoi(p + 1) > (part ? 60 : 59))
			return false;
		p += 3;
	}
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (*p == 'Z')
		p++;
	return !*p;
}

static int add_term(results_selector *s, const char *term, size_t len, bg_err *err)
{
	char *t = xstrndup(term, len);
	int rc = 0;
	size_t kl = key_len(t);
	if (!kl) {
		rc = bg_fail(err, BG_EUSAGE,
			     "selector '%s': not KEY=VALUE (keys: run, campaign, candidate, kind, "
			     "shape, num-workers, box, device, verdict, since, until, or a gate "
			     "argument such as variant)",
			     t);
		goto out;
	}
	const char *value = t + kl;
	for (const char *c = value; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f) {
			rc = bg_fail(err, BG_EUSAGE,
				     "selector '%.*s...': a control character in "
				     "the value",
				     (int)kl, t);
			goto out;
		}
	if (!*value) {
		rc = bg_fail(err, BG_EUSAGE, "selector '%s': an empty value", t);
		goto out;
	}
	int what = SEL_GATE_ARG;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strlen(known[i].key) == kl - 1 && strncmp(known[i].key, t, kl - 1) == 0)
			what = known[i].what;
	if ((what == SEL_SINCE || what == SEL_UNTIL) && !iso_date(value)) {
		rc = bg_fail(err, BG_EUSAGE,
			     "selector '%s': not an ISO 8601 date (YYYY-MM-DD, optionally "
			     "THH:MM:SS, UTC)",
			     t);
		goto out;
	}
	if (what == SEL_RUN && strspn(value, "0123456789abcdef") != strlen(value)) {
		rc = bg_fail(err, BG_EUSAGE,
			     "selector '%s': a run id is lowercase hex (as results show prints it)",
			     t);
		goto out;
	}
	if (what == SEL_NUM_WORKERS &&
	    (strspn(value, "0123456789") != strlen(value) || strlen(value) > 9)) {
		rc = bg_fail(err, BG_EUSAGE, "selector '%s': num-workers is a whole number", t);
		goto out;
	}
	s->t = xgrow(s->t, &s->cap, s->n + 1, sizeof(*s->t));
	s->t[s->n].key = xstrndup(t, kl - 1);
	s->t[s->n].value = xstrdup(value);
	s->t[s->n].what = what;
	s->n++;
out:
	free(t);
	return rc;
}

int results_selector_add(results_selector *s, const char *text, bg_err *err)
{
	if (!*text)
		return bg_fail(err, BG_EUSAGE, "an empty selector (KEY=VALUE[,KEY=VALUE...])");
	const char *p = text;
	while (*p) {
		/* the term runs to the next ',' that starts another KEY= */
		const char *e = p + key_len(p);
		while (*e && !(*e == ',' && key_len(e + 1)))
			e++;
		int rc = add_term(s, p, (size_t)(e - p), err);
		if (rc < 0)
			return rc;
		p = *e ? e + 1 : e;
	}
	return 0;
}

static const cJSON *get(const cJSON *o, const char *key)
{
	return o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

static const char *str_of(const cJSON *o, const char *key)
{
	const cJSON *v = get(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

const char *results_gate_arg(const cJSON *rec, const char *name)
{
	const cJSON *ga = get(rec, "gate_args");
	const char *found = NULL;
	size_t nl = strlen(name);
	for (const cJSON *a = cJSON_IsArray(ga) ? ga->child : NULL; a; a = a->next) {
		const char *w = cJSON_IsString(a) ? a->valuestring : "";
		if (strncmp(w, "--", 2) != 0 || strncmp(w + 2, name, nl) != 0)
			continue;
		if (w[2 + nl] == '=')
			found = w + 3 + nl;
		else if (!w[2 + nl] && a->next && cJSON_IsString(a->next))
			found = a->next->valuestring;
		else if (!w[2 + nl])
			found = "";
	}
	return found;
}

/* The point's field (point, else the campaign's, else the result's). */
static const char *point_str(const cJSON *rec, const char *key)
{
	const char *v = str_of(get(rec, "point"), key);
	if (!v)
		v = str_of(get(rec, "campaign"), key);
	if (!v)
		v = str_of(get(rec, "result"), key);
	return v;
}

static bool nw_is(const cJSON *rec, const char *value)
{
	const cJSON *n = get(get(rec, "point"), "num_workers");
	if (!cJSON_IsNumber(n))
		n = get(get(rec, "campaign"), "num_workers");
	if (!cJSON_IsNumber(n))
		n = get(get(rec, "result"), "num_workers");
	return cJSON_IsNumber(n) && n->valuedouble == floor(n->valuedouble) &&
	       n->valuedouble == atof(value);
}

static bool eq(const char *a, const char *b)
{
	return a && strcmp(a, b) == 0;
}

static bool contains_nocase(const char *hay, const char *needle)
{
	size_t n = strlen(needle);
	for (; hay && *hay; hay++)
		if (strncasecmp(hay, needle, n) == 0)
			return true;
	return false;
}

static bool term_match(const results_term *t, const cJSON *rec)
{
	const char *v = t->value, *start;
	switch (t->what) {
	case SEL_RUN: {
		const char *id = str_of(rec, "run_id");
		return id && strncmp(id, v, strlen(v)) == 0;
	}
	case SEL_CAMPAIGN: return eq(str_of(get(rec, "campaign"), "name"), v);
	case SEL_CANDIDATE: return eq(point_str(rec, "candidate"), v);
	case SEL_KIND: return eq(point_str(rec, "kind"), v);
	case SEL_SHAPE: return eq(point_str(rec, "shape"), v);
	case SEL_NUM_WORKERS: return nw_is(rec, v);
	case SEL_BOX: return eq(str_of(rec, "box"), v);
	case SEL_DEVICE:
		return contains_nocase(str_of(rec, "gpu_name"), v) ||
		       (str_of(rec, "device") && strcasecmp(str_of(rec, "device"), v) == 0);
	case SEL_VERDICT: return eq(str_of(rec, "verdict"), v);
	case SEL_SINCE:
		start = str_of(rec, "start");
		return start && strncmp(start, v, strlen(v)) >= 0;
	case SEL_UNTIL:
		start = str_of(rec, "start");
		return start && strncmp(start, v, strlen(v)) <= 0;
	default: return eq(results_gate_arg(rec, t->key), v);
	}
}

bool results_selector_match(const results_selector *s, const cJSON *rec)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (!term_match(&s->t[i], rec))
			return false;
	return true;
}

char *results_selector_text(const results_selector *s)
{
	strbuf b = STRBUF_INIT;
	for (size_t i = 0; s && i < s->n; i++)
		strbuf_addf(&b, "%s%s=%s", i ? "," : "", s->t[i].key, s->t[i].value);
	return strbuf_detach(&b);
}

void results_selector_release(results_selector *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->t[i].key);
		free(s->t[i].value);
	}
	free(s->t);
	memset(s, 0, sizeof(*s));
}
