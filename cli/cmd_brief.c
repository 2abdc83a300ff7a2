/* boxgate brief: what to hand whoever writes a candidate kernel for one
 * shape of a campaign (campaign/brief.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "base/strbuf.h"
#include "campaign/brief.h"
#include "base/xmalloc.h"
#include "cli/cli.h"
#include "cli/campaign_read.h"
#include "cli/gate_args.h"
#include "measure/kernel.h"

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
	"The gate command is built from the configuration and checked as 'explain' checks\n"
	"a run: every box of the campaign's pool must take the gate's arguments (its\n"
	"shim), and --kernel is suggested only when every box names a kernel path for the\n"
	"gate's --kind (kernel_paths) and has a repo; otherwise the brief says why. A pool\n"
	"missing from the configuration leaves the command unchecked, and says so.\n"
	"The best candidate so far is the lowest median slowCTA per worker count, with\n"
	"its verdict and interval; \"provisional\" when it is not measurably faster than\n"
	"the next.\n"
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

/* Checks the brief's gate command against the configuration, with the code run
 * and explain use: the pool's boxes must take the arguments (gate_args_parse,
 * which prints a refusal) and place a --kernel (measure_kernel_path). Sets
 * bo->no_kernel, bo->no_command and bo->note (written into *note). */
static void check_command(cli_ctx *ctx, const campaign_points *p, const char *shape,
			  campaign_brief_opts *bo, strbuf *note)
{
	const char *nw = NULL;
	char nwbuf[32];
	for (size_t i = 0; i < p->n_points && !nw; i++)
		if (strcmp(p->points[i].shape, shape) == 0 && p->points[i].has_num_workers) {
			snprintf(nwbuf, sizeof(nwbuf), "%ld", p->points[i].num_workers);
			nw = nwbuf;
		}
	const conf_pool *cp = NULL;
	if (!p->pool) {
		strbuf_addstr(note, "not checked: the campaign's records name no pool");
	} else if (cli_load_conf(ctx) != 0) {
		strbuf_addstr(note, "not checked: the configuration could not be read");
	} else if (!(cp = conf_find_pool(&ctx->conf, p->pool))) {
		strbuf_addf(note, "not checked: no pool '%s' in %s", p->pool,
			    ctx->conf.path ? ctx->conf.path
					   : "the configuration (none was loaded)");
	}
	if (!cp) {
		/* the pool's name comes from the records: no control byte reaches the terminal */
		for (size_t i = 0; i < note->len; i++)
			if ((unsigned char)note->buf[i] < 0x20 || note->buf[i] == 0x7f)
				note->buf[i] = '?';
		bo->note = note->buf;
		return;
	}
	/* The words the command gives the gate, at the shape's first worker count. */
	cli_args a = {0};
	a.v = xcalloc(p->n_gate_args + 7, sizeof(*a.v));
	for (size_t i = 0; i < p->n_gate_args; i++)
		a.v[a.n++] = p->gate_args[i];
	a.v[a.n++] = (char *)"--shape";
	a.v[a.n++] = (char *)shape;
	a.v[a.n++] = (char *)"--configs";
	a.v[a.n++] = (char *)shape;
	if (nw) {
		a.v[a.n++] = (char *)"--num-workers";
		a.v[a.n++] = nwbuf;
	}
	const char *kind = measure_gate_kind(a.v, a.n);
	const char *saved = ctx->opt.boxes;
	for (size_t i = 0; i < cp->n_slots && !bo->no_command; i++) {
		const conf_box *b = conf_find_box(&ctx->conf, cp->slots[i].box);
		if (!b)
			continue;
		gate_opts g = {0};
		gate_args ga;
		ctx->opt.boxes = b->name;
		if (gate_args_parse(ctx, &g, &a, &ga)) {
			bo->no_command = true;
			strbuf_addf(note, "box %s of pool %s refuses the gate's arguments (above)",
				    b->name, cp->name);
		} else if (!bo->no_kernel && !kind) {
			bo->no_kernel = true;
			strbuf_addstr(note,
				      "no --kernel: the gate's arguments name no --kind, so a "
				      "candidate has no place");
		} else if (!bo->no_kernel && !measure_kernel_path(b, kind)) {
			bo->no_kernel = true;
			strbuf_addf(note,
				    "no --kernel: box %s names no kernel path for --kind %s (add "
				    "%s:PATH to kernel_paths under [box %s] in %s)",
				    b->name, kind, kind, b->name,
				    b->file ? b->file : "the configuration");
		} else if (!bo->no_kernel && !b->repo) {
			bo->no_kernel = true;
			strbuf_addf(note,
				    "no --kernel: box %s has no repo for the candidate's overlay",
				    b->name);
		}
		gate_args_release(&ga);
	}
	ctx->opt.boxes = saved;
	free(a.v);
	bo->note = note->len ? note->buf : NULL;
}

static int run_brief(cli_ctx *ctx, void *opts_, const cli_args *args)
{
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
	int code = cli_campaign_read("brief", args, opts->campaign, NULL, &p);
	strbuf note = STRBUF_INIT;
	if (!code)
		check_command(ctx, &p, opts->shape, &bo, &note);
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
	strbuf_release(&note);
	return code;
}

/* clang-format off */
const cli_cmd cli_cmd_brief = {
	.name = "brief", .summary = "print the brief for a candidate kernel of one campaign shape",
	.help = brief_help, .options = brief_options, .opts_size = sizeof(struct brief_opts),
	.run = run_brief,
};
/* clang-format on */
