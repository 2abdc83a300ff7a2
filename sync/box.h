/* sync/'s boxes: one box's push, status or rollback over a plan, its files'
 * states and what it needs of the caller (sync_opts, the sync_target view). */
#ifndef BG_SYNC_BOX_H
#define BG_SYNC_BOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/sha256.h"
#include "base/strbuf.h"
#include "remote/remote.h"
#include "sync/plan.h"

typedef enum sync_state {
	SYNC_PENDING = 0,
	SYNC_UNCHANGED,     /* push: the box already has this content */
	SYNC_UPDATED,       /* push: replaced; the previous one is TARGET.bak */
	SYNC_CREATED,       /* push: there was no target before */
	SYNC_WOULD_UPDATE,  /* --dry-run */
	SYNC_WOULD_CREATE,  /* --dry-run */
	SYNC_VERIFIED,      /* all-or-nothing: uploaded, verified, not swapped yet */
	SYNC_NOT_APPLIED,   /* all-or-nothing: verified, discarded because another failed */
	SYNC_VERIFY_FAILED, /* the verifier refused it; the box is as it was */
	SYNC_FAILED,        /* anything else (code, msg) */
	SYNC_ROLLED_BACK,   /* rollback: the .bak is the target again */
	SYNC_WOULD_ROLL_BACK,
	SYNC_SAME,                /* status: the box has the local content */
	SYNC_DIFFERS,             /* status */
	SYNC_MISSING,             /* status: no such target on the box */
	SYNC_NO_LOCAL,            /* status: on the box, but no local file to compare */
	SYNC_ALREADY_ROLLED_BACK, /* rollback: the target already is its .bak (nothing done) */
} sync_state;
#define SYNC_STATE_COUNT (SYNC_ALREADY_ROLLED_BACK + 1)

/* What a path is on the box, as the probe saw it. */
typedef enum sync_ftype {
	SYNC_FT_UNKNOWN = 0, /* the probe said nothing */
	SYNC_FT_FILE,        /* a regular file (readable, for a target) */
	SYNC_FT_MISSING,
	SYNC_FT_DIR,
	SYNC_FT_SYMLINK,
	SYNC_FT_OTHER,
	SYNC_FT_UNREADABLE, /* a regular file the box's user cannot read */
} sync_ftype;

/* Where a target's nearest existing directory leads. */
typedef enum sync_parent {
	SYNC_PARENT_UNKNOWN = 0,
	SYNC_PARENT_INSIDE,      /* inside the repo */
	SYNC_PARENT_OUTSIDE,     /* out of the repo (a symlink) */
	SYNC_PARENT_UNREACHABLE, /* cannot be entered */
} sync_parent;

/* How the apply step ended for one file. */
typedef enum sync_outcome {
	SYNC_DONE_NONE = 0,
	SYNC_DONE_VERIFIED,    /* verified, not swapped */
	SYNC_DONE_STEP_FAILED, /* a step failed (sync_file.failed_step) */
	SYNC_DONE_SWAPPED,
	SYNC_DONE_REFUSED, /* the verifier refused it */
} sync_outcome;

/* The apply step's step that failed. */
typedef enum sync_step {
	SYNC_STEP_NONE = 0,
	SYNC_STEP_HASH,  /* the temporary file's hash is not the local one */
	SYNC_STEP_BAK,   /* no .bak could be kept */
	SYNC_STEP_MV,    /* the rename (and anything the box did not name) */
	SYNC_STEP_NOBAK, /* rollback: no .bak */
	SYNC_STEP_COPY,  /* rollback: the .bak could not be copied */
	SYNC_STEP_VLINK, /* the verifier's link could not be made */
	SYNC_STEP_SAME,  /* rollback: the target already is its .bak */
	SYNC_STEP_KEEP,  /* rollback --force: the box's version could not be kept */
} sync_step;

/* The box's push lock, as the probe found it. */
typedef enum sync_lock {
	SYNC_LOCK_NONE = 0, /* no flock on the box (or not asked for) */
	SYNC_LOCK_OURS,
	SYNC_LOCK_BUSY, /* another push holds it */
} sync_lock;

/* The multi-line block of probe output being read. */
typedef enum sync_block {
	SYNC_BLOCK_NONE = 0,
	SYNC_BLOCK_STATS,  /* "MODE SIZE" per regular target */
	SYNC_BLOCK_HASHES, /* sha256sum lines */
} sync_block;

typedef struct sync_file {
	sync_state state;
	int code;         /* BG_E* for FAILED and VERIFY_FAILED */
	char *msg;        /* owned: what went wrong, naming box and path */
	char *verify_out; /* owned: the verifier's own output */
	int verify_rc;
	char *warn; /* owned: the replaced file's owner could not be kept (names box and path) */
	sync_ftype rtype;                 /* what the box had before */
	sync_ftype btype;                 /* TARGET.bak: MISSING, FILE, SYMLINK or OTHER */
	char rsha[BG_SHA256_HEX_LEN + 1]; /* the box's target before ("" unknown) */
	char nsha[BG_SHA256_HEX_LEN + 1]; /* what the box has now, when checked */
	bool have_stat;
	unsigned rmode;
	uint64_t rsize;
	int stale_found;   /* temporary files of interrupted pushes found */
	int stale_removed; /* ... and removed */
	bool bak_after;    /* TARGET.bak exists afterwards */
	/* status, rollback: the box's manifest lists the target (push or
	 * rollback placed it), with the content it placed and when */
	bool pushed;
	char pushed_sha[BG_SHA256_HEX_LEN + 1];
	int64_t pushed_at; /* seconds since the epoch */
	/* rollback --force: the box's changed version is kept under this name
	 * (relative to the repo; owned), NULL: none */
	char *keep;
	/* private to sync/ */
	sync_parent parent;
	bool dir_exists, writable;
	char *temp, *bak_temp;
	char *vpath; /* what the verifier sees: "./" + temp, or through vlink */
	char *vlink; /* a symlink in the repo's top to temp's directory, when
		      * that directory's path is not safe; NULL: none */
	bool uploaded;
	unsigned push_mode;
	sync_outcome done;     /* apply: how it ended */
	sync_step failed_step; /* apply: with SYNC_DONE_STEP_FAILED */
	bool replaced;         /* apply: there was a target before the swap */
	bool hashed;           /* apply: nsha holds the temporary file's hash */
	bool prehashed;        /* upload: the box hashed the file as it arrived */
} sync_file;

struct sync_box;
typedef void (*sync_progress_cb)(void *ctx, const struct sync_box *b, const sync_item *it,
				 uint64_t done, uint64_t total);

/* Called as a box passes a phase of a push ("connected", "probed", ...),
 * from that box's thread. */
typedef void (*sync_trace_cb)(void *ctx, const char *box, const char *phase);

typedef struct sync_opts {
	/* The verifiers of the targets a status scan finds on a box. */
	sync_verifier_for_fn verifier_for;
	void *verifier_ctx;
	bool dry_run;
	bool keep_mode;       /* the replaced file's mode instead of the local one */
	bool all_or_nothing;  /* stop before the swap; sync_push_commit/abort decide */
	bool accept_new;      /* record unknown host keys */
	bool clean;           /* status: remove stale temporary files (push always does) */
	bool fsync;           /* fsync uploads before the rename (default on) */
	bool force;           /* rollback: over a target changed on the box since push */
	int verify_timeout_s; /* the verify (and swap) step on one box; 0: 300 */
	int lock_wait_s;      /* wait this long for another push on the box; 0: 30 */
	remote_log_cb log;
	void *log_ctx;
	sync_progress_cb progress;
	void *progress_ctx;
	/* Push: called once connected, before the box is touched; nonzero
	 * leaves the box alone (the local check, running meanwhile, refused). */
	int (*ready)(void *ctx);
	void *ready_ctx;
	sync_trace_cb trace; /* NULL: none */
	void *trace_ctx;
} sync_opts;

/* What sync/ reads of a box, as remote/ reads a remote_target: a view whose
 * strings are borrowed from whoever fills it (cli/ and campaign/, from the
 * box's configuration). */
typedef struct sync_target {
	const char *name;             /* the box, for messages */
	const char *repo;             /* its repo copy ("~" kept); NULL or "": none */
	const char *python;           /* its interpreter (verifiers, follow); NULL: python3 */
	const remote_target *connect; /* how to reach it */
} sync_target;

typedef struct sync_box {
	const sync_target *box; /* &view */
	sync_target view;
	size_t index;
	sync_plan *plan; /* borrowed, or &own_plan after a status scan */
	const sync_opts *opts;
	sync_file *files; /* one per plan item */
	/* Box-level failure: connect, host key, lock busy, no repo (BG_E*, err). */
	int rc;
	bg_err err;
	char *repo_abs; /* the repo on the box, absolute and resolved */
	/* The manifest .boxgate/pushed (sync_manifest_warning): it could not
	 * be written; paths it cannot hold (a tab or newline) left out. */
	bool manifest_failed;
	int manifest_skipped;
	/* status, rollback: the manifest is over SYNC_MANIFEST_MAX bytes and was
	 * not read (no file is known as pushed). */
	bool manifest_unread;
	/* private to sync/ */
	sync_plan own_plan;
	remote_conn *conn;
	remote_exec *holder; /* the probe that holds the push lock */
	sync_lock lock;
	char nonce[17];
	strbuf errtail; /* the last stderr lines of the box's commands */
	/* output parsing */
	const size_t *batch; /* the plan indexes the running script covers */
	size_t batch_n;
	sync_block block;
	size_t *block_idx; /* plan indexes the block's lines belong to */
	size_t block_n, block_pos;
	long vfile; /* collecting verifier output for this index, -1 none */
	strbuf vbuf;
	bool vpartial; /* the last verifier line came in pieces */
	bool in_scan;
	strbuf scan;
	/* the manifest, as the probe or scan sent it (status, rollback) */
	bool want_pushed, have_pushed, in_pushed, pushed_partial, pushed_big;
	strbuf pushed;
	bool end, norepo, proto_err, cmd_done;
} sync_box;

/* Starts box b over `box` (copied: a temporary will do). */
void sync_box_init(sync_box *b, const sync_target *box, size_t index, sync_plan *plan,
		   const sync_opts *o);
/* Closes the connection and frees everything; accepts a zeroed box. */
void sync_box_release(sync_box *b);

/* Ends the probe that holds the box's push lock (its part is done). */
void sync_box_unlock(sync_box *b);
/* Closes the connection, keeping the results. */
void sync_box_disconnect(sync_box *b);

/* Push: connect, probe, upload, verify and (unless dry run or
 * all-or-nothing) swap. Returns b->rc (0 even when single files failed:
 * see b->files). */
int sync_push_box(sync_box *b);
/* All-or-nothing, after every box returned from sync_push_box: swap each
 * VERIFIED file (state UPDATED/CREATED, or FAILED) ... */
int sync_push_commit(sync_box *b);
/* ... or remove their temporary files (state NOT_APPLIED). */
void sync_push_abort(sync_box *b);
/* Whether box b failed: its connection or a file of its plan. All-or-nothing
 * commits only when no box of boxes[0..n) did. */
bool sync_box_failed(const sync_box *b);
bool sync_boxes_all_ok(const sync_box *boxes, size_t n);
/* Status: compare each target with the local file. A plan without items
 * scans the box's repo for targets with a .bak or a temporary file beside
 * them (b->plan then points to the box's own plan). */
int sync_status_box(sync_box *b);
/* Rollback: verify TARGET.bak with the target's verifier, then make a copy
 * of it the target again; TARGET.bak stays. A target that already has the
 * .bak's content is left alone (SYNC_ALREADY_ROLLED_BACK): a second rollback
 * never swaps back. A target changed on the box since push placed it is
 * refused, unless opts->force: then it is kept as
 * TARGET.boxgate-rollback-<UTC time> first. */
int sync_rollback_box(sync_box *b);

#endif
