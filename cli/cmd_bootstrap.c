/* boxgate bootstrap: install or refresh the agent on boxes. */
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "base/fanout.h"
#include "base/xmalloc.h"
#include "cli/cli.h"
#include "gate/agent_install.h"
#include "gate/overlay.h"

static const char bootstrap_help[] =
	"usage: boxgate bootstrap [--boxes SPEC | --pool POOL | --all] [--exclude SPEC]\n"
	"                         [--force] [--clean [--older-than DAYS]]\n"
	"\n"
	"Installs boxgate-agent on each box, content-addressed under\n"
	"~/.cache/boxgate/agent-<sha>: the prebuilt binary when it runs there, else compiled on\n"
	"the box with its cc. A box that already has this version is left alone unless\n"
	"--force. 'boxgate run' does the same on demand.\n"
	"\n"
	"  --clean          also remove the candidate shadow trees (run --kernel/--overlay,\n"
	"                   under ~/.cache/boxgate/shadow) no run has used for DAYS days,\n"
	"                   and temporary ones an interrupted run left over an hour ago\n"
	"  --older-than D   the age for --clean, whole days (default 7; 0: every tree)\n";

struct boot_opts {
	bool force, clean;
	const char *older_than;
};

static const cli_opt bootstrap_options[] = {
	CLI_OPT_SELECT,
	CLI_OPT_FLAG("force", struct boot_opts, force),
	CLI_OPT_FLAG("clean", struct boot_opts, clean),
	CLI_OPT_STRING("older-than", struct boot_opts, older_than),
	CLI_OPT_END,
};

struct boot {
	const conf_box *const *boxes;
	const gate_agent *agent;
	bool force;
	int clean_days; /* -1: no --clean */
	int *codes;
};

static void boot_box(void *arg, size_t i)
{
	struct boot *b = arg;
	const conf_box *box = b->boxes[i];
	remote_conn *c = NULL;
	bg_err err = {0};
	char *path = NULL;
	gate_agent_how how;
	int rc = cli_connect(box, false, &c, &err);
	if (rc == 0)
		rc = gate_agent_ensure(c, b->agent, b->force, &path, &how, &err);
	if (rc < 0) {
		cli_error("%s", err.msg);
		b->codes[i] = bg_exit_code(rc);
	} else {
		char line[512];
		int n = snprintf(line, sizeof(line), "agent %s: %s", gate_agent_how_name(how),
				 path);
		cli_print_line(stdout, box->name, line, (size_t)n);
	}
	if (rc == 0 && b->clean_days >= 0) {
		char *cmd = overlay_clean_command(b->clean_days), *out = NULL;
		remote_status st;
		rc = remote_capture(c, cmd, 4096, 600000, &out, NULL, &st, &err);
		if (rc < 0) {
			cli_error("%s", err.msg);
			b->codes[i] = bg_exit_code(rc);
		} else {
			char line[128];
			int n = snprintf(line, sizeof(line), "shadow trees %.*s",
					 (int)strcspn(out, "\n"), out);
			cli_print_line(stdout, box->name, line, (size_t)n);
		}
		free(out);
		free(cmd);
	}
	free(path);
	remote_close(c);
}

static int run_bootstrap(cli_ctx *ctx, void *opts, const cli_args *args)
{
	const struct boot_opts *bo = opts;
	size_t n = ctx->n_boxes;
	struct boot b = {.boxes = ctx->boxes, .force = bo->force, .clean_days = -1};
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
	b.codes = xcalloc(n, sizeof(int));
	bg_fanout(n, 0, boot_box, &b);
	for (size_t i = 0; i < n; i++)
		code = bg_exit_merge(code, b.codes[i]);
	free(b.codes);
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
