/* ClusterShell-style node sets: "b200-[1-8,12]", "h[01-03]" (zero padding
 * kept), "r[1-2]n[1-2]" (several groups, the leftmost varies slowest),
 * "a,b[1-2]" (commas outside brackets separate items), "n[1-9/2]" (a step).
 * Used to select boxes; it knows nothing of the configuration. */
#ifndef BG_CONF_NODESET_H
#define BG_CONF_NODESET_H

#include <stddef.h>

#include "base/error.h"

/* At most this many names from one expansion (a typo such as [1-1000000]
 * is an error, not an allocation storm). */
#define NODESET_MAX 65536

/* Expands `spec` in order (duplicates kept). *out is an owned array of owned
 * strings, free it with nodeset_free(); empty items are skipped. Malformed
 * input is BG_EUSAGE with the reason in err. */
int nodeset_expand(const char *spec, char ***out, size_t *n_out, bg_err *err);
void nodeset_free(char **v, size_t n);

/* Splits at commas outside brackets, trimming blanks: "a[1,2], b" gives
 * "a[1,2]" and "b". Same ownership as nodeset_expand(). */
void nodeset_split(const char *spec, char ***out, size_t *n_out);

#endif
