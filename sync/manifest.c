/* The manifest push keeps on a box, <repo>/.boxgate/pushed (sync/sh/apply.sh
 * writes it): the warning a push owes when it could not be written, and the
 * read-back run records. */
#include "sync/sync.h"

#include <stdlib.h>

#include "base/quote.h"
#include "base/lines.h"
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

struct manifest_read {
	strbuf out, err;
	bool over;
};

static void on_line(void *ctx, remote_stream s, const char *line, size_t len, int flags)
{
	struct manifest_read *m = ctx;
	strbuf *sb = s == REMOTE_STDOUT ? &m->out : &m->err;
	size_t max = s == REMOTE_STDOUT ? SYNC_MANIFEST_MAX : 400;
	if (sb->len + len + 1 > max) {
		m->over = m->over || s == REMOTE_STDOUT;
		return;
	}
	strbuf_add(sb, line, len);
	if (!(flags & (LINE_PARTIAL | LINE_NO_EOL)))
		strbuf_addch(sb, s == REMOTE_STDOUT ? '\n' : ' ');
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
	struct manifest_read m = {STRBUF_INIT, STRBUF_INIT, false};
	remote_status st;
	bg_err rerr = {0};
	int rc = remote_run(c, strbuf_str(&cmd), on_line, &m, 30000, &st, &rerr);
	strbuf_release(&cmd);
	if (rc == 0 && !(st.how == REMOTE_EXITED && st.code == 0)) {
		char how[96];
		remote_status_describe(&st, how, sizeof(how));
		while (m.err.len && m.err.buf[m.err.len - 1] == ' ')
			m.err.buf[--m.err.len] = '\0';
		rc = bg_fail(err, BG_EREMOTE, "cannot read %s: %s", path,
			     m.err.len ? strbuf_str(&m.err) : how);
	} else if (rc < 0) {
		rc = bg_fail(err, rc, "cannot read %s: %s", path, rerr.msg);
	} else if (m.over) {
		rc = bg_fail(err, BG_EREMOTE, "cannot read %s: larger than %u bytes", path,
			     SYNC_MANIFEST_MAX);
	} else {
		*text = strbuf_detach(&m.out);
	}
	free(path);
	strbuf_release(&m.out);
	strbuf_release(&m.err);
	return rc < 0 ? rc : 0;
}
