/* One box's side of push, status and rollback: its lifecycle, the steps of
 * push and rollback in order (probe, upload, apply: internal.h says where
 * each lives), and the all-or-nothing commit and abort. */
#include "sync/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/timer.h"
#include "base/xmalloc.h"
#include "remote/sftp.h"

void sync_box_init(sync_box *b, const sync_target *box, size_t index, sync_plan *plan,
		   const sync_opts *o)
{
	memset(b, 0, sizeof(*b));
	b->view = *box;
	b->box = &b->view;
	b->index = index;
	b->plan = plan;
	b->opts = o;
	b->vfile = -1;
	if (plan->n)
		b->files = xcalloc(plan->n, sizeof(*b->files));
	sync_random_hex(b->nonce);
}

static void files_release(sync_file *files, size_t n)
{
	for (size_t i = 0; files && i < n; i++) {
		free(files[i].msg);
		free(files[i].verify_out);
		free(files[i].temp);
		free(files[i].bak_temp);
		free(files[i].vpath);
		free(files[i].vlink);
		free(files[i].warn);
		free(files[i].keep);
	}
	free(files);
}

void sync_box_release(sync_box *b)
{
	if (!b)
		return;
	if (b->holder)
		remote_exec_free(b->holder);
	remote_close(b->conn);
	if (b->plan)
		files_release(b->files, b->plan->n);
	free(b->repo_abs);
	free(b->block_idx);
	strbuf_release(&b->errtail);
	strbuf_release(&b->vbuf);
	strbuf_release(&b->scan);
	strbuf_release(&b->pushed);
	sync_plan_release(&b->own_plan);
	memset(b, 0, sizeof(*b));
}

void sync_box_unlock(sync_box *b)
{
	remote_exec_free(b->holder);
	b->holder = NULL;
}

void sync_box_disconnect(sync_box *b)
{
	sync_box_unlock(b);
	remote_close(b->conn);
	b->conn = NULL;
}

void sync_trace(const sync_box *b, const char *phase)
{
	if (b->opts->trace)
		b->opts->trace(b->opts->trace_ctx, b->box->name, phase);
}

int sync_box_connect(sync_box *b)
{
	const sync_opts *o = b->opts;
	remote_connect_opts co = {.log = o->log,
				  .log_ctx = o->log_ctx,
				  .accept_new = o->accept_new,
				  .warm = true,
				  .trace = o->trace};
	return remote_connect(b->box->connect, &co, &b->conn, &b->err);
}

int sync_box_fail(sync_box *b, int rc)
{
	b->rc = rc;
	for (size_t i = 0; i < b->plan->n; i++) {
		sync_file *f = &b->files[i];
		if (f->state == SYNC_PENDING || f->state == SYNC_VERIFIED) {
			f->state = SYNC_FAILED;
			f->code = rc;
		}
	}
	return rc;
}

int sync_push_box(sync_box *b)
{
	const sync_opts *o = b->opts;
	sync_trace(b, "start");
	int rc = sync_box_connect(b);
	sync_trace(b, "connected");
	if (rc < 0)
		return sync_box_fail(b, rc);
	if (o->ready && o->ready(o->ready_ctx) != 0) {
		bg_fail(&b->err, BG_EVERIFY, "%s: not touched: the local check refused a file",
			b->box->name);
		return sync_box_fail(b, BG_EVERIFY);
	}
	rc = sync_probe(b, o->dry_run ? SYNC_PROBE_DRY : SYNC_PROBE_PUSH);
	sync_trace(b, "probed");
	if (rc < 0)
		return sync_box_fail(b, rc);
	bool any = false;
	for (size_t i = 0; i < b->plan->n; i++)
		if (b->files[i].state == SYNC_PENDING && sync_decide_push(b, i))
			any = true;
	if (!any)
		return 0;
	for (size_t i = 0; i < b->plan->n; i++) {
		sync_file *f = &b->files[i];
		if (f->state != SYNC_PENDING)
			continue;
		rc = sync_upload(b, i);
		if (rc < 0) {
			b->err = (bg_err){0};
			snprintf(b->err.msg, sizeof(b->err.msg), "%s",
				 f->msg ? f->msg : "connection lost");
			return sync_box_fail(b, rc);
		}
	}
	sync_trace(b, "uploaded");
	rc = sync_apply(b, o->all_or_nothing ? SYNC_DO_VERIFY : SYNC_DO_VERIFY | SYNC_DO_SWAP,
			SYNC_PENDING, true);
	sync_trace(b, "applied");
	if (rc < 0 && rc != BG_ETIMEOUT)
		b->rc = rc;
	return b->rc;
}

int sync_push_commit(sync_box *b)
{
	if (b->rc < 0 || !b->conn)
		return b->rc;
	int rc = sync_apply(b, SYNC_DO_SWAP, SYNC_VERIFIED, true);
	if (rc < 0 && rc != BG_ETIMEOUT)
		b->rc = rc;
	return b->rc;
}

bool sync_box_failed(const sync_box *b)
{
	bool bad = b->rc < 0;
	for (size_t k = 0; !bad && k < b->plan->n; k++)
		bad = sync_state_failed(b->files[k].state);
	return bad;
}

bool sync_boxes_all_ok(const sync_box *boxes, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (sync_box_failed(&boxes[i]))
			return false;
	return true;
}

void sync_push_abort(sync_box *b)
{
	for (size_t i = 0; i < b->plan->n; i++) {
		sync_file *f = &b->files[i];
		if (f->state != SYNC_VERIFIED)
			continue;
		f->state = SYNC_NOT_APPLIED;
		if (b->conn && f->temp && b->repo_abs) {
			char *abs = xasprintf("%s/%s", b->repo_abs, f->temp);
			bg_err e = {0};
			remote_fs_unlink(b->conn, abs, bg_deadline_ms(10000), &e);
			free(abs);
		}
		f->uploaded = false;
	}
}

/* ---- rollback ---- */

int sync_rollback_box(sync_box *b)
{
	const sync_opts *o = b->opts;
	b->want_pushed = true;
	int rc = sync_box_connect(b);
	if (rc < 0)
		return sync_box_fail(b, rc);
	rc = sync_probe(b, o->dry_run ? SYNC_PROBE_DRY : SYNC_PROBE_ROLLBACK);
	if (rc < 0)
		return sync_box_fail(b, rc);
	sync_pushed_mark(b);
	bool any = false;
	for (size_t i = 0; i < b->plan->n; i++) {
		sync_file *f = &b->files[i];
		const sync_item *it = sync_box_item(b, i);
		/* A file push created has nothing before it to go back to:
		 * rollback never removes a file, it says so and leaves it. */
		if (f->btype == SYNC_FT_MISSING && f->pushed && f->rtype == SYNC_FT_FILE) {
			sync_file_fail(
				b, i, BG_ENOTFOUND,
				"push placed it and there is no .bak beside it (push keeps "
				"none when it creates a file): nothing to roll back to, left "
				"as it is (remove it by hand if it should go)");
			continue;
		}
		if (f->btype != SYNC_FT_FILE) {
			sync_file_fail(b, i, BG_ENOTFOUND, "%s",
				       f->btype == SYNC_FT_MISSING
					       ? "there is no .bak on the box to roll back to"
					       : "its .bak on the box is not a regular file");
			continue;
		}
		if (f->rtype == SYNC_FT_DIR || f->rtype == SYNC_FT_SYMLINK ||
		    f->rtype == SYNC_FT_OTHER) {
			sync_file_fail(b, i, BG_EREMOTE,
				       "the target on the box is not a regular file");
			continue;
		}
		if (f->parent != SYNC_PARENT_INSIDE) {
			sync_file_fail(b, i, BG_EUSAGE,
				       "its directory on the box leads out of the repo");
			continue;
		}
		/* What push placed was changed on the box since (a hot fix by
		 * hand): rolling back would lose it. */
		if (f->pushed && f->rsha[0] && f->rtype == SYNC_FT_FILE &&
		    strcmp(f->rsha, f->pushed_sha) != 0) {
			if (!o->force) {
				sync_file_fail(b, i, BG_EUSAGE,
					       "changed on the box since push placed %.12s (now "
					       "%.12s): not rolled back, that version would be "
					       "lost (--force keeps it as "
					       "FILE.boxgate-rollback-TIME and rolls back)",
					       f->pushed_sha, f->rsha);
				continue;
			}
			char when[32];
			time_t now = time(NULL);
			struct tm tm;
			gmtime_r(&now, &tm);
			strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", &tm);
			f->keep = xasprintf("%s.boxgate-rollback-%s", it->rel, when);
		}
		if (o->dry_run) {
			f->state = SYNC_WOULD_ROLL_BACK;
			f->bak_after = true;
			continue;
		}
		char hex[17];
		sync_random_hex(hex);
		f->temp = sync_temp_name(it->rel, hex);
		sync_random_hex(hex);
		f->bak_temp = sync_temp_name(it->rel, hex);
		f->uploaded = true;
		any = true;
	}
	if (!any)
		return 0;
	rc = sync_apply(b, SYNC_DO_ROLLBACK, SYNC_PENDING, true);
	if (rc < 0 && rc != BG_ETIMEOUT)
		b->rc = rc;
	return b->rc;
}
