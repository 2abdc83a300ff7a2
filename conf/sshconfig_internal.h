/* Private to the ssh_config reader (conf/sshconfig*.c): the state of one
 * lookup and the pieces its files share. Nothing else includes this. */
#ifndef BG_CONF_SSHCONFIG_INTERNAL_H
#define BG_CONF_SSHCONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "conf/sshconfig.h"

/* readconf.c's limits. */
#define SSHCFG_MAX_DEPTH       16
#define SSHCFG_MAX_IDENTITIES  100
#define SSHCFG_MAX_HOSTS_FILES 32

#define WS " \t\r\n"

/* RevokedHostKeys, KnownHostsCommand, HashKnownHosts, CheckHostIP,
 * VerifyHostKeyDNS (sshconfig_read.c). */
#define SSHCFG_N_HOSTKEY_OPTS 5

/* The state of one lookup: readconf.c's Options, for what boxgate reads. */
typedef struct sshcfg_state {
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
	bool hostkey_opt_set[SSHCFG_N_HOSTKEY_OPTS];
	char *hostkey_opt_at;
	const char *hostkey_opt_name;
	char *ignore_unknown;
	bg_err *err;
} sshcfg_state;

/* ---- words (sshconfig_lex.c) ---- */

/* A keyword (lowercased) of OpenSSH's readconf.c. */
bool sshcfg_known_keyword(const char *kw);
void sshcfg_lowercase(char *s);
/* ssh's strdelim(): the next token of *s, which ends at a blank, at a '"'
 * quoted part, or at one '='. Modifies the string. NULL at the end, or on
 * an unmatched quote. */
char *sshcfg_strdelim(char **s);
/* ssh's a2port(): 0-65535, else a service name; -1 when neither. */
int sshcfg_a2port(const char *s);
/* ssh's convtime(): "30", "30s", "1m30s"... -1 when malformed. */
long sshcfg_convtime(const char *s);

/* ---- Host and Match (sshconfig_match.c) ---- */

/* ssh's match_hostname(): both sides lowercased. */
bool sshcfg_match_hostname(const char *host, const char *list);
/* match_cfg_line(): 1 matched, 0 not, <0 an error (set). `cp` is the rest
 * of the line after "Match", modified. */
int sshcfg_match_line(sshcfg_state *lk, char *cp, const char *file, int line, bool nevermatch,
		      bool *consumed);

/* ---- expansion (sshconfig_expand.c) ---- */

/* HostName's %h (and %%), as ssh.c expands it; `where` ("FILE:LINE" of the
 * HostName line) names it in an error. *out is owned. */
int sshcfg_expand_hostname(const char *hostname, const char *h, const char *where, char **out,
			   bg_err *err);

/* ---- reading (sshconfig_read.c) ---- */

/* "FILE:LINE", owned. */
char *sshcfg_at(const char *file, int line);
/* Records the first thing boxgate cannot honour, with where it was set. */
void sshcfg_refuse_at(sshcfg_state *lk, const char *what, const char *where);
void sshcfg_refuse(sshcfg_state *lk, const char *what, const char *file, int line);
/* read_config_file_depth(): every line of `path` (an Include when not `top`). */
int sshcfg_parse_file(sshcfg_state *lk, const char *path, int depth, bool *active, bool nevermatch,
		      bool top);

#endif
