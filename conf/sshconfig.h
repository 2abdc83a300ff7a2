/* ssh_config(5) read as ssh(1) (OpenSSH 9.2, readconf.c and ssh.c) reads
 * it, for the keywords boxgate honours.
 *
 * What is ported: the line syntax (keywords case-insensitive, `Key Value`
 * and `Key=Value`, quotes and backslash escapes as argv_split(), '#'
 * comments), first-obtained-value-wins, IdentityFile accumulating without
 * duplicates, Host (case-sensitive patterns, `!pat` excludes the block),
 * Match (all, host, originalhost, user, localuser, canonical, final, `!`),
 * Include (globs; relative paths under ~/.ssh; a Match inside an included
 * file does not leak out), the two passes of ssh.c (the second, "final",
 * pass happens when some Match line says `final`; it matches Host and Match
 * host against the resolved host name), HostName's %h, the lowercasing of
 * the host name (an address is normalised instead), Port service names.
 * Unknown keywords are errors, as they are to ssh, unless IgnoreUnknown
 * names them.
 *
 * ProxyJump is handed on as written (`jump`); the caller resolves its hops.
 * What boxgate cannot honour refuses the box by name, in `unsupported`:
 * ProxyCommand (not `none`), a `Match exec` whose result
 * decides a Match line, a Match criterion ssh 9.2 does not know (tagged,
 * localnetwork, ...), CanonicalizeHostname yes/always (a DNS lookup),
 * HostKeyAlias (host keys filed under another name), and %C %j %T %H in
 * IdentityFile / UserKnownHostsFile. Nothing here opens a connection. */
#ifndef BG_CONF_SSHCONFIG_H
#define BG_CONF_SSHCONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

/* What a lookup starts from: the ssh command line boxgate stands for. */
typedef struct sshcfg_query {
	const char *host; /* the host as given (the box's `host`), as ssh's argument */
	/* Set before ssh_config is read, as `ssh -l` / `ssh -p` do (the box's own
	 * keys): ssh_config's User / Port then do not count. NULL / 0 when none. */
	const char *user;
	int port;
	/* The user `Match user` sees while no User is set: [defaults] user, else
	 * the local user (NULL: the password database name, as ssh). */
	const char *default_user;
	/* $HOME: `~` in Include paths and relative Includes (~/.ssh/FILE) are
	 * read through glob(3), which takes $HOME, as ssh does. */
	const char *home;
} sshcfg_query;

/* What ssh_config says for one host. Paths are raw: `~`, %-tokens and
 * ${VAR} are expanded by sshcfg_expand() once user and port are final; the
 * %-tokens have been checked. */
typedef struct sshcfg_host {
	char *hostname;       /* the host to connect to, as `ssh -G` prints it (never NULL) */
	bool hostname_set;    /* HostName gave it */
	char *user;           /* User, NULL when not set */
	int port;             /* Port (service names resolved), 0 when not set */
	char **identities;    /* IdentityFile, in order, without duplicates */
	char **identities_at; /* "FILE:LINE" of each */
	size_t n_identities;
	char **known_hosts; /* UserKnownHostsFile paths; `none` gives "/dev/null" */
	size_t n_known_hosts;
	char *known_hosts_at;
	char **global_known_hosts; /* GlobalKnownHostsFile paths (not expanded by ssh) */
	size_t n_global_known_hosts;
	bool global_known_hosts_set; /* `GlobalKnownHostsFile none` sets an empty list */
	int connect_timeout_s; /* ConnectTimeout; 0 means "no timeout" to ssh; -1 when not set */
	char *connect_timeout_at;
	char *jump;        /* ProxyJump as written (never "none"), NULL when not set */
	char *jump_at;     /* "FILE:LINE" of it */
	char *unsupported; /* "ProxyCommand (FILE:LINE)": the first thing boxgate cannot honour */
} sshcfg_host;

/* Reads `path` for q->host as ssh does with `-F path`: both passes, the
 * host name resolved. A missing `path` sets nothing and is not an error.
 * On a line ssh would reject: BG_ECONFIG, "FILE:LINE: reason". */
int sshcfg_resolve(const char *path, const sshcfg_query *q, sshcfg_host *out, bg_err *err);
/* sshcfg_resolve() with only a host and $HOME (no box user or port). */
int sshcfg_lookup(const char *path, const char *host, const char *home, sshcfg_host *out,
		  bg_err *err);
void sshcfg_host_release(sshcfg_host *h);

/* The plain names `Host` lines of `path` declare (Include followed, patterns
 * and names that cannot be box names skipped), in order, without duplicates.
 * An owned array of owned strings (NULL when none); a missing file has none. */
char **sshcfg_host_names(const char *path, const char *home, size_t *n);

/* ssh's match_pattern(): `*` any run, `?` one character, case-sensitive. */
bool sshcfg_match_pattern(const char *pattern, const char *s);
/* A Host line's patterns: true when some pattern matches and no negated
 * (`!pat`) pattern does (case-sensitive, as ssh). */
bool sshcfg_match_host(char *const *patterns, size_t n, const char *host);
/* ssh's match_pattern_list(): a comma list with `!` negation; 1 matched,
 * 0 not, -1 a negated pattern matched. `dolower` lowercases the patterns
 * (the caller lowercases `s` when it wants a case-insensitive match). */
int sshcfg_match_list(const char *s, const char *list, bool dolower);

/* The values %-tokens stand for. */
typedef struct sshcfg_tokens {
	const char *hostname;    /* %h */
	const char *alias;       /* %n, and %k (HostKeyAlias is refused) */
	const char *local_user;  /* %u: the password database name, as ssh */
	const char *remote_user; /* %r */
	const char *home;        /* %d and `~`: the password database home, as ssh */
	int port;                /* %p */
	/* ${VAR}: the caller's value for it, NULL when unset (a NULL function:
	 * nothing is set). sshcfg_expand never reads the environment itself. */
	const char *(*getvar)(void *ctx, const char *name);
	void *getvar_ctx;
} sshcfg_tokens;

/* Expansion flags: a leading `~` / `~user` (tilde_expand_filename), ${VAR}. */
#define SSHCFG_X_TILDE  1
#define SSHCFG_X_DOLLAR 2

/* Expands %h %n %k %u %r %p %d %i %l %L %% (and, per flags, `~` and
 * ${VAR}) as ssh does. *out is owned. BG_ECONFIG naming the problem (an
 * unset variable, an unknown user, a stray %) otherwise. */
int sshcfg_expand(const char *s, const sshcfg_tokens *t, int flags, char **out, bg_err *err);

/* Splits an ssh_config argument list as ssh's argv_split() does: blanks
 * separate, '"' and '\'' quote, '\\' escapes a quote, a backslash or
 * (outside quotes) a space, '#' at the start of an argument ends the line.
 * Owned strings. Returns false on an unterminated quote. */
bool sshcfg_split_args(const char *s, char ***argv, size_t *argc);

#endif
