/* boxgate: run faithful GPU kernel gates on remote boxes, safely. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/exit.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "cli/cli.h"
#include "remote/remote.h"

#ifndef BOXGATE_VERSION
#define BOXGATE_VERSION "0.0.0"
#endif

const cli_cmd *const cli_commands[] = {
	&cli_cmd_run,  &cli_cmd_explain, &cli_cmd_exec,     &cli_cmd_check,  &cli_cmd_bootstrap,
	&cli_cmd_push, &cli_cmd_status,  &cli_cmd_rollback, &cli_cmd_config, &cli_cmd_help,
	NULL,
};

static const char main_usage[] = "usage: boxgate [--config FILE] COMMAND [ARGS...]\n"
				 "       boxgate --version | --help | help COMMAND\n";

static int print_main_help(FILE *to, int code)
{
	strbuf s = STRBUF_INIT;
	strbuf_addstr(&s, main_usage);
	strbuf_addstr(&s, "\nboxgate runs faithful per-task latency gates on exclusive GPU boxes "
			  "over SSH.\n\n"
			  "Commands:\n");
	for (size_t i = 0; cli_commands[i]; i++)
		strbuf_addf(&s, "  %-10s %s\n", cli_commands[i]->name, cli_commands[i]->summary);
	strbuf_addstr(&s,
		      "\nGlobal options:\n"
		      "  --config FILE  configuration file (else $BOXGATE_CONFIG, ./boxgate.ini,\n"
		      "                 $XDG_CONFIG_HOME/boxgate/config.ini, "
		      "~/.config/boxgate/config.ini)\n"
		      "  --version      print the version\n\n"
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
		return print_main_help(stdout, BG_EXIT_OK);
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

/* Parses the command's options, satisfies its needs, runs it. */
static int run_command(const cli_cmd *cmd, cli_ctx *ctx, int argc, char **argv)
{
	cli_args args = {0};
	void *opts = xcalloc(1, cmd->opts_size ? cmd->opts_size : 1);
	int code = cli_parse_command(cmd, ctx, opts, argc, argv, &args);
	if (!code)
		code = cli_satisfy_needs(cmd, ctx);
	if (!code)
		code = cmd->run(ctx, opts, &args);
	free(args.v);
	free(opts);
	return code;
}

int main(int argc, char **argv)
{
	cli_ctx ctx = {.argv0 = argv[0]};
	bg_err err = {0};
	int i = 1;

	signal(SIGPIPE, SIG_IGN);
	ctx.config_path = NULL;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--version") == 0) {
			cli_printf(stdout, "boxgate %s\n", BOXGATE_VERSION);
			return BG_EXIT_OK;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			return print_main_help(stdout, BG_EXIT_OK);
		} else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
			ctx.config_path = argv[++i];
		} else if (strncmp(argv[i], "--config=", 9) == 0) {
			ctx.config_path = argv[i] + 9;
		} else {
			cli_error("unknown option '%s' (see 'boxgate --help')", argv[i]);
			return BG_EXIT_USAGE;
		}
	}
	if (i >= argc)
		return print_main_help(stderr, BG_EXIT_USAGE);
	const cli_cmd *cmd = cli_find(argv[i]);
	if (!cmd) {
		cli_error("unknown command '%s' (see 'boxgate help')", argv[i]);
		return BG_EXIT_USAGE;
	}
	for (int k = i + 1; k < argc && strcmp(argv[k], "--") != 0; k++)
		if (strcmp(argv[k], "--help") == 0)
			return cli_usage(cmd, stdout, BG_EXIT_OK);
	if (remote_global_init(&err) < 0) {
		cli_error("%s", err.msg);
		return BG_EXIT_FAIL;
	}
	int rc = run_command(cmd, &ctx, argc - i, argv + i);
	free(ctx.boxes);
	free(ctx.spec_owned);
	if (ctx.conf_loaded)
		conf_release(&ctx.conf);
	remote_global_release();
	return rc;
}
