/* What sync/ shares inside itself: the remote scripts and their protocol. */
#ifndef BG_SYNC_INTERNAL_H
#define BG_SYNC_INTERNAL_H

#include "base/strbuf.h"
#include "sync/sync.h"

/* A remote command stays well under Linux's 128 KiB limit for one argument
 * (sshd hands the whole command to the shell as one). */
#define SYNC_SCRIPT_MAX (96 * 1024)

/* The embedded sync/sh/ scripts, NULL-terminated (for tests). */
extern const char *const sync_sh_sources[];

/* Every script prints its results as lines "@NONCE WORD ..." on stdout; the
 * nonce is random per connection, so no file name or verifier output can
 * forge a result line. */

typedef struct sync_probe_opts {
	const char *repo;  /* as configured ("~/x" allowed) */
	const char *nonce;
	bool lock;         /* take the push lock (flock on the repo directory) */
	int lock_wait_s;   /* wait for it this long; 0: do not wait */
	bool fail_busy;    /* stop when another push holds it */
	bool clean;        /* remove stale temporary files when the lock is ours */
	bool stats;        /* report mode and size of every regular target */
	bool hold;         /* keep the lock until stdin ends (the push ends) */
} sync_probe_opts;

/* Probe for plan items idx[0..n): type, .bak, parent, writability, stale
 * temporary files (removed when asked), SHA-256. Lines:
 *   repo PATH | norepo | lock o|b|n
 *   f I TYPE BAKTYPE PARENT(i|o|e) WRITABLE(0|1) DIREXISTS(0|1)
 *   t I r|k HEX.tmp          (r: removed, k: kept)
 *   stats K + K lines "MODE SIZE"      (regular targets, in order)
 *   hashes K + K lines of sha256sum    (regular targets below SYNC_BIG_FILE)
 *   H I HASH... | S I SIZE   (big targets: hash, or the differing size)
 *   end
 * With `hold`, the shell then runs each script sent on its stdin up to a
 * line "@NONCE go", answering "done" after each, until stdin ends. */
char *sync_script_probe(const sync_probe_opts *o, const sync_plan *p, const size_t *idx, size_t n);
/* Lists targets with a .bak or a temporary file beside them (NUL-separated
 * find output between "scan" and "end"). */
char *sync_script_scan(const char *repo, const char *nonce);

/* Hashes TEMP (relative to the repo) with the box's python as it is being
 * written, until SIZE bytes were read: prints the SHA-256 as 64 hex digits.
 * Gives up when its stdin ends (the client went away) or the file stops
 * growing for a minute. */
char *sync_script_follow(const char *repo, const char *python, const char *temp, uint64_t size);

enum {
	SYNC_DO_VERIFY = 1,
	SYNC_DO_SWAP = 2,
	SYNC_DO_ROLLBACK = 4,
	SYNC_NO_EXIT = 8 /* the script runs inside the probe's shell and more follows */
};

typedef struct sync_apply_file {
	size_t index;
	const char *target;   /* relative to the repo */
	const char *temp;     /* relative to the repo */
	const char *bak_temp; /* for a copied .bak */
	const char *sha;      /* expected SHA-256 of temp; NULL: report only */
	bool big;
	bool prehashed;       /* sha was already checked on the box while uploading */
	const char *verifier; /* substituted command; NULL: none */
	/* The path the verifier is given, as `{}`, $1 and BOXGATE_FILE: a safe
	 * path (sync_safe_path) relative to the repo; NULL: "./" + temp. */
	const char *vpath;
	/* When temp's directory has a path that is not safe: a symlink `vlink`
	 * (safe, in the repo's top) to that directory `vdir`, made for the
	 * verifier and removed after it. NULL: none. */
	const char *vlink, *vdir;
	bool keep_owner; /* the swap gives temp the replaced target's owner and group */
} sync_apply_file;

/* Verify and/or swap (or roll back) files. Lines:
 *   h I HASH              the temporary file's SHA-256
 *   x I hash|bak|mv|nobak|copy|vlink   a step failed; the temporary file is gone
 *   v I RC + the verifier's output + vend I
 *   vok I                 verified
 *   w I UID:GID UID:GID   the replaced target's owner could not be given to
 *                         the new file (it keeps the second)
 *   ok I created|replaced swapped in */
char *sync_script_apply(const char *repo, const char *nonce, const char *box,
			const sync_apply_file *f, size_t n, unsigned what);

#endif
