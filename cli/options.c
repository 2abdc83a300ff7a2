/* The one option parser: every command's options go through here. */
#include "cli/options.h"

#include <stdint.h>
#include <string.h>

#include "base/exit.h"
#include "base/parse.h"
#include "base/xmalloc.h"
#include "cli/cli.h"
#include "conf/conf.h"

/* What every command takes besides its table: --config may follow the
 * command as well as precede it, and -h is --help everywhere. */
/* clang-format off */
static const cli_opt universal[] = {
	CLI_COMMON_OPT("config", CLI_STRING, config),
	{"help", 'h', CLI_FLAG, true, offsetof(cli_common, help), 0, 0},
	CLI_OPT_END,
};
/* clang-format on */

/* The entry of `table` argv's word names, and its value when written
 * "--name=V" or "-LV". */
static const cli_opt *lookup_in(const cli_opt *table, const char *word, const char **inline_value)
{
	if (word[1] != '-') {
		for (const cli_opt *o = table; o->name; o++) {
			if (!o->letter || word[1] != o->letter)
				continue;
			if (word[2] == '\0')
				return o;
			if (o->kind != CLI_FLAG) { /* -wh[1-3], as clush takes it */
				*inline_value = word + 2;
				return o;
			}
		}
		return NULL;
	}
	const char *name = word + 2, *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	for (const cli_opt *o = table; o->name; o++) {
		if (strlen(o->name) == len && strncmp(o->name, name, len) == 0) {
			*inline_value = eq ? eq + 1 : NULL;
			return o;
		}
	}
	return NULL;
}

static const cli_opt *lookup(const cli_opt *table, const char *word, const char **inline_value)
{
	*inline_value = NULL;
	const cli_opt *o = lookup_in(table, word, inline_value);
	return o ? o : lookup_in(universal, word, inline_value);
}

/* The closest long option to a mistyped word ("--boxs", "-boxes"), NULL when
 * none is close. Borrowed from the table. */
static const char *suggest(const cli_opt *table, const char *word)
{
	const char *names[128];
	size_t n = 0;
	for (const cli_opt *t = table; t; t = t == universal ? NULL : universal)
		for (const cli_opt *o = t; o->name && n < sizeof(names) / sizeof(names[0]); o++)
			names[n++] = o->name;
	while (*word == '-')
		word++;
	char bare[128];
	size_t len = strcspn(word, "=");
	if (len >= sizeof(bare))
		return NULL;
	memcpy(bare, word, len);
	bare[len] = '\0';
	return conf_suggest(bare, names, n);
}

static int unknown_option(const char *cmd, const cli_opt *table, const char *word, const char *hint)
{
	const char *s = suggest(table, word);
	if (s)
		cli_error("%s: unknown option '%s' (did you mean '--%s'?)", cmd, word, s);
	else if (hint && *hint)
		cli_error("%s: unknown option '%s'%s", cmd, word, hint);
	else
		cli_error("%s: unknown option '%s' (see 'boxgate help %s')", cmd, word, cmd);
	return BG_EXIT_USAGE;
}

static int store(const char *cmd, const cli_opt *o, const char *value, cli_common *common,
		 void *opts)
{
	char *base = o->common ? (char *)common : (char *)opts;
	void *dst = base + o->offset;
	char flag[64];
	switch (o->kind) {
	case CLI_FLAG: *(bool *)dst = true; return BG_EXIT_OK;
	case CLI_STRING: *(const char **)dst = value; return BG_EXIT_OK;
	case CLI_SECONDS:
		snprintf(flag, sizeof(flag), "--%s", o->name);
		return cli_parse_seconds(cmd, flag, value, o->min, o->max, (int *)dst);
	case CLI_LIST: {
		cli_list *l = dst;
		if (l->n == CLI_LIST_MAX) {
			cli_error("%s: --%s given more than %d times", cmd, o->name, CLI_LIST_MAX);
			return BG_EXIT_USAGE;
		}
		l->v[l->n++] = value;
		return BG_EXIT_OK;
	}
	}
	return BG_EXIT_OK;
}

int cli_parse_options(const char *cmd, const cli_opt *table, cli_parse_order order,
		      const char *hint, cli_common *common, void *opts, int argc, char **argv,
		      cli_args *args)
{
	bool options_over = false;
	args->v = xcalloc((size_t)argc + 1, sizeof(*args->v));
	args->n = 0;
	args->n_before_dash = SIZE_MAX;
	for (int i = 1; i < argc; i++) {
		const char *word = argv[i];
		if (!options_over && strcmp(word, "--") == 0) {
			options_over = true;
			args->n_before_dash = args->n;
			continue;
		}
		if (options_over || word[0] != '-' || word[1] == '\0') {
			args->v[args->n++] = argv[i];
			if (order == CLI_OPTIONS_FIRST && !options_over) {
				options_over = true;
				args->n_before_dash = args->n - 1;
			}
			continue;
		}
		const char *value;
		const cli_opt *o = lookup(table, word, &value);
		if (!o)
			return unknown_option(cmd, table, word, hint);
		if (o->kind == CLI_FLAG && value) {
			cli_error("%s: option '--%s' takes no value", cmd, o->name);
			return BG_EXIT_USAGE;
		}
		if (o->kind != CLI_FLAG && !value) {
			/* "--boxes -- true" would select a box named "--". */
			if (i + 1 >= argc || strcmp(argv[i + 1], "--") == 0) {
				cli_error("%s: option '%s' needs a value", cmd, word);
				return BG_EXIT_USAGE;
			}
			value = argv[++i];
		}
		int code = store(cmd, o, value, common, opts);
		if (code)
			return code;
		if (common->help)
			break; /* what follows may be a half-written command line */
	}
	if (args->n_before_dash == SIZE_MAX)
		args->n_before_dash = args->n;
	return BG_EXIT_OK;
}

int cli_parse_seconds(const char *cmd, const char *flag, const char *v, long min, long max,
		      int *out)
{
	long n;
	if (!bg_parse_seconds(v, min, max, &n)) {
		cli_error("%s: %s wants whole seconds from %ld to %ld, got '%s'", cmd, flag, min,
			  max, v);
		return BG_EXIT_USAGE;
	}
	*out = (int)n;
	return BG_EXIT_OK;
}
