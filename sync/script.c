/* The shell scripts push, status and rollback run on a box: the fixed part
 * lives in sync/sh/, and this file adds the parameters (variable
 * assignments quoted through bg_quote) and one line per file calling the
 * scripts' functions. POSIX sh only (they run under /bin/sh whatever the
 * login shell is), results printed as nonce-tagged lines (internal.h).
 * They avoid extra processes where a builtin does: on a busy box each fork
 * costs more than a round trip. */
#include "sync/internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/quote.h"
#include "base/xmalloc.h"

/* The box-side shell, embedded at build time (Makefile: SYNC_SH). */
#include "sync/sh/apply.sh.h"
#include "sync/sh/prelude.sh.h"
#include "sync/sh/probe.sh.h"
#include "sync/sh/scan.sh.h"

const char *const sync_sh_sources[] = {sync_sh_prelude, sync_sh_probe, sync_sh_scan, sync_sh_apply,
				       NULL};

static void q(strbuf *sb, const char *s)
{
	bg_quote(sb, s);
}

/* The parameters as variable assignments, then the common start (enter
 * the repo or say it is not there). */
static void prelude(strbuf *sb, const char *repo, const char *nonce)
{
	strbuf_addstr(sb, "BGN=");
	q(sb, nonce);
	strbuf_addstr(sb, "\nBG_REPO=");
	bg_quote_path(sb, repo);
	strbuf_addf(sb, "\nBG_PUSHED_MAX=%u\n", SYNC_MANIFEST_MAX);
	strbuf_addstr(sb, sync_sh_prelude);
}

static void assign_int(strbuf *sb, const char *name, long v)
{
	strbuf_addf(sb, "%s=%ld\n", name, v);
}

/* The directory of `rel` ("." at the top) and the temporary-file glob
 * matching sync_temp_name() for it. */
static void dir_and_glob(const char *rel, strbuf *dir, strbuf *glob)
{
	const char *slash = strrchr(rel, '/');
	const char *base = slash ? slash + 1 : rel;
	if (slash) {
		char *d = xstrndup(rel, (size_t)(slash - rel));
		q(dir, d);
		free(d);
	} else {
		q(dir, ".");
	}
	char *t = sync_temp_name(rel, "0000000000000000");
	/* t = "dir/.NAME.boxgate-0000000000000000.tmp[.EXT]": quote around the hex. */
	const char *tb = strrchr(t, '/');
	tb = tb ? tb + 1 : t;
	const char *hex = strstr(tb, ".boxgate-0000000000000000.tmp") + 9;
	char *prefix = xstrndup(tb, (size_t)(hex - tb));
	strbuf_addstr(glob, strbuf_str(dir));
	strbuf_addch(glob, '/');
	q(glob, prefix);
	for (int i = 0; i < 16; i++)
		strbuf_addstr(glob, "[0-9a-f]");
	q(glob, hex + 16);
	free(prefix);
	free(t);
	(void)base;
}

char *sync_script_probe(const sync_probe_opts *o, const sync_plan *p, const size_t *idx, size_t n)
{
	strbuf sb = STRBUF_INIT;
	prelude(&sb, o->repo, o->nonce);
	assign_int(&sb, "BG_LOCK", o->lock);
	assign_int(&sb, "BG_WAIT", o->lock_wait_s > 0 ? o->lock_wait_s : 0);
	assign_int(&sb, "BG_FAIL_BUSY", o->fail_busy);
	assign_int(&sb, "BG_CLEAN", o->clean);
	assign_int(&sb, "BG_HOLD", o->hold);
	strbuf_addstr(&sb, sync_sh_probe);
	for (size_t k = 0; k < n; k++) {
		const sync_item *it = &p->items[idx[k]];
		strbuf dir = STRBUF_INIT, glob = STRBUF_INIT;
		dir_and_glob(it->rel, &dir, &glob);
		strbuf_addf(&sb, "bgp %zu ", idx[k]);
		q(&sb, it->rel);
		strbuf_addf(&sb, " %s %s\n", strbuf_str(&dir), strbuf_str(&glob));
		strbuf_release(&dir);
		strbuf_release(&glob);
	}
	/* The regular targets, as positional parameters of bgstats/bghashes. */
	if (o->stats) {
		strbuf_addstr(&sb, "set --\n");
		for (size_t k = 0; k < n; k++) {
			strbuf_addf(&sb, "[ \"$T%zu\" = F ] && set -- \"$@\" ", idx[k]);
			q(&sb, p->items[idx[k]].rel);
			strbuf_addch(&sb, '\n');
		}
		strbuf_addstr(&sb, "bgstats \"$@\"\n");
	}
	strbuf_addstr(&sb, "set --\n");
	for (size_t k = 0; k < n; k++) {
		const sync_item *it = &p->items[idx[k]];
		if (it->local && it->size >= SYNC_BIG_FILE)
			continue;
		strbuf_addf(&sb, "[ \"$T%zu\" = F ] && set -- \"$@\" ", idx[k]);
		q(&sb, it->rel);
		strbuf_addch(&sb, '\n');
	}
	strbuf_addstr(&sb, "bghashes \"$@\"\n");
	for (size_t k = 0; k < n; k++) {
		const sync_item *it = &p->items[idx[k]];
		if (!(it->local && it->size >= SYNC_BIG_FILE))
			continue;
		strbuf_addf(&sb, "bgbig %zu %llu ", idx[k], (unsigned long long)it->size);
		q(&sb, it->rel);
		strbuf_addch(&sb, '\n');
	}
	if (o->pushed)
		strbuf_addstr(&sb, "bgpushed\n");
	strbuf_addstr(&sb, "bgend\n");
	return strbuf_detach(&sb);
}

char *sync_script_scan(const char *repo, const char *nonce)
{
	strbuf sb = STRBUF_INIT;
	prelude(&sb, repo, nonce);
	strbuf_addstr(&sb, sync_sh_scan);
	return strbuf_detach(&sb);
}

static const char follow_py[] =
	"import hashlib, os, select, sys\n"
	"p, n = sys.argv[1], int(sys.argv[2])\n"
	"h = hashlib.sha256()\n"
	"got = idle = 0\n"
	"f = open(p, 'rb')\n"
	"while got < n:\n"
	"    b = f.read(min(4 << 20, n - got))\n"
	"    if b:\n"
	"        h.update(b)\n"
	"        got += len(b)\n"
	"        idle = 0\n"
	"        continue\n"
	"    if select.select([0], [], [], 0.005)[0] and not os.read(0, 1):\n"
	"        sys.exit(2)\n"
	"    idle += 1\n"
	"    if idle > 12000:\n"
	"        sys.exit(3)\n"
	"print(h.hexdigest(), flush=True)\n";

char *sync_script_follow(const char *repo, const char *python, const char *temp, uint64_t size)
{
	strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, "cd -- ");
	bg_quote_path(&sb, repo);
	strbuf_addstr(&sb, " || exit 3\nexec ");
	bg_quote_path(&sb, python && *python ? python : "python3");
	strbuf_addstr(&sb, " -c ");
	bg_quote(&sb, follow_py);
	strbuf_addch(&sb, ' ');
	char *dotted = xasprintf("./%s", temp);
	bg_quote(&sb, dotted);
	free(dotted);
	strbuf_addf(&sb, " %llu\n", (unsigned long long)size);
	return strbuf_detach(&sb);
}

/* "./" + path, quoted: no path can start with '-' for any tool. */
static void qdot(strbuf *sb, const char *rel)
{
	char *p = xasprintf("./%s", rel);
	q(sb, p);
	free(p);
}

char *sync_script_apply(const char *repo, const char *nonce, const char *box,
			const sync_apply_file *f, size_t n, unsigned what)
{
	strbuf sb = STRBUF_INIT;
	prelude(&sb, repo, nonce);
	strbuf_addstr(&sb, "BOXGATE_BOX=");
	q(&sb, box);
	strbuf_addch(&sb, '\n');
	strbuf_addstr(&sb, sync_sh_apply);
	for (size_t k = 0; k < n; k++) {
		const sync_apply_file *a = &f[k];
		if ((what & (SYNC_DO_VERIFY | SYNC_DO_ROLLBACK)) && a->verifier)
			/* The verifier on lines of its own: a trailing comment in it
			 * cannot swallow the closing brace. */
			strbuf_addf(&sb, "bgv%zu() {\n%s\n}\n", a->index, a->verifier);
		strbuf t = STRBUF_INIT, x = STRBUF_INIT, xb = STRBUF_INIT;
		qdot(&t, a->target);
		qdot(&x, a->temp);
		qdot(&xb, a->bak_temp ? a->bak_temp : a->temp);
		bool first = true;
		if (what & SYNC_DO_ROLLBACK) {
			strbuf_addf(&sb, "bgr %zu %s %s", a->index, strbuf_str(&t), strbuf_str(&x));
			first = false;
		}
		if (what & (SYNC_DO_VERIFY | SYNC_DO_ROLLBACK)) {
			strbuf_addf(&sb, "%sbgv %zu %s %s %d ", first ? "" : " && ", a->index,
				    strbuf_str(&x), a->sha ? a->sha : "''",
				    a->prehashed && a->sha ? 2
				    : a->big               ? 1
							   : 0);
			if (a->verifier)
				strbuf_addf(&sb, "bgv%zu ", a->index);
			else
				strbuf_addstr(&sb, "'' ");
			q(&sb, a->target);
			strbuf_addch(&sb, ' ');
			if (a->vpath)
				q(&sb, a->vpath);
			else
				strbuf_addstr(&sb, strbuf_str(&x));
			strbuf_addch(&sb, ' ');
			if (a->vlink && a->vdir) {
				qdot(&sb, a->vlink);
				strbuf_addch(&sb, ' ');
				q(&sb, a->vdir);
			} else {
				strbuf_addstr(&sb, "'' ''");
			}
			first = false;
		}
		/* The hash the manifest gets: the local one the verify step
		 * confirmed, or (rollback) the one bgv just took of the .bak. */
		if (what & SYNC_DO_ROLLBACK) {
			strbuf_addf(&sb, " && bgrs %zu %s %s ", a->index, strbuf_str(&x),
				    strbuf_str(&t));
			if (a->keep)
				qdot(&sb, a->keep);
			else
				strbuf_addstr(&sb, "''");
			strbuf_addstr(&sb, " \"$h\"");
		} else if (what & SYNC_DO_SWAP)
			strbuf_addf(&sb, "%sbgs %zu %s %s %s %d %s", first ? "" : " && ", a->index,
				    strbuf_str(&x), strbuf_str(&t), strbuf_str(&xb),
				    a->keep_owner ? 1 : 0, a->sha && *a->sha ? a->sha : "\"$h\"");
		strbuf_addch(&sb, '\n');
		strbuf_release(&t);
		strbuf_release(&x);
		strbuf_release(&xb);
	}
	if (what & (SYNC_DO_SWAP | SYNC_DO_ROLLBACK))
		strbuf_addstr(&sb, "bgm\n");
	if (!(what & SYNC_NO_EXIT))
		strbuf_addstr(&sb, "exit 0\n");
	return strbuf_detach(&sb);
}
