/* Folding box names into node sets for summaries: h1 h2 h3 h5 -> h[1-3,5];
 * and the order node sets read in (h2 before h10), for every listing. */
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "cli/fold.h"

struct split {
	const char *name;
	size_t prefix_len; /* name[0..prefix_len) is the stem */
	long num;          /* trailing number, -1 when none */
	int width;         /* digits, to keep zero padding */
};

static struct split split_name(const char *name)
{
	struct split s = {name, strlen(name), -1, 0};
	size_t end = s.prefix_len;
	size_t i = end;
	while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
		i--;
	if (i < end && end - i < 10) {
		s.prefix_len = i;
		s.num = strtol(name + i, NULL, 10);
		s.width = (int)(end - i);
	}
	return s;
}

static int cmp_split(const void *a, const void *b)
{
	const struct split *x = a, *y = b;
	size_t n = x->prefix_len < y->prefix_len ? x->prefix_len : y->prefix_len;
	int c = memcmp(x->name, y->name, n);
	if (c)
		return c;
	if (x->prefix_len != y->prefix_len)
		return x->prefix_len < y->prefix_len ? -1 : 1;
	if (x->width != y->width &&
	    (x->name[x->prefix_len] == '0' || y->name[y->prefix_len] == '0'))
		return x->width - y->width;
	return (x->num > y->num) - (x->num < y->num);
}

static bool same_stem(const struct split *a, const struct split *b)
{
	bool padded = (a->width > 1 && a->name[a->prefix_len] == '0') ||
		      (b->width > 1 && b->name[b->prefix_len] == '0');
	return a->num >= 0 && b->num >= 0 && a->prefix_len == b->prefix_len &&
	       memcmp(a->name, b->name, a->prefix_len) == 0 && (!padded || a->width == b->width);
}

int cli_box_name_cmp(const char *a, const char *b)
{
	struct split x = split_name(a), y = split_name(b);
	int c = cmp_split(&x, &y);
	return c ? c : strcmp(a, b);
}

char *cli_fold_names(const char *const *names, size_t n)
{
	strbuf out = STRBUF_INIT;
	struct split *s = xcalloc(n, sizeof(*s));
	for (size_t i = 0; i < n; i++)
		s[i] = split_name(names[i]);
	qsort(s, n, sizeof(*s), cmp_split);
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		while (j < n && same_stem(&s[i], &s[j]))
			j++;
		if (out.len)
			strbuf_addch(&out, ',');
		if (j - i == 1) {
			strbuf_addstr(&out, s[i].name);
			i = j;
			continue;
		}
		strbuf_add(&out, s[i].name, s[i].prefix_len);
		strbuf_addch(&out, '[');
		for (size_t k = i; k < j;) {
			size_t r = k;
			while (r + 1 < j && s[r + 1].num == s[r].num + 1)
				r++;
			if (k > i)
				strbuf_addch(&out, ',');
			strbuf_addf(&out, "%0*ld", s[k].width, s[k].num);
			if (r > k)
				strbuf_addf(&out, "-%0*ld", s[r].width, s[r].num);
			k = r + 1;
		}
		strbuf_addch(&out, ']');
		i = j;
	}
	free(s);
	return strbuf_detach(&out);
}
