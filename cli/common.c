/* What every subcommand shares: parsing a command line against its entry,
 * loading the configuration once, box selection, usage output, the results
 * file from the environment, the trace that sync/ is handed. */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/exit.h"
#include "base/parse.h"
#include "base/strbuf.h"
#include "base/timer.h"
#include "base/xmalloc.h"
#include "cli/cli.h"
#include "remote/slurm.h"

char *cli_results_path(cli_ctx *ctx, const char *given)
{
	bg_err err = {0};
	if (!given && !ctx->conf_loaded && cli_load_conf(ctx))
		return NULL;
	char *path = conf_results_path(given ? NULL : &ctx->conf, given, getenv("XDG_DATA_HOME"),
				       getenv("HOME"), &err);
	if (!path)
		cli_error("%s", err.msg);
	return path;
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
		return BG_EXIT_OK;
	/* conf/ reads no environment: what it may use is handed over here. */
	char cwd[PATH_MAX];
	conf_env env = {.home = getenv("HOME"),
			.user = getenv("USER"),
			.config_path = getenv("BOXGATE_CONFIG"),
			.xdg_config_dir = getenv("XDG_CONFIG_HOME"),
			.agent_socket = getenv("SSH_AUTH_SOCK"),
			.cwd = getcwd(cwd, sizeof(cwd)),
			.lookup = env_lookup};
	int rc = conf_load(&ctx->conf, ctx->config_path, &env, &err);
	if (rc < 0) {
		cli_error("%s", err.msg);
		return bg_exit_code(rc);
	}
	ctx->conf_loaded = true;
	return BG_EXIT_OK;
}

/* Drops the first operand (it named the boxes). */
static const char *take_first(cli_args *args)
{
	const char *first = args->v[0];
	memmove(args->v, args->v + 1, args->n * sizeof(*args->v)); /* the NULL moves too */
	args->n--;
	if (args->n_before_dash)
		args->n_before_dash--;
	return first;
}

/* Box selection: --boxes, --pool and --all exclude each other; a command
 * may take its boxes from operands instead. */
static int take_box_operand(const cli_cmd *cmd, cli_ctx *ctx, cli_args *args)
{
	cli_common *o = &ctx->opt;
	int flags = (o->boxes != NULL) + (o->pool != NULL) + o->all;
	if (flags > 1) {
		cli_error("%s: %s: choose one way to select boxes", cmd->name,
			  o->all ? (o->boxes ? "--all and --boxes" : "--all and --pool")
				 : "--pool and --boxes");
		return BG_EXIT_USAGE;
	}
	switch (cmd->box_operand) {
	case CLI_BOX_FLAGS_ONLY: return BG_EXIT_OK;
	case CLI_BOX_FIRST_REQUIRED:
		if (!flags && !args->n) {
			cli_error("%s: no box given (boxgate %s BOX PATH...)", cmd->name,
				  cmd->name);
			return BG_EXIT_USAGE;
		}
		/* fall through */
	case CLI_BOX_FIRST_OPERAND:
		if (!flags && args->n)
			o->boxes = take_first(args);
		return BG_EXIT_OK;
	case CLI_BOX_ALL_OPERANDS:
		if (flags && args->n) {
			cli_error("%s: give boxes as operands or with --boxes, not both",
				  cmd->name);
			return BG_EXIT_USAGE;
		}
		if (args->n) {
			strbuf spec = STRBUF_INIT;
			for (size_t i = 0; i < args->n; i++) {
				if (spec.len)
					strbuf_addch(&spec, ',');
				strbuf_addstr(&spec, args->v[i]);
			}
			ctx->spec_owned = strbuf_detach(&spec);
			o->boxes = ctx->spec_owned;
			args->n = args->n_before_dash = 0;
			args->v[0] = NULL;
		} else if (!flags) {
			o->all = true;
		}
		return BG_EXIT_OK;
	case CLI_BOX_BEFORE_DASH:
		if (o->pool) { /* run --pool: the broker picks the box */
			if (args->n_before_dash) {
				cli_error("%s: give BOX or --pool, not both", cmd->name);
				return BG_EXIT_USAGE;
			}
			return BG_EXIT_OK;
		}
		if (args->n_before_dash == 0) {
			cli_error("%s: which box? (boxgate %s BOX -- GATE ARGS...)", cmd->name,
				  cmd->name);
			return BG_EXIT_USAGE;
		}
		if (args->n_before_dash > 1) {
			cli_error("%s: put '--' before the gate's arguments (boxgate %s %s -- %s "
				  "...)",
				  cmd->name, cmd->name, args->v[0], args->v[1]);
			return BG_EXIT_USAGE;
		}
		o->boxes = take_first(args);
		return BG_EXIT_OK;
	}
	return BG_EXIT_OK;
}

int cli_parse_command(const cli_cmd *cmd, cli_ctx *ctx, void *opts, int argc, char **argv,
		      cli_args *args)
{
	static const cli_opt none[] = {CLI_OPT_END};
	ctx->cmd = cmd;
	int code = cli_parse_options(cmd->name, cmd->options ? cmd->options : none, cmd->order,
				     cmd->unknown_hint, &ctx->opt, opts, argc, argv, args);
	if (code || ctx->opt.help)
		return code;
	if (ctx->opt.config)
		ctx->config_path = ctx->opt.config;
	const cli_list *given = &ctx->opt.boxes_given;
	if (given->n == 1) {
		ctx->opt.boxes = given->v[0];
	} else if (given->n > 1) { /* -w h1 -w h2: both, as clush takes them */
		strbuf spec = STRBUF_INIT;
		for (size_t i = 0; i < given->n; i++)
			strbuf_addf(&spec, "%s%s", i ? "," : "", given->v[i]);
		ctx->spec_owned = strbuf_detach(&spec);
		ctx->opt.boxes = ctx->spec_owned;
	}
	if ((code = take_box_operand(cmd, ctx, args)))
		return code;
	if (cmd->arity == CLI_ARGS_REQUIRED && !args->n) {
		cli_error("%s: %s", cmd->name, cmd->args_missing);
		return BG_EXIT_USAGE;
	}
	if (cmd->arity == CLI_ARGS_NONE && args->n) {
		cli_error("%s: unexpected argument '%s' (see 'boxgate help %s')", cmd->name,
			  args->v[0], cmd->name);
		return BG_EXIT_USAGE;
	}
	return BG_EXIT_OK;
}

const char *cli_exclude_spec(cli_ctx *ctx)
{
	const cli_list *x = &ctx->opt.exclude;
	if (!x->n || ctx->exclude_owned)
		return ctx->exclude_owned;
	strbuf ex = STRBUF_INIT;
	for (size_t i = 0; i < x->n; i++)
		strbuf_addf(&ex, "%s%s", i ? "," : "", x->v[i]);
	ctx->exclude_owned = strbuf_detach(&ex);
	return ctx->exclude_owned;
}

static int select_boxes(cli_ctx *ctx)
{
	bg_err err = {0};
	const cli_common *o = &ctx->opt;
	char *pool_spec = o->pool ? xasprintf("@%s", o->pool) : NULL;
	const char *spec = pool_spec ? pool_spec : o->boxes;
	if (!spec && !o->all) {
		cli_error("no boxes selected: use --boxes NAMES, --pool POOL or --all%s",
			  o->exclude.n ? " (--exclude only takes boxes away)" : "");
		return BG_EXIT_USAGE;
	}
	int rc = conf_select_except(&ctx->conf, spec, !spec, cli_exclude_spec(ctx), &ctx->boxes,
				    &ctx->n_boxes, &err);
	free(pool_spec);
	if (rc < 0) {
		cli_error("%s", err.msg);
		return bg_exit_code(rc);
	}
	if (ctx->n_boxes == 0) {
		free(ctx->boxes);
		ctx->boxes = NULL;
		cli_error("the selection matched no box");
		return BG_EXIT_USAGE;
	}
	return BG_EXIT_OK;
}

int cli_satisfy_needs(const cli_cmd *cmd, cli_ctx *ctx)
{
	int code = BG_EXIT_OK;
	if (cmd->needs & (CLI_NEEDS_CONFIG | CLI_NEEDS_BOXES))
		code = cli_load_conf(ctx);
	if (!code && (cmd->needs & CLI_NEEDS_BOXES))
		code = select_boxes(ctx);
	return code;
}

int cli_usage(const cli_cmd *cmd, FILE *to, int code)
{
	cli_write(to, cmd->help, strlen(cmd->help));
	return code;
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

void cli_trace_round_trips(const char *box, const remote_conn *c)
{
	if (!c || !getenv("BOXGATE_TRACE") ||
	    remote_target_of(c)->transport == REMOTE_TRANSPORT_LOCAL)
		return;
	char phase[96];
	unsigned auth = 0, all = remote_round_trips(c, &auth);
	if (remote_is_warm(c)) {
		cli_sync_trace(NULL, box, "through the box's connection master");
		return;
	}
	snprintf(phase, sizeof(phase),
		 "round trips after the TCP connect: %u (%u to authenticate, %u for channels)", all,
		 auth, all - auth);
	cli_sync_trace(NULL, box, phase);
}

int cli_connect(const conf_box *box, bool accept_new, remote_conn **c, bg_err *err)
{
	remote_connect_opts co = {.log = cli_log_warning, .accept_new = accept_new};
	return remote_connect(&box->target, &co, c, err);
}

int cli_connect_warm(const conf_box *box, bool accept_new, remote_conn **c, bg_err *err)
{
	remote_connect_opts co = {.log = cli_log_warning,
				  .accept_new = accept_new,
				  .warm = true,
				  .trace = getenv("BOXGATE_TRACE") ? cli_sync_trace : NULL};
	return remote_connect(&box->target, &co, c, err);
}

remote_connect_opts cli_link(const cli_ctx *ctx)
{
	return (remote_connect_opts){.log = cli_log_warning, .accept_new = ctx->opt.accept_new};
}

remote_connect_opts cli_link_warm(const cli_ctx *ctx)
{
	remote_connect_opts co = cli_link(ctx);
	co.warm = true;
	co.trace = getenv("BOXGATE_TRACE") ? cli_sync_trace : NULL;
	return co;
}

bool cli_slurm_cancel(const conf_box *box, const char *cmdline, bool accept_new)
{
	char msg[600];
	remote_connect_opts co = {.log = cli_log_warning, .accept_new = accept_new};
	double within = (double)(box->heartbeat_timeout_ms + box->kill_grace_ms) / 1000.0;
	if (!remote_slurm_cancel_lost(&box->target, &co, cmdline, within, msg, sizeof(msg)))
		return false;
	cli_printf(stderr, "boxgate: %s: %s\n", box->name, msg);
	return true;
}

void cli_catch_stop_signals(void (*handler)(int))
{
	struct sigaction sa = {.sa_handler = handler};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}
