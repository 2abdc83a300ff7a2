/* The one option parser: every command's options go through here. */
#include "cli/options.h"

#include <stdint.h>
#include <string.h>

#include "base/exit.h"
#include "base/xmalloc.h"
#include "cli/cli.h"

/* The table entry argv's word names, and its value when written "--name=V". */
static const cli_opt *lookup(const cli_opt *table, const char *word, const char **inline_value)
{
	*inline_value = NULL;
	if (word[1] != '-') {
		for (const cli_opt *o = table; o->name; o++)
			if (o->letter && word[1] == o->letter && word[2] == '\0')
				return o;
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
	args->show_usage = false;
	args->n_before_dash = SIZE_MAX;
	if (!hint)
		hint = "";
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
		if (!o) {
			cli_error("%s: unknown option '%s'%s", cmd, word, hint);
			args->show_usage = true;
			return BG_EXIT_USAGE;
		}
		if (o->kind == CLI_FLAG && value) {
			cli_error("%s: option '--%s' takes no value%s", cmd, o->name, hint);
			return BG_EXIT_USAGE;
		}
		if (o->kind != CLI_FLAG && !value) {
			if (i + 1 >= argc) {
				cli_error("%s: missing value for '%s'%s", cmd, word, hint);
				args->show_usage = true;
				return BG_EXIT_USAGE;
			}
			value = argv[++i];
		}
		int code = store(cmd, o, value, common, opts);
		if (code)
			return code;
	}
	if (args->n_before_dash == SIZE_MAX)
		args->n_before_dash = args->n;
	return BG_EXIT_OK;
}
