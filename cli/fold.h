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

/* Per-box lines folded into node sets: lines are collected with the box
 * they are about, then printed in box-name order, each distinct text once,
 * led by the set of boxes that had it ("h[1-3]: a.py: unchanged"); with
 * fold off, one line per box. A box's own lines keep their order. */
typedef enum { CLI_FOLD_OUT, CLI_FOLD_ERROR, CLI_FOLD_WARN } cli_fold_kind;
typedef struct cli_folder {
	struct cli_fold_entry *v;
	size_t n, cap;
} cli_folder;
/* `box` is borrowed (it must outlive the print); `text` is copied. A
 * leading "BOX: " in text is dropped (messages that name their box). */
void cli_folder_add(cli_folder *f, cli_fold_kind kind, const char *box, const char *text);
/* Prints and empties the folder: OUT lines on stdout as "SET: text",
 * ERROR and WARN lines through cli_error/cli_warn as "SET: text". */
void cli_folder_print(cli_folder *f, bool fold);
void cli_folder_release(cli_folder *f);

#endif
