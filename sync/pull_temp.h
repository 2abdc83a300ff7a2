/* pull's temporary files: named so they are recognisable (".NAME.boxgate-pull-
 * <16 hex>.tmp" beside the final NAME), held under an flock while they are
 * written, so the next pull knows a stale one (its writer gone: the lock is
 * free) from a live one and removes only the stale. */
#ifndef BG_SYNC_PULL_TEMP_H
#define BG_SYNC_PULL_TEMP_H

#include <stdbool.h>
#include <stddef.h>

/* The temporary name for final name `base` (one path component) (owned); a
 * long base is cut so the name fits NAME_MAX. */
char *sync_pull_temp_name(const char *base, const char *hex);

/* True for a name sync_pull_temp_name makes. */
bool sync_pull_is_temp(const char *name);

/* True for a temporary name push or pull leaves beside a file while it is
 * written (".NAME.boxgate-<16 hex>.tmp[.EXT]", ".NAME.boxgate-pull-<16 hex>.tmp"):
 * never a file to fetch. */
bool sync_is_boxgate_temp(const char *name);

/* Creates a new temporary file for `base` in directory dfd, exclusively, and
 * holds an flock on it (the fd's) for as long as it is open; *temp is its
 * name (owned). Returns the fd, or -1 (errno set). */
int sync_pull_temp_create(int dfd, const char *base, char **temp);

/* Removes the stale pull temporaries in directory dfd (regular files only,
 * never followed, whose flock is free); returns how many. */
size_t sync_pull_clean_stale(int dfd);

#endif
