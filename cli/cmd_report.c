/* boxgate report: the read side of a campaign (campaign/points.h) as a
 * Markdown report with SVG plots. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "base/strbuf.h"
#include "campaign/points.h"
#include "campaign/report.h"
#include "cli/cli.h"
#include "cli/campaign_read.h"
#include "results/select.h"

static const char report_help[] =
	"usage: boxgate report FILE [--campaign NAME] [--select SEL]... [--out DIR] [--json]\n"
	"\n"
	"Reads the results file FILE (the records of a campaign, of run sweeps such as\n"
	"'run --repeat 5 -- --num-workers 1,2', or a mix) and writes, next to FILE (or\n"
	"into DIR), with STEM its name without .jsonl:\n"
	"\n"
	"  STEM.report.md           the campaign or the file (records, boxes, GPUs, time\n"
	"                           span), per shape a table of every num_workers and\n"
	"                           candidate (slowCTA median and spread, ratio baseline\n"
	"                           over candidate and its source, wall, sumCTA, cos,\n"
	"                           verdict, n) with the best of each point in bold, the\n"
	"                           winner flips, links to the plots and notes\n"
	"  STEM.slowcta.SHAPE.svg   slowCTA against num_workers, one line per candidate,\n"
	"                           NOISY points hollow\n"
	"  STEM.ratio.svg           the ratio per shape and num_workers, one panel per\n"
	"                           candidate, on a log colour scale around the bar (reds\n"
	"                           below 1.0, greens from the bar up to 16 x the bar),\n"
	"                           NOISY cells marked ~\n"
	"Every plot names the devices and the time span and titles its axes.\n"
	"\n"
	"A run's record (not of a campaign) is a final record of its point: the gate\n"
	"arguments that set records apart name its candidate (candidate --variant\n"
	"nosplit), and runs on several devices make a shape per device. Of a campaign,\n"
	"only final records count (a cut attempt is requeued and recorded again); a job\n"
	"recorded twice keeps its last record. A cell's verdict: TIMEOUT_HANG if any run\n"
	"hung, INVALID if any run was invalid or none was judged, MEASURED when it has no\n"
	"ratio and every run measured the candidate alone (never best), NOISY when the slowCTA\n"
	"CV exceeds the campaign's max_cv, BELOW_BAR when its sumCTA exceeds the\n"
	"baseline's by more than sum_tolerance, else PASS_GATE when the ratio reaches the\n"
	"bar, else BELOW_BAR. Each file is written through a temporary file and renamed.\n"
	"\n"
	"  --campaign NAME  the campaign to report (needed when FILE holds several; its\n"
	"                   records alone, without those of runs)\n"
	"  --select SEL     only the records SEL picks (repeatable): KEY=VALUE terms joined\n"
	"                   by ',' as 'boxgate results --help' lists them (run=ID,\n"
	"                   campaign=NAME, candidate=NAME, since=DATE, variant=nosplit, ...)\n"
	"  --out DIR        write into DIR (created when missing)\n"
	"  --json           print the points as one JSON object instead of the paths\n"
	"\n"
	"Exit: 0 written, 1 FILE cannot be read, holds nothing to report (or nothing the\n"
	"selector picks) or a file cannot be written, 2 usage, a bad selector or an\n"
	"unknown campaign.\n";

struct report_opts {
	const char *campaign, *out;
	cli_list select;
};

static const cli_opt report_options[] = {
	CLI_OPT_JSON,
	CLI_OPT_STRING("campaign", struct report_opts, campaign),
	CLI_OPT_STRING("out", struct report_opts, out),
	CLI_OPT_LIST("select", struct report_opts, select),
	CLI_OPT_END,
};

static int run_report(cli_ctx *ctx, void *opts_, const cli_args *args)
{
	const struct report_opts *opts = opts_;
	campaign_points p;
	campaign_names written = {0};
	int code = cli_campaign_read("report", args, opts->campaign, &opts->select, &p);
	if (!code) {
		bg_err err = {0};
		if (campaign_report_write(&p, args->v[0], opts->out, &written, &err) < 0) {
			cli_error("report: %s", err.msg);
			code = BG_EXIT_FAIL;
		}
		if (ctx->opt.json) {
			cJSON *o = campaign_points_json(&p);
			cJSON *files = cJSON_AddArrayToObject(o, "written");
			for (size_t i = 0; i < written.n; i++)
				cJSON_AddItemToArray(files, cJSON_CreateString(written.v[i]));
			cli_print_json(o);
			cJSON_Delete(o);
		} else {
			for (size_t i = 0; i < written.n; i++)
				cli_printf(stdout, "%s\n", written.v[i]);
		}
	}
	campaign_names_release(&written);
	campaign_points_release(&p);
	return code;
}

/* clang-format off */
const cli_cmd cli_cmd_report = {
	.name = "report", .summary = "write a campaign's report: Markdown tables and SVG plots",
	.help = report_help, .options = report_options, .opts_size = sizeof(struct report_opts),
	.run = run_report,
};

/* clang-format on */
