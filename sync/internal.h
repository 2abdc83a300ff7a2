/* What sync/ shares inside itself: the remote scripts, their protocol, and
 * one box's steps (box.c: the entry points; proto.c: the result lines;
 * holder.c: running scripts and the probe that holds the lock; upload.c;
 * apply.c: verify, swap, roll back; status.c). */
#ifndef BG_SYNC_INTERNAL_H
#define BG_SYNC_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/strbuf.h"
#include "remote/remote.h"
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
	const char *repo; /* as configured ("~/x" allowed) */
	const char *nonce;
	bool lock;       /* take the push lock (flock on the repo directory) */
	int lock_wait_s; /* wait for it this long; 0: do not wait */
	bool fail_busy;  /* stop when another push holds it */
	bool clean;      /* remove stale temporary files when the lock is ours */
	bool stats;      /* report mode and size of every regular target */
	bool hold;       /* keep the lock until stdin ends (the push ends) */
	bool pushed;     /* print the manifest .boxgate/pushed too */
} sync_probe_opts;

/* Probe for plan items idx[0..n): type, .bak, parent, writability, stale
 * temporary files (removed when asked), SHA-256. Lines:
 *   repo PATH | norepo | lock o|b|n
 *   f I TYPE BAKTYPE PARENT(i|o|e) WRITABLE(0|1) DIREXISTS(0|1)
 *   t I r|k HEX.tmp          (r: removed, k: kept)
 *   stats K + K lines "MODE SIZE"      (regular targets, in order)
 *   hashes K + K lines of sha256sum    (regular targets below SYNC_BIG_FILE)
 *   H I HASH... | S I SIZE   (big targets: hash, or the differing size)
 *   pushed [big] + the manifest's lines, each after a '|' (with `pushed`)
 *   end
 * With `hold`, the shell then runs each script sent on its stdin up to a
 * line "@NONCE go", answering "done" after each, until stdin ends. */
char *sync_script_probe(const sync_probe_opts *o, const sync_plan *p, const size_t *idx, size_t n);
/* Lists targets with a .bak or a temporary file beside them (NUL-separated
 * find output after "scan"), then the manifest as the probe does. */
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
	 * path (bg_path_safe) relative to the repo; NULL: "./" + temp. */
	const char *vpath;
	/* When temp's directory has a path that is not safe: a symlink `vlink`
	 * (safe, in the repo's top) to that directory `vdir`, made for the
	 * verifier and removed after it. NULL: none. */
	const char *vlink, *vdir;
	bool keep_owner;  /* the swap gives temp the replaced target's owner and group */
	const char *keep; /* rollback: keep the replaced target under this name; NULL: no */
} sync_apply_file;

/* Verify and/or swap (or roll back) files. Lines:
 *   h I HASH              the temporary file's SHA-256
 *   x I hash|bak|mv|nobak|copy|vlink|same|keep   a step failed; the temporary file is gone
 *   v I RC + the verifier's output + vend I
 *   vok I                 verified
 *   w I UID:GID UID:GID   the replaced target's owner could not be given to
 *                         the new file (it keeps the second)
 *   ok I created|replaced swapped in */
char *sync_script_apply(const char *repo, const char *nonce, const char *box,
			const sync_apply_file *f, size_t n, unsigned what);

/* ---- one box (sync_box's private part) ---- */

static inline const sync_item *sync_box_item(const sync_box *b, size_t i)
{
	return &b->plan->items[i];
}

/* Big files are compared by size first and hashed with the fastest tool. */
static inline bool sync_item_big(const sync_item *it)
{
	return it->local && it->size >= SYNC_BIG_FILE;
}

/* Marks file i failed with a message naming the box and the path. */
__attribute__((format(printf, 4, 5))) void sync_file_fail(sync_box *b, size_t i, int code,
							  const char *fmt, ...);
/* A box-level failure: every file not done yet shares it. Returns rc. */
int sync_box_fail(sync_box *b, int rc);
/* The last stderr lines of the box's commands ("" none). */
const char *sync_errtail(const sync_box *b);
int sync_box_connect(sync_box *b);
void sync_trace(const sync_box *b, const char *phase);

/* proto.c: remote_exec_opts.on_line for every script: result lines (the
 * words of one table), probe blocks, scan output, verifier output. */
void sync_on_line(void *ctx, remote_stream s, const char *line, size_t len, int flags);
/* Ends the verifier output being collected (names of temporary files
 * shown as the target's). */
void sync_verify_output_end(sync_box *b);
/* 64 lowercase hex digits at s into out. */
bool sync_hex64(const char *s, char out[BG_SHA256_HEX_LEN + 1]);
/* The words of the result lines, for tests: the k-th, NULL past the end. */
const char *sync_proto_word(size_t k);
/* The line that ends a step sent to the probe's shell: "\n@NONCE go\n". */
char *sync_proto_go_line(const sync_box *b);

/* manifest.c: marks the files the manifest the probe sent lists
 * (sync_file.pushed ...). */
void sync_pushed_mark(sync_box *b);

/* holder.c */
typedef enum sync_probe_kind {
	SYNC_PROBE_PUSH,
	SYNC_PROBE_DRY,
	SYNC_PROBE_STATUS,
	SYNC_PROBE_ROLLBACK
} sync_probe_kind;
/* Runs `script` with /bin/sh on the box, parsing its output. With `hold`
 * it returns once the script printed its end line, leaving it running in
 * b->holder (it holds the push lock until the connection closes). */
int sync_run_script(sync_box *b, const char *script, int64_t deadline, bool hold,
		    remote_status *st);
/* Runs `script` in the probe's shell that holds the lock. With `last` the
 * script ends that shell (and the lock) too. */
int sync_holder_run(sync_box *b, const char *script, bool last, int64_t deadline,
		    remote_status *st);
/* Probes every file of the plan (taking the lock as `kind` needs). */
int sync_probe(sync_box *b, sync_probe_kind kind);

/* upload.c: what the probe says about file i: nothing to do, refused
 * (false), or an upload (true) */
bool sync_decide_push(sync_box *b, size_t i);
/* Uploads file i into a new temporary file beside its target; < 0 only
 * when the connection is lost. */
int sync_upload(sync_box *b, size_t i);

/* apply.c: runs the verify/swap/rollback step (`what`: SYNC_DO_*) for the
 * files in state `sel_state` (uploaded ones only with `sel_uploaded`). */
int sync_apply(sync_box *b, unsigned what, sync_state sel_state, bool sel_uploaded);

#endif
