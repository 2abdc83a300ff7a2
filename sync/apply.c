/* The step that verifies uploaded files on the box and swaps them in (or
 * rolls targets back), and what its result lines mean for each file. */
#include "sync/internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/path.h"
#include "base/timer.h"
#include "base/xmalloc.h"
#include "remote/sftp.h"

/* What the verifier of file i is given: the temporary file by a path only of
 * safe bytes (bg_path_safe), whatever the target is called, so no
 * template, however it nests shells, can read code out of a file name. The
 * temporary file's own name is safe (sync_temp_name); when its directory's
 * path is not, the verifier reaches it through a symlink to that directory
 * made in the repo's top for the verify step. */
static void set_vpath(sync_file *f)
{
	free(f->vpath);
	free(f->vlink);
	f->vlink = NULL;
	const char *slash = strrchr(f->temp, '/');
	char *dir = slash ? xstrndup(f->temp, (size_t)(slash - f->temp)) : NULL;
	if (!dir || bg_path_safe(dir)) {
		f->vpath = xasprintf("./%s", f->temp);
	} else {
		char hex[17];
		sync_random_hex(hex);
		f->vlink = xasprintf(".boxgate-%s.vdir", hex);
		f->vpath = xasprintf("./%s/%s", f->vlink, slash + 1);
	}
	free(dir);
}

/* File i's failed step, in words; the box left it as it was. The box's
 * error output, when it sent any, stands between what failed and the outcome. */
static void step_failed(sync_box *b, size_t i)
{
	const sync_file *f = &b->files[i];
	const char *what = "the rename failed", *outcome = "; the target is unchanged";
	switch (f->failed_step) {
	case SYNC_STEP_HASH:
		sync_file_fail(
			b, i, BG_EREMOTE,
			"the uploaded file's SHA-256 on the box (%.12s...) is not the local one "
			"(did the local file change during the push?); the box is unchanged",
			f->hashed ? f->nsha : "?");
		return;
	case SYNC_STEP_NOBAK:
		sync_file_fail(b, i, BG_ENOTFOUND, "there is no .bak to roll back to on the box");
		return;
	case SYNC_STEP_BAK: what = "cannot keep a .bak (hard link and copy failed)"; break;
	case SYNC_STEP_VLINK:
		what = "cannot make the link the verifier needs in the repo's top";
		outcome = "; the box is unchanged";
		break;
	case SYNC_STEP_COPY:
		what = "cannot copy the .bak";
		outcome = "";
		break;
	case SYNC_STEP_KEEP:
		what = "cannot keep the version on the box (link and copy failed)";
		break;
	default: break;
	}
	sync_file_fail(b, i, BG_EREMOTE, "%s%s%s%s", what, b->errtail.len ? ": " : "",
		       sync_errtail(b), outcome);
}

int sync_apply(sync_box *b, unsigned what, sync_state sel_state, bool sel_uploaded)
{
	size_t n = b->plan->n, k = 0;
	bg_err herr = {0};
	if (sync_plan_wait(b->plan, &herr) < 0) {
		for (size_t i = 0; i < n; i++)
			if (b->files[i].state == sel_state && b->files[i].uploaded)
				sync_file_fail(b, i, BG_EIO, "cannot hash the local file: %s",
					       herr.msg);
		return 0;
	}
	sync_apply_file *af = xcalloc(n ? n : 1, sizeof(*af));
	char **verifiers = xcalloc(n ? n : 1, sizeof(char *));
	char **vdirs = xcalloc(n ? n : 1, sizeof(char *));
	uint64_t big = 0;
	for (size_t i = 0; i < n; i++) {
		sync_file *f = &b->files[i];
		const sync_item *it = sync_box_item(b, i);
		if (f->state != sel_state || (sel_uploaded && !f->uploaded))
			continue;
		f->done = SYNC_DONE_NONE;
		sync_apply_file *a = &af[k++];
		a->index = i;
		a->target = it->rel;
		a->temp = f->temp;
		a->bak_temp = f->bak_temp;
		a->sha = (what & SYNC_DO_ROLLBACK) ? NULL : it->sha;
		a->big = (what & SYNC_DO_ROLLBACK) ? f->rsize >= SYNC_BIG_FILE : sync_item_big(it);
		a->prehashed = f->prehashed && !(what & SYNC_DO_ROLLBACK);
		a->keep_owner = !(what & SYNC_DO_ROLLBACK);
		a->keep = f->keep;
		if (it->verifier && (what & (SYNC_DO_VERIFY | SYNC_DO_ROLLBACK))) {
			set_vpath(f);
			verifiers[i] =
				sync_verifier_command(it->verifier, f->vpath, b->box->python);
			a->verifier = verifiers[i];
			a->vpath = f->vpath;
			a->vlink = f->vlink;
			if (f->vlink) {
				const char *slash = strrchr(f->temp, '/');
				vdirs[i] = xstrndup(f->temp, (size_t)(slash - f->temp));
				a->vdir = vdirs[i];
			}
		}
		big += it->size > f->rsize ? it->size : f->rsize;
	}
	int rc = 0;
	int vt = b->opts->verify_timeout_s > 0 ? b->opts->verify_timeout_s : 300;
	int64_t deadline = bg_deadline_ms((int64_t)vt * 1000 + (int64_t)(big / 20000));
	/* Inside the probe's shell when it is there: under the lock, with no
	 * new channel; the last step ends it. Else as commands of their own. */
	bool via_holder = b->holder != NULL;
	bool last = what != SYNC_DO_VERIFY;
	for (size_t start = 0; start < k && rc == 0;) {
		/* As many files as fit one command line. */
		size_t m = k - start;
		char *script = NULL;
		for (;;) {
			unsigned flags = what | (via_holder && !last ? SYNC_NO_EXIT : 0);
			script = sync_script_apply(b->box->repo, b->nonce, b->box->name, af + start,
						   m, flags);
			if (via_holder || strlen(script) <= SYNC_SCRIPT_MAX || m == 1)
				break;
			free(script);
			m = (m + 1) / 2;
		}
		remote_status st;
		if (via_holder && last && !(what & SYNC_DO_ROLLBACK))
			/* No SFTP after this step: its channel closes meanwhile. */
			remote_sftp_finish(b->conn);
		if (via_holder)
			rc = sync_holder_run(b, script, last, deadline, &st);
		else
			rc = sync_run_script(b, script, deadline, false, &st);
		free(script);
		if (rc == 0 && b->norepo)
			rc = bg_fail(&b->err, BG_EREMOTE,
				     "%s: the repo %s does not exist on the box", b->box->name,
				     b->box->repo);
		if (rc == 0 && !(st.how == REMOTE_EXITED && st.code == 0)) {
			char how[96];
			remote_status_describe(&st, how, sizeof(how));
			rc = bg_fail(&b->err, BG_EREMOTE, "%s: the verify step ended with %s%s%s",
				     b->box->name, how, b->errtail.len ? ": " : "",
				     sync_errtail(b));
		}
		for (size_t j = start; j < start + m; j++) {
			size_t i = af[j].index;
			sync_file *f = &b->files[i];
			const char *step = what == SYNC_DO_SWAP ? "the swap" : "the verify step";
			switch (f->done) {
			case SYNC_DONE_SWAPPED:
				f->state = (what & SYNC_DO_ROLLBACK) ? SYNC_ROLLED_BACK
					   : f->replaced             ? SYNC_UPDATED
								     : SYNC_CREATED;
				if (!(what & SYNC_DO_ROLLBACK) && !f->hashed) {
					/* AON: confirmed in the verify step. */
					memcpy(f->nsha, sync_box_item(b, i)->sha, sizeof(f->nsha));
					f->hashed = true;
				}
				f->bak_after = f->replaced || f->btype == SYNC_FT_FILE;
				f->uploaded = false;
				break;
			case SYNC_DONE_VERIFIED:
				if (what & SYNC_DO_SWAP) {
					f->state = SYNC_FAILED;
					f->code = BG_EPROTO;
				} else {
					f->state = SYNC_VERIFIED;
				}
				break;
			case SYNC_DONE_REFUSED:
				f->state = SYNC_VERIFY_FAILED;
				f->code = BG_EVERIFY;
				f->uploaded = false;
				free(f->msg);
				{
					char *shown = sync_path_display(sync_box_item(b, i)->rel);
					f->msg = xasprintf("%s: %s: refused by the verifier on the "
							   "box (exit %d); the box is unchanged",
							   b->box->name, shown, f->verify_rc);
					free(shown);
				}
				break;
			case SYNC_DONE_STEP_FAILED:
				f->uploaded = false;
				if (f->failed_step == SYNC_STEP_SAME) {
					f->state = SYNC_ALREADY_ROLLED_BACK;
					free(f->keep);
					f->keep = NULL;
					break;
				}
				step_failed(b, i);
				break;
			default:
				sync_file_fail(b, i, rc < 0 ? rc : BG_EPROTO,
					       "%s did not finish (%s): the target is the old or "
					       "the new file, "
					       "see boxgate status",
					       step, rc < 0 ? b->err.msg : "no result");
			}
		}
		start += m;
	}
	for (size_t i = 0; i < n; i++) {
		free(verifiers[i]);
		free(vdirs[i]);
	}
	free(verifiers);
	free(vdirs);
	free(af);
	return rc;
}
