/* The shell scripts push, status and rollback run on a box. POSIX sh only
 * (they run under /bin/sh whatever the login shell is), every path quoted
 * through bg_quote, results printed as nonce-tagged lines (internal.h).
 * They avoid extra processes where a builtin does: on a busy box each fork
 * costs more than a round trip. */
#include "sync/internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "shim/shim.h"

static void q(strbuf *sb, const char *s)
{
	bg_quote(sb, s);
}

/* The common start: enter the repo or say it is not there. */
static void prelude(strbuf *sb, const char *repo, const char *nonce)
{
	strbuf_addstr(sb, "cd -- ");
	bg_quote_path(sb, repo);
	strbuf_addf(sb, " 2>/dev/null || { echo '@%s norepo'; exit 3; }\n", nonce);
	/* The fastest SHA-256 the box has, for big files. */
	strbuf_addstr(sb, "if command -v openssl >/dev/null 2>&1; then bh() { openssl dgst -sha256 -r; }; "
			  "else bh() { sha256sum; }; fi\n");
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
	const char *N = o->nonce;
	prelude(&sb, o->repo, N);
	strbuf_addstr(&sb, "cd -P . || exit 3\nR=$PWD\n");
	strbuf_addf(&sb, "printf '@%s repo %%s\\n' \"$R\"\nL=n\n", N);
	if (o->lock) {
		strbuf_addstr(&sb, "if command -v flock >/dev/null 2>&1; then exec 9<.; ");
		if (o->lock_wait_s > 0)
			strbuf_addf(&sb, "if flock -w %d 9; ", o->lock_wait_s);
		else
			strbuf_addstr(&sb, "if flock -n 9; ");
		strbuf_addstr(&sb, "then L=o; else L=b; fi; fi\n");
	}
	strbuf_addf(&sb, "echo \"@%s lock $L\"\n", N);
	if (o->fail_busy)
		strbuf_addstr(&sb, "[ \"$L\" = b ] && exit 4\n");
	strbuf_addf(&sb, "C=%d; [ \"$L\" = b ] && C=0\n", o->clean ? 1 : 0);
	/* Links an interrupted verify step left (sync_apply_file.vlink). */
	strbuf_addstr(&sb, "[ \"$C\" = 1 ] && for g in ./.boxgate-");
	for (int i = 0; i < 16; i++)
		strbuf_addstr(&sb, "[0-9a-f]");
	strbuf_addstr(&sb, ".vdir; do [ -L \"$g\" ] && rm -f -- \"$g\"; done\n");
	strbuf_addf(&sb,
		    "bgp() {\n"
		    " i=$1 f=$2 d=$3; shift 3\n"
		    " t=M\n"
		    " if [ -L \"$f\" ]; then t=L; elif [ -d \"$f\" ]; then t=D; elif [ -f \"$f\" ]; then"
		    " if [ -r \"$f\" ]; then t=F; else t=U; fi; elif [ -e \"$f\" ]; then t=O; fi\n"
		    " k=-; if [ -L \"$f.bak\" ]; then k=L; elif [ -f \"$f.bak\" ]; then k=F;"
		    " elif [ -e \"$f.bak\" ]; then k=O; fi\n"
		    " a=$d; while [ ! -d \"$a\" ]; do case $a in */*) a=${a%%/*};; *) a=.;; esac; done\n"
		    " e=1; [ \"$a\" = \"$d\" ] || e=0\n"
		    " w=0; [ -w \"$a\" ] && w=1\n"
		    " p=e; if cd -P -- \"$a\" 2>/dev/null; then case $PWD/ in \"$R\"/*) p=i;; *) p=o;; esac;"
		    " cd -- \"$R\" || exit 3; fi\n"
		    " echo \"@%s f $i $t $k $p $w $e\"\n"
		    " eval \"T$i=\\$t\"\n"
		    " for g in \"$@\"; do\n"
		    "  [ -e \"$g\" ] || [ -L \"$g\" ] || continue\n"
		    "  if [ \"$C\" = 1 ] && rm -f -- \"$g\"; then r=r; else r=k; fi\n"
		    "  echo \"@%s t $i $r ${g##*.boxgate-}\"\n"
		    " done\n"
		    "}\n",
		    N, N);
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
	if (o->stats) {
		strbuf_addstr(&sb, "set --\n");
		for (size_t k = 0; k < n; k++) {
			strbuf_addf(&sb, "[ \"$T%zu\" = F ] && set -- \"$@\" ", idx[k]);
			q(&sb, p->items[idx[k]].rel);
			strbuf_addch(&sb, '\n');
		}
		strbuf_addf(&sb, "echo \"@%s stats $#\"\n[ $# = 0 ] || stat -c '%%a %%s' -- \"$@\"\n", N);
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
	strbuf_addf(&sb, "echo \"@%s hashes $#\"\n[ $# = 0 ] || sha256sum -- \"$@\"\n", N);
	for (size_t k = 0; k < n; k++) {
		const sync_item *it = &p->items[idx[k]];
		if (!(it->local && it->size >= SYNC_BIG_FILE))
			continue;
		strbuf f = STRBUF_INIT;
		q(&f, it->rel);
		strbuf_addf(&sb,
			    "if [ \"$T%zu\" = F ]; then s=$(stat -c %%s -- %s); "
			    "if [ \"$s\" = %llu ]; then printf '@%s H %zu '; bh < %s || echo; "
			    "else echo \"@%s S %zu $s\"; fi; fi\n",
			    idx[k], strbuf_str(&f), (unsigned long long)it->size, N, idx[k], strbuf_str(&f), N,
			    idx[k]);
		strbuf_release(&f);
	}
	strbuf_addf(&sb, "echo '@%s end'\n", N);
	if (o->hold)
		/* Serve the next steps of this push under the lock: each is a
		 * script on stdin ended by a go line; stdin's end ends it all. */
		strbuf_addf(&sb,
			    "while :; do\n"
			    " s= g=\n"
			    " while IFS= read -r l; do if [ \"$l\" = '@%s go' ]; then g=1; break; fi; s=\"$s$l\n\"; done\n"
			    " [ -n \"$g\" ] || exit 0\n"
			    " eval \"$s\"\n"
			    " echo '@%s done'\n"
			    "done\n",
			    N, N);
	strbuf_addstr(&sb, "exit 0\n");
	return strbuf_detach(&sb);
}

char *sync_script_scan(const char *repo, const char *nonce)
{
	strbuf sb = STRBUF_INIT;
	prelude(&sb, repo, nonce);
	strbuf_addf(&sb,
		    "echo '@%s scan'\n"
		    "find . -name .git -prune -o -type f \\( -name '*.bak' -o -name '.*.boxgate-????????????????.tmp*' \\) -print0\n"
		    "printf '\\n@%s end\\n'\n",
		    nonce, nonce);
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
	const char *N = nonce;
	prelude(&sb, repo, N);
	strbuf_addstr(&sb, "BOXGATE_BOX=");
	q(&sb, box);
	/* Verifiers that import the file must not leave bytecode named after
	 * the temporary file. */
	strbuf_addstr(&sb, "; PYTHONDONTWRITEBYTECODE=1; export BOXGATE_BOX PYTHONDONTWRITEBYTECODE\n");
	/* bgv INDEX TEMP EXPECTED-SHA BIG VERIFIER-FUNCTION TARGET VPATH VLINK VDIR */
	strbuf_addf(&sb,
		    "bgv() {\n"
		    /* $4: 0 sha256sum, 1 the fastest hasher (big files), 2 already checked */
		    " if [ \"$4\" = 2 ]; then h=$3; elif [ \"$4\" = 1 ]; then h=$(bh < \"$2\"); else h=$(sha256sum < \"$2\"); fi\n"
		    " h=${h%%%% *}\n"
		    " echo \"@%s h $1 $h\"\n"
		    " if [ -n \"$3\" ] && [ \"$h\" != \"$3\" ]; then rm -f -- \"$2\"; echo \"@%s x $1 hash\"; return 1; fi\n"
		    " if [ -z \"$5\" ]; then echo \"@%s vok $1\"; return 0; fi\n"
		    " BOXGATE_TARGET=$6; BOXGATE_FILE=$7; export BOXGATE_TARGET BOXGATE_FILE\n"
		    " if [ -n \"$8\" ] && ! ln -s -- \"$9\" \"$8\"; then rm -f -- \"$2\"; echo \"@%s x $1 vlink\"; return 1; fi\n"
		    /* The assignment's status is the verifier's, even when it calls
		     * exit. The path goes in as $1 too: never as text to splice. */
		    " o=$(\"$5\" \"$7\" 2>&1 </dev/null); r=$?\n"
		    " [ -z \"$8\" ] || rm -f -- \"$8\"\n"
		    /* Each output line starts with '|': none can pass for a result line. */
		    " if [ \"$r\" != 0 ]; then printf '@%s v %%s %%s\\n' \"$1\" \"$r\";"
		    " printf '%%s\\n' \"$o\" | sed 's/^/|/'; printf '@%s vend %%s\\n' \"$1\";"
		    " rm -f -- \"$2\"; return 1; fi\n"
		    " echo \"@%s vok $1\"\n"
		    "}\n",
		    N, N, N, N, N, N, N);
	/* bgs INDEX TEMP TARGET BAK-TEMP KEEP-OWNER: TARGET.bak becomes the
	 * current target (a hard link, or a full copy renamed into place: both
	 * keep its owner, group and mode), then TEMP replaces TARGET by
	 * rename(2). At no instant is TARGET anything but the old or the new
	 * file, nor TARGET.bak a partial one. With KEEP-OWNER=1, TEMP first gets
	 * TARGET's owner and group (numeric; chown drops setuid/setgid bits, so
	 * the mode is set again); when that is refused, a w line says so. */
	strbuf_addf(&sb,
		    "bgs() {\n"
		    " w=created\n"
		    " if [ -e \"$3\" ] || [ -L \"$3\" ]; then\n"
		    "  w=replaced\n"
		    "  if [ \"$3\" -ef \"$3.bak\" ]; then :\n"
		    "  elif ln -f -- \"$3\" \"$3.bak\" 2>/dev/null; then :\n"
		    "  elif cp -p -- \"$3\" \"$4\" && mv -f -- \"$4\" \"$3.bak\"; then :\n"
		    "  else rm -f -- \"$2\" \"$4\"; echo \"@%s x $1 bak\"; return 1; fi\n"
		    "  if [ \"$5\" = 1 ]; then\n"
		    "   s=$(stat -c %%u:%%g:%%a -- \"$3\" \"$2\" 2>/dev/null) || s=\n"
		    "   o=${s%%%%[!0-9:]*}; n=${s#*[!0-9:]}; ou=${o%%:*}; nu=${n%%:*}; nm=${n##*:}\n"
		    "   if [ -n \"$ou\" ] && [ -n \"$nu\" ] && [ \"$ou\" != \"$nu\" ]; then\n"
		    "    if chown -- \"+${ou%%:*}:+${ou#*:}\" \"$2\" 2>/dev/null; then\n"
		    "     case $nm in [0-7][0-7][0-7][0-7]) chmod -- \"$nm\" \"$2\";; esac\n"
		    "    else chown -- \":+${ou#*:}\" \"$2\" 2>/dev/null; echo \"@%s w $1 $ou $nu\"; fi\n"
		    "   fi\n"
		    "  fi\n"
		    " fi\n"
		    " if mv -f -- \"$2\" \"$3\"; then echo \"@%s ok $1 $w\"; else rm -f -- \"$2\"; echo \"@%s x $1 mv\"; return 1; fi\n"
		    "}\n",
		    N, N, N, N);
	if (what & SYNC_DO_ROLLBACK)
		/* bgr INDEX TARGET TEMP: TEMP becomes a second name of TARGET.bak. */
		strbuf_addf(&sb,
			    "bgr() {\n"
			    " if [ ! -f \"$2.bak\" ] || [ -L \"$2.bak\" ]; then echo \"@%s x $1 nobak\"; return 1; fi\n"
			    " ln -- \"$2.bak\" \"$3\" 2>/dev/null || cp -p -- \"$2.bak\" \"$3\" ||"
			    " { rm -f -- \"$3\"; echo \"@%s x $1 copy\"; return 1; }\n"
			    "}\n",
			    N, N);
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
			strbuf_addf(&sb, "%sbgv %zu %s %s %d ", first ? "" : " && ", a->index, strbuf_str(&x),
				    a->sha ? a->sha : "''", a->prehashed && a->sha ? 2 : a->big ? 1 : 0);
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
		if (what & (SYNC_DO_SWAP | SYNC_DO_ROLLBACK))
			strbuf_addf(&sb, "%sbgs %zu %s %s %s %d", first ? "" : " && ", a->index, strbuf_str(&x),
				    strbuf_str(&t), strbuf_str(&xb), a->keep_owner ? 1 : 0);
		strbuf_addch(&sb, '\n');
		strbuf_release(&t);
		strbuf_release(&x);
		strbuf_release(&xb);
	}
	if (!(what & SYNC_NO_EXIT))
		strbuf_addstr(&sb, "exit 0\n");
	return strbuf_detach(&sb);
}
