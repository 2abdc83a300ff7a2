/* cli/options: the one option parser, and the box selection it feeds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/exit.h"
#include "base/xmalloc.h"
#include "cli/cli.h"

struct test_opts {
	bool force, gather;
	const char *name;
	int wait_s;
};

static const cli_opt table[] = {
	CLI_OPT_SELECT,
	CLI_OPT_JSON,
	CLI_OPT_FLAG("force", struct test_opts, force),
	CLI_OPT_STRING("name", struct test_opts, name),
	CLI_OPT_SECONDS("wait", struct test_opts, wait_s, 1, 60),
	{"gather", 'b', CLI_FLAG, false, offsetof(struct test_opts, gather), 0, 0},
	CLI_OPT_END,
};

/* One parse of a NULL-terminated argv ("cmd" first), with what it printed. */
struct parsed {
	int code;
	cli_common common;
	struct test_opts opts;
	cli_args args;
	char err[1024]; /* stderr */
};

/* Runs `call` with stderr going into p->err. */
static void capture_stderr(struct parsed *p, void (*call)(struct parsed *p, void *arg), void *arg)
{
	FILE *tmp = tmpfile();
	assert_non_null(tmp);
	fflush(stderr);
	int saved = dup(2);
	dup2(fileno(tmp), 2);
	call(p, arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	size_t n = fread(p->err, 1, sizeof(p->err) - 1, tmp);
	p->err[n] = '\0';
	fclose(tmp);
}

static int argc_of(char **argv)
{
	int n = 0;
	while (argv[n])
		n++;
	return n;
}

struct options_call {
	cli_parse_order order;
	char **argv;
	const char *hint;
};

static void call_options(struct parsed *p, void *arg)
{
	struct options_call *c = arg;
	p->code = cli_parse_options("cmd", table, c->order, c->hint, &p->common, &p->opts,
				    argc_of(c->argv), c->argv, &p->args);
}

/* Frees the last parse's operands and forgets it. */
static void reset(struct parsed *p)
{
	free(p->args.v);
	memset(p, 0, sizeof(*p));
}

static void parse(struct parsed *p, cli_parse_order order, char **argv)
{
	struct options_call c = {order, argv, " (HINT)"};
	reset(p);
	capture_stderr(p, call_options, &c);
}

/* A line the parser accepts, silently. */
static void parse_ok(struct parsed *p, cli_parse_order order, char **argv)
{
	parse(p, order, argv);
	assert_int_equal(p->code, BG_EXIT_OK);
	assert_string_equal(p->err, "");
}

#define ARGV(...) ((char *[]){"cmd", __VA_ARGS__, NULL})

static void option_forms(void **state)
{
	struct parsed *p = *state;
	parse_ok(p, CLI_OPTIONS_ANYWHERE, ARGV("--name=x", "a"));
	assert_string_equal(p->opts.name, "x");
	assert_int_equal(p->args.n, 1);
	assert_string_equal(p->args.v[0], "a");

	parse_ok(p, CLI_OPTIONS_ANYWHERE, ARGV("a", "--name", "y", "--boxes=h[1-2]"));
	assert_string_equal(p->opts.name, "y");
	assert_int_equal(p->common.boxes_given.n, 1);
	assert_string_equal(p->common.boxes_given.v[0], "h[1-2]");
	assert_int_equal(p->args.n, 1);

	parse_ok(p, CLI_OPTIONS_ANYWHERE, ARGV("-b", "--all"));
	assert_true(p->opts.gather);
	assert_true(p->common.all);
}

/* The letters, the options every command takes, and -h stopping the parse. */
static void letters_and_universal_options(void **state)
{
	struct parsed *p = *state;
	parse_ok(p, CLI_OPTIONS_ANYWHERE, ARGV("-w", "h[1-3]", "-x", "h2", "--exclude=h3"));
	assert_string_equal(p->common.boxes_given.v[0], "h[1-3]");
	assert_int_equal(p->common.exclude.n, 2);
	assert_string_equal(p->common.exclude.v[0], "h2");
	assert_string_equal(p->common.exclude.v[1], "h3");

	parse_ok(p, CLI_OPTIONS_ANYWHERE, ARGV("-wh[1-3]!h2", "-xh1"));
	assert_string_equal(p->common.boxes_given.v[0], "h[1-3]!h2"); /* clush's -wNODES */
	assert_string_equal(p->common.exclude.v[0], "h1");

	parse_ok(p, CLI_OPTIONS_FIRST, ARGV("--all", "--config", "c.ini", "ls"));
	assert_string_equal(p->common.config, "c.ini");
	parse_ok(p, CLI_OPTIONS_ANYWHERE, ARGV("a", "--config=d.ini"));
	assert_string_equal(p->common.config, "d.ini");

	/* -h stops the parse: what follows may be half written. */
	parse_ok(p, CLI_OPTIONS_ANYWHERE, ARGV("--all", "-h", "--nope", "--name"));
	assert_true(p->common.help);
	parse_ok(p, CLI_OPTIONS_ANYWHERE, ARGV("--help"));
	assert_true(p->common.help);
	/* After the command's first word, -h is the command's. */
	parse_ok(p, CLI_OPTIONS_FIRST, ARGV("ls", "-h"));
	assert_false(p->common.help);
	assert_int_equal(p->args.n, 2);
	parse_ok(p, CLI_OPTIONS_ANYWHERE, ARGV("--", "-h"));
	assert_false(p->common.help);
}

/* Command lines the parser refuses, in one line each: an unknown option ends
 * with the closest option, else the hint; a seconds error with neither. */
static void refused(void **state)
{
	struct parsed *p = *state;
	struct {
		char *argv[4]; /* after "cmd" */
		const char *says;
	} cases[] = {
		{{"a", "--name"}, "option '--name' needs a value"},
		{{"--name", "--", "x"}, "option '--name' needs a value"},
		{{"-w"}, "option '-w' needs a value"},
		{{"--config"}, "option '--config' needs a value"},
		{{"--json=x"}, "option '--json' takes no value"},
		{{"--help=x"}, "option '--help' takes no value"},
		{{"--frob", "a"}, "unknown option '--frob' (HINT)"},
		{{"-q"}, "unknown option '-q' (HINT)"},
		{{"-bq"}, "unknown option '-bq' (HINT)"},
		{{"--nmae=x"}, "unknown option '--nmae=x' (did you mean '--name'?)"},
		{{"--boxs", "h1"}, "unknown option '--boxs' (did you mean '--boxes'?)"},
		{{"-boxes", "h1"}, "unknown option '-boxes' (did you mean '--boxes'?)"},
		{{"--exlude", "h1"}, "unknown option '--exlude' (did you mean '--exclude'?)"},
		{{"--confg", "x"}, "unknown option '--confg' (did you mean '--config'?)"},
		{{"--wait=0"}, "--wait wants whole seconds from 1 to 60, got '0'"},
		{{"--wait", "61"}, "--wait wants whole seconds from 1 to 60, got '61'"},
		{{"--wait=5s"}, "--wait wants whole seconds from 1 to 60, got '5s'"},
		{{"--wait=-1"}, "--wait wants whole seconds from 1 to 60, got '-1'"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char **w = cases[i].argv;
		parse(p, CLI_OPTIONS_ANYWHERE, ARGV(w[0], w[1], w[2], w[3]));
		assert_int_equal(p->code, BG_EXIT_USAGE);
		char *want = xasprintf("boxgate: cmd: %s\n", cases[i].says);
		assert_string_equal(p->err, want);
		free(want);
		/* Nothing is stored from a refused word. */
		assert_false(p->common.json);
		assert_int_equal(p->opts.wait_s, 0);
	}
}

/* Without a hint of its own, an unknown option points at the command's help. */
static void unknown_without_hint(void **state)
{
	struct parsed *p = *state;
	struct options_call c = {CLI_OPTIONS_ANYWHERE, ARGV("--frobnicate"), NULL};
	reset(p);
	capture_stderr(p, call_options, &c);
	assert_int_equal(p->code, BG_EXIT_USAGE);
	assert_string_equal(
		p->err, "boxgate: cmd: unknown option '--frobnicate' (see 'boxgate help cmd')\n");
}

static void seconds_within_bounds(void **state)
{
	struct parsed *p = *state;
	parse_ok(p, CLI_OPTIONS_ANYWHERE, ARGV("--wait=1"));
	assert_int_equal(p->opts.wait_s, 1);
	parse_ok(p, CLI_OPTIONS_ANYWHERE, ARGV("--wait", "60"));
	assert_int_equal(p->opts.wait_s, 60);
}

static void dash_dash_ends_options(void **state)
{
	struct parsed *p = *state;
	parse_ok(p, CLI_OPTIONS_ANYWHERE, ARGV("a", "--", "--force", "-", "b"));
	assert_false(p->opts.force);
	assert_int_equal(p->args.n, 4);
	assert_int_equal(p->args.n_before_dash, 1);
	assert_string_equal(p->args.v[1], "--force");
	assert_string_equal(p->args.v[2], "-");
	assert_null(p->args.v[4]);

	/* Without "--" every operand counts as before it. */
	parse_ok(p, CLI_OPTIONS_ANYWHERE, ARGV("a", "--force", "b"));
	assert_true(p->opts.force);
	assert_int_equal(p->args.n, 2);
	assert_int_equal(p->args.n_before_dash, 2);
}

static void options_first_stops_at_an_operand(void **state)
{
	struct parsed *p = *state;
	parse_ok(p, CLI_OPTIONS_FIRST, ARGV("--force", "ls", "--name", "x"));
	assert_true(p->opts.force);
	assert_null(p->opts.name);
	assert_int_equal(p->args.n, 3);
	assert_string_equal(p->args.v[1], "--name");
}

static void repeated_flags(void **state)
{
	struct parsed *p = *state;
	parse_ok(p, CLI_OPTIONS_ANYWHERE, ARGV("--force", "--force", "--name", "a", "--name=b"));
	assert_true(p->opts.force);
	assert_string_equal(p->opts.name, "b"); /* the last one wins */
}

/* Box selection goes through cli_parse_command with an entry of this table. */
static int run_nothing(cli_ctx *ctx, void *opts, const cli_args *args)
{
	(void)ctx, (void)opts, (void)args;
	return BG_EXIT_OK;
}

static const cli_cmd select_cmd = {
	.name = "sel",
	.help = "usage: sel\n",
	.options = table,
	.run = run_nothing,
	.opts_size = sizeof(struct test_opts),
};

struct command_call {
	cli_ctx ctx;
	char **argv;
};

static void call_command(struct parsed *p, void *arg)
{
	struct command_call *c = arg;
	p->code = cli_parse_command(&select_cmd, &c->ctx, &p->opts, argc_of(c->argv), c->argv,
				    &p->args);
}

static void conflicting_selections_refused(void **state)
{
	struct parsed *p = *state;
	static const struct {
		char *a, *b, *c;
		const char *says;
	} cases[] = {
		{"--pool", "p", "--boxes=h1", "--pool and --boxes"},
		{"--all", "--pool", "p", "--all and --pool"},
		{"--boxes", "h1", "--all", "--all and --boxes"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct command_call c = {{0}, ARGV(cases[i].a, cases[i].b, cases[i].c)};
		reset(p);
		capture_stderr(p, call_command, &c);
		assert_int_equal(p->code, BG_EXIT_USAGE);
		char *want = xasprintf("boxgate: sel: %s: choose one way to select boxes\n",
				       cases[i].says);
		assert_string_equal(p->err, want);
		free(want);
	}
}

/* -w and --boxes repeat as clush's -w does: the selection is all of them. */
static void repeated_boxes_join(void **state)
{
	struct parsed *p = *state;
	struct command_call c = {{0}, ARGV("-w", "h1", "--boxes=h[2-3]!h2", "-wx1")};
	reset(p);
	capture_stderr(p, call_command, &c);
	assert_int_equal(p->code, BG_EXIT_OK);
	assert_string_equal(c.ctx.opt.boxes, "h1,h[2-3]!h2,x1");
	free(c.ctx.spec_owned);

	struct command_call one = {{0}, ARGV("--boxes", "h1")};
	reset(p);
	capture_stderr(p, call_command, &one);
	assert_string_equal(one.ctx.opt.boxes, "h1");
	assert_null(one.ctx.spec_owned); /* borrowed from argv */
}

/* Each test parses into one struct parsed; the last operands are freed here. */
static int setup(void **state)
{
	*state = xcalloc(1, sizeof(struct parsed));
	return 0;
}

static int teardown(void **state)
{
	reset(*state);
	free(*state);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(option_forms, setup, teardown),
		cmocka_unit_test_setup_teardown(letters_and_universal_options, setup, teardown),
		cmocka_unit_test_setup_teardown(refused, setup, teardown),
		cmocka_unit_test_setup_teardown(unknown_without_hint, setup, teardown),
		cmocka_unit_test_setup_teardown(seconds_within_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(dash_dash_ends_options, setup, teardown),
		cmocka_unit_test_setup_teardown(options_first_stops_at_an_operand, setup, teardown),
		cmocka_unit_test_setup_teardown(repeated_flags, setup, teardown),
		cmocka_unit_test_setup_teardown(conflicting_selections_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(repeated_boxes_join, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
