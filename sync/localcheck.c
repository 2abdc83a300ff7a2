/* The local pre-check: a built-in verifier (Python's ast, bash -n, a JSON
 * parse) runs on the local file before any box is touched, so a syntax
 * error fails fast. User-configured verifiers may need the box's own
 * environment (importing the repo, CUDA), so they run on the boxes only. */
#include "sync/sync.h"

#include <stdlib.h>
#include <string.h>

#include "base/exit.h"
#include "base/lines.h"
#include "base/quote.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"

#define LOCAL_CHECK_TIMEOUT_MS 120000
#define LOCAL_OUTPUT_MAX       (64 * 1024)

static void collect(void *ctx, remote_stream s, const char *line, size_t len, int flags)
{
	(void)s;
	strbuf *sb = ctx;
	if (sb->len + len + 1 > LOCAL_OUTPUT_MAX)
		return;
	strbuf_add(sb, line, len);
	if (!(flags & LINE_PARTIAL))
		strbuf_addch(sb, '\n');
}

int sync_local_check(const char *python, const sync_plan *p, const sync_item *it, bool *ran,
		     int *rc_out, char **output, bg_err *err)
{
	*ran = false;
	*rc_out = 0;
	*output = NULL;
	if (!it->verifier || !it->verifier_builtin || !it->local)
		return 0;
	remote_target local = {.name = "local", .transport = REMOTE_TRANSPORT_LOCAL};
	remote_conn *conn = NULL;
	int rc = remote_connect(&local, NULL, &conn, err);
	if (rc < 0)
		return rc;
	strbuf cmd = STRBUF_INIT;
	strbuf_addstr(&cmd, "cd ");
	bg_quote(&cmd, p->root);
	strbuf_addstr(&cmd, " && PYTHONDONTWRITEBYTECODE=1 && export PYTHONDONTWRITEBYTECODE && ");
	char *v = sync_verifier_command(it->verifier, it->local, python ? python : "python3");
	strbuf_addstr(&cmd, v);
	free(v);
	strbuf out = STRBUF_INIT;
	remote_status st = {0};
	rc = remote_run(conn, strbuf_str(&cmd), collect, &out, LOCAL_CHECK_TIMEOUT_MS, &st, err);
	remote_close(conn);
	strbuf_release(&cmd);
	if (rc == BG_ETIMEOUT) {
		*ran = true;
		*rc_out = 124;
		strbuf_addstr(&out, "the local check timed out\n");
		*output = strbuf_detach(&out);
		return 0;
	}
	if (rc < 0) {
		strbuf_release(&out);
		return rc;
	}
	int code = st.how == REMOTE_EXITED ? st.code : 128;
	if (code == 127) {
		/* The interpreter is not installed here: the box decides alone. */
		strbuf_release(&out);
		return 0;
	}
	*ran = true;
	*rc_out = code;
	*output = strbuf_detach(&out);
	return 0;
}

int sync_local_checks(const char *python, const sync_plan *p, const sync_local_checks_cb *cb)
{
	int code = BG_EXIT_OK;
	for (size_t i = 0; i < p->n; i++) {
		const sync_item *it = &p->items[i];
		bool ran = false;
		int rc = 0;
		char *out = NULL;
		bg_err err = {0};
		if (sync_local_check(python, p, it, &ran, &rc, &out, &err) < 0) {
			cb->could_not_run(cb->ctx, it, err.msg);
			continue;
		}
		if (ran && rc != 0) {
			cb->refused(cb->ctx, it, rc, out ? out : "");
			code = BG_EXIT_VERIFY;
		}
		free(out);
	}
	return code;
}
