/* ProxyJump lists: see jumpspec.h. */
#include "conf/jumpspec.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"

/* One hop, [user@]host[:port], from s[0..len). */
static int parse_hop(const char *s, size_t len, conf_jump_hop *h, char *why, size_t why_len)
{
	char *w = xstrndup(s, len);
	char *p = w;
	memset(h, 0, sizeof(*h));
	if (strncmp(p, "ssh://", 6) == 0)
		p += 6;
	char *at = strrchr(p, '@');
	if (at) {
		*at = '\0';
		if (!*p) {
			snprintf(why, why_len, "'%.*s': an empty user", (int)len, s);
			goto bad;
		}
		/* ssh.c's valid_ruser(): no shell metacharacters, no leading '-' */
		for (const char *c = p; *c; c++)
			if (strchr("'`\";&<>|(){}\\", *c) || isspace((unsigned char)*c) ||
			    iscntrl((unsigned char)*c)) {
				snprintf(why, why_len, "'%.*s': '%c' in the user name", (int)len, s,
					 *c);
				goto bad;
			}
		if (*p == '-') {
			snprintf(why, why_len, "'%.*s': a user name starting with '-'", (int)len,
				 s);
			goto bad;
		}
		h->user = xstrdup(p);
		p = at + 1;
	}
	char *port = NULL;
	if (*p == '[') {
		char *close = strchr(p, ']');
		if (!close || (close[1] && close[1] != ':')) {
			snprintf(why, why_len, "'%.*s': an unclosed or misplaced '['", (int)len, s);
			goto bad;
		}
		*close = '\0';
		if (close[1] == ':')
			port = close + 2;
		p++;
	} else {
		char *colon = strchr(p, ':');
		if (colon) {
			*colon = '\0';
			port = colon + 1;
		}
	}
	if (!*p) {
		snprintf(why, why_len, "'%.*s': no host", (int)len, s);
		goto bad;
	}
	if (*p == '-') {
		snprintf(why, why_len, "'%.*s': a host name starting with '-'", (int)len, s);
		goto bad;
	}
	for (const char *c = p; *c; c++)
		if (isspace((unsigned char)*c) || iscntrl((unsigned char)*c) ||
		    strchr("/@'\"\\;#`$&|<>(){}", *c)) {
			snprintf(why, why_len, "'%.*s': '%c' in the host name", (int)len, s, *c);
			goto bad;
		}
	if (port) {
		char *end = NULL;
		long v = strtol(port, &end, 10);
		if (!*port || *end || v < 1 || v > 65535) {
			snprintf(why, why_len, "'%.*s': port '%s' is not 1-65535", (int)len, s,
				 port);
			goto bad;
		}
		h->port = (int)v;
	}
	h->host = xstrdup(p);
	free(w);
	return 0;
bad:
	free(h->user);
	h->user = NULL;
	free(w);
	return -1;
}

int conf_jumpspec_parse(const char *spec, conf_jump_hop **hops, size_t *n, char *why,
			size_t why_len)
{
	*hops = NULL;
	*n = 0;
	size_t cap = 0;
	const char *s = spec;
	for (;;) {
		size_t len = strcspn(s, ",");
		if (len == 0) {
			snprintf(why, why_len, "an empty hop in '%s'", spec);
			goto bad;
		}
		conf_jump_hop h;
		if (parse_hop(s, len, &h, why, why_len) < 0)
			goto bad;
		*hops = xgrow(*hops, &cap, *n + 1, sizeof(**hops));
		(*hops)[(*n)++] = h;
		if (!s[len])
			return 0;
		s += len + 1;
	}
bad:
	conf_jumpspec_free(*hops, *n);
	*hops = NULL;
	*n = 0;
	return -1;
}

void conf_jumpspec_free(conf_jump_hop *hops, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(hops[i].user);
		free(hops[i].host);
	}
	free(hops);
}
