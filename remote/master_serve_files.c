/* Connection masters, file transfer on the master's side: a client's OP
 * frame run on the master's own connection with the calls of sftp.h (its
 * SFTP session opened once and kept for later clients), the result sent
 * back as RES. While a call waits on the box, the master sends KEEP frames
 * and watches its client: one that goes (or sends STOP) ends the call, and
 * an upload it started is removed as a failed one is. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/timer.h"
#include "base/xmalloc.h"
#include "remote/master_files.h"
#include "remote/master_proto.h"
#include "remote/master_serve.h"

/* The longest path the master hands libssh2 (Linux's PATH_MAX is 4096). */
#define MASTER_PATH_MAX 32768

/* At each wait of the call: the master's chores, the client's bytes read,
 * and whether it went or asked to stop (frames after the OP are looked at,
 * not taken). */
static int call_hook(void *ctx)
{
	struct master_client *cl = ctx;
	mc_tick(cl);
	mc_read(cl);
	size_t off = cl->off;
	int type;
	const char *p;
	size_t n;
	while (mf_take(&cl->in, &off, &type, &p, &n) == 1)
		if (type == MF_STOP)
			cl->stop = true;
	return cl->gone || cl->stop ? -1 : 0;
}

/* The upload's file exists: the client is told and may start commands
 * (they are started here) until it says RESUME. */
static void on_created(void *ctx)
{
	struct master_client *cl = ctx;
	mc_send(cl, MF_CREATED, NULL, 0);
	int64_t limit = mc_silence_ms(cl);
	cl->heard_ms = bg_now_ms();
	while (!cl->gone) {
		int type, t;
		const char *p;
		size_t n;
		while ((t = mf_take(&cl->in, &cl->off, &type, &p, &n)) == 1) {
			if (type == MF_RESUME)
				return;
			if (type != MF_OP)
				mc_dispatch(cl, type, p, n);
		}
		if (t < 0) {
			cl->gone = true;
			return;
		}
		mf_compact(&cl->in, &cl->off);
		mc_tick(cl);
		if (limit && bg_now_ms() - cl->heard_ms > limit) {
			cl->gone = true; /* a stopped client: the upload ends */
			return;
		}
		struct pollfd pf = {.fd = cl->fd, .events = POLLIN};
		if (poll(&pf, 1, 1000) > 0)
			mc_read(cl);
	}
}

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct master_client *cl = ctx;
	static int64_t last;
	int64_t now = bg_now_ms();
	if (done != total && now - last < 100)
		return;
	last = now;
	strbuf p = STRBUF_INIT;
	mf_put_u64(&p, done);
	mf_put_u64(&p, total);
	mc_send(cl, MF_GOT, p.buf, p.len);
	strbuf_release(&p);
}

static int on_data(void *ctx, const void *buf, size_t n)
{
	struct master_client *cl = ctx;
	if (cl->gone || cl->stop)
		return BG_EIO;
	mc_send(cl, MF_DATA, buf, n);
	return cl->gone ? BG_EIO : 0;
}

static void put_stat(strbuf *x, const remote_fs_stat *st)
{
	mf_put_u32(x, (uint32_t)st->type);
	mf_put_u32(x, st->mode);
	mf_put_u64(x, st->size);
}

/* A directory's entries, in frames of at most about 1 MiB. */
static void send_entries(struct master_client *cl, const remote_dirent *v, size_t n)
{
	size_t i = 0;
	while (i < n) {
		strbuf f = STRBUF_INIT, body = STRBUF_INIT;
		uint32_t k = 0;
		while (i < n && body.len < ((size_t)1 << 20)) {
			mf_put_lstr(&body, v[i].name, strlen(v[i].name));
			mf_put_u32(&body, (uint32_t)v[i].type);
			mf_put_u32(&body, v[i].mode);
			mf_put_u64(&body, v[i].size);
			i++;
			k++;
		}
		mf_put_u32(&f, k);
		strbuf_add(&f, body.buf, body.len);
		mc_send(cl, MF_ENT, f.buf, f.len);
		strbuf_release(&f);
		strbuf_release(&body);
	}
}

void remote_master_serve_op(struct master_client *cl, const char *p, size_t n)
{
	remote_conn *c = cl->c;
	mf_reader r = {(const unsigned char *)p, n};
	uint32_t op = 0, mode = 0, flag = 0, stall = 0;
	uint64_t left = 0, size = 0, window = 0;
	/* The frame is taken apart before any wait: the client's later bytes
	 * may move the buffer it lies in. */
	bool ok = mf_get_u32(&r, &op) && mf_get_u64(&r, &left);
	if (ok && (op == MO_MKDIR))
		ok = mf_get_u32(&r, &mode);
	if (ok && op == MO_PUT)
		ok = mf_get_u64(&r, &size) && mf_get_u32(&r, &mode) && mf_get_u32(&r, &flag) &&
		     mf_get_u64(&r, &window) && mf_get_u32(&r, &stall);
	if (ok && op == MO_GET)
		ok = mf_get_u64(&r, &size) && mf_get_u32(&r, &stall);
	char *path = ok ? mf_get_path(&r) : NULL;
	int64_t deadline = left ? bg_deadline_ms((int64_t)left) : BG_NEVER;
	int fd = cl->passed_fd;
	cl->passed_fd = -1;
	strbuf x = STRBUF_INIT;
	bg_err err = {0};
	int rc = 0;
	uint32_t flags = 0;
	c->last_rx_ms = bg_now_ms(); /* idle is not silence */
	c->wait_hook = call_hook;
	c->wait_hook_ctx = cl;
	cl->stop = false;
	if (!path) {
		rc = bg_fail(&err, BG_EPROTO, "%s: a bad file transfer request", c->target->name);
	} else if (strlen(path) > MASTER_PATH_MAX) {
		/* libssh2 would fail it as a lost connection, and the master
		 * would end for a request that never reached the box. */
		rc = bg_fail(&err, BG_EREMOTE, "%s: %.64s...: the path is too long (%zu bytes)",
			     c->target->name, path, strlen(path));
	} else if (op == MO_LSTAT || op == MO_FOLLOW) {
		remote_fs_stat st;
		rc = op == MO_LSTAT ? remote_fs_lstat(c, path, &st, deadline, &err)
				    : remote_fs_follow(c, path, &st, deadline, &err);
		put_stat(&x, &st);
	} else if (op == MO_MKDIR) {
		rc = remote_fs_mkdir(c, path, mode, deadline, &err);
	} else if (op == MO_UNLINK) {
		rc = remote_fs_unlink(c, path, deadline, &err);
	} else if (op == MO_SPACE) {
		uint64_t avail = 0;
		bool ro = false;
		rc = remote_fs_space(c, path, &avail, &ro, deadline, &err);
		mf_put_u64(&x, avail);
		mf_put_u32(&x, ro);
	} else if (op == MO_REALPATH) {
		char *out = NULL;
		rc = remote_fs_realpath(c, path, &out, deadline, &err);
		mf_put_lstr(&x, out ? out : "", out ? strlen(out) : 0);
		free(out);
	} else if (op == MO_READDIR) {
		remote_dirent *v = NULL;
		size_t k = 0;
		rc = remote_fs_readdir(c, path, &v, &k, deadline, &err);
		if (rc == 0)
			send_entries(cl, v, k);
		remote_dirents_free(v, k);
	} else if (op == MO_PUT && fd >= 0) {
		remote_put_opts o = {.mode = mode,
				     .fsync = flag != 0,
				     .window = (size_t)window,
				     .stall_ms = (int)stall,
				     .progress = on_progress,
				     .progress_ctx = cl,
				     .created = on_created,
				     .created_ctx = cl};
		bool exists = false;
		rc = remote_put_file(c, fd, size, path, &o, &exists, &err);
		flags |= exists ? MR_EXISTS : 0;
	} else if (op == MO_GET) {
		remote_get_opts o = {
			.data = on_data, .data_ctx = cl, .progress = NULL, .stall_ms = (int)stall};
		uint64_t got = 0;
		rc = remote_get_file(c, path, size, &o, &got, &err);
		mf_put_u64(&x, got);
	} else {
		rc = bg_fail(&err, BG_EPROTO, "%s: a bad file transfer request", c->target->name);
	}
	/* The hook clears itself when it cuts a call short: libssh2 may have a
	 * request of the session's outstanding, so the master ends once it
	 * has answered (a download stopped at the client's word cuts only its
	 * own handle's reads: the master serves on). An upload cut short may have created its file
	 * (its open was on the way): removed, as a failed upload's is. */
	bool cut = path && c->wait_hook == NULL && (cl->gone || op != MO_GET);
	c->wait_hook = NULL;
	c->wait_hook_ctx = NULL;
	if (cut && op == MO_PUT && !(flags & MR_EXISTS) && rc < 0 && !c->dead) {
		bg_err ignored = {0};
		remote_fs_unlink(c, path, bg_deadline_ms(5000), &ignored);
	}
	if (fd >= 0)
		close(fd);
	free(path);
	if (rc == BG_ECONNECT)
		remote_ssh_mark_dead(c);
	strbuf res = STRBUF_INIT;
	mf_put_u32(&res, (uint32_t)rc);
	mf_put_u32(&res, flags);
	mf_put_str(&res, rc < 0 ? err.msg : "", rc < 0 ? strlen(err.msg) : 0);
	strbuf_add(&res, x.buf, x.len);
	mc_send(cl, MF_RES, res.buf, res.len);
	strbuf_release(&res);
	strbuf_release(&x);
	if (cut)
		mc_end();
}
