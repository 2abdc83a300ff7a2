/* What boxgate report and boxgate brief share: one results FILE operand read
 * as a campaign. */
#ifndef BG_CLI_CAMPAIGN_READ_H
#define BG_CLI_CAMPAIGN_READ_H

#include "campaign/points.h"
#include "cli/options.h"

/* Reads the records of the one FILE operand that `select` picks (NULL or
 * empty: all; each value a selector, results/select.h), of the campaign
 * `name` (NULL: the only one, with the records of runs) into *p (release it
 * with campaign_points_release, also after an error); prints what went wrong
 * as "CMD: ..." and the lines skipped. Returns 0 or an exit code: 2 for usage,
 * a bad selector or an unknown campaign, 1 for a file that cannot be read or
 * holds nothing to report. */
int cli_campaign_read(const char *cmd, const cli_args *args, const char *name,
		      const cli_list *select, campaign_points *p);

#endif
