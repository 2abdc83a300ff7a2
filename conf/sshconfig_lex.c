/* ssh_config's words as OpenSSH 9.2 reads them: the keyword table
 * (readconf.c), and misc.c's argv_split, strdelim, a2port and convtime. */
#include "conf/sshconfig_internal.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "conf/internal.h"

/* Every keyword of OpenSSH's readconf.c keywords[] (upstream, current),
 * plus the Debian/Red Hat GSSAPI and keepalive patches and Apple's
 * UseKeychain: anything else is "Bad configuration option", as to ssh. */
static const char *const ssh_keywords[] = {
	"addkeystoagent",
	"addressfamily",
	"afstokenpassing",
	"batchmode",
	"bindaddress",
	"bindinterface",
	"canonicaldomains",
	"canonicalizefallbacklocal",
	"canonicalizehostname",
	"canonicalizemaxdots",
	"canonicalizepermittedcnames",
	"casignaturealgorithms",
	"certificatefile",
	"challengeresponseauthentication",
	"channeltimeout",
	"checkhostip",
	"cipher",
	"ciphers",
	"clearallforwardings",
	"compression",
	"compressionlevel",
	"connectionattempts",
	"connecttimeout",
	"controlmaster",
	"controlpath",
	"controlpersist",
	"dsaauthentication",
	"dynamicforward",
	"enableescapecommandline",
	"enablesshkeysign",
	"escapechar",
	"exitonforwardfailure",
	"fallbacktorsh",
	"fingerprinthash",
	"forkafterauthentication",
	"forwardagent",
	"forwardx11",
	"forwardx11timeout",
	"forwardx11trusted",
	"gatewayports",
	"globalknownhostsfile",
	"globalknownhostsfile2",
	"gssapiauthentication",
	"gssapiclientidentity",
	"gssapidelegatecredentials",
	"gssapikexalgorithms",
	"gssapikeyexchange",
	"gssapirenewalforcesrekey",
	"gssapiserveridentity",
	"gssapitrustdns",
	"hashknownhosts",
	"host",
	"hostbasedacceptedalgorithms",
	"hostbasedauthentication",
	"hostbasedkeytypes",
	"hostkeyalgorithms",
	"hostkeyalias",
	"hostname",
	"identitiesonly",
	"identityagent",
	"identityfile",
	"identityfile2",
	"ignoreunknown",
	"include",
	"ipqos",
	"kbdinteractiveauthentication",
	"kbdinteractivedevices",
	"keepalive",
	"kerberosauthentication",
	"kerberostgtpassing",
	"kexalgorithms",
	"knownhostscommand",
	"localcommand",
	"localforward",
	"loglevel",
	"logverbose",
	"macs",
	"match",
	"nohostauthenticationforlocalhost",
	"numberofpasswordprompts",
	"obscurekeystroketiming",
	"passwordauthentication",
	"permitlocalcommand",
	"permitremoteopen",
	"pkcs11provider",
	"port",
	"preferredauthentications",
	"protocol",
	"protocolkeepalives",
	"proxycommand",
	"proxyjump",
	"proxyusefdpass",
	"pubkeyacceptedalgorithms",
	"pubkeyacceptedkeytypes",
	"pubkeyauthentication",
	"refuseconnection",
	"rekeylimit",
	"remotecommand",
	"remoteforward",
	"requesttty",
	"requiredrsasize",
	"revokedhostkeys",
	"rhostsauthentication",
	"rhostsrsaauthentication",
	"rsaauthentication",
	"securitykeyprovider",
	"sendenv",
	"serveralivecountmax",
	"serveraliveinterval",
	"sessiontype",
	"setenv",
	"setuptimeout",
	"skeyauthentication",
	"smartcarddevice",
	"stdinnull",
	"streamlocalbindmask",
	"streamlocalbindunlink",
	"stricthostkeychecking",
	"syslogfacility",
	"tag",
	"tcpkeepalive",
	"tisauthentication",
	"tunnel",
	"tunneldevice",
	"updatehostkeys",
	"usekeychain",
	"useprivilegedport",
	"user",
	"userknownhostsfile",
	"userknownhostsfile2",
	"useroaming",
	"usersh",
	"verifyhostkeydns",
	"versionaddendum",
	"visualhostkey",
	"warnweakcrypto",
	"xauthlocation",
};

bool sshcfg_known_keyword(const char *kw)
{
	for (size_t i = 0; i < sizeof(ssh_keywords) / sizeof(ssh_keywords[0]); i++)
		if (strcmp(kw, ssh_keywords[i]) == 0)
			return true;
	return false;
}

void sshcfg_lowercase(char *s)
{
	for (; *s; s++)
		*s = (char)tolower((unsigned char)*s);
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

/* ssh's sshcfg_strdelim(): the next token of *s, which ends at a blank, at a '"'
 * quoted part, or at one '='. Modifies the string. NULL at the end, or on
 * an unmatched quote. */
char *sshcfg_strdelim(char **s)
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

/* ssh's sshcfg_a2port(): 0-65535 as strtonum() reads it, else a service name. */
int sshcfg_a2port(const char *s)
{
	char *end = NULL;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (end != s && *end == '\0' && errno == 0)
		return v >= 0 && v <= 65535 ? (int)v : -1;
	struct servent *se = getservbyname(s, "tcp");
	return se ? ntohs((unsigned short)se->s_port) : -1;
}

/* ssh's sshcfg_convtime(): "30", "30s", "1m30s"... -1 when malformed. */
long sshcfg_convtime(const char *s)
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
		case 's':
		case 'S': break;
		case 'm':
		case 'M': mul = 60; break;
		case 'h':
		case 'H': mul = 3600; break;
		case 'd':
		case 'D': mul = 86400; break;
		case 'w':
		case 'W': mul = 604800; break;
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

char *sshcfg_at(const char *file, int line)
{
	return xasprintf("%s:%d", file, line);
}

void sshcfg_refuse_at(sshcfg_state *lk, const char *what, const char *where)
{
	if (!lk->out->unsupported)
		lk->out->unsupported = xasprintf("%s (%s)", what, where);
}

void sshcfg_refuse(sshcfg_state *lk, const char *what, const char *file, int line)
{
	char *where = sshcfg_at(file, line);
	sshcfg_refuse_at(lk, what, where);
	free(where);
}
