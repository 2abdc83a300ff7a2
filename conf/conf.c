/* Finding the configuration file, and the conf's lifecycle. */
#include "conf/conf.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xmalloc.h"
#include "conf/internal.h"

static char *dir_of(const char *path)
{
	char *abs = realpath(path, NULL);
	char *r;
	if (!abs) {
		char cwd[PATH_MAX];
		abs = xstrdup(getcwd(cwd, sizeof(cwd)) ? cwd : ".");
		return abs;
	}
	char *slash = strrchr(abs, '/');
	if (slash == abs)
		r = xstrdup("/");
	else
		r = xstrndup(abs, (size_t)(slash - abs));
	free(abs);
	return r;
}

static char *cwd_dup(const conf_env *env)
{
	char cwd[PATH_MAX];
	if (env->cwd && *env->cwd)
		return xstrdup(env->cwd);
	return xstrdup(getcwd(cwd, sizeof(cwd)) ? cwd : ".");
}

/* path may be NULL: no file, only the built-in box. */
static int load(conf *c, const char *path, const conf_env *env, bg_err *err)
{
	static const conf_env none = {0};
	if (!env)
		env = &none;
	conf_raw raw;
	int rc = 0;
	memset(c, 0, sizeof(*c));
	memset(&raw, 0, sizeof(raw));
	if (path) {
		rc = conf_parse_file(&raw, path, err);
		if (rc)
			goto out;
		c->path = xstrdup(path);
		c->root = dir_of(path);
	} else {
		c->root = cwd_dup(env);
	}
	rc = conf_resolve(c, &raw, env, err);
out:
	conf_raw_release(&raw);
	if (rc)
		conf_release(c);
	return rc;
}

int conf_load_file(conf *c, const char *path, const conf_env *env, bg_err *err)
{
	return load(c, path, env, err);
}

static bool is_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && !S_ISDIR(st.st_mode);
}

static bool exists(const char *dir, const char *name)
{
	char *p = xasprintf("%s/%s", dir, name);
	struct stat st;
	bool r = lstat(p, &st) == 0;
	free(p);
	return r;
}

/* boxgate.ini in `cwd` or the nearest directory above it, as git looks for
 * .git: the search ends after the first directory holding .git (file or
 * directory: the repository root, a worktree's too) or at /. Returns the
 * file (owned; "boxgate.ini" when it is in cwd itself) or NULL, and sets
 * *last to the last directory looked in (owned). */
static char *find_upward(const char *cwd, char **last)
{
	char *dir = xstrdup(cwd);
	char *found = NULL;
	for (;;) {
		char *p = xasprintf("%s/boxgate.ini", strcmp(dir, "/") == 0 ? "" : dir);
		if (is_file(p)) {
			found = strcmp(dir, cwd) == 0 ? xstrdup("boxgate.ini") : p;
			if (found != p)
				free(p);
			break;
		}
		free(p);
		char *slash = strrchr(dir, '/');
		if (exists(dir, ".git") || !slash || strcmp(dir, "/") == 0)
			break;
		if (slash == dir)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	*last = dir;
	return found;
}

/* Loads `path` and says how it was found; takes `found_by` (owned). */
static int load_found(conf *c, const char *path, char *found_by, const conf_env *env, bg_err *err)
{
	int rc = load(c, path, env, err);
	if (rc == 0)
		c->found_by = found_by;
	else
		free(found_by);
	return rc;
}

int conf_load(conf *c, const char *explicit_path, const conf_env *env, bg_err *err)
{
	static const conf_env none = {0};
	if (!env)
		env = &none;
	memset(c, 0, sizeof(*c));
	if (explicit_path)
		return load_found(c, explicit_path, xstrdup("--config"), env, err);
	const char *named = env->config_path;
	if (named && *named) {
		/* Asked for by name: a missing file is an error, not a fallback. */
		if (access(named, F_OK) != 0)
			return bg_fail(err, BG_ECONFIG, "%s (from $BOXGATE_CONFIG): %s", named,
				       strerror(errno));
		return load_found(c, named, xstrdup("$BOXGATE_CONFIG"), env, err);
	}
	char *cwd = cwd_dup(env), *last = NULL;
	char *up = find_upward(cwd, &last);
	if (up) {
		char *how = strcmp(up, "boxgate.ini") == 0 ? xstrdup("in the working directory")
							   : xasprintf("found from %s", cwd);
		int rc = load_found(c, up, how, env, err);
		free(up);
		free(cwd);
		free(last);
		return rc;
	}
	char *looked =
		strcmp(cwd, last) == 0
			? xasprintf("none given, no boxgate.ini in %s", cwd)
			: xasprintf("none given, no boxgate.ini from %s up to %s", cwd, last);
	free(cwd);
	free(last);
	const char *xdg = env->xdg_config_dir;
	if (xdg && *xdg) {
		char *p = xasprintf("%s/boxgate/config.ini", xdg);
		if (is_file(p)) {
			int rc = load_found(c, p, xstrdup("$XDG_CONFIG_HOME"), env, err);
			free(p);
			free(looked);
			return rc;
		}
		char *more = xasprintf("%s, no %s", looked, p);
		free(looked);
		looked = more;
		free(p);
	}
	char *p = xasprintf("%s/.config/boxgate/config.ini", conf_home(env));
	int rc;
	if (is_file(p)) {
		rc = load_found(c, p, xstrdup("~/.config"), env, err);
	} else {
		rc = load(c, NULL, env, err);
		if (rc == 0) {
			c->not_found = xasprintf("%s, no %s", looked, p);
		}
	}
	free(looked);
	free(p);
	return rc;
}

void conf_release(conf *c)
{
	if (!c)
		return;
	free(c->path);
	free(c->found_by);
	free(c->not_found);
	free(c->root);
	free(c->ssh_config);
	free(c->results);
	free(c->agent_socket);
	for (size_t i = 0; i < c->n_boxes; i++)
		conf_box_release_one(&c->boxes[i]);
	free(c->boxes);
	for (size_t i = 0; i < c->n_pools; i++) {
		conf_pool *p = &c->pools[i];
		for (size_t j = 0; j < p->n_slots; j++) {
			free(p->slots[j].box);
			free(p->slots[j].gpus);
		}
		free(p->slots);
		conf_strv_free(p->disabled, p->n_disabled);
		free(p->disabled_why);
		free(p->name);
		free(p->file);
	}
	free(c->pools);
	conf_verify_free(c->verify, c->n_verify);
	memset(c, 0, sizeof(*c));
}

const char *conf_verify_for(const conf *c, const char *relpath)
{
	while (relpath[0] == '.' && relpath[1] == '/')
		relpath += 2;
	const char *base = strrchr(relpath, '/');
	base = base ? base + 1 : relpath;
	size_t bl = strlen(base);
	for (size_t i = 0; i < c->n_verify; i++) {
		const char *p = c->verify[i].pattern;
		if (p[0] == '.' && !strchr(p, '/'))
			continue;
		while (p[0] == '.' && p[1] == '/')
			p += 2;
		if (strcmp(p, relpath) == 0)
			return c->verify[i].command[0] ? c->verify[i].command : NULL;
	}
	const conf_verify *best = NULL;
	size_t best_len = 0;
	for (size_t i = 0; i < c->n_verify; i++) {
		const char *p = c->verify[i].pattern;
		if (p[0] != '.' || strchr(p, '/'))
			continue;
		size_t pl = strlen(p);
		if (pl <= bl && strcmp(base + bl - pl, p) == 0 && pl > best_len) {
			best = &c->verify[i];
			best_len = pl;
		}
	}
	return best && best->command[0] ? best->command : NULL;
}
