/* boxgate push: send edited files to every selected box's repo copy, each
 * verified on the box, kept as .bak and swapped in atomically (the pipeline is
 * cli/push.c). */
#include "cli/push.h"
#include "cli/sync_driver.h"

static const char push_help[] =
	"usage: boxgate push [--boxes SPEC | --pool POOL | --all] [--exclude SPEC]\n"
	"                    [--dry-run] [--all-or-nothing]\n"
	"                    [--keep-mode] [--root DIR] [--json] [--accept-new] "
	"[--no-local-check]\n"
	"                    [--verify-timeout S] [--lock-wait S] [--] PATH|LOCAL=REMOTE...\n"
	"\n"
	"Pushes local files to the selected boxes' own repo copies, all boxes at once over one\n"
	"SSH connection each (the box's connection master's when it has a live one, files\n"
	"included: control_persist_s). A PATH lands at the same place under the box's repo;\n"
	"LOCAL=REMOTE puts LOCAL at REMOTE (relative to the box's repo; a trailing '/' keeps\n"
	"the file name).\n"
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
	"verifier's own output is shown once every box is done: each distinct output once,\n"
	"each line led by the set of boxes that printed it ('h[1-3]:     SyntaxError: ...').\n"
	"Built-in verifiers also run here first, so a syntax error fails before any box is\n"
	"touched. Temporary files of interrupted pushes are removed. Pushes to one box are\n"
	"serialised by a lock on the box.\n"
	"\n"
	"A [verify] command gets the file as {}, as $1 and as $BOXGATE_FILE: always a path\n"
	"of bytes in [A-Za-z0-9._/-] that boxgate chose (the temporary file, whose NAME has\n"
	"every other byte made '_', reached through a link made for the check when its\n"
	"directory's name has other bytes), so no file name can put code into the command,\n"
	"however it nests shells. $BOXGATE_TARGET is the target's own path (untrusted text).\n"
	"The new file gets the replaced file's owner and group (pushing as root over another\n"
	"user's file); where the box refuses that, a warning names the file.\n"
	"\n"
	"  --boxes SPEC        names, node sets (b200-[1-8,12], h[1-8]!h3: all but h3) and\n"
	"                      @pool, comma separated; -w SPEC; repeatable\n"
	"  --exclude SPEC      leave these boxes out (-x SPEC; repeatable)\n"
	"  --pool POOL         every box of a pool\n"
	"  --all               every configured box (the built-in local box only by name)\n"
	"  --dry-run           show what would change; write nothing\n"
	"  --all-or-nothing    upload and verify on every box first; swap only if all passed\n"
	"  --keep-mode         give the file the replaced file's mode instead of the local one\n"
	"  --root DIR          the local repo root (default: the directory of boxgate.ini)\n"
	"  --no-fold           one line per box and file; by default identical lines of\n"
	"                      several boxes are one, led by their node set (h[1-8]: ...),\n"
	"                      printed in box-name order once every box is done\n"
	"  --json              one JSON object per file and box, then a summary object\n"
	"  --accept-new        record unknown host keys (changed keys are still refused)\n"
	"  --no-local-check    do not run built-in verifiers locally first\n"
	"  --verify-timeout S  give up on a box's verify step after S seconds (default 300)\n"
	"  --lock-wait S       wait up to S seconds for another push on a box (default 30)\n"
	"\n"
	"Exit: 0 when every file is updated, created or unchanged; 4 when a verifier refused a\n"
	"file (that box is unchanged); 3 when a box could not be reached; 2 for bad usage or\n"
	"paths; 1 for other failures. Boxes that fail do not stop the others; the closing\n"
	"line names them in box-name order (h2 before h10). Large uploads show a progress\n"
	"line per box when stdout is a terminal.\n";

static const cli_opt push_options[] = {
	CLI_SYNC_OPTIONS,
	CLI_OPT_FLAG("dry-run", cli_push_opts, sync.dry_run),
	CLI_OPT_FLAG("all-or-nothing", cli_push_opts, sync.all_or_nothing),
	CLI_OPT_FLAG("keep-mode", cli_push_opts, sync.keep_mode),
	CLI_OPT_FLAG("no-local-check", cli_push_opts, no_local_check),
	CLI_OPT_SECONDS("verify-timeout", cli_push_opts, sync.verify_timeout_s, 0, 86400),
	CLI_OPT_SECONDS("lock-wait", cli_push_opts, sync.lock_wait_s, 0, 86400),
	CLI_OPT_END,
};

static int run_push(cli_ctx *ctx, void *opts, const cli_args *args)
{
	return cli_push_run(ctx, opts, args);
}

/* clang-format off */
const cli_cmd cli_cmd_push = {
	.name = "push",
	.summary = "push files to the boxes: verified on the box, .bak kept, swapped atomically",
	.help = push_help, .options = push_options, .opts_size = sizeof(cli_push_opts),
	.needs = CLI_NEEDS_BOXES, .arity = CLI_ARGS_REQUIRED,
	.args_missing = "no files given (boxgate push --all PATH...)", .run = run_push,
};
/* clang-format on */
