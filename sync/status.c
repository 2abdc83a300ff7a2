/* Status: each target on the box against the local file; without targets,
 * those the box has a .bak or a temporary file for, and those its manifest
 * says push placed (a file push created has no .bak). */
#include "sync/internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "base/xmalloc.h"

#define SCAN_TARGETS_MAX 10000

/* Turns the scan's NUL-separated names into the box's own plan. */
static int scan_targets(sync_box *b)
{
	char *script = sync_script_scan(b->box->repo, b->nonce);
	remote_status st;
	int rc = sync_run_script(b, script, bg_deadline_ms(300000), false, &st);
	free(script);
	if (rc < 0)
		return rc;
	if (b->norepo)
		return bg_fail(&b->err, BG_EREMOTE, "%s: the repo %s does not exist on the box",
			       b->box->name, b->box->repo);
	if (!b->end)
		return bg_fail(&b->err, BG_EPROTO, "%s: the scan did not finish%s%s", b->box->name,
			       b->errtail.len ? ": " : "", sync_errtail(b));
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
			target = xasprintf("%.*s%.*s", (int)(base - p), p, (int)(tag - base - 1),
					   base + 1);
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
	/* The manifest came with the scan: what push placed, .bak or not. */
	sync_manifest_entry *e = NULL;
	size_t n = b->pushed_big ? 0 : sync_manifest_parse(strbuf_str(&b->pushed), &e);
	for (size_t k = 0; k < n && count < SCAN_TARGETS_MAX; k++) {
		char *target = xstrndup(e[k].path, e[k].path_len);
		bg_err ignored = {0};
		if (sync_plan_add_rel(&b->own_plan, target, &ignored) == 0)
			count++;
		free(target);
	}
	free(e);
	rc = sync_plan_finish(&b->own_plan, b->opts->verifier_for, b->opts->verifier_ctx, &b->err);
	if (rc < 0)
		return rc;
	b->plan = &b->own_plan;
	b->files = b->own_plan.n ? xcalloc(b->own_plan.n, sizeof(*b->files)) : NULL;
	return 0;
}

int sync_status_box(sync_box *b)
{
	b->want_pushed = true;
	int rc = sync_box_connect(b);
	if (rc < 0)
		return sync_box_fail(b, rc);
	if (b->plan->n == 0) {
		rc = scan_targets(b);
		if (rc < 0)
			return sync_box_fail(b, rc);
	}
	rc = sync_probe(b, SYNC_PROBE_STATUS);
	if (rc < 0)
		return sync_box_fail(b, rc);
	if (sync_plan_wait(b->plan, &b->err) < 0)
		return sync_box_fail(b, BG_EIO);
	sync_pushed_mark(b);
	for (size_t i = 0; i < b->plan->n; i++) {
		const sync_item *it = sync_box_item(b, i);
		sync_file *f = &b->files[i];
		f->bak_after = f->btype == SYNC_FT_FILE;
		switch (f->rtype) {
		case SYNC_FT_FILE:
			if (!it->local)
				f->state = SYNC_NO_LOCAL;
			else if (f->rsha[0] && strcmp(f->rsha, it->sha) == 0)
				f->state = SYNC_SAME;
			else
				f->state = SYNC_DIFFERS;
			break;
		case SYNC_FT_MISSING: f->state = SYNC_MISSING; break;
		default: {
			const char *what = f->rtype == SYNC_FT_DIR          ? "a directory"
					   : f->rtype == SYNC_FT_SYMLINK    ? "a symlink"
					   : f->rtype == SYNC_FT_UNREADABLE ? "unreadable"
									    : "not a regular file";
			f->state = SYNC_DIFFERS;
			f->msg = xasprintf("%s on the box", what);
		}
		}
	}
	return 0;
}
