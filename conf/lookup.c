/* What commands take from the configuration beyond a box: a file's verifier,
 * the local interpreter, the results file (conf/conf.h). */
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "conf/conf.h"

const char *conf_verifier_for(void *ctx, const char *relpath, bool *builtin)
{
	const conf *c = ctx;
	const char *cmd = conf_verify_for(c, relpath);
	*builtin = false;
	for (size_t i = 0; cmd && i < c->n_verify; i++)
		if (c->verify[i].command == cmd) {
			*builtin =
				c->verify[i].file && strcmp(c->verify[i].file, "(built-in)") == 0;
			break;
		}
	return cmd;
}

const char *conf_local_python(const conf *c)
{
	for (size_t i = 0; i < c->n_boxes; i++)
		if (c->boxes[i].builtin && c->boxes[i].python)
			return c->boxes[i].python;
	return "python3";
}

char *conf_results_path(const conf *c, const char *given, const char *xdg_data_home,
			const char *home, bg_err *err)
{
	if (given)
		return xstrdup(given);
	if (c && c->results)
		return xstrdup(c->results);
	/* XDG Base Directory: a relative $XDG_DATA_HOME is invalid and ignored. */
	if (xdg_data_home && xdg_data_home[0] == '/')
		return xasprintf("%s/boxgate/results.jsonl", xdg_data_home);
	if (home && home[0])
		return xasprintf("%s/.local/share/boxgate/results.jsonl", home);
	bg_fail(err, BG_EUSAGE, "results: no results file: HOME is not set (give --results FILE)");
	return NULL;
}
