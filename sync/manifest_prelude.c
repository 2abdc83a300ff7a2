#include "sync/manifest_prelude.h"

#include <stdlib.h>
#include <string.h>

#include "base/lines.h"
#include "base/quote.h"
#include "base/xmalloc.h"
#include "sync/report.h"

char *sync_manifest_prelude(const sync_target *box)
{
	strbuf s = STRBUF_INIT;
	if (!box->repo || !*box->repo) {
		strbuf_addstr(&s, "echo '" SYNC_MANIFEST_TAG ".'");
		return strbuf_detach(&s);
	}
	char *path = xasprintf("%s/.boxgate/pushed", box->repo);
	strbuf_addstr(&s, "f=");
	bg_quote_path(&s, path);
	/* A fifo or a device is refused before anything reads it; awk ends
	 * every line with a newline, so the end line stands alone. */
	strbuf_addf(&s,
		    "; if [ ! -e \"$f\" ]; then :; "
		    "elif [ ! -f \"$f\" ]; then echo '" SYNC_MANIFEST_TAG "!not a regular file'; "
		    "elif ! n=$(wc -c <\"$f\"); then echo '" SYNC_MANIFEST_TAG "!cannot read it'; "
		    "elif [ \"$n\" -gt %u ]; then echo \"" SYNC_MANIFEST_TAG
		    "!larger than %u bytes ($n)\"; "
		    "else awk '{ print \"" SYNC_MANIFEST_TAG
		    "=\" $0 }' \"$f\" || echo '" SYNC_MANIFEST_TAG
		    "!cannot read it'; fi; echo '" SYNC_MANIFEST_TAG ".'",
		    SYNC_MANIFEST_MAX, SYNC_MANIFEST_MAX);
	free(path);
	return strbuf_detach(&s);
}

void sync_manifest_collect_line(sync_manifest_collect *m, const char *line, size_t len, int flags)
{
	if (!m->mid) {
		size_t tl = strlen(SYNC_MANIFEST_TAG);
		if (len <= tl || memcmp(line, SYNC_MANIFEST_TAG, tl) != 0)
			return; /* not the prelude's: run.c passes only its own */
		if (len == tl + 1 && line[tl] == '.' && !(flags & LINE_PARTIAL)) {
			m->ended = true;
			return;
		}
		m->mid_text = line[tl] == '=';
		if (!m->mid_text && line[tl] != '!')
			return;
		line += tl + 1;
		len -= tl + 1;
	}
	m->mid = flags & LINE_PARTIAL;
	strbuf *sb = m->mid_text ? &m->text : &m->why;
	size_t max = m->mid_text ? SYNC_MANIFEST_MAX : 200;
	if (m->over || sb->len + len + 1 > max) {
		m->over = m->over || m->mid_text;
		return;
	}
	strbuf_add(sb, line, len);
	if (!m->mid && m->mid_text)
		strbuf_addch(sb, '\n');
}

int sync_manifest_collect_end(sync_manifest_collect *m, const sync_target *box, char **text,
			      bg_err *err)
{
	int rc = 0;
	*text = NULL;
	const char *repo = box->repo && *box->repo ? box->repo : "";
	if (!m->ended)
		rc = bg_fail(err, BG_EREMOTE,
			     "cannot read %s/.boxgate/pushed: the run's command ended before it "
			     "was read",
			     repo);
	else if (m->why.len)
		rc = bg_fail(err, BG_EREMOTE, "cannot read %s/.boxgate/pushed: %s", repo,
			     strbuf_str(&m->why));
	else if (m->over)
		rc = bg_fail(err, BG_EREMOTE,
			     "cannot read %s/.boxgate/pushed: larger than %u bytes", repo,
			     SYNC_MANIFEST_MAX);
	else
		*text = xstrdup(strbuf_str(&m->text));
	sync_manifest_collect_release(m);
	return rc;
}

void sync_manifest_collect_release(sync_manifest_collect *m)
{
	strbuf_release(&m->text);
	strbuf_release(&m->why);
	memset(m, 0, sizeof(*m));
}
