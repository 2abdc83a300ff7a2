/* What boxgate report and boxgate brief share: one results FILE operand read
 * as a campaign, its skipped lines said. */
#include "cli/campaign_read.h"

#include <string.h>

#include "base/exit.h"
#include "cli/cli.h"
#include "results/select.h"

static int one_file(const char *cmd, const cli_args *args)
{
	if (args->n != 1) {
		if (args->n)
			cli_error("%s: one FILE, got '%s' and '%s'", cmd, args->v[0], args->v[1]);
		else
			cli_error("%s: no results file given (boxgate %s FILE)", cmd, cmd);
		return BG_EXIT_USAGE;
	}
	return 0;
}

int cli_campaign_read(const char *cmd, const cli_args *args, const char *name,
		      const cli_list *select, campaign_points *p)
{
	memset(p, 0, sizeof(*p));
	int code = one_file(cmd, args);
	if (code)
		return code;
	const char *path = args->v[0];
	bg_err err = {0};
	results_selector sel = RESULTS_SELECTOR_INIT;
	for (size_t i = 0; select && i < select->n; i++)
		if (results_selector_add(&sel, select->v[i], &err) < 0) {
			cli_error("%s: --select: %s", cmd, err.msg);
			results_selector_release(&sel);
			return BG_EXIT_USAGE;
		}
	int rc = campaign_points_read_any(path, name, sel.n ? &sel : NULL, p, &err);
	results_selector_release(&sel);
	if (rc < 0) {
		cli_error("%s: %s", cmd, err.msg);
		return rc == BG_EUSAGE ? BG_EXIT_USAGE : BG_EXIT_FAIL;
	}
	if (p->torn)
		cli_warn("%s: the last line is torn (an interrupted write), skipped", path);
	if (p->bad_lines)
		cli_warn("%s: %zu line%s not a record (first: line %zu), skipped", path,
			 p->bad_lines, p->bad_lines == 1 ? "" : "s", p->first_bad);
	return 0;
}
