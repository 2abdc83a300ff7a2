/* boxgate's one error table and the error context callers own.
 *
 * Library functions return 0 on success or a negative BG_E* value; the detail
 * (which box, which phase, the library's own words) goes into a bg_err the
 * caller passes in. Only cli/ prints and only main() exits. */
#ifndef BG_ERROR_H
#define BG_ERROR_H

#include <stdarg.h>
#include <stddef.h>

enum bg_error {
	BG_OK = 0,
	BG_EUSAGE = -1,       /* bad flag or argument */
	BG_ECONFIG = -2,      /* configuration file or ssh_config error */
	BG_ECONNECT = -3,     /* resolve, connect, handshake, lost connection */
	BG_EHOSTKEY = -4,     /* unknown or changed host key */
	BG_EAUTH = -5,        /* no key accepted */
	BG_ETIMEOUT = -6,     /* a deadline passed */
	BG_EIO = -7,          /* local file or pipe error */
	BG_EREMOTE = -8,      /* remote command or SFTP operation failed */
	BG_EVERIFY = -9,      /* a verifier refused a file */
	BG_EPROTO = -10,      /* the peer said something we cannot understand */
	BG_EBUSY = -11,       /* the slot is held by someone else */
	BG_EINVALID = -12,    /* a result that cannot be trusted */
	BG_ENOTFOUND = -13,   /* unknown box, pool, file */
	BG_EUNSUPPORTED = -14 /* something boxgate cannot do yet */
};

/* Finer than the code, for callers that branch on what happened instead of
 * reading the message. bg_fail() resets it to BG_DETAIL_NONE. */
enum bg_detail {
	BG_DETAIL_NONE = 0,
	/* BG_EHOSTKEY from remote_connect(): how the host key was judged. */
	BG_DETAIL_HOSTKEY_UNKNOWN, /* no key known for the host, and none recorded */
	BG_DETAIL_HOSTKEY_CHANGED, /* a different key is recorded for the host */
	BG_DETAIL_HOSTKEY_REVOKED, /* a @revoked line holds the key */
	BG_DETAIL_HOSTKEY_REFUSED  /* anything else: no key sent, a type boxgate cannot
				      check, the key could not be recorded */
};

/* Detail for the last error. `msg` is a complete sentence fragment such as
 * "b200-a: host key changed ..."; `code` repeats the returned value;
 * `detail` is a BG_DETAIL_* value. */
typedef struct bg_err {
	int code;
	int detail;
	char msg[1024];
} bg_err;

const char *bg_strerror(int code);

/* Fills `err` (which may be NULL) and returns `code`, so callers can write
 * `return bg_fail(err, BG_EIO, "%s: %s", path, strerror(errno));`. */
int bg_fail(bg_err *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Prepends "PREFIX: " to err->msg (for adding a box name on the way up). */
void bg_err_prefix(bg_err *err, const char *prefix);

#endif
