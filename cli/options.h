/* Declarative command-line options: each command lists its options in a
 * table, and one parser (cli/options.c) fills the values in. */
#ifndef BG_CLI_OPTIONS_H
#define BG_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

/* A repeatable option's values, borrowed from argv. */
#define CLI_LIST_MAX 32
typedef struct cli_list {
	const char *v[CLI_LIST_MAX];
	size_t n;
} cli_list;

/* The options several commands share; main reads them to select boxes. */
typedef struct cli_common {
	/* Every --boxes SPEC / -w SPEC, repeatable as clush's -w; cli_parse_command
	 * joins them into `boxes`, the selection the command reads. */
	cli_list boxes_given;
	const char *boxes;
	cli_list exclude; /* every --exclude SPEC / -x SPEC */
	const char *pool; /* --pool POOL */
	bool all;         /* --all */
	bool json;        /* --json */
	const char *root; /* --root DIR */
	bool accept_new;  /* --accept-new */
	bool no_fold;     /* --no-fold: one line per box, not folded node sets */
	/* Every command takes these, so main's own may also follow the command. */
	const char *config; /* --config FILE */
	bool help;          /* -h, --help: the parse stopped there */
} cli_common;

typedef enum cli_opt_kind {
	CLI_FLAG,    /* bool, no value */
	CLI_STRING,  /* const char *, borrowed from argv */
	CLI_SECONDS, /* int, whole seconds in [min, max] */
	CLI_LIST     /* cli_list: every value of a repeated option, in order */
} cli_opt_kind;

typedef struct cli_opt {
	const char *name; /* the long name without "--"; NULL ends a table */
	char letter;      /* the short form (-b), 0 for none */
	cli_opt_kind kind;
	bool common;   /* the value goes into cli_common, else into the command's struct */
	size_t offset; /* of the value in that struct */
	long min, max; /* CLI_SECONDS bounds */
} cli_opt;

/* One initializer per line reads better than the four clang-format makes of it. */
/* clang-format off */
/* An option of the command's own options struct TYPE. */
#define CLI_OPT_FLAG(name, type, field) {(name), 0, CLI_FLAG, false, offsetof(type, field), 0, 0}
#define CLI_OPT_STRING(name, type, field) \
	{(name), 0, CLI_STRING, false, offsetof(type, field), 0, 0}
#define CLI_OPT_SECONDS(name, type, field, min, max) \
	{(name), 0, CLI_SECONDS, false, offsetof(type, field), (min), (max)}
#define CLI_OPT_LIST(name, type, field) \
	{(name), 0, CLI_LIST, false, offsetof(type, field), 0, 0}
#define CLI_OPT_END {NULL, 0, CLI_FLAG, false, 0, 0, 0}

/* The shared options, declared once. */
#define CLI_COMMON_OPT(name, kind, field) \
	{(name), 0, (kind), true, offsetof(cli_common, field), 0, 0}
#define CLI_OPT_BOXES      {"boxes", 'w', CLI_LIST, true, offsetof(cli_common, boxes_given), 0, 0}
#define CLI_OPT_EXCLUDE    {"exclude", 'x', CLI_LIST, true, offsetof(cli_common, exclude), 0, 0}
#define CLI_OPT_POOL       CLI_COMMON_OPT("pool", CLI_STRING, pool)
#define CLI_OPT_ALL        CLI_COMMON_OPT("all", CLI_FLAG, all)
#define CLI_OPT_SELECT     CLI_OPT_BOXES, CLI_OPT_EXCLUDE, CLI_OPT_POOL, CLI_OPT_ALL
#define CLI_OPT_JSON       CLI_COMMON_OPT("json", CLI_FLAG, json)
#define CLI_OPT_ROOT       CLI_COMMON_OPT("root", CLI_STRING, root)
#define CLI_OPT_ACCEPT_NEW CLI_COMMON_OPT("accept-new", CLI_FLAG, accept_new)
#define CLI_OPT_NO_FOLD    CLI_COMMON_OPT("no-fold", CLI_FLAG, no_fold)
/* clang-format on */

typedef enum cli_parse_order {
	CLI_OPTIONS_ANYWHERE, /* options and operands mix, up to "--" (push, run) */
	CLI_OPTIONS_FIRST     /* the first operand ends the options (exec: CMD's own flags) */
} cli_parse_order;

/* The operands: everything that is not an option, in order. */
typedef struct cli_args {
	char **v; /* borrowed strings; the array is owned */
	size_t n;
	size_t n_before_dash; /* how many came before "--" (n without "--") */
} cli_args;

/* Parses argv[1..argc) against `table` and the options every command takes
 * (--config FILE, -h/--help): "--name", "--name=V", "--name V", "-L", "-L V"
 * and "-LV" for a letter; "--" ends the options. Values go into *common or
 * *opts; -h/--help sets common->help and stops. A bad option is one line and
 * BG_EXIT_USAGE: "CMD: unknown option 'X' (did you mean '--Y'?)", else with
 * HINT, else "(see 'boxgate help CMD')"; "CMD: option '--name' needs a value";
 * "CMD: option '--name' takes no value"; or the seconds error. */
int cli_parse_options(const char *cmd, const cli_opt *table, cli_parse_order order,
		      const char *hint, cli_common *common, void *opts, int argc, char **argv,
		      cli_args *args);

/* Parses FLAG's value as whole seconds in [min, max] (base/parse.h); on bad
 * input prints "CMD: FLAG wants whole seconds from MIN to MAX, got 'V'" and
 * returns BG_EXIT_USAGE, else 0. */
int cli_parse_seconds(const char *cmd, const char *flag, const char *v, long min, long max,
		      int *out);

#endif
