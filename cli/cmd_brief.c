/* boxgate brief: what to hand whoever writes a candidate kernel for one
 * shape of a campaign (campaign/brief.h). */
#include <math.h>
#include <stdlib.h>

#include "base/exit.h"
#include "base/strbuf.h"
#include "campaign/brief.h"
#include "cli/cli.h"
#include "cli/campaign_read.h"

static const char brief_help[] =
	"usage: boxgate brief FILE --shape SHAPE [--campaign NAME] [--reference US]\n"
	"                     [--kernel FILE]\n"
	"\n"
	"Prints what to hand whoever writes a candidate kernel for SHAPE, from the\n"
	"campaign's records in the results file FILE: the exact gate command (one run per\n"
	"worker count of the shape), the measured in-tree baseline slowCTA per\n"
	"num_workers (median, spread, n, GPU), the target per num_workers (reference /\n"
	"bar), the worker-count sweep set, the best candidate so far, and the constraints\n"
	"a candidate must keep (no block barrier inside the persistent-sweep tile loop,\n"
	"aligned vector loads with the tails handled; the gate is the promotion authority\n"
	"and the candidate is overlaid into a shadow tree, never the production tree).\n"
	"\n"
	"  --shape SHAPE    the shape (required)\n"
	"  --campaign NAME  the campaign (needed when FILE holds several)\n"
	"  --reference US   the reference slowCTA in microseconds the target divides by\n"
	"                   the bar (default: the measured baseline median per num_workers)\n"
	"  --kernel FILE    the candidate file the gate command names (default: a\n"
	"                   placeholder)\n"
	"\n"
	"Exit: 0 printed, 1 FILE cannot be read or the shape has no baseline measurement,\n"
	"2 usage, an unknown campaign or shape.\n";

struct brief_opts {
	const char *campaign, *shape, *reference, *kernel;
};

static const cli_opt brief_options[] = {
	CLI_OPT_STRING("campaign", struct brief_opts, campaign),
	CLI_OPT_STRING("shape", struct brief_opts, shape),
	CLI_OPT_STRING("reference", struct brief_opts, reference),
	CLI_OPT_STRING("kernel", struct brief_opts, kernel),
	CLI_OPT_END,
};

static int run_brief(cli_ctx *ctx, void *opts_, const cli_args *args)
{
	(void)ctx;
	const struct brief_opts *opts = opts_;
	if (!opts->shape || !*opts->shape) {
		cli_error("brief: --shape SHAPE is required (boxgate brief FILE --shape SHAPE)");
		return BG_EXIT_USAGE;
	}
	campaign_brief_opts bo = {opts->shape, NAN, opts->kernel};
	if (opts->reference) {
		char *end = NULL;
		bo.reference = strtod(opts->reference, &end);
		if (!*opts->reference || *end || !isfinite(bo.reference) || !(bo.reference > 0)) {
			cli_error("brief: --reference wants a slowCTA in microseconds above 0, "
				  "got '%s'",
				  opts->reference);
			return BG_EXIT_USAGE;
		}
	}
	campaign_points p;
	int code = cli_campaign_read("brief", args, opts->campaign, &p);
	if (!code) {
		bg_err err = {0};
		strbuf out = STRBUF_INIT;
		int rc = campaign_brief_text(&p, &bo, &out, &err);
		if (rc < 0) {
			cli_error("brief: %s", err.msg);
			code = rc == BG_EUSAGE ? BG_EXIT_USAGE : BG_EXIT_FAIL;
		} else {
			cli_write(stdout, out.buf, out.len);
		}
		strbuf_release(&out);
	}
	campaign_points_release(&p);
	return code;
}

/* clang-format off */
const cli_cmd cli_cmd_brief = {
	.name = "brief", .summary = "print the brief for a candidate kernel of one campaign shape",
	.help = brief_help, .options = brief_options, .opts_size = sizeof(struct brief_opts),
	.run = run_brief,
};
/* clang-format on */
