/* run --pull: after an invocation, fetch what the gate wrote on the box
 * (profiles, logs) into the results directory, through the run's own
 * connection, and describe the files for the record. */
#include <cjson/cJSON.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/xmalloc.h"
#include "cli/cli.h"
#include "sync/pull.h"
#include "sync/sync.h"

cJSON *cli_run_pull(remote_conn *c, const conf_box *box, const cli_list *globs, const char *results,
		    const char *run_id, int seq)
{
	if (!globs || !globs->n || !c)
		return NULL;
	char *copy = xstrdup(results ? results : "./x");
	char *to = xasprintf("%s/pulled/%s-%d", dirname(copy), run_id, seq);
	free(copy);
	char **paths = xcalloc(globs->n, sizeof(*paths));
	size_t n = 0;
	for (size_t i = 0; i < globs->n; i++) {
		bg_err err = {0};
		if (sync_pull_check_path(globs->v[i], &paths[n], &err) < 0)
			cli_warn("%s: --pull: %s", box->name, err.msg);
		else
			n++;
	}
	sync_pull_opts o = {.to = to, .log = cli_log_warning};
	sync_pull_box b;
	sync_pull_box_init(&b, &(sync_target)CLI_SYNC_TARGET(box), 0, &o, paths, n, c);
	if (n)
		sync_pull_box_run(&b);
	if (b.rc < 0)
		cli_warn("%s: --pull: %s", box->name, b.err.msg);
	cJSON *arr = cJSON_CreateArray();
	size_t got = 0;
	for (size_t i = 0; i < b.n; i++) {
		const sync_pull_file *f = &b.files[i];
		if (f->state != SYNC_PULL_PULLED && f->state != SYNC_PULL_UNCHANGED) {
			char *shown = sync_path_display(f->rel);
			cli_warn("%s: --pull: %s: %s", box->name, shown,
				 f->msg ? f->msg : "not pulled");
			free(shown);
			continue;
		}
		cJSON *o1 = cJSON_CreateObject();
		bg_json_add_bytes(o1, "path", f->rel, strlen(f->rel));
		bg_json_add_bytes(o1, "local", f->local, strlen(f->local));
		cJSON_AddNumberToObject(o1, "size", (double)f->size);
		cJSON_AddStringToObject(o1, "sha256", f->sha);
		cJSON_AddItemToArray(arr, o1);
		got++;
	}
	if (n)
		cli_printf(stderr, "boxgate: %s: pulled %zu file%s into %s\n", box->name, got,
			   got == 1 ? "" : "s", to);
	sync_pull_box_release(&b);
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	free(to);
	return arr;
}
