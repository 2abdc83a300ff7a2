/* Reading ssh_config files line by line: readconf.c's
 * process_config_line_depth() for the keywords boxgate reads, Include, and
 * read_config_file_depth(). */
#include "conf/sshconfig_internal.h"

#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xmalloc.h"
#include "conf/internal.h"

/* ssh_config options that change which host keys ssh accepts or how it
 * records them; boxgate checks known_hosts files only, so any value but the
 * harmless one refuses the box by name rather than differ from ssh. */
static const struct {
	const char *kw, *name, *harmless;
} hostkey_opts[] = {
	{"revokedhostkeys", "RevokedHostKeys", "none"},
	{"knownhostscommand", "KnownHostsCommand", "none"},
	{"hashknownhosts", "HashKnownHosts", "no"},
	{"checkhostip", "CheckHostIP", "no"},
	{"verifyhostkeydns", "VerifyHostKeyDNS", "no"},
};

_Static_assert(sizeof(hostkey_opts) / sizeof(hostkey_opts[0]) == SSHCFG_N_HOSTKEY_OPTS,
	       "one slot per host-key option in sshcfg_state");

static int hostkey_opt(const char *kw)
{
	for (int i = 0; i < SSHCFG_N_HOSTKEY_OPTS; i++)
		if (strcmp(kw, hostkey_opts[i].kw) == 0)
			return i;
	return -1;
}

/* Checks the %-tokens of an IdentityFile / UserKnownHostsFile value:
 * 0 fine, 1 a token boxgate refuses (*which), -1 unknown to ssh. */
static int check_tokens(const char *s, char *which)
{
	for (; *s; s++) {
		if (*s != '%')
			continue;
		s++;
		if (*s && strchr("%hnkurpdilL", *s))
			continue;
		*which = *s;
		if (*s && strchr("CjTH", *s))
			return 1;
		return -1;
	}
	return 0;
}

/* The %-tokens of a path keyword's value: 0 when boxgate expands them all,
 * BG_ECONFIG for a token ssh does not know, 1 for one boxgate cannot expand
 * (the box is then refused by name). */
static int path_tokens(sshcfg_state *lk, const char *file, int lineno, const char *kw,
		       const char *v)
{
	char which = 0;
	int e = check_tokens(v, &which);
	if (e < 0)
		return bg_fail(lk->err, BG_ECONFIG, "%s:%d: %s: unknown token '%%%c'", file, lineno,
			       kw, which ? which : ' ');
	if (e > 0) {
		char *what = xasprintf("%%%c in %s", which, kw);
		sshcfg_refuse(lk, what, file, lineno);
		free(what);
	}
	return e > 0;
}

static int do_include(sshcfg_state *lk, const char *file, int line, char *const *args, size_t n,
		      int depth, bool *active, bool nevermatch)
{
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (args[i][0] == '\0')
			return bg_fail(lk->err, BG_ECONFIG, "%s:%d: Include: an empty argument",
				       file, line);
		char *pat;
		const char *a = args[i];
		if (a[0] == '~' && (a[1] == '/' || a[1] == '\0'))
			pat = xasprintf("%s%s", lk->q->home, a + 1);
		else if (a[0] == '~' || a[0] == '/')
			pat = xstrdup(a); /* ~user: glob's GLOB_TILDE, as ssh */
		else
			pat = xasprintf("%s/.ssh/%s", lk->q->home, a);
		glob_t g;
		memset(&g, 0, sizeof(g));
		int gr = glob(pat, GLOB_TILDE, NULL, &g);
		if (gr != 0 && gr != GLOB_NOMATCH)
			rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: Include: glob failed for %s",
				     file, line, pat);
		bool oactive = *active;
		for (size_t j = 0; gr == 0 && j < g.gl_pathc && rc == 0; j++) {
			if (depth + 1 > SSHCFG_MAX_DEPTH)
				rc = bg_fail(lk->err, BG_ECONFIG,
					     "%s:%d: Include nested more than %d deep", file, line,
					     SSHCFG_MAX_DEPTH);
			else
				rc = sshcfg_parse_file(lk, g.gl_pathv[j], depth + 1, active,
						       nevermatch || !oactive, false);
			/* A Match inside an included file does not leak out. */
			*active = oactive;
		}
		globfree(&g);
		free(pat);
	}
	return rc;
}

/* Keywords that take exactly one argument, where a second one is an error. */
static int one_arg(sshcfg_state *lk, const char *file, int line, const char *kw, char **args,
		   size_t nargs)
{
	if (nargs == 0)
		return bg_fail(lk->err, BG_ECONFIG, "%s:%d: %s: missing argument", file, line, kw);
	const char *args0 = args[0];
	if (nargs > 1)
		return bg_fail(lk->err, BG_ECONFIG, "%s:%d: %s: extra arguments at end of line",
			       file, line, kw);
	if (args0[0] == '\0')
		return bg_fail(lk->err, BG_ECONFIG, "%s:%d: %s: missing argument", file, line, kw);
	return 0;
}

static int hosts_files(sshcfg_state *lk, const char *file, int line, const char *kw, char **args,
		       size_t nargs, bool active, char ***list, size_t *n, bool *set)
{
	bool empty = *n == 0 && !*set;
	for (size_t i = 0; i < nargs; i++) {
		if (args[i][0] == '\0')
			return bg_fail(lk->err, BG_ECONFIG, "%s:%d: %s: an empty argument", file,
				       line, kw);
		if (strcasecmp(args[i], "none") == 0 && nargs > 1)
			return bg_fail(lk->err, BG_ECONFIG, "%s:%d: %s: \"none\" must appear alone",
				       file, line, kw);
	}
	if (!active || !empty || nargs == 0)
		return 0;
	if (nargs > SSHCFG_MAX_HOSTS_FILES)
		return bg_fail(lk->err, BG_ECONFIG, "%s:%d: %s: more than %d files", file, line, kw,
			       SSHCFG_MAX_HOSTS_FILES);
	*list = xcalloc(nargs, sizeof(**list));
	*set = true;
	for (size_t i = 0; i < nargs; i++)
		(*list)[(*n)++] = xstrdup(args[i]);
	return 0;
}

/* One line: process_config_line_depth(). */
static int process_line(sshcfg_state *lk, const char *file, int lineno, const char *text, int depth,
			bool *active, bool nevermatch)
{
	int rc = 0;
	char **args = NULL;
	size_t nargs = 0;
	sshcfg_host *o = lk->out;
	char *buf = xstrdup(text);
	size_t len = strlen(buf);
	while (len > 0 && strchr(WS "\f", buf[len - 1]))
		buf[--len] = '\0';
	char *str = buf;
	char *kw = sshcfg_strdelim(&str);
	if (kw && *kw == '\0')
		kw = sshcfg_strdelim(&str);
	if (!kw || !*kw || *kw == '#')
		goto out;
	sshcfg_lowercase(kw);
	if (str)
		str += strspn(str, WS);
	if (!str || !*str) {
		rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: no argument after keyword \"%s\"", file,
			     lineno, kw);
		goto out;
	}
	if (!sshcfg_known_keyword(kw)) {
		if (lk->ignore_unknown && sshcfg_match_list(kw, lk->ignore_unknown, true) == 1)
			goto out;
		rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: Bad configuration option: %s", file,
			     lineno, kw);
		goto out;
	}
	if (!sshcfg_split_args(str, &args, &nargs)) {
		rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: invalid quotes", file, lineno);
		goto out;
	}
	const char *a = nargs ? args[0] : "";

	if (strcmp(kw, "host") == 0) {
		*active = false;
		for (size_t i = 0; i < nargs; i++)
			if (args[i][0] == '\0') {
				rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: Host: an empty argument",
					     file, lineno);
				goto out;
			}
		if (!nevermatch)
			*active = sshcfg_match_host(args, nargs, lk->host);
	} else if (strcmp(kw, "match") == 0) {
		bool consumed = true;
		rc = sshcfg_match_line(lk, str, file, lineno, nevermatch, &consumed);
		if (rc < 0)
			goto out;
		*active = !nevermatch && rc == 1;
		rc = 0;
		if (!consumed)
			rc = bg_fail(lk->err, BG_ECONFIG,
				     "%s:%d: match: extra arguments at end of line", file, lineno);
	} else if (strcmp(kw, "include") == 0) {
		rc = do_include(lk, file, lineno, args, nargs, depth, active, nevermatch);
	} else if (strcmp(kw, "ignoreunknown") == 0) {
		if ((rc = one_arg(lk, file, lineno, "IgnoreUnknown", args, nargs)) == 0 &&
		    *active && !lk->ignore_unknown)
			lk->ignore_unknown = xstrdup(a);
	} else if (strcmp(kw, "proxycommand") == 0 || strcmp(kw, "proxyjump") == 0) {
		bool jump = kw[5] == 'j';
		char *v = xstrdup(str + strspn(str, WS "="));
		if (jump) {
			v[strcspn(v, "#")] = '\0';
			size_t vl = strlen(v);
			while (vl > 0 && strchr(WS, v[vl - 1]))
				v[--vl] = '\0';
		}
		/* ProxyJump X also sets ProxyCommand none; `ProxyJump none` stops a
		 * later ProxyJump but not a later ProxyCommand (as ssh 9.2 -G shows). */
		bool jump_blocks = lk->jump_host && strcasecmp(lk->jump_host, "none") != 0;
		bool taken = jump ? lk->jump_host || lk->proxy_command
				  : lk->proxy_command || jump_blocks;
		if (*active && !taken) {
			if (jump) {
				lk->jump_host = v;
				lk->jump_at = sshcfg_at(file, lineno);
				if (strcasecmp(v, "none") != 0)
					lk->proxy_command = xstrdup("none");
				v = NULL;
			} else {
				lk->proxy_command = v;
				lk->proxy_at = sshcfg_at(file, lineno);
				v = NULL;
			}
		}
		free(v);
	} else if (strcmp(kw, "hostname") == 0) {
		if ((rc = one_arg(lk, file, lineno, "HostName", args, nargs)) == 0 && *active &&
		    !o->hostname) {
			o->hostname = xstrdup(a);
			o->hostname_set = true;
			lk->hostname_at = sshcfg_at(file, lineno);
		}
	} else if (strcmp(kw, "user") == 0) {
		if ((rc = one_arg(lk, file, lineno, "User", args, nargs)) == 0 && *active &&
		    !lk->q->user && !o->user)
			o->user = xstrdup(a);
	} else if (hostkey_opt(kw) >= 0) {
		int i = hostkey_opt(kw);
		if (nargs && *active && !lk->hostkey_opt_set[i]) {
			lk->hostkey_opt_set[i] = true;
			bool harmless = strcasecmp(a, hostkey_opts[i].harmless) == 0 ||
					(strcmp(hostkey_opts[i].harmless, "no") == 0 &&
					 strcasecmp(a, "false") == 0);
			if (!harmless && !lk->hostkey_opt_at) {
				lk->hostkey_opt_at = sshcfg_at(file, lineno);
				lk->hostkey_opt_name = hostkey_opts[i].name;
			}
		}
	} else if (strcmp(kw, "hostkeyalias") == 0) {
		if ((rc = one_arg(lk, file, lineno, "HostKeyAlias", args, nargs)) == 0 && *active &&
		    !lk->host_key_alias_at)
			lk->host_key_alias_at = sshcfg_at(file, lineno);
	} else if (strcmp(kw, "port") == 0) {
		if ((rc = one_arg(lk, file, lineno, "Port", args, nargs)) != 0)
			goto out;
		int v = sshcfg_a2port(a);
		if (v <= 0) {
			rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: Bad port '%s'", file, lineno, a);
			goto out;
		}
		if (*active && !lk->q->port && !o->port)
			o->port = v;
	} else if (strcmp(kw, "connecttimeout") == 0) {
		if ((rc = one_arg(lk, file, lineno, "ConnectTimeout", args, nargs)) != 0)
			goto out;
		long v = -1;
		if (strcmp(a, "none") != 0 && (v = sshcfg_convtime(a)) < 0) {
			rc = bg_fail(lk->err, BG_ECONFIG,
				     "%s:%d: ConnectTimeout: invalid time value '%s'", file, lineno,
				     a);
			goto out;
		}
		/* `none` leaves it unset: a later line still sets it, as in ssh. */
		if (*active && o->connect_timeout_s == -1 && v >= 0) {
			o->connect_timeout_s = (int)v;
			free(o->connect_timeout_at);
			o->connect_timeout_at = sshcfg_at(file, lineno);
		}
	} else if (strcmp(kw, "canonicalizehostname") == 0) {
		if ((rc = one_arg(lk, file, lineno, "CanonicalizeHostname", args, nargs)) != 0)
			goto out;
		int v = -1;
		if (strcasecmp(a, "no") == 0 || strcasecmp(a, "false") == 0)
			v = 0;
		else if (strcasecmp(a, "yes") == 0 || strcasecmp(a, "true") == 0 ||
			 strcasecmp(a, "always") == 0)
			v = 1;
		if (v < 0) {
			rc = bg_fail(lk->err, BG_ECONFIG,
				     "%s:%d: CanonicalizeHostname: unsupported option \"%s\"", file,
				     lineno, a);
			goto out;
		}
		if (*active && lk->canonicalize == -1 && !lk->final_pass) {
			lk->canonicalize = v;
			lk->canonicalize_at = sshcfg_at(file, lineno);
		}
	} else if (strcmp(kw, "identityfile") == 0) {
		if ((rc = one_arg(lk, file, lineno, "IdentityFile", args, nargs)) != 0 || !*active)
			goto out;
		if (o->n_identities >= SSHCFG_MAX_IDENTITIES) {
			rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: more than %d IdentityFile", file,
				     lineno, SSHCFG_MAX_IDENTITIES);
			goto out;
		}
		for (size_t i = 0; i < o->n_identities; i++)
			if (strcmp(o->identities[i], a) == 0)
				goto out; /* ssh ignores a duplicate */
		int e = path_tokens(lk, file, lineno, "IdentityFile", a);
		if (e != 0) {
			rc = e < 0 ? e : 0;
			goto out;
		}
		size_t cap = lk->cap_ident;
		o->identities = xgrow(o->identities, &lk->cap_ident, o->n_identities + 1,
				      sizeof(*o->identities));
		o->identities_at = xgrow(o->identities_at, &cap, o->n_identities + 1,
					 sizeof(*o->identities_at));
		o->identities_at[o->n_identities] = sshcfg_at(file, lineno);
		o->identities[o->n_identities++] = xstrdup(a);
	} else if (strcmp(kw, "userknownhostsfile") == 0) {
		bool set = o->n_known_hosts > 0;
		bool was = set;
		rc = hosts_files(lk, file, lineno, "UserKnownHostsFile", args, nargs, *active,
				 &o->known_hosts, &o->n_known_hosts, &set);
		if (rc == 0 && set && !was) {
			o->known_hosts_at = sshcfg_at(file, lineno);
			for (size_t i = 0; i < o->n_known_hosts; i++) {
				int e = path_tokens(lk, file, lineno, "UserKnownHostsFile",
						    o->known_hosts[i]);
				if (e < 0) {
					rc = e;
					goto out;
				}
			}
			if (strcasecmp(o->known_hosts[0], "none") == 0) {
				free(o->known_hosts[0]);
				o->known_hosts[0] = xstrdup("/dev/null");
			}
		}
	} else if (strcmp(kw, "globalknownhostsfile") == 0) {
		rc = hosts_files(lk, file, lineno, "GlobalKnownHostsFile", args, nargs, *active,
				 &o->global_known_hosts, &o->n_global_known_hosts,
				 &o->global_known_hosts_set);
		if (rc == 0 && o->n_global_known_hosts == 1 &&
		    strcasecmp(o->global_known_hosts[0], "none") == 0) {
			free(o->global_known_hosts[0]);
			o->n_global_known_hosts = 0; /* `none`: no global file at all */
		}
	}
	/* Every other keyword: valid to ssh, nothing boxgate reads. */
out:
	conf_strv_free(args, nargs);
	free(buf);
	return rc;
}

int sshcfg_parse_file(sshcfg_state *lk, const char *path, int depth, bool *active, bool nevermatch,
		      bool top)
{
	conf_lines l;
	bg_err e2;
	struct stat st;
	if (!top && stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return 0; /* ssh reads a directory as an empty file */
		/* ssh checks an included file as it checks ~/.ssh/config. */
		if ((st.st_uid != 0 && st.st_uid != getuid()) || (st.st_mode & 022) != 0)
			return bg_fail(lk->err, BG_ECONFIG, "%s: Bad owner or permissions", path);
	}
	int rc = conf_read_lines(path, &l, &e2);
	if (rc == BG_ENOTFOUND)
		return 0;
	if (rc) {
		*lk->err = e2;
		return rc;
	}
	for (size_t i = 0; i < l.n && rc == 0; i++)
		rc = process_line(lk, path, (int)i + 1, l.line[i], depth, active, nevermatch);
	conf_lines_release(&l);
	return rc;
}
