/* The manifest push keeps on a box, <repo>/.boxgate/pushed (sync/sh/apply.sh
 * writes it): the warning a push owes when it could not be written, the
 * read-back run records, and what status and rollback learn from it. */
#include "sync/internal.h"

#include <stdlib.h>
#include <string.h>

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

/* The status the manifest command exits with when its guard fails: none
 * of its own (0, 1, cat's 1). */
#define GUARD_FAILED_EXIT 97

int sync_manifest_read_if(remote_conn *c, const sync_target *box, const char *guard, bool *guard_ok,
			  char **text, bg_err *err)
{
	*text = NULL;
	if (guard_ok)
		*guard_ok = false;
	bool no_repo = !box->repo || !*box->repo;
	if (no_repo && !guard) {
		*text = xstrdup("");
		return 0;
	}
	strbuf cmd = STRBUF_INIT;
	char *path = xasprintf("%s/.boxgate/pushed", no_repo ? "" : box->repo);
	if (guard)
		strbuf_addf(&cmd, "{ %s; } || exit %d; ", guard, GUARD_FAILED_EXIT);
	if (no_repo) {
		strbuf_addstr(&cmd, "exit 0");
	} else {
		strbuf_addstr(&cmd, "f=");
		bg_quote_path(&cmd, path);
		strbuf_addf(
			&cmd,
			"; [ -e \"$f\" ] || exit 0; [ -f \"$f\" ] || { echo \"not a regular file\" "
			">&2; exit 1; }; n=$(wc -c < \"$f\") || exit 1; "
			"[ \"$n\" -le %u ] || { echo \"larger than %u bytes ($n)\" >&2; exit "
			"1; }; "
			"exec cat -- \"$f\"",
			SYNC_MANIFEST_MAX, SYNC_MANIFEST_MAX);
	}
	struct manifest_read m = {STRBUF_INIT, STRBUF_INIT, false};
	remote_status st;
	bg_err rerr = {0};
	int rc = remote_run(c, strbuf_str(&cmd), on_line, &m, 30000, &st, &rerr);
	strbuf_release(&cmd);
	bool held = rc == 0 && st.how == REMOTE_EXITED && !(guard && st.code == GUARD_FAILED_EXIT);
	if (guard_ok)
		*guard_ok = held;
	if (guard && rc == 0 && !held) {
		/* the guard failed, or no status came back: nothing was read */
		rc = 0;
	} else if (rc == 0 && !(st.how == REMOTE_EXITED && st.code == 0)) {
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

int sync_manifest_read(remote_conn *c, const sync_target *box, char **text, bg_err *err)
{
	return sync_manifest_read_if(c, box, NULL, NULL, text, err);
}

/* 9999-12-31T23:59:59Z: a time any reader can print in four digits. */
#define LAST_EPOCH_OF_9999 253402300799LL

static bool all_of(const char *s, size_t n, const char *set)
{
	for (size_t i = 0; i < n; i++)
		if (!s[i] || !strchr(set, s[i]))
			return false;
	return true;
}

bool sync_manifest_line(const char *line, size_t len, sync_manifest_entry *e)
{
	const char *t1 = memchr(line, '\t', len);
	const char *t2 = t1 ? memchr(t1 + 1, '\t', len - (size_t)(t1 + 1 - line)) : NULL;
	if (!t2 || t1 - line != BG_SHA256_HEX_LEN ||
	    !all_of(line, BG_SHA256_HEX_LEN, "0123456789abcdef"))
		return false;
	size_t elen = (size_t)(t2 - t1 - 1), plen = len - (size_t)(t2 + 1 - line);
	if (elen < 1 || elen > 12 || !all_of(t1 + 1, elen, "0123456789") || plen == 0)
		return false;
	long long epoch = strtoll(t1 + 1, NULL, 10);
	if (epoch > LAST_EPOCH_OF_9999)
		return false;
	memcpy(e->sha, line, BG_SHA256_HEX_LEN);
	e->sha[BG_SHA256_HEX_LEN] = '\0';
	e->epoch = epoch;
	e->path = t2 + 1;
	e->path_len = plen;
	return true;
}

size_t sync_manifest_parse(const char *text, sync_manifest_entry **out)
{
	size_t n = 0, cap = 0;
	*out = NULL;
	for (const char *l = text; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l);
		sync_manifest_entry e;
		if (sync_manifest_line(l, len, &e)) {
			if (n == cap) {
				cap = cap ? 2 * cap : 16;
				*out = xrealloc(*out, cap * sizeof(**out));
			}
			(*out)[n++] = e;
		}
		l += len + (nl ? 1 : 0);
	}
	return n;
}

static int by_path(const void *a, const void *b)
{
	const sync_manifest_entry *x = a, *y = b;
	size_t n = x->path_len < y->path_len ? x->path_len : y->path_len;
	int c = memcmp(x->path, y->path, n);
	return c ? c : (x->path_len > y->path_len) - (x->path_len < y->path_len);
}

void sync_pushed_mark(sync_box *b)
{
	b->manifest_unread = b->have_pushed && b->pushed_big;
	if (!b->have_pushed || b->pushed_big || !b->files)
		return;
	sync_manifest_entry *e = NULL;
	size_t n = sync_manifest_parse(strbuf_str(&b->pushed), &e);
	/* A stable order is not needed: push writes one line per path. */
	if (n)
		qsort(e, n, sizeof(*e), by_path);
	for (size_t i = 0; i < b->plan->n && n; i++) {
		const char *rel = sync_box_item(b, i)->rel;
		sync_manifest_entry key = {.path = rel, .path_len = strlen(rel)};
		const sync_manifest_entry *hit = bsearch(&key, e, n, sizeof(*e), by_path);
		if (!hit)
			continue;
		sync_file *f = &b->files[i];
		f->pushed = true;
		memcpy(f->pushed_sha, hit->sha, sizeof(f->pushed_sha));
		f->pushed_at = hit->epoch;
	}
	free(e);
}
