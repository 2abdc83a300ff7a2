/* boxgate config check: the resolved configuration, or file:line errors. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/exit.h"
#include "base/xmalloc.h"
#include "cli/cli.h"
#include "remote/master.h"

static const char config_help[] =
	"usage: boxgate config check [--json]\n"
	"\n"
	"Loads the configuration (--config FILE, $BOXGATE_CONFIG, boxgate.ini in the working\n"
	"directory or the nearest one above it up to the repository root,\n"
	"$XDG_CONFIG_HOME/boxgate/config.ini, ~/.config/boxgate/config.ini), resolves every\n"
	"box through ssh_config and prints the result as INI, or the first error as\n"
	"FILE:LINE: what was expected (exit 2). Which file was loaded and how it was found\n"
	"(or where boxgate looked when none was) closes the output on stderr.\n"
	"\n"
	"  --json   print the resolved boxes as one JSON object instead: per box its\n"
	"           hostname, user, port, identities, known_hosts, global_known_hosts,\n"
	"           connect_timeout_s, ssh_connect_timeout_s (what ssh_config's\n"
	"           ConnectTimeout says, -1 when nothing), unsupported (the\n"
	"           ssh_config setting that makes boxgate refuse the box, or null),\n"
	"           proxyjump (the box's jump key or ssh_config's ProxyJump as\n"
	"           written, or null) and jumps (each hop resolved the same way, in\n"
	"           the order they are reached), and masters (below)\n"
	"\n"
	"Live connection masters (boxgate disconnect) close the output, one comment line\n"
	"each: box, pid, user@host:port, how long idle of control_persist_s, busy when\n"
	"it is serving a command, the host key's fingerprint; in JSON, \"masters\": [{box,\n"
	"pid, target, socket, idle_s, persist_s, busy, fingerprint}].\n";

static void print_line(void *ctx, const char *line)
{
	(void)ctx;
	cli_print_line(stdout, NULL, line, strlen(line));
}

static cJSON *string_array(char *const *v, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
	return a;
}

static cJSON *box_json(const conf_box *b)
{
	cJSON *o = cJSON_CreateObject();
	bool ssh = b->transport == CONF_TRANSPORT_SSH;
	cJSON_AddStringToObject(o, "name", b->name);
	cJSON_AddStringToObject(o, "transport", ssh ? "ssh" : "local");
	if (!ssh)
		return o;
	cJSON_AddStringToObject(o, "host", b->host);
	cJSON_AddStringToObject(o, "hostname", b->hostname);
	cJSON_AddStringToObject(o, "user", b->user);
	cJSON_AddNumberToObject(o, "port", b->port);
	cJSON_AddItemToObject(o, "identities", string_array(b->identities, b->n_identities));
	cJSON_AddItemToObject(o, "known_hosts", string_array(b->known_hosts, b->n_known_hosts));
	cJSON_AddItemToObject(o, "global_known_hosts",
			      string_array(b->global_known_hosts, b->n_global_known_hosts));
	cJSON_AddNumberToObject(o, "connect_timeout_s", b->connect_timeout_s);
	cJSON_AddNumberToObject(o, "ssh_connect_timeout_s", b->ssh_connect_timeout_s);
	if (b->unsupported)
		cJSON_AddStringToObject(o, "unsupported", b->unsupported);
	else
		cJSON_AddNullToObject(o, "unsupported");
	if (b->jump)
		cJSON_AddStringToObject(o, "proxyjump", b->jump);
	else
		cJSON_AddNullToObject(o, "proxyjump");
	cJSON *hops = cJSON_AddArrayToObject(o, "jumps");
	for (size_t i = 0; i < b->n_hops; i++)
		cJSON_AddItemToArray(hops, box_json(b->hops[i]));
	return o;
}

/* The live masters (none when their directory cannot be used). Owned. */
static remote_master_info *masters(size_t *n)
{
	char *dir = NULL;
	remote_master_info *v = NULL;
	*n = 0;
	if (remote_master_dir(&dir, NULL) == 0)
		remote_master_list(dir, &v, n, NULL);
	free(dir);
	return v;
}

static cJSON *masters_json(void)
{
	size_t n = 0;
	remote_master_info *v = masters(&n);
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "box", v[i].box);
		cJSON_AddNumberToObject(o, "pid", (double)v[i].pid);
		cJSON_AddStringToObject(o, "target", v[i].target);
		cJSON_AddStringToObject(o, "socket", v[i].path);
		cJSON_AddNumberToObject(o, "idle_s", (double)v[i].idle_ms / 1000.0);
		cJSON_AddNumberToObject(o, "persist_s", (double)v[i].persist_ms / 1000.0);
		cJSON_AddBoolToObject(o, "busy", v[i].busy);
		cJSON_AddStringToObject(o, "fingerprint", v[i].fingerprint);
		cJSON_AddItemToArray(a, o);
	}
	remote_master_infos_free(v, n);
	return a;
}

static void print_masters(void)
{
	size_t n = 0;
	remote_master_info *v = masters(&n);
	if (n)
		print_line(NULL, "");
	for (size_t i = 0; i < n; i++) {
		char *line =
			xasprintf("; connection master: %s: pid %d, %s, idle %.1f s of %g s%s, %s",
				  v[i].box, (int)v[i].pid, v[i].target,
				  (double)v[i].idle_ms / 1000.0, (double)v[i].persist_ms / 1000.0,
				  v[i].busy ? ", busy" : "", v[i].fingerprint);
		print_line(NULL, line);
		free(line);
	}
	remote_master_infos_free(v, n);
}

static void print_json(const conf *c)
{
	cJSON *root = cJSON_CreateObject();
	if (c->path)
		cJSON_AddStringToObject(root, "config", c->path);
	else
		cJSON_AddNullToObject(root, "config");
	cJSON_AddStringToObject(root, "ssh_config", c->ssh_config);
	cJSON *boxes = cJSON_AddArrayToObject(root, "boxes");
	for (size_t i = 0; i < c->n_boxes; i++)
		cJSON_AddItemToArray(boxes, box_json(&c->boxes[i]));
	cJSON_AddItemToObject(root, "masters", masters_json());
	cli_print_json(root);
	cJSON_Delete(root);
}

static const cli_opt config_options[] = {
	CLI_OPT_JSON,
	CLI_OPT_END,
};

static int run_config(cli_ctx *ctx, void *opts, const cli_args *args)
{
	(void)opts;
	static const char *const subs[] = {"check"};
	if (args->n && strcmp(args->v[0], "check") != 0)
		return cli_unknown_subcommand("config", args->v[0], subs, 1);
	if (args->n != 1) {
		cli_error("config: expected 'boxgate config check [--json]'");
		return BG_EXIT_USAGE;
	}
	if (ctx->opt.json)
		print_json(&ctx->conf);
	else
		conf_dump(&ctx->conf, print_line, NULL);
	if (!ctx->opt.json)
		print_masters();
	const conf *c = &ctx->conf;
	const char *boxes = c->n_boxes == 1 ? "box" : "boxes",
		   *pools = c->n_pools == 1 ? "pool" : "pools";
	if (c->path)
		cli_printf(stderr, "boxgate: configuration OK: %s (%s; %zu %s, %zu %s)\n", c->path,
			   c->found_by ? c->found_by : "given", c->n_boxes, boxes, c->n_pools,
			   pools);
	else
		cli_printf(stderr,
			   "boxgate: configuration OK: no file (%s), built-in defaults (%zu %s, "
			   "%zu %s)\n",
			   c->not_found ? c->not_found : "none found", c->n_boxes, boxes,
			   c->n_pools, pools);
	return BG_EXIT_OK;
}

/* clang-format off */
const cli_cmd cli_cmd_config = {
	.name = "config", .summary = "check the configuration and print it resolved",
	.help = config_help, .options = config_options,
	.needs = CLI_NEEDS_CONFIG, .run = run_config,
};
/* clang-format on */
