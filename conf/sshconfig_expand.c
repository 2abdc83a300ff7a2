/* Expansion as ssh does it: misc.c's tilde_expand and
 * percent_dollar_expand for paths, ssh.c's %h for HostName. */
#include "conf/sshconfig_internal.h"

#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "base/xmalloc.h"

/* ssh's tilde_expand(): `~`, `~/p`, `~user`, `~user/p`; the home gets a
 * trailing '/'. */
static int tilde_expand(const char *s, const char *home, char **out, bg_err *err)
{
	if (s[0] != '~') {
		*out = xstrdup(s);
		return 0;
	}
	const char *rest = s + 1;
	const char *slash = strchr(rest, '/');
	char *user = slash ? xstrndup(rest, (size_t)(slash - rest)) : xstrdup(rest);
	const char *path = slash ? slash + strspn(slash, "/") : "";
	const char *dir = home;
	struct passwd *pw = NULL;
	if (user[0] != '\0') {
		pw = getpwnam(user);
		if (!pw) {
			int rc = bg_fail(err, BG_ECONFIG, "'%s': no such user '%s'", s, user);
			free(user);
			return rc;
		}
		dir = pw->pw_dir;
	}
	size_t dl = strlen(dir);
	*out = xasprintf("%s%s%s", dir, dl == 0 || dir[dl - 1] != '/' ? "/" : "", path);
	free(user);
	return 0;
}

int sshcfg_expand(const char *s, const sshcfg_tokens *t, int flags, char **out, bg_err *err)
{
	char *tilded = NULL;
	strbuf sb = STRBUF_INIT;
	int rc = 0;
	*out = NULL;
	if (flags & SSHCFG_X_TILDE) {
		rc = tilde_expand(s, t->home ? t->home : "/", &tilded, err);
		if (rc)
			goto out;
		s = tilded;
	}
	for (; *s; s++) {
		if ((flags & SSHCFG_X_DOLLAR) && s[0] == '$' && s[1] == '{') {
			const char *name = s + 2, *end = strchr(name, '}');
			if (!end) {
				rc = bg_fail(err, BG_ECONFIG, "'${%s': no closing '}'", name);
				goto out;
			}
			if (end == name) {
				rc = bg_fail(err, BG_ECONFIG, "'${}': an empty variable name");
				goto out;
			}
			char *var = xstrndup(name, (size_t)(end - name));
			const char *val = t->getvar ? t->getvar(t->getvar_ctx, var) : NULL;
			if (!val) {
				rc = bg_fail(err, BG_ECONFIG, "${%s} is not set", var);
				free(var);
				goto out;
			}
			strbuf_addstr(&sb, val);
			free(var);
			s = end;
			continue;
		}
		if (*s != '%') {
			strbuf_addch(&sb, *s);
			continue;
		}
		s++;
		char host[256];
		switch (*s) {
		case '%': strbuf_addch(&sb, '%'); break;
		case 'h': strbuf_addstr(&sb, t->hostname ? t->hostname : ""); break;
		case 'n':
		case 'k': strbuf_addstr(&sb, t->alias ? t->alias : ""); break;
		case 'u': strbuf_addstr(&sb, t->local_user ? t->local_user : ""); break;
		case 'r': strbuf_addstr(&sb, t->remote_user ? t->remote_user : ""); break;
		case 'd': strbuf_addstr(&sb, t->home ? t->home : ""); break;
		case 'p': strbuf_addf(&sb, "%d", t->port); break;
		case 'i': strbuf_addf(&sb, "%llu", (unsigned long long)getuid()); break;
		case 'l':
		case 'L':
			if (gethostname(host, sizeof(host)) != 0)
				host[0] = '\0';
			host[sizeof(host) - 1] = '\0';
			if (*s == 'L')
				host[strcspn(host, ".")] = '\0';
			strbuf_addstr(&sb, host);
			break;
		case '\0': rc = bg_fail(err, BG_ECONFIG, "a '%%' ends the value"); goto out;
		default: rc = bg_fail(err, BG_ECONFIG, "unknown token '%%%c'", *s); goto out;
		}
	}
	*out = strbuf_detach(&sb);
out:
	strbuf_release(&sb);
	free(tilded);
	return rc;
}

/* HostName's %h (and %%), as ssh.c expands it. */
int sshcfg_expand_hostname(const char *hostname, const char *h, const char *where, char **out,
			   bg_err *err)
{
	strbuf sb = STRBUF_INIT;
	for (const char *s = hostname; *s; s++) {
		if (*s != '%') {
			strbuf_addch(&sb, *s);
			continue;
		}
		s++;
		if (*s == '%' || *s == 'h') {
			strbuf_addstr(&sb, *s == 'h' ? h : "%");
			continue;
		}
		strbuf_release(&sb);
		return bg_fail(err, BG_ECONFIG,
			       "%s: HostName accepts only %%h and %%%%, got '%%%s'", where,
			       *s ? (char[]){*s, '\0'} : "");
	}
	*out = strbuf_detach(&sb);
	return 0;
}
