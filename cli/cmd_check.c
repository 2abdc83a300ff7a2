/* boxgate check: is every box usable? reachable, host key, auth, python,
 * repo, GPUs — one row per box, all boxes probed at once. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "base/fanout.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "cli/cli.h"
#include "remote/hostfile.h"
#include "remote/remote.h"
#include "shim/shim.h"

static const char check_help[] =
	"usage: boxgate check [--json] [--accept-new] [--boxes SPEC | BOXES...] [--exclude SPEC]\n"
	"\n"
	"Probes every configured box (or the named ones; node sets and @pool work) at once:\n"
	"reachable, host key, authentication, the box's python version, whether its repo\n"
	"exists, and its GPUs (nvidia-smi -L count, or none). One row per box, in box-name\n"
	"order (h2 before h10); the reason for every failure follows the table.\n"
	"\n"
	"  --boxes SPEC   the boxes, as the operands name them (-w SPEC; repeatable)\n"
	"  --exclude SPEC leave these boxes out (-x SPEC; repeatable)\n"
	"  --json         one JSON object per box: box, transport, reachable, host_key, auth,\n"
	"                 python (its version), repo, gpus, ok and error; yes/no are true/false,\n"
	"                 gpus a count (null without nvidia-smi), null what was not probed\n"
	"  --accept-new   record unknown host keys in known_hosts (changed or revoked keys\n"
	"                 are refused)\n"
	"\n"
	"Host keys are checked as `ssh -o StrictHostKeyChecking=yes` (or accept-new) checks\n"
	"them, over every user and global known_hosts file; HOSTKEY says ok, UNKNOWN,\n"
	"CHANGED, REVOKED (a @revoked line holds the key) or REFUSED. A box with a live\n"
	"connection master (control_persist_s) is probed through it: its key is the one the\n"
	"master's session was checked with; 'boxgate disconnect BOX' first to see it as it\n"
	"is now.\n"
	"\n"
	"Exit: 0 when every box is usable, 3 when one cannot be reached or refused us, 1 when\n"
	"one lacks python, its repo or (require_gpu = yes) a GPU.\n";

struct probe {
	const conf_box *box;
	const char *reach, *hostkey, *auth;
	char python[64], repo[8], gpus[16];
	int code;
	bg_err err;
	char problem[256];
};

struct check_job {
	const conf_box *const *boxes;
	struct probe *p;
	bool accept_new;
};

static const cli_opt check_options[] = {
	CLI_OPT_BOXES, CLI_OPT_EXCLUDE, CLI_OPT_JSON, CLI_OPT_ACCEPT_NEW, CLI_OPT_END,
};

static char *probe_command(const conf_box *b)
{
	strbuf s = STRBUF_INIT;
	strbuf_addstr(&s, "v=$(");
	bg_quote(&s, b->python ? b->python : "python3");
	strbuf_addstr(&s,
		      " --version 2>&1) && echo \"python ${v#Python }\" || echo 'python none'; ");
	if (b->repo) {
		strbuf_addstr(&s, "if [ -d ");
		bg_quote_path(&s, b->repo);
		strbuf_addstr(&s, " ]; then echo 'repo yes'; else echo 'repo no'; fi; ");
	} else {
		strbuf_addstr(&s, "echo 'repo -'; ");
	}
	strbuf_addstr(&s, "if command -v nvidia-smi >/dev/null 2>&1; then "
			  "echo \"gpus $(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')\"; "
			  "else echo 'gpus none'; fi");
	return strbuf_detach(&s);
}

static void field(const char *out, const char *key, char *dst, size_t n)
{
	size_t k = strlen(key);
	for (const char *p = out; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		if (len > k && strncmp(p, key, k) == 0 && p[k] == ' ') {
			snprintf(dst, n, "%.*s", (int)(len - k - 1), p + k + 1);
			return;
		}
		p = nl ? nl + 1 : NULL;
	}
	snprintf(dst, n, "?");
}

static void check_box(void *arg, size_t i)
{
	struct check_job *job = arg;
	const conf_box *box = job->boxes[i];
	struct probe *p = &job->p[i];
	remote_conn *c = NULL;
	bool local = box->transport == CONF_TRANSPORT_LOCAL;
	char *out = NULL, *cmd = NULL;

	p->box = box;
	p->reach = p->hostkey = p->auth = "-";
	strcpy(p->python, "-");
	strcpy(p->repo, "-");
	strcpy(p->gpus, "-");
	int rc = cli_connect_warm(box, job->accept_new, &c, &p->err);
	if (rc < 0) {
		bool past_tcp = rc == BG_EHOSTKEY || rc == BG_EAUTH;
		p->reach = past_tcp ? "yes" : "no";
		/* REVOKED, CHANGED, UNKNOWN (or REFUSED): the row says why at a glance. */
		p->hostkey = rc == BG_EHOSTKEY ? remote_hostkey_detail_name(p->err.detail)
					       : (rc == BG_EAUTH ? "ok" : "-");
		p->auth = rc == BG_EAUTH ? "FAILED" : "-";
		p->code = BG_EXIT_CONNECT;
		return;
	}
	p->reach = local ? "local" : "yes";
	p->hostkey = local ? "-" : "ok";
	p->auth = local ? "-" : "ok";
	cmd = probe_command(box);
	rc = remote_capture(c, cmd, 4096, box->connect_timeout_s * 1000 + 10000, &out, NULL, NULL,
			    &p->err);
	if (rc < 0) {
		p->code = BG_EXIT_FAIL;
		goto out;
	}
	field(out, "python", p->python, sizeof(p->python));
	field(out, "repo", p->repo, sizeof(p->repo));
	field(out, "gpus", p->gpus, sizeof(p->gpus));
	if (strcmp(p->python, "none") == 0)
		snprintf(p->problem, sizeof(p->problem), "%s: %s not found on the box", box->name,
			 box->python ? box->python : "python3");
	else if (strcmp(p->repo, "no") == 0)
		snprintf(p->problem, sizeof(p->problem), "%s: repo %s does not exist on the box",
			 box->name, box->repo);
	else if (box->gpu_policy == CONF_GPU_REQUIRED &&
		 (strcmp(p->gpus, "none") == 0 || strcmp(p->gpus, "0") == 0))
		snprintf(p->problem, sizeof(p->problem),
			 "%s: no GPU found (nvidia-smi) and require_gpu = yes", box->name);
	if (p->problem[0])
		p->code = BG_EXIT_FAIL;
out:
	free(out);
	free(cmd);
	remote_close(c);
}

#define ROW "%-16s %-9s %-8s %-6s %-10s %-5s %s\n"

/* A column's word as JSON: "yes" true, "no" false, anything else (not
 * probed, "-") null. */
static void add_yes_no(cJSON *o, const char *key, const char *word)
{
	if (strcmp(word, "yes") == 0 || strcmp(word, "ok") == 0 || strcmp(word, "local") == 0)
		cJSON_AddBoolToObject(o, key, true);
	else if (strcmp(word, "no") == 0 || strcmp(word, "FAILED") == 0)
		cJSON_AddBoolToObject(o, key, false);
	else
		cJSON_AddNullToObject(o, key);
}

/* The row as JSON: yes/no columns are booleans, a count a number, and what
 * was not probed (the "-" of the table) null. */
static cJSON *probe_json(const struct probe *p)
{
	cJSON *o = cJSON_CreateObject();
	bool local = p->box->transport == CONF_TRANSPORT_LOCAL;
	cJSON_AddStringToObject(o, "box", p->box->name);
	cJSON_AddStringToObject(o, "transport", local ? "local" : "ssh");
	add_yes_no(o, "reachable", p->reach);
	if (strcmp(p->hostkey, "-") == 0)
		cJSON_AddNullToObject(o, "host_key");
	else
		cJSON_AddStringToObject(o, "host_key", p->hostkey);
	add_yes_no(o, "auth", p->auth);
	bool have_python = strcmp(p->python, "-") != 0 && strcmp(p->python, "none") != 0 &&
			   strcmp(p->python, "?") != 0;
	if (have_python)
		cJSON_AddStringToObject(o, "python", p->python);
	else
		cJSON_AddNullToObject(o, "python");
	add_yes_no(o, "repo", p->repo);
	char *end = NULL;
	long gpus = strtol(p->gpus, &end, 10);
	if (end != p->gpus && *end == '\0')
		cJSON_AddNumberToObject(o, "gpus", (double)gpus);
	else
		cJSON_AddNullToObject(o, "gpus");
	cJSON_AddBoolToObject(o, "ok", p->code == 0);
	if (p->code)
		cJSON_AddStringToObject(o, "error", p->problem[0] ? p->problem : p->err.msg);
	return o;
}

static int cmp_probe(const void *a, const void *b)
{
	return cli_box_name_cmp(((const struct probe *)a)->box->name,
				((const struct probe *)b)->box->name);
}

static int run_check(cli_ctx *ctx, void *opts, const cli_args *args)
{
	(void)opts;
	(void)args;
	size_t n = ctx->n_boxes;
	bool json = ctx->opt.json;
	struct check_job job = {.boxes = ctx->boxes, .accept_new = ctx->opt.accept_new};
	int code = BG_EXIT_OK;
	job.p = xcalloc(n, sizeof(*job.p));
	bg_fanout(n, 0, check_box, &job);
	/* Rows and reasons in box-name order (h2 before h10), as node sets read. */
	qsort(job.p, n, sizeof(*job.p), cmp_probe);
	if (!json)
		cli_printf(stdout, ROW, "BOX", "REACHABLE", "HOSTKEY", "AUTH", "PYTHON", "REPO",
			   "GPUS");
	for (size_t i = 0; i < n; i++) {
		struct probe *p = &job.p[i];
		if (json) {
			cJSON *o = probe_json(p);
			cli_print_json(o);
			cJSON_Delete(o);
		} else {
			cli_printf(stdout, ROW, p->box->name, p->reach, p->hostkey, p->auth,
				   p->python, p->repo, p->gpus);
		}
		code = bg_exit_merge(code, p->code);
	}
	for (size_t i = 0; i < n; i++)
		if (job.p[i].code)
			cli_error("%s", job.p[i].problem[0] ? job.p[i].problem : job.p[i].err.msg);
	free(job.p);
	return code;
}

/* clang-format off */
const cli_cmd cli_cmd_check = {
	.name = "check", .summary = "probe boxes: reachable, host key, auth, python, repo, GPUs",
	.help = check_help, .options = check_options,
	.needs = CLI_NEEDS_BOXES, .box_operand = CLI_BOX_ALL_OPERANDS, .run = run_check,
};
/* clang-format on */
