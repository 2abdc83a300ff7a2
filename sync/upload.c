/* Push's upload: deciding from the probe what each file needs, then SFTP
 * into a new temporary file beside the target (a big one hashed on the box
 * as it arrives). */
#include "sync/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/quote.h"
#include "base/timer.h"
#include "base/xmalloc.h"
#include "remote/sftp.h"

bool sync_decide_push(sync_box *b, size_t i)
{
	const sync_item *it = sync_box_item(b, i);
	sync_file *f = &b->files[i];
	bg_err herr = {0};
	if (sync_item_big(it) && f->rtype == SYNC_FT_FILE && f->rsha[0] &&
	    sync_plan_wait(b->plan, &herr) < 0) {
		sync_file_fail(b, i, BG_EIO, "cannot hash the local file: %s", herr.msg);
		return false;
	}
	switch (f->rtype) {
	case SYNC_FT_FILE:
		if (f->rsha[0] && strcmp(f->rsha, it->sha) == 0) {
			f->state = SYNC_UNCHANGED;
			f->bak_after = f->btype == SYNC_FT_FILE;
			return false;
		}
		break;
	case SYNC_FT_MISSING: break;
	case SYNC_FT_DIR:
		sync_file_fail(b, i, BG_EREMOTE, "is a directory on the box");
		return false;
	case SYNC_FT_SYMLINK:
		sync_file_fail(b, i, BG_EREMOTE,
			       "is a symlink on the box (boxgate replaces regular files only)");
		return false;
	case SYNC_FT_UNREADABLE:
		sync_file_fail(b, i, BG_EREMOTE, "is not readable on the box");
		return false;
	case SYNC_FT_OTHER:
		sync_file_fail(b, i, BG_EREMOTE, "is not a regular file on the box");
		return false;
	default: sync_file_fail(b, i, BG_EPROTO, "the probe said nothing about it"); return false;
	}
	if (f->btype == SYNC_FT_SYMLINK || f->btype == SYNC_FT_OTHER) {
		sync_file_fail(b, i, BG_EREMOTE,
			       "its .bak on the box is not a regular file: move it away first");
		return false;
	}
	if (f->parent == SYNC_PARENT_OUTSIDE) {
		sync_file_fail(b, i, BG_EUSAGE,
			       "its directory on the box leads out of the repo (a symlink)");
		return false;
	}
	if (f->parent != SYNC_PARENT_INSIDE) {
		sync_file_fail(b, i, BG_EREMOTE, "cannot enter its directory on the box");
		return false;
	}
	if (!f->writable) {
		if (!f->dir_exists) {
			sync_file_fail(b, i, BG_EREMOTE,
				       "its directory does not exist on the box and cannot be "
				       "created there (not writable)");
			return false;
		}
		const char *slash = strrchr(it->rel, '/');
		char *dir = slash ? xstrndup(it->rel, (size_t)(slash - it->rel)) : xstrdup(".");
		char *shown = sync_path_display(dir);
		sync_file_fail(b, i, BG_EREMOTE, "the directory %s/%s on the box is not writable",
			       b->repo_abs, shown);
		free(shown);
		free(dir);
		return false;
	}
	f->push_mode = b->opts->keep_mode && f->rtype == SYNC_FT_FILE && f->have_stat
			       ? (f->rmode & 07777)
			       : it->mode;
	if (b->opts->dry_run) {
		f->state = f->rtype == SYNC_FT_FILE ? SYNC_WOULD_UPDATE : SYNC_WOULD_CREATE;
		f->bak_after = f->btype == SYNC_FT_FILE;
		return false;
	}
	return true;
}

struct progress_ctx {
	sync_box *b;
	const sync_item *it;
};

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct progress_ctx *p = ctx;
	p->b->opts->progress(p->b->opts->progress_ctx, p->b, p->it, done, total);
}

static int make_parents(sync_box *b, size_t i)
{
	const char *rel = sync_box_item(b, i)->rel;
	int64_t deadline = bg_deadline_ms(30000);
	for (const char *s = strchr(rel, '/'); s; s = strchr(s + 1, '/')) {
		char *dir = xasprintf("%s/%.*s", b->repo_abs, (int)(s - rel), rel);
		bg_err e = {0};
		int rc = remote_fs_mkdir(b->conn, dir, 0755, deadline, &e);
		free(dir);
		if (rc < 0) {
			size_t bl = strlen(b->box->name);
			const char *why = strncmp(e.msg, b->box->name, bl) == 0 && e.msg[bl] == ':'
						  ? e.msg + bl + 2
						  : e.msg;
			sync_file_fail(b, i, rc, "cannot create its directory: %s", why);
			return rc;
		}
	}
	return 0;
}

/* A big upload is hashed on the box while it arrives (sync_script_follow). */
struct follower {
	sync_box *b;
	size_t i;
	const char *temp;
	remote_exec *e;
	char hash[BG_SHA256_HEX_LEN + 1];
};

static void follow_line(void *ctx, remote_stream s, const char *line, size_t len, int flags)
{
	struct follower *fw = ctx;
	(void)flags;
	if (s == REMOTE_STDOUT && len == BG_SHA256_HEX_LEN)
		sync_hex64(line, fw->hash);
}

static void start_follower(void *ctx)
{
	struct follower *fw = ctx;
	sync_box *b = fw->b;
	char *script = sync_script_follow(b->box->repo, b->box->python, fw->temp,
					  sync_box_item(b, fw->i)->size);
	strbuf cmd = STRBUF_INIT;
	strbuf_addstr(&cmd, "exec /bin/sh -c ");
	bg_quote(&cmd, script);
	free(script);
	remote_exec_opts eo = {.on_line = follow_line, .ctx = fw};
	bg_err ignored = {0};
	/* Without it, the verify step hashes the file instead. */
	if (remote_exec_start(b->conn, strbuf_str(&cmd), &eo, &fw->e, &ignored) < 0)
		fw->e = NULL;
	strbuf_release(&cmd);
}

/* The follower's verdict: 1 the hash matches, 0 no hash (fall back), -1 a
 * mismatch (the temporary file is removed, the file failed). */
static int finish_follower(sync_box *b, struct follower *fw, const char *abs)
{
	size_t i = fw->i;
	remote_status st = {0};
	bg_err e = {0};
	int64_t deadline = bg_deadline_ms(30000 + (int64_t)(sync_box_item(b, i)->size / 20000));
	int r = 0;
	while ((r = remote_exec_wait(fw->e, deadline, &st, &e)) == 0 && bg_now_ms() < deadline)
		;
	remote_exec_free(fw->e);
	fw->e = NULL;
	if (r != 1 || st.how != REMOTE_EXITED || st.code != 0 || !fw->hash[0])
		return 0;
	bg_err herr = {0};
	if (sync_plan_wait(b->plan, &herr) < 0)
		return 0;
	if (strcmp(fw->hash, sync_box_item(b, i)->sha) != 0) {
		bg_err ignored = {0};
		remote_fs_unlink(b->conn, abs, bg_deadline_ms(10000), &ignored);
		sync_file_fail(
			b, i, BG_EREMOTE,
			"the uploaded file's SHA-256 on the box (%.12s...) is not the local one "
			"(did the local file change during the push?); the box is unchanged",
			fw->hash);
		return -1;
	}
	memcpy(b->files[i].nsha, fw->hash, sizeof(fw->hash));
	return 1;
}

int sync_upload(sync_box *b, size_t i)
{
	const sync_item *it = sync_box_item(b, i);
	sync_file *f = &b->files[i];
	int rc;
	if (!f->dir_exists && (rc = make_parents(b, i)) < 0)
		return rc == BG_ECONNECT ? rc : 0;
	int fd = open(it->local, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		sync_file_fail(b, i, BG_EIO, "cannot read the local file: %s", strerror(errno));
		return 0;
	}
	struct progress_ctx pc = {b, it};
	remote_put_opts po = {
		.mode = f->push_mode,
		.fsync = b->opts->fsync,
		.progress = b->opts->progress ? on_progress : NULL,
		.progress_ctx = &pc,
	};
	rc = BG_EREMOTE;
	for (int attempt = 0; attempt < 3; attempt++) {
		char hex[17];
		sync_random_hex(hex);
		char *temp = sync_temp_name(it->rel, hex);
		char *abs = xasprintf("%s/%s", b->repo_abs, temp);
		bool exists = false;
		bg_err e = {0};
		struct follower fw = {.b = b, .i = i, .temp = temp};
		if (sync_item_big(it)) {
			po.created = start_follower;
			po.created_ctx = &fw;
		}
		rc = remote_put_file(b->conn, fd, it->size, abs, &po, &exists, &e);
		int followed = 0;
		if (fw.e && rc == 0)
			followed = finish_follower(b, &fw, abs);
		remote_exec_free(fw.e);
		free(abs);
		if (rc == 0 && followed < 0) {
			free(temp);
			break;
		}
		if (rc == 0) {
			f->temp = temp;
			f->uploaded = true;
			f->prehashed = followed > 0;
			sync_random_hex(hex);
			f->bak_temp = sync_temp_name(it->rel, hex);
			break;
		}
		free(temp);
		if (exists)
			continue;
		/* e.msg starts with the box's name, which file_fail adds too. */
		size_t bl = strlen(b->box->name);
		const char *why = strncmp(e.msg, b->box->name, bl) == 0 && e.msg[bl] == ':'
					  ? e.msg + bl + 2
					  : e.msg;
		sync_file_fail(b, i, rc, "upload failed: %s", why);
		break;
	}
	close(fd);
	return rc == BG_ECONNECT ? rc : 0;
}
