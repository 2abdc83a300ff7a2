/* The plain host names an ssh_config file declares (`Host h200-a b200-b`),
 * for `boxgate init` to offer as boxes. Patterns (`*`, `?`, `!`) name no
 * host and are skipped; Include is followed as ssh follows it (relative
 * paths under ~/.ssh, globs). Not a resolver: nothing is matched. */
#include "conf/sshconfig.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/xmalloc.h"
#include "conf/conf.h"
#include "conf/sshconfig_internal.h"

typedef struct host_list {
	char **v;
	size_t n, cap;
	const char *home;
} host_list;

static void add_name(host_list *l, const char *name)
{
	if (strpbrk(name, "*?!") || !conf_box_name_ok(name))
		return;
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], name) == 0)
			return;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = xstrdup(name);
}

static void read_file(host_list *l, const char *path, int depth);

static void follow_include(host_list *l, const char *arg, int depth)
{
	char *pat;
	if (arg[0] == '~' && (arg[1] == '/' || arg[1] == '\0'))
		pat = xasprintf("%s%s", l->home, arg + 1);
	else if (arg[0] == '~' || arg[0] == '/')
		pat = xstrdup(arg);
	else
		pat = xasprintf("%s/.ssh/%s", l->home, arg);
	glob_t g;
	memset(&g, 0, sizeof(g));
	if (glob(pat, GLOB_TILDE, NULL, &g) == 0)
		for (size_t i = 0; i < g.gl_pathc; i++)
			read_file(l, g.gl_pathv[i], depth + 1);
	globfree(&g);
	free(pat);
}

static void read_file(host_list *l, const char *path, int depth)
{
	if (depth > SSHCFG_MAX_DEPTH)
		return;
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		char *s = line + strspn(line, WS);
		if (*s == '#' || *s == '\0')
			continue;
		char *kw = sshcfg_strdelim(&s);
		if (!kw)
			continue;
		bool host = strcasecmp(kw, "host") == 0, include = strcasecmp(kw, "include") == 0;
		for (char *a; (host || include) && s && *s && (a = sshcfg_strdelim(&s));) {
			if (*a == '\0' || *a == '#')
				break;
			if (host)
				add_name(l, a);
			else
				follow_include(l, a, depth);
		}
	}
	free(line);
	fclose(f);
}

char **sshcfg_host_names(const char *path, const char *home, size_t *n)
{
	host_list l = {.home = home ? home : ""};
	read_file(&l, path, 0);
	*n = l.n;
	return l.v;
}
