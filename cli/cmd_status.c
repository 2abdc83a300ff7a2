/* boxgate status: drift between the local files and the boxes' repo copies. */
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

static const char status_help[] =
	"usage: boxgate status [--boxes SPEC | --pool POOL | --all] [--root DIR] [--json]\n"
	"                      [--no-clean] [--exit-code] [--accept-new] [--] [PATH|LOCAL=REMOTE...]\n"
	"\n"
	"Compares local files with the selected boxes' repo copies, one round trip per box:\n"
	"per file and box 'same', 'differs', 'missing' (not on the box) or 'no local file',\n"
	"whether a .bak is present, and temporary files left by interrupted pushes (removed,\n"
	"unless --no-clean or a push is running on the box). Paths work as for push. Without\n"
	"paths, every file under the box's repo that has a .bak or a boxgate temporary file\n"
	"beside it is checked (the files boxgate, or a person keeping .bak copies, pushed).\n"
	"\n"
	"  --boxes SPEC   names, node sets and @pool, comma separated\n"
	"  --pool POOL    every box of a pool\n"
	"  --all          every configured box\n"
	"  --root DIR     the local repo root (default: the directory of boxgate.ini)\n"
	"  --json         one JSON object per file and box, then a summary object\n"
	"  --no-clean     leave stale temporary files where they are\n"
	"  --exit-code    exit 1 when any file differs or is missing\n"
	"  --accept-new   record unknown host keys\n"
	"\n"
	"Exit: 0 (drift is reported, not an error, unless --exit-code); 3 when a box could not\n"
	"be reached; 2 for bad usage or paths; 1 for other failures.\n";

struct status_job {
	cli_ctx *ctx;
	sync_plan plan;
	sync_opts opts;
	sync_box *boxes;
	bool json;
	pthread_mutex_t mu;
};

static void report_box(struct status_job *job, const sync_box *b)
{
	/* Big files' hashes may still be in the making when a box failed early. */
	sync_plan_wait(b->plan, NULL);
	pthread_mutex_lock(&job->mu);
	if (b->rc < 0 && !job->json)
		cli_error("%s", b->err.msg);
	if (b->rc < 0 && job->json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "box", b->box->name);
		cJSON_AddStringToObject(o, "event", "error");
		cJSON_AddStringToObject(o, "error", b->err.msg);
		cli_print_json(o);
		cJSON_Delete(o);
	}
	for (size_t i = 0; b->rc == 0 && i < b->plan->n; i++) {
		if (job->json) {
			cJSON *o = sync_file_json(b, i);
			cli_print_json(o);
			cJSON_Delete(o);
			continue;
		}
		char *line = sync_file_describe(b, i);
		cli_print_line(stdout, b->box->name, line, strlen(line));
		free(line);
	}
	if (b->rc == 0 && b->plan->n == 0 && !job->json) {
		const char *none = "no file with a .bak or a temporary file under the repo";
		cli_print_line(stdout, b->box->name, none, strlen(none));
	}
	pthread_mutex_unlock(&job->mu);
}

static void status_one(void *arg, const conf_box *box, size_t i)
{
	struct status_job *job = arg;
	(void)box;
	sync_status_box(&job->boxes[i]);
	sync_box_disconnect(&job->boxes[i]);
	report_box(job, &job->boxes[i]);
}

static int run_status(cli_ctx *ctx, int argc, char **argv)
{
	enum { O_BOXES = 256, O_POOL, O_ALL, O_ROOT, O_JSON, O_NOCLEAN, O_EXIT, O_NEW };
	static const struct option opts[] = {
		{"boxes", required_argument, NULL, O_BOXES}, {"pool", required_argument, NULL, O_POOL},
		{"all", no_argument, NULL, O_ALL},           {"root", required_argument, NULL, O_ROOT},
		{"json", no_argument, NULL, O_JSON},         {"no-clean", no_argument, NULL, O_NOCLEAN},
		{"exit-code", no_argument, NULL, O_EXIT},    {"accept-new", no_argument, NULL, O_NEW},
		{NULL, 0, NULL, 0},
	};
	struct status_job job = {.ctx = ctx};
	const char *spec = NULL, *pool = NULL, *root = NULL;
	bool all = false, exit_code = false;
	const conf_box **sel = NULL;
	size_t n = 0;
	int c, code = 0;
	bg_err err = {0};

	job.opts.clean = true;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_BOXES: spec = optarg; break;
		case O_POOL: pool = optarg; break;
		case O_ALL: all = true; break;
		case O_ROOT: root = optarg; break;
		case O_JSON: job.json = true; break;
		case O_NOCLEAN: job.opts.clean = false; break;
		case O_EXIT: exit_code = true; break;
		case O_NEW: job.opts.accept_new = true; break;
		default:
			cli_error("status: unknown option '%s'", argv[optind - 1]);
			return cli_usage(&cli_cmd_status, stderr, 2);
		}
	}
	code = cli_select_boxes(ctx, spec, pool, all, &sel, &n);
	if (code)
		return code;
	if (sync_plan_init(&job.plan, root ? root : ctx->conf.root, &err) < 0) {
		cli_error("status: %s", err.msg);
		free(sel);
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		if (sync_plan_add(&job.plan, argv[i], SYNC_ADD_NEED_LOCAL, &err) < 0) {
			cli_error("status: %s", err.msg);
			code = 2;
		}
	}
	if (!code && sync_plan_finish(&job.plan, cli_verifier_for, &ctx->conf, &err) < 0) {
		cli_error("status: %s", err.msg);
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
	remote_fanout((const conf_box *const *)sel, n, 0, status_one, &job);

	size_t cnt[SYNC_STATE_COUNT];
	sync_plan_wait(&job.plan, NULL);
	sync_count(job.boxes, n, cnt);
	code = sync_exit_code(job.boxes, n);
	if (code == 0 && exit_code && (cnt[SYNC_DIFFERS] || cnt[SYNC_MISSING]))
		code = 1;
	if (job.json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "event", "summary");
		cJSON_AddNumberToObject(o, "boxes", (double)n);
		for (int s = SYNC_SAME; s < SYNC_STATE_COUNT; s++)
			cJSON_AddNumberToObject(o, sync_state_name((sync_state)s), (double)cnt[s]);
		cJSON_AddNumberToObject(o, "exit", code);
		cli_print_json(o);
		cJSON_Delete(o);
	} else {
		char line[256];
		snprintf(line, sizeof(line), "status: %zu box%s: %zu same, %zu differ, %zu missing, %zu without a local file",
			 n, n == 1 ? "" : "es", cnt[SYNC_SAME], cnt[SYNC_DIFFERS], cnt[SYNC_MISSING],
			 cnt[SYNC_NO_LOCAL]);
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

const cli_cmd cli_cmd_status = {
	.name = "status",
	.summary = "show which boxes' files differ from the local ones (drift)",
	.help = status_help,
	.run = run_status,
};
