/* Push plans: which local file goes to which target, refused when a path
 * escapes the repo; local hashes and verifiers; temporary file names. */
#include "sync/sync.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/path.h"
#include "base/random.h"
#include "base/quote.h"
#include "base/xmalloc.h"

int sync_plan_init(sync_plan *p, const char *root, bg_err *err)
{
	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->hashed = true;
	char *real = realpath(root, NULL);
	if (!real)
		return bg_fail(err, BG_EUSAGE, "repo root %s: %s", root, strerror(errno));
	struct stat st;
	if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
		free(real);
		return bg_fail(err, BG_EUSAGE, "repo root %s is not a directory", root);
	}
	p->root = real;
	return 0;
}

void sync_plan_release(sync_plan *p)
{
	if (!p || !p->root)
		return;
	if (p->hashing)
		pthread_join(p->hasher, NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	for (size_t i = 0; i < p->n; i++) {
		free(p->items[i].arg);
		free(p->items[i].local);
		free(p->items[i].rel);
	}
	free(p->items);
	free(p->root);
	memset(p, 0, sizeof(*p));
}

/* "/a/b" under root "/a" gives "b"; NULL when not strictly inside. */
static const char *inside(const char *root, const char *abs)
{
	size_t rl = strlen(root);
	if (rl == 1 && root[0] == '/')
		return abs[1] ? abs + 1 : NULL;
	if (strncmp(abs, root, rl) != 0 || abs[rl] != '/' || !abs[rl + 1])
		return NULL;
	return abs + rl + 1;
}

/* The absolute, lexically normalised form of local path `path`. */
static char *local_abs(const sync_plan *p, const char *path)
{
	strbuf sb = STRBUF_INIT;
	char cwd[PATH_MAX];
	const char *base = p->root;
	if (path[0] == '/') {
		base = "";
	} else if (getcwd(cwd, sizeof(cwd))) {
		char *rc = realpath(cwd, NULL);
		if (rc && (strcmp(rc, p->root) == 0 || inside(p->root, rc)))
			base = cwd;
		free(rc);
	}
	char *joined = xasprintf("%s/%s", base, path);
	bool ok = bg_path_resolve(&sb, joined);
	free(joined);
	if (!ok) {
		strbuf_release(&sb);
		return NULL;
	}
	char *out = xasprintf("/%s", strbuf_str(&sb));
	strbuf_release(&sb);
	return out;
}

static int add_item(sync_plan *p, char *arg, char *local, char *rel, bg_err *err)
{
	for (size_t i = 0; i < p->n; i++) {
		if (strcmp(p->items[i].rel, rel) == 0) {
			int rc = bg_fail(err, BG_EUSAGE, "%s: the same target as %s", arg,
					 p->items[i].arg);
			free(arg);
			free(local);
			free(rel);
			return rc;
		}
	}
	p->items = xgrow(p->items, &p->cap, p->n + 1, sizeof(*p->items));
	sync_item *it = &p->items[p->n++];
	memset(it, 0, sizeof(*it));
	it->arg = arg;
	it->local = local;
	it->rel = rel;
	return 0;
}

int sync_plan_add(sync_plan *p, const char *arg, unsigned flags, bg_err *err)
{
	char *lpart = NULL, *rpart = NULL, *abs = NULL, *real = NULL, *rel = NULL;
	int rc = 0;
	struct stat st;
	const char *eq = strchr(arg, '=');
	char *whole = eq ? local_abs(p, arg) : NULL;
	bool split = eq && (!whole || lstat(whole, &st) < 0);
	free(whole);
	if (split) {
		lpart = xstrndup(arg, (size_t)(eq - arg));
		rpart = xstrdup(eq + 1);
		if (!*lpart || !*rpart) {
			rc = bg_fail(err, BG_EUSAGE, "%s: LOCAL=REMOTE wants both sides", arg);
			goto out;
		}
	} else {
		lpart = xstrdup(arg);
	}
	abs = local_abs(p, lpart);
	const char *lrel = abs ? inside(p->root, abs) : NULL;
	if (!lrel) {
		rc = bg_fail(err, BG_EUSAGE, "%s: outside the repo root %s", lpart, p->root);
		goto out;
	}
	bool have_local = false;
	if (lstat(abs, &st) == 0) {
		real = realpath(abs, NULL);
		if (!real) {
			rc = bg_fail(err, BG_EUSAGE, "%s: %s", lpart, strerror(errno));
			goto out;
		}
		if (!inside(p->root, real)) {
			rc = bg_fail(err, BG_EUSAGE,
				     "%s: a symlink that leads out of the repo root (to %s)", lpart,
				     real);
			goto out;
		}
		if (stat(real, &st) < 0 || !S_ISREG(st.st_mode)) {
			rc = bg_fail(err, BG_EUSAGE, "%s: not a regular file", lpart);
			goto out;
		}
		have_local = true;
	} else if (flags & SYNC_ADD_NEED_LOCAL) {
		rc = bg_fail(err, BG_EUSAGE, "%s: %s", lpart, strerror(errno));
		goto out;
	}
	if (rpart) {
		size_t rl = strlen(rpart);
		char *want = NULL;
		if (rpart[rl - 1] == '/') {
			const char *b = strrchr(lrel, '/');
			want = xasprintf("%s%s", rpart, b ? b + 1 : lrel);
		} else {
			want = xstrdup(rpart);
		}
		rc = bg_path_normalize_rel(want, &rel, err);
		free(want);
		if (rc < 0)
			goto out;
	} else {
		rel = xstrdup(lrel);
	}
	rc = add_item(p, xstrdup(arg), have_local ? real : NULL, rel, err);
	if (have_local)
		real = NULL;
	rel = NULL;
out:
	free(lpart);
	free(rpart);
	free(abs);
	free(real);
	free(rel);
	return rc;
}

int sync_plan_add_rel(sync_plan *p, const char *relpath, bg_err *err)
{
	char *rel = NULL;
	int rc = bg_path_normalize_rel(relpath, &rel, err);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->items[i].rel, rel) == 0) {
			free(rel);
			return 0;
		}
	char *abs = xasprintf("%s/%s", p->root, rel);
	char *real = realpath(abs, NULL);
	struct stat st;
	if (real && (!inside(p->root, real) || stat(real, &st) < 0 || !S_ISREG(st.st_mode))) {
		free(real);
		real = NULL;
	}
	free(abs);
	return add_item(p, xstrdup(rel), real, rel, err);
}

static void *hash_big(void *arg)
{
	sync_plan *p = arg;
	int rc = 0;
	bg_err err = {0};
	for (size_t i = 0; i < p->n && rc == 0; i++) {
		sync_item *it = &p->items[i];
		if (it->local && it->size >= SYNC_BIG_FILE)
			rc = bg_sha256_file(it->local, it->sha, &err);
	}
	pthread_mutex_lock(&p->mu);
	p->hash_rc = rc;
	p->hash_err = err;
	p->hashed = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int sync_plan_finish(sync_plan *p, sync_verifier_for_fn verifier_for, void *ctx, bg_err *err)
{
	bool big = false;
	for (size_t i = 0; i < p->n; i++) {
		sync_item *it = &p->items[i];
		it->verifier_builtin = false;
		it->verifier =
			verifier_for ? verifier_for(ctx, it->rel, &it->verifier_builtin) : NULL;
		if (!it->local)
			continue;
		struct stat st;
		if (stat(it->local, &st) < 0)
			return bg_fail(err, BG_EIO, "%s: %s", it->arg, strerror(errno));
		it->size = (uint64_t)st.st_size;
		it->mode = st.st_mode & 0777;
		if (it->size >= SYNC_BIG_FILE) {
			big = true;
			continue;
		}
		int rc = bg_sha256_file(it->local, it->sha, err);
		if (rc < 0)
			return rc;
	}
	if (big && !p->hashing) {
		p->hashed = false;
		if (pthread_create(&p->hasher, NULL, hash_big, p) != 0) {
			hash_big(p);
			return p->hash_rc;
		}
		p->hashing = true;
	}
	return 0;
}

int sync_plan_wait(sync_plan *p, bg_err *err)
{
	pthread_mutex_lock(&p->mu);
	while (!p->hashed)
		pthread_cond_wait(&p->cv, &p->mu);
	int rc = p->hash_rc;
	if (rc < 0 && err)
		*err = p->hash_err;
	pthread_mutex_unlock(&p->mu);
	return rc;
}

/* Room for ".", ".boxgate-", 16 hex and ".tmp" within NAME_MAX. */
#define TEMP_EXTRA (1 + 9 + 16 + 4)

/* The target's extension (".py"), kept at the end of the temporary name so
 * verifiers that load the file by its suffix (importlib) still can. */
static size_t ext_len(const char *base, size_t blen)
{
	for (size_t k = blen; k-- > 1;) {
		char ch = base[k];
		if (ch == '.')
			return blen - k <= 16 ? blen - k : 0;
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_'))
			return 0;
	}
	return 0;
}

char *sync_temp_name(const char *rel, const char *hex)
{
	const char *slash = strrchr(rel, '/');
	const char *base = slash ? slash + 1 : rel;
	size_t dirlen = slash ? (size_t)(slash - rel) + 1 : 0;
	size_t blen = strlen(base);
	size_t el = ext_len(base, blen);
	const char *ext = base + blen - el;
	if (blen > NAME_MAX - TEMP_EXTRA - el)
		blen = NAME_MAX - TEMP_EXTRA - el;
	char *t = xasprintf("%.*s.%.*s.boxgate-%.16s.tmp%s", (int)dirlen, rel, (int)blen, base, hex,
			    ext);
	/* The name part only of safe bytes: verifiers see this file, and the
	 * text `{}` becomes must stay inert in any shell, however nested. */
	for (char *c = t + dirlen; *c; c++)
		if (!bg_path_safe_byte(*c))
			*c = '_';
	return t;
}

void sync_random_hex(char out[17])
{
	bg_random_hex(out, 8);
}

char *sync_verifier_command(const char *tmpl, const char *file, const char *python)
{
	strbuf sb = STRBUF_INIT;
	for (const char *s = tmpl; *s;) {
		if (strncmp(s, "{}", 2) == 0) {
			bg_quote_path(&sb, file);
			s += 2;
		} else if (strncmp(s, "{python}", 8) == 0) {
			bg_quote_path(&sb, python && *python ? python : "python3");
			s += 8;
		} else {
			strbuf_addch(&sb, *s++);
		}
	}
	return strbuf_detach(&sb);
}
