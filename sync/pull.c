/* boxgate pull's engine: walk on the box over SFTP, hash on the box, copy
 * into temporary files here and rename them into place (pull.h). */
#include "sync/pull.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/json.h"
#include "base/lines.h"
#include "base/path.h"
#include "base/quote.h"
#include "base/strbuf.h"
#include "base/timer.h"
#include "base/xmalloc.h"
#include "remote/sftp.h"
#include "sync/pull_temp.h"
#include "sync/sync.h"

#define PULL_DEPTH_MAX    32
#define PULL_FILES_MAX    100000
#define PULL_OP_MS        60000
#define PULL_HASH_MS      (30 * 60 * 1000)
#define PULL_SCRIPT_MAX   (96 * 1024)
#define PULL_PROGRESS_MIN (1u << 20)

static const struct {
	const char *name, *key;
} state_names[SYNC_PULL_STATE_COUNT] = {
	[SYNC_PULL_PENDING] = {"not pulled", "pending"},
	[SYNC_PULL_PULLED] = {"pulled", "pulled"},
	[SYNC_PULL_UNCHANGED] = {"unchanged", "unchanged"},
	[SYNC_PULL_SKIPPED] = {"skipped", "skipped"},
	[SYNC_PULL_REFUSED] = {"refused", "refused"},
	[SYNC_PULL_MISSING] = {"missing", "missing"},
	[SYNC_PULL_FAILED] = {"failed", "failed"},
};

const char *sync_pull_state_name(sync_pull_state s)
{
	return state_names[s].name;
}

const char *sync_pull_state_key(sync_pull_state s)
{
	return state_names[s].key;
}

bool sync_pull_state_failed(sync_pull_state s)
{
	return s == SYNC_PULL_PENDING || s == SYNC_PULL_REFUSED || s == SYNC_PULL_MISSING ||
	       s == SYNC_PULL_FAILED;
}

int sync_pull_check_path(const char *path, char **norm, bg_err *err)
{
	*norm = NULL;
	if (path[0] && strspn(path, "./") == strlen(path) && path[0] != '/' &&
	    !strstr(path, "..")) {
		*norm = xstrdup(".");
		return 0;
	}
	return bg_path_normalize_rel(path, norm, err);
}

void sync_pull_box_init(sync_pull_box *b, const sync_target *box, size_t index,
			const sync_pull_opts *o, char *const *paths, size_t n_paths,
			remote_conn *conn)
{
	memset(b, 0, sizeof(*b));
	b->view = *box;
	b->box = &b->view;
	b->index = index;
	b->opts = o;
	b->paths = paths;
	b->n_paths = n_paths;
	b->conn = conn;
}

void sync_pull_box_release(sync_pull_box *b)
{
	for (size_t i = 0; i < b->n; i++) {
		free(b->files[i].rel);
		free(b->files[i].local);
		free(b->files[i].msg);
	}
	free(b->files);
	for (size_t i = 0; i < b->n_cleaned; i++)
		free(b->cleaned[i]);
	free(b->cleaned);
	if (b->own_conn)
		remote_close(b->conn);
	free(b->repo_abs);
	memset(b, 0, sizeof(*b));
}

void sync_pull_box_release_conn(sync_pull_box *b)
{
	if (b->own_conn)
		remote_close(b->conn);
	b->conn = NULL;
	b->own_conn = false;
}

static sync_pull_file *add_file(sync_pull_box *b, const char *rel, sync_pull_state st,
				const char *msg)
{
	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 16;
		b->files = xrealloc(b->files, b->cap * sizeof(*b->files));
	}
	sync_pull_file *f = &b->files[b->n++];
	memset(f, 0, sizeof(*f));
	f->rel = xstrdup(rel);
	f->state = st;
	f->msg = msg ? xstrdup(msg) : NULL;
	return f;
}

static void set_msg(sync_pull_file *f, sync_pull_state st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void set_msg(sync_pull_file *f, sync_pull_state st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *m = NULL;
	if (vasprintf(&m, fmt, ap) < 0)
		abort();
	va_end(ap);
	free(f->msg);
	f->msg = m;
	f->state = st;
}

/* ---- the walk ---- */

static char *abs_of(const sync_pull_box *b, const char *rel)
{
	if (strcmp(rel, ".") == 0)
		return xstrdup(b->repo_abs);
	return xasprintf("%s/%s", b->repo_abs, rel);
}

static char *join_rel(const char *dir, const char *name)
{
	if (strcmp(dir, ".") == 0)
		return xstrdup(name);
	return xasprintf("%s/%s", dir, name);
}

static bool inside_repo(const sync_pull_box *b, const char *real)
{
	size_t n = strlen(b->repo_abs);
	if (strcmp(b->repo_abs, "/") == 0)
		return true;
	return strncmp(real, b->repo_abs, n) == 0 && (real[n] == '/' || real[n] == '\0');
}

static bool full(sync_pull_box *b)
{
	size_t max = b->opts->max_files ? b->opts->max_files : PULL_FILES_MAX;
	if (b->n < max)
		return false;
	b->walk_capped = true;
	return true;
}

/* Where `rel` really leads, checked against the repo: 0 inside (or allowed),
 * 1 refused (a file entry says why), negative on a connection error. */
static int check_real(sync_pull_box *b, const char *rel, const char *abs, bool *dangling)
{
	char *real = NULL;
	bg_err err = {0};
	*dangling = false;
	int rc = remote_fs_realpath(b->conn, abs, &real, bg_deadline_ms(PULL_OP_MS), &err);
	if (rc == BG_ECONNECT || rc == BG_ETIMEOUT) {
		b->rc = rc;
		b->err = err;
		return rc;
	}
	if (rc < 0) {
		*dangling = true;
		return 0;
	}
	int out = 0;
	if (!inside_repo(b, real) && !b->opts->follow_links) {
		char *shown = sync_path_display(real);
		add_file(b, rel, SYNC_PULL_REFUSED, NULL);
		set_msg(&b->files[b->n - 1], SYNC_PULL_REFUSED,
			"a symlink leading out of the repo (to %s): refused (--follow-links pulls "
			"it)",
			shown);
		free(shown);
		out = 1;
	}
	free(real);
	return out;
}

static int visit(sync_pull_box *b, const char *rel, bool explicit, int depth,
		 const remote_dirent *known);

/* Every entry of directory `rel` (already checked). */
static int walk_dir(sync_pull_box *b, const char *rel, int depth)
{
	char *abs = abs_of(b, rel);
	remote_dirent *ents = NULL;
	size_t n = 0;
	bg_err err = {0};
	int rc = remote_fs_readdir(b->conn, abs, &ents, &n, bg_deadline_ms(PULL_OP_MS), &err);
	free(abs);
	if (rc == BG_ECONNECT || rc == BG_ETIMEOUT) {
		b->rc = rc;
		b->err = err;
		return rc;
	}
	if (rc < 0) {
		sync_pull_file *f = add_file(b, rel, SYNC_PULL_FAILED, NULL);
		set_msg(f, SYNC_PULL_FAILED, "cannot read the directory: %s", err.msg);
		return 0;
	}
	for (size_t i = 0; i < n && rc == 0 && !full(b); i++) {
		if (sync_is_boxgate_temp(ents[i].name))
			continue; /* a push's or pull's file in the making: never a file */
		char *child = join_rel(rel, ents[i].name);
		rc = visit(b, child, false, depth + 1, &ents[i]);
		free(child);
	}
	remote_dirents_free(ents, n);
	return rc;
}

/* Adds what `rel` is: a file, the files under a directory, or why not.
 * `known`: its directory entry, when a listing gave one (no lstat then). */
static int visit(sync_pull_box *b, const char *rel, bool explicit, int depth,
		 const remote_dirent *known)
{
	char *abs = abs_of(b, rel);
	remote_fs_stat st = {0};
	bg_err err = {0};
	int rc = 0;
	if (known && known->type != REMOTE_FS_OTHER)
		st = (remote_fs_stat){known->type, known->mode, known->size};
	else
		rc = remote_fs_lstat(b->conn, abs, &st, bg_deadline_ms(PULL_OP_MS), &err);
	if (rc < 0) {
		if (rc == BG_ECONNECT || rc == BG_ETIMEOUT) {
			b->rc = rc;
			b->err = err;
		} else {
			sync_pull_file *f = add_file(b, rel, SYNC_PULL_FAILED, NULL);
			set_msg(f, SYNC_PULL_FAILED, "%s", err.msg);
			rc = 0;
		}
		goto out;
	}
	if (st.type == REMOTE_FS_MISSING) {
		if (explicit)
			add_file(b, rel, SYNC_PULL_MISSING, "no such file on the box");
		goto out;
	}
	bool link = st.type == REMOTE_FS_LINK;
	if (explicit || link) {
		/* An explicit path may pass through linked directories; an entry
		 * found in a checked directory only through itself. */
		bool dangling = false;
		rc = check_real(b, rel, abs, &dangling);
		if (rc != 0) {
			rc = rc > 0 ? 0 : rc;
			goto out;
		}
		if (dangling) {
			if (explicit && !link)
				add_file(b, rel, SYNC_PULL_MISSING, "no such file on the box");
			else
				add_file(b, rel, SYNC_PULL_SKIPPED, "a symlink to nothing");
			goto out;
		}
		if (link && (rc = remote_fs_follow(b->conn, abs, &st, bg_deadline_ms(PULL_OP_MS),
						   &err)) < 0) {
			b->rc = rc;
			b->err = err;
			goto out;
		}
	}
	if (st.type == REMOTE_FS_FILE) {
		sync_pull_file *f = add_file(b, rel, SYNC_PULL_PENDING, NULL);
		f->size = st.size;
		f->mode = st.mode;
	} else if (st.type == REMOTE_FS_DIR) {
		if (link && !explicit && !b->opts->follow_links)
			add_file(b, rel, SYNC_PULL_SKIPPED,
				 "a symlink to a directory: not followed (--follow-links follows "
				 "it)");
		else if (depth >= PULL_DEPTH_MAX)
			add_file(b, rel, SYNC_PULL_SKIPPED, "too deep: not descended into");
		else
			rc = walk_dir(b, rel, depth);
	} else {
		add_file(b, rel, SYNC_PULL_SKIPPED, "not a regular file");
	}
out:
	free(abs);
	return rc;
}

static bool has_wildcard(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == '*' || s[i] == '?' || s[i] == '[')
			return true;
	return false;
}

/* Expands `pattern` from component `pos` on, below directory `dir` (checked):
 * literal components are appended, wildcard ones matched against the
 * directory's entries. *matched counts what was visited. */
static int expand(sync_pull_box *b, const char *dir, const char *pattern, size_t *matched)
{
	const char *slash = strchr(pattern, '/');
	size_t len = slash ? (size_t)(slash - pattern) : strlen(pattern);
	const char *rest = slash ? slash + 1 : NULL;
	if (!has_wildcard(pattern, slash ? len : strlen(pattern))) {
		/* Literal up to the next wildcard component: one path. */
		const char *p = pattern;
		const char *wild = NULL;
		while (p) {
			const char *s = strchr(p, '/');
			size_t l = s ? (size_t)(s - p) : strlen(p);
			if (has_wildcard(p, l)) {
				wild = p;
				break;
			}
			p = s ? s + 1 : NULL;
		}
		char *lit =
			wild ? xstrndup(pattern, (size_t)(wild - pattern - 1)) : xstrdup(pattern);
		char *rel = join_rel(dir, lit);
		free(lit);
		int rc;
		if (!wild) {
			(*matched)++;
			rc = visit(b, rel, true, 0, NULL);
			free(rel);
			return rc < 0 ? rc : 0;
		}
		/* The directory the wildcard reads must itself lie inside. */
		char *abs = abs_of(b, rel);
		bool dangling = false;
		rc = check_real(b, rel, abs, &dangling);
		free(abs);
		if (rc == 0 && !dangling)
			rc = expand(b, rel, wild, matched);
		else if (rc > 0)
			(*matched)++, rc = 0;
		free(rel);
		return rc;
	}
	char *pat = xstrndup(pattern, len);
	char *abs = abs_of(b, dir);
	remote_dirent *ents = NULL;
	size_t n = 0;
	bg_err err = {0};
	int rc = remote_fs_readdir(b->conn, abs, &ents, &n, bg_deadline_ms(PULL_OP_MS), &err);
	free(abs);
	if (rc < 0) {
		if (rc == BG_ECONNECT || rc == BG_ETIMEOUT) {
			b->rc = rc;
			b->err = err;
		} else {
			rc = 0; /* not a directory: the pattern matches nothing here */
		}
		free(pat);
		return rc;
	}
	for (size_t i = 0; i < n && rc == 0 && !full(b); i++) {
		if (fnmatch(pat, ents[i].name, FNM_PERIOD) != 0)
			continue;
		char *child = join_rel(dir, ents[i].name);
		if (!rest) {
			(*matched)++;
			rc = visit(b, child, false, 0, &ents[i]);
		} else if (ents[i].type == REMOTE_FS_DIR ||
			   (ents[i].type == REMOTE_FS_LINK && b->opts->follow_links)) {
			rc = expand(b, child, rest, matched);
		} else if (ents[i].type == REMOTE_FS_LINK) {
			char *cabs = abs_of(b, child);
			bool dangling = false;
			rc = check_real(b, child, cabs, &dangling);
			free(cabs);
			if (rc == 0 && !dangling)
				rc = expand(b, child, rest, matched);
			else if (rc > 0)
				(*matched)++, rc = 0;
		}
		free(child);
	}
	remote_dirents_free(ents, n);
	free(pat);
	return rc < 0 ? rc : 0;
}

static int cmp_file(const void *a, const void *b)
{
	const sync_pull_file *x = a, *y = b;
	return strcmp(x->rel, y->rel);
}

/* Files in path order, each once (two patterns may match one file). */
static void sort_unique(sync_pull_box *b)
{
	if (b->n > 1) /* b->files is NULL when there are none */
		qsort(b->files, b->n, sizeof(*b->files), cmp_file);
	size_t k = 0;
	for (size_t i = 0; i < b->n; i++) {
		if (k && strcmp(b->files[k - 1].rel, b->files[i].rel) == 0) {
			free(b->files[i].rel);
			free(b->files[i].local);
			free(b->files[i].msg);
			continue;
		}
		b->files[k++] = b->files[i];
	}
	b->n = k;
}

/* ---- on the box ---- */

/* The repo's real path on the box. */
static int resolve_repo(sync_pull_box *b)
{
	strbuf cmd = STRBUF_INIT;
	strbuf_addstr(&cmd, "cd -- ");
	bg_quote_path(&cmd, b->box->repo);
	strbuf_addstr(&cmd, " 2>/dev/null && cd -P . && pwd");
	char *out = NULL;
	size_t len = 0;
	remote_status st;
	int rc = remote_capture(b->conn, strbuf_str(&cmd), PATH_MAX + 2, PULL_OP_MS, &out, &len,
				&st, &b->err);
	strbuf_release(&cmd);
	if (rc < 0)
		goto out;
	if (st.how != REMOTE_EXITED || st.code != 0 || len < 2 || out[0] != '/' ||
	    out[len - 1] != '\n' || memchr(out, '\0', len)) {
		rc = bg_fail(&b->err, BG_ENOTFOUND, "%s: no repo at %s on the box", b->box->name,
			     b->box->repo);
		goto out;
	}
	b->repo_abs = xstrndup(out, len - 1);
out:
	free(out);
	return rc;
}

struct hash_parse {
	sync_pull_box *b;
	const size_t *idx; /* the files the script covers, in its order */
	size_t n, next;    /* next: the first not yet answered */
};

/* One line of sha256sum: "HASH  NAME", or "\\HASH  NAME" with NAME's
 * backslash, newline and carriage return escaped. Lines come in the order of
 * the names given, a file that cannot be read having none. */
static void on_hash_line(void *ctx, remote_stream stream, const char *line, size_t len, int flags)
{
	struct hash_parse *hp = ctx;
	if (stream != REMOTE_STDOUT || (flags & LINE_PARTIAL))
		return;
	bool esc = len && line[0] == '\\';
	const char *h = line + esc;
	size_t rest = len - esc;
	if (rest < BG_SHA256_HEX_LEN + 3 || strspn(h, "0123456789abcdef") < BG_SHA256_HEX_LEN ||
	    h[BG_SHA256_HEX_LEN] != ' ' ||
	    (h[BG_SHA256_HEX_LEN + 1] != ' ' && h[BG_SHA256_HEX_LEN + 1] != '*'))
		return;
	const char *nm = h + BG_SHA256_HEX_LEN + 2;
	size_t nl = rest - BG_SHA256_HEX_LEN - 2;
	char *name = xmalloc(nl + 1);
	size_t k = 0;
	for (size_t i = 0; i < nl; i++) {
		if (esc && nm[i] == '\\' && i + 1 < nl) {
			char c = nm[++i];
			name[k++] = c == 'n' ? '\n' : c == 'r' ? '\r' : c;
		} else {
			name[k++] = nm[i];
		}
	}
	name[k] = '\0';
	for (size_t j = hp->next; j < hp->n; j++) {
		sync_pull_file *f = &hp->b->files[hp->idx[j]];
		if (strcmp(f->rel, name) == 0) {
			memcpy(f->sha, h, BG_SHA256_HEX_LEN);
			f->sha[BG_SHA256_HEX_LEN] = '\0';
			hp->next = j + 1;
			break;
		}
	}
	free(name);
}

/* Runs one hashing script over files idx[0..n): one sha256sum for them all
 * (a process per file costs more than the hashing of small files). */
static int hash_batch(sync_pull_box *b, const size_t *idx, size_t n)
{
	strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, "cd -- ");
	bg_quote(&sb, b->repo_abs);
	strbuf_addstr(&sb, " || exit 3\nexec sha256sum --");
	for (size_t k = 0; k < n; k++) {
		strbuf_addch(&sb, ' ');
		bg_quote(&sb, b->files[idx[k]].rel);
	}
	strbuf_addstr(&sb, " 2>/dev/null\n");
	struct hash_parse hp = {b, idx, n, 0};
	remote_status st;
	bg_err err = {0};
	int rc = remote_run(b->conn, strbuf_str(&sb), on_hash_line, &hp, PULL_HASH_MS, &st, &err);
	strbuf_release(&sb);
	if (rc < 0) {
		b->rc = rc;
		b->err = err;
	}
	return rc;
}

/* Hashes every pending file on the box, in scripts of bounded size. */
static int hash_files(sync_pull_box *b)
{
	size_t *idx = xcalloc(b->n ? b->n : 1, sizeof(*idx));
	size_t n = 0, bytes = 0;
	int rc = 0;
	for (size_t i = 0; i <= b->n && rc == 0; i++) {
		bool last = i == b->n;
		if (!last && b->files[i].state != SYNC_PULL_PENDING)
			continue;
		size_t need = last ? 0 : strlen(b->files[i].rel) * 4 + 16;
		if (n && (last || bytes + need > PULL_SCRIPT_MAX)) {
			rc = hash_batch(b, idx, n);
			n = bytes = 0;
		}
		if (!last) {
			idx[n++] = i;
			bytes += need;
		}
	}
	free(idx);
	return rc;
}

/* ---- here ---- */

/* Opens (creating) the directory `to`/`sub` one component at a time,
 * refusing to pass through a symlink below `to`. -1 with *why set. */
static int open_dest_dir(const char *to, const char *sub, const char **why, char **where)
{
	*why = NULL;
	*where = NULL;
	/* `to` itself is the user's: made with its parents, as mkdir -p. */
	char *parents = xstrdup(to);
	for (char *p = parents + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(parents, 0777);
		*p = '/';
	}
	free(parents);
	if (mkdir(to, 0777) < 0 && errno != EEXIST) {
		*why = strerror(errno);
		*where = xstrdup(to);
		return -1;
	}
	int dfd = open(to, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		*why = strerror(errno);
		*where = xstrdup(to);
		return -1;
	}
	if (!sub)
		return dfd;
	const char *p = sub;
	while (*p) {
		const char *s = strchr(p, '/');
		size_t l = s ? (size_t)(s - p) : strlen(p);
		char *comp = xstrndup(p, l);
		if (mkdirat(dfd, comp, 0777) < 0 && errno != EEXIST) {
			*why = strerror(errno);
		} else {
			int nfd =
				openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (nfd < 0)
				*why = errno == ELOOP || errno == ENOTDIR
					       ? "a symlink or file is in the way (not followed)"
					       : strerror(errno);
			close(dfd);
			dfd = nfd;
		}
		if (*why) {
			*where = xasprintf("%s/%.*s", to, (int)(p + l - sub), sub);
			free(comp);
			if (dfd >= 0)
				close(dfd);
			return -1;
		}
		free(comp);
		p = s ? s + 1 : p + l;
	}
	return dfd;
}

/* The SHA-256 of name in dfd when it is a regular file of `size` bytes;
 * false otherwise. */
static bool local_sha(int dfd, const char *name, uint64_t size, char out[BG_SHA256_HEX_LEN + 1])
{
	struct stat sb;
	if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(sb.st_mode) ||
	    (uint64_t)sb.st_size != size)
		return false;
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	bg_sha256 *h = bg_sha256_init();
	char *buf = xmalloc(1 << 16);
	bool ok = true;
	for (;;) {
		ssize_t r = read(fd, buf, 1 << 16);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			ok = false;
		if (r <= 0)
			break;
		bg_sha256_update(h, buf, (size_t)r);
	}
	free(buf);
	close(fd);
	if (!ok) {
		bg_sha256_release(h);
		return false;
	}
	bg_sha256_final(h, out);
	return true;
}

struct sink {
	int fd;
	bg_sha256 *h;
	bg_err *err;
	const char *path;
	sync_pull_box *b;
	const sync_pull_file *f;
};

static int sink_data(void *ctx, const void *buf, size_t n)
{
	struct sink *s = ctx;
	bg_sha256_update(s->h, buf, n);
	const char *p = buf;
	while (n) {
		ssize_t w = write(s->fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return bg_fail(s->err, BG_EIO, "writing %s: %s", s->path, strerror(errno));
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void sink_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct sink *s = ctx;
	if (total >= PULL_PROGRESS_MIN && s->b->opts->progress)
		s->b->opts->progress(s->b->opts->progress_ctx, s->b, s->f, done, total);
}

/* Whether destination directory `sub` (NULL: the top) was cleaned of stale
 * temporaries in this run; marks it so. */
static bool cleaned(sync_pull_box *b, const char *sub)
{
	const char *key = sub ? sub : "";
	for (size_t i = 0; i < b->n_cleaned; i++)
		if (strcmp(b->cleaned[i], key) == 0)
			return true;
	b->cleaned = xrealloc(b->cleaned, (b->n_cleaned + 1) * sizeof(*b->cleaned));
	b->cleaned[b->n_cleaned++] = xstrdup(key);
	return false;
}

/* Copies one file into place; a failure is the file's, except a lost
 * connection (returned). */
static int fetch_one(sync_pull_box *b, sync_pull_file *f)
{
	const sync_pull_opts *o = b->opts;
	const char *slash = strrchr(f->rel, '/');
	const char *base = slash ? slash + 1 : f->rel;
	char *sub = NULL;
	if (o->box_subdir)
		sub = slash ? xasprintf("%s/%.*s", b->box->name, (int)(slash - f->rel), f->rel)
			    : xstrdup(b->box->name);
	else if (slash)
		sub = xstrndup(f->rel, (size_t)(slash - f->rel));
	f->local = o->box_subdir ? xasprintf("%s/%s/%s", o->to, b->box->name, f->rel)
				 : xasprintf("%s/%s", o->to, f->rel);
	const char *why = NULL;
	char *where = NULL;
	char *temp = NULL;
	int fd = -1, rc = 0;
	bg_sha256 *h = NULL;
	int dfd = open_dest_dir(o->to, sub, &why, &where);
	if (dfd < 0) {
		char *shown = sync_path_display(where);
		set_msg(f, SYNC_PULL_FAILED, "cannot write here: %s: %s", shown, why);
		free(shown);
		goto out;
	}
	if (!cleaned(b, sub))
		b->stale_removed += sync_pull_clean_stale(dfd);
	if (!f->sha[0]) {
		set_msg(f, SYNC_PULL_FAILED, "the box could not read or hash it");
		goto out;
	}
	char have[BG_SHA256_HEX_LEN + 1];
	if (local_sha(dfd, base, f->size, have) && strcmp(have, f->sha) == 0) {
		f->state = SYNC_PULL_UNCHANGED;
		goto out;
	}
	fd = sync_pull_temp_create(dfd, base, &temp);
	if (fd < 0) {
		set_msg(f, SYNC_PULL_FAILED, "cannot create a temporary file beside %s: %s",
			f->local, strerror(errno));
		goto out;
	}
	h = bg_sha256_init();
	bg_err err = {0};
	struct sink s = {fd, h, &err, f->local, b, f};
	remote_get_opts go = {
		.data = sink_data, .data_ctx = &s, .progress = sink_progress, .progress_ctx = &s};
	uint64_t got = 0;
	char *abs = abs_of(b, f->rel);
	rc = remote_get_file(b->conn, abs, f->size, &go, &got, &err);
	free(abs);
	b->bytes += got;
	if (rc < 0) {
		size_t bl = strlen(b->box->name);
		const char *m = err.msg;
		if (strncmp(m, b->box->name, bl) == 0 && m[bl] == ':' && m[bl + 1] == ' ')
			m += bl + 2;
		set_msg(f, SYNC_PULL_FAILED, "%s", m);
		if (rc != BG_ECONNECT && rc != BG_ETIMEOUT)
			rc = 0;
		goto out;
	}
	char sha[BG_SHA256_HEX_LEN + 1];
	bg_sha256_final(h, sha);
	h = NULL;
	if (strcmp(sha, f->sha) != 0) {
		set_msg(f, SYNC_PULL_FAILED,
			"changed on the box while it was pulled (sha256 %.12s there, %.12s "
			"received): "
			"not kept",
			f->sha, sha);
		goto out;
	}
	f->size = got;
	if (fchmod(fd, f->mode & 0777) < 0 || fsync(fd) < 0) {
		set_msg(f, SYNC_PULL_FAILED, "writing %s: %s", f->local, strerror(errno));
		goto out;
	}
	/* renamed while its lock is held: a stale-temp cleaner never takes it */
	if (renameat(dfd, temp, dfd, base) < 0) {
		set_msg(f, SYNC_PULL_FAILED, "cannot rename into %s: %s", f->local,
			strerror(errno));
		goto out;
	}
	free(temp);
	temp = NULL;
	int cfd = fd;
	fd = -1;
	if (close(cfd) < 0) {
		set_msg(f, SYNC_PULL_FAILED, "writing %s: %s", f->local, strerror(errno));
		goto out;
	}
	f->state = SYNC_PULL_PULLED;
out:
	bg_sha256_release(h);
	if (fd >= 0)
		close(fd);
	if (temp && dfd >= 0)
		unlinkat(dfd, temp, 0);
	if (dfd >= 0)
		close(dfd);
	free(temp);
	free(where);
	free(sub);
	return rc;
}

int sync_pull_box_run(sync_pull_box *b)
{
	const char *name = b->box->name;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		b->rc = bg_fail(&b->err, BG_EUSAGE, "%s: a box name that cannot be a directory",
				name);
		return b->rc;
	}
	if (!b->conn) {
		remote_connect_opts co = {.log = b->opts->log,
					  .log_ctx = b->opts->log_ctx,
					  .accept_new = b->opts->accept_new,
					  .warm = true,
					  .trace = b->opts->trace};
		b->rc = remote_connect(b->box->connect, &co, &b->conn, &b->err);
		if (b->rc < 0)
			return b->rc;
		b->own_conn = true;
	}
	if ((b->rc = resolve_repo(b)) < 0)
		return b->rc;
	for (size_t i = 0; i < b->n_paths && b->rc == 0 && !full(b); i++) {
		size_t matched = 0, before = b->n;
		if (expand(b, ".", b->paths[i], &matched) < 0)
			break;
		if (!matched && b->n == before)
			add_file(b, b->paths[i], SYNC_PULL_MISSING, "no such file on the box");
	}
	sort_unique(b);
	if (b->rc == 0 && b->walk_capped)
		b->rc = bg_fail(&b->err, BG_EUSAGE, "%s: more than %zu files: not pulled", name,
				b->opts->max_files ? b->opts->max_files : PULL_FILES_MAX);
	if (b->rc == 0)
		hash_files(b);
	for (size_t i = 0; i < b->n && b->rc == 0; i++) {
		sync_pull_file *f = &b->files[i];
		if (f->state != SYNC_PULL_PENDING)
			continue;
		int rc = fetch_one(b, f);
		if (rc < 0) {
			b->rc = rc;
			b->err = (bg_err){0};
			bg_fail(&b->err, rc, "%s", f->msg);
		}
	}
	if (b->own_conn)
		remote_sftp_finish(b->conn);
	for (size_t i = 0; i < b->n; i++)
		if (b->files[i].state == SYNC_PULL_PENDING)
			set_msg(&b->files[i], SYNC_PULL_FAILED, "not pulled: %s",
				b->rc < 0 ? "the box failed (see above)" : "not reached");
	return b->rc;
}

cJSON *sync_pull_file_json(const sync_pull_box *b, size_t i)
{
	const sync_pull_file *f = &b->files[i];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "box", b->box->name);
	bg_json_add_bytes(o, "path", f->rel, strlen(f->rel));
	if (f->local)
		bg_json_add_bytes(o, "local", f->local, strlen(f->local));
	cJSON_AddStringToObject(o, "state", sync_pull_state_key(f->state));
	if (f->state != SYNC_PULL_MISSING && f->state != SYNC_PULL_SKIPPED &&
	    f->state != SYNC_PULL_REFUSED)
		cJSON_AddNumberToObject(o, "size", (double)f->size);
	if (f->sha[0])
		cJSON_AddStringToObject(o, "sha256", f->sha);
	if (f->msg)
		bg_json_add_bytes(o, "message", f->msg, strlen(f->msg));
	return o;
}
