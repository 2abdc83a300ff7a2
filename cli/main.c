/* boxgate: run faithful GPU kernel gates on remote boxes, safely. */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/exit.h"
#include "base/xmalloc.h"
#include "cli/cli.h"
#include "remote/remote.h"

/* Parses the command's options, satisfies its needs, runs it. */
static int run_command(const cli_cmd *cmd, cli_ctx *ctx, int argc, char **argv)
{
	cli_args args = {0};
	void *opts = xcalloc(1, cmd->opts_size ? cmd->opts_size : 1);
	int code = cli_parse_command(cmd, ctx, opts, argc, argv, &args);
	if (!code && ctx->opt.help) /* -h: nothing loads, nothing connects */
		code = cli_usage(cmd, stdout, BG_EXIT_OK);
	else if (!code && !(code = cli_satisfy_needs(cmd, ctx)))
		code = cmd->run(ctx, opts, &args);
	free(args.v);
	free(opts);
	return code;
}

/* A closed standard descriptor would be handed to the first file boxgate
 * opens (the config, a socket, the stdin spool), which exec would then read
 * as its input or write output into: /dev/null stands in for it. */
static void open_std_fds(void)
{
	int fd;
	while ((fd = open("/dev/null", O_RDWR)) >= 0 && fd <= 2)
		;
	if (fd > 2)
		close(fd);
}

int main(int argc, char **argv)
{
	cli_ctx ctx = {.argv0 = argv[0]};
	bg_err err = {0};
	int i = 1;

	open_std_fds();
	signal(SIGPIPE, SIG_IGN);
	ctx.config_path = NULL;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0) {
			return cli_print_version();
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			return cli_main_help(stdout, BG_EXIT_OK);
		} else if (strcmp(argv[i], "--config") == 0) {
			if (i + 1 >= argc) {
				cli_error("option '--config' needs a value");
				return BG_EXIT_USAGE;
			}
			ctx.config_path = argv[++i];
		} else if (strncmp(argv[i], "--config=", 9) == 0) {
			ctx.config_path = argv[i] + 9;
		} else {
			return cli_unknown_global_option(argv[i]);
		}
	}
	if (i >= argc)
		return cli_main_help(stderr, BG_EXIT_USAGE);
	const cli_cmd *cmd = cli_find(argv[i]);
	if (!cmd)
		return cli_unknown_command(argv[i]);
	if (remote_global_init(&err) < 0) {
		cli_error("%s", err.msg);
		return BG_EXIT_FAIL;
	}
	int rc = run_command(cmd, &ctx, argc - i, argv + i);
	free(ctx.boxes);
	free(ctx.spec_owned);
	free(ctx.exclude_owned);
	if (ctx.conf_loaded)
		conf_release(&ctx.conf);
	remote_global_release();
	return rc;
}
