/* boxgate disconnect: ends connection masters (remote/master.h). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "cli/cli.h"
#include "remote/master.h"

static const char disconnect_help[] =
	"usage: boxgate disconnect [--json] [--boxes SPEC | BOXES...] [--exclude SPEC]\n"
	"\n"
	"Ends connection masters: the background processes that keep a box's SSH session\n"
	"for control_persist_s after a command (as OpenSSH's ControlPersist), so the next\n"
	"command skips the handshake. Without boxes, every master of this user ends; with\n"
	"boxes (names, node sets, @pool), those boxes' masters. Prints each master it ended\n"
	"('BOX: ended its connection master (pid N)'). A master running a command takes no\n"
	"other and ends when that command does.\n"
	"\n"
	"  --boxes SPEC   the boxes, as the operands name them (-w SPEC; repeatable)\n"
	"  --exclude SPEC leave these boxes out (-x SPEC; repeatable)\n"
	"  --json         one JSON object per master ended: {box, pid, socket}\n"
	"\n"
	"Masters live in $XDG_RUNTIME_DIR/boxgate (else /tmp/boxgate-UID); `boxgate config\n"
	"check` lists them.\n"
	"Exit: 0, also when there was none to end; 1 when one could not be ended.\n";

static const cli_opt disconnect_options[] = {
	CLI_OPT_BOXES,
	CLI_OPT_EXCLUDE,
	CLI_OPT_JSON,
	CLI_OPT_END,
};

/* Ends the master on `path`; says so. Returns an exit code. */
static int end_one(const char *box, const char *path, bool json)
{
	bg_err err = {0};
	pid_t pid = 0;
	int r = remote_master_end(path, 5000, &pid, &err);
	if (r < 0) {
		cli_error("%s: %s", box, err.msg);
		return BG_EXIT_FAIL;
	}
	if (r == 0)
		return BG_EXIT_OK;
	if (json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "box", box);
		cJSON_AddNumberToObject(o, "pid", (double)pid);
		cJSON_AddStringToObject(o, "socket", path);
		cli_print_json(o);
		cJSON_Delete(o);
	} else {
		cli_printf(stdout, "%s: ended its connection master (pid %d)\n", box, (int)pid);
	}
	return BG_EXIT_OK;
}

static int run_disconnect(cli_ctx *ctx, void *opts, const cli_args *args)
{
	(void)opts;
	(void)args;
	char *dir = NULL;
	bg_err err = {0};
	int code = BG_EXIT_OK;
	bool json = ctx->opt.json;
	if (remote_master_dir(&dir, &err) < 0) {
		cli_error("%s", err.msg);
		return BG_EXIT_FAIL;
	}
	if (ctx->opt.all && !ctx->opt.boxes && !ctx->opt.pool) {
		/* No boxes named: every master, configured box or not. */
		remote_master_info *v = NULL;
		size_t n = 0;
		if (remote_master_list(dir, &v, &n, &err) < 0) {
			cli_error("%s", err.msg);
			code = BG_EXIT_FAIL;
		}
		for (size_t i = 0; i < n; i++)
			code = bg_exit_merge(code, end_one(v[i].box, v[i].path, json));
		remote_master_infos_free(v, n);
	} else {
		for (size_t i = 0; i < ctx->n_boxes; i++) {
			char *path = remote_master_path(&ctx->boxes[i]->target, dir);
			/* control_persist_s = 0 now: a master left from before still ends. */
			if (!path && ctx->boxes[i]->target.transport == REMOTE_TRANSPORT_SSH) {
				remote_target t = ctx->boxes[i]->target;
				t.control_persist_ms = 1;
				path = remote_master_path(&t, dir);
			}
			if (path)
				code = bg_exit_merge(code,
						     end_one(ctx->boxes[i]->name, path, json));
			free(path);
		}
	}
	free(dir);
	return code;
}

/* clang-format off */
const cli_cmd cli_cmd_disconnect = {
	.name = "disconnect", .summary = "end connection masters (kept SSH sessions)",
	.help = disconnect_help, .options = disconnect_options,
	.needs = CLI_NEEDS_BOXES, .box_operand = CLI_BOX_ALL_OPERANDS, .run = run_disconnect,
};
/* clang-format on */
