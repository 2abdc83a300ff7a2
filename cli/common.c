/* What every subcommand shares: the command table lookup, loading the
 * configuration once, box selection, usage output. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "base/parse.h"
#include "base/timer.h"
#include "base/xmalloc.h"
#include "cli/cli.h"

int cli_parse_seconds(const char *cmd, const char *flag, const char *v, long min, long max,
		      int *out)
{
	long n;
	if (!bg_parse_seconds(v, min, max, &n)) {
		cli_error("%s: %s wants whole seconds from %ld to %ld, got '%s'", cmd, flag, min, max, v);
		return 2;
	}
	*out = (int)n;
	return 0;
}

const cli_cmd *cli_find(const char *name)
{
	for (size_t i = 0; cli_commands[i]; i++)
		if (strcmp(cli_commands[i]->name, name) == 0)
			return cli_commands[i];
	return NULL;
}

static const char *env_lookup(void *ctx, const char *name)
{
	(void)ctx;
	return getenv(name);
}

int cli_load_conf(cli_ctx *ctx)
{
	bg_err err = {0};
	if (ctx->conf_loaded)
		return 0;
	/* conf/ reads no environment: what it may use is handed over here. */
	conf_env env = {getenv("HOME"), getenv("USER"), getenv("BOXGATE_CONFIG"),
			getenv("XDG_CONFIG_HOME"), getenv("SSH_AUTH_SOCK"), env_lookup, NULL};
	int rc = conf_load(&ctx->conf, ctx->config_path, &env, &err);
	if (rc < 0) {
		cli_error("%s", err.msg);
		return bg_exit_code(rc);
	}
	ctx->conf_loaded = true;
	return 0;
}

int cli_select_boxes(cli_ctx *ctx, const char *spec, const char *pool, bool all,
		     const conf_box ***out, size_t *n)
{
	bg_err err = {0};
	char *pool_spec = NULL;
	int rc = cli_load_conf(ctx);
	if (rc)
		return rc;
	if (pool) {
		pool_spec = xasprintf("@%s", pool);
		spec = pool_spec;
	}
	if (!spec && !all) {
		cli_error("no boxes selected: use --boxes NAMES, --pool POOL or --all");
		return 2;
	}
	rc = conf_select(&ctx->conf, spec, all && !spec, out, n, &err);
	free(pool_spec);
	if (rc < 0) {
		cli_error("%s", err.msg);
		return bg_exit_code(rc);
	}
	if (*n == 0) {
		free(*out);
		*out = NULL;
		cli_error("the selection matched no box");
		return 2;
	}
	return 0;
}

int cli_usage(const cli_cmd *cmd, FILE *to, int code)
{
	fputs(cmd->help, to);
	return code;
}

const char *cli_verifier_for(void *ctx, const char *rel, bool *builtin)
{
	const conf *c = ctx;
	const char *cmd = conf_verify_for(c, rel);
	*builtin = false;
	for (size_t i = 0; cmd && i < c->n_verify; i++)
		if (c->verify[i].command == cmd) {
			*builtin = c->verify[i].file && strcmp(c->verify[i].file, "(built-in)") == 0;
			break;
		}
	return cmd;
}

const char *cli_local_python(const conf *c)
{
	for (size_t i = 0; i < c->n_boxes; i++)
		if (c->boxes[i].builtin && c->boxes[i].python)
			return c->boxes[i].python;
	return "python3";
}

static int64_t trace_t0;
static pthread_once_t trace_once = PTHREAD_ONCE_INIT;

static void trace_start(void)
{
	trace_t0 = bg_now_ms();
}

void cli_sync_trace(void *ctx, const char *box, const char *phase)
{
	(void)ctx;
	pthread_once(&trace_once, trace_start);
	char line[512];
	int n = snprintf(line, sizeof(line), "boxgate-trace: %6lld ms %s %s",
			 (long long)(bg_now_ms() - trace_t0), box, phase);
	cli_print_line(stderr, NULL, line, n < (int)sizeof(line) ? (size_t)n : sizeof(line) - 1);
}
