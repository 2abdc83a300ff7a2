#include "cli/gate_args.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/exit.h"
#include "base/parse.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "remote/remote.h"

#define SECONDS_MAX GATE_SECONDS_MAX

/* MPK_GATE_TIMEOUT_S passed through the shim sets the agent's watchdog too. It
 * is parsed as strictly as --timeout, a bad value is refused naming the flag
 * that produced it, and the gate gets the number's canonical form (`05` would
 * be octal to a bash gate, and 08 no number at all). */
static int timeout_from_shim(const cli_cmd *cmd, shim_result *r, int *out)
{
	static const char key[] = "MPK_GATE_TIMEOUT_S=";
	*out = 0;
	for (size_t i = 0; i < r->n_env; i++) {
		if (strncmp(r->env[i], key, sizeof(key) - 1) != 0)
			continue;
		const char *flag = "MPK_GATE_TIMEOUT_S";
		for (size_t w = 0; w < r->n_words; w++)
			if (r->words[w].route == SHIM_ENV && r->words[w].env &&
			    strcmp(r->words[w].env, r->env[i]) == 0)
				flag = r->words[w].rule ? r->words[w].rule->flag : r->words[w].arg;
		int code = cli_parse_seconds(cmd->name, flag, r->env[i] + sizeof(key) - 1, 1,
					     SECONDS_MAX, out);
		if (code)
			return code;
		char *canon = xasprintf("%s%d", key, *out);
		for (size_t w = 0; w < r->n_words; w++)
			if (r->words[w].env && strcmp(r->words[w].env, r->env[i]) == 0) {
				free(r->words[w].env);
				r->words[w].env = xstrdup(canon);
			}
		free(r->env[i]);
		r->env[i] = canon;
	}
	return BG_EXIT_OK;
}

/* --bar: a plain decimal ratio in (0, GATE_BAR_MAX]; no sign, blank, exponent, hex, inf or nan. */
static bool parse_bar(const char *v, double *out)
{
	size_t n = strlen(v), digits = strspn(v, "0123456789");
	if (!n || strspn(v, "0123456789.") != n || strchr(v, '.') != strrchr(v, '.') || !digits ||
	    (v[digits] == '.' && digits == 0))
		return false;
	double b = strtod(v, NULL);
	if (!isfinite(b) || b <= 0 || b > GATE_BAR_MAX)
		return false;
	*out = b;
	return true;
}

/* The first GPU that two items of the list `s` (already parsed) name, or -1. */
static int repeated_gpu(const char *s)
{
	bool seen[BG_MAX_GPUS] = {false}, item[BG_MAX_GPUS];
	const char *why = NULL;
	for (const char *p = s; *p;) {
		size_t len = strcspn(p, ",");
		char *one = xstrndup(p, len);
		bool parsed = bg_gpus_parse(one, item, &why);
		free(one);
		for (int g = 0; parsed && g < BG_MAX_GPUS; g++) {
			if (item[g] && seen[g])
				return g;
			seen[g] = seen[g] || item[g];
		}
		p += len + (p[len] == ',');
	}
	return -1;
}

/* --gpu must name GPUs of the box (its `gpus`), each once, without blanks (as
 * --timeout); normalised to an ascending comma list of canonical numbers for
 * the agent. A box without `gpus` takes --gpu only when it is the local
 * machine (the agent then checks the GPU exists). */
static int check_gpus(const cli_cmd *cmd, gate_args *ga)
{
	bool want[BG_MAX_GPUS], have[BG_MAX_GPUS];
	const char *why = NULL;
	const conf_box *b = ga->box;
	if (strpbrk(ga->gpu_opt, " \t\r\n"))
		why = "blank in the list";
	else if (!bg_gpus_parse(ga->gpu_opt, want, &why) && !why)
		why = "empty";
	if (why) {
		cli_error("%s: --gpu wants GPU indices such as 3, 0,1 or 2-3, got '%s': %s",
			  cmd->name, ga->gpu_opt, why);
		return BG_EXIT_USAGE;
	}
	int twice = repeated_gpu(ga->gpu_opt);
	if (twice >= 0) {
		cli_error("%s: --gpu %s: GPU %d is named twice", cmd->name, ga->gpu_opt, twice);
		return BG_EXIT_USAGE;
	}
	if (b->gpus) {
		if (!bg_gpus_parse(b->gpus, have, &why)) {
			cli_error("%s: box %s: bad gpus '%s': %s", cmd->name, b->name, b->gpus,
				  why);
			return BG_EXIT_USAGE;
		}
		for (int g = 0; g < BG_MAX_GPUS; g++)
			if (want[g] && !have[g]) {
				cli_error("%s: --gpu %s: GPU %d is not one of box %s's gpus (%s)",
					  cmd->name, ga->gpu_opt, g, b->name, b->gpus);
				return BG_EXIT_USAGE;
			}
	} else if (b->transport != CONF_TRANSPORT_LOCAL) {
		cli_error(
			"%s: --gpu %s: box %s lists no gpus (set gpus = ... under [box %s] in %s)",
			cmd->name, ga->gpu_opt, b->name, b->name, b->file);
		return BG_EXIT_USAGE;
	}
	strbuf s = STRBUF_INIT;
	for (int g = 0; g < BG_MAX_GPUS; g++)
		if (want[g])
			strbuf_addf(&s, "%s%d", s.len ? "," : "", g);
	ga->gpus = strbuf_detach(&s);
	return BG_EXIT_OK;
}

const cli_opt gate_options[] = {
	GATE_OPT_ROWS(gate_opts, ),
	CLI_OPT_END,
};

int gate_args_parse(cli_ctx *ctx, const gate_opts *opts, const cli_args *args, gate_args *ga)
{
	const cli_cmd *cmd = ctx->cmd; /* run or explain: names the errors */
	bg_err err = {0};
	int code;

	memset(ga, 0, sizeof(*ga));
	if (opts->bar && !parse_bar(opts->bar, &ga->bar)) {
		cli_error("%s: --bar wants a positive ratio such as 1.2 (at most %g), got '%s'",
			  cmd->name, GATE_BAR_MAX, opts->bar);
		return BG_EXIT_USAGE;
	}
	const char *name = ctx->opt.boxes; /* BOX, taken by the driver */
	ga->gpu_opt = opts->gpu;
	ga->timeout_s = opts->timeout_s;
	ga->json = ctx->opt.json;
	ga->box = conf_find_box(&ctx->conf, name);
	if (!ga->box) {
		const conf_box **sel = NULL;
		size_t n = 0;
		if (conf_select(&ctx->conf, name, false, &sel, &n, &err) < 0) {
			cli_error("%s", err.msg);
			return BG_EXIT_USAGE;
		}
		free(sel);
		cli_error("%s: '%s' names several boxes; run takes one", cmd->name, name);
		return BG_EXIT_USAGE;
	}
	if (shim_translate(&ga->box->rules, (const char *const *)args->v, args->n, &ga->shim,
			   &err) < 0) {
		cli_error("%s", err.msg);
		return BG_EXIT_USAGE;
	}
	if (gate_agent_locate(&ga->agent, &err) < 0) {
		cli_error("%s", err.msg);
		return BG_EXIT_FAIL;
	}
	if (ga->box->gate)
		ga->entry = xstrdup(ga->box->gate);
	else if (ga->box->transport == CONF_TRANSPORT_LOCAL)
		ga->entry = xasprintf("%s/boxgate-demo-gate", ga->agent.libexec);
	else {
		cli_error("%s: box %s has no gate (set gate = PATH under [box %s] in %s)",
			  cmd->name, ga->box->name, ga->box->name, ga->box->file);
		return BG_EXIT_USAGE;
	}
	if (ga->gpu_opt && (code = check_gpus(cmd, ga)))
		return code;
	int shim_timeout;
	if ((code = timeout_from_shim(cmd, &ga->shim, &shim_timeout)))
		return code;
	if (!ga->timeout_s)
		ga->timeout_s = shim_timeout;
	if (!ga->timeout_s)
		ga->timeout_s = ga->box->gate_timeout_s > 0 ? ga->box->gate_timeout_s : 420;
	char host[256] = "?";
	gethostname(host, sizeof(host) - 1);
	const char *user = getenv("USER");
	if (opts->holder)
		ga->tag = xasprintf("%s %s@%s:%d", opts->holder, user ? user : "boxgate", host,
				    (int)getpid());
	else
		ga->tag = xasprintf("%s@%s:%d", user ? user : "boxgate", host, (int)getpid());
	ga->spec = (gate_spec){
		.box = {.repo = ga->box->repo,
			.python = ga->box->python,
			.slurm = ga->box->target.slurm},
		.entry = ga->entry,
		.gpus = ga->gpus,
		.shim = &ga->shim,
		.timeout_s = ga->timeout_s,
		.grace_ms = ga->box->kill_grace_ms >= 0 ? ga->box->kill_grace_ms : 5000,
		.heartbeat_ms =
			ga->box->heartbeat_timeout_ms > 0 ? ga->box->heartbeat_timeout_ms : 15000,
		.lock_wait_s = ga->box->lock_wait_s,
		.require_gpu = ga->box->gpu_policy == CONF_GPU_REQUIRED,
		.tag = ga->tag,
	};
	return BG_EXIT_OK;
}

void gate_args_release(gate_args *ga)
{
	shim_result_release(&ga->shim);
	gate_agent_release(&ga->agent);
	free(ga->entry);
	free(ga->tag);
	free(ga->gpus);
	free(ga->agent_path);
}

char *gate_args_first_gpu(const conf_box *b)
{
	size_t n = b->gpus ? strspn(b->gpus, "0123456789") : 0;
	return n ? xstrndup(b->gpus, n) : NULL;
}

int gate_sweep_parse(const char *cmd, const cli_args *args, gate_sweep *sw)
{
	static const char flag[] = "--num-workers";
	const char *val = NULL;
	memset(sw, 0, sizeof(*sw));
	for (size_t i = 0; i < args->n; i++) {
		const char *a = args->v[i];
		if (strncmp(a, flag, sizeof(flag) - 1) != 0)
			continue;
		if (a[sizeof(flag) - 1] == '=') {
			val = a + sizeof(flag);
			sw->at = i;
			sw->equals = true;
		} else if (a[sizeof(flag) - 1] == '\0' && i + 1 < args->n) {
			val = args->v[++i];
			sw->at = i;
			sw->equals = false;
		}
	}
	if (!val)
		return BG_EXIT_OK;
	const char *p = val;
	for (;;) {
		size_t len = strcspn(p, ","), digits = strspn(p, "0123456789");
		long x = digits == len && len && len <= 6 ? strtol(p, NULL, 10) : 0;
		if (x < 1 || x > GATE_WORKERS_MAX) {
			cli_error(
				"%s: --num-workers %s: '%.*s' is not a worker count (whole numbers "
				"1-%d, comma-separated for a sweep)",
				cmd, val, (int)len, p, GATE_WORKERS_MAX);
			memset(sw, 0, sizeof(*sw));
			return BG_EXIT_USAGE;
		}
		for (size_t k = 0; k < sw->n; k++)
			if (sw->counts[k] == (int)x) {
				cli_error("%s: --num-workers %s: %ld is given twice", cmd, val, x);
				memset(sw, 0, sizeof(*sw));
				return BG_EXIT_USAGE;
			}
		if (sw->n == GATE_SWEEP_MAX) {
			cli_error("%s: --num-workers %s: at most %d counts in one sweep", cmd, val,
				  GATE_SWEEP_MAX);
			memset(sw, 0, sizeof(*sw));
			return BG_EXIT_USAGE;
		}
		sw->counts[sw->n++] = (int)x;
		if (!p[len])
			break;
		p += len + 1;
	}
	return BG_EXIT_OK;
}

void gate_sweep_args(const cli_args *args, const gate_sweep *sw, size_t i, cli_args *out,
		     char **word)
{
	*out = *args;
	out->v = xcalloc(args->n + 1, sizeof(*out->v));
	memcpy(out->v, args->v, args->n * sizeof(*out->v));
	*word = sw->equals ? xasprintf("--num-workers=%d", sw->counts[i])
			   : xasprintf("%d", sw->counts[i]);
	out->v[sw->at] = *word;
}

char *gate_args_default_gpus(remote_conn *c, const gate_args *ga)
{
	const conf_box *b = ga->box;
	if (b->gpus)
		return gate_args_first_gpu(b);
	if (b->transport != CONF_TRANSPORT_LOCAL)
		return NULL;
	/* The local box: GPU 0 when this machine has one, else a CPU slot. */
	char *out = NULL, *cmd = xasprintf("%s gpus", ga->agent.binary);
	bg_err err = {0};
	char *gpus = NULL;
	if (remote_capture(c, cmd, 65536, 30000, &out, NULL, NULL, &err) == 0 &&
	    strncmp(out, "gpu 0 ", 6) == 0)
		gpus = xstrdup("0");
	free(out);
	free(cmd);
	return gpus;
}
