/* Folding box names into node sets for summaries: h1 h2 h3 h5 -> h[1-3,5];
 * and the order node sets read in (h2 before h10), for every listing. */
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "cli/cli.h"
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

struct cli_fold_entry {
	cli_fold_kind kind;
	const char *box;
	char *text;
	size_t seq;
	bool done;
};

void cli_folder_add(cli_folder *f, cli_fold_kind kind, const char *box, const char *text)
{
	size_t bl = strlen(box);
	if (strncmp(text, box, bl) == 0 && text[bl] == ':' && text[bl + 1] == ' ')
		text += bl + 2;
	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 16;
		f->v = xrealloc(f->v, f->cap * sizeof(*f->v));
	}
	f->v[f->n] = (struct cli_fold_entry){kind, box, xstrdup(text), f->n, false};
	f->n++;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct cli_fold_entry *x = a, *y = b;
	int c = cli_box_name_cmp(x->box, y->box);
	if (c)
		return c;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static void print_entry(cli_fold_kind kind, const char *set, const char *text)
{
	if (kind == CLI_FOLD_OUT)
		cli_print_line(stdout, set, text, strlen(text));
	else if (kind == CLI_FOLD_ERROR)
		cli_error("%s: %s", set, text);
	else
		cli_warn("%s: %s", set, text);
}

void cli_folder_print(cli_folder *f, bool fold)
{
	if (f->n > 1) /* qsort wants a real array, even of none */
		qsort(f->v, f->n, sizeof(*f->v), cmp_entry);
	const char **names = xcalloc(f->n ? f->n : 1, sizeof(*names));
	for (size_t i = 0; i < f->n; i++) {
		struct cli_fold_entry *e = &f->v[i];
		if (e->done)
			continue;
		if (!fold) {
			print_entry(e->kind, e->box, e->text);
			continue;
		}
		size_t k = 0;
		const char *last = NULL;
		for (size_t j = i; j < f->n; j++) {
			struct cli_fold_entry *o = &f->v[j];
			if (o->done || o->kind != e->kind || strcmp(o->text, e->text) != 0)
				continue;
			o->done = true;
			/* a box with the same line twice counts once */
			if (!last || strcmp(last, o->box) != 0)
				names[k++] = last = o->box;
		}
		char *set = cli_fold_names(names, k);
		print_entry(e->kind, set, e->text);
		free(set);
	}
	free(names);
	cli_folder_release(f);
}

void cli_folder_release(cli_folder *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->v[i].text);
	free(f->v);
	f->v = NULL;
	f->n = f->cap = 0;
}
