/* A ProxyJump list as ssh reads it (ssh.c, parse_user_host_port()):
 * `[user@]host[:port]` or `ssh://[user@]host[:port]`, comma separated, an
 * IPv6 address in brackets. */
#ifndef BG_CONF_JUMPSPEC_H
#define BG_CONF_JUMPSPEC_H

#include <stddef.h>

typedef struct conf_jump_hop {
	char *user; /* NULL: not given */
	char *host;
	int port; /* 0: not given */
} conf_jump_hop;

/* Splits `spec` into hops (owned, in order: the first is the one the client
 * reaches directly). Returns 0, or -1 with `why` naming the bad hop. */
int conf_jumpspec_parse(const char *spec, conf_jump_hop **hops, size_t *n, char *why,
			size_t why_len);
void conf_jumpspec_free(conf_jump_hop *hops, size_t n);

#endif
