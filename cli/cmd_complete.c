/* boxgate __complete: the words shell completion offers, read from the same
 * command and option tables the parser uses and from the loaded configuration,
 * so completion/boxgate.bash and completion/_boxgate never keep lists of their
 * own. Hidden: not in `boxgate help`. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/exit.h"
#include "base/parse.h"
#include "base/xmalloc.h"
#include "cli/cli.h"

static const char complete_help[] =
	"usage: boxgate [--config FILE] __complete commands | options COMMAND | valued COMMAND\n"
	"                                          | boxes | pools | allow BOX | gpus BOX\n"
	"\n"
	"Prints one word a line for shell completion: the commands, a command's options\n"
	"(--name, and -L for an option with a letter), those of them that take a value,\n"
	"the box and pool names of the configuration, a box's allowlist (the gate flags\n"
	"`run BOX --` passes) or its GPUs (what --gpu takes). A configuration that does not\n"
	"load prints nothing.\n";

static void print_word(const char *prefix, const char *word)
{
	cli_printf(stdout, "%s%s\n", prefix, word);
}

static int list_commands(void)
{
	for (size_t i = 0; cli_commands[i]; i++)
		if (!cli_commands[i]->hidden)
			print_word("", cli_commands[i]->name);
	return BG_EXIT_OK;
}

/* Every option of the command, or (valued) those that take a value. */
static int list_options(const char *name, bool valued)
{
	const cli_cmd *cmd = name ? cli_find(name) : NULL;
	if (!cmd) {
		cli_error("__complete: options of which command? (got '%s')", name ? name : "");
		return BG_EXIT_USAGE;
	}
	for (const cli_opt *o = cmd->options; o && o->name; o++) {
		if (valued && o->kind == CLI_FLAG)
			continue;
		print_word("--", o->name);
		if (o->letter) {
			char letter[2] = {o->letter, '\0'};
			print_word("-", letter);
		}
	}
	return BG_EXIT_OK;
}

/* A shell asking for completions must not see a broken configuration's
 * error under the line being typed: stderr goes to /dev/null first. */
static bool load_quietly(cli_ctx *ctx)
{
	int null = open("/dev/null", O_WRONLY);
	if (null >= 0) {
		dup2(null, STDERR_FILENO);
		close(null);
	}
	return cli_load_conf(ctx) == 0;
}

/* The box's allowlist, or its GPUs one by one. */
static int list_box(cli_ctx *ctx, const char *name, bool gpus)
{
	if (!load_quietly(ctx))
		return BG_EXIT_OK;
	const conf_box *b = conf_find_box(&ctx->conf, name);
	if (!b)
		return BG_EXIT_OK;
	if (!gpus) {
		for (size_t i = 0; i < b->n_allow; i++)
			print_word("", b->allow[i]);
		return BG_EXIT_OK;
	}
	bool *set = xcalloc(BG_MAX_GPUS, sizeof(*set));
	const char *why = NULL;
	if (b->gpus && bg_gpus_parse(b->gpus, set, &why))
		for (int g = 0; g < BG_MAX_GPUS; g++)
			if (set[g])
				cli_printf(stdout, "%d\n", g);
	free(set);
	return BG_EXIT_OK;
}

static int list_names(cli_ctx *ctx, bool pools)
{
	if (!load_quietly(ctx))
		return BG_EXIT_OK;
	const conf *c = &ctx->conf;
	if (pools)
		for (size_t i = 0; i < c->n_pools; i++)
			print_word("", c->pools[i].name);
	else
		for (size_t i = 0; i < c->n_boxes; i++)
			print_word("", c->boxes[i].name);
	return BG_EXIT_OK;
}

static int run_complete(cli_ctx *ctx, void *opts, const cli_args *args)
{
	(void)opts;
	const char *what = args->v[0];
	if (strcmp(what, "commands") == 0 && args->n == 1)
		return list_commands();
	if (strcmp(what, "options") == 0 && args->n == 2)
		return list_options(args->v[1], false);
	if (strcmp(what, "valued") == 0 && args->n == 2)
		return list_options(args->v[1], true);
	if (strcmp(what, "boxes") == 0 && args->n == 1)
		return list_names(ctx, false);
	if (strcmp(what, "pools") == 0 && args->n == 1)
		return list_names(ctx, true);
	if (strcmp(what, "allow") == 0 && args->n == 2)
		return list_box(ctx, args->v[1], false);
	if (strcmp(what, "gpus") == 0 && args->n == 2)
		return list_box(ctx, args->v[1], true);
	return cli_usage(ctx->cmd, stderr, BG_EXIT_USAGE);
}

/* clang-format off */
const cli_cmd cli_cmd_complete = {
	.name = "__complete", .summary = "words for shell completion", .hidden = true,
	.help = complete_help, .order = CLI_OPTIONS_FIRST,
	.arity = CLI_ARGS_REQUIRED, .args_missing = "what to list? (commands, options COMMAND, valued COMMAND, boxes, pools, allow BOX, gpus BOX)",
	.run = run_complete,
};
/* clang-format on */
