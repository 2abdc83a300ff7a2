/* boxgate bootstrap: install or refresh the agent on boxes. */
#include <getopt.h>
#include <stdlib.h>

#include "base/exit.h"
#include "base/xmalloc.h"
#include "cli/cli.h"
#include "gate/agent_install.h"
#include "remote/fanout.h"

static const char bootstrap_help[] =
	"usage: boxgate bootstrap [--boxes SPEC | --pool POOL | --all] [--force]\n"
	"\n"
	"Installs boxgate-agent on each box, content-addressed under\n"
	"~/.cache/boxgate/agent-<sha>: the prebuilt binary when it runs there, else compiled on\n"
	"the box with its cc. A box that already has this version is left alone unless\n"
	"--force. 'boxgate run' does the same on demand.\n";

struct boot {
	const gate_agent *agent;
	bool force;
	int *codes;
};

static void boot_box(void *arg, const conf_box *box, size_t i)
{
	struct boot *b = arg;
	remote_connect_opts co = {.log = cli_log_warning};
	remote_conn *c = NULL;
	bg_err err = {0};
	char *path = NULL;
	gate_agent_how how;
	int rc = remote_connect(&box->target, &co, &c, &err);
	if (rc == 0)
		rc = gate_agent_ensure(c, b->agent, b->force, &path, &how, &err);
	if (rc < 0) {
		cli_error("%s", err.msg);
		b->codes[i] = bg_exit_code(rc);
	} else {
		char line[512];
		int n = snprintf(line, sizeof(line), "agent %s: %s", gate_agent_how_name(how), path);
		cli_print_line(stdout, box->name, line, (size_t)n);
	}
	free(path);
	remote_close(c);
}

static int run_bootstrap(cli_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{"boxes", required_argument, NULL, 'B'}, {"pool", required_argument, NULL, 'P'},
		{"all", no_argument, NULL, 'A'},         {"force", no_argument, NULL, 'f'},
		{NULL, 0, NULL, 0},
	};
	const char *spec = NULL, *pool = NULL;
	bool all = false;
	struct boot b = {0};
	int c;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (c) {
		case 'B': spec = optarg; break;
		case 'P': pool = optarg; break;
		case 'A': all = true; break;
		case 'f': b.force = true; break;
		default:
			cli_error("bootstrap: unknown option '%s'", argv[optind - 1]);
			return cli_usage(&cli_cmd_bootstrap, stderr, 2);
		}
	}
	if (optind < argc && !spec)
		spec = argv[optind];
	const conf_box **boxes = NULL;
	size_t n = 0;
	int code = cli_select_boxes(ctx, spec, pool, all, &boxes, &n);
	if (code)
		return code;
	gate_agent agent;
	bg_err err = {0};
	if (gate_agent_locate(&agent, &err) < 0) {
		cli_error("%s", err.msg);
		free(boxes);
		return 1;
	}
	b.agent = &agent;
	b.codes = xcalloc(n, sizeof(int));
	remote_fanout((const conf_box *const *)boxes, n, 0, boot_box, &b);
	for (size_t i = 0; i < n; i++)
		if (b.codes[i] && (code == 0 || b.codes[i] == 3))
			code = b.codes[i];
	free(b.codes);
	free(boxes);
	gate_agent_release(&agent);
	return code;
}

const cli_cmd cli_cmd_bootstrap = {
	.name = "bootstrap",
	.summary = "install or refresh the watchdog agent on boxes",
	.help = bootstrap_help,
	.run = run_bootstrap,
};
