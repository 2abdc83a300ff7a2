/* boxgate config check: the resolved configuration, or file:line errors. */
#include <string.h>

#include "cli/cli.h"

static const char config_help[] =
	"usage: boxgate config check\n"
	"\n"
	"Loads the configuration (--config FILE, $BOXGATE_CONFIG, ./boxgate.ini,\n"
	"$XDG_CONFIG_HOME/boxgate/config.ini, ~/.config/boxgate/config.ini), resolves every\n"
	"box through ssh_config and prints the result as INI, or the first error as\n"
	"FILE:LINE: what was expected (exit 2).\n";

static void print_line(void *ctx, const char *line)
{
	(void)ctx;
	puts(line);
}

static int run_config(cli_ctx *ctx, int argc, char **argv)
{
	if (argc != 2 || strcmp(argv[1], "check") != 0) {
		cli_error("config: expected 'boxgate config check'");
		return cli_usage(&cli_cmd_config, stderr, 2);
	}
	int code = cli_load_conf(ctx);
	if (code)
		return code;
	conf_dump(&ctx->conf, print_line, NULL);
	fprintf(stderr, "boxgate: configuration OK: %s (%zu boxes, %zu pools)\n",
		ctx->conf.path ? ctx->conf.path : "no file, built-in defaults", ctx->conf.n_boxes,
		ctx->conf.n_pools);
	return 0;
}

const cli_cmd cli_cmd_config = {
	.name = "config",
	.summary = "check the configuration and print it resolved",
	.help = config_help,
	.run = run_config,
};
