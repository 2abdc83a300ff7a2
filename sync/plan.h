/* sync/'s plans: the files of one push, status or rollback, each with its
 * local path, its target relative to the box's repo, its hash and its verifier
 * (sync/plan.c, sync/localcheck.c). */
#ifndef BG_SYNC_PLAN_H
#define BG_SYNC_PLAN_H

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

/* What the local checks of a whole plan tell their caller. */
typedef struct sync_local_checks_cb {
	/* The item's check could not run (the box decides alone). */
	void (*could_not_run)(void *ctx, const sync_item *it, const char *why);
	/* The item's check refused it: its exit status and output. */
	void (*refused)(void *ctx, const sync_item *it, int rc, const char *output);
	void *ctx;
} sync_local_checks_cb;

/* Runs sync_local_check on every item of plan p, in order. Returns 0 when
 * all passed or none could run, BG_EXIT_VERIFY (base/exit.h) when one
 * refused: no box may then be touched. */
int sync_local_checks(const char *python, const sync_plan *p, const sync_local_checks_cb *cb);

#endif
