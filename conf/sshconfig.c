#include "conf/sshconfig.h"

#include <ctype.h>
#include <glob.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "conf/internal.h"

/* ssh(1) stops at 16 nested Includes too. */
#define SSHCFG_MAX_DEPTH 16

bool sshcfg_match_pattern(const char *pattern, const char *s)
{
	for (;;) {
		if (*pattern == '\0')
			return *s == '\0';
		if (*pattern == '*') {
			while (*pattern == '*')
				pattern++;
			if (*pattern == '\0')
				return true;
			for (; *s; s++)
				if (sshcfg_match_pattern(pattern, s))
					return true;
			return false;
		}
		if (*s == '\0')
			return false;
		if (*pattern != '?' &&
		    tolower((unsigned char)*pattern) != tolower((unsigned char)*s))
			return false;
		pattern++;
		s++;
	}
}

bool sshcfg_match_host(char *const *patterns, size_t n, const char *host)
{
	bool matched = false;
	for (size_t i = 0; i < n; i++) {
		const char *p = patterns[i];
		if (p[0] == '!') {
			if (sshcfg_match_pattern(p + 1, host))
				return false;
		} else if (sshcfg_match_pattern(p, host)) {
			matched = true;
		}
	}
	return matched;
}

bool sshcfg_split_args(const char *s, char ***argv, size_t *argc)
{
	char **v = NULL;
	size_t n = 0, cap = 0;
	strbuf cur = STRBUF_INIT;
	const char *p = s;
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0' || *p == '#')
			break;
		char quote = 0;
		strbuf_reset(&cur);
		while (*p) {
			if (!quote && (*p == ' ' || *p == '\t'))
				break;
			if (*p == '\\' && (p[1] == '\\' || p[1] == '"' || p[1] == '\'' ||
					   (!quote && (p[1] == ' ' || p[1] == '\t')))) {
				strbuf_addch(&cur, p[1]);
				p += 2;
				continue;
			}
			if (quote && *p == quote) {
				quote = 0;
				p++;
				continue;
			}
			if (!quote && (*p == '"' || *p == '\'')) {
				quote = *p++;
				continue;
			}
			strbuf_addch(&cur, *p++);
		}
		if (quote) {
			strbuf_release(&cur);
			conf_strv_free(v, n);
			*argv = NULL;
			*argc = 0;
			return false;
		}
		v = xgrow(v, &cap, n + 1, sizeof(*v));
		v[n++] = xstrdup(strbuf_str(&cur));
	}
	strbuf_release(&cur);
	*argv = v;
	*argc = n;
	return true;
}

char *sshcfg_expand(const char *s, const sshcfg_tokens *t, bool tilde)
{
	strbuf sb = STRBUF_INIT;
	const char *home = t->home ? t->home : "";
	if (tilde && s[0] == '~' && (s[1] == '/' || s[1] == '\0')) {
		size_t hl = strlen(home);
		while (hl > 1 && home[hl - 1] == '/')
			hl--;
		strbuf_add(&sb, home, hl);
		s++;
	}
	for (; *s; s++) {
		if (*s != '%' || s[1] == '\0') {
			strbuf_addch(&sb, *s);
			continue;
		}
		char host[256];
		s++;
		switch (*s) {
		case '%': strbuf_addch(&sb, '%'); break;
		case 'h': strbuf_addstr(&sb, t->hostname ? t->hostname : ""); break;
		case 'n': strbuf_addstr(&sb, t->alias ? t->alias : ""); break;
		case 'u': strbuf_addstr(&sb, t->local_user ? t->local_user : ""); break;
		case 'r': strbuf_addstr(&sb, t->remote_user ? t->remote_user : ""); break;
		case 'd': strbuf_addstr(&sb, home); break;
		case 'p': strbuf_addf(&sb, "%d", t->port); break;
		case 'i': strbuf_addf(&sb, "%u", (unsigned)getuid()); break;
		case 'l':
		case 'L':
			if (gethostname(host, sizeof(host)) != 0)
				host[0] = '\0';
			host[sizeof(host) - 1] = '\0';
			if (*s == 'L')
				host[strcspn(host, ".")] = '\0';
			strbuf_addstr(&sb, host);
			break;
		default:
			/* sshcfg_lookup() refused unknown escapes; keep it verbatim. */
			strbuf_addch(&sb, '%');
			strbuf_addch(&sb, *s);
			break;
		}
	}
	return strbuf_detach(&sb);
}

typedef struct lookup {
	const char *host;
	const char *home;
	sshcfg_host *out;
	size_t cap_ident;
	bool have_connect_timeout;
	bool have_proxy;
	bg_err *err;
} lookup;

/* ssh's time format: "30", "30s", "1m30s". -1 when malformed. */
static long convtime(const char *s)
{
	long total = 0;
	if (!*s)
		return -1;
	while (*s) {
		if (!isdigit((unsigned char)*s))
			return -1;
		long v = 0;
		while (isdigit((unsigned char)*s)) {
			v = v * 10 + (*s - '0');
			if (v > 100000000L)
				return -1;
			s++;
		}
		long mul = 1;
		switch (*s) {
		case '\0': break;
		case 's': case 'S': s++; break;
		case 'm': case 'M': mul = 60; s++; break;
		case 'h': case 'H': mul = 3600; s++; break;
		case 'd': case 'D': mul = 86400; s++; break;
		case 'w': case 'W': mul = 604800; s++; break;
		default: return -1;
		}
		total += v * mul;
		if (total > INT_MAX)
			return -1;
	}
	return total;
}

/* Checks the %-escapes of an argument: 0 when all are known, 1 when one is
 * an ssh escape boxgate does not implement (*which set), -1 when unknown. */
static int check_escapes(const char *s, const char *allowed, char *which)
{
	for (; *s; s++) {
		if (*s != '%')
			continue;
		s++;
		if (*s && strchr(allowed, *s))
			continue;
		*which = *s;
		if (*s && strchr("CjkHT", *s))
			return 1;
		return -1;
	}
	return 0;
}

static int parse_file(lookup *lk, const char *path, int depth, bool active, bool top);

static int do_include(lookup *lk, const char *file, int line, char *const *args, size_t n,
		      int depth)
{
	int rc = 0;
	if (depth >= SSHCFG_MAX_DEPTH)
		return bg_fail(lk->err, BG_ECONFIG, "%s:%d: Include nested more than %d deep", file,
			       line, SSHCFG_MAX_DEPTH);
	for (size_t i = 0; i < n && rc == 0; i++) {
		char *pat;
		if (args[i][0] == '~')
			pat = conf_expand_path(args[i], lk->home, NULL);
		else if (args[i][0] != '/')
			pat = xasprintf("%s/.ssh/%s", lk->home, args[i]);
		else
			pat = xstrdup(args[i]);
		glob_t g;
		memset(&g, 0, sizeof(g));
		int gr = glob(pat, 0, NULL, &g);
		if (gr == 0) {
			for (size_t j = 0; j < g.gl_pathc && rc == 0; j++)
				rc = parse_file(lk, g.gl_pathv[j], depth + 1, true, false);
		}
		globfree(&g);
		free(pat);
	}
	return rc;
}

static void set_once(char **slot, const char *v)
{
	if (!*slot)
		*slot = xstrdup(v);
}

/* One line, already known to be inside an active block (or a block line). */
static int process_line(lookup *lk, const char *file, int lineno, const char *line,
			int depth, bool *active)
{
	int rc = 0;
	char **args = NULL;
	size_t nargs = 0;
	const char *p = line;
	sshcfg_host *o = lk->out;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '\0' || *p == '#')
		return 0;
	const char *kb = p;
	while (*p && *p != ' ' && *p != '\t' && *p != '=')
		p++;
	char *kw = xstrndup(kb, (size_t)(p - kb));
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '=') {
		p++;
		while (*p == ' ' || *p == '\t')
			p++;
	}
	if (!sshcfg_split_args(p, &args, &nargs)) {
		rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: unterminated quote", file, lineno);
		goto out;
	}

	if (strcasecmp(kw, "Host") == 0) {
		if (nargs == 0) {
			rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: Host needs at least one pattern", file,
				     lineno);
			goto out;
		}
		*active = sshcfg_match_host(args, nargs, lk->host);
		goto out;
	}
	if (strcasecmp(kw, "Match") == 0) {
		/* Match criteria (exec, host, user...) are not evaluated: a Match
		 * block never applies, except the unconditional `Match all`. */
		*active = nargs == 1 && strcasecmp(args[0], "all") == 0;
		goto out;
	}
	if (!*active)
		goto out;
	if (strcasecmp(kw, "Include") == 0) {
		if (nargs == 0) {
			rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: Include needs a path", file, lineno);
			goto out;
		}
		rc = do_include(lk, file, lineno, args, nargs, depth);
		goto out;
	}

	/* Keywords boxgate reads, each taking one argument. */
	static const char *const known[] = { "HostName", "User", "Port", "IdentityFile",
					     "UserKnownHostsFile", "ConnectTimeout", "ProxyJump",
					     "ProxyCommand" };
	bool ours = false;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcasecmp(kw, known[i]) == 0)
			ours = true;
	if (!ours)
		goto out;
	if (nargs == 0) {
		rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: %s needs a value", file, lineno, kw);
		goto out;
	}
	const char *a = args[0];
	char which = 0;

	if (strcasecmp(kw, "ProxyJump") == 0 || strcasecmp(kw, "ProxyCommand") == 0) {
		if (lk->have_proxy)
			goto out;
		lk->have_proxy = true;
		if (strcasecmp(a, "none") != 0)
			o->unsupported = xasprintf("%s (%s:%d)",
						   tolower((unsigned char)kw[5]) == 'j' ? "ProxyJump"
											 : "ProxyCommand",
						   file, lineno);
	} else if (strcasecmp(kw, "HostName") == 0) {
		if (o->hostname)
			goto out;
		int e = check_escapes(a, "%h", &which);
		if (e != 0) {
			rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: HostName accepts only %%h and %%%%, got '%%%c'",
				     file, lineno, which ? which : ' ');
			goto out;
		}
		o->hostname = xstrdup(a);
	} else if (strcasecmp(kw, "User") == 0) {
		set_once(&o->user, a);
	} else if (strcasecmp(kw, "Port") == 0) {
		if (o->port)
			goto out;
		char *end = NULL;
		long v = strtol(a, &end, 10);
		if (!isdigit((unsigned char)a[0]) || *end || v < 1 || v > 65535) {
			rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: Port must be an integer 1-65535, got '%s'",
				     file, lineno, a);
			goto out;
		}
		o->port = (int)v;
	} else if (strcasecmp(kw, "ConnectTimeout") == 0) {
		if (lk->have_connect_timeout)
			goto out;
		lk->have_connect_timeout = true;
		if (strcasecmp(a, "none") == 0)
			goto out;
		long v = convtime(a);
		if (v < 0) {
			rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: ConnectTimeout must be a time such as 10 or 1m, got '%s'",
				     file, lineno, a);
			goto out;
		}
		o->connect_timeout_s = (int)v;
	} else {
		bool ident = strcasecmp(kw, "IdentityFile") == 0;
		if (!ident && o->known_hosts)
			goto out;
		int e = check_escapes(a, "%hnurpdilL", &which);
		if (e < 0) {
			rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: unknown escape '%%%c' in %s", file, lineno,
				     which ? which : ' ', kw);
			goto out;
		}
		if (e > 0) {
			if (!o->unsupported)
				o->unsupported =
					xasprintf("%%%c in %s (%s:%d)", which, kw, file, lineno);
			goto out;
		}
		if (ident) {
			o->identities = xgrow(o->identities, &lk->cap_ident, o->n_identities + 1,
					      sizeof(*o->identities));
			o->identities[o->n_identities++] = xstrdup(a);
		} else {
			o->known_hosts = xmalloc(sizeof(*o->known_hosts));
			o->known_hosts[0] = xstrdup(strcasecmp(a, "none") == 0 ? "/dev/null" : a);
			o->n_known_hosts = 1;
		}
	}
out:
	conf_strv_free(args, nargs);
	free(kw);
	return rc;
}

static int parse_file(lookup *lk, const char *path, int depth, bool active, bool top)
{
	conf_lines l;
	bg_err e2;
	int rc = conf_read_lines(path, &l, &e2);
	if (rc == BG_ENOTFOUND)
		return 0;
	if (rc) {
		/* An unreadable Include is skipped as ssh does; the main file is not. */
		if (!top && rc == BG_EIO)
			return 0;
		if (lk->err)
			*lk->err = e2;
		return rc;
	}
	for (size_t i = 0; i < l.n && rc == 0; i++)
		rc = process_line(lk, path, (int)i + 1, l.line[i], depth, &active);
	conf_lines_release(&l);
	return rc;
}

int sshcfg_lookup(const char *path, const char *host, const char *home, sshcfg_host *out,
		  bg_err *err)
{
	memset(out, 0, sizeof(*out));
	out->connect_timeout_s = -1;
	lookup lk = { host, home ? home : "/", out, 0, false, false, err };
	int rc = parse_file(&lk, path, 0, true, true);
	if (rc)
		sshcfg_host_release(out);
	return rc;
}

void sshcfg_host_release(sshcfg_host *h)
{
	if (!h)
		return;
	free(h->hostname);
	free(h->user);
	conf_strv_free(h->identities, h->n_identities);
	conf_strv_free(h->known_hosts, h->n_known_hosts);
	conf_strv_free(h->global_known_hosts, h->n_global_known_hosts);
	free(h->unsupported);
	memset(h, 0, sizeof(*h));
	h->connect_timeout_s = -1;
}
