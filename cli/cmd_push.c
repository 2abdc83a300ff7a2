/* boxgate push: send edited files to every selected box's repo copy, each
 * verified on the box, kept as .bak and swapped in atomically. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "base/exit.h"
#include "base/timer.h"
#include "base/xmalloc.h"
#include "cli/cli.h"
#include "remote/fanout.h"
#include "sync/sync.h"

static const char push_help[] =
	"usage: boxgate push [--boxes SPEC | --pool POOL | --all] [--dry-run] [--all-or-nothing]\n"
	"                    [--keep-mode] [--root DIR] [--json] [--accept-new] [--no-local-check]\n"
	"                    [--verify-timeout S] [--lock-wait S] [--] PATH|LOCAL=REMOTE...\n"
	"\n"
	"Pushes local files to the selected boxes' own repo copies, all boxes at once over one\n"
	"SSH connection each. A PATH lands at the same place under the box's repo; LOCAL=REMOTE\n"
	"puts LOCAL at REMOTE (relative to the box's repo; a trailing '/' keeps the file name).\n"
	"Local paths are relative to the current directory inside the repo root (the directory\n"
	"holding boxgate.ini, or --root), else to the root; paths escaping the root or the\n"
	"box's repo ('..', absolute remote paths, symlinks that lead out) are refused.\n"
	"\n"
	"Per file and box: a file whose SHA-256 on the box already matches is left alone\n"
	"(unchanged). Otherwise it is uploaded into a new temporary file beside the target\n"
	"(.NAME.boxgate-XXXXXXXXXXXXXXXX.tmp), given the local file's mode, checked on the box\n"
	"(its SHA-256 must be the local one, and the [verify] command for its path or extension\n"
	"must accept it: by default .py is parsed with the box's python's ast, .sh with bash -n,\n"
	".json as JSON), then the current target becomes TARGET.bak and the temporary file is\n"
	"renamed over the target (atomic). A refused file leaves the box as it was and the\n"
	"verifier's own output is shown. Built-in verifiers also run here first, so a syntax\n"
	"error fails before any box is touched. Temporary files of interrupted pushes are\n"
	"removed. Pushes to one box are serialised by a lock on the box.\n"
	"\n"
	"A [verify] command gets the file as {}, as $1 and as $BOXGATE_FILE: always a path\n"
	"of bytes in [A-Za-z0-9._/-] that boxgate chose (the temporary file, whose NAME has\n"
	"every other byte made '_', reached through a link made for the check when its\n"
	"directory's name has other bytes), so no file name can put code into the command,\n"
	"however it nests shells. $BOXGATE_TARGET is the target's own path (untrusted text).\n"
	"The new file gets the replaced file's owner and group (pushing as root over another\n"
	"user's file); where the box refuses that, a warning names the file.\n"
	"\n"
	"  --boxes SPEC        names, node sets (b200-[1-8,12]) and @pool, comma separated\n"
	"  --pool POOL         every box of a pool\n"
	"  --all               every configured box (the built-in local box only by name)\n"
	"  --dry-run           show what would change; write nothing\n"
	"  --all-or-nothing    upload and verify on every box first; swap only if all passed\n"
	"  --keep-mode         give the file the replaced file's mode instead of the local one\n"
	"  --root DIR          the local repo root (default: the directory of boxgate.ini)\n"
	"  --json              one JSON object per file and box, then a summary object\n"
	"  --accept-new        record unknown host keys (changed keys are still refused)\n"
	"  --no-local-check    do not run built-in verifiers locally first\n"
	"  --verify-timeout S  give up on a box's verify step after S seconds (default 300)\n"
	"  --lock-wait S       wait up to S seconds for another push on a box (default 30)\n"
	"\n"
	"Exit: 0 when every file is updated, created or unchanged; 4 when a verifier refused a\n"
	"file (that box is unchanged); 3 when a box could not be reached; 2 for bad usage or\n"
	"paths; 1 for other failures. Boxes that fail do not stop the others. Large uploads\n"
	"show a progress line per box when stdout is a terminal.\n";

#define PROGRESS_MIN (1u << 20)
#define PROGRESS_EVERY_MS 150

struct push_job {
	cli_ctx *ctx;
	sync_plan plan;
	sync_opts opts;
	sync_box *boxes;
	size_t n;
	bool json;
	/* progress lines on a terminal */
	bool tty;
	pthread_mutex_t mu;
	size_t shown;        /* progress lines on screen */
	int64_t last_draw;
	struct bar {
		const sync_item *it;
		uint64_t done, total;
		int64_t start;
	} *bars;             /* one per box */
	/* The local checks run while the boxes connect; boxes wait for them. */
	pthread_t checker;
	bool checking, checked;
	int local_code;
	pthread_cond_t checked_cv;
};

/* ---- progress ---- */

static int term_cols(void)
{
	struct winsize ws;
	if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20)
		return ws.ws_col;
	return 80;
}

static void erase_bars(struct push_job *job)
{
	if (job->shown) {
		printf("\033[%zuA\033[J", job->shown);
		job->shown = 0;
		fflush(stdout);
	}
}

static void draw_bars(struct push_job *job)
{
	erase_bars(job);
	int cols = term_cols();
	int64_t now = bg_now_ms();
	for (size_t i = 0; i < job->n; i++) {
		struct bar *b = &job->bars[i];
		if (!b->it)
			continue;
		double pct = b->total ? 100.0 * (double)b->done / (double)b->total : 100.0;
		double secs = (double)(now - b->start) / 1000.0;
		double rate = secs > 0.05 ? (double)b->done / secs / 1e6 : 0;
		char *shown = sync_path_display(b->it->rel);
		char line[512];
		snprintf(line, sizeof(line), "%s: %s %5.1f%% %.1f/%.1f MiB %.1f MB/s", job->boxes[i].box->name,
			 shown, pct, (double)b->done / 1048576.0, (double)b->total / 1048576.0, rate);
		free(shown);
		printf("%.*s\n", cols - 1, line);
		job->shown++;
	}
	fflush(stdout);
	job->last_draw = now;
}

static void on_progress(void *ctx, const sync_box *b, const sync_item *it, uint64_t done,
			uint64_t total)
{
	struct push_job *job = ctx;
	if (total < PROGRESS_MIN)
		return;
	pthread_mutex_lock(&job->mu);
	struct bar *bar = &job->bars[b->index];
	bool first = bar->it != it;
	if (first) {
		bar->it = it;
		bar->start = bg_now_ms();
	}
	bar->done = done;
	bar->total = total;
	bool last = done >= total;
	if (first || last || bg_now_ms() - job->last_draw >= PROGRESS_EVERY_MS)
		draw_bars(job);
	if (last) {
		bar->it = NULL;
		draw_bars(job);
	}
	pthread_mutex_unlock(&job->mu);
}

/* ---- results ---- */

/* Prints one box's results: JSON objects, or a line per file (failures and
 * the verifier's output on stderr). */
static void report_box(struct push_job *job, const sync_box *b)
{
	/* Big files' hashes may still be in the making when a box failed early. */
	sync_plan_wait(b->plan, NULL);
	pthread_mutex_lock(&job->mu);
	if (job->tty)
		erase_bars(job);
	if (b->rc < 0 && !job->json)
		cli_error("%s", b->err.msg);
	for (size_t i = 0; i < b->plan->n; i++) {
		const sync_file *f = &b->files[i];
		if (job->json) {
			cJSON *o = sync_file_json(b, i);
			cli_print_json(o);
			cJSON_Delete(o);
			continue;
		}
		if (!sync_state_failed(f->state)) {
			char *line = sync_file_describe(b, i);
			cli_print_line(stdout, b->box->name, line, strlen(line));
			free(line);
			if (f->warn)
				cli_warn("%s", f->warn);
			continue;
		}
		if (f->msg) {
			cli_error("%s", f->msg);
		} else {
			char *shown = sync_path_display(b->plan->items[i].rel);
			cli_error("%s: %s: not pushed%s", b->box->name, shown, b->rc < 0 ? " (see above)" : "");
			free(shown);
		}
		if (f->state == SYNC_VERIFY_FAILED && f->verify_out) {
			const char *s = f->verify_out;
			int lines = 0;
			while (*s && lines < 200) {
				const char *e = strchr(s, '\n');
				size_t len = e ? (size_t)(e - s) : strlen(s);
				char *l = xasprintf("    %.*s", (int)len, s);
				cli_print_line(stderr, b->box->name, l, strlen(l));
				free(l);
				lines++;
				s += len + (e ? 1 : 0);
			}
			if (*s)
				cli_print_line(stderr, b->box->name, "    [boxgate: verifier output cut]", 34);
		}
	}
	if (job->tty)
		draw_bars(job);
	pthread_mutex_unlock(&job->mu);
}

static int local_checks(struct push_job *job);

static void *check_thread(void *arg)
{
	struct push_job *job = arg;
	int code = local_checks(job);
	pthread_mutex_lock(&job->mu);
	job->local_code = code;
	job->checked = true;
	pthread_cond_broadcast(&job->checked_cv);
	pthread_mutex_unlock(&job->mu);
	return NULL;
}

/* sync_opts.ready: the local checks' verdict (0: go on). */
static int wait_checks(void *arg)
{
	struct push_job *job = arg;
	pthread_mutex_lock(&job->mu);
	while (!job->checked)
		pthread_cond_wait(&job->checked_cv, &job->mu);
	int code = job->local_code;
	pthread_mutex_unlock(&job->mu);
	return code;
}

static void push_one(void *arg, const conf_box *box, size_t i)
{
	struct push_job *job = arg;
	(void)box;
	sync_box *b = &job->boxes[i];
	sync_push_box(b);
	if (wait_checks(job) != 0)
		return; /* refused here: only the local check's report counts */
	if (!job->opts.all_or_nothing && !job->opts.dry_run) {
		/* Done with this box: release its lock while the others finish. */
		sync_box_unlock(b);
	}
	if (!job->opts.all_or_nothing)
		report_box(job, b);
}

static void commit_one(void *arg, const conf_box *box, size_t i)
{
	struct push_job *job = arg;
	(void)box;
	sync_push_commit(&job->boxes[i]);
	report_box(job, &job->boxes[i]);
}

static void abort_one(void *arg, const conf_box *box, size_t i)
{
	struct push_job *job = arg;
	(void)box;
	sync_push_abort(&job->boxes[i]);
	report_box(job, &job->boxes[i]);
}

static void release_one(void *arg, const conf_box *box, size_t i)
{
	struct push_job *job = arg;
	(void)box;
	sync_box_disconnect(&job->boxes[i]);
}

/* The closing line: counts, failed boxes, the exit code. */
static int summarise(struct push_job *job, int code)
{
	size_t c[SYNC_STATE_COUNT];
	sync_count(job->boxes, job->n, c);
	if (job->json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "event", "summary");
		cJSON_AddNumberToObject(o, "files", (double)job->plan.n);
		cJSON_AddNumberToObject(o, "boxes", (double)job->n);
		for (int s = 1; s < SYNC_STATE_COUNT; s++)
			if (c[s])
				cJSON_AddNumberToObject(o, sync_state_name((sync_state)s), (double)c[s]);
		cJSON_AddNumberToObject(o, "exit", code);
		cli_print_json(o);
		cJSON_Delete(o);
		return code;
	}
	strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "push%s: %zu file%s to %zu box%s:", job->opts.dry_run ? " --dry-run" : "",
		    job->plan.n, job->plan.n == 1 ? "" : "s", job->n, job->n == 1 ? "" : "es");
	const char *sep = " ";
	for (int s = 1; s < SYNC_STATE_COUNT; s++) {
		if (!c[s])
			continue;
		strbuf_addf(&sb, "%s%zu %s", sep, c[s], sync_state_name((sync_state)s));
		sep = ", ";
	}
	cli_print_line(stdout, NULL, sb.buf, sb.len);
	strbuf_reset(&sb);
	size_t failed = 0;
	for (size_t i = 0; i < job->n; i++) {
		const sync_box *b = &job->boxes[i];
		bool bad = b->rc < 0;
		for (size_t k = 0; !bad && k < b->plan->n; k++)
			bad = sync_state_failed(b->files[k].state);
		if (!bad)
			continue;
		strbuf_addf(&sb, "%s%s", failed ? ", " : "", b->box->name);
		failed++;
	}
	if (failed)
		cli_error("push: %zu of %zu boxes had failures: %s", failed, job->n, strbuf_str(&sb));
	if (job->opts.all_or_nothing && (c[SYNC_NOT_APPLIED] || code))
		cli_error("push: --all-or-nothing: %s", c[SYNC_UPDATED] + c[SYNC_CREATED]
							    ? "a swap failed after every box had verified: see the errors above"
							    : "no box was changed");
	strbuf_release(&sb);
	return code;
}

/* Runs the built-in verifiers here; 0 when all passed or none could run. */
static int local_checks(struct push_job *job)
{
	int code = 0;
	for (size_t i = 0; i < job->plan.n; i++) {
		const sync_item *it = &job->plan.items[i];
		bool ran = false;
		int rc = 0;
		char *out = NULL;
		bg_err err = {0};
		if (sync_local_check(cli_local_python(&job->ctx->conf), &job->plan, it, &ran, &rc, &out, &err) < 0) {
			cli_warn("%s: the local check could not run: %s", it->arg, err.msg);
			continue;
		}
		if (ran && rc != 0) {
			char *shown = sync_path_display(it->rel);
			if (job->json) {
				cJSON *o = cJSON_CreateObject();
				cJSON_AddStringToObject(o, "box", "local");
				cJSON_AddStringToObject(o, "path", shown);
				cJSON_AddStringToObject(o, "state", "verify failed");
				cJSON_AddNumberToObject(o, "verify_exit", rc);
				cJSON_AddStringToObject(o, "verify_output", out ? out : "");
				cli_print_json(o);
				cJSON_Delete(o);
			} else {
				cli_error("%s: refused by the local check (exit %d), no box was touched:", shown, rc);
				const char *s = out ? out : "";
				while (*s) {
					const char *e = strchr(s, '\n');
					size_t len = e ? (size_t)(e - s) : strlen(s);
					char *l = xasprintf("    %.*s", (int)len, s);
					cli_print_line(stderr, "local", l, strlen(l));
					free(l);
					s += len + (e ? 1 : 0);
				}
			}
			free(shown);
			code = 4;
		}
		free(out);
	}
	return code;
}

static int run_push(cli_ctx *ctx, int argc, char **argv)
{
	enum { O_BOXES = 256, O_POOL, O_ALL, O_DRY, O_AON, O_KEEP, O_ROOT, O_JSON, O_NEW, O_NOLOCAL,
	       O_VTIMEOUT, O_LOCKWAIT };
	static const struct option opts[] = {
		{"boxes", required_argument, NULL, O_BOXES},
		{"pool", required_argument, NULL, O_POOL},
		{"all", no_argument, NULL, O_ALL},
		{"dry-run", no_argument, NULL, O_DRY},
		{"all-or-nothing", no_argument, NULL, O_AON},
		{"keep-mode", no_argument, NULL, O_KEEP},
		{"root", required_argument, NULL, O_ROOT},
		{"json", no_argument, NULL, O_JSON},
		{"accept-new", no_argument, NULL, O_NEW},
		{"no-local-check", no_argument, NULL, O_NOLOCAL},
		{"verify-timeout", required_argument, NULL, O_VTIMEOUT},
		{"lock-wait", required_argument, NULL, O_LOCKWAIT},
		{NULL, 0, NULL, 0},
	};
	struct push_job job = {.ctx = ctx};
	const char *spec = NULL, *pool = NULL, *root = NULL;
	bool all = false, no_local = false;
	const conf_box **sel = NULL;
	int c, code = 0;
	bg_err err = {0};

	job.opts.fsync = true;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_BOXES: spec = optarg; break;
		case O_POOL: pool = optarg; break;
		case O_ALL: all = true; break;
		case O_DRY: job.opts.dry_run = true; break;
		case O_AON: job.opts.all_or_nothing = true; break;
		case O_KEEP: job.opts.keep_mode = true; break;
		case O_ROOT: root = optarg; break;
		case O_JSON: job.json = true; break;
		case O_NEW: job.opts.accept_new = true; break;
		case O_NOLOCAL: no_local = true; break;
		case O_VTIMEOUT:
			if (cli_parse_seconds("push", "--verify-timeout", optarg, 0, 86400, &job.opts.verify_timeout_s))
				return 2;
			break;
		case O_LOCKWAIT:
			if (cli_parse_seconds("push", "--lock-wait", optarg, 0, 86400, &job.opts.lock_wait_s))
				return 2;
			break;
		default:
			cli_error("push: unknown option '%s'", argv[optind - 1]);
			return cli_usage(&cli_cmd_push, stderr, 2);
		}
	}
	if (optind >= argc) {
		cli_error("push: no files given (boxgate push --all PATH...)");
		return 2;
	}
	code = cli_select_boxes(ctx, spec, pool, all, &sel, &job.n);
	if (code)
		return code;
	if (sync_plan_init(&job.plan, root ? root : ctx->conf.root, &err) < 0) {
		cli_error("push: %s", err.msg);
		free(sel);
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		if (sync_plan_add(&job.plan, argv[i], SYNC_ADD_NEED_LOCAL, &err) < 0) {
			cli_error("push: %s", err.msg);
			code = 2;
		}
	}
	if (!code && sync_plan_finish(&job.plan, cli_verifier_for, &ctx->conf, &err) < 0) {
		cli_error("push: %s", err.msg);
		code = bg_exit_code(err.code);
	}
	if (code) {
		sync_plan_release(&job.plan);
		free(sel);
		return code;
	}

	job.opts.verifier_for = cli_verifier_for;
	job.opts.verifier_ctx = &ctx->conf;
	job.opts.trace = getenv("BOXGATE_TRACE") ? cli_sync_trace : NULL;
	job.opts.log = cli_log_warning;
	job.tty = isatty(1) && !job.json;
	if (job.tty) {
		job.opts.progress = on_progress;
		job.opts.progress_ctx = &job;
	}
	pthread_mutex_init(&job.mu, NULL);
	pthread_cond_init(&job.checked_cv, NULL);
	job.checked = true;
	if (!no_local) {
		job.checked = false;
		if (pthread_create(&job.checker, NULL, check_thread, &job) == 0)
			job.checking = true;
		else
			check_thread(&job);
		job.opts.ready = wait_checks;
		job.opts.ready_ctx = &job;
	}
	job.boxes = xcalloc(job.n, sizeof(*job.boxes));
	job.bars = xcalloc(job.n, sizeof(*job.bars));
	for (size_t i = 0; i < job.n; i++)
		sync_box_init(&job.boxes[i], sel[i], i, &job.plan, &job.opts);

	remote_fanout((const conf_box *const *)sel, job.n, 0, push_one, &job);
	if (job.checking)
		pthread_join(job.checker, NULL);
	if (job.local_code) {
		/* A file was refused here: no box was touched. */
		code = job.local_code;
	} else if (job.opts.all_or_nothing && !job.opts.dry_run) {
		bool all_ok = true;
		for (size_t i = 0; i < job.n && all_ok; i++) {
			const sync_box *b = &job.boxes[i];
			all_ok = b->rc == 0;
			for (size_t k = 0; all_ok && k < job.plan.n; k++)
				all_ok = !sync_state_failed(b->files[k].state);
		}
		remote_fanout((const conf_box *const *)sel, job.n, 0, all_ok ? commit_one : abort_one, &job);
	} else if (job.opts.all_or_nothing) {
		for (size_t i = 0; i < job.n; i++)
			report_box(&job, &job.boxes[i]);
	}
	remote_fanout((const conf_box *const *)sel, job.n, 0, release_one, &job);
	if (!job.local_code)
		code = summarise(&job, sync_exit_code(job.boxes, job.n));

	for (size_t i = 0; i < job.n; i++)
		sync_box_release(&job.boxes[i]);
	free(job.boxes);
	free(job.bars);
	pthread_cond_destroy(&job.checked_cv);
	pthread_mutex_destroy(&job.mu);
	sync_plan_release(&job.plan);
	free(sel);
	return code;
}

const cli_cmd cli_cmd_push = {
	.name = "push",
	.summary = "push files to the boxes: verified on the box, .bak kept, swapped atomically",
	.help = push_help,
	.run = run_push,
};
