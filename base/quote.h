/* The one shell-quoting function (every remote command line boxgate builds
 * goes through bg_quote), below every module that builds command lines. */
#ifndef BG_QUOTE_H
#define BG_QUOTE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/strbuf.h"

/* Appends `word` to `out` quoted for a POSIX shell (sh, dash, bash), so that
 * the shell reconstructs it byte for byte. Every remote command line in
 * boxgate is built through this function. */
void bg_quote(strbuf *out, const char *word);
/* Appends each word quoted, separated by single spaces. */
void bg_quote_argv(strbuf *out, const char *const *argv, size_t argc);
/* True when `name` is a valid environment name [A-Za-z_][A-Za-z0-9_]*. */
bool bg_env_name_ok(const char *name);

/* Appends a remote path quoted, keeping a leading "~/" (or "~") meaning the
 * remote user's home: "~/a b" becomes "$HOME"/'a b'. */
void bg_quote_path(strbuf *out, const char *path);

#endif
