/* boxgate results compare BEFORE AFTER: the points of two results files
 * paired and each called same, faster, slower or ambiguous (results/stats.h
 * states the rule). The `results` command dispatches here. */
#ifndef BG_CLI_RESULTS_COMPARE_H
#define BG_CLI_RESULTS_COMPARE_H

#include <stdbool.h>

#include "cli/cli.h"

/* args->v[0] is "compare", v[1] and v[2] the before and after files.
 * Prints an aligned table, or with `json` one JSON object per point and a
 * summary object. Returns BG_EXIT_FAIL when any point is slower, else
 * BG_EXIT_OK; BG_EXIT_USAGE for wrong operands or a file that cannot be
 * read (named on stderr). Torn and bad lines are warned about and skipped. */
int cli_results_compare(cli_ctx *ctx, const cli_args *args, bool json);

#endif
