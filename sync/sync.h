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

/* The module's parts, each a header of its own: a file that needs one part
 * includes that one. */
#include "sync/box.h"
#include "sync/plan.h"
#include "sync/report.h"

#endif
