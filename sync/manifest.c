/* The manifest push keeps on a box, <repo>/.boxgate/pushed (sync/sh/apply.sh
 * writes it): the warning a push owes when it could not be written, and the
 * read-back run records. */
#include "sync/sync.h"

#include <stdlib.h>

#include "base/quote.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"

char *sync_manifest_warning(const sync_box *b)
{
	if (b->manifest_failed)
		return xasprintf("%s: could not record what was placed in %s/.boxgate/pushed "
				 "(the files are in place; run will not show their hashes)",
				 b->box->name, b->repo_abs ? b->repo_abs : b->box->repo);
	if (b->manifest_skipped > 0)
		return xasprintf("%s: %d path%s with a tab or newline not recorded in "
				 ".boxgate/pushed (the files are in place)",
				 b->box->name, b->manifest_skipped,
				 b->manifest_skipped == 1 ? "" : "s");
	return NULL;
}

int sync_manifest_read(remote_conn *c, const conf_box *box, char **text, bg_err *err)
{
	*text = NULL;
	if (!box->repo || !*box->repo) {
		*text = xstrdup("");
		return 0;
	}
	strbuf cmd = STRBUF_INIT;
	char *path = xasprintf("%s/.boxgate/pushed", box->repo);
	strbuf_addstr(&cmd, "f=");
	bg_quote_path(&cmd, path);
	strbuf_addf(&cmd,
		    "; [ -e \"$f\" ] || exit 0; n=$(wc -c < \"$f\") || exit 1; "
		    "[ \"$n\" -le %u ] || { echo \"larger than %u bytes ($n)\" >&2; exit 1; }; "
		    "exec cat -- \"$f\"",
		    SYNC_MANIFEST_MAX, SYNC_MANIFEST_MAX);
	free(path);
	bg_err cerr = {0};
	int rc = remote_capture(c, strbuf_str(&cmd), SYNC_MANIFEST_MAX + 2, 30000, text, NULL, NULL,
				&cerr);
	strbuf_release(&cmd);
	if (rc < 0) {
		free(*text);
		*text = NULL;
		return bg_fail(err, rc, "cannot read %s/.boxgate/pushed: %s", box->repo, cerr.msg);
	}
	return 0;
}
