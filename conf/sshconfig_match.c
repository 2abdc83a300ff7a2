/* Which blocks apply: ssh's match.c patterns (Host lines, pattern lists)
 * and readconf.c's match_cfg_line() for Match lines. */
#include "conf/sshconfig_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/xmalloc.h"

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

/* ssh's sshcfg_match_hostname(): both sides lowercased. */
bool sshcfg_match_hostname(const char *host, const char *list)
{
	char *h = xstrdup(host);
	sshcfg_lowercase(h);
	int r = sshcfg_match_list(h, list, true);
	free(h);
	return r == 1;
}

/* match_cfg_line(): 1 matched, 0 not, <0 an error (set). `cp` is the rest
 * of the line after "Match", modified. */
int sshcfg_match_line(sshcfg_state *lk, char *cp, const char *file, int line, bool nevermatch,
		      bool *consumed)
{
	int rc = 0, result = 1, attributes = 0;
	bool exec_undecided = false;
	char *host;
	if (lk->final_pass) {
		host = xstrdup(lk->out->hostname);
	} else if (lk->out->hostname) {
		rc = sshcfg_expand_hostname(lk->out->hostname, lk->host, lk->hostname_at, &host,
					    lk->err);
		if (rc)
			return rc;
	} else {
		host = xstrdup(lk->host);
	}
	const char *ruser = lk->q->user           ? lk->q->user
			    : lk->out->user       ? lk->out->user
			    : lk->q->default_user ? lk->q->default_user
						  : lk->local_user;
	char *attrib;
	while ((attrib = sshcfg_strdelim(&cp)) != NULL && *attrib != '\0') {
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
			    ((arg = sshcfg_strdelim(&cp)) != NULL && *arg != '\0' && *arg != '#')) {
				rc = bg_fail(
					lk->err, BG_ECONFIG,
					"%s:%d: Match '%s' cannot be combined with other criteria",
					file, line, oattrib);
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
		bool known = strcasecmp(attrib, "host") == 0 ||
			     strcasecmp(attrib, "originalhost") == 0 ||
			     strcasecmp(attrib, "user") == 0 ||
			     strcasecmp(attrib, "localuser") == 0 ||
			     strcasecmp(attrib, "exec") == 0;
		if (!known) {
			/* Unknown to ssh 9.2 (a newer ssh's tagged, localnetwork,
			 * version, sessiontype, command...): boxgate cannot tell. */
			char *what = xasprintf("Match %s", attrib);
			sshcfg_refuse(lk, what, file, line);
			free(what);
			result = 0;
			cp = NULL;
			goto done;
		}
		if ((arg = sshcfg_strdelim(&cp)) == NULL || *arg == '\0' || *arg == '#') {
			rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: Match %s needs an argument", file,
				     line, attrib);
			goto out;
		}
		bool r;
		if (strcasecmp(attrib, "host") == 0) {
			r = sshcfg_match_hostname(host, arg);
		} else if (strcasecmp(attrib, "originalhost") == 0) {
			r = sshcfg_match_hostname(lk->q->host, arg);
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
					rc = bg_fail(lk->err, BG_ECONFIG,
						     "%s:%d: Match exec: unknown token '%%%s'",
						     file, line, *s ? (char[]){*s, '\0'} : "");
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
		rc = bg_fail(lk->err, BG_ECONFIG, "%s:%d: Match needs one or more criteria", file,
			     line);
		goto out;
	}
done:
	if (exec_undecided && result == 1 && !nevermatch) {
		sshcfg_refuse(lk, "Match exec", file, line);
		result = 0;
	}
	*consumed = cp == NULL || *cp == '\0';
	rc = result;
out:
	free(host);
	return rc;
}
