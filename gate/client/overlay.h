/* Candidate overlays: a shadow tree on the box that mirrors the box's repo with
 * symlinks, except the overlaid files, which are real copies of the candidate's.
 * The gate runs in it, so the production tree is never written. Shadow trees are
 * content-addressed under ~/.cache/boxgate/shadow/ID, ID the SHA-256 of the repo
 * path, the overlaid (path, SHA-256) pairs and the repo's state on the box (every
 * path with its type, mode and link target), so a second run with the same
 * candidate reuses the tree while the repo has the same paths; a tree is reused
 * only while it is exactly what the repo implies (checked against the repo, not
 * against anything a gate could write in the tree). */
#ifndef BG_GATE_OVERLAY_H
#define BG_GATE_OVERLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "remote/remote.h"

struct cJSON;

typedef struct overlay_file {
	char *local; /* the candidate's file here */
	char *rel;   /* its place in the repo, normalised */
	char sha[65];
	uint64_t size;
} overlay_file;

typedef struct overlay {
	overlay_file *f;
	size_t n;
	char id[65];
	char *root;  /* the shadow tree's absolute path on the box, once prepared */
	bool reused; /* it was there already */
} overlay;

/* Adds LOCAL at REL (relative to the repo, no '..' above it, shell-safe bytes):
 * hashes the local file. BG_EUSAGE naming the file or path when it cannot. */
int overlay_add(overlay *o, const char *local, const char *rel, bg_err *err);
/* Makes (or finds) the shadow tree for `repo` on the box: symlinks to every file
 * of the repo, the overlaid files uploaded over SFTP (created exclusively, so
 * never written through a link) and checked with sha256sum, then renamed into
 * place. Fills o->id (the box computes it), o->root and o->reused. */
int overlay_prepare(remote_conn *c, const char *repo, overlay *o, bg_err *err);
/* {"id","root","reused","files":[{"path","sha256","local"}]} (owned). */
struct cJSON *overlay_json(const overlay *o);
void overlay_release(overlay *o);

/* The shell command that removes shadow trees not used for `days` days
 * (bootstrap --clean); prints "removed N". */
char *overlay_clean_command(int days);

#endif
