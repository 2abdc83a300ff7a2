#include "gate/client/overlay.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/quote.h"
#include "base/sha256.h"
#include "base/strbuf.h"
#include "base/timer.h"
#include "base/xmalloc.h"
#include "remote/sftp.h"
#include "base/path.h"

#define SHADOW_DIR         "$HOME/.cache/boxgate/shadow"
#define SHADOW_MARK        ".boxgate-shadow"
#define OVERLAY_TIMEOUT_MS (10 * 60 * 1000)

int overlay_add(overlay *o, const char *local, const char *rel, bg_err *err)
{
	char *norm = NULL;
	struct stat st;
	if (bg_path_normalize_rel(rel, &norm, err) < 0)
		return BG_EUSAGE;
	if (!bg_path_safe(norm)) {
		free(norm);
		return bg_fail(err, BG_EUSAGE,
			       "%s: overlay paths are letters, digits, '.', '_', '-' and '/'", rel);
	}
	for (size_t i = 0; i < o->n; i++)
		if (strcmp(o->f[i].rel, norm) == 0) {
			free(norm);
			return bg_fail(err, BG_EUSAGE, "%s: overlaid twice", rel);
		}
	if (stat(local, &st) < 0 || !S_ISREG(st.st_mode)) {
		free(norm);
		return bg_fail(err, BG_EUSAGE, "%s: %s", local,
			       errno && stat(local, &st) < 0 ? strerror(errno)
							     : "not a regular file");
	}
	overlay_file f = {.local = xstrdup(local), .rel = norm, .size = (uint64_t)st.st_size};
	if (bg_sha256_file(local, f.sha, err) < 0) {
		free(f.local);
		free(f.rel);
		return BG_EUSAGE;
	}
	o->f = xrealloc(o->f, (o->n + 1) * sizeof(*o->f));
	o->f[o->n++] = f;
	return 0;
}

static int by_rel(const void *a, const void *b)
{
	return strcmp(((const overlay_file *)a)->rel, ((const overlay_file *)b)->rel);
}

/* The candidate's part of the content address: the repo as configured and
 * each (path, hash), sorted. The box adds the repo's state (see below). */
static void candidate_id(overlay *o, const char *repo, char cid[65])
{
	qsort(o->f, o->n, sizeof(*o->f), by_rel);
	strbuf s = STRBUF_INIT;
	strbuf_addf(&s, "boxgate-shadow 1\n%s\n", repo);
	for (size_t i = 0; i < o->n; i++)
		strbuf_addf(&s, "%s %s\n", o->f[i].sha, o->f[i].rel);
	bg_sha256_hex(s.buf, s.len, cid);
	strbuf_release(&s);
}

/* Shell functions both scripts share (with $repo the repo's real path).
 * rstate: the tree's id, the SHA-256 of the candidate's part, the repo's real path
 *   and every path of the repo with its type, mode and link target, in find's order.
 *   The files are links into the repo, so their bytes are always the repo's own: what
 *   can go stale is which paths exist and what they are, and any such change gives
 *   the repo a new state, so a new tree.
 * valid DIR: DIR is the tree the repo as it is now implies, whatever a gate did to
 *   it: the same paths as the repo's (plus the overlaid files and their new parent
 *   directories), a directory for each directory, a link to "$repo/./PATH" for every
 *   other path, a regular file only at the overlaid paths, with the candidate's
 *   bytes. Nothing in the tree (its mark included) is taken on trust. */
static void add_functions(strbuf *s, const overlay *o, const char *cid)
{
	strbuf_addf(s,
		    "rstate() { { printf 'boxgate-shadow 2\\n%%s\\n%%s\\n' %s \"$repo\"; "
		    "find . -printf '%%y %%m %%P\\0%%l\\0'; } | sha256sum | cut -c1-64; }; ",
		    cid);
	strbuf_addstr(s, "valid() { [ -f \"$1/" SHADOW_MARK "\" ] && [ ! -L \"$1\" ] && ( "
			 "export LC_ALL=C; rp=$(printf '%s' \"$repo\" | sed 's/[%\\\\]/&&/g'); "
			 "want=$(cd \"$repo\" && { find . -mindepth 1 \\(");
	for (size_t i = 0; i < o->n; i++) {
		strbuf_addstr(s, i ? " -o -path ./" : " -path ./");
		bg_quote(s, o->f[i].rel);
	}
	if (!o->n)
		strbuf_addstr(s, " -false");
	strbuf_addstr(s, " \\) -prune -o -type d -printf 'd %P\\0' -o -printf 'l %P\\0'; "
			 "printf 'f %s\\0'");
	for (size_t i = 0; i < o->n; i++) {
		strbuf_addch(s, ' ');
		bg_quote(s, o->f[i].rel);
	}
	strbuf_addstr(s, "; printf 'd %s\\0' .");
	for (size_t i = 0; i < o->n; i++) {
		const char *r = o->f[i].rel;
		for (const char *sl = strchr(r, '/'); sl; sl = strchr(sl + 1, '/')) {
			char *parent = xstrndup(r, (size_t)(sl - r));
			strbuf_addch(s, ' ');
			bg_quote(s, parent);
			free(parent);
		}
	}
	strbuf_addstr(s, "; } | grep -zv '^d \\.$' | sort -zu | sha256sum) && cd \"$1\" && "
			 "have=$(find . -mindepth 1 -path ./" SHADOW_MARK
			 " -prune -o -printf '%y %P\\0' | sort -z | sha256sum) && "
			 "[ \"$want\" = \"$have\" ] && [ \"$(find . -path ./" SHADOW_MARK
			 " -prune -o -type l -printf '%l\\0' | sha256sum)\" = \"$(find . -path "
			 "./" SHADOW_MARK
			 " -prune -o -type l -printf \"$rp/./%P\\0\" | sha256sum)\" ] "
			 "&& printf '%s  %s\\n'");
	for (size_t i = 0; i < o->n; i++) {
		strbuf_addf(s, " %s ", o->f[i].sha);
		bg_quote(s, o->f[i].rel);
	}
	strbuf_addstr(s, " | sha256sum -c --quiet - >/dev/null 2>&1 ); }; ");
}

/* Either "reuse ID ROOT", or the symlink mirror made at "tmp ID TMP" with every
 * overlaid path cleared; a directory on the way that is a link in the repo is
 * refused (writing under it would write the production tree). A repo that
 * changes while its mirror is made gets three tries. */
static char *prepare_script(const overlay *o, const char *repo, const char *cid)
{
	strbuf s = STRBUF_INIT;
	strbuf_addstr(&s, "set -eu; base=\"" SHADOW_DIR "\"; ");
	add_functions(&s, o, cid);
	strbuf_addstr(&s, "cd ");
	bg_quote_path(&s, repo);
	strbuf_addstr(
		&s, "; repo=$(pwd -P); id=$(rstate); final=\"$base/$id\"; "
		    "if valid \"$final\"; then touch \"$final/" SHADOW_MARK "\"; cd \"$final\"; "
		    "echo \"reuse $id $(pwd -P)\"; exit 0; fi; "
		    "mkdir -p \"$base\"; chmod 700 \"$base\"; n=0; "
		    "while :; do tmp=$(mktemp -d \"$base/.$(printf %.16s \"$id\").XXXXXX\"); "
		    "cp -as \"$repo/.\" \"$tmp/\"; now=$(rstate); [ \"$now\" = \"$id\" ] && break; "
		    "rm -rf \"$tmp\"; n=$((n + 1)); [ $n -lt 3 ] || { echo changing; exit 5; }; "
		    "id=$now; done; for rel in");
	for (size_t i = 0; i < o->n; i++) {
		strbuf_addch(&s, ' ');
		bg_quote(&s, o->f[i].rel);
	}
	strbuf_addstr(
		&s,
		"; do cur=$tmp; set -f; IFS=/; for part in $(dirname \"$rel\"); do "
		"IFS=' '; [ \"$part\" = . ] && continue; cur=\"$cur/$part\"; "
		"if [ -L \"$cur\" ]; then echo \"link $rel\"; rm -rf \"$tmp\"; exit 3; fi; "
		"[ -d \"$cur\" ] || mkdir \"$cur\"; done; IFS=' '; set +f; "
		"if [ -d \"$tmp/$rel\" ] && [ ! -L \"$tmp/$rel\" ]; then echo \"dir $rel\"; "
		"rm -rf \"$tmp\"; exit 3; fi; rm -f \"$tmp/$rel\"; done; echo \"tmp $id $tmp\"");
	return strbuf_detach(&s);
}

/* Checks every overlaid file's hash in the tree, marks it complete and renames
 * it into place. A valid tree another run placed first wins;
 * a spoiled one there is moved aside (bootstrap --clean removes it within the
 * hour, a run still in it keeps its directory). Prints "root ROOT". */
static char *finish_script(const overlay *o, const char *repo, const char *cid, const char *id,
			   const char *tmp)
{
	strbuf s = STRBUF_INIT;
	strbuf_addstr(&s, "set -eu; base=\"" SHADOW_DIR "\"; ");
	add_functions(&s, o, cid);
	strbuf_addstr(&s, "cd ");
	bg_quote_path(&s, repo);
	strbuf_addstr(&s, "; repo=$(pwd -P); tmp=");
	bg_quote(&s, tmp);
	strbuf_addf(&s, "; id=%s; final=\"$base/$id\"; cd \"$tmp\"; printf '%%s  %%s\\n'", id);
	for (size_t i = 0; i < o->n; i++) {
		strbuf_addf(&s, " %s ", o->f[i].sha);
		bg_quote(&s, o->f[i].rel);
	}
	strbuf_addstr(
		&s,
		" | sha256sum -c --quiet - >/dev/null 2>&1 || { echo hash; cd /; rm -rf "
		"\"$tmp\"; exit 4; }; printf '%s\\n' \"$id\" "
		">\"$tmp/" SHADOW_MARK
		"\"; cd /; for try in 1 2 3; do mv -T \"$tmp\" \"$final\" 2>/dev/null && break; "
		"if valid \"$final\"; then rm -rf \"$tmp\"; break; fi; "
		"old=$(mktemp -d \"$base/.$(printf %.16s \"$id\").XXXXXX\"); "
		"{ mv -T \"$final\" \"$old\" 2>/dev/null && rm -f \"$old/" SHADOW_MARK
		"\"; } || true; done; "
		"[ -d \"$tmp\" ] && rm -rf \"$tmp\"; valid \"$final\" || { echo place; exit 6; }; "
		"cd \"$final\"; echo \"root $(pwd -P)\"");
	return strbuf_detach(&s);
}

/* The value after `word ` on the output's first line, NULL when not there. */
static char *after(const char *out, const char *word)
{
	size_t n = strlen(word);
	if (!out || strncmp(out, word, n) != 0 || out[n] != ' ')
		return NULL;
	return xstrndup(out + n + 1, strcspn(out + n + 1, "\n"));
}

static int upload(remote_conn *c, const char *tmp, const overlay_file *f, bg_err *err)
{
	int fd = open(f->local, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return bg_fail(err, BG_EIO, "%s: %s", f->local, strerror(errno));
	char *path = xasprintf("%s/%s", tmp, f->rel);
	remote_put_opts po = {.mode = 0644};
	bool exists = false;
	int rc = remote_put_file(c, fd, f->size, path, &po, &exists, err);
	close(fd);
	free(path);
	return rc;
}

/* "ID REST" after `word `: ID (64 hex digits) into id, REST returned (owned). */
static char *after_id(const char *out, const char *word, char id[65])
{
	char *v = after(out, word);
	if (!v || strlen(v) < 66 || strspn(v, "0123456789abcdef") != 64 || v[64] != ' ') {
		free(v);
		return NULL;
	}
	memcpy(id, v, 64);
	id[64] = '\0';
	char *rest = xstrdup(v + 65);
	free(v);
	return rest;
}

int overlay_prepare(remote_conn *c, const char *repo, overlay *o, bg_err *err)
{
	char *out = NULL, *cmd, *tmp = NULL, cid[65];
	remote_status st;
	const char *box = remote_target_of(c)->name;
	candidate_id(o, repo, cid);
	cmd = prepare_script(o, repo, cid);
	int rc = remote_capture(c, cmd, 65536, OVERLAY_TIMEOUT_MS, &out, NULL, &st, err);
	free(cmd);
	if (rc < 0) {
		if (out && strncmp(out, "link ", 5) == 0)
			bg_fail(err, BG_EREMOTE,
				"%s: overlay %.*s: a directory on its way is a symlink in the "
				"repo: "
				"the candidate would be written into the production tree",
				box, (int)strcspn(out + 5, "\n"), out + 5);
		else if (out && strncmp(out, "dir ", 4) == 0)
			bg_fail(err, BG_EREMOTE, "%s: overlay %.*s: a directory in the repo", box,
				(int)strcspn(out + 4, "\n"), out + 4);
		else if (out && strncmp(out, "changing", 8) == 0)
			bg_fail(err, BG_EREMOTE,
				"%s: the repo changed each of 3 times its shadow tree was made "
				"(a push running?)",
				box);
		free(out);
		return rc;
	}
	if ((o->root = after_id(out, "reuse", o->id))) {
		o->reused = true;
		free(out);
		return 0;
	}
	tmp = after_id(out, "tmp", o->id);
	free(out);
	out = NULL;
	if (!tmp || tmp[0] != '/')
		return bg_fail(err, BG_EREMOTE, "%s: the shadow tree was not made", box);
	for (size_t i = 0; i < o->n && rc == 0; i++)
		rc = upload(c, tmp, &o->f[i], err);
	if (rc == 0) {
		cmd = finish_script(o, repo, cid, o->id, tmp);
		rc = remote_capture(c, cmd, 65536, OVERLAY_TIMEOUT_MS, &out, NULL, &st, err);
		free(cmd);
		if (rc < 0 && out && strncmp(out, "hash", 4) == 0)
			bg_fail(err, BG_EREMOTE,
				"%s: an overlaid file's SHA-256 on the box is not the local one's",
				box);
		else if (rc < 0 && out && strncmp(out, "place", 5) == 0)
			bg_fail(err, BG_EREMOTE,
				"%s: the shadow tree could not be placed (another run keeps "
				"spoiling it)",
				box);
		if (rc == 0 && !(o->root = after(out, "root")))
			rc = bg_fail(err, BG_EREMOTE, "%s: the shadow tree was not placed", box);
	} else {
		/* what was uploaded goes with its tree; the upload's error stands */
		strbuf rm = STRBUF_INIT;
		bg_err ignored = {0};
		char *junk = NULL;
		strbuf_addstr(&rm, "rm -rf ");
		bg_quote(&rm, tmp);
		remote_capture(c, rm.buf, 4096, 60000, &junk, NULL, &st, &ignored);
		free(junk);
		strbuf_release(&rm);
	}
	free(out);
	free(tmp);
	return rc;
}

cJSON *overlay_json(const overlay *o)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "id", o->id);
	if (o->root)
		cJSON_AddStringToObject(j, "root", o->root);
	cJSON_AddBoolToObject(j, "reused", o->reused);
	cJSON *files = cJSON_AddArrayToObject(j, "files");
	for (size_t i = 0; i < o->n; i++) {
		cJSON *f = cJSON_CreateObject();
		cJSON_AddStringToObject(f, "path", o->f[i].rel);
		cJSON_AddStringToObject(f, "sha256", o->f[i].sha);
		cJSON_AddStringToObject(f, "local", o->f[i].local);
		cJSON_AddItemToArray(files, f);
	}
	return j;
}

void overlay_release(overlay *o)
{
	for (size_t i = 0; i < o->n; i++) {
		free(o->f[i].local);
		free(o->f[i].rel);
	}
	free(o->f);
	free(o->root);
	memset(o, 0, sizeof(*o));
}

char *overlay_clean_command(int days)
{
	/* Complete trees by their mark's age (a run touches it); a temporary tree
	 * (.<id>.XXXXXX) of a prepare that died, after an hour. The temp glob starts
	 * with a hex digit, so it never matches "." or "..". */
	char *age = days > 0 ? xasprintf("[ -n \"$(find \"$m\" -mmin +%d)\" ]", days * 1440 - 1)
			     : xstrdup("true");
	char *cmd = xasprintf(
		"n=0; d=\"" SHADOW_DIR "\"; [ -d \"$d\" ] || { echo 'removed 0'; exit 0; }; "
		"for t in \"$d\"/[0-9a-f]* \"$d\"/.[0-9a-f]*; do [ -d \"$t\" ] || continue; "
		"m=\"$t/" SHADOW_MARK "\"; "
		"if [ -e \"$m\" ]; then %s || continue; "
		"elif [ -z \"$(find \"$t\" -maxdepth 0 -mmin +60)\" ]; then continue; fi; "
		"rm -rf \"$t\" && n=$((n + 1)); done; echo \"removed $n\"",
		age);
	free(age);
	return cmd;
}
