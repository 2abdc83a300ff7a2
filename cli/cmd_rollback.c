/* boxgate rollback: put a target's .bak back in place, verified like a push. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "base/xmalloc.h"
#include "cli/cli.h"
#include "remote/fanout.h"
#include "sync/sync.h"

static const char rollback_help[] =
	"usage: boxgate rollback [--boxes SPEC | --pool POOL | --all | BOX] [--dry-run] [--root DIR]\n"
	"                        [--json] [--verify-timeout S] [--accept-new] [--] PATH...\n"
	"\n"
	"Swaps TARGET.bak back in on the selected boxes: the .bak is checked with the target's\n"
	"verifier on the box first (a refused .bak leaves the box as it was), then the current\n"
	"target becomes the new TARGET.bak and the old one is renamed into place (atomic), so a\n"
	"second rollback undoes the first. Without --boxes, --pool or --all, the first argument\n"
	"names the boxes (a name, node set or @pool). PATH names the target as for push (the\n"
	"local file need not exist; LOCAL=REMOTE uses REMOTE).\n"
	"\n"
	"  --dry-run           show what would be rolled back; write nothing\n"
	"  --root DIR          the local repo root (default: the directory of boxgate.ini)\n"
	"  --json              one JSON object per file and box, then a summary object\n"
	"  --verify-timeout S  give up on a box's verify step after S seconds (default 300)\n"
	"  --accept-new        record unknown host keys\n"
	"\n"
	"Exit: 0 when every file was rolled back; 4 when a verifier refused a .bak; 3 when a box\n"
	"could not be reached; 2 for bad usage; 1 for other failures (no .bak on the box).\n";

struct rollback_job {
	sync_plan plan;
	sync_opts opts;
	sync_box *boxes;
	bool json;
	pthread_mutex_t mu;
};

static void report_box(struct rollback_job *job, const sync_box *b)
{
	/* Big files' hashes may still be in the making when a box failed early. */
	sync_plan_wait(b->plan, NULL);
	pthread_mutex_lock(&job->mu);
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
			cli_error("%s: %s: not rolled back", b->box->name, shown);
			free(shown);
		}
		const char *s = f->state == SYNC_VERIFY_FAILED && f->verify_out ? f->verify_out : "";
		for (int lines = 0; *s && lines < 200; lines++) {
			const char *e = strchr(s, '\n');
			size_t len = e ? (size_t)(e - s) : strlen(s);
			char *l = xasprintf("    %.*s", (int)len, s);
			cli_print_line(stderr, b->box->name, l, strlen(l));
			free(l);
			s += len + (e ? 1 : 0);
		}
	}
	pthread_mutex_unlock(&job->mu);
}

static void rollback_one(void *arg, const conf_box *box, size_t i)
{
	struct rollback_job *job = arg;
	(void)box;
	sync_rollback_box(&job->boxes[i]);
	sync_box_disconnect(&job->boxes[i]);
	report_box(job, &job->boxes[i]);
}

static int run_rollback(cli_ctx *ctx, int argc, char **argv)
{
	enum { O_BOXES = 256, O_POOL, O_ALL, O_DRY, O_ROOT, O_JSON, O_VTIMEOUT, O_NEW };
	static const struct option opts[] = {
		{"boxes", required_argument, NULL, O_BOXES},
		{"pool", required_argument, NULL, O_POOL},
		{"all", no_argument, NULL, O_ALL},
		{"dry-run", no_argument, NULL, O_DRY},
		{"root", required_argument, NULL, O_ROOT},
		{"json", no_argument, NULL, O_JSON},
		{"verify-timeout", required_argument, NULL, O_VTIMEOUT},
		{"accept-new", no_argument, NULL, O_NEW},
		{NULL, 0, NULL, 0},
	};
	struct rollback_job job = {0};
	const char *spec = NULL, *pool = NULL, *root = NULL;
	bool all = false;
	const conf_box **sel = NULL;
	size_t n = 0;
	int c, code = 0;
	bg_err err = {0};

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_BOXES: spec = optarg; break;
		case O_POOL: pool = optarg; break;
		case O_ALL: all = true; break;
		case O_DRY: job.opts.dry_run = true; break;
		case O_ROOT: root = optarg; break;
		case O_JSON: job.json = true; break;
		case O_NEW: job.opts.accept_new = true; break;
		case O_VTIMEOUT:
			if (cli_parse_seconds("rollback", "--verify-timeout", optarg, 0, 86400,
					      &job.opts.verify_timeout_s))
				return 2;
			break;
		default:
			cli_error("rollback: unknown option '%s'", argv[optind - 1]);
			return cli_usage(&cli_cmd_rollback, stderr, 2);
		}
	}
	if (!spec && !pool && !all) {
		if (optind >= argc) {
			cli_error("rollback: no box given (boxgate rollback BOX PATH...)");
			return 2;
		}
		spec = argv[optind++];
	}
	if (optind >= argc) {
		cli_error("rollback: no files given (boxgate rollback BOX PATH...)");
		return 2;
	}
	code = cli_select_boxes(ctx, spec, pool, all, &sel, &n);
	if (code)
		return code;
	if (sync_plan_init(&job.plan, root ? root : ctx->conf.root, &err) < 0) {
		cli_error("rollback: %s", err.msg);
		free(sel);
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		if (sync_plan_add(&job.plan, argv[i], 0, &err) < 0) {
			cli_error("rollback: %s", err.msg);
			code = 2;
		}
	}
	if (!code && sync_plan_finish(&job.plan, cli_verifier_for, &ctx->conf, &err) < 0) {
		cli_error("rollback: %s", err.msg);
		code = bg_exit_code(err.code);
	}
	if (code) {
		sync_plan_release(&job.plan);
		free(sel);
		return code;
	}
	job.opts.verifier_for = cli_verifier_for;
	job.opts.verifier_ctx = &ctx->conf;
	job.opts.log = cli_log_warning;
	pthread_mutex_init(&job.mu, NULL);
	job.boxes = xcalloc(n, sizeof(*job.boxes));
	for (size_t i = 0; i < n; i++)
		sync_box_init(&job.boxes[i], sel[i], i, &job.plan, &job.opts);
	remote_fanout((const conf_box *const *)sel, n, 0, rollback_one, &job);

	code = sync_exit_code(job.boxes, n);
	size_t cnt[SYNC_STATE_COUNT];
	sync_plan_wait(&job.plan, NULL);
	sync_count(job.boxes, n, cnt);
	if (job.json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "event", "summary");
		cJSON_AddNumberToObject(o, "boxes", (double)n);
		cJSON_AddNumberToObject(o, "rolled back", (double)cnt[SYNC_ROLLED_BACK]);
		cJSON_AddNumberToObject(o, "failed", (double)(cnt[SYNC_FAILED] + cnt[SYNC_VERIFY_FAILED]));
		cJSON_AddNumberToObject(o, "exit", code);
		cli_print_json(o);
		cJSON_Delete(o);
	} else {
		char line[200];
		snprintf(line, sizeof(line), "rollback%s: %zu box%s: %zu %s, %zu failed",
			 job.opts.dry_run ? " --dry-run" : "", n, n == 1 ? "" : "es",
			 cnt[SYNC_ROLLED_BACK] + cnt[SYNC_WOULD_ROLL_BACK],
			 job.opts.dry_run ? "would roll back" : "rolled back",
			 cnt[SYNC_FAILED] + cnt[SYNC_VERIFY_FAILED]);
		cli_print_line(stdout, NULL, line, strlen(line));
	}
	for (size_t i = 0; i < n; i++)
		sync_box_release(&job.boxes[i]);
	free(job.boxes);
	pthread_mutex_destroy(&job.mu);
	sync_plan_release(&job.plan);
	free(sel);
	return code;
}

const cli_cmd cli_cmd_rollback = {
	.name = "rollback",
	.summary = "put the .bak of files back in place on boxes (verified)",
	.help = rollback_help,
	.run = run_rollback,
};
