/* The flag shim: the user's gate arguments -> the entry point's argv plus
 * environment assignments, under a box's allowlist and env rules.
 *
 * Rules, in the order they are applied to each argument:
 *   - After `--`, everything (and `--` itself) passes verbatim: the user has
 *     said "no more flags", so the entry point must see the words as typed.
 *   - A word is a flag when it starts with `-`, is not `-` alone and is not a
 *     negative number (`-5`, `-.5`); anything else is a positional word and
 *     passes verbatim.
 *   - `--flag=value` and `--flag value` are both understood; the name is the
 *     part before the first `=`.
 *   - An ALLOWED flag passes verbatim. The allowlist does not say which flags
 *     take a value, so a following non-flag word passes with it, marked as its
 *     value (for `boxgate explain`); the entry point sees the same argv either
 *     way. When a flag is both allowed and has an env rule, the allowlist
 *     wins: the entry point accepts it, so it gets it as typed.
 *   - A flag that is not allowed but has env rules becomes one assignment per
 *     rule, `NAME=VALUE`. A rule whose VALUE contains `{}` takes a value (from
 *     `=value` or the next non-flag word) and every `{}` is replaced by it; a
 *     rule without `{}` is boolean and a value is refused (`--decode-m1=0`
 *     would otherwise silently mean "on").
 *   - The same assignment twice is kept once; two different values for one
 *     NAME are refused, naming both.
 *   - Anything else is refused before anything connects, naming the box, the
 *     flag, the config section where a translation would go, and a close
 *     known flag when there is one.
 * Policy (README.md, "Commands", run: one shape per invocation):
 *   - A gate measures one shape per invocation: `--configs`, when given, must
 *     be exactly the value of `--shape` (one element); mapping one
 *     measurement onto differently shaped configs mis-gates.
 *   - `--num-workers N` takes a positive integer. It passes as a flag when
 *     allowed; when the box sets num_workers_env it is also (or, when not
 *     allowed, only) exported as `num_workers_env=N`.
 *   - `--shape`, `--configs` and `--num-workers` always take a value and may
 *     not be repeated with different values. */
#include "shim/shim.h"

#include "base/xmalloc.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef enum { POL_NONE, POL_SHAPE, POL_CONFIGS, POL_NUM_WORKERS } policy_kind;

typedef struct tr {
	const shim_rules *rules;
	shim_result *r;
	bg_err *err;
	size_t cap_env, cap_argv, cap_words, cap_from;
	char **env_from; /* parallel to r->env: the argument(s) that set it */
	const char *pol_val[4];
	char *pol_from[4];
} tr;

static bool is_flag(const char *a)
{
	if (a[0] != '-' || a[1] == '\0')
		return false;
	if (a[1] >= '0' && a[1] <= '9')
		return false;
	if (a[1] == '.' && a[2] >= '0' && a[2] <= '9')
		return false;
	return true;
}

static policy_kind policy_of(const char *name)
{
	if (strcmp(name, "--shape") == 0)
		return POL_SHAPE;
	if (strcmp(name, "--configs") == 0)
		return POL_CONFIGS;
	if (strcmp(name, "--num-workers") == 0)
		return POL_NUM_WORKERS;
	return POL_NONE;
}

static bool allowed(const shim_rules *rules, const char *name)
{
	for (size_t i = 0; i < rules->n_allow; i++)
		if (rules->allow[i] && strcmp(rules->allow[i], name) == 0)
			return true;
	return false;
}

static const shim_env_rule *next_rule(const shim_rules *rules, const char *name, size_t *pos)
{
	for (; *pos < rules->n_env; (*pos)++) {
		const shim_env_rule *r = &rules->env[*pos];
		if (r->flag && strcmp(r->flag, name) == 0) {
			(*pos)++;
			return r;
		}
	}
	return NULL;
}

static bool rules_take_value(const shim_rules *rules, const char *name)
{
	size_t pos = 0;
	const shim_env_rule *r;
	while ((r = next_rule(rules, name, &pos)))
		if (r->value && strstr(r->value, "{}"))
			return true;
	return false;
}

static char *expand_rule(const shim_env_rule *rule, const char *val)
{
	strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, rule->name);
	strbuf_addch(&sb, '=');
	const char *p = rule->value ? rule->value : "";
	const char *q;
	while ((q = strstr(p, "{}"))) {
		strbuf_add(&sb, p, (size_t)(q - p));
		strbuf_addstr(&sb, val ? val : "");
		p = q + 2;
	}
	strbuf_addstr(&sb, p);
	return strbuf_detach(&sb);
}

static const char *box_name(const shim_rules *rules)
{
	return rules->name ? rules->name : "(unnamed)";
}

static void push_argv(tr *t, const char *a)
{
	shim_result *r = t->r;
	r->argv = xgrow(r->argv, &t->cap_argv, r->n_argv + 1, sizeof(*r->argv));
	r->argv[r->n_argv++] = xstrdup(a);
}

static void push_word(tr *t, const char *a, shim_route route, const char *env,
		      const shim_env_rule *rule)
{
	shim_result *r = t->r;
	r->words = xgrow(r->words, &t->cap_words, r->n_words + 1, sizeof(*r->words));
	shim_word *w = &r->words[r->n_words++];
	w->arg = xstrdup(a);
	w->route = route;
	w->env = env ? xstrdup(env) : NULL;
	w->rule = rule;
}

static size_t name_len(const char *assign)
{
	const char *eq = strchr(assign, '=');
	return eq ? (size_t)(eq - assign) : strlen(assign);
}

/* Adds `assign` (NAME=value) unless the same one is there; a different value
 * for the same NAME is an error naming both. */
static int add_env(tr *t, const char *assign, const char *from)
{
	shim_result *r = t->r;
	size_t nl = name_len(assign);
	for (size_t i = 0; i < r->n_env; i++) {
		if (name_len(r->env[i]) != nl || memcmp(r->env[i], assign, nl) != 0)
			continue;
		if (strcmp(r->env[i], assign) == 0)
			return 0;
		return bg_fail(t->err, BG_EUSAGE,
			       "box %s: %.*s would be set twice with different values: '%s' "
			       "(from %s) and '%s' (from %s); give it once",
			       box_name(t->rules), (int)nl, assign, r->env[i], t->env_from[i],
			       assign, from);
	}
	r->env = xgrow(r->env, &t->cap_env, r->n_env + 1, sizeof(*r->env));
	t->env_from = xgrow(t->env_from, &t->cap_from, r->n_env + 1, sizeof(*t->env_from));
	r->env[r->n_env] = xstrdup(assign);
	t->env_from[r->n_env] = xstrdup(from);
	r->n_env++;
	return 0;
}

static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t *row = xcalloc(lb + 1, sizeof(*row));
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	size_t d = row[lb];
	free(row);
	return d;
}

static void consider(const char *name, const char *cand, const char **best, size_t *best_d)
{
	if (!cand || strcmp(cand, name) == 0)
		return;
	size_t d = edit_distance(name, cand);
	if (d < *best_d) {
		*best = cand;
		*best_d = d;
	}
}

/* The known flag closest to `name`, NULL when none is close (at most 2 edits,
 * and fewer than a third of the name). */
static const char *did_you_mean(const shim_rules *rules, const char *name)
{
	const char *best = NULL;
	size_t best_d = SIZE_MAX;
	for (size_t i = 0; i < rules->n_allow; i++)
		consider(name, rules->allow[i], &best, &best_d);
	for (size_t i = 0; i < rules->n_env; i++)
		consider(name, rules->env[i].flag, &best, &best_d);
	if (rules->num_workers_env)
		consider(name, "--num-workers", &best, &best_d);
	size_t len = strlen(name);
	if (!best || best_d > 2 || best_d * 3 > len)
		return NULL;
	return best;
}

/* `--decode-m1` -> `DECODE_M1`: the variable name a translation could use. */
static char *suggest_env_name(const char *flag)
{
	while (*flag == '-')
		flag++;
	strbuf sb = STRBUF_INIT;
	if (!(*flag >= 'A' && *flag <= 'Z') && !(*flag >= 'a' && *flag <= 'z'))
		strbuf_addch(&sb, 'X');
	for (const char *p = flag; *p; p++) {
		char c = *p;
		if (c >= 'a' && c <= 'z')
			c = (char)(c - 'a' + 'A');
		else if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
			c = '_';
		strbuf_addch(&sb, c);
	}
	return strbuf_detach(&sb);
}

static int unknown_flag(tr *t, const char *name)
{
	const shim_rules *rules = t->rules;
	const char *bn = box_name(rules);
	char *where = NULL, *section = NULL;
	if (rules->file && !rules->builtin && rules->line > 0)
		where = xasprintf("%s:%d", rules->file, rules->line);
	else
		where = xstrdup(rules->file && strcmp(rules->file, "(built-in)") != 0 ? rules->file
										      : "built in");
	if (rules->file && !rules->builtin)
		section = xasprintf("under [box %s] in %s", bn, rules->file);
	else
		section = xasprintf("in a [box %s] section of your boxgate configuration", bn);
	const char *near = did_you_mean(rules, name);
	char *hint = near ? xasprintf(" (did you mean %s?)", near) : xstrdup("");
	char *var = suggest_env_name(name);
	/* Where the flag would go if the gate takes it as it is. */
	char *allow = NULL;
	if (rules->file && !rules->builtin && rules->allow_line > 0)
		allow = xasprintf("add it to  allow =  at %s:%d", rules->file, rules->allow_line);
	else
		allow = xasprintf("add  allow = %s  %s", name, section);
	bg_fail(t->err, BG_EUSAGE,
		"box %s: flag %s is not in the allowlist of %s (%s) and has no env "
		"translation%s; if the gate takes it, %s; to forward it as an environment "
		"variable instead add e.g.  env %s = %s=1  (or %s={} for a flag with a value) %s",
		bn, name, rules->gate ? rules->gate : "the box's gate", where, hint, allow, name,
		var, var, section);
	free(allow);
	free(where);
	free(section);
	free(hint);
	free(var);
	return BG_EUSAGE;
}

static bool positive_int(const char *s)
{
	if (*s < '1' || *s > '9')
		return false;
	long v = 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return false;
		v = v * 10 + (*p - '0');
		if (v > INT_MAX)
			return false;
	}
	return true;
}

static int record_policy(tr *t, policy_kind k, const char *name, const char *val, const char *from)
{
	if (k == POL_NONE)
		return 0;
	if (val[0] == '\0')
		return bg_fail(t->err, BG_EUSAGE, "box %s: %s needs a non-empty value",
			       box_name(t->rules), name);
	if (k == POL_NUM_WORKERS && !positive_int(val))
		return bg_fail(t->err, BG_EUSAGE,
			       "box %s: --num-workers takes a positive integer (the production "
			       "grid size, e.g. 128), not '%s'",
			       box_name(t->rules), val);
	if (t->pol_val[k] && strcmp(t->pol_val[k], val) != 0) {
		const char *why =
			k == POL_SHAPE ? "; a gate measures one shape per invocation" : "";
		return bg_fail(t->err, BG_EUSAGE,
			       "box %s: %s given twice with different values ('%s' from %s, "
			       "'%s' from %s)%s",
			       box_name(t->rules), name, t->pol_val[k], t->pol_from[k], val, from,
			       why);
	}
	if (!t->pol_val[k]) {
		t->pol_val[k] = val;
		t->pol_from[k] = xstrdup(from);
	}
	return 0;
}

static int check_policy(tr *t)
{
	const char *configs = t->pol_val[POL_CONFIGS], *shape = t->pol_val[POL_SHAPE];
	if (!configs)
		return 0;
	if (!shape)
		return bg_fail(t->err, BG_EUSAGE,
			       "box %s: --configs %s given without --shape; a gate measures one "
			       "shape per invocation, so pass --shape and --configs with the same "
			       "single shape",
			       box_name(t->rules), configs);
	if (strcmp(configs, shape) != 0)
		return bg_fail(t->err, BG_EUSAGE,
			       "box %s: --configs %s does not match --shape %s; a gate measures "
			       "one shape per invocation and mapping that one number onto "
			       "differently shaped configs mis-gates, so pass --configs %s (or "
			       "run once per shape)",
			       box_name(t->rules), configs, shape, shape);
	return 0;
}

static int check_names(tr *t)
{
	const shim_rules *rules = t->rules;
	for (size_t i = 0; i < rules->n_env; i++) {
		const shim_env_rule *r = &rules->env[i];
		if (!bg_env_name_ok(r->name))
			return bg_fail(t->err, BG_ECONFIG,
				       "%s:%d: box %s: env rule for %s has an invalid variable "
				       "name '%s' (expected [A-Za-z_][A-Za-z0-9_]*)",
				       r->file ? r->file : "?", r->line, box_name(rules),
				       r->flag ? r->flag : "?", r->name ? r->name : "");
	}
	if (rules->num_workers_env && !bg_env_name_ok(rules->num_workers_env))
		return bg_fail(t->err, BG_ECONFIG,
			       "%s:%d: box %s: num_workers_env '%s' is not a valid variable name "
			       "(expected [A-Za-z_][A-Za-z0-9_]*)",
			       rules->file ? rules->file : "?", rules->line, box_name(rules),
			       rules->num_workers_env);
	return 0;
}

/* One flag at args[*i]; advances *i past a value it consumed. */
static int one_flag(tr *t, const char *const *args, size_t n_args, size_t *i)
{
	const shim_rules *rules = t->rules;
	const char *a = args[*i];
	const char *eq = strchr(a, '=');
	char *name = eq ? xstrndup(a, (size_t)(eq - a)) : xstrdup(a);
	const char *val = eq ? eq + 1 : NULL;
	bool val_next = false;
	char *from = NULL, *nw_assign = NULL;
	int rc = 0;

	policy_kind pol = policy_of(name);
	bool ok_flag = allowed(rules, name);
	size_t pos = 0;
	const shim_env_rule *rule = ok_flag ? NULL : next_rule(rules, name, &pos);
	bool nw_env = pol == POL_NUM_WORKERS && rules->num_workers_env;
	if (!ok_flag && !rule && !nw_env) {
		rc = unknown_flag(t, name);
		goto out;
	}
	bool takes_value = pol != POL_NONE || (!ok_flag && rules_take_value(rules, name));
	if (!val && (ok_flag || takes_value) && *i + 1 < n_args && !is_flag(args[*i + 1])) {
		val = args[*i + 1];
		val_next = true;
	}
	if (takes_value && !val) {
		rc = bg_fail(t->err, BG_EUSAGE,
			     "box %s: %s needs a value (%s VALUE or %s=VALUE; a value starting "
			     "with '-' only in the %s=VALUE form)",
			     box_name(rules), name, name, name, name);
		goto out;
	}
	if (!ok_flag && !takes_value && val) {
		rc = bg_fail(t->err, BG_EUSAGE,
			     "box %s: %s takes no value: its env rule (%s:%d) always sets %s=%s; "
			     "drop '=%s'",
			     box_name(rules), name, rule->file ? rule->file : "?", rule->line,
			     rule->name, rule->value ? rule->value : "", val);
		goto out;
	}
	from = val_next ? xasprintf("%s %s", a, val) : xstrdup(a);
	if (val && (rc = record_policy(t, pol, name, val, from)) < 0)
		goto out;
	if (nw_env) {
		nw_assign = xasprintf("%s=%s", rules->num_workers_env, val);
		if ((rc = add_env(t, nw_assign, from)) < 0)
			goto out;
	}
	if (ok_flag) {
		push_argv(t, a);
		if (val_next)
			push_argv(t, val);
		push_word(t, a, SHIM_PASS, nw_assign, NULL);
	} else {
		char *first = NULL;
		const shim_env_rule *first_rule = rule;
		for (; rule; rule = next_rule(rules, name, &pos)) {
			char *assign = expand_rule(rule, val);
			rc = add_env(t, assign, from);
			if (rc == 0 && !first)
				first = assign;
			else
				free(assign);
			if (rc < 0)
				break;
		}
		if (rc == 0)
			push_word(t, a, SHIM_ENV, first ? first : nw_assign, first_rule);
		free(first);
		if (rc < 0)
			goto out;
		rule = first_rule;
	}
	if (val_next) {
		push_word(t, val, SHIM_VALUE, NULL, ok_flag ? NULL : rule);
		(*i)++;
	}
out:
	free(name);
	free(from);
	free(nw_assign);
	return rc;
}

int shim_translate(const shim_rules *rules, const char *const *args, size_t n_args,
		   shim_result *out, bg_err *err)
{
	tr t = {.rules = rules, .r = out, .err = err};
	int rc = 0;
	memset(out, 0, sizeof(*out));
	if ((rc = check_names(&t)) < 0)
		goto out;
	bool ended = false;
	for (size_t i = 0; i < n_args; i++) {
		const char *a = args[i];
		if (ended || !is_flag(a) || strcmp(a, "--") == 0) {
			if (!ended && strcmp(a, "--") == 0)
				ended = true;
			push_argv(&t, a);
			push_word(&t, a, SHIM_PASS, NULL, NULL);
			continue;
		}
		if ((rc = one_flag(&t, args, n_args, &i)) < 0)
			goto out;
	}
	rc = check_policy(&t);
out:
	for (size_t i = 0; i < out->n_env; i++)
		free(t.env_from[i]);
	free(t.env_from);
	for (size_t k = 0; k < 4; k++)
		free(t.pol_from[k]);
	if (rc < 0)
		shim_result_release(out);
	return rc;
}

void shim_result_release(shim_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_env; i++)
		free(r->env[i]);
	free(r->env);
	for (size_t i = 0; i < r->n_argv; i++)
		free(r->argv[i]);
	free(r->argv);
	for (size_t i = 0; i < r->n_words; i++) {
		free(r->words[i].arg);
		free(r->words[i].env);
	}
	free(r->words);
	memset(r, 0, sizeof(*r));
}

char *shim_command_line_argv(const shim_result *r, const char *const *entry, size_t n_entry)
{
	if (n_entry == 0 || !entry[0] || entry[0][0] == '\0')
		return NULL;
	strbuf sb = STRBUF_INIT;
	/* bash runs `fg` for any command word starting with `%`, quoted or not;
	 * through env(1) it is an ordinary program name. */
	if (r->n_env || entry[0][0] == '%') {
		/* env(1) takes every leading word with a `=` for an assignment. */
		if (strchr(entry[0], '='))
			return NULL;
		strbuf_addstr(&sb, "env");
		for (size_t i = 0; i < r->n_env; i++) {
			const char *eq = strchr(r->env[i], '=');
			char *name = eq ? xstrndup(r->env[i], (size_t)(eq - r->env[i])) : NULL;
			bool ok = name && bg_env_name_ok(name);
			free(name);
			if (!ok) {
				strbuf_release(&sb);
				return NULL;
			}
			strbuf_addch(&sb, ' ');
			bg_quote(&sb, r->env[i]);
		}
		strbuf_addch(&sb, ' ');
	}
	bg_quote_argv(&sb, entry, n_entry);
	for (size_t i = 0; i < r->n_argv; i++) {
		strbuf_addch(&sb, ' ');
		bg_quote(&sb, r->argv[i]);
	}
	return strbuf_detach(&sb);
}

char *shim_command_line(const shim_result *r, const char *entry)
{
	return shim_command_line_argv(r, &entry, 1);
}
