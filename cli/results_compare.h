/* boxgate results compare: the points of two sides paired and each called
 * same, faster, slower or ambiguous (measure/delta.h states the rule). A side
 * is a results file and a selector (results/select.h): two files, or one
 * store (FILE, else the default store) split by --before and --after. The
 * `results` command dispatches here. */
#ifndef BG_CLI_RESULTS_COMPARE_H
#define BG_CLI_RESULTS_COMPARE_H

#include <stdbool.h>

#include "cli/cli.h"

typedef struct cli_compare_opts {
	const cli_list *before, *after; /* --before SEL, --after SEL (NULL: none) */
	const char *pair;               /* --pair KEY or --pair A=B, NULL: none */
	bool json, csv;
} cli_compare_opts;

/* args->v[0] is "compare", then zero, one or two files. Prints a table like
 * benchstat's (median ± CV per side, the change with its interval, p), or
 * with `json` one JSON object per point and a summary object, or with `csv`
 * one CSV row per point. Returns BG_EXIT_FAIL when some point is decided
 * slower, else BG_EXIT_OK; BG_EXIT_USAGE for wrong operands, a bad selector
 * or one that matches no record (named on stderr), or a file that cannot be
 * read. Torn and bad lines are warned about and skipped. */
int cli_results_compare(cli_ctx *ctx, const cli_args *args, const cli_compare_opts *o);

#endif
