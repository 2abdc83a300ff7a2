#include "gate/overlay.h"

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
#include "sync/sync.h"

#define SHADOW_DIR         "$HOME/.cache/boxgate/shadow"
#define SHADOW_MARK        ".boxgate-shadow"
#define OVERLAY_TIMEOUT_MS (10 * 60 * 1000)

int overlay_add(overlay *o, const char *local, const char *rel, bg_err *err)
{
	char *norm = NULL;
	struct stat st;
	if (sync_normalize_rel(rel, &norm, err) < 0)
		return BG_EUSAGE;
	if (!sync_safe_path(norm)) {
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

/* The content address: the repo as configured and each (path, hash), sorted. */
static void compute_id(overlay *o, const char *repo)
{
	qsort(o->f, o->n, sizeof(*o->f), by_rel);
	strbuf s = STRBUF_INIT;
	strbuf_addf(&s, "boxgate-shadow 1\n%s\n", repo);
	for (size_t i = 0; i < o->n; i++)
		strbuf_addf(&s, "%s %s\n", o->f[i].sha, o->f[i].rel);
	bg_sha256_hex(s.buf, s.len, o->id);
	strbuf_release(&s);
}

/* Either "reuse ROOT", or the symlink mirror made at "tmp TMP" with every
 * overlaid path cleared; a directory on the way that is a link in the repo is
 * refused (writing under it would write the production tree). */
static char *prepare_script(const overlay *o, const char *repo)
{
	strbuf s = STRBUF_INIT;
	strbuf_addf(&s,
		    "set -eu; base=\"" SHADOW_DIR "\"; final=\"$base/%s\"; "
		    "if [ -f \"$final/" SHADOW_MARK "\" ]; then touch \"$final/" SHADOW_MARK
		    "\"; cd \"$final\"; echo \"reuse $(pwd -P)\"; exit 0; fi; cd ",
		    o->id);
	bg_quote_path(&s, repo);
	strbuf_addf(&s,
		    "; repo=$(pwd -P); mkdir -p \"$base\"; chmod 700 \"$base\"; "
		    "tmp=$(mktemp -d \"$base/.%.16s.XXXXXX\"); "
		    "cp -as \"$repo/.\" \"$tmp/\"; for rel in",
		    o->id);
	for (size_t i = 0; i < o->n; i++) {
		strbuf_addch(&s, ' ');
		bg_quote(&s, o->f[i].rel);
	}
	strbuf_addstr(&s,
		      "; do cur=$tmp; set -f; IFS=/; for part in $(dirname \"$rel\"); do "
		      "IFS=' '; [ \"$part\" = . ] && continue; cur=\"$cur/$part\"; "
		      "if [ -L \"$cur\" ]; then echo \"link $rel\"; rm -rf \"$tmp\"; exit 3; fi; "
		      "[ -d \"$cur\" ] || mkdir \"$cur\"; done; IFS=' '; set +f; "
		      "if [ -d \"$tmp/$rel\" ] && [ ! -L \"$tmp/$rel\" ]; then echo \"dir $rel\"; "
		      "rm -rf \"$tmp\"; exit 3; fi; rm -f \"$tmp/$rel\"; done; echo \"tmp $tmp\"");
	return strbuf_detach(&s);
}

/* Checks every overlaid file's hash in the tree, marks it complete and renames
 * it into place (a tree another run placed first wins); prints "root ROOT". */
static char *finish_script(const overlay *o, const char *tmp)
{
	strbuf s = STRBUF_INIT;
	strbuf_addstr(&s, "set -eu; tmp=");
	bg_quote(&s, tmp);
	strbuf_addf(&s, "; final=\"" SHADOW_DIR "/%s\"; cd \"$tmp\"; printf '%%s  %%s\\n'", o->id);
	for (size_t i = 0; i < o->n; i++) {
		strbuf_addf(&s, " %s ", o->f[i].sha);
		bg_quote(&s, o->f[i].rel);
	}
	strbuf_addf(&s,
		    " | sha256sum -c --quiet - >/dev/null 2>&1 || { echo hash; cd /; rm -rf "
		    "\"$tmp\"; exit 4; }; echo %s >\"$tmp/" SHADOW_MARK "\"; cd /; "
		    "mv -T \"$tmp\" \"$final\" 2>/dev/null || rm -rf \"$tmp\"; cd \"$final\"; "
		    "echo \"root $(pwd -P)\"",
		    o->id);
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

int overlay_prepare(remote_conn *c, const char *repo, overlay *o, bg_err *err)
{
	char *out = NULL, *cmd, *tmp = NULL;
	remote_status st;
	const char *box = remote_target_of(c)->name;
	compute_id(o, repo);
	cmd = prepare_script(o, repo);
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
		free(out);
		return rc;
	}
	if ((o->root = after(out, "reuse"))) {
		o->reused = true;
		free(out);
		return 0;
	}
	tmp = after(out, "tmp");
	free(out);
	out = NULL;
	if (!tmp || tmp[0] != '/')
		return bg_fail(err, BG_EREMOTE, "%s: the shadow tree was not made", box);
	for (size_t i = 0; i < o->n && rc == 0; i++)
		rc = upload(c, tmp, &o->f[i], err);
	if (rc == 0) {
		cmd = finish_script(o, tmp);
		rc = remote_capture(c, cmd, 65536, OVERLAY_TIMEOUT_MS, &out, NULL, &st, err);
		free(cmd);
		if (rc < 0 && out && strncmp(out, "hash", 4) == 0)
			bg_fail(err, BG_EREMOTE,
				"%s: an overlaid file's SHA-256 on the box is not the local one's",
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
