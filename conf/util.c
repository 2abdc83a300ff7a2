#include "conf/internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/lines.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"

/* Optimal string alignment distance (Levenshtein plus adjacent swaps, so
 * "hots" is one edit from "host"), case-insensitive, capped at `cap`+1. */
static size_t osa_distance(const char *a, const char *b, size_t cap)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 64 || lb > 64)
		return cap + 1;
	if ((la > lb ? la - lb : lb - la) > cap)
		return cap + 1;
	size_t d[65][65];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			int ca = tolower((unsigned char)a[i - 1]);
			int cb = tolower((unsigned char)b[j - 1]);
			size_t cost = ca != cb;
			size_t v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < v)
				v = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	}
	return d[la][lb];
}

const char *conf_suggest(const char *word, const char *const *cands, size_t n)
{
	const char *best = NULL;
	size_t best_d = 3;
	size_t wl = strlen(word);
	if (wl == 0)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		size_t d = osa_distance(word, cands[i], 2);
		/* An edit on a one- or two-letter word says nothing. */
		if (d <= 2 && d < wl && d < best_d) {
			best = cands[i];
			best_d = d;
		}
	}
	if (best)
		return best;
	if (wl >= 3) {
		for (size_t i = 0; i < n; i++)
			if (strncasecmp(word, cands[i], wl) == 0)
				return cands[i];
	}
	return NULL;
}

bool conf_env_name_ok(const char *s)
{
	if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
		return false;
	for (s++; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_'))
			return false;
	return true;
}

bool conf_box_name_ok(const char *s)
{
	if (!s || !*s)
		return false;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '.' || *s == '_' || *s == '-'))
			return false;
	return true;
}

enum pw_field { PW_DIR, PW_NAME };

/* The current user's passwd field, or NULL. */
static const char *pw_field(enum pw_field f)
{
	struct passwd *pw = getpwuid(getuid());
	if (!pw)
		return NULL;
	return f == PW_DIR ? pw->pw_dir : pw->pw_name;
}

/* `set` when non-empty, else passwd's field, else `fallback`; copied into
 * buf, so the answer stays valid until the next call. */
static const char *first_of(char *buf, size_t size, const char *set, enum pw_field f,
			    const char *fallback)
{
	const char *v = set && *set ? set : pw_field(f);
	snprintf(buf, size, "%s", v ? v : fallback);
	return buf;
}

static char home_buf[4096];
static char user_buf[256];
static char pw_home_buf[4096];
static char pw_name_buf[256];

const char *conf_home(const conf_env *env)
{
	return first_of(home_buf, sizeof(home_buf), env ? env->home : NULL, PW_DIR, "/");
}

const char *conf_local_user(const conf_env *env)
{
	return first_of(user_buf, sizeof(user_buf), env ? env->user : NULL, PW_NAME, "unknown");
}

const char *conf_pw_home(const conf_env *env)
{
	return first_of(pw_home_buf, sizeof(pw_home_buf), NULL, PW_DIR, conf_home(env));
}

const char *conf_pw_name(const conf_env *env)
{
	return first_of(pw_name_buf, sizeof(pw_name_buf), NULL, PW_NAME, conf_local_user(env));
}

char *conf_expand_path(const char *path, const char *home, const char *base)
{
	if (path[0] == '~' && (path[1] == '/' || path[1] == '\0')) {
		size_t hl = strlen(home);
		while (hl > 1 && home[hl - 1] == '/')
			hl--;
		return xasprintf("%.*s%s", (int)hl, home, path + 1);
	}
	if (path[0] != '/' && base)
		return xasprintf("%s/%s", base, path);
	return xstrdup(path);
}

void conf_split_list(const char *s, char ***v, size_t *n)
{
	size_t cap = *n;
	const char *p = s;
	while (*p) {
		while (*p && (*p == ',' || isspace((unsigned char)*p)))
			p++;
		const char *b = p;
		while (*p && *p != ',' && !isspace((unsigned char)*p))
			p++;
		if (p > b) {
			*v = xgrow(*v, &cap, *n + 1, sizeof(**v));
			(*v)[(*n)++] = xstrndup(b, (size_t)(p - b));
		}
	}
}

void conf_strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

struct read_ctx {
	conf_lines *out;
	bool nul;
	bool too_long;
};

static void on_line(void *vctx, const char *line, size_t len, int flags)
{
	struct read_ctx *rc = vctx;
	conf_lines *l = rc->out;
	if (flags & LINE_PARTIAL)
		rc->too_long = true;
	if (rc->nul || rc->too_long)
		return;
	if (memchr(line, '\0', len)) {
		rc->nul = true;
		return;
	}
	if (len > 0 && line[len - 1] == '\r')
		len--;
	l->line = xgrow(l->line, &l->cap, l->n + 1, sizeof(*l->line));
	l->line[l->n++] = xstrndup(line, len);
}

/* Configuration files are small; this bound keeps a stray huge file from
 * being read whole. */
#define CONF_MAX_FILE (16 * 1024 * 1024)
#define CONF_MAX_LINE (64 * 1024)

int conf_read_lines(const char *path, conf_lines *out, bg_err *err)
{
	int rc = 0;
	int fd = -1;
	struct read_ctx ctx = {out, false, false};
	lines splitter;
	memset(out, 0, sizeof(*out));
	lines_init(&splitter, CONF_MAX_LINE, on_line, &ctx);
	/* Non-blocking: a FIFO or terminal named by mistake (or by an Include
	 * glob) must not hang the load. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		rc = bg_fail(err, errno == ENOENT ? BG_ENOTFOUND : BG_EIO, "%s: %s", path,
			     strerror(errno));
		goto out;
	}
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		rc = bg_fail(err, BG_EIO, "%s: is a directory", path);
		goto out;
	}
	char buf[8192];
	size_t total = 0;
	for (;;) {
		ssize_t r = read(fd, buf, sizeof(buf));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				rc = bg_fail(err, BG_EIO, "%s: not a regular file", path);
				goto out;
			}
			rc = bg_fail(err, BG_EIO, "%s: %s", path, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		total += (size_t)r;
		if (total > CONF_MAX_FILE) {
			rc = bg_fail(err, BG_ECONFIG,
				     "%s: larger than %d MiB, not a configuration file", path,
				     CONF_MAX_FILE >> 20);
			goto out;
		}
		lines_feed(&splitter, buf, (size_t)r);
	}
	lines_finish(&splitter);
	if (ctx.nul) {
		rc = bg_fail(err, BG_ECONFIG, "%s:%zu: NUL byte in a text file", path, out->n + 1);
		goto out;
	}
	if (ctx.too_long) {
		rc = bg_fail(err, BG_ECONFIG, "%s:%zu: line longer than %d bytes", path, out->n + 1,
			     CONF_MAX_LINE);
		goto out;
	}
out:
	if (fd >= 0)
		close(fd);
	lines_release(&splitter);
	if (rc)
		conf_lines_release(out);
	return rc;
}

void conf_lines_release(conf_lines *l)
{
	if (!l)
		return;
	conf_strv_free(l->line, l->n);
	memset(l, 0, sizeof(*l));
}

bool conf_rel_path_ok(const char *p)
{
	if (!*p || *p == '/')
		return false;
	for (const char *s = p; *s;) {
		size_t len = strcspn(s, "/");
		if ((len == 2 && s[0] == '.' && s[1] == '.') || len == 0)
			return false;
		s += len;
		if (*s == '/')
			s++;
	}
	return true;
}

void conf_env_rules_free(conf_env_rule *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(r[i].flag);
		free(r[i].name);
		free(r[i].value);
		free(r[i].file);
	}
	free(r);
}

void conf_verify_free(conf_verify *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].pattern);
		free(v[i].command);
		free(v[i].file);
	}
	free(v);
}

void conf_box_release_one(conf_box *b)
{
	free(b->name);
	free(b->host);
	free(b->hostname);
	free(b->user);
	conf_strv_free(b->identities, b->n_identities);
	conf_strv_free(b->known_hosts, b->n_known_hosts);
	conf_strv_free(b->global_known_hosts, b->n_global_known_hosts);
	free(b->unsupported);
	free(b->jump);
	free(b->jump_at);
	free(b->partition);
	free(b->gres);
	conf_strv_free(b->srun_args, b->n_srun_args);
	free(b->slurm_conf);
	for (size_t i = 0; i < b->n_hops; i++) {
		conf_box_release_one(b->hops[i]);
		free(b->hops[i]);
	}
	free(b->hops);
	free(b->repo);
	free(b->gate);
	free(b->python);
	free(b->gpus);
	conf_strv_free(b->allow, b->n_allow);
	conf_env_rules_free(b->env, b->n_env);
	free(b->num_workers_env);
	conf_strv_free(b->validate_stub, b->n_validate_stub);
	conf_strv_free(b->kernel_paths, b->n_kernel_paths);
	free(b->overlay_env);
	conf_strv_free(b->validate_drop, b->n_validate_drop);
	free(b->file);
}
