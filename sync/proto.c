/* The result lines of the scripts sync/ runs on a box: "@NONCE WORD ..."
 * (internal.h). One table holds every word and its handler; a unit test
 * checks that the scripts (sync/sh/) print only these words and all of them. */
#include "sync/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/lines.h"
#include "base/xmalloc.h"

#define ERRTAIL_MAX    2048
#define VERIFY_OUT_MAX (64 * 1024)
#define SCAN_MAX       (16 << 20)

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

bool sync_hex64(const char *s, char out[BG_SHA256_HEX_LEN + 1])
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
static void start_block(sync_box *b, sync_block which, const char *count)
{
	long want = strtol(count, NULL, 10);
	free(b->block_idx);
	b->block_idx = xcalloc(b->batch_n ? b->batch_n : 1, sizeof(size_t));
	b->block_n = b->block_pos = 0;
	for (size_t k = 0; k < b->batch_n; k++) {
		size_t i = b->batch[k];
		if (b->files[i].rtype != SYNC_FT_FILE)
			continue;
		if (which == SYNC_BLOCK_HASHES && sync_item_big(sync_box_item(b, i)))
			continue;
		b->block_idx[b->block_n++] = i;
	}
	if (want != (long)b->block_n) {
		b->proto_err = true;
		b->block = SYNC_BLOCK_NONE;
		return;
	}
	b->block = b->block_n ? which : SYNC_BLOCK_NONE;
}

static void block_line(sync_box *b, const char *line, size_t len)
{
	size_t i = b->block_idx[b->block_pos++];
	sync_file *f = &b->files[i];
	char buf[128];
	snprintf(buf, sizeof(buf), "%.*s", (int)(len < 127 ? len : 127), line);
	if (b->block == SYNC_BLOCK_STATS) {
		char *end;
		f->rmode = (unsigned)strtoul(buf, &end, 8) & 07777;
		f->rsize = strtoull(end, NULL, 10);
		f->have_stat = true;
	} else {
		const char *h = buf[0] == '\\' ? buf + 1 : buf;
		if (strlen(h) < BG_SHA256_HEX_LEN || !sync_hex64(h, f->rsha))
			b->proto_err = true;
	}
	if (b->block_pos >= b->block_n)
		b->block = SYNC_BLOCK_NONE;
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

void sync_verify_output_end(sync_box *b)
{
	size_t i = (size_t)b->vfile;
	sync_file *f = &b->files[i];
	/* The verifier saw the temporary file: show the target's name. */
	if (f->vpath)
		replace_all(&b->vbuf, f->vpath, sync_box_item(b, i)->rel);
	if (f->temp) {
		char *dotted = xasprintf("./%s", f->temp);
		replace_all(&b->vbuf, dotted, sync_box_item(b, i)->rel);
		replace_all(&b->vbuf, f->temp, sync_box_item(b, i)->rel);
		free(dotted);
	}
	while (b->vbuf.len && b->vbuf.buf[b->vbuf.len - 1] == '\n')
		b->vbuf.buf[--b->vbuf.len] = '\0';
	free(f->verify_out);
	f->verify_out = strbuf_detach(&b->vbuf);
	b->vfile = -1;
}

/* ---- the words ---- */

static sync_ftype ftype_of(char c)
{
	switch (c) {
	case 'F': return SYNC_FT_FILE;
	case 'M':
	case '-': return SYNC_FT_MISSING;
	case 'D': return SYNC_FT_DIR;
	case 'L': return SYNC_FT_SYMLINK;
	case 'O': return SYNC_FT_OTHER;
	case 'U': return SYNC_FT_UNREADABLE;
	default: return SYNC_FT_UNKNOWN;
	}
}

static sync_parent parent_of(char c)
{
	return c == 'i'   ? SYNC_PARENT_INSIDE
	       : c == 'o' ? SYNC_PARENT_OUTSIDE
	       : c == 'e' ? SYNC_PARENT_UNREACHABLE
			  : SYNC_PARENT_UNKNOWN;
}

static sync_step step_of(const char *s)
{
	static const struct {
		const char *name;
		sync_step step;
	} steps[] = {{"hash", SYNC_STEP_HASH},   {"bak", SYNC_STEP_BAK},
		     {"nobak", SYNC_STEP_NOBAK}, {"copy", SYNC_STEP_COPY},
		     {"vlink", SYNC_STEP_VLINK}, {"mv", SYNC_STEP_MV},
		     {"same", SYNC_STEP_SAME},   {"keep", SYNC_STEP_KEEP}};
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++)
		if (strcmp(s, steps[k].name) == 0)
			return steps[k].step;
	return SYNC_STEP_MV;
}

static void on_repo(sync_box *b, size_t i, const char *rest)
{
	(void)i;
	free(b->repo_abs);
	b->repo_abs = xstrdup(rest);
}

static void on_norepo(sync_box *b, size_t i, const char *rest)
{
	(void)i, (void)rest;
	b->norepo = true;
}

static void on_lock(sync_box *b, size_t i, const char *rest)
{
	(void)i;
	b->lock = rest[0] == 'o'   ? SYNC_LOCK_OURS
		  : rest[0] == 'b' ? SYNC_LOCK_BUSY
				   : SYNC_LOCK_NONE;
}

static void on_end(sync_box *b, size_t i, const char *rest)
{
	(void)i, (void)rest;
	b->end = true;
	b->in_scan = false;
}

static void on_done(sync_box *b, size_t i, const char *rest)
{
	(void)i, (void)rest;
	b->cmd_done = true;
}

static void on_scan(sync_box *b, size_t i, const char *rest)
{
	(void)i, (void)rest;
	b->in_scan = true;
}

/* The manifest's lines follow, each after a '|'; "big": it is too large. */
static void on_pushed(sync_box *b, size_t i, const char *rest)
{
	(void)i;
	b->in_scan = false;
	b->have_pushed = true;
	b->pushed_big = strcmp(rest, "big") == 0;
	b->in_pushed = !b->pushed_big;
	b->pushed_partial = false;
	strbuf_reset(&b->pushed);
}

/* One line of a block whose lines the box sent each after a '|' (so none can
 * pass for a marker), or a piece of a long one, added to `into`; false when
 * it would take `into` past `max` bytes (it is dropped). */
static bool piped_line(strbuf *into, bool *partial, size_t max, const char *line, size_t len,
		       bool whole)
{
	bool start = !*partial;
	*partial = !whole;
	if (start) {
		if (len == 0 || line[0] != '|')
			return true;
		line++;
		len--;
	}
	if (into->len + len + 1 > max)
		return false;
	strbuf_add(into, line, len);
	if (whole)
		strbuf_addch(into, '\n');
	return true;
}

static void on_stats(sync_box *b, size_t i, const char *rest)
{
	(void)i;
	start_block(b, SYNC_BLOCK_STATS, rest);
}

static void on_hashes(sync_box *b, size_t i, const char *rest)
{
	(void)i;
	start_block(b, SYNC_BLOCK_HASHES, rest);
}

/* "TYPE BAKTYPE PARENT WRITABLE DIREXISTS" */
static void on_f(sync_box *b, size_t i, const char *rest)
{
	sync_file *f = &b->files[i];
	char t, k, p;
	int w, e;
	if (sscanf(rest, "%c %c %c %d %d", &t, &k, &p, &w, &e) != 5) {
		b->proto_err = true;
		return;
	}
	f->rtype = ftype_of(t);
	f->btype = ftype_of(k);
	f->parent = parent_of(p);
	f->writable = w == 1;
	f->dir_exists = e == 1;
}

/* "r 0123456789abcdef.tmp" (r: removed, k: kept) */
static void on_t(sync_box *b, size_t i, const char *rest)
{
	sync_file *f = &b->files[i];
	f->stale_found++;
	if (rest[0] == 'r')
		f->stale_removed++;
}

static void on_big_hash(sync_box *b, size_t i, const char *rest)
{
	if (!sync_hex64(rest, b->files[i].rsha))
		b->proto_err = true;
}

static void on_big_size(sync_box *b, size_t i, const char *rest)
{
	b->files[i].rsize = strtoull(rest, NULL, 10);
}

static void on_temp_hash(sync_box *b, size_t i, const char *rest)
{
	sync_file *f = &b->files[i];
	f->hashed = sync_hex64(rest, f->nsha);
}

static void on_step_failed(sync_box *b, size_t i, const char *rest)
{
	sync_file *f = &b->files[i];
	f->done = SYNC_DONE_STEP_FAILED;
	f->failed_step = step_of(rest);
}

/* "RC", then the verifier's output up to "vend I" */
static void on_refused(sync_box *b, size_t i, const char *rest)
{
	sync_file *f = &b->files[i];
	f->done = SYNC_DONE_REFUSED;
	f->verify_rc = atoi(rest);
	strbuf_reset(&b->vbuf);
	b->vpartial = false;
	b->vfile = (long)i;
}

static void on_vend(sync_box *b, size_t i, const char *rest)
{
	(void)rest;
	if (b->vfile == (long)i)
		sync_verify_output_end(b);
}

static void on_verified(sync_box *b, size_t i, const char *rest)
{
	(void)rest;
	b->files[i].done = SYNC_DONE_VERIFIED;
}

/* "OLD-UID:GID NEW-UID:GID" */
static void on_owner_kept_not(sync_box *b, size_t i, const char *rest)
{
	sync_file *f = &b->files[i];
	char old_owner[32] = "", new_owner[32] = "";
	if (sscanf(rest, "%31s %31s", old_owner, new_owner) != 2) {
		b->proto_err = true;
		return;
	}
	free(f->warn);
	char *shown = sync_path_display(sync_box_item(b, i)->rel);
	f->warn = xasprintf("%s: %s: could not keep the replaced file's owner and group %s "
			    "(not allowed to chown); the new file belongs to %s",
			    b->box->name, shown, old_owner, new_owner);
	free(shown);
}

/* The manifest .boxgate/pushed: "ok|x SKIPPED" */
static void on_manifest(sync_box *b, size_t i, const char *rest)
{
	(void)i;
	char how[4] = "";
	int skipped = 0;
	if (sscanf(rest, "%3s %d", how, &skipped) != 2 || skipped < 0 ||
	    (strcmp(how, "ok") != 0 && strcmp(how, "x") != 0)) {
		b->proto_err = true;
		return;
	}
	b->manifest_failed = b->manifest_failed || how[0] == 'x';
	b->manifest_skipped += skipped;
}

/* "created" or "replaced" */
static void on_swapped(sync_box *b, size_t i, const char *rest)
{
	sync_file *f = &b->files[i];
	f->done = SYNC_DONE_SWAPPED;
	f->replaced = strcmp(rest, "replaced") == 0;
}

/* Every word of the result lines, the scripts' side checked against it by
 * test_sync_script. `indexed`: "WORD INDEX REST", INDEX a plan index. */
static const struct sync_word {
	const char *name;
	bool indexed;
	void (*on)(sync_box *b, size_t i, const char *rest); /* NULL: sent to the box */
} words[] = {
	{"repo", false, on_repo},       /* the repo's resolved path */
	{"norepo", false, on_norepo},   /* no such repo */
	{"lock", false, on_lock},       /* o ours, b busy, n no flock */
	{"stats", false, on_stats},     /* COUNT, then the block */
	{"hashes", false, on_hashes},   /* COUNT, then the block */
	{"scan", false, on_scan},       /* NUL-separated names follow */
	{"pushed", false, on_pushed},   /* the manifest's lines follow */
	{"end", false, on_end},         /* the probe (or scan) is complete */
	{"done", false, on_done},       /* a step sent to the holder is complete */
	{"go", false, NULL},            /* to the holder: the step sent is whole */
	{"f", true, on_f},              /* a target's state */
	{"t", true, on_t},              /* a stale temporary file */
	{"H", true, on_big_hash},       /* a big target's hash */
	{"S", true, on_big_size},       /* a big target's differing size */
	{"h", true, on_temp_hash},      /* the uploaded file's hash */
	{"x", true, on_step_failed},    /* a step failed */
	{"v", true, on_refused},        /* the verifier refused */
	{"vend", true, on_vend},        /* the end of its output */
	{"vok", true, on_verified},     /* verified */
	{"w", true, on_owner_kept_not}, /* the owner could not be kept */
	{"ok", true, on_swapped},       /* swapped in */
	{"m", false, on_manifest},      /* the manifest .boxgate/pushed written */
};
#define N_WORDS (sizeof(words) / sizeof(words[0]))

const char *sync_proto_word(size_t k)
{
	return k < N_WORDS ? words[k].name : NULL;
}

char *sync_proto_go_line(const sync_box *b)
{
	return xasprintf("\n@%s %s\n", b->nonce, "go");
}

static void marker(sync_box *b, const char *m)
{
	const char *rest = strchr(m, ' ');
	size_t wl = rest ? (size_t)(rest - m) : strlen(m);
	rest = rest ? rest + 1 : "";
	for (size_t k = 0; k < N_WORDS; k++) {
		const struct sync_word *w = &words[k];
		if (!w->on || strlen(w->name) != wl || memcmp(w->name, m, wl) != 0)
			continue;
		size_t i = 0;
		if (w->indexed && !parse_index(b, &rest, &i)) {
			b->proto_err = true;
			return;
		}
		w->on(b, i, rest);
		return;
	}
	b->proto_err = true;
}

void sync_on_line(void *ctx, remote_stream s, const char *line, size_t len, int flags)
{
	sync_box *b = ctx;
	bool whole = !(flags & LINE_PARTIAL);
	if (s == REMOTE_STDERR) {
		if (b->errtail.len + len > ERRTAIL_MAX) {
			const char *cut =
				b->errtail.len ? strchr(b->errtail.buf + b->errtail.len / 2, '\n')
					       : NULL;
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
	if (len > nl + 2 && line[0] == '@' && memcmp(line + 1, b->nonce, nl) == 0 &&
	    line[nl + 1] == ' ' && whole) {
		char *m = xstrndup(line + nl + 2, len - nl - 2);
		b->in_pushed = false;
		if (b->vfile >= 0 && strncmp(m, "vend ", 5) != 0)
			sync_verify_output_end(b);
		marker(b, m);
		free(m);
		return;
	}
	if (b->block != SYNC_BLOCK_NONE) {
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
	/* The manifest: past SYNC_MANIFEST_MAX bytes the rest is dropped, as the
	 * box promised not to send it. */
	if (b->in_pushed) {
		if (!piped_line(&b->pushed, &b->pushed_partial, SYNC_MANIFEST_MAX, line, len,
				whole))
			b->pushed_big = true;
		return;
	}
	if (b->vfile >= 0) /* verifier output, kept up to VERIFY_OUT_MAX bytes */
		piped_line(&b->vbuf, &b->vpartial, VERIFY_OUT_MAX, line, len, whole);
	/* Anything else (a chatty login shell) is ignored. */
}
