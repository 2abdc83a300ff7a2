/* known_hosts as OpenSSH reads it (hostfile.c, match.c, sshkey.c of
 * OpenSSH 9.2): host patterns, hashed names, markers, key lines, and the
 * verdict for one offered host key. Pure: no libssh2, no network; only
 * OpenSSL for HMAC-SHA1 and EC points. remote/knownhosts.c applies it to a
 * connection. */
#ifndef BG_REMOTE_HOSTFILE_H
#define BG_REMOTE_HOSTFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

/* ---- host patterns (match.c) ---- */

/* `*` and `?` wildcards, case-sensitive (match_pattern). */
bool remote_hostfile_match_pattern(const char *s, const char *pattern);
/* A comma list of patterns against a host name, both lowercased, as
 * match_hostname: 1 when a pattern matches, -1 when a negated pattern
 * (`!pat`) matches (the whole list then does not apply), 0 otherwise. */
int remote_hostfile_match_list(const char *host, const char *list);
/* A hashed name `|1|base64(salt)|base64(HMAC-SHA1(salt, host))`: 1 when it
 * is `host`'s, 0 when not, -1 when it is not a well-formed hashed name. */
int remote_hostfile_match_hashed(const char *host, const char *hashed);
/* The host field of a known_hosts line (hashed or a pattern list), as
 * match_maybe_hashed: 1 match, 0 no match, -1 malformed hashed name. */
int remote_hostfile_match_names(const char *host, const char *names);
/* The name OpenSSH looks up and records: `host` on port 22 (or 0),
 * `[host]:port` otherwise (put_host_port). Owned by the caller. */
char *remote_hostfile_host_port(const char *host, int port);
/* `|1|salt|hash` for `host` with the given 20-byte salt (HashKnownHosts).
 * Owned by the caller. */
char *remote_hostfile_hash_name(const char *host, const unsigned char salt[20]);

/* ---- keys ---- */

/* A public key as OpenSSH compares keys: its key type (as sshkey's
 * key->type, ECDSA curves apart) and the blob. */
typedef struct remote_hostkey {
	int type;            /* index into the key type table, -1 unknown */
	unsigned char *blob; /* the SSH wire blob, owned */
	size_t len;
} remote_hostkey;

/* Parses a wire blob (what the server sends, or a decoded known_hosts key)
 * as sshkey_fromb would: the type string, the parts each type needs, no
 * trailing bytes, EC points on their curve, RSA moduli of at least 1024
 * bits. Returns the type index or -1 with *why set. */
int remote_hostkey_parse_blob(const unsigned char *blob, size_t len, const char **why);
/* OpenSSH's short name of a type: "ED25519", "ECDSA", "RSA", "ED25519-CERT". */
const char *remote_hostkey_label(int type);
/* The key type name written in known_hosts ("ssh-ed25519", ...). */
const char *remote_hostkey_name(int type);
/* sshkey_equal: same type (and curve) and same public parts. */
bool remote_hostkey_equal(const remote_hostkey *a, const remote_hostkey *b);
/* Types 0 .. REMOTE_HOSTKEY_N_METHODS-1 are the host-key algorithms
 * libssh2 1.10 negotiates, in boxgate's preference order: ssh-ed25519,
 * ecdsa-sha2-nistp256/384/521, ssh-rsa, ssh-dss. For those *method is the
 * algorithm's name; false for every other type. */
#define REMOTE_HOSTKEY_N_METHODS 6
bool remote_hostkey_method(int type, const char **method);

/* ---- known_hosts lines and files ---- */

typedef enum {
	REMOTE_HOSTFILE_MARK_NONE,
	REMOTE_HOSTFILE_MARK_CA,     /* @cert-authority */
	REMOTE_HOSTFILE_MARK_REVOKED /* @revoked */
} remote_hostfile_marker;

typedef enum {
	REMOTE_HOSTFILE_LINE_SKIP,   /* blank or comment */
	REMOTE_HOSTFILE_LINE_KEY,    /* marker, names, key */
	REMOTE_HOSTFILE_LINE_INVALID /* what OpenSSH would skip as a parse error */
} remote_hostfile_line_kind;

typedef struct remote_hostfile_line {
	remote_hostfile_line_kind kind;
	remote_hostfile_marker marker;
	char *names;        /* the host field, pointing into the line */
	remote_hostkey key; /* LINE_KEY only; blob owned by the caller */
	const char *why;    /* LINE_INVALID: what is wrong */
} remote_hostfile_line;

/* Splits one line (its '\n' removed, a '\r' kept as OpenSSH keeps it) in
 * place and parses its key, as hostkeys_foreach_file and sshkey_read do
 * (OpenSSH parses the key only of lines whose names match; whether they
 * match is the caller's question). Free out->key.blob. */
void remote_hostfile_parse_line(char *line, remote_hostfile_line *out);
/* The line OpenSSH's accept-new appends: "name type base64\n", the name
 * lowercased (write_host_entry, HashKnownHosts no). Owned by the caller. */
char *remote_hostfile_format_entry(const char *name, const remote_hostkey *k);

/* One entry of a host's known keys. */
typedef struct remote_hostfile_entry {
	const char *file; /* borrowed from the caller's path */
	int line;
	remote_hostfile_marker marker;
	remote_hostkey key;
} remote_hostfile_entry;

/* Every entry for one host name, from every file, in reading order (user
 * files, then global files), as OpenSSH's struct hostkeys. */
typedef struct remote_hostfile_set {
	remote_hostfile_entry *e;
	size_t n, cap;
} remote_hostfile_set;

#define REMOTE_HOSTFILE_SET_INIT                                                                   \
	{                                                                                          \
		NULL, 0, 0                                                                         \
	}

/* Called for each line that cannot be parsed (any host's): "FILE:LINE" detail. */
typedef void (*remote_hostfile_warn_fn)(void *ctx, const char *path, int line, const char *why);

/* Adds the entries of `path` whose names match `host` (load_hostkeys). A
 * missing or unreadable file adds nothing, as for OpenSSH. `path` must
 * outlive the set. `warn` (may be NULL) hears of every unparsable line. */
void remote_hostfile_load(remote_hostfile_set *s, const char *host, const char *path,
			  remote_hostfile_warn_fn warn, void *ctx);
void remote_hostfile_set_release(remote_hostfile_set *s);

typedef enum {
	REMOTE_HOSTKEY_NEW,     /* no plain entry for the host */
	REMOTE_HOSTKEY_OK,      /* a plain entry holds this key */
	REMOTE_HOSTKEY_CHANGED, /* plain entries exist, none holds this key */
	REMOTE_HOSTKEY_REVOKED  /* a @revoked entry holds this key */
} remote_hostkey_status;

/* check_hostkeys_by_key_or_type for a plain key: @cert-authority entries
 * never match; any plain entry with another key (of any type) makes it
 * CHANGED unless one holds the key; a @revoked entry for the key wins over
 * everything. *found (may be NULL) is the matching entry (OK), the last
 * differing one (CHANGED), or the @revoked one (REVOKED). */
remote_hostkey_status remote_hostfile_check(const remote_hostfile_set *s, const remote_hostkey *k,
					    const remote_hostfile_entry **found);
/* The first plain entry of `type` (ECDSA curves apart) whose key is not
 * also revoked, as lookup_key_in_hostkeys_by_type; NULL when none. */
const remote_hostfile_entry *remote_hostfile_lookup_type(const remote_hostfile_set *s, int type);
/* The first entry with `marker`, NULL when none. */
const remote_hostfile_entry *remote_hostfile_find_marker(const remote_hostfile_set *s,
							 remote_hostfile_marker marker);

/* "REVOKED", "CHANGED", "UNKNOWN" or "REFUSED" for a BG_EHOSTKEY message
 * built by remote/knownhosts.c (for `boxgate check`'s table). */
const char *remote_hostkey_verdict(const char *msg);
/* The same word for a bg_err's detail (BG_DETAIL_HOSTKEY_*): what callers
 * should branch on, rather than the message. */
const char *remote_hostkey_detail_name(int detail);

#define REMOTE_HOSTKEY_REVOKED_TEXT "WARNING: REVOKED HOST KEY DETECTED!"
#define REMOTE_HOSTKEY_CHANGED_TEXT "WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!"
#define REMOTE_HOSTKEY_UNKNOWN_TEXT "is not known"

#endif
