/* Reading boxgate.ini with inih into raw layers, with file:line on every
 * error.
 *
 * inih (Debian's build) reports neither line numbers to the handler nor
 * sections without keys, and cuts lines at 200 bytes. So inih reads from our
 * own reader, which serves the file line by line from the base line splitter,
 * knows the current line number, sees every section header itself (empty
 * sections count: `[box a]` alone must fail for lack of a host) and hands
 * inih a short stand-in for lines inih could not hold; the handler then
 * takes name and value from the full line. */
#include "conf/internal.h"

#include <ctype.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/parse.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"

enum key_scope { IN_DEFAULTS = 1, IN_BOX = 2, IN_BOTH = 3 };
enum key_type {
	T_STR,
	T_WORD,
	T_INT,
	T_HKC,
	T_GPUS,
	T_BOOL,
	T_FLAGS,
	T_ENVNAME,
	T_TRANSPORT,
	T_LIST,
	T_PCT,
	T_SECS /* seconds with up to 3 decimals; min and max in ms */
};

static const struct keydef {
	const char *name;
	enum conf_key id;
	enum key_scope scope;
	enum key_type type;
	long min, max;
} keydefs[] = {
	{"host", K_HOST, IN_BOTH, T_WORD, 0, 0},
	{"user", K_USER, IN_BOTH, T_WORD, 0, 0},
	{"port", K_PORT, IN_BOTH, T_INT, 1, 65535},
	{"identity", K_IDENTITY, IN_BOTH, T_LIST, 0, 0},
	{"known_hosts", K_KNOWN_HOSTS, IN_BOTH, T_STR, 0, 0},
	{"host_key_check", K_HOST_KEY_CHECK, IN_BOTH, T_HKC, 0, 0},
	{"connect_timeout_s", K_CONNECT_TIMEOUT, IN_BOTH, T_INT, 1, 3600},
	{"keepalive_s", K_KEEPALIVE, IN_BOTH, T_INT, 0, 3600},
	{"control_persist_s", K_CONTROL_PERSIST, IN_BOTH, T_SECS, 0, 7 * 86400000L},
	{"gate_timeout_s", K_GATE_TIMEOUT, IN_BOTH, T_INT, 1, 7 * 86400},
	{"heartbeat_timeout_s", K_HEARTBEAT_TIMEOUT, IN_BOTH, T_SECS, 100, 86400000},
	{"kill_grace_s", K_KILL_GRACE, IN_BOTH, T_SECS, 0, 3600000},
	{"lock_wait_s", K_LOCK_WAIT, IN_BOTH, T_INT, 0, 7 * 86400},
	{"repo", K_REPO, IN_BOTH, T_STR, 0, 0},
	{"gate", K_GATE, IN_BOTH, T_STR, 0, 0},
	{"python", K_PYTHON, IN_BOTH, T_STR, 0, 0},
	{"gpus", K_GPUS, IN_BOTH, T_GPUS, 0, 0},
	{"require_gpu", K_REQUIRE_GPU, IN_BOTH, T_BOOL, 0, 0},
	{"no_baseline", K_NO_BASELINE, IN_BOTH, T_BOOL, 0, 0},
	{"allow", K_ALLOW, IN_BOTH, T_FLAGS, 0, 0},
	{"num_workers_env", K_NUM_WORKERS_ENV, IN_BOTH, T_ENVNAME, 0, 0},
	{"validate_stub", K_VALIDATE_STUB, IN_BOTH, T_STR, 0, 0},
	{"validate_drop", K_VALIDATE_DROP, IN_BOTH, T_STR, 0, 0},
	{"kernel_paths", K_KERNEL_PATHS, IN_BOTH, T_STR, 0, 0},
	{"overlay_env", K_OVERLAY_ENV, IN_BOTH, T_ENVNAME, 0, 0},
	{"transport", K_TRANSPORT, IN_BOX, T_TRANSPORT, 0, 0},
	{"jump", K_JUMP, IN_BOX, T_STR, 0, 0},
	{"scheduler", K_SCHEDULER, IN_BOX, T_WORD, 0, 0},
	{"partition", K_PARTITION, IN_BOTH, T_WORD, 0, 0},
	{"gres", K_GRES, IN_BOTH, T_WORD, 0, 0},
	{"srun_args", K_SRUN_ARGS, IN_BOTH, T_STR, 0, 0},
	{"slurm_conf", K_SLURM_CONF, IN_BOTH, T_STR, 0, 0},
	{"max_jobs", K_MAX_JOBS, IN_BOX, T_INT, 1, 1024},
	{"ssh_config", K_SSH_CONFIG, IN_DEFAULTS, T_STR, 0, 0},
	{"results", K_RESULTS, IN_DEFAULTS, T_STR, 0, 0},
	{"max_cv", K_MAX_CV, IN_DEFAULTS, T_PCT, 0, 0},
};
#define N_KEYDEFS (sizeof(keydefs) / sizeof(keydefs[0]))

enum section { SEC_NONE, SEC_DEFAULTS, SEC_BOX, SEC_POOL, SEC_VERIFY, SEC_CAMPAIGN };

typedef struct load_ctx {
	conf_raw *raw;
	const char *file;
	conf_lines lines;
	size_t next;   /* index of the next line to serve */
	int lineno;    /* the line inih is processing */
	bool cur_long; /* that line did not fit inih's buffer */
	bool cur_cont; /* it continues the previous key's value */
	bool have_prev_key;
	enum section sec;
	size_t sec_index; /* box or pool index */
	char *sec_label;  /* "[box a]" for messages */
	/* The last key, for continuation lines. */
	char *last_name;
	strbuf last_value;
	int last_line;
	int rc;
	bg_err *err;
} load_ctx;

/* inih's find_chars_or_comment(): the first of `chars`, or an inline ';'
 * comment that follows a blank. */
static const char *find_chars_or_comment(const char *s, const char *chars)
{
	bool was_space = false;
	while (*s && (!chars || !strchr(chars, *s)) && !(was_space && *s == ';')) {
		was_space = isspace((unsigned char)*s);
		s++;
	}
	return s;
}

static char *trim_dup(const char *b, const char *e)
{
	while (b < e && isspace((unsigned char)*b))
		b++;
	while (e > b && isspace((unsigned char)e[-1]))
		e--;
	return xstrndup(b, (size_t)(e - b));
}

static const char *line_start(load_ctx *lc, size_t idx)
{
	const char *s = lc->lines.line[idx];
	if (idx == 0 && (unsigned char)s[0] == 0xEF && (unsigned char)s[1] == 0xBB &&
	    (unsigned char)s[2] == 0xBF)
		s += 3;
	return s;
}

static int fail(load_ctx *lc, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(load_ctx *lc, int line, const char *fmt, ...)
{
	if (lc->rc)
		return lc->rc;
	char msg[900];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	lc->rc = bg_fail(lc->err, BG_ECONFIG, "%s:%d: %s", lc->file, line, msg);
	return lc->rc;
}

static void layer_init(conf_layer *l, const char *name, int line)
{
	memset(l, 0, sizeof(*l));
	l->name = name ? xstrdup(name) : NULL;
	l->line = line;
}

static void layer_release(conf_layer *l)
{
	free(l->name);
	for (int k = 0; k < K_N; k++)
		free(l->kv[k].value);
	conf_env_rules_free(l->env, l->n_env);
	memset(l, 0, sizeof(*l));
}

void conf_raw_release(conf_raw *raw)
{
	if (!raw)
		return;
	free(raw->file);
	layer_release(&raw->defaults);
	for (size_t i = 0; i < raw->n_boxes; i++)
		layer_release(&raw->boxes[i]);
	free(raw->boxes);
	for (size_t i = 0; i < raw->n_pools; i++) {
		free(raw->pools[i].name);
		free(raw->pools[i].slots);
		free(raw->pools[i].disabled);
		free(raw->pools[i].disabled_why);
	}
	free(raw->pools);
	conf_verify_free(raw->verify, raw->n_verify);
	memset(raw, 0, sizeof(*raw));
}

/* --- sections --- */

/* The line of an earlier [box name] (or [pool name]), 0 when there is none. */
static int defined_at(const conf_raw *raw, bool box, const char *name)
{
	size_t n = box ? raw->n_boxes : raw->n_pools;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(box ? raw->boxes[i].name : raw->pools[i].name, name) == 0)
			return box ? raw->boxes[i].line : raw->pools[i].line;
	}
	return 0;
}

static void on_section(load_ctx *lc, const char *text, int line)
{
	conf_raw *raw = lc->raw;
	char *t = trim_dup(text, text + strlen(text));
	const char *sp = t + strcspn(t, " \t");
	char *kind = xstrndup(t, (size_t)(sp - t));
	char *name = trim_dup(sp, sp + strlen(sp));
	static const char *const kinds[] = {"defaults", "box", "pool", "verify", "campaign"};

	free(lc->sec_label);
	lc->sec_label = xasprintf("[%s]", t);
	lc->have_prev_key = false;
	free(lc->last_name);
	lc->last_name = NULL;

	if (strcmp(kind, "defaults") == 0 || strcmp(kind, "verify") == 0) {
		if (*name) {
			fail(lc, line, "[%s] takes no name, got [%s]", kind, t);
			goto out;
		}
		lc->sec = kind[0] == 'd' ? SEC_DEFAULTS : SEC_VERIFY;
		goto out;
	}
	if (strcmp(kind, "campaign") == 0) {
		/* `boxgate campaign` reads its own sections (campaign/spec.c) */
		if (!*name)
			fail(lc, line, "[campaign] needs a name: [campaign NAME]");
		lc->sec = SEC_CAMPAIGN;
		goto out;
	}
	if (strcmp(kind, "box") == 0 || strcmp(kind, "pool") == 0) {
		bool box = kind[0] == 'b';
		if (!*name) {
			fail(lc, line, "[%s] needs a name: [%s NAME]", kind, kind);
			goto out;
		}
		if (!conf_box_name_ok(name)) {
			fail(lc, line, "bad %s name '%s' (letters, digits, '.', '_' and '-' only)",
			     kind, name);
			goto out;
		}
		int first = defined_at(raw, box, name);
		if (first) {
			fail(lc, line, "%s '%s' defined twice, first at %s:%d", kind, name,
			     lc->file, first);
			goto out;
		}
		if (box) {
			raw->boxes = xgrow(raw->boxes, &raw->cap_boxes, raw->n_boxes + 1,
					   sizeof(*raw->boxes));
			layer_init(&raw->boxes[raw->n_boxes], name, line);
			lc->sec = SEC_BOX;
			lc->sec_index = raw->n_boxes++;
		} else {
			raw->pools = xgrow(raw->pools, &raw->cap_pools, raw->n_pools + 1,
					   sizeof(*raw->pools));
			conf_raw_pool *p = &raw->pools[raw->n_pools];
			p->name = xstrdup(name);
			p->line = line;
			lc->sec = SEC_POOL;
			lc->sec_index = raw->n_pools++;
		}
		goto out;
	}
	const char *s = conf_suggest(kind, kinds, 5);
	if (s && (strcmp(s, "box") == 0 || strcmp(s, "pool") == 0 || strcmp(s, "campaign") == 0))
		fail(lc, line, "unknown section [%s] (did you mean [%s%s%s]?)", t, s,
		     *name ? " " : "", *name ? name : " NAME");
	else if (s)
		fail(lc, line, "unknown section [%s] (did you mean [%s]?)", t, s);
	else
		fail(lc, line,
		     "unknown section [%s] (expected [defaults], [box NAME], [pool NAME], "
		     "[verify] or [campaign NAME])",
		     t);
out:
	free(kind);
	free(name);
	free(t);
}

/* --- values --- */

bool conf_parse_percent(const char *v, double *out)
{
	size_t n = strlen(v), digits = strspn(v, "0123456789");
	if (!n || n > 16 || strspn(v, "0123456789.") != n || strchr(v, '.') != strrchr(v, '.') ||
	    !digits || v[n - 1] == '.')
		return false;
	double x = strtod(v, NULL);
	if (!(x >= 0 && x <= CONF_PERCENT_MAX))
		return false;
	*out = x;
	return true;
}

/* `host` is what ssh takes on its command line, so it must pass ssh's own
 * check there (OpenSSH's valid_hostname): no shell metacharacter, comma,
 * blank or control character. HostName from ssh_config is not checked, as
 * ssh does not check it. */
static int check_host(load_ctx *lc, int line, const char *v)
{
	for (const char *p = v; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (strchr("'`\"$\\;&<>|(){},", c) || isspace(c) || iscntrl(c))
			return fail(lc, line,
				    "host in %s: '%s' has a character ssh refuses (byte 0x%02x): "
				    "hostname contains invalid characters",
				    lc->sec_label, v, c);
	}
	return 0;
}

static int check_value(load_ctx *lc, const struct keydef *kd, const char *v, int line)
{
	if (*v == '\0')
		return fail(lc, line, "%s needs a value", kd->name);
	/* `key =;x` would be written back as `key = ;x`, which reads as a comment */
	if (*v == ';' || *v == '#')
		return fail(lc, line,
			    "%s: a value must not start with '%c' (it reads as a comment)",
			    kd->name, *v);
	switch (kd->type) {
	case T_STR:
	case T_LIST: return 0;
	case T_WORD:
		for (const char *p = v; *p; p++)
			if (isspace((unsigned char)*p))
				return fail(lc, line, "%s must be one word, got '%s'", kd->name, v);
		if (kd->id == K_HOST && strchr(v, '@'))
			return fail(lc, line,
				    "host must not contain '@', got '%s' (set user = ... instead)",
				    v);
		if (v[0] == '-')
			return fail(lc, line, "%s must not start with '-', got '%s'", kd->name, v);
		if (kd->id == K_HOST)
			return check_host(lc, line, v);
		return 0;
	case T_INT: {
		bool ok = true;
		long x = 0;
		for (const char *p = v; *p && ok; p++) {
			if (!isdigit((unsigned char)*p) || x > 100000000L)
				ok = false;
			else
				x = x * 10 + (*p - '0');
		}
		if (!ok || x < kd->min || x > kd->max)
			return fail(lc, line, "%s must be an integer %ld-%ld, got '%s'", kd->name,
				    kd->min, kd->max, v);
		return 0;
	}
	case T_SECS: {
		long long ms;
		if (!bg_parse_seconds_ms(v, kd->min, kd->max, &ms))
			return fail(lc, line,
				    "%s must be seconds from %g to %g, with at most 3 decimals "
				    "(2, 0.5), got '%s'",
				    kd->name, kd->min / 1000.0, kd->max / 1000.0, v);
		return 0;
	}
	case T_PCT: {
		double pct;
		if (!conf_parse_percent(v, &pct))
			return fail(lc, line,
				    "%s must be a percentage such as 2 or 0.5 (0-%g), got '%s'",
				    kd->name, CONF_PERCENT_MAX, v);
		return 0;
	}
	case T_HKC:
		if (strcmp(v, "strict") && strcmp(v, "accept-new"))
			return fail(lc, line,
				    "host_key_check must be strict or accept-new, got '%s'", v);
		return 0;
	case T_TRANSPORT:
		if (strcmp(v, "ssh") && strcmp(v, "local"))
			return fail(lc, line, "transport must be ssh or local, got '%s'", v);
		return 0;
	case T_BOOL:
		if (strcasecmp(v, "yes") && strcasecmp(v, "no") && strcasecmp(v, "true") &&
		    strcasecmp(v, "false") && strcmp(v, "1") && strcmp(v, "0"))
			return fail(lc, line, "%s must be yes or no, got '%s'", kd->name, v);
		return 0;
	case T_GPUS: {
		bool *set = xcalloc(CONF_MAX_GPUS, sizeof(*set));
		const char *why = "empty";
		bool ok = bg_gpus_parse(v, set, &why);
		free(set);
		if (!ok)
			return fail(lc, line,
				    "gpus must be indices and ranges such as 0-7 or 0,2,5 (at most "
				    "%d), got '%s': %s",
				    CONF_MAX_GPUS - 1, v, why);
		return 0;
	}
	case T_ENVNAME:
		if (!conf_env_name_ok(v))
			return fail(lc, line,
				    "%s must be an environment variable name "
				    "([A-Za-z_][A-Za-z0-9_]*), got '%s'",
				    kd->name, v);
		return 0;
	case T_FLAGS: {
		char **fl = NULL;
		size_t n = 0;
		conf_split_list(v, &fl, &n);
		for (size_t i = 0; i < n; i++) {
			if (fl[i][0] != '-' || fl[i][1] == '\0') {
				fail(lc, line, "allow: '%s' is not a flag (flags start with '-')",
				     fl[i]);
				break;
			}
		}
		conf_strv_free(fl, n);
		return lc->rc;
	}
	}
	return 0;
}

/* `env --flag = NAME=VALUE` in layer l. */
static void set_env_rule(load_ctx *lc, conf_layer *l, const char *key, const char *v, int line,
			 bool cont)
{
	const char *f = key + 3;
	while (isspace((unsigned char)*f))
		f++;
	if (*f == '\0') {
		fail(lc, line, "env needs a flag: env --flag = NAME=VALUE");
		return;
	}
	if (f[0] != '-' || f[1] == '\0' || f[strcspn(f, " \t")] != '\0') {
		fail(lc, line, "env: '%s' is not a flag (env --flag = NAME=VALUE)", f);
		return;
	}
	const char *eq = strchr(v, '=');
	char *name = eq ? trim_dup(v, eq) : NULL;
	if (!eq || !conf_env_name_ok(name)) {
		fail(lc, line,
		     "env %s: expected NAME=VALUE with NAME of [A-Za-z_][A-Za-z0-9_]*, got '%s'", f,
		     v);
		free(name);
		return;
	}
	conf_env_rule *r = NULL;
	for (size_t i = 0; i < l->n_env; i++) {
		if (strcmp(l->env[i].flag, f) == 0) {
			if (!cont) {
				fail(lc, line, "env %s given twice in %s, first at %s:%d", f,
				     lc->sec_label, lc->file, l->env[i].line);
				free(name);
				return;
			}
			r = &l->env[i];
		}
	}
	if (!r) {
		l->env = xgrow(l->env, &l->cap_env, l->n_env + 1, sizeof(*l->env));
		r = &l->env[l->n_env++];
		r->flag = xstrdup(f);
		r->file = xstrdup(lc->file);
		r->line = line;
	}
	free(r->name);
	free(r->value);
	r->name = name;
	r->value = trim_dup(eq + 1, eq + strlen(eq));
}

/* "unknown key" in this section, naming the closest of cands; `hint`
 * follows when none is close. */
static void fail_unknown_key(load_ctx *lc, int line, const char *key, const char *const *cands,
			     size_t n, const char *hint)
{
	const char *s = conf_suggest(key, cands, n);
	if (s)
		fail(lc, line, "unknown key '%s' in %s (did you mean '%s%s'?)", key, lc->sec_label,
		     s, strcmp(s, "env") == 0 ? " --flag" : "");
	else
		fail(lc, line, "unknown key '%s' in %s%s", key, lc->sec_label, hint);
}

/* A key set earlier in this section fails unless this line continues it. */
static bool given_twice(load_ctx *lc, const char *key, const char *set, int set_line, int line,
			bool cont)
{
	if (!set || cont)
		return false;
	fail(lc, line, "%s given twice in %s, first at %s:%d", key, lc->sec_label, lc->file,
	     set_line);
	return true;
}

/* Keeps v; a continuation keeps the key's first line. */
static void store(char **value, int *value_line, const char *v, int line, bool cont)
{
	free(*value);
	*value = xstrdup(v);
	if (!cont)
		*value_line = line;
}

static void set_layer_key(load_ctx *lc, conf_layer *l, bool is_defaults, const char *key,
			  const char *v, int line, bool cont)
{
	if (strncmp(key, "env", 3) == 0 && (key[3] == '\0' || isspace((unsigned char)key[3]))) {
		set_env_rule(lc, l, key, v, line, cont);
		return;
	}
	const struct keydef *kd = NULL;
	for (size_t i = 0; i < N_KEYDEFS; i++)
		if (strcmp(keydefs[i].name, key) == 0)
			kd = &keydefs[i];
	unsigned want = is_defaults ? IN_DEFAULTS : IN_BOX;
	if (!kd) {
		const char *cands[N_KEYDEFS + 1];
		size_t n = 0;
		for (size_t i = 0; i < N_KEYDEFS; i++)
			if (keydefs[i].scope & want)
				cands[n++] = keydefs[i].name;
		cands[n++] = "env";
		fail_unknown_key(lc, line, key, cands, n, "");
		return;
	}
	if (!(kd->scope & want)) {
		fail(lc, line, "'%s' belongs in %s, not in %s", key,
		     kd->scope == IN_BOX ? "a [box NAME] section" : "[defaults]", lc->sec_label);
		return;
	}
	conf_kv *kv = &l->kv[kd->id];
	if (given_twice(lc, key, kv->value, kv->line, line, cont))
		return;
	if (check_value(lc, kd, v, line))
		return;
	store(&kv->value, &kv->line, v, line, cont);
}

static void set_verify(load_ctx *lc, const char *key, const char *v, int line, bool cont)
{
	conf_raw *raw = lc->raw;
	/* A path rule is repo-relative and stays inside the repo. */
	if (key[0] != '.' || strchr(key, '/')) {
		bool bad = key[0] == '/' || strcmp(key, "..") == 0 || strncmp(key, "../", 3) == 0 ||
			   strstr(key, "/../") != NULL ||
			   (strlen(key) >= 3 && strcmp(key + strlen(key) - 3, "/..") == 0);
		if (bad) {
			fail(lc, line,
			     "[verify] key '%s' must be an extension such as .py or a path inside "
			     "the repo",
			     key);
			return;
		}
	} else if (key[1] == '\0') {
		fail(lc, line, "[verify] key '.' is not an extension (write .py, .sh, ...)");
		return;
	}
	for (size_t i = 0; i < raw->n_verify; i++) {
		if (strcmp(raw->verify[i].pattern, key) == 0) {
			if (cont) {
				free(raw->verify[i].command);
				raw->verify[i].command = xstrdup(v);
				return;
			}
			fail(lc, line, "[verify] %s given twice, first at %s:%d", key, lc->file,
			     raw->verify[i].line);
			return;
		}
	}
	raw->verify = xgrow(raw->verify, &raw->cap_verify, raw->n_verify + 1, sizeof(*raw->verify));
	conf_verify *r = &raw->verify[raw->n_verify++];
	r->pattern = xstrdup(key);
	r->command = xstrdup(v);
	r->file = xstrdup(lc->file);
	r->line = line;
}

static void set_pool_key(load_ctx *lc, const char *key, const char *v, int line, bool cont)
{
	conf_raw_pool *p = &lc->raw->pools[lc->sec_index];
	static const char *const cands[] = {"slots", "disabled", "disabled_why"};
	char **value = NULL;
	int *value_line = NULL;
	if (strcmp(key, "slots") == 0)
		value = &p->slots, value_line = &p->slots_line;
	else if (strcmp(key, "disabled") == 0)
		value = &p->disabled, value_line = &p->disabled_line;
	else if (strcmp(key, "disabled_why") == 0)
		value = &p->disabled_why, value_line = &p->disabled_why_line;
	if (!value) {
		fail_unknown_key(lc, line, key, cands, 3,
				 " (a pool has slots = BOX:GPUS, ..., disabled = BOX:GPU ... and "
				 "disabled_why = TEXT)");
		return;
	}
	if (given_twice(lc, key, *value, *value_line, line, cont))
		return;
	if (*v == '\0') {
		fail(lc, line, "%s needs a value", key);
		return;
	}
	store(value, value_line, v, line, cont);
}

static void apply(load_ctx *lc, const char *key, const char *v, int line, bool cont)
{
	conf_raw *raw = lc->raw;
	switch (lc->sec) {
	case SEC_NONE:
		fail(lc, line,
		     "'%s' comes before any section (start with [defaults] or [box NAME])", key);
		return;
	case SEC_DEFAULTS: set_layer_key(lc, &raw->defaults, true, key, v, line, cont); return;
	case SEC_BOX:
		set_layer_key(lc, &raw->boxes[lc->sec_index], false, key, v, line, cont);
		return;
	case SEC_POOL: set_pool_key(lc, key, v, line, cont); return;
	case SEC_VERIFY: set_verify(lc, key, v, line, cont); return;
	case SEC_CAMPAIGN: return;
	}
}

/* --- inih glue --- */

static int on_key(void *user, const char *section, const char *name, const char *value)
{
	load_ctx *lc = user;
	(void)section; /* ours is lc->sec: inih's is cut at 50 bytes */
	if (lc->rc)
		return 1;
	char *n = NULL, *v = NULL;
	if (lc->cur_long) {
		/* inih saw a stand-in: take name and value from the full line. */
		const char *s = line_start(lc, (size_t)lc->lineno - 1);
		while (isspace((unsigned char)*s))
			s++;
		if (lc->cur_cont) {
			const char *e = find_chars_or_comment(s, NULL);
			v = trim_dup(s, e);
		} else {
			const char *e = find_chars_or_comment(s, "=:");
			n = trim_dup(s, e);
			const char *ve = find_chars_or_comment(e + 1, NULL);
			v = trim_dup(e + 1, ve);
		}
	} else {
		n = xstrdup(name);
		v = xstrdup(value);
	}
	if (lc->cur_cont && lc->last_name) {
		/* A value continued on an indented line joins with one blank. */
		strbuf_addch(&lc->last_value, ' ');
		strbuf_addstr(&lc->last_value, v);
		apply(lc, lc->last_name, strbuf_str(&lc->last_value), lc->lineno, true);
	} else if (n) {
		free(lc->last_name);
		lc->last_name = xstrdup(n);
		strbuf_reset(&lc->last_value);
		strbuf_addstr(&lc->last_value, v);
		lc->last_line = lc->lineno;
		apply(lc, n, v, lc->lineno, false);
	}
	free(n);
	free(v);
	return 1;
}

/* inih's reader: serves one physical line per call, classifying it as inih
 * will. `num` is inih's buffer size. */
static char *reader(char *str, int num, void *stream)
{
	load_ctx *lc = stream;
	if (lc->rc || lc->next >= lc->lines.n)
		return NULL;
	size_t idx = lc->next++;
	lc->lineno = (int)idx + 1;
	lc->cur_long = false;
	lc->cur_cont = false;
	const char *raw = line_start(lc, idx);
	const char *s = raw;
	while (isspace((unsigned char)*s))
		s++;
	size_t len = strlen(raw);

	const char *give = raw;
	if (*s == '\0' || *s == ';' || *s == '#') {
		give = "";
	} else if (lc->have_prev_key && s > raw) {
		lc->cur_cont = true;
	} else if (*s == '[') {
		const char *e = find_chars_or_comment(s + 1, "]");
		if (*e != ']') {
			fail(lc, lc->lineno, "section header '%s' lacks its closing ']'", s);
			return NULL;
		}
		char *sec = xstrndup(s + 1, (size_t)(e - s - 1));
		on_section(lc, sec, lc->lineno);
		free(sec);
		if (lc->rc)
			return NULL;
		give = "[s]";
	} else {
		const char *e = find_chars_or_comment(s, "=:");
		if (*e != '=' && *e != ':') {
			char *t = trim_dup(s, s + strlen(s));
			fail(lc, lc->lineno, "expected 'key = value', got '%s'", t);
			free(t);
			return NULL;
		}
		if (e == s) {
			fail(lc, lc->lineno, "a key is missing before '%c'", *e);
			return NULL;
		}
		lc->have_prev_key = true;
	}
	if (give == raw && len + 2 > (size_t)num) {
		lc->cur_long = true;
		give = lc->cur_cont ? " x" : "k=v";
	}
	snprintf(str, (size_t)num, "%s\n", give);
	return str;
}

int conf_parse_file(conf_raw *raw, const char *path, bg_err *err)
{
	load_ctx lc;
	memset(&lc, 0, sizeof(lc));
	memset(raw, 0, sizeof(*raw));
	raw->file = xstrdup(path);
	lc.raw = raw;
	lc.file = raw->file;
	lc.err = err;
	int rc = conf_read_lines(path, &lc.lines, err);
	if (rc)
		goto out;
	int r = ini_parse_stream(reader, &lc, on_key, &lc);
	rc = lc.rc;
	if (rc == 0 && r != 0)
		rc = bg_fail(err, BG_ECONFIG, "%s:%d: cannot parse this line", path, r > 0 ? r : 0);
out:
	conf_lines_release(&lc.lines);
	free(lc.sec_label);
	free(lc.last_name);
	strbuf_release(&lc.last_value);
	if (rc) {
		conf_raw_release(raw);
		/* BG_ENOTFOUND from the reader is the caller's to interpret. */
	}
	return rc;
}
