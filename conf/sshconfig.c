/* ssh_config as OpenSSH 9.2 reads it: a port of the parts of readconf.c
 * (process_config_line_depth, match_cfg_line, read_config_file_depth),
 * ssh.c (main's two passes and host name handling) and misc.c (argv_split,
 * strdelim, a2port, convtime, tilde_expand, percent_dollar_expand) that
 * decide hostname, user, port, identityfile, userknownhostsfile,
 * globalknownhostsfile, connecttimeout and proxyjump. */
#include "conf/sshconfig.h"

#include <ctype.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <netdb.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "conf/internal.h"

/* readconf.c's limits. */
#define SSHCFG_MAX_DEPTH 16
#define SSHCFG_MAX_IDENTITIES 100
#define SSHCFG_MAX_HOSTS_FILES 32

#define WS " \t\r\n"

/* Every keyword of OpenSSH's readconf.c keywords[] (upstream, current),
 * plus the Debian/Red Hat GSSAPI and keepalive patches and Apple's
 * UseKeychain: anything else is "Bad configuration option", as to ssh. */
static const char *const ssh_keywords[] = {
	"addkeystoagent", "addressfamily", "afstokenpassing", "batchmode", "bindaddress",
	"bindinterface", "canonicaldomains", "canonicalizefallbacklocal", "canonicalizehostname",
	"canonicalizemaxdots", "canonicalizepermittedcnames", "casignaturealgorithms",
	"certificatefile", "challengeresponseauthentication", "channeltimeout", "checkhostip",
	"cipher", "ciphers", "clearallforwardings", "compression", "compressionlevel",
	"connectionattempts", "connecttimeout", "controlmaster", "controlpath", "controlpersist",
	"dsaauthentication", "dynamicforward", "enableescapecommandline", "enablesshkeysign",
	"escapechar", "exitonforwardfailure", "fallbacktorsh", "fingerprinthash",
	"forkafterauthentication", "forwardagent", "forwardx11", "forwardx11timeout",
	"forwardx11trusted", "gatewayports", "globalknownhostsfile", "globalknownhostsfile2",
	"gssapiauthentication", "gssapiclientidentity", "gssapidelegatecredentials",
	"gssapikexalgorithms", "gssapikeyexchange", "gssapirenewalforcesrekey",
	"gssapiserveridentity", "gssapitrustdns", "hashknownhosts", "host",
	"hostbasedacceptedalgorithms", "hostbasedauthentication", "hostbasedkeytypes",
	"hostkeyalgorithms", "hostkeyalias", "hostname", "identitiesonly", "identityagent",
	"identityfile", "identityfile2", "ignoreunknown", "include", "ipqos",
	"kbdinteractiveauthentication", "kbdinteractivedevices", "keepalive",
	"kerberosauthentication", "kerberostgtpassing", "kexalgorithms", "knownhostscommand",
	"localcommand", "localforward", "loglevel", "logverbose", "macs", "match",
	"nohostauthenticationforlocalhost", "numberofpasswordprompts", "obscurekeystroketiming",
	"passwordauthentication", "permitlocalcommand", "permitremoteopen", "pkcs11provider",
	"port", "preferredauthentications", "protocol", "protocolkeepalives", "proxycommand",
	"proxyjump", "proxyusefdpass", "pubkeyacceptedalgorithms", "pubkeyacceptedkeytypes",
	"pubkeyauthentication", "refuseconnection", "rekeylimit", "remotecommand",
	"remoteforward", "requesttty", "requiredrsasize", "revokedhostkeys",
	"rhostsauthentication", "rhostsrsaauthentication", "rsaauthentication",
	"securitykeyprovider", "sendenv", "serveralivecountmax", "serveraliveinterval",
	"sessiontype", "setenv", "setuptimeout", "skeyauthentication", "smartcarddevice",
	"stdinnull", "streamlocalbindmask", "streamlocalbindunlink", "stricthostkeychecking",
	"syslogfacility", "tag", "tcpkeepalive", "tisauthentication", "tunnel", "tunneldevice",
	"updatehostkeys", "usekeychain", "useprivilegedport", "user", "userknownhostsfile",
	"userknownhostsfile2", "useroaming", "usersh", "verifyhostkeydns", "versionaddendum",
	"visualhostkey", "warnweakcrypto", "xauthlocation",
};

static bool known_keyword(const char *kw)
{
	for (size_t i = 0; i < sizeof(ssh_keywords) / sizeof(ssh_keywords[0]); i++)
		if (strcmp(kw, ssh_keywords[i]) == 0)
			return true;
	return false;
}

static void lowercase(char *s)
{
	for (; *s; s++)
		*s = (char)tolower((unsigned char)*s);
}

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
		if (*pattern != '?' && *pattern != *s)
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

int sshcfg_match_list(const char *s, const char *list, bool dolower)
{
	char sub[1024];
	bool got_positive = false;
	size_t len = strlen(list), i = 0;
	while (i < len) {
		bool negated = list[i] == '!';
		if (negated)
			i++;
		size_t subi = 0;
		for (; i < len && subi < sizeof(sub) - 1 && list[i] != ','; subi++, i++)
			sub[subi] = dolower ? (char)tolower((unsigned char)list[i]) : list[i];
		/* As ssh: a sub-pattern too long matches nothing at all. */
		if (subi >= sizeof(sub) - 1)
			return 0;
		if (i < len && list[i] == ',')
			i++;
		sub[subi] = '\0';
		if (sshcfg_match_pattern(sub, s)) {
			if (negated)
				return -1;
			got_positive = true;
		}
	}
	return got_positive ? 1 : 0;
}

/* ssh's match_hostname(): both sides lowercased. */
static bool match_hostname(const char *host, const char *list)
{
	char *h = xstrdup(host);
	lowercase(h);
	int r = sshcfg_match_list(h, list, true);
	free(h);
	return r == 1;
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
		for (; *p; p++) {
			if (*p == '\\') {
				if (p[1] == '\'' || p[1] == '"' || p[1] == '\\' ||
				    (!quote && p[1] == ' '))
					p++;
				/* else an unrecognised escape: the backslash stays */
				strbuf_addch(&cur, *p);
			} else if (!quote && (*p == ' ' || *p == '\t')) {
				break;
			} else if (!quote && (*p == '"' || *p == '\'')) {
				quote = *p;
			} else if (quote && *p == quote) {
				quote = 0;
			} else {
				strbuf_addch(&cur, *p);
			}
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

/* ssh's strdelim(): the next token of *s, which ends at a blank, at a '"'
 * quoted part, or at one '='. Modifies the string. NULL at the end, or on
 * an unmatched quote. */
static char *strdelim(char **s)
{
	if (*s == NULL)
		return NULL;
	char *old = *s;
	*s = strpbrk(*s, WS "\"=");
	if (*s == NULL)
		return old;
	if ((*s)[0] == '"') {
		memmove(*s, *s + 1, strlen(*s));
		if ((*s = strpbrk(*s, "\"")) == NULL)
			return NULL;
		(*s)[0] = '\0';
		*s += strspn(*s + 1, WS) + 1;
		return old;
	}
	bool wspace = (*s)[0] == '=';
	(*s)[0] = '\0';
	*s += strspn(*s + 1, WS) + 1;
	if ((*s)[0] == '=' && !wspace)
		*s += strspn(*s + 1, WS) + 1;
	return old;
}

/* ssh's a2port(): 0-65535 as strtonum() reads it, else a service name. */
static int a2port(const char *s)
{
	char *end = NULL;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (end != s && *end == '\0' && errno == 0)
		return v >= 0 && v <= 65535 ? (int)v : -1;
	struct servent *se = getservbyname(s, "tcp");
	return se ? ntohs((unsigned short)se->s_port) : -1;
}

/* ssh's convtime(): "30", "30s", "1m30s"... -1 when malformed. */
static long convtime(const char *s)
{
	long total = 0;
	const char *p = s;
	if (*p == '\0')
		return -1;
	while (*p) {
		char *endp;
		errno = 0;
		long secs = strtol(p, &endp, 10);
		if (p == endp || errno == ERANGE || secs < 0)
			return -1;
		long mul = 1;
		switch (*endp++) {
		case '\0': endp--; break;
		case 's': case 'S': break;
		case 'm': case 'M': mul = 60; break;
		case 'h': case 'H': mul = 3600; break;
		case 'd': case 'D': mul = 86400; break;
		case 'w': case 'W': mul = 604800; break;
		default: return -1;
		}
		if (secs > INT_MAX / mul)
			return -1;
		secs *= mul;
		if (total > INT_MAX - secs)
			return -1;
		total += secs;
		p = endp;
	}
	return total;
}

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
		case '\0':
			rc = bg_fail(err, BG_ECONFIG, "a '%%' ends the value");
			goto out;
		default:
			rc = bg_fail(err, BG_ECONFIG, "unknown token '%%%c'", *s);
			goto out;
		}
	}
	*out = strbuf_detach(&sb);
out:
	strbuf_release(&sb);
	free(tilded);
	return rc;
}

/* ssh_config options that change which host keys ssh accepts or how it
 * records them; boxgate checks known_hosts files only, so any value but the
 * harmless one refuses the box by name rather than differ from ssh. */
static const struct {
	const char *kw, *name, *harmless;
} hostkey_opts[] = {
	{ "revokedhostkeys", "RevokedHostKeys", "none" },
	{ "knownhostscommand", "KnownHostsCommand", "none" },
	{ "hashknownhosts", "HashKnownHosts", "no" },
	{ "checkhostip", "CheckHostIP", "no" },
	{ "verifyhostkeydns", "VerifyHostKeyDNS", "no" },
};

#define N_HOSTKEY_OPTS ((int)(sizeof(hostkey_opts) / sizeof(hostkey_opts[0])))

static int hostkey_opt(const char *kw)
{
	for (int i = 0; i < N_HOSTKEY_OPTS; i++)
		if (strcmp(kw, hostkey_opts[i].kw) == 0)
			return i;
	return -1;
}

/* The state of one lookup: readconf.c's Options, for what boxgate reads. */
typedef struct lookup {
	const sshcfg_query *q;
	const char *host; /* this pass's host: the argument, then the resolved name */
	bool final_pass;
	bool want_final; /* a Match line said `final` (first pass) */
	sshcfg_host *out;
	const char *local_user; /* passwd name */
	char *hostname_at;
	size_t cap_ident;
	char *jump_host, *jump_at;
	char *proxy_command, *proxy_at;
	int canonicalize; /* -1 unset, 0 no, 1 yes or always */
	char *canonicalize_at;
	char *host_key_alias_at;
	/* Host-key options that change what ssh accepts or records: the first
	 * value of each, and where a value boxgate cannot honour was set. */
	bool hostkey_opt_set[N_HOSTKEY_OPTS];
	char *hostkey_opt_at;
	const char *hostkey_opt_name;
	char *ignore_unknown;
	bg_err *err;
} lookup;

static char *at(const char *file, int line)
{
	return xasprintf("%s:%d", file, line);
}

static void refuse_at(lookup *lk, const char *what, const char *where)
{
	if (!lk->out->unsupported)
		lk->out->unsupported = xasprintf("%s (%s)", what, where);
}

static void refuse(lookup *lk, const char *what, const char *file, int line)
{
	char *where = at(file, line);
	refuse_at(lk, what, where);
	free(where);
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
static int path_tokens(lookup *lk, const char *file, int lineno, const char *kw, const char *v)
{
	char which = 0;
	int e = check_tokens(v, &which);
	if (e < 0)
		return bg_fail(lk->err, BG_ECONFIG, "%s:%d: %s: unknown token '%%%c'", file, lineno, kw,
			       which ? which : ' ');
	if (e > 0) {
		char *what = xasprintf("%%%c in %s", which, kw);
		refuse(lk, what, file, lineno);
		free(what);
	}
	return e > 0;
}

/* HostName's %h (and %%), as ssh.c expands it. */
static int expand_hostname(lookup *lk, const char *hostname, const char *h, char **out)
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
		return bg_fail(lk->err, BG_ECONFIG, "%s: HostName accepts only %%h and %%%%, got '%%%s'",
			       lk->hostname_at, *s ? (char[]){ *s, '\0' } : "");
	}
	*out = strbuf_detach(&sb);
	return 0;
}

static int parse_file(lookup *lk, const char *path, int depth, bool *active, bool nevermatch,
		      bool top);

static int do_include(lookup *lk, const char *file, int line, char *const *args, size_t n,
		      int depth, bool *active, bool nevermatch)
{
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (args[i][0] == '\0')
			return bg_fail(lk->err, BG_ECONFIG, "%s:%d: Include: an empty argument", file, line);
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
			rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: Include: glob failed for %s", file, line,
				     pat);
		bool oactive = *active;
		for (size_t j = 0; gr == 0 && j < g.gl_pathc && rc == 0; j++) {
			if (depth + 1 > SSHCFG_MAX_DEPTH)
				rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: Include nested more than %d deep",
					     file, line, SSHCFG_MAX_DEPTH);
			else
				rc = parse_file(lk, g.gl_pathv[j], depth + 1, active,
						nevermatch || !oactive, false);
			/* A Match inside an included file does not leak out. */
			*active = oactive;
		}
		globfree(&g);
		free(pat);
	}
	return rc;
}

/* match_cfg_line(): 1 matched, 0 not, <0 an error (set). `cp` is the rest
 * of the line after "Match", modified. */
static int match_line(lookup *lk, char *cp, const char *file, int line, bool nevermatch,
		      bool *consumed)
{
	int rc = 0, result = 1, attributes = 0;
	bool exec_undecided = false;
	char *host;
	if (lk->final_pass) {
		host = xstrdup(lk->out->hostname);
	} else if (lk->out->hostname) {
		rc = expand_hostname(lk, lk->out->hostname, lk->host, &host);
		if (rc)
			return rc;
	} else {
		host = xstrdup(lk->host);
	}
	const char *ruser = lk->q->user        ? lk->q->user
			    : lk->out->user     ? lk->out->user
			    : lk->q->default_user ? lk->q->default_user
						  : lk->local_user;
	char *attrib;
	while ((attrib = strdelim(&cp)) != NULL && *attrib != '\0') {
		if (*attrib == '#') {
			cp = NULL;
			break;
		}
		const char *oattrib = attrib;
		bool negate = attrib[0] == '!';
		if (negate)
			attrib++;
		char *arg;
		if (strcasecmp(attrib, "all") == 0) {
			if (attributes > 1 ||
			    ((arg = strdelim(&cp)) != NULL && *arg != '\0' && *arg != '#')) {
				rc = bg_fail(lk->err, BG_ECONFIG,
					     "%s:%d: Match '%s' cannot be combined with other criteria", file,
					     line, oattrib);
				goto out;
			}
			if (arg != NULL && *arg == '#')
				cp = NULL;
			if (result)
				result = negate ? 0 : 1;
			goto done;
		}
		attributes++;
		if (strcasecmp(attrib, "canonical") == 0 || strcasecmp(attrib, "final") == 0) {
			if (strcasecmp(attrib, "final") == 0 && !lk->final_pass)
				lk->want_final = true;
			if (lk->final_pass == negate)
				result = 0;
			continue;
		}
		bool known = strcasecmp(attrib, "host") == 0 || strcasecmp(attrib, "originalhost") == 0 ||
			     strcasecmp(attrib, "user") == 0 || strcasecmp(attrib, "localuser") == 0 ||
			     strcasecmp(attrib, "exec") == 0;
		if (!known) {
			/* Unknown to ssh 9.2 (a newer ssh's tagged, localnetwork,
			 * version, sessiontype, command...): boxgate cannot tell. */
			char *what = xasprintf("Match %s", attrib);
			refuse(lk, what, file, line);
			free(what);
			result = 0;
			cp = NULL;
			goto done;
		}
		if ((arg = strdelim(&cp)) == NULL || *arg == '\0' || *arg == '#') {
			rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: Match %s needs an argument", file, line,
				     attrib);
			goto out;
		}
		bool r;
		if (strcasecmp(attrib, "host") == 0) {
			r = match_hostname(host, arg);
		} else if (strcasecmp(attrib, "originalhost") == 0) {
			r = match_hostname(lk->q->host, arg);
		} else if (strcasecmp(attrib, "user") == 0) {
			r = sshcfg_match_list(ruser, arg, false) == 1;
		} else if (strcasecmp(attrib, "localuser") == 0) {
			r = sshcfg_match_list(lk->local_user, arg, false) == 1;
		} else {
			/* exec: ssh expands the command even when it will not run it. */
			for (const char *s = arg; *s; s++) {
				if (*s != '%')
					continue;
				s++;
				if (!*s || !strchr("%CLdhklnprui", *s)) {
					rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: Match exec: unknown token '%%%s'",
						     file, line, *s ? (char[]){ *s, '\0' } : "");
					goto out;
				}
			}
			/* Not run (see sshconfig.h): when its result decides the
			 * line, the box is refused below. */
			if (result == 1)
				exec_undecided = true;
			continue;
		}
		if (r == negate)
			result = 0;
	}
	if (attributes == 0) {
		rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: Match needs one or more criteria", file, line);
		goto out;
	}
done:
	if (exec_undecided && result == 1 && !nevermatch) {
		refuse(lk, "Match exec", file, line);
		result = 0;
	}
	*consumed = cp == NULL || *cp == '\0';
	rc = result;
out:
	free(host);
	return rc;
}

/* Keywords that take exactly one argument, where a second one is an error. */
static int one_arg(lookup *lk, const char *file, int line, const char *kw, char **args,
		   size_t nargs)
{
	if (nargs == 0)
		return bg_fail(lk->err, BG_ECONFIG, "%s:%d: %s: missing argument", file, line, kw);
	const char *args0 = args[0];
	if (nargs > 1)
		return bg_fail(lk->err, BG_ECONFIG, "%s:%d: %s: extra arguments at end of line", file,
			       line, kw);
	if (args0[0] == '\0')
		return bg_fail(lk->err, BG_ECONFIG, "%s:%d: %s: missing argument", file, line, kw);
	return 0;
}

static int hosts_files(lookup *lk, const char *file, int line, const char *kw, char **args,
		       size_t nargs, bool active, char ***list, size_t *n, bool *set)
{
	bool empty = *n == 0 && !*set;
	for (size_t i = 0; i < nargs; i++) {
		if (args[i][0] == '\0')
			return bg_fail(lk->err, BG_ECONFIG, "%s:%d: %s: an empty argument", file, line, kw);
		if (strcasecmp(args[i], "none") == 0 && nargs > 1)
			return bg_fail(lk->err, BG_ECONFIG, "%s:%d: %s: \"none\" must appear alone", file,
				       line, kw);
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
static int process_line(lookup *lk, const char *file, int lineno, const char *text, int depth,
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
	char *kw = strdelim(&str);
	if (kw && *kw == '\0')
		kw = strdelim(&str);
	if (!kw || !*kw || *kw == '#')
		goto out;
	lowercase(kw);
	if (str)
		str += strspn(str, WS);
	if (!str || !*str) {
		rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: no argument after keyword \"%s\"", file, lineno,
			     kw);
		goto out;
	}
	if (!known_keyword(kw)) {
		if (lk->ignore_unknown && sshcfg_match_list(kw, lk->ignore_unknown, true) == 1)
			goto out;
		rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: Bad configuration option: %s", file, lineno, kw);
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
				rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: Host: an empty argument", file, lineno);
				goto out;
			}
		if (!nevermatch)
			*active = sshcfg_match_host(args, nargs, lk->host);
	} else if (strcmp(kw, "match") == 0) {
		bool consumed = true;
		rc = match_line(lk, str, file, lineno, nevermatch, &consumed);
		if (rc < 0)
			goto out;
		*active = !nevermatch && rc == 1;
		rc = 0;
		if (!consumed)
			rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: match: extra arguments at end of line",
				     file, lineno);
	} else if (strcmp(kw, "include") == 0) {
		rc = do_include(lk, file, lineno, args, nargs, depth, active, nevermatch);
	} else if (strcmp(kw, "ignoreunknown") == 0) {
		if ((rc = one_arg(lk, file, lineno, "IgnoreUnknown", args, nargs)) == 0 && *active &&
		    !lk->ignore_unknown)
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
		bool taken = jump ? lk->jump_host || lk->proxy_command : lk->proxy_command || jump_blocks;
		if (*active && !taken) {
			if (jump) {
				lk->jump_host = v;
				lk->jump_at = at(file, lineno);
				if (strcasecmp(v, "none") != 0)
					lk->proxy_command = xstrdup("none");
				v = NULL;
			} else {
				lk->proxy_command = v;
				lk->proxy_at = at(file, lineno);
				v = NULL;
			}
		}
		free(v);
	} else if (strcmp(kw, "hostname") == 0) {
		if ((rc = one_arg(lk, file, lineno, "HostName", args, nargs)) == 0 && *active && !o->hostname) {
			o->hostname = xstrdup(a);
			o->hostname_set = true;
			lk->hostname_at = at(file, lineno);
		}
	} else if (strcmp(kw, "user") == 0) {
		if ((rc = one_arg(lk, file, lineno, "User", args, nargs)) == 0 && *active && !lk->q->user &&
		    !o->user)
			o->user = xstrdup(a);
	} else if (hostkey_opt(kw) >= 0) {
		int i = hostkey_opt(kw);
		if (nargs && *active && !lk->hostkey_opt_set[i]) {
			lk->hostkey_opt_set[i] = true;
			bool harmless = strcasecmp(a, hostkey_opts[i].harmless) == 0 ||
					(strcmp(hostkey_opts[i].harmless, "no") == 0 && strcasecmp(a, "false") == 0);
			if (!harmless && !lk->hostkey_opt_at) {
				lk->hostkey_opt_at = at(file, lineno);
				lk->hostkey_opt_name = hostkey_opts[i].name;
			}
		}
	} else if (strcmp(kw, "hostkeyalias") == 0) {
		if ((rc = one_arg(lk, file, lineno, "HostKeyAlias", args, nargs)) == 0 && *active &&
		    !lk->host_key_alias_at)
			lk->host_key_alias_at = at(file, lineno);
	} else if (strcmp(kw, "port") == 0) {
		if ((rc = one_arg(lk, file, lineno, "Port", args, nargs)) != 0)
			goto out;
		int v = a2port(a);
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
		if (strcmp(a, "none") != 0 && (v = convtime(a)) < 0) {
			rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: ConnectTimeout: invalid time value '%s'",
				     file, lineno, a);
			goto out;
		}
		/* `none` leaves it unset: a later line still sets it, as in ssh. */
		if (*active && o->connect_timeout_s == -1 && v >= 0) {
			o->connect_timeout_s = (int)v;
			free(o->connect_timeout_at);
			o->connect_timeout_at = at(file, lineno);
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
			rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: CanonicalizeHostname: unsupported option \"%s\"",
				     file, lineno, a);
			goto out;
		}
		if (*active && lk->canonicalize == -1 && !lk->final_pass) {
			lk->canonicalize = v;
			lk->canonicalize_at = at(file, lineno);
		}
	} else if (strcmp(kw, "identityfile") == 0) {
		if ((rc = one_arg(lk, file, lineno, "IdentityFile", args, nargs)) != 0 || !*active)
			goto out;
		if (o->n_identities >= SSHCFG_MAX_IDENTITIES) {
			rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: more than %d IdentityFile", file, lineno,
				     SSHCFG_MAX_IDENTITIES);
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
		o->identities_at[o->n_identities] = at(file, lineno);
		o->identities[o->n_identities++] = xstrdup(a);
	} else if (strcmp(kw, "userknownhostsfile") == 0) {
		bool set = o->n_known_hosts > 0;
		bool was = set;
		rc = hosts_files(lk, file, lineno, "UserKnownHostsFile", args, nargs, *active,
				 &o->known_hosts, &o->n_known_hosts, &set);
		if (rc == 0 && set && !was) {
			o->known_hosts_at = at(file, lineno);
			for (size_t i = 0; i < o->n_known_hosts; i++) {
				int e = path_tokens(lk, file, lineno, "UserKnownHostsFile", o->known_hosts[i]);
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

static int parse_file(lookup *lk, const char *path, int depth, bool *active, bool nevermatch,
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

/* ssh.c's is_addr(). */
static bool is_addr(const char *name)
{
	if (strchr(name, '%') || strchr(name, ':') || strspn(name, "0123456789.") == strlen(name))
		return true;
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	if (getaddrinfo(name, "22", &hints, &res) != 0)
		return false;
	bool one = res && !res->ai_next;
	freeaddrinfo(res);
	return one;
}

/* ssh.c's resolve_addr() as resolve_canonicalize() uses it for an address:
 * the numeric form getnameinfo() gives, or NULL. No name lookup. */
static char *canonical_addr(const char *name)
{
	struct addrinfo hints, *res = NULL;
	char addr[NI_MAXHOST];
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	if (getaddrinfo(name, "22", &hints, &res) != 0 || !res)
		return NULL;
	char *out = NULL;
	if (!res->ai_next &&
	    getnameinfo(res->ai_addr, res->ai_addrlen, addr, sizeof(addr), NULL, 0, NI_NUMERICHOST) == 0)
		out = xstrdup(addr);
	freeaddrinfo(res);
	return out;
}

static int run_pass(lookup *lk, const char *path)
{
	bool active = true;
	return parse_file(lk, path, 0, &active, false, true);
}

int sshcfg_resolve(const char *path, const sshcfg_query *q, sshcfg_host *out, bg_err *err)
{
	int rc = 0;
	char *host = NULL;
	memset(out, 0, sizeof(*out));
	out->connect_timeout_s = -1;
	struct passwd *pw = getpwuid(getuid());
	char *local_user = xstrdup(pw && pw->pw_name ? pw->pw_name : "unknown");
	lookup lk;
	memset(&lk, 0, sizeof(lk));
	lk.q = q;
	lk.host = q->host;
	lk.out = out;
	lk.local_user = local_user;
	lk.canonicalize = -1;
	lk.err = err;

	rc = run_pass(&lk, path);
	if (rc)
		goto out;
	/* ssh.c main(): HostName with %h, then lowercase (an address is
	 * normalised instead), then the final pass when one was asked for. */
	if (out->hostname) {
		rc = expand_hostname(&lk, out->hostname, q->host, &host);
		if (rc)
			goto out;
	} else {
		host = xstrdup(q->host);
	}
	if (is_addr(host)) {
		char *c = canonical_addr(host);
		if (c && strcasecmp(c, host) != 0) {
			free(host);
			host = c;
			c = NULL;
		}
		free(c);
	} else {
		lowercase(host);
	}
	if (lk.want_final) {
		free(out->hostname);
		out->hostname = xstrdup(host);
		lk.host = host;
		lk.final_pass = true;
		rc = run_pass(&lk, path);
		if (rc)
			goto out;
	}
	free(out->hostname);
	out->hostname = host;
	host = NULL;

	if (lk.canonicalize == 1)
		refuse_at(&lk, "CanonicalizeHostname", lk.canonicalize_at);
	if (lk.host_key_alias_at)
		refuse_at(&lk, "HostKeyAlias", lk.host_key_alias_at);
	if (lk.hostkey_opt_at)
		refuse_at(&lk, lk.hostkey_opt_name, lk.hostkey_opt_at);
	if (lk.jump_host && strcasecmp(lk.jump_host, "none") != 0)
		refuse_at(&lk, "ProxyJump", lk.jump_at);
	else if (lk.proxy_command && strcasecmp(lk.proxy_command, "none") != 0)
		refuse_at(&lk, "ProxyCommand", lk.proxy_at);
out:
	free(host);
	free(local_user);
	free(lk.hostname_at);
	free(lk.jump_host);
	free(lk.jump_at);
	free(lk.proxy_command);
	free(lk.proxy_at);
	free(lk.canonicalize_at);
	free(lk.host_key_alias_at);
	free(lk.hostkey_opt_at);
	free(lk.ignore_unknown);
	if (rc)
		sshcfg_host_release(out);
	return rc;
}

int sshcfg_lookup(const char *path, const char *host, const char *home, sshcfg_host *out,
		  bg_err *err)
{
	sshcfg_query q = { host, NULL, 0, NULL, home ? home : "/" };
	return sshcfg_resolve(path, &q, out, err);
}

void sshcfg_host_release(sshcfg_host *h)
{
	if (!h)
		return;
	free(h->hostname);
	free(h->user);
	conf_strv_free(h->identities, h->n_identities);
	conf_strv_free(h->identities_at, h->n_identities);
	conf_strv_free(h->known_hosts, h->n_known_hosts);
	free(h->known_hosts_at);
	conf_strv_free(h->global_known_hosts, h->n_global_known_hosts);
	free(h->connect_timeout_at);
	free(h->unsupported);
	memset(h, 0, sizeof(*h));
	h->connect_timeout_s = -1;
}
