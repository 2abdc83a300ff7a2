/* Pushing files to the boxes' own repo copies, safely: push plans, hashing,
 * verification on the box, `.bak`, atomic swap, rollback and drift status.
 *
 * A push of a file to a box, in order, over one connection:
 *   1. probe (one exec round trip for every file): take the box's push lock
 *      (flock on the repo directory, held by that exec until the push ends),
 *      remove stale temporary files left by interrupted pushes, report each
 *      target's type and SHA-256 (sizes first for big files);
 *   2. unchanged files stop here; each changed one is uploaded over SFTP
 *      into a new file created exclusively in the target's directory,
 *      `.NAME.boxgate-<16 hex>.tmp`, given its final mode and fsynced;
 *   3. one exec runs, per file: the SHA-256 of the temporary file must equal
 *      the local one, the verifier configured for the path must accept it,
 *      then TARGET.bak becomes the current target (a hard link, or a full
 *      copy renamed into place: never partial) and `mv -f` renames the
 *      temporary file over the target (rename(2): atomic). A failure removes
 *      the temporary file and leaves the box as it was.
 * With all-or-nothing, step 3 stops before the swap on every box, and the
 * swaps run only when every box passed.
 *
 * Nothing here prints: results come back in sync_box/sync_file, progress
 * through a callback. */
#ifndef BG_SYNC_H
#define BG_SYNC_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/sha256.h"
#include "base/strbuf.h"
#include "remote/remote.h"

/* Files at least this big have their size compared before they are hashed on
 * the box, and are hashed there with the fastest tool present. */
#define SYNC_BIG_FILE (16u << 20)

/* ---- plans ---- */

/* The verifier command for a target (`rel`, relative to the repo), NULL for
 * none; *builtin is set when it is one of boxgate's defaults (then it can
 * run here too). The text is borrowed: it must outlive the plan. */
typedef const char *(*sync_verifier_for_fn)(void *ctx, const char *rel, bool *builtin);

typedef struct sync_item {
	char *arg;   /* the argument as written (owned) */
	char *local; /* absolute local path, owned; NULL when there is no local file */
	char *rel;   /* the target, relative to the box's repo, normalised (owned) */
	uint64_t size;
	unsigned mode;                   /* local permission bits (0777) */
	char sha[BG_SHA256_HEX_LEN + 1]; /* local SHA-256, "" when no local file */
	const char *verifier;            /* borrowed (sync_verifier_for_fn); NULL: none */
	bool verifier_builtin;           /* one of boxgate's defaults: runnable here too */
} sync_item;

typedef struct sync_plan {
	char *root; /* the local repo root, a real path (owned) */
	sync_item *items;
	size_t n, cap;
	/* Big files are hashed by a thread of their own, so hashing overlaps
	 * connecting and uploading; sync_plan_wait() joins it. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t hasher;
	bool hashing, hashed;
	int hash_rc;
	bg_err hash_err;
} sync_plan;

/* `root` is the local repo root (made absolute and resolved). */
int sync_plan_init(sync_plan *p, const char *root, bg_err *err);
void sync_plan_release(sync_plan *p);

enum {
	/* The local file must exist (push, status). Without it the argument
	 * names a target only (rollback); a local file is still used if found. */
	SYNC_ADD_NEED_LOCAL = 1,
};

/* Adds `arg`: PATH or LOCAL=REMOTE (split at the first '=' only when no
 * file named `arg` exists). PATH and LOCAL are local paths, relative to the
 * current directory when that lies inside the root, else to the root; an
 * absolute one must lie inside the root. REMOTE is relative to the box's
 * repo; ending in '/', it is a directory the local file's name is added to.
 * Refused (BG_EUSAGE, the message says why): a path escaping the root or the
 * repo (`..`), an absolute REMOTE, a local symlink that leads out of the
 * root, a local path that is not a regular file, a target given twice. */
int sync_plan_add(sync_plan *p, const char *arg, unsigned flags, bg_err *err);
/* Adds a target found on a box (status scan): `rel` is relative to the repo;
 * the local file root/rel is used when it exists. Never fails on a missing
 * local file; refuses names that do not normalise. */
int sync_plan_add_rel(sync_plan *p, const char *rel, bg_err *err);
/* Hashes every local file and looks up each target's verifier. Files of
 * SYNC_BIG_FILE bytes or more are hashed in the background: their sha is
 * valid only after sync_plan_wait(). */
int sync_plan_finish(sync_plan *p, sync_verifier_for_fn verifier_for, void *ctx, bg_err *err);
/* Waits for the background hashing (any thread may call it); its result. */
int sync_plan_wait(sync_plan *p, bg_err *err);

/* "dir/.NAME.boxgate-HEX.tmp[.EXT]" for target "dir/NAME" (NAME shortened so
 * the result fits NAME_MAX, every byte of it outside [A-Za-z0-9._-] made
 * '_'; .EXT is NAME's extension); `hex` is 16 lowercase hex digits. Owned. */
char *sync_temp_name(const char *rel, const char *hex);
/* 16 random lowercase hex digits (getrandom). */
void sync_random_hex(char out[17]);

/* The verifier command for one file: `{}` becomes `file` and `{python}` the
 * interpreter, both quoted for the shell (bg_quote_path). On a box `file`
 * is always a safe path (bg_path_safe, base/path.h) that boxgate chose, so the text is
 * the same however many shells read it. Owned. */
char *sync_verifier_command(const char *tmpl, const char *file, const char *python);

/* Runs a built-in verifier on the local file, in the root, with the local
 * box's interpreter `python` (NULL: python3). *ran is false when the item
 * has none that can run here (then nothing else is set); else *rc is the verifier's exit status (or
 * 127 when it could not start) and *output its stdout and stderr (owned). */
int sync_local_check(const char *python, const sync_plan *p, const sync_item *it, bool *ran,
		     int *rc, char **output, bg_err *err);

/* ---- boxes ---- */

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
	SYNC_SAME,     /* status: the box has the local content */
	SYNC_DIFFERS,  /* status */
	SYNC_MISSING,  /* status: no such target on the box */
	SYNC_NO_LOCAL, /* status: on the box, but no local file to compare */
} sync_state;
#define SYNC_STATE_COUNT (SYNC_NO_LOCAL + 1)

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
/* Status: compare each target with the local file. A plan without items
 * scans the box's repo for targets with a .bak or a temporary file beside
 * them (b->plan then points to the box's own plan). */
int sync_status_box(sync_box *b);
/* Rollback: verify TARGET.bak with the target's verifier, then make it the
 * target again; the replaced target becomes the new TARGET.bak. */
int sync_rollback_box(sync_box *b);

/* ---- reporting helpers (no printing) ---- */

/* "unchanged", "updated", "would update", "verify failed", ...: for people. */
const char *sync_state_name(sync_state s);
/* The same as a JSON key or value: no spaces ("would_update",
 * "no_local_file", "rolled_back"). */
const char *sync_state_key(sync_state s);
/* Status: the box's manifest says push placed the file and no .bak is
 * beside it (push keeps none when it creates a file). */
bool sync_file_created_by_push(const sync_file *f);
/* True for the states that count as failures. */
bool sync_state_failed(sync_state s);
/* A path as a person should see it: as is when printable UTF-8 without
 * quotes or backslashes, else in double quotes with C escapes (\n, \", \\,
 * \xNN for bytes that are not UTF-8). Owned. */
char *sync_path_display(const char *path);
/* The process exit code for a set of boxes: 4 if a verifier refused a file,
 * else 3 if a box could not be reached (connect, host key, auth), else 1 if
 * anything else failed, else 0. */
int sync_exit_code(const sync_box *boxes, size_t n);
/* One line about file i on box b, without the box name: "PATH: updated
 * (sha256 ... confirmed on the box, previous as .bak kept)". Owned. */
char *sync_file_describe(const sync_box *b, size_t i);

/* The box's manifest (<repo>/.boxgate/pushed, one "SHA256 TAB EPOCH TAB
 * PATH" line per path push or rollback last placed there): what to warn
 * about it once, naming the box; NULL when nothing. Owned. */
char *sync_manifest_warning(const sync_box *b);

/* Reads the manifest back through `c` (bounded to SYNC_MANIFEST_MAX bytes):
 * *text owned, "" when there is none. */
#define SYNC_MANIFEST_MAX (1u << 20)
int sync_manifest_read(remote_conn *c, const sync_target *box, char **text, bg_err *err);
/* One well-formed manifest line, "SHA256 TAB EPOCH TAB PATH" (lowercase
 * hex, 1 to 12 digits up to the end of year 9999, a path): path points
 * into the line (not NUL-terminated). */
typedef struct sync_manifest_entry {
	char sha[BG_SHA256_HEX_LEN + 1];
	int64_t epoch;
	const char *path;
	size_t path_len;
} sync_manifest_entry;
bool sync_manifest_line(const char *line, size_t len, sync_manifest_entry *e);
/* Every well-formed line of `text`, in order; *out owned (free), its
 * paths point into text. Returns how many. */
size_t sync_manifest_parse(const char *text, sync_manifest_entry **out);

/* The same as one JSON object {box, path|path_b64, state, ...}; owned by
 * the caller (cJSON_Delete). */
struct cJSON;
struct cJSON *sync_file_json(const sync_box *b, size_t i);
/* How many files across the boxes are in each state. */
void sync_count(const sync_box *boxes, size_t n, size_t counts[SYNC_STATE_COUNT]);

#endif
