/* Random identifiers: nonces, temp-file names, run ids. */
#ifndef BG_RANDOM_H
#define BG_RANDOM_H

#include <stddef.h>

/* Writes `nbytes` (at most 32) bytes of kernel randomness as 2 * nbytes
 * lowercase hex digits and a NUL to `out`. Aborts when the kernel has no
 * randomness to give: every caller needs unguessable values. */
void bg_random_hex(char *out, size_t nbytes);

#endif
