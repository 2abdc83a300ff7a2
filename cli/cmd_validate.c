/* boxgate validate: is the box's gate worth trusting? Its reference must
 * pass, its stub must score 0 and its drop-the-feature variant must fail the
 * cos gate: three gate invocations through the machinery run uses. */
#include <cjson/cJSON.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "base/json.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "cli/gate_args.h"
#include "measure/validate.h"

static const char validate_help[] =
	"usage: boxgate validate BOX [--gpu LIST] [--timeout S] [--json] -- GATE ARGS...\n"
	"\n"
	"Checks that the box's gate can tell a kernel from a fake, by running it three times\n"
	"on the box, each through the watchdog agent exactly as 'boxgate run' does:\n"
	"  ref   GATE ARGS as given: must pass (PASS_GATE or BELOW_BAR, cos >= 0.99)\n"
	"  stub  GATE ARGS + the box's validate_stub words: must be rejected with score 0\n"
	"        (INVALID, the candidate's cos 0 within 1e-6, or no usable result)\n"
	"  drop  GATE ARGS + the box's validate_drop words (the candidate without the\n"
	"        task's feature): must be rejected by the cos gate (INVALID, cos < 0.99)\n"
	"and prints one line in the field notes' form, then whether the gate holds:\n"
	"  q_b nw8  stub[INVALID cos 0.000]  ref[PASS cos 1.000]  drop[INVALID cos 0.716]\n"
	"  validate: the gate holds\n"
	"\n"
	"validate_stub and validate_drop are box keys (validate_stub = --variant stub); the\n"
	"built-in local box has them for the demo gate (--variant stub, --variant halfk). A\n"
	"box without them is refused before anything connects. The extra words go through\n"
	"the box's shim like the others.\n"
	"\n"
	"  --gpu LIST     slot GPUs, as for run (default: the first of the box's gpus)\n"
	"  --timeout S    watchdog timeout of each invocation (default as for run)\n"
	"  --json         one JSON object per invocation, then a summary object\n"
	"\n"
	"validate keeps no record in the results store. The gate's stderr lines are shown\n"
	"on stderr, prefixed with the invocation (ref, stub, drop).\n"
	"Exit: 0 the gate holds, 1 a check failed, 2 usage or a box without the keys,\n"
	"3 connection, 130 stopped with Ctrl-C.\n";

typedef struct validate_opts {
	gate_opts g; /* first: gate_args_parse reads it */
} validate_opts;

static const cli_opt validate_options[] = {
	CLI_OPT_STRING("gpu", validate_opts, g.gpu),
	CLI_OPT_SECONDS("timeout", validate_opts, g.timeout_s, 1, GATE_SECONDS_MAX),
	CLI_OPT_JSON,
	CLI_OPT_END,
};

enum { V_REF = VALIDATE_REF, V_STUB = VALIDATE_STUB, V_DROP = VALIDATE_DROP, V_N = VALIDATE_N };
static const char *const variant_names[V_N] = {"ref", "stub", "drop"};
/* The field notes' order. */
static const int show_order[V_N] = {V_STUB, V_REF, V_DROP};

typedef struct variant {
	const char *name;
	bool json;
	char **words; /* the gate's arguments (the array owned, the words borrowed) */
	size_t n_words;
	bool parsed; /* ga holds a gate_args_parse result */
	gate_args ga;
	gate_outcome out;
	gate_result last; /* a copy of the last result line */
	bool ran;
	int code; /* gate_outcome_judge's */
	char why[700];
	validate_call call; /* the check judged (measure/validate.h) */
} variant;

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void on_line(void *arg, remote_stream s, const char *line, size_t len, int flags)
{
	const variant *v = arg;
	(void)flags;
	if (!v->json && s == REMOTE_STDERR)
		cli_print_line(stderr, v->name, line, len);
}

static void on_result(void *arg, const gate_result *r)
{
	variant *v = arg;
	gate_result_release(&v->last);
	v->last = *r;
	v->last.raw = r->raw ? xstrdup(r->raw) : NULL;
	v->last.json = r->json ? cJSON_Duplicate(r->json, 1) : NULL;
}

/* A box without a validate key is refused before connecting. */
static int check_keys(const conf_box *b)
{
	static const char *const keys[2] = {"validate_stub", "validate_drop"};
	const char *const eg[2] = {"--variant stub", "--variant halfk"};
	bool have[2] = {b->validate_stub != NULL, b->validate_drop != NULL};
	int code = BG_EXIT_OK;
	for (int i = 0; i < 2; i++) {
		if (have[i])
			continue;
		if (b->line)
			cli_error("validate: box %s has no %s: add %s = GATE ARGS (e.g. %s) under "
				  "[box %s] at %s:%d",
				  b->name, keys[i], keys[i], eg[i], b->name, b->file, b->line);
		else
			cli_error("validate: box %s has no %s (it runs its own gate): add [box %s] "
				  "with %s = GATE ARGS (e.g. %s) to the configuration",
				  b->name, keys[i], b->name, keys[i], eg[i]);
		code = BG_EXIT_USAGE;
	}
	return code;
}

/* The variant's words: the user's, then the box's extra ones. */
static void variant_words(variant *v, const cli_args *args, char *const *extra, size_t n_extra)
{
	v->n_words = args->n + n_extra;
	v->words = xcalloc(v->n_words + 1, sizeof(*v->words));
	for (size_t i = 0; i < args->n; i++)
		v->words[i] = args->v[i];
	for (size_t i = 0; i < n_extra; i++)
		v->words[args->n + i] = extra[i];
}

static int run_variant(remote_conn *c, variant *v, const char *agent_path, const char *gpus)
{
	bg_err err = {0};
	v->ga.spec.agent = agent_path;
	if (!v->ga.spec.gpus)
		v->ga.spec.gpus = gpus;
	char *cmdline = gate_command_line(&v->ga.spec);
	gate_policy policy = GATE_POLICY_DEFAULT;
	policy.run_limit_s = gate_run_limit_s(&v->ga.spec);
	gate_callbacks cb = {on_line, on_result, NULL, v,
			     GATE_HEARTBEAT_EVERY_MS(v->ga.spec.heartbeat_ms)};
	int rc = gate_run(c, cmdline, &policy, &cb, &stop_requested, &v->out, &err);
	free(cmdline);
	if (rc < 0)
		cli_error("%s", err.msg);
	v->code = gate_outcome_judge(&v->out, v->why, sizeof(v->why), NULL);
	v->ran = true;
	return v->code;
}

/* shape and num_workers from the first result that has them, ref first. */
static void point_of(const variant *vs, const char **shape, int *nw)
{
	*shape = NULL;
	*nw = -1;
	for (int i = 0; i < V_N; i++) {
		const cJSON *j = vs[i].last.json;
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "shape");
		const cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "num_workers");
		if (!*shape && cJSON_IsString(s))
			*shape = s->valuestring;
		if (*nw < 0 && cJSON_IsNumber(w))
			*nw = (int)w->valuedouble;
	}
}

static void field_line(const variant *vs, strbuf *line)
{
	const char *shape;
	int nw;
	point_of(vs, &shape, &nw);
	strbuf_addstr(line, shape ? shape : "?");
	if (nw >= 0)
		strbuf_addf(line, " nw%d", nw);
	else
		strbuf_addstr(line, " nw?");
	for (int k = 0; k < V_N; k++) {
		const variant *v = &vs[show_order[k]];
		if (!v->ran)
			strbuf_addf(line, "  %s[not run]", v->name);
		else if (v->call.usable)
			strbuf_addf(line, "  %s[%s cos %.3f]", v->name,
				    measure_validate_short(v->call.verdict), v->call.cos);
		else
			strbuf_addf(line, "  %s[%s no result]", v->name,
				    measure_validate_short(v->call.verdict));
	}
}

static void print_variant_json(const variant *v, const char *box)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "box", box);
	cJSON_AddStringToObject(o, "event", "variant");
	cJSON_AddStringToObject(o, "variant", v->name);
	cJSON *a = cJSON_AddArrayToObject(o, "gate_args");
	for (size_t i = 0; i < v->n_words; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(v->words[i]));
	if (v->call.verdict != VERDICT_NONE)
		cJSON_AddStringToObject(o, "verdict", gate_verdict_name(v->call.verdict));
	else
		cJSON_AddNullToObject(o, "verdict");
	if (v->last.raw && v->last.stated != VERDICT_NONE)
		cJSON_AddStringToObject(o, "stated", gate_verdict_name(v->last.stated));
	else
		cJSON_AddNullToObject(o, "stated");
	if (v->call.usable)
		cJSON_AddNumberToObject(o, "cos", v->call.cos);
	else
		cJSON_AddNullToObject(o, "cos");
	cJSON_AddBoolToObject(o, "holds", v->call.holds);
	if (!v->call.holds)
		cJSON_AddStringToObject(o, "failed", v->call.fail);
	cJSON_AddStringToObject(o, "why", v->why);
	cJSON_AddNumberToObject(o, "exit", v->code);
	if (v->last.json)
		cJSON_AddItemToObject(o, "result", cJSON_Duplicate(v->last.json, 1));
	else
		cJSON_AddNullToObject(o, "result");
	if (v->last.raw)
		bg_json_add_bytes(o, "raw", v->last.raw, strlen(v->last.raw));
	else
		cJSON_AddNullToObject(o, "raw");
	cli_print_json(o);
	cJSON_Delete(o);
}

static void print_summary_json(const variant *vs, const char *box, const char *line, int code)
{
	const char *shape;
	int nw;
	point_of(vs, &shape, &nw);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "box", box);
	cJSON_AddStringToObject(o, "event", "summary");
	if (shape)
		cJSON_AddStringToObject(o, "shape", shape);
	else
		cJSON_AddNullToObject(o, "shape");
	if (nw >= 0)
		cJSON_AddNumberToObject(o, "num_workers", nw);
	else
		cJSON_AddNullToObject(o, "num_workers");
	cJSON_AddStringToObject(o, "line", line);
	cJSON_AddBoolToObject(o, "holds", code == BG_EXIT_OK);
	cJSON *f = cJSON_AddArrayToObject(o, "failed");
	for (int k = 0; k < V_N; k++) {
		const variant *v = &vs[show_order[k]];
		if (v->ran && !v->call.holds)
			cJSON_AddItemToArray(f, cJSON_CreateString(v->name));
	}
	cJSON_AddNumberToObject(o, "exit", code);
	cli_print_json(o);
	cJSON_Delete(o);
}

static int run_validate(cli_ctx *ctx, void *opts_, const cli_args *args)
{
	const validate_opts *opts = opts_;
	variant vs[V_N];
	remote_conn *c = NULL;
	char *gpus = NULL, *agent_path = NULL;
	gate_agent_how how;
	bg_err err = {0};
	strbuf line = STRBUF_INIT;
	int code = BG_EXIT_OK;

	memset(vs, 0, sizeof(vs));
	for (int i = 0; i < V_N; i++) {
		vs[i].name = variant_names[i];
		vs[i].json = ctx->opt.json;
	}
	if (!args->n) {
		cli_error("validate: give the gate's arguments after '--' (boxgate validate %s -- "
			  "GATE ARGS...)",
			  ctx->opt.boxes);
		code = BG_EXIT_USAGE;
		goto out;
	}
	/* The reference resolves the box and refuses its flags before anything else. */
	variant_words(&vs[V_REF], args, NULL, 0);
	cli_args a = {vs[V_REF].words, vs[V_REF].n_words, vs[V_REF].n_words};
	vs[V_REF].parsed = true; /* released whatever it returns */
	if ((code = gate_args_parse(ctx, &opts->g, &a, &vs[V_REF].ga)))
		goto out;
	const conf_box *box = vs[V_REF].ga.box;
	if ((code = check_keys(box)))
		goto out;
	variant_words(&vs[V_STUB], args, box->validate_stub, box->n_validate_stub);
	variant_words(&vs[V_DROP], args, box->validate_drop, box->n_validate_drop);
	for (int i = V_STUB; i <= V_DROP; i++) {
		cli_args ai = {vs[i].words, vs[i].n_words, vs[i].n_words};
		vs[i].parsed = true;
		if ((code = gate_args_parse(ctx, &opts->g, &ai, &vs[i].ga))) {
			int line_no =
				i == V_STUB ? box->validate_stub_line : box->validate_drop_line;
			cli_error("validate: the %s words come from box %s's validate_%s (%s:%d)",
				  vs[i].name, box->name, vs[i].name, box->file, line_no);
			goto out;
		}
	}

	cli_catch_stop_signals(on_signal);

	const gate_args *ref = &vs[V_REF].ga;
	int rc = cli_connect(box, false, &c, &err);
	if (rc == 0)
		rc = gate_agent_ensure(c, &ref->agent, false, &agent_path, &how, &err);
	if (rc < 0) {
		cli_error("%s", err.msg);
		code = bg_exit_code(rc);
		goto out;
	}
	if (how == AGENT_UPLOADED || how == AGENT_COMPILED)
		cli_printf(stderr, "boxgate: %s: agent %s\n", box->name, gate_agent_how_name(how));
	if (!ref->spec.gpus)
		gpus = gate_args_default_gpus(c, ref);

	for (int i = 0; i < V_N; i++) {
		variant *v = &vs[i];
		int rcode = run_variant(c, v, agent_path, gpus);
		if (rcode == BG_EXIT_CONNECT || rcode == 130 || stop_requested) {
			cli_error("%s: %s: %s", box->name, v->name, v->why);
			code = rcode == BG_EXIT_CONNECT ? BG_EXIT_CONNECT : 130;
			goto out;
		}
		measure_validate_judge(i, v->code, &v->out, &v->last, v->why, &v->call);
		if (v->json)
			print_variant_json(v, box->name);
		else
			cli_printf(stderr, "boxgate: %s: %s: %s\n", box->name, v->name, v->why);
	}
	for (int i = 0; i < V_N; i++)
		if (!vs[i].call.holds)
			code = BG_EXIT_FAIL;
	field_line(vs, &line);
	if (ctx->opt.json) {
		print_summary_json(vs, box->name, line.buf, code);
	} else {
		cli_printf(stdout, "%s\n", line.buf);
		if (code == BG_EXIT_OK)
			cli_printf(stdout, "validate: the gate holds\n");
		for (int k = 0; k < V_N; k++) {
			const variant *v = &vs[show_order[k]];
			if (!v->call.holds)
				cli_printf(stdout, "validate: %s fails: %s\n", v->name,
					   v->call.fail);
		}
	}
out:
	for (int i = 0; i < V_N; i++) {
		if (vs[i].parsed)
			gate_args_release(&vs[i].ga);
		gate_result_release(&vs[i].last);
		free(vs[i].words);
	}
	strbuf_release(&line);
	remote_close(c);
	free(agent_path);
	free(gpus);
	return code;
}

/* clang-format off */
const cli_cmd cli_cmd_validate = {
	.name = "validate",
	.summary = "check a gate: its reference passes, its stub and drop variant fail",
	.help = validate_help, .options = validate_options, .opts_size = sizeof(validate_opts),
	.needs = CLI_NEEDS_CONFIG, .box_operand = CLI_BOX_BEFORE_DASH,
	.unknown_hint = " (gate flags go after '--')", .run = run_validate,
};
/* clang-format on */
