/* The subset of ssh_config(5) boxgate honours, read as ssh(1) reads it.
 *
 * Host blocks (patterns with `*` and `?`, several per line, `!pat` negation
 * that excludes the block), Match blocks (never match, except `Match all`),
 * Include (globs; relative paths under ~/.ssh), keywords case-insensitive,
 * `Key Value` and `Key=Value`, quoted arguments. The first value obtained for
 * a keyword wins; IdentityFile accumulates. Other keywords are ignored,
 * except ProxyJump / ProxyCommand (not `none`), which are reported in
 * `unsupported`. Nothing here opens a connection. */
#ifndef BG_CONF_SSHCONFIG_H
#define BG_CONF_SSHCONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

/* What ssh_config says for one host. Strings are owned and raw: `~` and
 * %-escapes are not expanded yet (they depend on the final user and port,
 * see sshcfg_expand()); the escapes have been checked. */
typedef struct sshcfg_host {
	char *hostname; /* HostName */
	char *user;     /* User */
	int port;       /* Port, 0 when not set */
	char **identities; /* IdentityFile, in order */
	size_t n_identities;
	char **known_hosts;    /* UserKnownHostsFile paths, in order; "none" gives /dev/null */
	size_t n_known_hosts;
	char **global_known_hosts; /* GlobalKnownHostsFile paths */
	size_t n_global_known_hosts;
	int connect_timeout_s; /* ConnectTimeout, -1 when not set */
	char *unsupported;     /* "ProxyJump (FILE:LINE)" */
} sshcfg_host;

/* Reads `path` for `host` (the name as the user typed it; matched
 * case-insensitively). A missing file, or a missing Include, sets nothing
 * and is not an error. `home` serves `~` and relative Include paths. On a
 * malformed line: BG_ECONFIG, "FILE:LINE: reason". */
int sshcfg_lookup(const char *path, const char *host, const char *home, sshcfg_host *out,
		  bg_err *err);
void sshcfg_host_release(sshcfg_host *h);

/* ssh's wildcard match: `*` any run, `?` one character, case-insensitive. */
bool sshcfg_match_pattern(const char *pattern, const char *s);
/* A Host line's patterns: true when some pattern matches and no negated
 * (`!pat`) pattern does. */
bool sshcfg_match_host(char *const *patterns, size_t n, const char *host);

/* The values %-escapes stand for. */
typedef struct sshcfg_tokens {
	const char *hostname;    /* %h */
	const char *alias;       /* %n: the host as given */
	const char *local_user;  /* %u */
	const char *remote_user; /* %r */
	const char *home;        /* %d, and ~ */
	int port;                /* %p */
} sshcfg_tokens;

/* Expands a leading `~` (when `tilde`) and %h %n %u %r %p %d %i %l %L %%.
 * Owned result. */
char *sshcfg_expand(const char *s, const sshcfg_tokens *t, bool tilde);

/* Splits an ssh_config argument list as ssh does: blanks separate, '"' and
 * '\'' quote, '\\' escapes a quote, blank or backslash, '#' starts a
 * comment. Owned strings. Returns false on an unterminated quote. */
bool sshcfg_split_args(const char *s, char ***argv, size_t *argc);

#endif
