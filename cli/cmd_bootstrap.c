/* boxgate bootstrap: install or refresh the agent on boxes. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "base/fanout.h"
#include "base/xmalloc.h"
#include "cli/cli.h"
#include "gate/client/agent_install.h"
#include "gate/client/overlay.h"

static const char bootstrap_help[] =
	"usage: boxgate bootstrap [--boxes SPEC | --pool POOL | --all] [--exclude SPEC]\n"
	"                         [--force] [--json] [--no-fold] [--clean [--older-than DAYS]]\n"
	"\n"
	"Installs boxgate-agent on each box, content-addressed under\n"
	"~/.cache/boxgate/agent-<sha>: the prebuilt binary when it runs there, else compiled on\n"
	"the box with its cc. A box that already has this version is left alone unless\n"
	"--force. 'boxgate run' does the same on demand.\n"
	"\n"
	"  --boxes SPEC     the boxes (-w SPEC; repeatable); --pool, --all as for exec\n"
	"  --exclude SPEC   leave these boxes out (-x SPEC; repeatable)\n"
	"  --clean          also remove the candidate shadow trees (run --kernel/--overlay,\n"
	"                   under ~/.cache/boxgate/shadow) no run has used for DAYS days,\n"
	"                   and temporary ones an interrupted run left over an hour ago\n"
	"  --older-than D   the age for --clean, whole days (default 7; 0: every tree)\n"
	"  --no-fold        one line per box; by default identical lines of several boxes\n"
	"                   are one, led by their node set (h[1-8]: agent present: ...),\n"
	"                   boxes in name order\n"
	"  --json           one JSON object per box, in name order: box, ok, agent\n"
	"                   (present, installed, compiled or local), path, sha256 (the\n"
	"                   agent's source, its content address), error, and with --clean\n"
	"                   shadow_trees_removed\n";

struct boot_opts {
	bool force, clean;
	const char *older_than;
};

static const cli_opt bootstrap_options[] = {
	CLI_OPT_SELECT,
	CLI_OPT_JSON,
	CLI_OPT_NO_FOLD,
	CLI_OPT_FLAG("force", struct boot_opts, force),
	CLI_OPT_FLAG("clean", struct boot_opts, clean),
	CLI_OPT_STRING("older-than", struct boot_opts, older_than),
	CLI_OPT_END,
};

/* One box's outcome, kept for --json (printed after every box is done). */
struct boot_result {
	int code;
	bool installed; /* the agent is there: how and path are set */
	gate_agent_how how;
	char *path;   /* owned */
	char *error;  /* owned; NULL: none */
	long removed; /* shadow trees removed by --clean; -1: not cleaned */
	/* What to print for the box, once every box is done (folded). */
	char *lines[2], *errors[2];
	int n_lines, n_errors;
};

struct boot {
	const conf_box *const *boxes;
	const gate_agent *agent;
	bool force, json;
	int clean_days; /* -1: no --clean */
	struct boot_result *res;
};

/* gate_agent_how_name() for people, this for JSON: one word each. */
static const char *how_key(gate_agent_how how)
{
	switch (how) {
	case AGENT_PRESENT: return "present";
	case AGENT_UPLOADED: return "installed";
	case AGENT_COMPILED: return "compiled";
	case AGENT_LOCAL: return "local";
	}
	return "unknown";
}

static void fail_box(struct boot_result *r, int rc, const bg_err *err)
{
	if (r->n_errors < 2)
		r->errors[r->n_errors++] = xstrdup(err->msg);
	r->code = bg_exit_code(rc);
	if (!r->error)
		r->error = xstrdup(err->msg);
}

static void boot_box(void *arg, size_t i)
{
	struct boot *b = arg;
	const conf_box *box = b->boxes[i];
	struct boot_result *r = &b->res[i];
	remote_conn *c = NULL;
	bg_err err = {0};
	r->removed = -1;
	int rc = cli_connect(box, false, &c, &err);
	if (rc == 0)
		rc = gate_agent_ensure(c, b->agent, b->force, &r->path, &r->how, &err);
	if (rc < 0) {
		fail_box(r, rc, &err);
	} else {
		r->installed = true;
		char line[512];
		int n = snprintf(line, sizeof(line), "agent %s: %s", gate_agent_how_name(r->how),
				 r->path);
		if (!b->json)
			r->lines[r->n_lines++] = xstrndup(line, (size_t)n);
	}
	if (rc == 0 && b->clean_days >= 0) {
		char *cmd = overlay_clean_command(b->clean_days), *out = NULL;
		remote_status st;
		rc = remote_capture(c, cmd, 4096, 600000, &out, NULL, &st, &err);
		if (rc < 0) {
			fail_box(r, rc, &err);
		} else {
			char line[128];
			int n = snprintf(line, sizeof(line), "shadow trees %.*s",
					 (int)strcspn(out, "\n"), out);
			/* The command says "removed N". */
			if (strncmp(out, "removed ", 8) == 0)
				r->removed = strtol(out + 8, NULL, 10);
			if (!b->json)
				r->lines[r->n_lines++] = xstrndup(line, (size_t)n);
		}
		free(out);
		free(cmd);
	}
	remote_close(c);
}

/* --json prints the boxes in name order (h2 before h10). */
struct boot_row {
	const char *name;
	size_t i;
};

static int by_name(const void *a, const void *b)
{
	const struct boot_row *x = a, *y = b;
	return cli_box_name_cmp(x->name, y->name);
}

static void print_json(const struct boot *b, size_t i)
{
	const struct boot_result *r = &b->res[i];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "box", b->boxes[i]->name);
	cJSON_AddBoolToObject(o, "ok", r->code == 0);
	if (r->installed) {
		cJSON_AddStringToObject(o, "agent", how_key(r->how));
		cJSON_AddStringToObject(o, "path", r->path);
	} else {
		cJSON_AddNullToObject(o, "agent");
		cJSON_AddNullToObject(o, "path");
	}
	cJSON_AddStringToObject(o, "sha256", b->agent->sha);
	if (b->clean_days >= 0) {
		if (r->removed >= 0)
			cJSON_AddNumberToObject(o, "shadow_trees_removed", (double)r->removed);
		else
			cJSON_AddNullToObject(o, "shadow_trees_removed");
	}
	if (r->error)
		cJSON_AddStringToObject(o, "error", r->error);
	cli_print_json(o);
	cJSON_Delete(o);
}

static int run_bootstrap(cli_ctx *ctx, void *opts, const cli_args *args)
{
	const struct boot_opts *bo = opts;
	size_t n = ctx->n_boxes;
	struct boot b = {
		.boxes = ctx->boxes, .force = bo->force, .json = ctx->opt.json, .clean_days = -1};
	gate_agent agent;
	bg_err err = {0};
	int code = BG_EXIT_OK;
	(void)args;
	if (bo->older_than && !bo->clean) {
		cli_error("bootstrap: --older-than goes with --clean");
		return BG_EXIT_USAGE;
	}
	if (bo->clean) {
		const char *v = bo->older_than ? bo->older_than : "7";
		size_t len = strlen(v);
		if (!len || len > 5 || strspn(v, "0123456789") != len) {
			cli_error("bootstrap: --older-than wants whole days such as 7, got '%s'",
				  v);
			return BG_EXIT_USAGE;
		}
		b.clean_days = atoi(v);
	}
	if (gate_agent_locate(&agent, &err) < 0) {
		cli_error("%s", err.msg);
		return BG_EXIT_FAIL;
	}
	b.agent = &agent;
	b.res = xcalloc(n, sizeof(*b.res));
	bg_fanout(n, 0, boot_box, &b);
	struct boot_row *rows = xcalloc(n ? n : 1, sizeof(*rows));
	for (size_t i = 0; i < n; i++)
		rows[i] = (struct boot_row){ctx->boxes[i]->name, i};
	qsort(rows, n, sizeof(*rows), by_name);
	for (size_t k = 0; k < n && b.json; k++)
		print_json(&b, rows[k].i);
	free(rows);
	/* Boxes in name order, identical lines folded into node sets. */
	cli_folder fold = {0};
	for (size_t i = 0; i < n; i++) {
		struct boot_result *r = &b.res[i];
		for (int k = 0; k < r->n_errors; k++)
			cli_folder_add(&fold, CLI_FOLD_ERROR, ctx->boxes[i]->name, r->errors[k]);
		for (int k = 0; k < r->n_lines; k++)
			cli_folder_add(&fold, CLI_FOLD_OUT, ctx->boxes[i]->name, r->lines[k]);
	}
	cli_folder_print(&fold, !ctx->opt.no_fold);
	for (size_t i = 0; i < n; i++) {
		code = bg_exit_merge(code, b.res[i].code);
		free(b.res[i].path);
		free(b.res[i].error);
		for (int k = 0; k < b.res[i].n_lines; k++)
			free(b.res[i].lines[k]);
		for (int k = 0; k < b.res[i].n_errors; k++)
			free(b.res[i].errors[k]);
	}
	free(b.res);
	gate_agent_release(&agent);
	return code;
}

/* clang-format off */
const cli_cmd cli_cmd_bootstrap = {
	.name = "bootstrap", .summary = "install or refresh the watchdog agent on boxes",
	.help = bootstrap_help, .options = bootstrap_options, .opts_size = sizeof(struct boot_opts),
	.order = CLI_OPTIONS_ANYWHERE, .needs = CLI_NEEDS_BOXES, .box_operand = CLI_BOX_FIRST_OPERAND,
	.arity = CLI_ARGS_NONE, .run = run_bootstrap,
};
/* clang-format on */
