/* Where a candidate kernel goes: the gate kind that gate arguments name, and
 * the repo path a box's kernel_paths gives that kind. What run --kernel,
 * campaign candidates and brief's suggested commands share. */
#ifndef BG_MEASURE_KERNEL_H
#define BG_MEASURE_KERNEL_H

#include <stddef.h>

#include "conf/conf.h"

/* The gate kind the words name (--kind K or --kind=K; the last wins), NULL
 * when none. Borrowed from `v`. */
const char *measure_gate_kind(char *const *v, size_t n);

/* The repo path box `b`'s kernel_paths gives `kind` ("KIND:PATH"), NULL when
 * none or kind is NULL. Borrowed from the box. */
const char *measure_kernel_path(const conf_box *b, const char *kind);

#endif
