/* Box names folded into node sets and sorted as they read (cli/fold.c). */
#ifndef BG_CLI_FOLD_H
#define BG_CLI_FOLD_H

#include <stdbool.h>
#include <stddef.h>

/* Folds box names into node sets: h1 h2 h3 h5 -> "h[1-3,5]". Owned. */
char *cli_fold_names(const char *const *names, size_t n);
/* Box-name order as node sets read: h2 before h10, then by stem; for qsort
 * comparators (strcmp's sign convention). */
int cli_box_name_cmp(const char *a, const char *b);

#endif
