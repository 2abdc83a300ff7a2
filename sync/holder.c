/* Running scripts on a box, and the probe whose shell holds the box's push
 * lock for the rest of the push: later steps are sent to it on its stdin. */
#include "sync/internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/quote.h"
#include "base/timer.h"
#include "base/xmalloc.h"

/* Waits on e until `deadline`, or for a short slice when `slice` (the
 * caller also watches for what the command prints). */
static int wait_step(sync_box *b, remote_exec *e, int64_t deadline, bool slice, remote_status *st)
{
	int64_t step = deadline;
	if (slice) {
		int64_t soon = bg_now_ms() + 2;
		if (soon < step)
			step = soon;
	}
	return remote_exec_wait(e, step, st, &b->err);
}

/* Past `deadline`, kills e and returns BG_ETIMEOUT; 0 before it. */
static int kill_when_late(sync_box *b, remote_exec *e, int64_t deadline, remote_status *st)
{
	if (bg_now_ms() < deadline)
		return 0;
	remote_exec_kill(e, 2000, st, NULL);
	return bg_fail(&b->err, BG_ETIMEOUT, "%s: the box did not finish in time", b->box->name);
}

int sync_run_script(sync_box *b, const char *script, int64_t deadline, bool hold, remote_status *st)
{
	strbuf cmd = STRBUF_INIT;
	strbuf_addstr(&cmd, "exec /bin/sh -c ");
	bg_quote(&cmd, script);
	remote_exec_opts eo = {.on_line = sync_on_line, .ctx = b, .killable = true};
	remote_exec *e = NULL;
	memset(st, 0, sizeof(*st));
	b->end = false;
	b->block = SYNC_BLOCK_NONE;
	int rc = remote_exec_start(b->conn, strbuf_str(&cmd), &eo, &e, &b->err);
	strbuf_release(&cmd);
	if (rc < 0)
		return rc;
	if (!hold)
		remote_exec_close_stdin(e);
	for (;;) {
		int r = wait_step(b, e, deadline, hold, st);
		if (r < 0) {
			rc = r;
			break;
		}
		if (r == 1) {
			rc = 0;
			break;
		}
		if (hold && b->end) {
			b->holder = e;
			return 0;
		}
		if ((rc = kill_when_late(b, e, deadline, st)) < 0)
			break;
	}
	if (b->vfile >= 0)
		sync_verify_output_end(b);
	remote_exec_free(e);
	return rc;
}

int sync_holder_run(sync_box *b, const char *script, bool last, int64_t deadline, remote_status *st)
{
	remote_exec *e = b->holder;
	char *go = sync_proto_go_line(b);
	int rc = 0;
	bool exited = false;
	memset(st, 0, sizeof(*st));
	b->cmd_done = false;
	b->block = SYNC_BLOCK_NONE;
	remote_exec_write(e, script, strlen(script));
	remote_exec_write(e, go, strlen(go));
	free(go);
	if (last)
		remote_exec_close_stdin(e);
	for (;;) {
		int r = wait_step(b, e, deadline, !last, st);
		if (r < 0) {
			rc = r;
			break;
		}
		if (r == 1 || (!last && b->cmd_done)) {
			exited = r == 1;
			if (r == 0)
				st->how = REMOTE_EXITED; /* still running, the step is done */
			break;
		}
		if ((rc = kill_when_late(b, e, deadline, st)) < 0)
			break;
	}
	if (b->vfile >= 0)
		sync_verify_output_end(b);
	if (rc < 0 || last || exited) {
		remote_exec_free(e);
		b->holder = NULL;
	}
	return rc;
}

/* Probes items idx[0..n), halving the batch while its script is too long
 * for one command line; later batches run under the first one's lock. */
static int probe_range(sync_box *b, size_t *idx, size_t n, sync_probe_kind kind, bool first,
		       int64_t deadline)
{
	const sync_opts *o = b->opts;
	sync_probe_opts po = {
		.repo = b->box->repo,
		.nonce = b->nonce,
		.lock = first && kind != SYNC_PROBE_DRY,
		.lock_wait_s =
			kind == SYNC_PROBE_STATUS ? 0 : (o->lock_wait_s > 0 ? o->lock_wait_s : 30),
		.fail_busy = kind == SYNC_PROBE_PUSH || kind == SYNC_PROBE_ROLLBACK,
		.clean = kind == SYNC_PROBE_STATUS ? o->clean : kind != SYNC_PROBE_DRY,
		.stats = kind == SYNC_PROBE_STATUS || o->keep_mode,
		.hold = first && (kind == SYNC_PROBE_PUSH || kind == SYNC_PROBE_ROLLBACK),
		.pushed = first && b->want_pushed && !b->have_pushed,
	};
	if (!first) {
		/* Later batches run under the first one's lock. */
		po.clean = po.clean && b->lock == SYNC_LOCK_OURS;
		po.lock = false;
	}
	char *script = sync_script_probe(&po, b->plan, idx, n);
	if (strlen(script) > SYNC_SCRIPT_MAX && n > 1) {
		free(script);
		int rc = probe_range(b, idx, n / 2, kind, first, deadline);
		if (rc < 0)
			return rc;
		return probe_range(b, idx + n / 2, n - n / 2, kind, false, deadline);
	}
	if (strlen(script) > SYNC_SCRIPT_MAX) {
		free(script);
		sync_file_fail(b, idx[0], BG_EUSAGE, "the path is too long to handle");
		return 0;
	}
	b->batch = idx;
	b->batch_n = n;
	remote_status st;
	int rc = sync_run_script(b, script, deadline, po.hold, &st);
	free(script);
	b->batch = NULL;
	b->batch_n = 0;
	if (rc < 0)
		return rc;
	if (b->norepo)
		return bg_fail(&b->err, BG_EREMOTE, "%s: the repo %s does not exist on the box",
			       b->box->name, b->box->repo);
	if (first && b->lock == SYNC_LOCK_BUSY)
		return bg_fail(
			&b->err, BG_EBUSY,
			"%s: another boxgate push or rollback is running on the box (waited %d s)",
			b->box->name, po.lock_wait_s);
	if (b->proto_err || !b->end || !b->repo_abs) {
		char how[96];
		remote_status_describe(&st, how, sizeof(how));
		return bg_fail(&b->err, BG_EPROTO,
			       "%s: the probe did not answer as expected (%s)%s%s", b->box->name,
			       how, b->errtail.len ? ": " : "", sync_errtail(b));
	}
	return 0;
}

int sync_probe(sync_box *b, sync_probe_kind kind)
{
	size_t n = b->plan->n;
	if (n == 0)
		return 0;
	size_t *idx = xcalloc(n, sizeof(*idx));
	uint64_t big = 0;
	for (size_t i = 0; i < n; i++) {
		idx[i] = i;
		if (sync_item_big(sync_box_item(b, i)))
			big += sync_box_item(b, i)->size;
	}
	int lock_wait = b->opts->lock_wait_s > 0 ? b->opts->lock_wait_s : 30;
	/* Hashing big files on the box takes time: allow 20 MB/s. */
	int64_t deadline =
		bg_deadline_ms((int64_t)(lock_wait + 120) * 1000 + (int64_t)(big / 20000));
	int rc = probe_range(b, idx, n, kind, true, deadline);
	free(idx);
	return rc;
}
