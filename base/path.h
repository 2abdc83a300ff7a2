/* Paths, lexically: a relative path normalised (never above its start) and
 * the safe bytes a remote path is built from without quoting surprises. */
#ifndef BG_BASE_PATH_H
#define BG_BASE_PATH_H

#include <stdbool.h>

#include "base/error.h"
#include "base/strbuf.h"

/* Splits `path` into components and resolves "." and ".." lexically onto
 * `out` (components joined by '/'). Returns false when ".." climbs above
 * the start. */
bool bg_path_resolve(strbuf *out, const char *path);

/* Lexically normalises a relative path: drops empty and "." components,
 * resolves ".." and refuses one that climbs above the start, an absolute
 * path and the empty path. *out is owned. */
int bg_path_normalize_rel(const char *in, char **out, bg_err *err);

/* [A-Za-z0-9._-]: bytes no shell reads as anything but themselves. */
bool bg_path_safe_byte(char c);
/* A path of safe bytes and '/', not starting with '-'. */
bool bg_path_safe(const char *s);

#endif
