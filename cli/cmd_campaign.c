/* boxgate campaign: a matrix of gate runs fanned out over every free slot of a
 * pool, recorded as it goes, resumable. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/exit.h"
#include "base/parse.h"
#include "base/strbuf.h"
#include "base/timer.h"
#include "base/xmalloc.h"
#include "campaign/boxes.h"
#include "campaign/points.h"
#include "campaign/recorded.h"
#include "campaign/sched.h"
#include "campaign/slots.h"
#include "cli/campaign_detach.h"
#include "cli/campaign_view.h"
#include "cli/gate_args.h"
#include "cli/sync_driver.h"
#include "measure/kernel.h"
#include "pool/slot_probe.h"
#include "results/record.h"
#include "results/store.h"
#include "sync/push_files.h"
#include "sync/report.h"

static const char campaign_help[] =
	"usage: boxgate campaign FILE|NAME [--name NAME] [--dry-run] [--plain] [--json]\n"
	"                        [--results FILE] [--accept-new] [--detach]\n"
	"       boxgate campaign status [NAME] [--json]\n"
	"       boxgate campaign logs NAME [-f]\n"
	"       boxgate campaign cancel NAME\n"
	"       boxgate campaign list [--json]\n"
	"\n"
	"Runs (or continues) the campaign a [campaign NAME] section describes: in FILE, or in\n"
	"boxgate.ini when the operand is no file but a campaign's name. Its keys:\n"
	"\n"
	"  pool = P                 the pool whose slots run the jobs (required)\n"
	"  gate_args = WORDS        passed to every job first (e.g. --kind largem_compact)\n"
	"  shapes = S...            each job gets --shape S --configs S (required)\n"
	"  num_workers = N...       each job gets --num-workers N (none: no such flag)\n"
	"  candidates = C...        `baseline` (the in-tree kernel: the gate gets --baseline),\n"
	"                           a NAME defined by candidate.NAME = GATE FLAGS, or a kernel\n"
	"                           file overlaid as run --kernel does (the box's kernel_paths\n"
	"                           entry for the gate's --kind says where); default baseline\n"
	"  repeats = N              each point runs N times (1-100, default 1)\n"
	"  timeout_s = S            the watchdog timeout of each job (default: the box's)\n"
	"  bar = R                  the slowCTA ratio a candidate needs (default: the gate's)\n"
	"  max_cv = PCT             a cell whose slowCTA CV exceeds it gets a warning (default\n"
	"                           [defaults] max_cv, else 2)\n"
	"  strict_noise = yes|no    yes: a CV over max_cv makes the cell NOISY (default no;\n"
	"                           a cell is decided on its ratio's 90% interval: PASS_GATE\n"
	"                           above the bar, BELOW_BAR below, NOISY when it straddles)\n"
	"  sum_tolerance = PCT      anti-sloughing: a candidate's sumCTA may exceed the\n"
	"                           baseline's by this much (default 10)\n"
	"  push = FILE...           pushed to every box of the pool before the first job (as\n"
	"                           `boxgate push`: .bak, verify, atomic swap); a refusal stops\n"
	"                           the campaign before any job runs\n"
	"  results = FILE           where the records go (default NAME.results.jsonl)\n"
	"  max_failures = K         a box that fails K times is quarantined (default 2)\n"
	"  lock_wait_s = S          a job waits up to S s for its slot's lock (default 30)\n"
	"  persistent_agent = yes|no  yes (default): each worker keeps one serving agent on its\n"
	"                           box and hands it its jobs over stdin, one round trip a job;\n"
	"                           no: an exec channel per job\n"
	"Relative paths are taken from the campaign file's directory.\n"
	"\n"
	"The jobs (shapes x worker counts x candidates x repeats, every point once before any\n"
	"point twice) go to the pool's slots as they free up: one worker per usable slot (free,\n"
	"or held by another run: the job waits up to lock_wait_s; disabled and busy slots are\n"
	"left), one SSH connection per slot, kept for all its jobs, and a second worker per\n"
	"slot that stages the next job while the queue holds one for every slot (its agent\n"
	"waits on the slot's lock, so the slot goes from one gate to the next at once). A job\n"
	"whose box fails (connect, agent, dead link) goes back to the queue for a slot of\n"
	"another box; a box failing max_failures times (failures within a second count\n"
	"once) is quarantined for the rest of the run. When only the agent vanished and\n"
	"the box answers again, the job is charged (and the box once the job runs well\n"
	"elsewhere): a job charged twice is recorded failed, the job's fault, and the\n"
	"boxes stay in service. A gate that hangs is that job's TIMEOUT_HANG, not a box\n"
	"failure. Every invocation is recorded as it ends, with a \"campaign\" object (its\n"
	"job key, attempt, and \"final\": false for an attempt that was cut); running the\n"
	"same campaign again skips every job already recorded final, so after a crash,\n"
	"Ctrl-C or SIGKILL nothing runs twice and nothing is missing. A job's key holds\n"
	"its definition (gate_args, the candidate's flags, its kernel file's SHA-256): an\n"
	"edit makes new jobs, the run names the cells that changed, and their old records\n"
	"are not counted. A run locks the results file before it reads it: a second run\n"
	"of the campaign waits for the first, then runs only what is left.\n"
	"\n"
	"  --name NAME    the campaign, when FILE holds several\n"
	"  --dry-run      list the jobs, which are already recorded, and where each would go\n"
	"                 first; nothing connects\n"
	"  --plain        one line per finished job, no status line (the default without a\n"
	"                 terminal)\n"
	"  --json         one JSON event per line on stdout (job_end, job_cut, quarantined,\n"
	"                 slot_left, summary)\n"
	"  --results FILE records go here instead of the campaign's results file\n"
	"  --detach       run in the background, in a session of its own (closing the\n"
	"                 terminal does not stop it): prints the campaign's name and returns;\n"
	"                 its output goes to a log and its state to a file, both under\n"
	"                 $XDG_STATE_HOME/boxgate/campaigns (~/.local/state/...); a second\n"
	"                 detached run of the same campaign is refused while one runs\n"
	"\n"
	"Detached campaigns (status, logs, cancel and list are words, not campaign names):\n"
	"  status [NAME]  progress, the job running on each slot, ETA, cut attempts,\n"
	"                 quarantined boxes, how it ended (\"died\" when it was killed)\n"
	"  logs NAME [-f] its output; -f/--follow keeps reading until it ends\n"
	"  cancel NAME    stops it as Ctrl-C does (scheduling, then the running gates on\n"
	"                 every box; the cut attempts are recorded \"final\": false) and\n"
	"                 waits until it has ended\n"
	"  list           every detached campaign with its state\n"
	"\n"
	"Ctrl-C stops scheduling, stops the running gates on every box cleanly and says what\n"
	"is done and left. At the end: the summary per shape x num_workers (see 'boxgate\n"
	"report'). Exit: 0 when every job is recorded (whatever the verdicts), 1 when jobs are\n"
	"left (no usable slot, quarantined boxes, a record that could not be written), 2 bad\n"
	"usage or campaign file, 3 no box of the pool could be reached, 130 interrupted.\n";

typedef struct campaign_opts {
	const char *name;
	bool dry_run;
	bool plain;
	bool detach;
	bool follow;
	const char *results;
} campaign_opts;

static const cli_opt campaign_options[] = {
	CLI_OPT_STRING("name", campaign_opts, name),
	CLI_OPT_FLAG("dry-run", campaign_opts, dry_run),
	CLI_OPT_FLAG("plain", campaign_opts, plain),
	CLI_OPT_FLAG("detach", campaign_opts, detach),
	{"follow", 'f', CLI_FLAG, false, offsetof(campaign_opts, follow), 0, 0},
	CLI_OPT_STRING("results", campaign_opts, results),
	CLI_OPT_JSON,
	CLI_OPT_ACCEPT_NEW,
	CLI_OPT_END,
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* Says which cells changed definition since their records: none of their
 * jobs is recorded under the current one (they run again; their old records
 * are not counted). */
static void say_changed(const campaign_spec *sp, const campaign_job *jobs, size_t n_jobs,
			const campaign_recorded *d)
{
	bool *cand_changed = xcalloc(sp->n_cands ? sp->n_cands : 1, sizeof(bool));
	size_t n = campaign_recorded_changed_cells(sp, jobs, n_jobs, d, cand_changed);
	if (n) {
		strbuf b = STRBUF_INIT;
		for (size_t c = 0; c < sp->n_cands; c++)
			if (cand_changed[c])
				strbuf_addf(
					&b, "%s%s%s (%s)", b.len ? ", " : "",
					sp->cands[c].file ||
							strcmp(sp->cands[c].name, "baseline") == 0
						? ""
						: "candidate.",
					sp->cands[c].file ? sp->cands[c].shown : sp->cands[c].name,
					d->why[c] && *d->why[c] ? d->why[c] : "definition");
		cli_printf(stderr,
			   "boxgate: campaign %s: %zu cell%s changed definition since %s records: "
			   "%s; %s again, and the old records are not counted\n",
			   sp->name, n, n == 1 ? "" : "s", n == 1 ? "its" : "their", b.buf,
			   n == 1 ? "it runs" : "they run");
		strbuf_release(&b);
	}
	free(cand_changed);
}

static int load_spec(cli_ctx *ctx, const campaign_opts *o, const char *operand, campaign_spec *sp)
{
	bg_err err = {0};
	struct stat st;
	const char *file = operand, *name = o->name;
	bool by_name = stat(operand, &st) != 0 && !strchr(operand, '/') && ctx->conf.path;
	if (by_name) {
		/* a campaign's name: its section in boxgate.ini */
		file = ctx->conf.path;
		name = operand;
	}
	int rc = campaign_spec_load(file, name, sp, &err);
	if (rc < 0 && by_name && rc == BG_EUSAGE) {
		cli_error("campaign: %s: no such campaign file, and %s has no [campaign %s]",
			  operand, ctx->conf.path, operand);
		return BG_EXIT_USAGE;
	}
	if (rc < 0) {
		cli_error("campaign: %s", err.msg);
		return BG_EXIT_USAGE;
	}
	if (o->results) {
		free(sp->results);
		sp->results = xstrdup(o->results);
	}
	if (sp->max_cv < 0)
		sp->max_cv = ctx->conf.max_cv >= 0 ? ctx->conf.max_cv : 2.0;
	if (!conf_find_pool(&ctx->conf, sp->pool)) {
		cli_error("campaign: %s:%d: no pool '%s' in %s", sp->file, sp->line, sp->pool,
			  ctx->conf.path ? ctx->conf.path : "the configuration (none was loaded)");
		return BG_EXIT_USAGE;
	}
	return 0;
}

/* campaign_boxes_prepare, its refusal printed. */
static int prepare_boxes(cli_ctx *ctx, const campaign_spec *sp, sched *s, campaign_box_args *ba)
{
	bg_err err = {0};
	int code = campaign_boxes_prepare(&ctx->conf, sp, ctx->cmd->name, ctx->opt.json, NULL, s,
					  ba, &err);
	if (!code)
		return 0;
	cli_error("%s", err.msg);
	if (ba->bad_job != SIZE_MAX)
		cli_error("campaign %s: job %s cannot run on box %s (%s:%d)", sp->name,
			  s->jobs[ba->bad_job].key, s->boxes[ba->bad_box].box->name, sp->file,
			  sp->line);
	return code;
}

/* ---- push = FILE...: the sources on every box before the first job ---- */

struct push_say {
	const char *name; /* the campaign's */
	bool json;
};

static void push_plan_error(void *ctx, const bg_err *err)
{
	const struct push_say *say = ctx;
	cli_error("campaign %s: push: %s", say->name, err->msg);
}

/* One box's push: a JSON object per file, or one line naming each file's
 * state, each failure an error of its own. */
static void push_report(void *ctx, const sync_box *b)
{
	const struct push_say *say = ctx;
	const char *box = b->box->name;
	strbuf line = STRBUF_INIT;
	if (say->json)
		cli_sync_print_json(b);
	else if (b->rc < 0)
		cli_error("campaign %s: push: %s: %s", say->name, box, b->err.msg);
	for (size_t i = 0; !say->json && i < b->plan->n; i++) {
		const sync_file *f = &b->files[i];
		if (sync_state_failed(f->state)) {
			char *shown = sync_path_display(b->plan->items[i].rel);
			if (f->msg)
				cli_error("campaign %s: push: %s", say->name,
					  f->msg); /* names the box */
			else
				cli_error("campaign %s: push: %s: %s: not pushed", say->name, box,
					  shown);
			if (f->verify_out)
				cli_sync_print_output(box, f->verify_out);
			free(shown);
		} else {
			char *d = sync_file_describe(b, i);
			strbuf_addf(&line, "%s%s", line.len ? "; " : "", d);
			free(d);
		}
		if (f->warn)
			cli_warn("%s", f->warn);
	}
	if (line.len)
		cli_printf(stderr, "boxgate: campaign %s: push: %s: %s\n", say->name, box,
			   line.buf);
	strbuf_release(&line);
	char *mw = sync_manifest_warning(b);
	if (mw)
		cli_warn("%s", mw);
	free(mw);
}

static void push_check_could_not_run(void *ctx, const sync_item *it, const char *why)
{
	const struct push_say *say = ctx;
	cli_warn("campaign %s: push: %s: the local check could not run: %s", say->name, it->arg,
		 why);
}

static void push_check_refused(void *ctx, const sync_item *it, int rc, const char *out)
{
	const struct push_say *say = ctx;
	char *shown = sync_path_display(it->rel);
	cli_error("campaign %s: push: %s: refused by the local check (exit %d), no box was "
		  "touched:",
		  say->name, shown, rc);
	cli_sync_print_output("local", out);
	free(shown);
}

/* The spec's push = FILE... on every box of the pool (sync_push_files, as
 * `boxgate push` pushes: .bak, verify, atomic swap); push's exit code. */
static int push_sources(cli_ctx *ctx, const campaign_spec *sp, const sched *s)
{
	struct push_say say = {sp->name, ctx->opt.json};
	sync_push_files_cb cb = {
		.plan_error = push_plan_error,
		.report = push_report,
		.checks = {push_check_could_not_run, push_check_refused, &say},
		.ctx = &say,
	};
	sync_opts opts = {
		.verifier_for = conf_verifier_for,
		.verifier_ctx = &ctx->conf,
		.log = cli_log_warning,
		.trace = getenv("BOXGATE_TRACE") ? cli_sync_trace : NULL,
		.accept_new = ctx->opt.accept_new,
	};
	sync_target *targets = xcalloc(s->n_boxes ? s->n_boxes : 1, sizeof(*targets));
	for (size_t i = 0; i < s->n_boxes; i++)
		targets[i] = (sync_target)CLI_SYNC_TARGET(s->boxes[i].box);
	int code = sync_push_files(ctx->opt.root ? ctx->opt.root : ctx->conf.root, sp->push,
				   sp->n_push, targets, s->n_boxes, &opts,
				   conf_local_python(&ctx->conf), &cb);
	free(targets);
	return code;
}

/* --dry-run: the jobs, which are recorded, and the slot each would go to first
 * when every job took as long (the pool's configured slots in turn). */
static int dry_run(cli_ctx *ctx, const campaign_spec *sp, const campaign_job *jobs, size_t n,
		   const bool *done)
{
	size_t ns = 0;
	char **slots = campaign_slots_configured(&ctx->conf, sp->pool, &ns);
	size_t pending = 0;
	for (size_t i = 0; i < n; i++)
		pending += !done[i];
	cli_printf(stdout,
		   "campaign %s (%s:%d): %zu jobs, %zu recorded, %zu to run on pool %s (%zu "
		   "slots); results %s\n",
		   sp->name, sp->file, sp->line, n, n - pending, pending, sp->pool, ns,
		   sp->results);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		strbuf w = STRBUF_INIT;
		for (size_t a = 0; a < jobs[i].n_words; a++)
			strbuf_addf(&w, "%s%s", a ? " " : "", jobs[i].words[a]);
		const campaign_candidate *c = &sp->cands[jobs[i].cand];
		if (c->file)
			strbuf_addf(&w, "  (--kernel %s)", c->shown);
		const char *where = done[i] ? "recorded" : ns ? slots[k++ % ns] : "-";
		cli_printf(stdout, "%-9s %-40s %s\n", where, jobs[i].key, w.buf);
		strbuf_release(&w);
	}
	for (size_t i = 0; i < ns; i++)
		free(slots[i]);
	free(slots);
	return 0;
}

static void box_left_out(void *ctx, const conf_box *box, const char *why)
{
	const campaign_spec *sp = ctx;
	cli_error("campaign %s: box %s left out: %s", sp->name, box->name, why);
}

static void slot_left_out(void *ctx, const conf_box *box, const char *slot, const char *state,
			  const char *why)
{
	const campaign_spec *sp = ctx;
	cli_printf(stderr, "boxgate: campaign %s: %s:%s is %s%s%s, left out\n", sp->name, box->name,
		   slot, state, why ? ": " : "", why ? why : "");
}

static void slot_held(void *ctx, const conf_box *box, const char *slot, const char *tag)
{
	const campaign_spec *sp = ctx;
	cli_printf(stderr,
		   "boxgate: campaign %s: %s:%s is held by %s; its jobs wait up to %d s for it\n",
		   sp->name, box->name, slot, tag ? tag : "another run", sp->lock_wait_s);
}

/* The slots the workers run on: free or held ones of every box that answered. */
static int find_slots(cli_ctx *ctx, const campaign_spec *sp, const gate_agent *agent, sched *s)
{
	size_t np = 0;
	bg_err err = {0};
	slot_probe *p = slot_probe_pool(&ctx->conf, sp->pool, NULL, &np, &err);
	if (!p) {
		cli_error("%s", err.msg);
		return BG_EXIT_USAGE;
	}
	remote_connect_opts link = cli_link(ctx);
	slot_probe_all(p, np, agent, &link, true);
	campaign_slots_cb cb = {box_left_out, slot_left_out, slot_held, (void *)sp};
	int code = campaign_slots_take(s, p, np, &cb);
	slot_probe_release(p, np);
	return code;
}

static void waiting_for_lock(void *ctx)
{
	const campaign_spec *sp = ctx;
	cli_printf(stderr,
		   "boxgate: campaign %s: another campaign run is writing %s; waiting for it to "
		   "end (Ctrl-C to stop waiting)\n",
		   sp->name, sp->results);
}

/* Opens the results file and locks it for this run, waiting while another
 * run of the campaign holds it (campaign_results_lock). */
static int lock_results(const campaign_spec *sp, int *fd)
{
	bg_err err = {0};
	bool stopped = false;
	if (campaign_results_lock(sp, &stop_requested, waiting_for_lock, (void *)sp, fd, &stopped,
				  &err) == 0)
		return 0;
	cli_error("%s", err.msg);
	return stopped ? 130 : BG_EXIT_FAIL;
}

/* A detached run feeds its state file beside the log. */
struct detached_view {
	campaign_view *view;
	campaign_state *st;
	bool have_run_id;
};

static void detached_event(void *ctx, const sched_event *ev)
{
	struct detached_view *d = ctx;
	campaign_view_event(d->view, ev);
	switch (ev->kind) {
	case SCHED_JOB_START: campaign_state_job_start(d->st, ev->slot->label, ev->job->key); break;
	case SCHED_JOB_END:
	case SCHED_JOB_CUT:
		campaign_state_job_end(d->st, ev->job->key, ev->kind == SCHED_JOB_END, ev->secs);
		break;
	case SCHED_QUARANTINED: campaign_state_quarantined(d->st, ev->slot->b->box->name); break;
	case SCHED_SLOT_LEFT: break;
	}
}

static void print_summary(const campaign_spec *sp, bool json)
{
	campaign_points pts;
	bg_err err = {0};
	campaign_current *cur = xcalloc(sp->n_cands ? sp->n_cands : 1, sizeof(*cur));
	for (size_t i = 0; i < sp->n_cands; i++)
		cur[i] = (campaign_current){sp->cands[i].name, sp->cands[i].def};
	int rc = campaign_points_read_current(sp->results, sp->name, cur, sp->n_cands, &pts, &err);
	free(cur);
	if (rc < 0) {
		cli_error("campaign %s: no summary: %s", sp->name, err.msg);
		return;
	}
	if (json) {
		cJSON *o = campaign_points_json(&pts);
		cJSON_AddStringToObject(o, "event", "points");
		cli_print_json(o);
		cJSON_Delete(o);
	} else {
		strbuf b = STRBUF_INIT;
		campaign_summary_text(&pts, &b);
		cli_write(stdout, b.buf, b.len);
		strbuf_release(&b);
	}
	campaign_points_release(&pts);
}

static int run_campaign(cli_ctx *ctx, void *opts_, const cli_args *args)
{
	const campaign_opts *o = opts_;
	campaign_spec sp = {0};
	sched s = {0};
	campaign_box_args ba = {0};
	gate_agent agent = {0};
	bool have_agent = false;
	campaign_recorded rec = {0};
	campaign_view *view = NULL;
	campaign_state *state = NULL;
	struct detached_view dv = {0};
	bg_err err = {0};
	int code, lock_fd = -1;
	if (args->n >= 1 && campaign_is_subcommand(args->v[0])) {
		if (args->n > 2 || o->detach || o->dry_run || o->results || o->name) {
			cli_error("campaign %s: takes only [NAME]%s", args->v[0],
				  strcmp(args->v[0], "logs") == 0 ? " and -f/--follow" : "");
			return BG_EXIT_USAGE;
		}
		return campaign_subcommand(args->v[0], args->n == 2 ? args->v[1] : NULL, o->follow,
					   ctx->opt.json);
	}
	if (o->follow) {
		cli_error("campaign: -f/--follow is for 'campaign logs NAME'");
		return BG_EXIT_USAGE;
	}
	if (o->detach && o->dry_run) {
		cli_error("campaign: --detach and --dry-run do not go together (a dry run "
			  "connects nowhere)");
		return BG_EXIT_USAGE;
	}
	if (args->n != 1) {
		cli_error("campaign: give one campaign file (or the name of a campaign in %s)",
			  ctx->conf.path ? ctx->conf.path : "boxgate.ini");
		return BG_EXIT_USAGE;
	}
	if ((code = load_spec(ctx, o, args->v[0], &sp)))
		goto out;
	if ((code = campaign_jobs_expand(&sp, &s.jobs, &s.n_jobs, &err)) < 0) {
		cli_error("campaign: %s", err.msg);
		code = BG_EXIT_USAGE;
		goto out;
	}
	s.spec = &sp;
	s.boxes = campaign_pool_boxes(&ctx->conf, sp.pool, &s.n_boxes);
	if ((code = prepare_boxes(ctx, &sp, &s, &ba)))
		goto out;

	/* Two runs of one campaign at once would both run its open jobs: a run holds
	 * a lock on the results file from before it reads what is recorded until it
	 * ends, so a second run reads the file only once the first is over. */
	if (o->detach) {
		code = campaign_detach(sp.name, sp.file, sp.results, ctx->opt.json, &state);
		if (code < 0)
			code = 0; /* the first process: the detached one runs the campaign */
		if (code || !state)
			goto out;
	}
	if (!o->dry_run) {
		cli_catch_stop_signals(on_signal);
		/* detached: no terminal to hang up, and a stray SIGHUP must not stop it */
		if (state)
			signal(SIGHUP, SIG_IGN);
		if ((code = lock_results(&sp, &lock_fd)))
			goto out;
	}

	/* what earlier runs recorded */
	results_read_stats rst = {0};
	int rc = campaign_recorded_scan(&sp, s.jobs, s.n_jobs, sp.results, &rec, &rst, &err);
	if (rc < 0) {
		cli_error("campaign %s: %s", sp.name, err.msg);
		code = BG_EXIT_FAIL;
		goto out;
	}
	say_changed(&sp, s.jobs, s.n_jobs, &rec);
	if (rst.torn)
		cli_warn("%s: its last line is torn (a run was killed while writing); that job "
			 "runs again",
			 sp.results);
	if (o->dry_run) {
		code = dry_run(ctx, &sp, s.jobs, s.n_jobs, rec.done);
		goto out;
	}
	sched_queue_pending(&s, rec.done);
	if (rec.count)
		cli_printf(stderr,
			   "boxgate: campaign %s: %zu of %zu jobs already recorded in %s%s\n",
			   sp.name, rec.count, s.n_jobs, sp.results,
			   s.q_len ? ", running the rest" : "");
	if (!s.q_len)
		goto summary;
	if (sp.n_push) {
		code = push_sources(ctx, &sp, &s);
		if (code) {
			cli_error("campaign %s: push failed (exit %d): no job was run", sp.name,
				  code);
			goto out;
		}
	}
	if (gate_agent_locate(&agent, &err) < 0) {
		cli_error("%s", err.msg);
		code = BG_EXIT_FAIL;
		goto out;
	}
	have_agent = true;
	if ((code = find_slots(ctx, &sp, &agent, &s)) && !s.n_slots)
		goto out;
	code = 0;
	if (!s.n_slots) {
		cli_error("campaign %s: no usable slot in pool %s (see 'boxgate slots --pool %s')",
			  sp.name, sp.pool, sp.pool);
		code = BG_EXIT_FAIL;
		goto out;
	}
	if (!ctx->opt.json)
		cli_printf(stderr,
			   "boxgate: campaign %s: %zu jobs to run on %zu slot%s of pool %s; "
			   "records in %s\n",
			   sp.name, s.q_len, s.n_groups, s.n_groups == 1 ? "" : "s", sp.pool,
			   sp.results);
	s.agent = &agent;
	s.results = sp.results;
	s.link = cli_link(ctx);
	s.stop = &stop_requested;
	campaign_view_mode mode = ctx->opt.json                          ? VIEW_JSON
				  : (o->plain || !isatty(STDERR_FILENO)) ? VIEW_PLAIN
									 : VIEW_LIVE;
	view = campaign_view_new(&s, mode, s.n_jobs, rec.count);
	s.on_event = campaign_view_event;
	s.ctx = view;
	if (state) {
		dv = (struct detached_view){view, state, false};
		s.on_event = detached_event;
		s.ctx = &dv;
		results_new_run_id(s.run_id);
		campaign_state_begin(state, s.run_id, s.n_jobs, rec.count, s.n_groups);
	}
	sched_run(&s);
	size_t ended, cut;
	campaign_view_end(view, &ended, &cut);

	size_t left = sched_left(&s, rec.done), quarantined = 0;
	strbuf q = STRBUF_INIT;
	for (size_t b = 0; b < s.n_boxes; b++)
		if (s.boxes[b].quarantined) {
			strbuf_addf(&q, "%s%s", quarantined++ ? ", " : "", s.boxes[b].box->name);
		}
	if (ctx->opt.json) {
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "event", "summary");
		cJSON_AddStringToObject(e, "campaign", sp.name);
		cJSON_AddNumberToObject(e, "jobs", (double)s.n_jobs);
		cJSON_AddNumberToObject(e, "recorded_before", (double)rec.count);
		cJSON_AddNumberToObject(e, "ran", (double)ended);
		cJSON_AddNumberToObject(e, "requeued", (double)cut);
		cJSON_AddNumberToObject(e, "left", (double)left);
		cJSON *qa = cJSON_AddArrayToObject(e, "quarantined");
		for (size_t b = 0; b < s.n_boxes; b++)
			if (s.boxes[b].quarantined)
				cJSON_AddItemToArray(qa, cJSON_CreateString(s.boxes[b].box->name));
		cJSON *fa = cJSON_AddArrayToObject(e, "failed_jobs");
		for (size_t i = 0; i < s.n_jobs; i++) {
			if (!s.failed_why[i])
				continue;
			cJSON *f = cJSON_CreateObject();
			cJSON_AddStringToObject(f, "job", s.jobs[i].key);
			cJSON_AddStringToObject(f, "why", s.failed_why[i]);
			cJSON_AddItemToArray(fa, f);
		}
		cJSON_AddBoolToObject(e, "interrupted", stop_requested != 0);
		if (s.stop_why)
			cJSON_AddStringToObject(e, "stopped", s.stop_why);
		else
			cJSON_AddNullToObject(e, "stopped");
		cJSON_AddStringToObject(e, "results", sp.results);
		cli_print_json(e);
		cJSON_Delete(e);
	} else {
		cli_printf(stderr,
			   "boxgate: campaign %s: %zu of %zu jobs recorded (%zu this run, %zu "
			   "before)\n",
			   sp.name, rec.count + ended, s.n_jobs, ended, rec.count);
		if (cut)
			cli_printf(stderr, "boxgate: campaign %s: %zu attempt%s cut and requeued\n",
				   sp.name, cut, cut == 1 ? "" : "s");
		if (s.stop_why)
			cli_printf(stderr, "boxgate: campaign %s: stopped: %s\n", sp.name,
				   s.stop_why);
		for (size_t i = 0; i < s.n_jobs; i++)
			if (s.failed_why[i])
				cli_printf(stderr,
					   "boxgate: campaign %s: job %s marked failed: %s\n",
					   sp.name, s.jobs[i].key, s.failed_why[i]);
		if (quarantined)
			cli_printf(stderr, "boxgate: campaign %s: quarantined: %s\n", sp.name,
				   q.buf);
		if (left)
			cli_printf(stderr,
				   "boxgate: campaign %s: %zu job%s left%s; run the same command "
				   "again to finish them\n",
				   sp.name, left, left == 1 ? "" : "s",
				   stop_requested ? " (interrupted)" : "");
	}
	strbuf_release(&q);
	if (stop_requested)
		code = 130;
	else if (s.record_failed || left)
		code = BG_EXIT_FAIL;
summary:
	print_summary(&sp, ctx->opt.json);
out:
	if (state) {
		size_t not_done = sched_left(&s, rec.done);
		const char *how = stop_requested     ? "cancelled"
				  : not_done || code ? "stopped"
						     : "finished";
		campaign_state_end(state, how, code, not_done, s.stop_why);
		campaign_state_free(state);
	}
	campaign_view_free(view);
	campaign_slots_release(&s);
	campaign_boxes_release(&s, sp.n_cands, &ba);
	sched_release(&s);
	campaign_jobs_free(s.jobs, s.n_jobs);
	campaign_recorded_release(&rec);
	if (have_agent)
		gate_agent_release(&agent);
	campaign_spec_release(&sp);
	if (lock_fd >= 0)
		close(lock_fd);
	return code;
}

/* clang-format off */
const cli_cmd cli_cmd_campaign = {
	.name = "campaign", .summary = "run a campaign: a matrix of gate runs over a pool's slots",
	.help = campaign_help, .options = campaign_options, .opts_size = sizeof(campaign_opts),
	.needs = CLI_NEEDS_CONFIG, .arity = CLI_ARGS_REQUIRED,
	.args_missing = "no campaign file given (boxgate campaign FILE)", .run = run_campaign,
};
/* clang-format on */
