/* Fetching files back from a box's repo copy (boxgate pull, run --pull).
 *
 * Per box, over one connection:
 *   1. resolve the box's repo (one exec);
 *   2. walk each requested path over SFTP: a file, a directory (every file
 *      under it), or a pattern whose components may hold shell wildcards
 *      (`*.ncu-rep` in `profiles`; a wildcard does not match a leading '.').
 *      Paths are relative to the repo and may not climb out of it ('..');
 *      a symlink whose real path lies outside the repo is refused unless
 *      follow_links; inside a directory walk a symlink to a directory is
 *      not descended into unless follow_links (then to a depth of 32);
 *   3. hash every file found on the box (one exec, the box's sha256sum);
 *   4. for each file: when the local copy already has that SHA-256 it is
 *      left alone (resumable); else it is read over SFTP into a new
 *      temporary file beside its final name, hashed as it arrives, and
 *      renamed over the final name only when the hash is the box's
 *      (rename(2): atomic). Local directories are created one component at
 *      a time and never entered through a symlink; a symlink at the final
 *      name is replaced, never written through.
 * A lost connection or any failure leaves no partial file under a final
 * name. Nothing here prints. */
#ifndef BG_SYNC_PULL_H
#define BG_SYNC_PULL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/sha256.h"
#include "remote/remote.h"
#include "sync/box.h"

typedef enum sync_pull_state {
	SYNC_PULL_PENDING = 0,
	SYNC_PULL_PULLED,    /* written (or replaced) locally */
	SYNC_PULL_UNCHANGED, /* the local copy already had this content */
	SYNC_PULL_SKIPPED,   /* not a regular file, or a directory link not followed */
	SYNC_PULL_REFUSED,   /* a symlink leading out of the repo */
	SYNC_PULL_MISSING,   /* the path (or pattern) names nothing on the box */
	SYNC_PULL_FAILED,    /* msg says why; nothing left under the final name */
} sync_pull_state;
#define SYNC_PULL_STATE_COUNT (SYNC_PULL_FAILED + 1)

typedef struct sync_pull_file {
	char *rel;   /* relative to the box's repo (owned); the pattern for MISSING */
	char *local; /* where it lands locally (owned); NULL for MISSING */
	uint64_t size;
	unsigned mode;
	char sha[BG_SHA256_HEX_LEN + 1]; /* the box's SHA-256 ("" unknown) */
	sync_pull_state state;
	char *msg; /* owned: why, for SKIPPED, REFUSED, MISSING, FAILED */
} sync_pull_file;

struct sync_pull_box;
/* Bytes of one file received so far (files of 1 MiB and more). */
typedef void (*sync_pull_progress_cb)(void *ctx, const struct sync_pull_box *b,
				      const sync_pull_file *f, uint64_t done, uint64_t total);

typedef struct sync_pull_opts {
	const char *to;  /* the local directory (created when missing) */
	bool box_subdir; /* files land in to/BOX/REL (else to/REL) */
	bool follow_links;
	bool accept_new;
	size_t max_files; /* stop the walk beyond this many (0: 100000) */
	remote_log_cb log;
	void *log_ctx;
	remote_log_cb trace; /* BOXGATE_TRACE: the connection's path (gets log_ctx); NULL: none */
	sync_pull_progress_cb progress;
	void *progress_ctx;
} sync_pull_opts;

typedef struct sync_pull_box {
	const sync_target *box; /* &view */
	sync_target view;
	size_t index;
	const sync_pull_opts *opts;
	char *const *paths; /* the requested paths, borrowed */
	size_t n_paths;
	sync_pull_file *files;
	size_t n, cap;
	uint64_t bytes;       /* received */
	size_t stale_removed; /* stale temporaries of an interrupted pull removed */
	/* Box-level failure (connect, no repo, lost connection): BG_E*, err. */
	int rc;
	bg_err err;
	/* private */
	remote_conn *conn;
	bool own_conn;
	char *repo_abs;
	bool walk_capped;
	char **cleaned; /* destination directories cleaned of stale temporaries */
	size_t n_cleaned;
} sync_pull_box;

/* `conn` may be an open connection to the box (borrowed; NULL: connect). */
/* `box` is copied (the strings it points to must outlive b). */
void sync_pull_box_init(sync_pull_box *b, const sync_target *box, size_t index,
			const sync_pull_opts *o, char *const *paths, size_t n_paths,
			remote_conn *conn);
void sync_pull_box_release(sync_pull_box *b);
/* Closes the connection the box opened itself, keeping the results. */
void sync_pull_box_release_conn(sync_pull_box *b);

/* Checks a requested path before any box is asked: relative, not climbing
 * out of the repo. *norm (owned) is its normal form ("." for the repo). */
int sync_pull_check_path(const char *path, char **norm, bg_err *err);

/* Does the whole pull for one box; returns b->rc (0 even when single files
 * failed: see b->files). */
int sync_pull_box_run(sync_pull_box *b);

/* "pulled", "unchanged", ...; sync_pull_state_key: the same for JSON. */
const char *sync_pull_state_name(sync_pull_state s);
const char *sync_pull_state_key(sync_pull_state s);
/* True for the states that make the exit code nonzero. */
bool sync_pull_state_failed(sync_pull_state s);

/* One JSON object per file {box, path|path_b64, local, state, size, sha256,
 * message}; owned (cJSON_Delete). */
struct cJSON;
struct cJSON *sync_pull_file_json(const sync_pull_box *b, size_t i);

#endif
