/* The command table, `boxgate help` and the top-level help that lists it. */
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "base/strbuf.h"
#include "cli/cli.h"
#include "conf/conf.h"

#ifndef BOXGATE_VERSION
#define BOXGATE_VERSION "0.0.0"
#endif

/* clang-format off */
const cli_cmd *const cli_commands[] = {
	&cli_cmd_run,
	&cli_cmd_validate,
	&cli_cmd_slots,
	&cli_cmd_campaign,
	&cli_cmd_explain,
	&cli_cmd_exec,
	&cli_cmd_check,
	&cli_cmd_disconnect,
	&cli_cmd_bootstrap,
	&cli_cmd_push,
	&cli_cmd_pull,
	&cli_cmd_status,
	&cli_cmd_rollback,
	&cli_cmd_results,
	&cli_cmd_report, &cli_cmd_brief,
	&cli_cmd_config,
	&cli_cmd_init,
	&cli_cmd_help, &cli_cmd_version,
	&cli_cmd_complete,
	NULL,
};
/* clang-format on */

static const char main_usage[] = "usage: boxgate [--config FILE] COMMAND [ARGS...]\n"
				 "       boxgate --version | -V | version\n"
				 "       boxgate --help | -h | help COMMAND | COMMAND -h\n";

int cli_main_help(FILE *to, int code)
{
	strbuf s = STRBUF_INIT;
	strbuf_addstr(&s, main_usage);
	strbuf_addstr(&s, "\nboxgate runs faithful per-task latency gates on exclusive GPU boxes "
			  "over SSH.\n\n"
			  "Commands:\n");
	for (size_t i = 0; cli_commands[i]; i++)
		if (!cli_commands[i]->hidden)
			strbuf_addf(&s, "  %-10s %s\n", cli_commands[i]->name,
				    cli_commands[i]->summary);
	strbuf_addstr(
		&s,
		"\nGlobal options:\n"
		"  --config FILE  configuration file (else $BOXGATE_CONFIG, else boxgate.ini\n"
		"                 in the working directory or the nearest one above it up to\n"
		"                 the repository root, else $XDG_CONFIG_HOME/boxgate/config.ini,\n"
		"                 else ~/.config/boxgate/config.ini); also after the command\n"
		"  -V, --version  print the version\n"
		"  -h, --help     this help; 'boxgate COMMAND -h' describes one command\n\n"
		"Boxes are selected with --boxes (-w) SPEC, --pool POOL or --all, less\n"
		"--exclude (-x) SPEC. A SPEC is a comma list of names, node sets as clush\n"
		"writes them (h[1-8,12], h[01-04]) and @pool; h[1-8]!h3 removes h3, and\n"
		"'&' (in both) and '^' (in one, not both) work as in clush, left to right.\n\n"
		"Boxes are reached over SSH as ssh(1) reaches them, through ssh_config; a box\n"
		"behind a bastion through ssh_config's ProxyJump or its `jump = "
		"[user@]host[:port]`\n"
		"key (boxes behind one jump host share one connection to it).\n\n"
		"Exit codes: 0 success/PASS_GATE, 1 a command or gate failed/BELOW_BAR, 2 "
		"usage or\n"
		"configuration error, 3 connection/authentication/host-key failure, 4 verify "
		"failed\n"
		"(box left as it was), 124 TIMEOUT_HANG, 125 INVALID.\n"
		"'boxgate help COMMAND' describes one command.\n");
	cli_write(to, s.buf, s.len);
	strbuf_release(&s);
	return code;
}

static int run_help(cli_ctx *ctx, void *opts, const cli_args *args)
{
	(void)ctx;
	(void)opts;
	if (!args->n)
		return cli_main_help(stdout, BG_EXIT_OK);
	const cli_cmd *cmd = cli_find(args->v[0]);
	if (!cmd)
		return cli_unknown_command(args->v[0]);
	return cli_usage(cmd, stdout, BG_EXIT_OK);
}

const cli_cmd cli_cmd_help = {
	.name = "help",
	.summary = "describe boxgate or one command",
	.help = "usage: boxgate help [COMMAND]\n",
	.run = run_help,
};

int cli_print_version(void)
{
	cli_printf(stdout, "boxgate %s\n", BOXGATE_VERSION);
	return BG_EXIT_OK;
}

static int run_version(cli_ctx *ctx, void *opts, const cli_args *args)
{
	(void)ctx;
	(void)opts;
	(void)args;
	return cli_print_version();
}

/* clang-format off */
const cli_cmd cli_cmd_version = {
	.name = "version", .summary = "print boxgate's version",
	.help = "usage: boxgate version   (also boxgate --version, boxgate -V)\n",
	.arity = CLI_ARGS_NONE, .run = run_version,
};
/* clang-format on */

const cli_cmd *cli_find(const char *name)
{
	for (size_t i = 0; cli_commands[i]; i++)
		if (strcmp(cli_commands[i]->name, name) == 0)
			return cli_commands[i];
	return NULL;
}

int cli_unknown_command(const char *name)
{
	const char *names[64];
	size_t n = 0;
	for (size_t i = 0; cli_commands[i] && n < sizeof(names) / sizeof(names[0]); i++)
		if (!cli_commands[i]->hidden) /* never suggested: not for people */
			names[n++] = cli_commands[i]->name;
	const char *s = conf_suggest(name, names, n);
	if (s)
		cli_error("unknown command '%s' (did you mean '%s'?)", name, s);
	else
		cli_error("unknown command '%s' (see 'boxgate help')", name);
	return BG_EXIT_USAGE;
}

int cli_unknown_subcommand(const char *cmd, const char *word, const char *const *subs, size_t n)
{
	const char *s = conf_suggest(word, subs, n);
	if (s)
		cli_error("%s: unknown subcommand '%s' (did you mean '%s'?)", cmd, word, s);
	else
		cli_error("%s: unknown subcommand '%s' (see 'boxgate help %s')", cmd, word, cmd);
	return BG_EXIT_USAGE;
}

/* Whether some command's table has the long option `word` names. */
static bool a_command_takes(const char *word)
{
	size_t len = strcspn(word + 2, "=");
	for (size_t i = 0; word[1] == '-' && cli_commands[i]; i++)
		for (const cli_opt *o = cli_commands[i]->options; o && o->name; o++)
			if (strlen(o->name) == len && strncmp(o->name, word + 2, len) == 0)
				return true;
	return false;
}

int cli_unknown_global_option(const char *word)
{
	static const char *const globals[] = {"config", "version", "help"};
	const char *bare = word + strspn(word, "-");
	const char *s = conf_suggest(bare, globals, 3);
	if (a_command_takes(word))
		cli_error("option '%s' goes after the command (boxgate COMMAND %s ...)", word,
			  word);
	else if (s)
		cli_error("unknown option '%s' (did you mean '--%s'?)", word, s);
	else
		cli_error("unknown option '%s' (see 'boxgate --help')", word);
	return BG_EXIT_USAGE;
}
