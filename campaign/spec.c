/* Reading a [campaign NAME] section: the same INI rules as boxgate.ini (';' and
 * '#' comment lines, " ;" starts an inline comment, an indented line continues
 * the value before it), every error naming FILE:LINE. */
#include "campaign/spec.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/sha256.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "conf/conf.h"

#define WORKERS_MAX 65536

static const char *const keys[] = {
	"pool",         "gate_args",   "shapes",       "num_workers",
	"candidates",   "repeats",     "timeout_s",    "bar",
	"push",         "results",     "max_cv",       "sum_tolerance",
	"max_failures", "lock_wait_s", "strict_noise", "persistent_agent",
};
#define N_KEYS      (sizeof(keys) / sizeof(keys[0]))
#define CAND_PREFIX "candidate."

/* One key of the section, its value joined across continuation lines. */
typedef struct entry {
	char *key;
	strbuf value;
	int line;
} entry;

typedef struct section {
	char *name;
	int line;
	entry *e;
	size_t n, cap;
} section;

static char *trim(const char *s, const char *e)
{
	while (s < e && isspace((unsigned char)*s))
		s++;
	while (e > s && isspace((unsigned char)e[-1]))
		e--;
	return xstrndup(s, (size_t)(e - s));
}

/* The end of a value: an inline comment starts at ';' after blank. */
static const char *value_end(const char *s)
{
	for (const char *p = s; *p; p++)
		if (*p == ';' && p > s && isspace((unsigned char)p[-1]))
			return p;
	return s + strlen(s);
}

static void sections_free(section *secs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < secs[i].n; j++) {
			free(secs[i].e[j].key);
			strbuf_release(&secs[i].e[j].value);
		}
		free(secs[i].e);
		free(secs[i].name);
	}
	free(secs);
}

/* Every [campaign NAME] section of the file with its keys. */
static int read_sections(const char *path, section **out, size_t *n_out, bg_err *err)
{
	conf_lines lines = {0};
	section *secs = NULL;
	size_t n = 0, cap = 0;
	int rc = conf_read_lines(path, &lines, err);
	if (rc == BG_ENOTFOUND)
		return bg_fail(err, BG_EUSAGE, "%s: no such campaign file", path);
	if (rc)
		return rc;
	section *cur = NULL;
	bool in_other = false;
	for (size_t i = 0; i < lines.n && !rc; i++) {
		const char *raw = lines.line[i], *s = raw;
		int ln = (int)i + 1;
		while (isspace((unsigned char)*s))
			s++;
		if (!*s || *s == ';' || *s == '#')
			continue;
		if (*s == '[') {
			const char *e = strchr(s, ']');
			if (!e) {
				rc = bg_fail(err, BG_ECONFIG,
					     "%s:%d: section header '%s' lacks its closing ']'",
					     path, ln, s);
				break;
			}
			char *t = trim(s + 1, e);
			cur = NULL;
			in_other = strncmp(t, "campaign", 8) != 0 ||
				   (t[8] && !isspace((unsigned char)t[8]));
			if (!in_other) {
				char *name = trim(t + 8, t + strlen(t));
				if (!*name || !conf_box_name_ok(name) ||
				    strlen(name) > CAMPAIGN_NAME_MAX) {
					rc = bg_fail(err, BG_ECONFIG,
						     "%s:%d: bad campaign name '%s' (letters, "
						     "digits, '.', '_' and '-' only, at most 64)",
						     path, ln, name);
					free(name);
				} else {
					for (size_t k = 0; k < n && !rc; k++)
						if (strcmp(secs[k].name, name) == 0)
							rc = bg_fail(err, BG_ECONFIG,
								     "%s:%d: campaign '%s' defined "
								     "twice, first at line %d",
								     path, ln, name, secs[k].line);
					if (rc) {
						free(name);
					} else {
						secs = xgrow(secs, &cap, n + 1, sizeof(*secs));
						cur = &secs[n++];
						memset(cur, 0, sizeof(*cur));
						cur->name = name;
						cur->line = ln;
					}
				}
			}
			free(t);
			continue;
		}
		if (in_other)
			continue;
		if (!cur) {
			rc = bg_fail(err, BG_ECONFIG, "%s:%d: '%s' comes before any section", path,
				     ln, s);
			break;
		}
		if (s > raw && cur->n) {
			/* an indented line continues the value above it */
			entry *last = &cur->e[cur->n - 1];
			char *v = trim(s, value_end(s));
			strbuf_addch(&last->value, ' ');
			strbuf_addstr(&last->value, v);
			free(v);
			continue;
		}
		const char *eq = strchr(s, '=');
		if (!eq || eq == s) {
			char *t = trim(s, s + strlen(s));
			rc = bg_fail(err, BG_ECONFIG, "%s:%d: expected 'key = value', got '%s'",
				     path, ln, t);
			free(t);
			break;
		}
		char *key = trim(s, eq);
		for (size_t k = 0; k < cur->n && !rc; k++)
			if (strcmp(cur->e[k].key, key) == 0)
				rc = bg_fail(err, BG_ECONFIG,
					     "%s:%d: '%s' set twice in [campaign %s], first at "
					     "line %d",
					     path, ln, key, cur->name, cur->e[k].line);
		if (rc) {
			free(key);
			break;
		}
		cur->e = xgrow(cur->e, &cur->cap, cur->n + 1, sizeof(*cur->e));
		entry *en = &cur->e[cur->n++];
		en->key = key;
		en->line = ln;
		en->value = (strbuf)STRBUF_INIT;
		char *v = trim(eq + 1, value_end(eq + 1));
		strbuf_addstr(&en->value, v);
		free(v);
	}
	conf_lines_release(&lines);
	if (rc) {
		sections_free(secs, n);
		return rc;
	}
	*out = secs;
	*n_out = n;
	return 0;
}

static char *dir_of(const char *abs)
{
	const char *slash = strrchr(abs, '/');
	return slash == abs ? xstrdup("/") : xstrndup(abs, (size_t)(slash - abs));
}

static char *absolute(const char *dir, const char *p)
{
	return p[0] == '/' ? xstrdup(p) : xasprintf("%s/%s", dir, p);
}

static bool whole(const char *v, long min, long max, long *out)
{
	if (!*v || strspn(v, "0123456789") != strlen(v) || strlen(v) > 9)
		return false;
	long x = atol(v);
	if (x < min || x > max)
		return false;
	*out = x;
	return true;
}

static bool positive_number(const char *v, double *out)
{
	char *end;
	if (!*v || strspn(v, "0123456789.") != strlen(v))
		return false;
	double x = strtod(v, &end);
	if (*end || !(x > 0) || x > 1000)
		return false;
	*out = x;
	return true;
}

static bool shape_ok(const char *s)
{
	return *s && strlen(s) <= CAMPAIGN_NAME_MAX &&
	       strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") ==
		       strlen(s);
}

/* "kernels/cand_a.cuh" -> "cand_a" */
static char *stem_of(const char *p)
{
	const char *b = strrchr(p, '/');
	b = b ? b + 1 : p;
	const char *dot = strchr(b, '.');
	return xstrndup(b, dot && dot > b ? (size_t)(dot - b) : strlen(b));
}

static const entry *find(const section *sec, const char *key)
{
	for (size_t i = 0; i < sec->n; i++)
		if (strcmp(sec->e[i].key, key) == 0)
			return &sec->e[i];
	return NULL;
}

static int add_candidate(campaign_spec *s, const section *sec, const char *dir, const char *word,
			 int line, bg_err *err)
{
	campaign_candidate c = {0};
	char *key = xasprintf(CAND_PREFIX "%s", word);
	const entry *def = find(sec, key);
	free(key);
	if (strcmp(word, "baseline") == 0) {
		c.name = xstrdup(word);
		conf_split_list(def ? strbuf_str(&def->value) : "--baseline", &c.flags, &c.n_flags);
	} else if (def) {
		c.name = xstrdup(word);
		conf_split_list(strbuf_str(&def->value), &c.flags, &c.n_flags);
		if (!c.n_flags) {
			free(c.name);
			return bg_fail(err, BG_ECONFIG, "%s:%d: candidate.%s names no gate flags",
				       s->file, def->line, word);
		}
	} else {
		c.file = absolute(dir, word);
		c.shown = xstrdup(word);
		c.name = stem_of(word);
		bg_err e2 = {0};
		struct stat st;
		if (stat(c.file, &st) == 0 && !S_ISREG(st.st_mode)) {
			/* a FIFO would block the read for ever */
			int rc = bg_fail(err, BG_ECONFIG,
					 "%s:%d: candidate '%s': %s is not a regular file", s->file,
					 line, word, c.file);
			free(c.file);
			free(c.shown);
			free(c.name);
			return rc;
		}
		if (access(c.file, R_OK) != 0 || bg_sha256_file(c.file, c.sha, &e2) < 0) {
			int rc =
				bg_fail(err, BG_ECONFIG,
					"%s:%d: candidate '%s': no such readable file (%s), and no "
					"candidate.%s = FLAGS defines it",
					s->file, line, word, c.file, word);
			free(c.file);
			free(c.shown);
			free(c.name);
			return rc;
		}
	}
	if (strlen(c.name) > CAMPAIGN_NAME_MAX || !conf_box_name_ok(c.name)) {
		int rc = bg_fail(err, BG_ECONFIG,
				 "%s:%d: candidate '%s': its name '%s' must be letters, digits, "
				 "'.', '_' and '-', at most 64",
				 s->file, line, word, c.name);
		free(c.file);
		free(c.shown);
		free(c.name);
		conf_strv_free(c.flags, c.n_flags);
		return rc;
	}
	for (size_t i = 0; i < s->n_cands; i++) {
		if (strcmp(s->cands[i].name, c.name) == 0) {
			int rc = bg_fail(err, BG_ECONFIG,
					 "%s:%d: two candidates named '%s' (%s and %s): rename "
					 "one file",
					 s->file, line, c.name,
					 s->cands[i].shown ? s->cands[i].shown : s->cands[i].name,
					 c.shown ? c.shown : c.name);
			free(c.file);
			free(c.shown);
			free(c.name);
			conf_strv_free(c.flags, c.n_flags);
			return rc;
		}
	}
	s->cands = xrealloc(s->cands, (s->n_cands + 1) * sizeof(*s->cands));
	s->cands[s->n_cands++] = c;
	return 0;
}

/* Checks one key's value into s. */
static int apply(campaign_spec *s, const section *sec, const char *dir, const entry *en,
		 bg_err *err)
{
	const char *k = en->key, *v = strbuf_str(&en->value);
	const char *f = s->file;
	int ln = en->line;
	long x;
	char **w = NULL;
	size_t nw = 0;
	int rc = 0;
	/* a value goes into gate command lines, records and terminals: no control
	 * characters (a tab separates words like a blank) */
	for (const unsigned char *c = (const unsigned char *)v; *c; c++)
		if ((*c < 0x20 && *c != '\t') || *c == 0x7f)
			return bg_fail(err, BG_ECONFIG,
				       "%s:%d: %s: a control character (0x%02x) in the value", f,
				       ln, k, *c);
	if (strncmp(k, CAND_PREFIX, strlen(CAND_PREFIX)) == 0) {
		if (!conf_box_name_ok(k + strlen(CAND_PREFIX)))
			return bg_fail(err, BG_ECONFIG, "%s:%d: bad candidate name in '%s'", f, ln,
				       k);
		return 0; /* read with `candidates` */
	}
	if (strcmp(k, "pool") == 0) {
		if (!conf_box_name_ok(v))
			return bg_fail(err, BG_ECONFIG, "%s:%d: pool: bad pool name '%s'", f, ln,
				       v);
		free(s->pool);
		s->pool = xstrdup(v);
	} else if (strcmp(k, "gate_args") == 0) {
		/* words, split on blanks only: a gate flag's value may hold a comma */
		for (const char *p = v; *p;) {
			p += strspn(p, " \t");
			size_t len = strcspn(p, " \t");
			if (len) {
				s->gate_args = xrealloc(s->gate_args,
							(s->n_gate_args + 1) * sizeof(char *));
				s->gate_args[s->n_gate_args++] = xstrndup(p, len);
			}
			p += len;
		}
	} else if (strcmp(k, "shapes") == 0) {
		conf_split_list(v, &s->shapes, &s->n_shapes);
		for (size_t i = 0; i < s->n_shapes && !rc; i++) {
			if (!shape_ok(s->shapes[i]))
				rc = bg_fail(err, BG_ECONFIG,
					     "%s:%d: shapes: bad shape name '%s' (letters, digits, "
					     "'.', '_' and '-' only, at most 64)",
					     f, ln, s->shapes[i]);
			for (size_t j = 0; j < i && !rc; j++)
				if (strcmp(s->shapes[i], s->shapes[j]) == 0)
					rc = bg_fail(err, BG_ECONFIG,
						     "%s:%d: shapes: '%s' listed twice", f, ln,
						     s->shapes[i]);
		}
	} else if (strcmp(k, "num_workers") == 0) {
		conf_split_list(v, &w, &nw);
		s->num_workers = xcalloc(nw ? nw : 1, sizeof(int));
		for (size_t i = 0; i < nw && !rc; i++) {
			if (!whole(w[i], 1, WORKERS_MAX, &x)) {
				rc = bg_fail(err, BG_ECONFIG,
					     "%s:%d: num_workers: '%s' is not a whole number from "
					     "1 to %d",
					     f, ln, w[i], WORKERS_MAX);
				break;
			}
			for (size_t j = 0; j < s->n_num_workers && !rc; j++)
				if (s->num_workers[j] == (int)x)
					rc = bg_fail(err, BG_ECONFIG,
						     "%s:%d: num_workers: %ld listed twice", f, ln,
						     x);
			s->num_workers[s->n_num_workers++] = (int)x;
		}
	} else if (strcmp(k, "candidates") == 0) {
		conf_split_list(v, &w, &nw);
		for (size_t i = 0; i < nw && !rc; i++)
			rc = add_candidate(s, sec, dir, w[i], ln, err);
	} else if (strcmp(k, "repeats") == 0) {
		if (!whole(v, 1, CAMPAIGN_REPEATS_MAX, &x))
			return bg_fail(err, BG_ECONFIG,
				       "%s:%d: repeats: '%s' is not a whole number from 1 to %d", f,
				       ln, v, CAMPAIGN_REPEATS_MAX);
		s->repeats = (int)x;
	} else if (strcmp(k, "timeout_s") == 0 || strcmp(k, "lock_wait_s") == 0 ||
		   strcmp(k, "max_failures") == 0) {
		bool t = k[0] == 't', l = k[0] == 'l';
		long min = t ? 1 : l ? 0 : 1, max = t ? 7 * 86400 : l ? 86400 : 100;
		if (!whole(v, min, max, &x))
			return bg_fail(err, BG_ECONFIG,
				       "%s:%d: %s: '%s' is not a whole number from %ld to %ld", f,
				       ln, k, v, min, max);
		*(t ? &s->timeout_s : l ? &s->lock_wait_s : &s->max_failures) = (int)x;
	} else if (strcmp(k, "bar") == 0) {
		if (!positive_number(v, &s->bar))
			return bg_fail(err, BG_ECONFIG,
				       "%s:%d: bar: '%s' is not a positive number such as 1.2", f,
				       ln, v);
	} else if (strcmp(k, "max_cv") == 0 || strcmp(k, "sum_tolerance") == 0) {
		if (!conf_parse_percent(v, k[0] == 'm' ? &s->max_cv : &s->sum_tol))
			return bg_fail(err, BG_ECONFIG,
				       "%s:%d: %s: '%s' is not a percentage such as 2 or 0.5", f,
				       ln, k, v);
	} else if (strcmp(k, "strict_noise") == 0) {
		if (strcmp(v, "yes") != 0 && strcmp(v, "no") != 0)
			return bg_fail(err, BG_ECONFIG,
				       "%s:%d: strict_noise: '%s' is not yes or no", f, ln, v);
		s->strict_noise = strcmp(v, "yes") == 0;
	} else if (strcmp(k, "persistent_agent") == 0) {
		if (strcmp(v, "yes") != 0 && strcmp(v, "no") != 0)
			return bg_fail(err, BG_ECONFIG,
				       "%s:%d: persistent_agent: '%s' is not yes or no", f, ln, v);
		s->per_job_agent = strcmp(v, "no") == 0;
	} else if (strcmp(k, "push") == 0) {
		conf_split_list(v, &w, &nw);
		for (size_t i = 0; i < nw && !rc; i++) {
			char *p = absolute(dir, w[i]);
			struct stat st;
			if (access(p, R_OK) != 0 || stat(p, &st) != 0 || !S_ISREG(st.st_mode)) {
				rc = bg_fail(err, BG_ECONFIG,
					     "%s:%d: push: no such readable file %s", f, ln, p);
				free(p);
				break;
			}
			s->push = xrealloc(s->push, (s->n_push + 1) * sizeof(char *));
			s->push[s->n_push++] = p;
		}
	} else if (strcmp(k, "results") == 0) {
		if (!*v)
			return bg_fail(err, BG_ECONFIG, "%s:%d: results: a file name is needed", f,
				       ln);
		free(s->results);
		s->results = absolute(dir, v);
	} else {
		const char *hint = conf_suggest(k, keys, N_KEYS);
		if (hint)
			return bg_fail(err, BG_ECONFIG,
				       "%s:%d: unknown key '%s' in [campaign %s] (did you mean "
				       "'%s'?)",
				       f, ln, k, s->name, hint);
		return bg_fail(err, BG_ECONFIG,
			       "%s:%d: unknown key '%s' in [campaign %s] (expected pool, "
			       "gate_args, shapes, num_workers, candidates, candidate.NAME, "
			       "repeats, timeout_s, bar, push, results, max_cv, sum_tolerance, "
			       "strict_noise, max_failures, lock_wait_s or persistent_agent)",
			       f, ln, k, s->name);
	}
	conf_strv_free(w, nw);
	return rc;
}

static int require(const campaign_spec *s, const section *sec, const char *key, bool present,
		   bg_err *err)
{
	if (present)
		return 0;
	const entry *e = find(sec, key);
	if (e)
		return bg_fail(err, BG_ECONFIG, "%s:%d: %s: no value", s->file, e->line, key);
	return bg_fail(err, BG_ECONFIG, "%s:%d: [campaign %s] needs %s = ...", s->file, sec->line,
		       s->name, key);
}

int campaign_spec_load(const char *path, const char *name, campaign_spec *out, bg_err *err)
{
	section *secs = NULL;
	size_t n = 0;
	char *dir = NULL;
	char real[PATH_MAX];
	memset(out, 0, sizeof(*out));
	int rc = read_sections(path, &secs, &n, err);
	if (rc)
		return rc;
	const section *sec = NULL;
	for (size_t i = 0; i < n && name; i++)
		if (strcmp(secs[i].name, name) == 0)
			sec = &secs[i];
	if (!n) {
		rc = bg_fail(err, BG_EUSAGE, "%s: no [campaign NAME] section", path);
		goto out;
	}
	if (!name && n > 1) {
		strbuf names = STRBUF_INIT;
		for (size_t i = 0; i < n; i++)
			strbuf_addf(&names, "%s%s", i ? ", " : "", secs[i].name);
		rc = bg_fail(err, BG_EUSAGE, "%s holds %zu campaigns (%s): name one with --name",
			     path, n, names.buf);
		strbuf_release(&names);
		goto out;
	}
	if (!name)
		sec = &secs[0];
	if (!sec) {
		strbuf names = STRBUF_INIT;
		for (size_t i = 0; i < n; i++)
			strbuf_addf(&names, "%s%s", i ? ", " : "", secs[i].name);
		rc = bg_fail(err, BG_EUSAGE, "%s: no [campaign %s] (it holds %s)", path, name,
			     names.buf);
		strbuf_release(&names);
		goto out;
	}
	out->name = xstrdup(sec->name);
	out->file = xstrdup(realpath(path, real) ? real : path);
	out->line = sec->line;
	out->repeats = 1;
	out->max_cv = -1;
	out->sum_tol = 10;
	out->max_failures = 2;
	out->lock_wait_s = 30;
	dir = dir_of(out->file);
	for (size_t i = 0; i < sec->n && !rc; i++)
		if (strcmp(sec->e[i].key, "candidates") != 0)
			rc = apply(out, sec, dir, &sec->e[i], err);
	const entry *cands = find(sec, "candidates");
	if (!rc && cands)
		rc = apply(out, sec, dir, cands, err);
	if (!rc && !cands)
		rc = add_candidate(out, sec, dir, "baseline", sec->line, err);
	if (!rc)
		rc = require(out, sec, "pool", out->pool != NULL, err);
	if (!rc)
		rc = require(out, sec, "shapes", out->n_shapes > 0, err);
	if (!rc)
		rc = require(out, sec, "candidates", out->n_cands > 0, err);
	if (!rc && find(sec, "num_workers"))
		rc = require(out, sec, "num_workers", out->n_num_workers > 0, err);
	if (!rc && !out->results)
		out->results = xasprintf("%s/%s.results.jsonl", dir, out->name);
	for (size_t i = 0; !rc && i < out->n_cands; i++) {
		campaign_candidate *c = &out->cands[i];
		campaign_def_of(out->gate_args, out->n_gate_args, c->flags, c->n_flags, c->sha,
				c->def);
	}
	if (!rc) {
		size_t jobs = out->n_shapes * (out->n_num_workers ? out->n_num_workers : 1) *
			      out->n_cands * (size_t)out->repeats;
		if (jobs > CAMPAIGN_JOBS_MAX)
			rc = bg_fail(err, BG_ECONFIG,
				     "%s:%d: [campaign %s] makes %zu jobs (at most %d)", out->file,
				     sec->line, out->name, jobs, CAMPAIGN_JOBS_MAX);
	}
out:
	free(dir);
	sections_free(secs, n);
	if (rc)
		campaign_spec_release(out);
	return rc;
}

void campaign_spec_release(campaign_spec *s)
{
	free(s->name);
	free(s->file);
	free(s->pool);
	conf_strv_free(s->gate_args, s->n_gate_args);
	conf_strv_free(s->shapes, s->n_shapes);
	free(s->num_workers);
	for (size_t i = 0; i < s->n_cands; i++) {
		free(s->cands[i].name);
		free(s->cands[i].file);
		free(s->cands[i].shown);
		conf_strv_free(s->cands[i].flags, s->cands[i].n_flags);
	}
	free(s->cands);
	conf_strv_free(s->push, s->n_push);
	free(s->results);
	memset(s, 0, sizeof(*s));
}

static void add_word(campaign_job *j, const char *w)
{
	j->words = xrealloc(j->words, (j->n_words + 2) * sizeof(char *));
	j->words[j->n_words++] = xstrdup(w);
	j->words[j->n_words] = NULL;
}

int campaign_jobs_expand(const campaign_spec *s, campaign_job **out, size_t *n, bg_err *err)
{
	size_t nnw = s->n_num_workers ? s->n_num_workers : 1;
	size_t total = (size_t)s->repeats * s->n_shapes * nnw * s->n_cands;
	campaign_job *jobs = xcalloc(total ? total : 1, sizeof(*jobs));
	size_t k = 0;
	(void)err;
	for (int r = 0; r < s->repeats; r++)
		for (size_t sh = 0; sh < s->n_shapes; sh++)
			for (size_t w = 0; w < nnw; w++)
				for (size_t c = 0; c < s->n_cands; c++) {
					campaign_job *j = &jobs[k];
					const campaign_candidate *cd = &s->cands[c];
					char nw[16] = "-";
					j->index = k++;
					j->shape = sh;
					j->cand = c;
					j->repeat = r;
					j->num_workers = s->n_num_workers ? s->num_workers[w] : -1;
					if (j->num_workers > 0)
						snprintf(nw, sizeof(nw), "%d", j->num_workers);
					snprintf(j->key, sizeof(j->key), "%s/%s/%s/%s@%s/%d",
						 s->name, s->shapes[sh], nw, cd->name, cd->def, r);
					for (size_t i = 0; i < s->n_gate_args; i++)
						add_word(j, s->gate_args[i]);
					add_word(j, "--shape");
					add_word(j, s->shapes[sh]);
					add_word(j, "--configs");
					add_word(j, s->shapes[sh]);
					if (j->num_workers > 0) {
						add_word(j, "--num-workers");
						add_word(j, nw);
					}
					for (size_t i = 0; i < cd->n_flags; i++)
						add_word(j, cd->flags[i]);
				}
	*out = jobs;
	*n = total;
	return 0;
}

void campaign_jobs_free(campaign_job *jobs, size_t n)
{
	for (size_t i = 0; jobs && i < n; i++) {
		for (size_t w = 0; w < jobs[i].n_words; w++)
			free(jobs[i].words[w]);
		free(jobs[i].words);
	}
	free(jobs);
}

static cJSON *words_json(char *const *w, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(w[i]));
	return a;
}

cJSON *campaign_job_json(const campaign_spec *s, const campaign_job *job, size_t n_jobs,
			 int attempt, bool final)
{
	const campaign_candidate *c = &s->cands[job->cand];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", s->name);
	cJSON_AddStringToObject(o, "file", s->file);
	cJSON_AddStringToObject(o, "pool", s->pool);
	cJSON_AddItemToObject(o, "gate_args", words_json(s->gate_args, s->n_gate_args));
	cJSON_AddStringToObject(o, "job", job->key);
	cJSON_AddStringToObject(o, "shape", s->shapes[job->shape]);
	if (job->num_workers > 0)
		cJSON_AddNumberToObject(o, "num_workers", job->num_workers);
	else
		cJSON_AddNullToObject(o, "num_workers");
	cJSON_AddStringToObject(o, "candidate", c->name);
	if (c->shown) {
		cJSON_AddStringToObject(o, "candidate_file", c->shown);
		cJSON_AddStringToObject(o, "candidate_sha256", c->sha);
	} else {
		cJSON_AddNullToObject(o, "candidate_file");
		cJSON_AddNullToObject(o, "candidate_sha256");
	}
	if (c->n_flags)
		cJSON_AddItemToObject(o, "candidate_flags", words_json(c->flags, c->n_flags));
	else
		cJSON_AddNullToObject(o, "candidate_flags");
	cJSON_AddNumberToObject(o, "repeat", job->repeat);
	cJSON_AddNumberToObject(o, "repeats", s->repeats);
	cJSON_AddNumberToObject(o, "jobs", (double)n_jobs);
	cJSON_AddNumberToObject(o, "attempt", attempt);
	cJSON_AddBoolToObject(o, "final", final);
	if (s->bar > 0)
		cJSON_AddNumberToObject(o, "bar", s->bar);
	else
		cJSON_AddNullToObject(o, "bar");
	cJSON_AddNumberToObject(o, "max_cv", s->max_cv >= 0 ? s->max_cv : 2.0);
	cJSON_AddNumberToObject(o, "sum_tolerance", s->sum_tol);
	if (s->strict_noise)
		cJSON_AddBoolToObject(o, "strict_noise", 1);
	return o;
}

void campaign_def_of(char *const *gate_args, size_t n_gate_args, char *const *flags, size_t n_flags,
		     const char *sha, char out[CAMPAIGN_DEF_LEN + 1])
{
	/* every word with its length: no two lists serialise alike */
	strbuf b = STRBUF_INIT;
	char hex[BG_SHA256_HEX_LEN + 1];
	strbuf_addf(&b, "gate_args %zu\n", n_gate_args);
	for (size_t i = 0; i < n_gate_args; i++)
		strbuf_addf(&b, "%zu:%s\n", strlen(gate_args[i]), gate_args[i]);
	strbuf_addf(&b, "flags %zu\n", n_flags);
	for (size_t i = 0; i < n_flags; i++)
		strbuf_addf(&b, "%zu:%s\n", strlen(flags[i]), flags[i]);
	strbuf_addf(&b, "file %s\n", sha ? sha : "");
	bg_sha256_hex(b.buf ? b.buf : "", b.len, hex);
	strbuf_release(&b);
	memcpy(out, hex, CAMPAIGN_DEF_LEN);
	out[CAMPAIGN_DEF_LEN] = '\0';
}

/* The strings of a JSON array (borrowed, *v owned), null as none; false when
 * it is neither an array of strings nor (with `null_ok`) null. */
static bool json_words(const cJSON *a, bool null_ok, char ***v, size_t *n)
{
	*v = NULL;
	*n = 0;
	if (null_ok && cJSON_IsNull(a))
		return true;
	if (!cJSON_IsArray(a))
		return false;
	*v = xcalloc((size_t)cJSON_GetArraySize(a) + 1, sizeof(char *));
	for (const cJSON *w = a->child; w; w = w->next) {
		if (!cJSON_IsString(w)) {
			free(*v);
			*v = NULL;
			return false;
		}
		(*v)[(*n)++] = w->valuestring;
	}
	return true;
}

static const cJSON *member(const cJSON *o, const char *k)
{
	return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

bool campaign_record_def(const cJSON *camp, char def[CAMPAIGN_DEF_LEN + 1])
{
	char **ga, **fl;
	size_t nga, nfl;
	const cJSON *sha = member(camp, "candidate_sha256");
	if (!cJSON_IsString(sha) && !cJSON_IsNull(sha))
		return false;
	if (!json_words(member(camp, "gate_args"), false, &ga, &nga))
		return false;
	if (!json_words(member(camp, "candidate_flags"), true, &fl, &nfl)) {
		free(ga);
		return false;
	}
	campaign_def_of(ga, nga, fl, nfl, cJSON_IsString(sha) ? sha->valuestring : "", def);
	free(ga);
	free(fl);
	return true;
}

bool campaign_record_key(const cJSON *camp, char key[CAMPAIGN_KEY_MAX])
{
	const cJSON *name = member(camp, "name"), *shape = member(camp, "shape");
	const cJSON *nw = member(camp, "num_workers"), *cand = member(camp, "candidate");
	const cJSON *rep = member(camp, "repeat");
	char def[CAMPAIGN_DEF_LEN + 1], nws[24] = "-";
	if (!cJSON_IsString(name) || !cJSON_IsString(shape) || !cJSON_IsString(cand) ||
	    !cJSON_IsNumber(rep) ||
	    !(rep->valuedouble >= 0 && rep->valuedouble < CAMPAIGN_REPEATS_MAX) ||
	    rep->valuedouble != (int)rep->valuedouble || !campaign_record_def(camp, def))
		return false;
	if (cJSON_IsNumber(nw)) {
		if (!(nw->valuedouble >= 1 && nw->valuedouble <= WORKERS_MAX) ||
		    nw->valuedouble != (int)nw->valuedouble)
			return false;
		snprintf(nws, sizeof(nws), "%d", (int)nw->valuedouble);
	} else if (!cJSON_IsNull(nw)) {
		return false;
	}
	int n = snprintf(key, CAMPAIGN_KEY_MAX, "%s/%s/%s/%s@%s/%d", name->valuestring,
			 shape->valuestring, nws, cand->valuestring, def, (int)rep->valuedouble);
	return n > 0 && n < CAMPAIGN_KEY_MAX;
}

static bool words_differ(char *const *a, size_t na, char *const *b, size_t nb)
{
	if (na != nb)
		return true;
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i], b[i]) != 0)
			return true;
	return false;
}

char *campaign_def_change(const campaign_spec *s, const campaign_candidate *c, const cJSON *camp)
{
	strbuf b = STRBUF_INIT;
	char **ga = NULL, **fl = NULL;
	size_t nga = 0, nfl = 0;
	const cJSON *sha = member(camp, "candidate_sha256");
	if (!json_words(member(camp, "gate_args"), false, &ga, &nga) ||
	    words_differ(ga, nga, s->gate_args, s->n_gate_args))
		strbuf_addstr(&b, "gate_args");
	if (!json_words(member(camp, "candidate_flags"), true, &fl, &nfl) ||
	    words_differ(fl, nfl, c->flags, c->n_flags))
		strbuf_addf(&b, "%sflags", b.len ? ", " : "");
	if (strcmp(cJSON_IsString(sha) ? sha->valuestring : "", c->sha) != 0)
		strbuf_addf(&b, "%skernel file", b.len ? ", " : "");
	free(ga);
	free(fl);
	return strbuf_detach(&b);
}
