/* One box's side of push, status and rollback: one connection, a probe that
 * holds the box's push lock, SFTP uploads into exclusive temporary files,
 * and one exec that verifies and swaps. */
#include "sync/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/lines.h"
#include "base/quote.h"
#include "base/timer.h"
#include "base/xmalloc.h"
#include "remote/sftp.h"

#define ERRTAIL_MAX 2048
#define VERIFY_OUT_MAX (64 * 1024)
#define SCAN_MAX (16 << 20)
#define SCAN_TARGETS_MAX 10000

void sync_box_init(sync_box *b, const conf_box *box, size_t index, sync_plan *plan,
		   const sync_opts *o)
{
	memset(b, 0, sizeof(*b));
	b->box = box;
	b->index = index;
	b->plan = plan;
	b->opts = o;
	b->vfile = -1;
	b->lock = 'n';
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

static void trace(const sync_box *b, const char *phase)
{
	if (b->opts->trace)
		b->opts->trace(b->opts->trace_ctx, b->box->name, phase);
}

static const sync_item *item(const sync_box *b, size_t i)
{
	return &b->plan->items[i];
}

static bool is_big(const sync_item *it)
{
	return it->local && it->size >= SYNC_BIG_FILE;
}

/* Marks file i failed with a message naming the box and the path. */
__attribute__((format(printf, 4, 5))) static void file_fail(sync_box *b, size_t i, int code,
							    const char *fmt, ...)
{
	sync_file *f = &b->files[i];
	char *shown = sync_path_display(item(b, i)->rel);
	va_list ap;
	va_start(ap, fmt);
	char detail[1024];
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	free(f->msg);
	f->msg = xasprintf("%s: %s: %s", b->box->name, shown, detail);
	free(shown);
	f->state = SYNC_FAILED;
	f->code = code;
}

/* The last stderr lines, for messages about failed steps. */
static const char *errtail(const sync_box *b)
{
	return b->errtail.len ? strbuf_str(&b->errtail) : "";
}

/* ---- output parsing ---- */

static bool parse_index(const sync_box *b, const char **s, size_t *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(*s, &end, 10);
	if (end == *s || errno || v >= b->plan->n)
		return false;
	*out = v;
	*s = end;
	while (**s == ' ')
		(*s)++;
	return true;
}

static bool hex64(const char *s, char out[BG_SHA256_HEX_LEN + 1])
{
	for (int i = 0; i < BG_SHA256_HEX_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	memcpy(out, s, BG_SHA256_HEX_LEN);
	out[BG_SHA256_HEX_LEN] = '\0';
	return true;
}

/* Starts a block of `count` lines for the batch's regular targets (all of
 * them, or only those hashed in the batch). */
static void start_block(sync_box *b, int which, const char *count)
{
	long want = strtol(count, NULL, 10);
	free(b->block_idx);
	b->block_idx = xcalloc(b->batch_n ? b->batch_n : 1, sizeof(size_t));
	b->block_n = b->block_pos = 0;
	for (size_t k = 0; k < b->batch_n; k++) {
		size_t i = b->batch[k];
		if (b->files[i].rtype != 'F')
			continue;
		if (which == 2 && is_big(item(b, i)))
			continue;
		b->block_idx[b->block_n++] = i;
	}
	if (want != (long)b->block_n) {
		b->proto_err = true;
		b->block = 0;
		return;
	}
	b->block = b->block_n ? which : 0;
}

static void block_line(sync_box *b, const char *line, size_t len)
{
	size_t i = b->block_idx[b->block_pos++];
	sync_file *f = &b->files[i];
	char buf[128];
	snprintf(buf, sizeof(buf), "%.*s", (int)(len < 127 ? len : 127), line);
	if (b->block == 1) {
		char *end;
		f->rmode = (unsigned)strtoul(buf, &end, 8) & 07777;
		f->rsize = strtoull(end, NULL, 10);
		f->have_stat = true;
	} else {
		const char *h = buf[0] == '\\' ? buf + 1 : buf;
		if (strlen(h) < BG_SHA256_HEX_LEN || !hex64(h, f->rsha))
			b->proto_err = true;
	}
	if (b->block_pos >= b->block_n)
		b->block = 0;
}

/* Replaces every occurrence of `from` in sb with `to`. */
static void replace_all(strbuf *sb, const char *from, const char *to)
{
	size_t fl = strlen(from);
	if (!fl || !sb->len)
		return;
	strbuf out = STRBUF_INIT;
	const char *s = sb->buf, *end = sb->buf + sb->len;
	while (s < end) {
		const char *m = memmem(s, (size_t)(end - s), from, fl);
		if (!m) {
			strbuf_add(&out, s, (size_t)(end - s));
			break;
		}
		strbuf_add(&out, s, (size_t)(m - s));
		strbuf_addstr(&out, to);
		s = m + fl;
	}
	strbuf_release(sb);
	*sb = out;
}

static void finish_verify_output(sync_box *b)
{
	size_t i = (size_t)b->vfile;
	sync_file *f = &b->files[i];
	/* The verifier saw the temporary file: show the target's name. */
	if (f->vpath)
		replace_all(&b->vbuf, f->vpath, item(b, i)->rel);
	if (f->temp) {
		char *dotted = xasprintf("./%s", f->temp);
		replace_all(&b->vbuf, dotted, item(b, i)->rel);
		replace_all(&b->vbuf, f->temp, item(b, i)->rel);
		free(dotted);
	}
	while (b->vbuf.len && b->vbuf.buf[b->vbuf.len - 1] == '\n')
		b->vbuf.buf[--b->vbuf.len] = '\0';
	free(f->verify_out);
	f->verify_out = strbuf_detach(&b->vbuf);
	b->vfile = -1;
}

static void marker(sync_box *b, const char *m)
{
	const char *rest = strchr(m, ' ');
	size_t wl = rest ? (size_t)(rest - m) : strlen(m);
	rest = rest ? rest + 1 : "";
	char word[16];
	snprintf(word, sizeof(word), "%.*s", (int)(wl < 15 ? wl : 15), m);
	size_t i;

	if (strcmp(word, "repo") == 0) {
		free(b->repo_abs);
		b->repo_abs = xstrdup(rest);
	} else if (strcmp(word, "norepo") == 0) {
		b->norepo = true;
	} else if (strcmp(word, "lock") == 0) {
		b->lock = rest[0];
	} else if (strcmp(word, "end") == 0) {
		b->end = true;
		b->in_scan = false;
	} else if (strcmp(word, "done") == 0) {
		b->cmd_done = true;
	} else if (strcmp(word, "scan") == 0) {
		b->in_scan = true;
	} else if (strcmp(word, "stats") == 0) {
		start_block(b, 1, rest);
	} else if (strcmp(word, "hashes") == 0) {
		start_block(b, 2, rest);
	} else if (!parse_index(b, &rest, &i)) {
		b->proto_err = true;
	} else if (strcmp(word, "f") == 0) {
		sync_file *f = &b->files[i];
		char t, k, p;
		int w, e;
		if (sscanf(rest, "%c %c %c %d %d", &t, &k, &p, &w, &e) != 5) {
			b->proto_err = true;
			return;
		}
		f->rtype = t;
		f->btype = k;
		f->parent = p;
		f->writable = w == 1;
		f->dir_exists = e == 1;
	} else if (strcmp(word, "t") == 0) {
		/* "r 0123456789abcdef.tmp" */
		sync_file *f = &b->files[i];
		f->stale_found++;
		if (rest[0] == 'r')
			f->stale_removed++;
	} else if (strcmp(word, "H") == 0) {
		if (!hex64(rest, b->files[i].rsha))
			b->proto_err = true;
	} else if (strcmp(word, "S") == 0) {
		b->files[i].rsize = strtoull(rest, NULL, 10);
	} else if (strcmp(word, "h") == 0) {
		sync_file *f = &b->files[i];
		f->hashed = hex64(rest, f->nsha);
	} else if (strcmp(word, "x") == 0) {
		sync_file *f = &b->files[i];
		f->done = 'x';
		snprintf(f->why, sizeof(f->why), "%s", rest);
	} else if (strcmp(word, "v") == 0) {
		sync_file *f = &b->files[i];
		f->done = 'r';
		f->verify_rc = atoi(rest);
		strbuf_reset(&b->vbuf);
		b->vpartial = false;
		b->vfile = (long)i;
	} else if (strcmp(word, "vend") == 0) {
		if (b->vfile == (long)i)
			finish_verify_output(b);
	} else if (strcmp(word, "vok") == 0) {
		b->files[i].done = 'v';
	} else if (strcmp(word, "w") == 0) {
		/* "OLD-UID:GID NEW-UID:GID" */
		sync_file *f = &b->files[i];
		char old_owner[32] = "", new_owner[32] = "";
		if (sscanf(rest, "%31s %31s", old_owner, new_owner) != 2) {
			b->proto_err = true;
			return;
		}
		free(f->warn);
		char *shown = sync_path_display(item(b, i)->rel);
		f->warn = xasprintf("%s: %s: could not keep the replaced file's owner and group %s "
				    "(not allowed to chown); the new file belongs to %s",
				    b->box->name, shown, old_owner, new_owner);
		free(shown);
	} else if (strcmp(word, "ok") == 0) {
		sync_file *f = &b->files[i];
		f->done = 'k';
		f->replaced = strcmp(rest, "replaced") == 0;
	} else {
		b->proto_err = true;
	}
}

static void on_line(void *ctx, remote_stream s, const char *line, size_t len, int flags)
{
	sync_box *b = ctx;
	bool whole = !(flags & LINE_PARTIAL);
	if (s == REMOTE_STDERR) {
		if (b->errtail.len + len > ERRTAIL_MAX) {
			const char *cut = b->errtail.len ? strchr(b->errtail.buf + b->errtail.len / 2, '\n') : NULL;
			size_t keep = cut ? b->errtail.len - (size_t)(cut + 1 - b->errtail.buf) : 0;
			memmove(b->errtail.buf, b->errtail.buf + b->errtail.len - keep, keep);
			b->errtail.len = keep;
			b->errtail.buf[keep] = '\0';
		}
		if (len > ERRTAIL_MAX / 2)
			len = ERRTAIL_MAX / 2;
		if (b->errtail.len && b->errtail.buf[b->errtail.len - 1] != '\n')
			strbuf_addch(&b->errtail, '\n');
		strbuf_add(&b->errtail, line, len);
		return;
	}
	size_t nl = strlen(b->nonce);
	if (len > nl + 2 && line[0] == '@' && memcmp(line + 1, b->nonce, nl) == 0 && line[nl + 1] == ' ' &&
	    whole) {
		char *m = xstrndup(line + nl + 2, len - nl - 2);
		if (b->vfile >= 0 && strncmp(m, "vend ", 5) != 0)
			finish_verify_output(b);
		marker(b, m);
		free(m);
		return;
	}
	if (b->block) {
		block_line(b, line, len);
		return;
	}
	if (b->in_scan) {
		if (b->scan.len + len + 1 <= SCAN_MAX) {
			strbuf_add(&b->scan, line, len);
			if (whole)
				strbuf_addch(&b->scan, '\n');
		}
		return;
	}
	if (b->vfile >= 0) {
		/* Verifier output: every line was given a leading '|' on the box. */
		bool start = !b->vpartial;
		b->vpartial = !whole;
		if (start) {
			if (len == 0 || line[0] != '|')
				return;
			line++;
			len--;
		}
		if (b->vbuf.len + len + 1 <= VERIFY_OUT_MAX) {
			strbuf_add(&b->vbuf, line, len);
			if (whole)
				strbuf_addch(&b->vbuf, '\n');
		}
	}
	/* Anything else (a chatty login shell) is ignored. */
}

/* ---- running scripts ---- */

/* Runs `script` with /bin/sh on the box, parsing its output. With `hold`
 * it returns once the script printed its end line, leaving it running in
 * b->holder (it holds the push lock until the connection closes). */
static int run_script(sync_box *b, const char *script, int64_t deadline, bool hold,
		      remote_status *st)
{
	strbuf cmd = STRBUF_INIT;
	strbuf_addstr(&cmd, "exec /bin/sh -c ");
	bg_quote(&cmd, script);
	remote_exec_opts eo = {.on_line = on_line, .ctx = b, .killable = true};
	remote_exec *e = NULL;
	memset(st, 0, sizeof(*st));
	b->end = false;
	b->block = 0;
	int rc = remote_exec_start(b->conn, strbuf_str(&cmd), &eo, &e, &b->err);
	strbuf_release(&cmd);
	if (rc < 0)
		return rc;
	if (!hold)
		remote_exec_close_stdin(e);
	for (;;) {
		int64_t step = deadline;
		if (hold) {
			int64_t soon = bg_now_ms() + 2;
			if (soon < step)
				step = soon;
		}
		int r = remote_exec_wait(e, step, st, &b->err);
		if (r < 0) {
			rc = r;
			break;
		}
		if (r == 1) {
			rc = 0;
			break;
		}
		if (hold && b->end) {
			b->holder = e;
			return 0;
		}
		if (bg_now_ms() >= deadline) {
			remote_exec_kill(e, 2000, st, NULL);
			rc = bg_fail(&b->err, BG_ETIMEOUT, "%s: the box did not finish in time", b->box->name);
			break;
		}
	}
	if (b->vfile >= 0)
		finish_verify_output(b);
	remote_exec_free(e);
	return rc;
}

/* Runs `script` in the probe's shell that holds the lock. With `last` the
 * script ends that shell (and the lock) too. */
static int holder_run(sync_box *b, const char *script, bool last, int64_t deadline, remote_status *st)
{
	remote_exec *e = b->holder;
	char go[32];
	int rc = 0;
	bool exited = false;
	snprintf(go, sizeof(go), "\n@%s go\n", b->nonce);
	memset(st, 0, sizeof(*st));
	b->cmd_done = false;
	b->block = 0;
	remote_exec_write(e, script, strlen(script));
	remote_exec_write(e, go, strlen(go));
	if (last)
		remote_exec_close_stdin(e);
	for (;;) {
		int64_t step = deadline;
		if (!last) {
			int64_t soon = bg_now_ms() + 2;
			if (soon < step)
				step = soon;
		}
		int r = remote_exec_wait(e, step, st, &b->err);
		if (r < 0) {
			rc = r;
			break;
		}
		if (r == 1 || (!last && b->cmd_done)) {
			exited = r == 1;
			if (r == 0)
				st->how = REMOTE_EXITED; /* still running, the step is done */
			break;
		}
		if (bg_now_ms() >= deadline) {
			remote_exec_kill(e, 2000, st, NULL);
			rc = bg_fail(&b->err, BG_ETIMEOUT, "%s: the box did not finish in time", b->box->name);
			break;
		}
	}
	if (b->vfile >= 0)
		finish_verify_output(b);
	if (rc < 0 || last || exited) {
		remote_exec_free(e);
		b->holder = NULL;
	}
	return rc;
}

/* ---- probe ---- */

enum probe_kind { PROBE_PUSH, PROBE_DRY, PROBE_STATUS, PROBE_ROLLBACK };

static int probe_range(sync_box *b, size_t *idx, size_t n, enum probe_kind kind, bool first,
		       int64_t deadline)
{
	const sync_opts *o = b->opts;
	sync_probe_opts po = {
		.repo = b->box->repo,
		.nonce = b->nonce,
		.lock = first && kind != PROBE_DRY,
		.lock_wait_s = kind == PROBE_STATUS ? 0 : (o->lock_wait_s > 0 ? o->lock_wait_s : 30),
		.fail_busy = kind == PROBE_PUSH || kind == PROBE_ROLLBACK,
		.clean = kind == PROBE_STATUS ? o->clean : kind != PROBE_DRY,
		.stats = kind == PROBE_STATUS || o->keep_mode,
		.hold = first && (kind == PROBE_PUSH || kind == PROBE_ROLLBACK),
	};
	if (!first) {
		/* Later batches run under the first one's lock. */
		po.clean = po.clean && b->lock == 'o';
		po.lock = false;
	}
	char *script = sync_script_probe(&po, b->plan, idx, n);
	if (strlen(script) > SYNC_SCRIPT_MAX && n > 1) {
		free(script);
		int rc = probe_range(b, idx, n / 2, kind, first, deadline);
		if (rc < 0)
			return rc;
		return probe_range(b, idx + n / 2, n - n / 2, kind, false, deadline);
	}
	if (strlen(script) > SYNC_SCRIPT_MAX) {
		free(script);
		file_fail(b, idx[0], BG_EUSAGE, "the path is too long to handle");
		return 0;
	}
	b->batch = idx;
	b->batch_n = n;
	remote_status st;
	int rc = run_script(b, script, deadline, po.hold, &st);
	free(script);
	b->batch = NULL;
	b->batch_n = 0;
	if (rc < 0)
		return rc;
	if (b->norepo)
		return bg_fail(&b->err, BG_EREMOTE, "%s: the repo %s does not exist on the box", b->box->name,
			       b->box->repo);
	if (first && b->lock == 'b')
		return bg_fail(&b->err, BG_EBUSY,
			       "%s: another boxgate push or rollback is running on the box (waited %d s)",
			       b->box->name, po.lock_wait_s);
	if (b->proto_err || !b->end || !b->repo_abs) {
		char how[96];
		remote_status_describe(&st, how, sizeof(how));
		return bg_fail(&b->err, BG_EPROTO, "%s: the probe did not answer as expected (%s)%s%s",
			       b->box->name, how, b->errtail.len ? ": " : "", errtail(b));
	}
	return 0;
}

static int probe(sync_box *b, enum probe_kind kind)
{
	size_t n = b->plan->n;
	if (n == 0)
		return 0;
	size_t *idx = xcalloc(n, sizeof(*idx));
	uint64_t big = 0;
	for (size_t i = 0; i < n; i++) {
		idx[i] = i;
		if (is_big(item(b, i)))
			big += item(b, i)->size;
	}
	int lock_wait = b->opts->lock_wait_s > 0 ? b->opts->lock_wait_s : 30;
	/* Hashing big files on the box takes time: allow 20 MB/s. */
	int64_t deadline = bg_deadline_ms((int64_t)(lock_wait + 120) * 1000 + (int64_t)(big / 20000));
	int rc = probe_range(b, idx, n, kind, true, deadline);
	free(idx);
	return rc;
}

/* ---- connect ---- */

static int connect_box(sync_box *b)
{
	const sync_opts *o = b->opts;
	remote_connect_opts co = {.log = o->log, .log_ctx = o->log_ctx, .accept_new = o->accept_new};
	return remote_connect(b->box, &co, &b->conn, &b->err);
}

/* A box-level failure: every file not done yet shares it. */
static int box_fail(sync_box *b, int rc)
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

/* ---- push ---- */

/* What the probe says about file i: nothing to do, refused, or an upload. */
static bool decide_push(sync_box *b, size_t i)
{
	const sync_item *it = item(b, i);
	sync_file *f = &b->files[i];
	bg_err herr = {0};
	if (is_big(it) && f->rtype == 'F' && f->rsha[0] && sync_plan_wait(b->plan, &herr) < 0) {
		file_fail(b, i, BG_EIO, "cannot hash the local file: %s", herr.msg);
		return false;
	}
	switch (f->rtype) {
	case 'F':
		if (f->rsha[0] && strcmp(f->rsha, it->sha) == 0) {
			f->state = SYNC_UNCHANGED;
			f->bak_after = f->btype == 'F';
			return false;
		}
		break;
	case 'M': break;
	case 'D': file_fail(b, i, BG_EREMOTE, "is a directory on the box"); return false;
	case 'L':
		file_fail(b, i, BG_EREMOTE, "is a symlink on the box (boxgate replaces regular files only)");
		return false;
	case 'U': file_fail(b, i, BG_EREMOTE, "is not readable on the box"); return false;
	case 'O': file_fail(b, i, BG_EREMOTE, "is not a regular file on the box"); return false;
	default: file_fail(b, i, BG_EPROTO, "the probe said nothing about it"); return false;
	}
	if (f->btype == 'L' || f->btype == 'O') {
		file_fail(b, i, BG_EREMOTE, "its .bak on the box is not a regular file: move it away first");
		return false;
	}
	if (f->parent == 'o') {
		file_fail(b, i, BG_EUSAGE, "its directory on the box leads out of the repo (a symlink)");
		return false;
	}
	if (f->parent != 'i') {
		file_fail(b, i, BG_EREMOTE, "cannot enter its directory on the box");
		return false;
	}
	if (!f->writable) {
		if (!f->dir_exists) {
			file_fail(b, i, BG_EREMOTE,
				  "its directory does not exist on the box and cannot be created there (not writable)");
			return false;
		}
		const char *slash = strrchr(it->rel, '/');
		char *dir = slash ? xstrndup(it->rel, (size_t)(slash - it->rel)) : xstrdup(".");
		char *shown = sync_path_display(dir);
		file_fail(b, i, BG_EREMOTE, "the directory %s/%s on the box is not writable", b->repo_abs, shown);
		free(shown);
		free(dir);
		return false;
	}
	f->push_mode = b->opts->keep_mode && f->rtype == 'F' && f->have_stat ? (f->rmode & 07777) : it->mode;
	if (b->opts->dry_run) {
		f->state = f->rtype == 'F' ? SYNC_WOULD_UPDATE : SYNC_WOULD_CREATE;
		f->bak_after = f->btype == 'F';
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
	const char *rel = item(b, i)->rel;
	int64_t deadline = bg_deadline_ms(30000);
	for (const char *s = strchr(rel, '/'); s; s = strchr(s + 1, '/')) {
		char *dir = xasprintf("%s/%.*s", b->repo_abs, (int)(s - rel), rel);
		bg_err e = {0};
		int rc = remote_fs_mkdir(b->conn, dir, 0755, deadline, &e);
		free(dir);
		if (rc < 0) {
			size_t bl = strlen(b->box->name);
			const char *why = strncmp(e.msg, b->box->name, bl) == 0 && e.msg[bl] == ':' ? e.msg + bl + 2 : e.msg;
			file_fail(b, i, rc, "cannot create its directory: %s", why);
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
		hex64(line, fw->hash);
}

static void start_follower(void *ctx)
{
	struct follower *fw = ctx;
	sync_box *b = fw->b;
	char *script = sync_script_follow(b->box->repo, b->box->python, fw->temp, item(b, fw->i)->size);
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
	int64_t deadline = bg_deadline_ms(30000 + (int64_t)(item(b, i)->size / 20000));
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
	if (strcmp(fw->hash, item(b, i)->sha) != 0) {
		bg_err ignored = {0};
		remote_fs_unlink(b->conn, abs, bg_deadline_ms(10000), &ignored);
		file_fail(b, i, BG_EREMOTE,
			  "the uploaded file's SHA-256 on the box (%.12s...) is not the local one "
			  "(did the local file change during the push?); the box is unchanged",
			  fw->hash);
		return -1;
	}
	memcpy(b->files[i].nsha, fw->hash, sizeof(fw->hash));
	return 1;
}

/* Uploads file i into a new temporary file beside its target. */
static int upload(sync_box *b, size_t i)
{
	const sync_item *it = item(b, i);
	sync_file *f = &b->files[i];
	int rc;
	if (!f->dir_exists && (rc = make_parents(b, i)) < 0)
		return rc == BG_ECONNECT ? rc : 0;
	int fd = open(it->local, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		file_fail(b, i, BG_EIO, "cannot read the local file: %s", strerror(errno));
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
		if (is_big(it)) {
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
		const char *why = strncmp(e.msg, b->box->name, bl) == 0 && e.msg[bl] == ':' ? e.msg + bl + 2 : e.msg;
		file_fail(b, i, rc, "upload failed: %s", why);
		break;
	}
	close(fd);
	return rc == BG_ECONNECT ? rc : 0;
}

/* What the verifier of file i is given: the temporary file by a path only of
 * safe bytes (sync_safe_path), whatever the target is called, so no
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
	if (!dir || sync_safe_path(dir)) {
		f->vpath = xasprintf("./%s", f->temp);
	} else {
		char hex[17];
		sync_random_hex(hex);
		f->vlink = xasprintf(".boxgate-%s.vdir", hex);
		f->vpath = xasprintf("./%s/%s", f->vlink, slash + 1);
	}
	free(dir);
}

/* Runs the verify/swap/rollback step for the files selected by `sel`. */
static int apply(sync_box *b, unsigned what, sync_state sel_state, bool sel_uploaded)
{
	size_t n = b->plan->n, k = 0;
	bg_err herr = {0};
	if (sync_plan_wait(b->plan, &herr) < 0) {
		for (size_t i = 0; i < n; i++)
			if (b->files[i].state == sel_state && b->files[i].uploaded)
				file_fail(b, i, BG_EIO, "cannot hash the local file: %s", herr.msg);
		return 0;
	}
	sync_apply_file *af = xcalloc(n ? n : 1, sizeof(*af));
	char **verifiers = xcalloc(n ? n : 1, sizeof(char *));
	char **vdirs = xcalloc(n ? n : 1, sizeof(char *));
	uint64_t big = 0;
	for (size_t i = 0; i < n; i++) {
		sync_file *f = &b->files[i];
		const sync_item *it = item(b, i);
		if (f->state != sel_state || (sel_uploaded && !f->uploaded))
			continue;
		f->done = 0;
		sync_apply_file *a = &af[k++];
		a->index = i;
		a->target = it->rel;
		a->temp = f->temp;
		a->bak_temp = f->bak_temp;
		a->sha = (what & SYNC_DO_ROLLBACK) ? NULL : it->sha;
		a->big = (what & SYNC_DO_ROLLBACK) ? f->rsize >= SYNC_BIG_FILE : is_big(it);
		a->prehashed = f->prehashed && !(what & SYNC_DO_ROLLBACK);
		a->keep_owner = !(what & SYNC_DO_ROLLBACK);
		if (it->verifier && (what & (SYNC_DO_VERIFY | SYNC_DO_ROLLBACK))) {
			set_vpath(f);
			verifiers[i] = sync_verifier_command(it->verifier, f->vpath, b->box->python);
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
			script = sync_script_apply(b->box->repo, b->nonce, b->box->name, af + start, m, flags);
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
			rc = holder_run(b, script, last, deadline, &st);
		else
			rc = run_script(b, script, deadline, false, &st);
		free(script);
		if (rc == 0 && b->norepo)
			rc = bg_fail(&b->err, BG_EREMOTE, "%s: the repo %s does not exist on the box",
				     b->box->name, b->box->repo);
		if (rc == 0 && !(st.how == REMOTE_EXITED && st.code == 0)) {
			char how[96];
			remote_status_describe(&st, how, sizeof(how));
			rc = bg_fail(&b->err, BG_EREMOTE, "%s: the verify step ended with %s%s%s", b->box->name,
				     how, b->errtail.len ? ": " : "", errtail(b));
		}
		for (size_t j = start; j < start + m; j++) {
			size_t i = af[j].index;
			sync_file *f = &b->files[i];
			const char *step = what == SYNC_DO_SWAP ? "the swap" : "the verify step";
			switch (f->done) {
			case 'k':
				f->state = (what & SYNC_DO_ROLLBACK) ? SYNC_ROLLED_BACK
					   : f->replaced		 ? SYNC_UPDATED
									 : SYNC_CREATED;
				if (!(what & SYNC_DO_ROLLBACK) && !f->hashed) {
					/* AON: confirmed in the verify step. */
					memcpy(f->nsha, item(b, i)->sha, sizeof(f->nsha));
					f->hashed = true;
				}
				f->bak_after = f->replaced || f->btype == 'F';
				f->uploaded = false;
				break;
			case 'v':
				if (what & SYNC_DO_SWAP) {
					f->state = SYNC_FAILED;
					f->code = BG_EPROTO;
				} else {
					f->state = SYNC_VERIFIED;
				}
				break;
			case 'r':
				f->state = SYNC_VERIFY_FAILED;
				f->code = BG_EVERIFY;
				f->uploaded = false;
				free(f->msg);
				{
					char *shown = sync_path_display(item(b, i)->rel);
					f->msg = xasprintf("%s: %s: refused by the verifier on the box (exit %d); the box is unchanged",
							   b->box->name, shown, f->verify_rc);
					free(shown);
				}
				break;
			case 'x':
				f->uploaded = false;
				if (strcmp(f->why, "hash") == 0)
					file_fail(b, i, BG_EREMOTE,
						  "the uploaded file's SHA-256 on the box (%.12s...) is not the local one "
						  "(did the local file change during the push?); the box is unchanged",
						  f->hashed ? f->nsha : "?");
				else if (strcmp(f->why, "bak") == 0)
					file_fail(b, i, BG_EREMOTE, "cannot keep a .bak (hard link and copy failed)%s%s; the target is unchanged",
						  b->errtail.len ? ": " : "", errtail(b));
				else if (strcmp(f->why, "nobak") == 0)
					file_fail(b, i, BG_ENOTFOUND, "there is no .bak to roll back to on the box");
				else if (strcmp(f->why, "vlink") == 0)
					file_fail(b, i, BG_EREMOTE, "cannot make the link the verifier needs in the repo's top%s%s; the box is unchanged",
						  b->errtail.len ? ": " : "", errtail(b));
				else if (strcmp(f->why, "copy") == 0)
					file_fail(b, i, BG_EREMOTE, "cannot copy the .bak%s%s", b->errtail.len ? ": " : "",
						  errtail(b));
				else
					file_fail(b, i, BG_EREMOTE, "the rename failed%s%s; the target is unchanged",
						  b->errtail.len ? ": " : "", errtail(b));
				break;
			default:
				file_fail(b, i, rc < 0 ? rc : BG_EPROTO,
					  "%s did not finish (%s): the target is the old or the new file, "
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

int sync_push_box(sync_box *b)
{
	const sync_opts *o = b->opts;
	trace(b, "start");
	int rc = connect_box(b);
	trace(b, "connected");
	if (rc < 0)
		return box_fail(b, rc);
	if (o->ready && o->ready(o->ready_ctx) != 0) {
		bg_fail(&b->err, BG_EVERIFY, "%s: not touched: the local check refused a file", b->box->name);
		return box_fail(b, BG_EVERIFY);
	}
	rc = probe(b, o->dry_run ? PROBE_DRY : PROBE_PUSH);
	trace(b, "probed");
	if (rc < 0)
		return box_fail(b, rc);
	bool any = false;
	for (size_t i = 0; i < b->plan->n; i++)
		if (b->files[i].state == SYNC_PENDING && decide_push(b, i))
			any = true;
	if (!any)
		return 0;
	for (size_t i = 0; i < b->plan->n; i++) {
		sync_file *f = &b->files[i];
		if (f->state != SYNC_PENDING)
			continue;
		rc = upload(b, i);
		if (rc < 0) {
			b->err = (bg_err){0};
			snprintf(b->err.msg, sizeof(b->err.msg), "%s", f->msg ? f->msg : "connection lost");
			return box_fail(b, rc);
		}
	}
	trace(b, "uploaded");
	rc = apply(b, o->all_or_nothing ? SYNC_DO_VERIFY : SYNC_DO_VERIFY | SYNC_DO_SWAP, SYNC_PENDING,
		   true);
	trace(b, "applied");
	if (rc < 0 && rc != BG_ETIMEOUT)
		b->rc = rc;
	return b->rc;
}

int sync_push_commit(sync_box *b)
{
	if (b->rc < 0 || !b->conn)
		return b->rc;
	int rc = apply(b, SYNC_DO_SWAP, SYNC_VERIFIED, true);
	if (rc < 0 && rc != BG_ETIMEOUT)
		b->rc = rc;
	return b->rc;
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

/* ---- status ---- */

/* Turns the scan's NUL-separated names into the box's own plan. */
static int scan_targets(sync_box *b)
{
	char *script = sync_script_scan(b->box->repo, b->nonce);
	remote_status st;
	int rc = run_script(b, script, bg_deadline_ms(300000), false, &st);
	free(script);
	if (rc < 0)
		return rc;
	if (b->norepo)
		return bg_fail(&b->err, BG_EREMOTE, "%s: the repo %s does not exist on the box", b->box->name,
			       b->box->repo);
	if (!b->end)
		return bg_fail(&b->err, BG_EPROTO, "%s: the scan did not finish%s%s", b->box->name,
			       b->errtail.len ? ": " : "", errtail(b));
	rc = sync_plan_init(&b->own_plan, b->plan->root, &b->err);
	if (rc < 0)
		return rc;
	const char *s = b->scan.buf, *end = b->scan.buf + b->scan.len;
	size_t count = 0;
	while (s && s < end && count < SCAN_TARGETS_MAX) {
		const char *z = memchr(s, '\0', (size_t)(end - s));
		if (!z)
			break;
		char *name = xstrndup(s, (size_t)(z - s));
		s = z + 1;
		char *p = name[0] == '\n' ? name + 1 : name; /* the line break before a marker */
		if (strncmp(p, "./", 2) == 0)
			p += 2;
		char *target = NULL;
		size_t pl = strlen(p);
		char *slash = strrchr(p, '/');
		char *base = slash ? slash + 1 : p;
		char *tag = strstr(base, ".boxgate-");
		if (pl > 4 && strcmp(p + pl - 4, ".bak") == 0) {
			target = xstrndup(p, pl - 4);
		} else if (base[0] == '.' && tag && strncmp(tag + 9 + 16, ".tmp", 4) == 0) {
			target = xasprintf("%.*s%.*s", (int)(base - p), p, (int)(tag - base - 1), base + 1);
		}
		if (target) {
			bg_err ignored = {0};
			if (sync_plan_add_rel(&b->own_plan, target, &ignored) == 0)
				count++;
		}
		free(target);
		free(name);
	}
	strbuf_release(&b->scan);
	rc = sync_plan_finish(&b->own_plan, b->opts->verifier_for, b->opts->verifier_ctx, &b->err);
	if (rc < 0)
		return rc;
	b->plan = &b->own_plan;
	b->files = b->own_plan.n ? xcalloc(b->own_plan.n, sizeof(*b->files)) : NULL;
	return 0;
}

int sync_status_box(sync_box *b)
{
	int rc = connect_box(b);
	if (rc < 0)
		return box_fail(b, rc);
	if (b->plan->n == 0) {
		rc = scan_targets(b);
		if (rc < 0)
			return box_fail(b, rc);
	}
	rc = probe(b, PROBE_STATUS);
	if (rc < 0)
		return box_fail(b, rc);
	if (sync_plan_wait(b->plan, &b->err) < 0)
		return box_fail(b, BG_EIO);
	for (size_t i = 0; i < b->plan->n; i++) {
		const sync_item *it = item(b, i);
		sync_file *f = &b->files[i];
		f->bak_after = f->btype == 'F';
		switch (f->rtype) {
		case 'F':
			if (!it->local)
				f->state = SYNC_NO_LOCAL;
			else if (f->rsha[0] && strcmp(f->rsha, it->sha) == 0)
				f->state = SYNC_SAME;
			else
				f->state = SYNC_DIFFERS;
			break;
		case 'M': f->state = SYNC_MISSING; break;
		default: {
			const char *what = f->rtype == 'D' ? "a directory" : f->rtype == 'L' ? "a symlink"
					   : f->rtype == 'U'			   ? "unreadable"
										   : "not a regular file";
			f->state = SYNC_DIFFERS;
			f->msg = xasprintf("%s on the box", what);
		}
		}
	}
	return 0;
}

/* ---- rollback ---- */

int sync_rollback_box(sync_box *b)
{
	const sync_opts *o = b->opts;
	int rc = connect_box(b);
	if (rc < 0)
		return box_fail(b, rc);
	rc = probe(b, o->dry_run ? PROBE_DRY : PROBE_ROLLBACK);
	if (rc < 0)
		return box_fail(b, rc);
	bool any = false;
	for (size_t i = 0; i < b->plan->n; i++) {
		sync_file *f = &b->files[i];
		const sync_item *it = item(b, i);
		if (f->btype != 'F') {
			file_fail(b, i, BG_ENOTFOUND, "%s", f->btype == '-' ? "there is no .bak on the box to roll back to"
								     : "its .bak on the box is not a regular file");
			continue;
		}
		if (f->rtype == 'D' || f->rtype == 'L' || f->rtype == 'O') {
			file_fail(b, i, BG_EREMOTE, "the target on the box is not a regular file");
			continue;
		}
		if (f->parent != 'i') {
			file_fail(b, i, BG_EUSAGE, "its directory on the box leads out of the repo");
			continue;
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
	rc = apply(b, SYNC_DO_ROLLBACK, SYNC_PENDING, true);
	if (rc < 0 && rc != BG_ETIMEOUT)
		b->rc = rc;
	return b->rc;
}
