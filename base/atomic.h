/* A whole file written so that a reader never sees half of it: a temporary
 * file beside the target, written, synced and renamed into place. */
#ifndef BG_BASE_ATOMIC_H
#define BG_BASE_ATOMIC_H

#include <stddef.h>

#include "base/error.h"

/* Writes data[0..len) to `path` (mode 0644) through "DIR/.NAME.XXXXXX"
 * renamed over it. BG_EIO naming `path` on any failure; the temporary file
 * is removed. */
int bg_write_atomic(const char *path, const void *data, size_t len, bg_err *err);

/* Checks, without touching `path`, that bg_write_atomic could write it: not a
 * directory or other non-regular file, its directory exists and takes a new
 * file (one is made and removed). BG_EIO naming `path` when not. */
int bg_write_atomic_check(const char *path, bg_err *err);

#endif
