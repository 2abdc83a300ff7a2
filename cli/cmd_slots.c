/* boxgate slots: every slot of the selected boxes as the boxes' own agents see it
 * (free, held, disabled, busy), and `slots disable|enable BOX:GPUS` to mark a slot
 * out of use for everyone, stored on the box beside its locks. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/exit.h"
#include "base/fanout.h"
#include "base/parse.h"
#include "base/quote.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "cli/cli.h"
#include "gate/client/agent_install.h"
#include "gate/agent_proto.h"
#include "campaign/holders.h"
#include "cli/slots_holders.h"
#include "pool/lines.h"
#include "pool/slot_probe.h"

static const char slots_help[] =
	"usage: boxgate slots [--boxes SPEC | --pool POOL | --all | BOX...] [--exclude SPEC]\n"
	"                     [--no-fold] [--json]\n"
	"       boxgate slots disable BOX:GPUS --why TEXT\n"
	"       boxgate slots enable BOX:GPUS\n"
	"\n"
	"Lists every slot of the boxes (a pool's slots as its `slots =` names them; else a\n"
	"box's `gpus`, else every GPU the box's NVML sees, else its one CPU slot), read by\n"
	"the agent on each box from the same lock files `run` takes, boxes in parallel:\n"
	"  free      no run holds it and NVML lists no compute process on it\n"
	"  held      a run holds it: its tag (user@host:pid of the client), agent pid, since\n"
	"  disabled  marked out of use: the reason, who and since when\n"
	"  busy      no boxgate run holds it, but NVML lists a compute process (a foreign job)\n"
	"A slot a campaign holds reads \"campaign NAME: user@host:pid\"; a campaign detached\n"
	"from this client adds \"(detached, JOB)\", the job on that slot. Below the table,\n"
	"each pool's first-come line (run --pool P --wait S, kept on the pool's first box)\n"
	"lists who waits, first in line first: position, user@host:pid, since when, ticket\n"
	"(--pool P says \"no one waits\" for an empty line; other listings show the lines of\n"
	"pools whose first box they list, where someone waits).\n"
	"Looking never takes a lock, so it never makes a run busy. A Slurm box (scheduler =\n"
	"slurm) lists boxgate's jobs from squeue (held: running, pending: queued) and its\n"
	"free places up to max_jobs. A box with a live connection master (control_persist_s)\n"
	"is asked through it.\n"
	"\n"
	"disable marks the slot on the box (everyone who connects sees it, and `run` refuses\n"
	"it naming the reason; a run already holding it finishes); enable removes the mark.\n"
	"GPUS is \"5\", \"0,1\" or \"2-3\", GPUs of the box's `gpus` (as run --gpu takes\n"
	"them; checked before connecting); BOX alone (no ':') is its CPU slot, the one\n"
	"slot of a box that lists no gpus.\n"
	"\n"
	"  --boxes SPEC   the boxes (-w SPEC; repeatable); BOX... names them too\n"
	"  --exclude SPEC leave these boxes out (-x SPEC; repeatable)\n"
	"  --no-fold  one row per box and slot; by default the boxes whose row reads the\n"
	"             same are one row led by their node set (h[1-8]  gpu0  free), boxes in\n"
	"             name order\n"
	"  --json     one JSON object per slot, \"box\" added (\"campaign\", "
	"\"campaign_detached\",\n"
	"             \"campaign_job\" on a campaign's slot), then one per waiter in line:\n"
	"             {\"line\":POOL,\"box\",\"position\",\"ticket\",\"pid\",\"tag\",\"since\"}\n"
	"  --why TEXT the reason shown to everyone refused (disable; required)\n"
	"Exit: 0 every box answered, else the worst of the boxes' errors (3 connect, 4 host\n"
	"key, ...); 2 usage.\n";

struct slots_opts {
	const char *why;
};

static const cli_opt slots_options[] = {
	CLI_OPT_SELECT,  CLI_OPT_JSON,
	CLI_OPT_NO_FOLD, CLI_OPT_STRING("why", struct slots_opts, why),
	CLI_OPT_END,
};

static const char *str_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The table's last column: who holds it, why it is out, or what runs on it. */
static void detail_of(const cJSON *row, strbuf *d)
{
	const char *state = str_of(row, "state");
	const cJSON *pid = cJSON_GetObjectItemCaseSensitive(row, "pid");
	if (state && strcmp(state, "held") == 0 && str_of(row, "campaign")) {
		/* "campaign NAME (detached, job KEY): user@host:pid" */
		const char *tag = str_of(row, "tag"), *sp = tag ? strchr(tag, ' ') : NULL;
		bool det = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(row, "campaign_detached"));
		strbuf_addf(d, "campaign %s", str_of(row, "campaign"));
		if (det || str_of(row, "campaign_job"))
			strbuf_addf(d, " (%s%s%s)", det ? "detached" : "",
				    det && str_of(row, "campaign_job") ? ", " : "",
				    str_of(row, "campaign_job") ? str_of(row, "campaign_job") : "");
		if (sp)
			strbuf_addf(d, ": %s", sp + 1);
		if (cJSON_IsNumber(pid))
			strbuf_addf(d, " (agent pid %d)", pid->valueint);
		strbuf_addf(d, " since %s", str_of(row, "since") ? str_of(row, "since") : "?");
	} else if (state && strcmp(state, "held") == 0) {
		strbuf_addf(d, "%s", str_of(row, "tag") ? str_of(row, "tag") : "?");
		if (cJSON_IsNumber(pid))
			strbuf_addf(d, " (agent pid %d)", pid->valueint);
		strbuf_addf(d, " since %s", str_of(row, "since") ? str_of(row, "since") : "?");
	}
	if (str_of(row, "slurm_job"))
		strbuf_addf(d, "%sSlurm job %s %s on %s, %s", d->len ? ", " : "",
			    str_of(row, "slurm_job"), str_of(row, "slurm_state"),
			    str_of(row, "node") && *str_of(row, "node") ? str_of(row, "node") : "-",
			    str_of(row, "gres") ? str_of(row, "gres") : "?");
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(row, "disabled"))) {
		strbuf_addf(d, "%s%s (by %s", d->len ? "; disabled: " : "",
			    str_of(row, "why") ? str_of(row, "why") : "?",
			    str_of(row, "disabled_by") ? str_of(row, "disabled_by") : "?");
		if (str_of(row, "disabled_since"))
			strbuf_addf(d, " since %s", str_of(row, "disabled_since"));
		strbuf_addch(d, ')');
	}
	const cJSON *procs = cJSON_GetObjectItemCaseSensitive(row, "procs"), *p;
	if (state && strcmp(state, "busy") == 0)
		cJSON_ArrayForEach(p, procs)
		{
			const cJSON *pp = cJSON_GetObjectItemCaseSensitive(p, "pid");
			strbuf_addf(d, "%spid %d (%s)", d->len ? ", " : "compute process ",
				    cJSON_IsNumber(pp) ? pp->valueint : -1,
				    str_of(p, "name") ? str_of(p, "name") : "?");
		}
}

/* One table row: the box it is about and its other columns. */
struct slot_row {
	const char *box;
	size_t seq;
	char *slot, *state, *detail;
	bool done;
};

static int cmp_row(const void *a, const void *b)
{
	const struct slot_row *x = a, *y = b;
	int c = cli_box_name_cmp(x->box, y->box);
	return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

static bool same_row(const struct slot_row *a, const struct slot_row *b)
{
	return strcmp(a->slot, b->slot) == 0 && strcmp(a->state, b->state) == 0 &&
	       strcmp(a->detail, b->detail) == 0;
}

/* Boxes in name order; with `fold`, the boxes whose row reads the same are
 * one row led by their node set (h[1-8]  gpu0  free). */
static void print_table(const slot_probe *jobs, size_t n, bool fold)
{
	size_t nr = 0, cap = 0;
	struct slot_row *rows = NULL;
	for (size_t i = 0; i < n; i++) {
		const cJSON *row;
		cJSON_ArrayForEach(row, jobs[i].rows)
		{
			strbuf d = STRBUF_INIT;
			detail_of(row, &d);
			const char *sl = str_of(row, "slot"), *st = str_of(row, "state");
			if (nr == cap) {
				cap = cap ? cap * 2 : 16;
				rows = xrealloc(rows, cap * sizeof(*rows));
			}
			rows[nr] = (struct slot_row){jobs[i].box->name,      nr,
						     xstrdup(sl ? sl : "?"), xstrdup(st ? st : "?"),
						     strbuf_detach(&d),      false};
			nr++;
		}
	}
	if (nr > 1) /* rows is NULL when there are none */
		qsort(rows, nr, sizeof(*rows), cmp_row);
	/* The first column: a box name or a node set per printed row. */
	char **lead = xcalloc(nr ? nr : 1, sizeof(*lead));
	const char **names = xcalloc(nr ? nr : 1, sizeof(*names));
	size_t wbox = 3, wslot = 4;
	for (size_t i = 0; i < nr; i++) {
		if (rows[i].done)
			continue;
		size_t k = 0;
		for (size_t j = i; j < nr && fold; j++) {
			if (rows[j].done || !same_row(&rows[i], &rows[j]))
				continue;
			if (j > i)
				rows[j].done = true;
			if (!k || strcmp(names[k - 1], rows[j].box) != 0)
				names[k++] = rows[j].box;
		}
		lead[i] = k ? cli_fold_names(names, k) : xstrdup(rows[i].box);
		if (strlen(lead[i]) > wbox)
			wbox = strlen(lead[i]);
		if (strlen(rows[i].slot) > wslot)
			wslot = strlen(rows[i].slot);
	}
	cli_printf(stdout, "%-*s  %-*s  %-8s  %s\n", (int)wbox, "BOX", (int)wslot, "SLOT", "STATE",
		   "DETAIL");
	for (size_t i = 0; i < nr; i++) {
		if (lead[i] && rows[i].detail[0])
			cli_printf(stdout, "%-*s  %-*s  %-8s  %s\n", (int)wbox, lead[i], (int)wslot,
				   rows[i].slot, rows[i].state, rows[i].detail);
		else if (lead[i])
			cli_printf(stdout, "%-*s  %-*s  %s\n", (int)wbox, lead[i], (int)wslot,
				   rows[i].slot, rows[i].state);
		free(lead[i]);
		free(rows[i].slot);
		free(rows[i].state);
		free(rows[i].detail);
	}
	free(lead);
	free(names);
	free(rows);
}

/* The jobs of a listing: a pool's slots by box, else the selected boxes. */
static int list_jobs(cli_ctx *ctx, const cli_args *args, slot_probe **out, size_t *n)
{
	bg_err err = {0};
	const conf_pool *pool = ctx->opt.pool ? conf_find_pool(&ctx->conf, ctx->opt.pool) : NULL;
	const conf_box **boxes = NULL;
	size_t nb = 0;
	int rc;
	if (ctx->opt.pool && !pool) {
		cli_error("no pool '%s' in %s", ctx->opt.pool,
			  ctx->conf.path ? ctx->conf.path : "the configuration (none was loaded)");
		return BG_EXIT_USAGE;
	}
	if (args->n && (ctx->opt.pool || ctx->opt.boxes || ctx->opt.all)) {
		cli_error("slots: give boxes as operands or with --boxes/--pool/--all, not both");
		return BG_EXIT_USAGE;
	}
	if (pool) {
		*out = slot_probe_pool(&ctx->conf, pool->name, cli_exclude_spec(ctx), n, &err);
		if (!*out)
			cli_error("%s", err.msg);
		return *out ? 0 : BG_EXIT_USAGE;
	}
	if (args->n) {
		strbuf spec = STRBUF_INIT;
		for (size_t i = 0; i < args->n; i++)
			strbuf_addf(&spec, "%s%s", i ? "," : "", args->v[i]);
		rc = conf_select_except(&ctx->conf, spec.buf, false, cli_exclude_spec(ctx), &boxes,
					&nb, &err);
		strbuf_release(&spec);
	} else {
		rc = conf_select_except(&ctx->conf, ctx->opt.boxes, ctx->opt.all || !ctx->opt.boxes,
					cli_exclude_spec(ctx), &boxes, &nb, &err);
	}
	if (rc < 0) {
		cli_error("%s", err.msg);
		return bg_exit_code(rc);
	}
	if (nb == 0) { /* an exclusion took every box away */
		free(boxes);
		cli_error("the selection matched no box");
		return BG_EXIT_USAGE;
	}
	slot_probe *jobs = xcalloc(nb ? nb : 1, sizeof(*jobs));
	for (size_t i = 0; i < nb; i++) {
		jobs[i].box = boxes[i];
		jobs[i].gpus = boxes[i]->gpus ? xstrdup(boxes[i]->gpus) : NULL;
	}
	free(boxes);
	*out = jobs;
	*n = nb;
	return 0;
}

/* BOX:GPUS (or BOX, its CPU slot) of disable/enable. */
static int mark_job(cli_ctx *ctx, const char *target, slot_probe *j)
{
	const char *colon = strrchr(target, ':');
	char *name = colon ? xstrndup(target, (size_t)(colon - target)) : xstrdup(target);
	const conf_box *b = conf_find_box(&ctx->conf, name);
	if (!b) {
		cli_error("slots: no box '%s' (BOX:GPUS, e.g. b200-a:5)", name);
		free(name);
		return BG_EXIT_USAGE;
	}
	free(name);
	/* GPUS as run's --gpu takes it: GPUs of the box's `gpus`, checked here before
	 * anything connects, and sent in one canonical form ("0,0" is "0"). */
	const char *g = colon ? colon + 1 : "", *why = NULL;
	bool want[BG_MAX_GPUS], have[BG_MAX_GPUS];
	if (colon &&
	    (!*g || strspn(g, "0123456789,- ") != strlen(g) || !bg_gpus_parse(g, want, &why))) {
		cli_error("slots: bad GPUS '%s' in '%s'%s%s (\"5\", \"0,1\" or \"2-3\")", g, target,
			  why ? ": " : "", why ? why : "");
		return BG_EXIT_USAGE;
	}
	if (colon && b->gpus) {
		if (!bg_gpus_parse(b->gpus, have, &why)) {
			cli_error("slots: box %s: bad gpus '%s': %s", b->name, b->gpus, why);
			return BG_EXIT_USAGE;
		}
		for (int k = 0; k < BG_MAX_GPUS; k++)
			if (want[k] && !have[k]) {
				cli_error("slots: GPU %d is not one of box %s's gpus (%s)", k,
					  b->name, b->gpus);
				return BG_EXIT_USAGE;
			}
	} else if (colon && b->transport != CONF_TRANSPORT_LOCAL) {
		cli_error("slots: box %s lists no gpus: its one slot is the CPU slot, '%s' "
			  "without ':GPUS' (or set gpus = ... under [box %s] in %s)",
			  b->name, b->name, b->name, b->file);
		return BG_EXIT_USAGE;
	}
	strbuf canon = STRBUF_INIT;
	for (int k = 0; colon && k < BG_MAX_GPUS; k++)
		if (want[k])
			strbuf_addf(&canon, "%s%d", canon.len ? "," : "", k);
	j->box = b;
	j->gpus = strbuf_detach(&canon);
	return 0;
}

static int run_slots(cli_ctx *ctx, void *opts, const cli_args *args)
{
	const struct slots_opts *so = opts;
	slot_probe *jobs = NULL;
	size_t n = 0;
	const char *action = NULL;
	int code;
	/* A first word that is no box but close to a subcommand was a typo. */
	static const char *const subs[] = {"disable", "enable"};
	if (args->n && !conf_find_box(&ctx->conf, args->v[0]) && !strpbrk(args->v[0], "[@,!&^") &&
	    strcmp(args->v[0], "disable") != 0 && strcmp(args->v[0], "enable") != 0 &&
	    conf_suggest(args->v[0], subs, 2))
		return cli_unknown_subcommand("slots", args->v[0], subs, 2);
	if (args->n && (strcmp(args->v[0], "disable") == 0 || strcmp(args->v[0], "enable") == 0)) {
		bool disable = args->v[0][0] == 'd';
		if (args->n != 2) {
			cli_error("slots %s takes one BOX:GPUS (boxgate slots %s b200-a:5%s)",
				  args->v[0], args->v[0], disable ? " --why TEXT" : "");
			return BG_EXIT_USAGE;
		}
		if (disable && (!so->why || !*so->why)) {
			cli_error("slots disable needs --why TEXT: the reason everyone refused "
				  "reads");
			return BG_EXIT_USAGE;
		}
		if (!disable && so->why) {
			cli_error("slots enable takes no --why");
			return BG_EXIT_USAGE;
		}
		jobs = xcalloc(1, sizeof(*jobs));
		if ((code = mark_job(ctx, args->v[1], &jobs[0])) != 0) {
			free(jobs);
			return code;
		}
		action = disable ? AGENT_CMD_SLOT_DISABLE : AGENT_CMD_SLOT_ENABLE;
		jobs[0].action = action;
		jobs[0].why = disable ? so->why : NULL;
		n = 1;
	} else {
		if (so->why) {
			cli_error("slots: --why goes with 'slots disable BOX:GPUS'");
			return BG_EXIT_USAGE;
		}
		if ((code = list_jobs(ctx, args, &jobs, &n)) != 0)
			return code;
	}
	gate_agent agent;
	bg_err err = {0};
	if (gate_agent_locate(&agent, &err) < 0) {
		cli_error("%s", err.msg);
		slot_probe_release(jobs, n);
		return BG_EXIT_FAIL;
	}
	remote_connect_opts link = cli_link_warm(ctx);
	/* a listing keeps the connections: the pools' lines are read over them */
	slot_probe_all(jobs, n, &agent, &link, !action);
	cJSON *lines = NULL;
	if (!action) {
		campaign_note_holders(jobs, n);
		lines = pool_lines_read(&ctx->conf, ctx->opt.pool, jobs, n, &agent);
	}
	code = BG_EXIT_OK;
	for (size_t i = 0; i < n; i++) {
		if (jobs[i].code)
			cli_error("%s", jobs[i].error);
		code = bg_exit_merge(code, jobs[i].code);
	}
	if (action) {
		for (char *l = jobs[0].out, *e; l && *l; l = e ? e + 1 : NULL) {
			e = strchr(l, '\n');
			cli_print_line(stdout, jobs[0].box->name, l,
				       e ? (size_t)(e - l) : strlen(l));
		}
	} else if (ctx->opt.json) {
		for (size_t i = 0; i < n; i++) {
			cJSON *row;
			cJSON_ArrayForEach(row, jobs[i].rows)
			{
				cJSON *o = cJSON_Duplicate(row, 1);
				cJSON_AddStringToObject(o, "box", jobs[i].box->name);
				cli_print_json(o);
				cJSON_Delete(o);
			}
		}
		slots_print_lines_json(lines);
	} else {
		print_table(jobs, n, !ctx->opt.no_fold);
		slots_print_lines(lines, ctx->opt.pool != NULL);
	}
	cJSON_Delete(lines);
	slot_probe_release(jobs, n);
	gate_agent_release(&agent);
	return code;
}

/* clang-format off */
const cli_cmd cli_cmd_slots = {
	.name = "slots", .summary = "every GPU slot: free, held (by whom), disabled (why), busy",
	.help = slots_help, .options = slots_options, .opts_size = sizeof(struct slots_opts),
	.order = CLI_OPTIONS_ANYWHERE, .needs = CLI_NEEDS_CONFIG, .box_operand = CLI_BOX_FLAGS_ONLY,
	.arity = CLI_ARGS_ANY, .run = run_slots,
};
/* clang-format on */
