/* Driver for t30-shim-roundtrip: generates seeded random argument vectors,
 * writes shell scripts that dump them (NUL-separated) on a test host, the
 * bytes each dump must equal, and compares.
 *
 *   shimdrv quote SEED N NBATCH DIR   DIR/qB.sh, qB.exp, qB.idx (B < NBATCH):
 *                                     `printf '%s\0' @vI WORDS...` per vector
 *   shimdrv nested SEED N DIR         DIR/n.sh, n.exp, n.idx: each vector as
 *                                     `eval QUOTED-COMMAND-LINE`, every tenth
 *                                     as `"$1" -c QUOTED-COMMAND-LINE` (run
 *                                     with `SHELL -s SHELL`)
 *   shimdrv shim SEED N DIR           vectors through shim_translate and
 *                                     shim_command_line, env rules included:
 *                                     DIR/s.sh + s.exp + s.idx (run in the
 *                                     directory holding ./dump), DIR/x.cmd +
 *                                     x.exp + x.idx (the first 100 vectors as ONE
 *                                     ssh exec command), DIR/dump
 *   shimdrv check EXP IDX ACTUAL      exit 0 when identical, else names the
 *                                     first differing vector and shows both
 *
 * The expected bytes of `shim` vectors come from the generator's own model of
 * the translation rules, not from shim_translate's result. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "shim/shim.h"
#include "tests/capture.h"
#include "tests/shim_fixture.h"
#include "tests/splitmix.h"

static uint64_t rng;
static uint64_t rnd(void)
{
	return splitmix64(&rng);
}
static size_t below(size_t n)
{
	return (size_t)(rnd() % n);
}

static const char *const tricky[] = {
	"",     "'",     "''",       "\"",     "\\",   "\\'",      "$",     "$HOME",
	"${x}", "$(id)", "`id`",     "!",      "!!",   "~",        "~root", "~/x",
	"#",    "#x",    "a#b",      "*",      "?",    "[a]",      "{a,b}", "a b",
	" ",    "\t",    "\n",       "x\n",    "\n\n", ";",        "&",     "|",
	"<",    ">",     "(",        ")",      "=",    "A=b",      "_=1",   "%1",
	"if",   "time",  "then",     "coproc", "--",   "-",        "-n",    "-e",
	"\x01", "\x7f",  "\x01\x7f", "\x80",   "\xff", "\xc3\xa9", "\xc3",  "\xed\xa0\x80",
	"%s",   "%b",    "\\0",      "\\n",    "x\\",  "a'b\"c",
};

static void random_bytes(strbuf *w, size_t len)
{
	static const char special[] = "'\"$`\\\n\t !~#*?[]{}()<>|&;=%^,:@+-./ \x01\x7f";
	int mode = (int)below(5);
	for (size_t i = 0; i < len; i++) {
		unsigned char c;
		int m = mode == 4 ? (int)below(4) : mode;
		if (m == 0)
			c = (unsigned char)(1 + below(255));
		else if (m == 1)
			c = (unsigned char)special[below(sizeof(special) - 1)];
		else if (m == 2)
			c = (unsigned char)(0x80 + below(128));
		else
			c = (unsigned char)"abcXYZ019_-=./:,@%+"[below(19)];
		strbuf_addch(w, (char)c);
	}
}

/* Any bytes but NUL. */
static char *random_word(void)
{
	strbuf w = STRBUF_INIT;
	size_t k = below(10);
	if (k == 0) {
		strbuf_addstr(&w, tricky[below(sizeof(tricky) / sizeof(tricky[0]))]);
	} else if (k == 1) {
		/* A few tricky pieces glued together. */
		for (size_t n = 1 + below(4); n; n--)
			strbuf_addstr(&w, tricky[below(sizeof(tricky) / sizeof(tricky[0]))]);
	} else {
		size_t len = below(50) == 0 ? 100 + below(400) : below(30);
		random_bytes(&w, len);
	}
	return strbuf_detach(&w);
}

/* A word that shim_translate treats as a non-flag. */
static char *random_nonflag(void)
{
	char *w = random_word();
	if (w[0] == '-') {
		char *v = xasprintf("v%s", w);
		free(w);
		return v;
	}
	return w;
}

typedef struct vec {
	char **w;
	size_t n, cap;
} vec;

static void vec_push(vec *v, char *s)
{
	v->w = xgrow(v->w, &v->cap, v->n + 1, sizeof(*v->w));
	v->w[v->n++] = s;
}
static void vec_clear(vec *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->w[i]);
	free(v->w);
	memset(v, 0, sizeof(*v));
}

typedef struct out {
	FILE *sh, *exp, *idx;
	long off;
} out;

static void out_open(out *o, const char *dir, const char *base)
{
	char *p;
	p = xasprintf("%s/%s.sh", dir, base);
	o->sh = fopen(p, "w");
	free(p);
	p = xasprintf("%s/%s.exp", dir, base);
	o->exp = fopen(p, "w");
	free(p);
	p = xasprintf("%s/%s.idx", dir, base);
	o->idx = fopen(p, "w");
	free(p);
	if (!o->sh || !o->exp || !o->idx) {
		perror("shimdrv");
		exit(2);
	}
	o->off = 0;
}
static void out_close(out *o)
{
	if (fclose(o->sh) || fclose(o->exp) || fclose(o->idx)) {
		perror("shimdrv");
		exit(2);
	}
}
/* Starts vector I's expected record. */
static void out_vector(out *o, size_t i)
{
	fprintf(o->idx, "%zu %ld\n", i, o->off);
}
static void out_exp(out *o, const char *word)
{
	size_t n = strlen(word) + 1;
	fwrite(word, 1, n, o->exp);
	o->off += (long)n;
}

static char *marker(size_t i)
{
	return xasprintf("@v%zu", i);
}

static int cmd_quote(uint64_t seed, size_t n, size_t nbatch, const char *dir, bool nested)
{
	/* Each kind of vector has its own stream from the one seed. */
	rng = nested ? seed ^ 0x6e657374ULL : seed;
	size_t per = (n + nbatch - 1) / nbatch;
	out o;
	size_t b = 0;
	for (size_t i = 0; i < n; i++) {
		if (i % per == 0) {
			if (i)
				out_close(&o);
			char *base = nested ? xstrdup("n") : xasprintf("q%zu", b++);
			out_open(&o, dir, base);
			free(base);
		}
		vec v = {0};
		vec_push(&v, xstrdup("printf"));
		vec_push(&v, xstrdup("%s\\0"));
		vec_push(&v, marker(i));
		for (size_t k = below(9); k; k--)
			vec_push(&v, random_word());
		strbuf line = STRBUF_INIT;
		bg_quote_argv(&line, (const char *const *)v.w, v.n);
		if (nested) {
			/* The whole command line quoted again: for `SHELL -c` (every
			 * tenth vector: a process each) or `eval`. */
			strbuf outer = STRBUF_INIT;
			strbuf_addstr(&outer, i % 10 == 0 ? "\"$1\" -c " : "eval ");
			bg_quote(&outer, line.buf);
			strbuf_release(&line);
			line = outer;
		}
		fprintf(o.sh, "%s\n", line.buf);
		out_vector(&o, i);
		for (size_t k = 2; k < v.n; k++)
			out_exp(&o, v.w[k]);
		strbuf_release(&line);
		vec_clear(&v);
	}
	if (n)
		out_close(&o);
	return 0;
}

static shim_env_rule rules[] = {
	{"--bgt-a", "BGT_A", "{}", "t30.ini", 5},
	{"--bgt-b", "BGT_B", "x{}y{}", "t30.ini", 6},
	{"--bgt-c", "BGT_C", "1", "t30.ini", 7},
};
static char *allow[] = {"--kind",        "--shape",    "--configs",
			"--num-workers", "--baseline", "--kernel"};

/* The dump prints these four variables (NAME=value, or empty when unset),
 * then its arguments. */
#define N_SLOTS 4
static const char dump_script[] =
	"#!/bin/sh\n"
	"printf '%s\\0' \"${BGT_A+BGT_A=}${BGT_A-}\" \"${BGT_B+BGT_B=}${BGT_B-}\" "
	"\"${BGT_C+BGT_C=}${BGT_C-}\" \"${BGT_NW+BGT_NW=}${BGT_NW-}\" \"$@\"\n";

/* One random shim vector: the user's args, the argv the entry must get and
 * the env slots it must see (NULL: unset). */
static void gen_shim_vector(size_t i, vec *args, vec *argv, char *slots[N_SLOTS])
{
	for (int s = 0; s < N_SLOTS; s++)
		slots[s] = NULL;
	char *m = marker(i);
	vec_push(args, xstrdup(m));
	vec_push(argv, m);
	bool used[8] = {false};
	for (size_t k = below(10); k; k--) {
		int kind = (int)below(10);
		if (kind < 8 && used[kind])
			kind = 9;
		switch (kind) {
		case 0: { /* --bgt-a VALUE or --bgt-a=VALUE */
			char *val = below(2) ? random_nonflag() : random_word();
			if (val[0] != '-' && below(2)) {
				vec_push(args, xstrdup("--bgt-a"));
				vec_push(args, xstrdup(val));
			} else {
				vec_push(args, xasprintf("--bgt-a=%s", val));
			}
			if (below(3) == 0) /* the same again is fine */
				vec_push(args, xasprintf("--bgt-a=%s", val));
			slots[0] = xasprintf("BGT_A=%s", val);
			free(val);
			used[0] = true;
			break;
		}
		case 1: {
			char *val = random_word();
			vec_push(args, xasprintf("--bgt-b=%s", val));
			slots[1] = xasprintf("BGT_B=x%sy%s", val, val);
			free(val);
			used[1] = true;
			break;
		}
		case 2:
			vec_push(args, xstrdup("--bgt-c"));
			slots[2] = xstrdup("BGT_C=1");
			used[2] = true;
			break;
		case 3: { /* one shape per invocation */
			char *s = random_nonflag();
			if (s[0] == '\0') {
				free(s);
				s = xstrdup("q_b");
			}
			vec_push(args, xstrdup("--shape"));
			vec_push(args, xstrdup(s));
			vec_push(args, xasprintf("--configs=%s", s));
			vec_push(argv, xstrdup("--shape"));
			vec_push(argv, xstrdup(s));
			vec_push(argv, xasprintf("--configs=%s", s));
			free(s);
			used[3] = true;
			break;
		}
		case 4: {
			char *nw = xasprintf("%zu", 1 + below(256));
			vec_push(args, xstrdup("--num-workers"));
			vec_push(args, xstrdup(nw));
			vec_push(argv, xstrdup("--num-workers"));
			vec_push(argv, xstrdup(nw));
			slots[3] = xasprintf("BGT_NW=%s", nw);
			free(nw);
			used[4] = true;
			break;
		}
		case 5: { /* allowed flags with values in both forms */
			char *val = random_nonflag();
			const char *f = below(2) ? "--kind" : "--kernel";
			if (below(2)) {
				vec_push(args, xstrdup(f));
				vec_push(args, xstrdup(val));
				vec_push(argv, xstrdup(f));
				vec_push(argv, xstrdup(val));
			} else {
				char *w = xasprintf("%s=%s", f, val);
				vec_push(args, xstrdup(w));
				vec_push(argv, w);
			}
			free(val);
			break;
		}
		case 6:
			vec_push(args, xstrdup("--baseline"));
			vec_push(argv, xstrdup("--baseline"));
			break;
		case 7: { /* end of flags: anything, verbatim */
			vec_push(args, xstrdup("--"));
			vec_push(argv, xstrdup("--"));
			for (size_t j = below(5); j; j--) {
				char *w = below(3) ? random_word() : xstrdup("--bgt-c");
				vec_push(args, xstrdup(w));
				vec_push(argv, w);
			}
			return;
		}
		default: { /* positional */
			char *w = random_nonflag();
			vec_push(args, xstrdup(w));
			vec_push(argv, w);
			break;
		}
		}
	}
}

static int cmd_shim(uint64_t seed, size_t n, const char *dir)
{
	rng = seed ^ 0x7368696dULL;
	shim_rules box = SHIM_FIXTURE_BOX("t30", "./dump", "t30.ini", 4, allow, rules);
	box.num_workers_env = "BGT_NW";

	char *p = xasprintf("%s/dump", dir);
	FILE *f = fopen(p, "w");
	free(p);
	if (!f || fputs(dump_script, f) == EOF || fclose(f)) {
		perror("shimdrv");
		return 2;
	}
	out s, x;
	out_open(&s, dir, "s");
	out_open(&x, dir, "x");
	size_t n_exec = n < 100 ? n : 100;
	fprintf(x.sh, "cd bgt30 || exit 1\n");
	for (size_t i = 0; i < n; i++) {
		vec args = {0}, argv = {0};
		char *slots[N_SLOTS];
		gen_shim_vector(i, &args, &argv, slots);
		shim_result r;
		bg_err err;
		int rc = shim_translate(&box, (const char *const *)args.w, args.n, &r, &err);
		if (rc < 0) {
			fprintf(stderr, "shimdrv: vector %zu (seed %#llx) refused: %s\n", i,
				(unsigned long long)seed, err.msg);
			return 1;
		}
		char *cmd = shim_command_line(&r, "./dump");
		if (!cmd) {
			fprintf(stderr, "shimdrv: vector %zu: no command line\n", i);
			return 1;
		}
		fprintf(s.sh, "%s\n", cmd);
		out_vector(&s, i);
		if (i < n_exec) {
			fprintf(x.sh, "%s\n", cmd);
			out_vector(&x, i);
		}
		for (int k = 0; k < N_SLOTS; k++) {
			out_exp(&s, slots[k] ? slots[k] : "");
			if (i < n_exec)
				out_exp(&x, slots[k] ? slots[k] : "");
			free(slots[k]);
		}
		for (size_t k = 0; k < argv.n; k++) {
			out_exp(&s, argv.w[k]);
			if (i < n_exec)
				out_exp(&x, argv.w[k]);
		}
		free(cmd);
		shim_result_release(&r);
		vec_clear(&args);
		vec_clear(&argv);
	}
	out_close(&s);
	out_close(&x);
	/* x.sh is sent as one ssh exec command: name it for what it is. */
	char *from = xasprintf("%s/x.sh", dir), *to = xasprintf("%s/x.cmd", dir);
	rename(from, to);
	free(from);
	free(to);
	return 0;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "shimdrv: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	char *s = capture_stream(f, len);
	fclose(f);
	return s;
}

static void show(const char *what, const char *p, size_t n)
{
	fprintf(stderr, "#   %s (%zu bytes): ", what, n);
	for (size_t i = 0; i < n && i < 600; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c == 0)
			fputs("\\0", stderr);
		else if (c < 0x20 || c >= 0x7f || c == '\\')
			fprintf(stderr, "\\x%02x", c);
		else
			fputc(c, stderr);
	}
	fputc('\n', stderr);
}

static int cmd_check(const char *exp_path, const char *idx_path, const char *act_path)
{
	size_t el, al, il;
	char *exp = slurp(exp_path, &el), *act = slurp(act_path, &al), *idx = slurp(idx_path, &il);
	int rc = 0;
	if (el != al || memcmp(exp, act, el) != 0) {
		size_t d = 0;
		while (d < el && d < al && exp[d] == act[d])
			d++;
		/* The vector whose record holds byte d. */
		size_t vec_i = 0, start = 0, end = el;
		const char *p = idx;
		while (*p) {
			size_t vi;
			long off;
			int used = 0;
			if (sscanf(p, "%zu %ld\n%n", &vi, &off, &used) != 2 || used == 0)
				break;
			if ((size_t)off <= d) {
				vec_i = vi;
				start = (size_t)off;
			} else {
				end = (size_t)off;
				break;
			}
			p += used;
		}
		fprintf(stderr, "# %s: first difference at byte %zu, in vector %zu\n", act_path, d,
			vec_i);
		show("expected", exp + start, end - start);
		size_t alen = start < al ? al - start : 0;
		if (alen > end - start + 64)
			alen = end - start + 64;
		show("actual  ", start < al ? act + start : "", alen);
		rc = 1;
	}
	free(exp);
	free(act);
	free(idx);
	return rc;
}

static uint64_t parse_seed(const char *s)
{
	return strtoull(s, NULL, 0);
}

int main(int argc, char **argv)
{
	if (argc == 6 && strcmp(argv[1], "quote") == 0)
		return cmd_quote(parse_seed(argv[2]), strtoul(argv[3], NULL, 10),
				 strtoul(argv[4], NULL, 10), argv[5], false);
	if (argc == 5 && strcmp(argv[1], "nested") == 0)
		return cmd_quote(parse_seed(argv[2]), strtoul(argv[3], NULL, 10), 1, argv[4], true);
	if (argc == 5 && strcmp(argv[1], "shim") == 0)
		return cmd_shim(parse_seed(argv[2]), strtoul(argv[3], NULL, 10), argv[4]);
	if (argc == 5 && strcmp(argv[1], "check") == 0)
		return cmd_check(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: shimdrv quote SEED N NBATCH DIR | nested SEED N DIR | shim SEED "
			"N DIR | check EXP IDX ACTUAL\n");
	return 2;
}
