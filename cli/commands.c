/* The command table, `boxgate help` and the top-level help that lists it. */
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "base/strbuf.h"
#include "cli/cli.h"

/* clang-format off */
const cli_cmd *const cli_commands[] = {
	&cli_cmd_run,
	&cli_cmd_validate,
	&cli_cmd_slots,
	&cli_cmd_campaign,
	&cli_cmd_explain,
	&cli_cmd_exec,
	&cli_cmd_check,
	&cli_cmd_bootstrap,
	&cli_cmd_push,
	&cli_cmd_status,
	&cli_cmd_rollback,
	&cli_cmd_results,
	&cli_cmd_report, &cli_cmd_brief,
	&cli_cmd_config,
	&cli_cmd_help,
	&cli_cmd_complete,
	NULL,
};
/* clang-format on */

static const char main_usage[] = "usage: boxgate [--config FILE] COMMAND [ARGS...]\n"
				 "       boxgate --version | --help | help COMMAND\n";

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
		&s, "\nGlobal options:\n"
		    "  --config FILE  configuration file (else $BOXGATE_CONFIG, ./boxgate.ini,\n"
		    "                 $XDG_CONFIG_HOME/boxgate/config.ini, "
		    "~/.config/boxgate/config.ini)\n"
		    "  --version      print the version\n\n"
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
	if (!cmd) {
		cli_error("unknown command '%s' (see 'boxgate help')", args->v[0]);
		return BG_EXIT_USAGE;
	}
	return cli_usage(cmd, stdout, BG_EXIT_OK);
}

const cli_cmd cli_cmd_help = {
	.name = "help",
	.summary = "describe boxgate or one command",
	.help = "usage: boxgate help [COMMAND]\n",
	.run = run_help,
};

const cli_cmd *cli_find(const char *name)
{
	for (size_t i = 0; cli_commands[i]; i++)
		if (strcmp(cli_commands[i]->name, name) == 0)
			return cli_commands[i];
	return NULL;
}
