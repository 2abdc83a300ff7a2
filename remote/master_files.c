/* Connection masters, file transfer on the client's side: each SFTP call
 * of sftp.h is one OP frame to the master and its RES back (after ENT, GOT,
 * CREATED, DATA and KEEP frames). A master that goes silent for as long as
 * ssh gives a silent link, or goes away, is a lost connection, as a fresh
 * connection's would be; one that is gone before the call went out is
 * passed by: the connection becomes a fresh one and the call runs there. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "base/xmalloc.h"
#include "remote/internal.h"
#include "remote/master_files.h"
#include "remote/master_proto.h"

/* What a call does with the frames before its RES. */
struct call {
	const remote_put_opts *put;
	const remote_get_opts *get;
	uint64_t got; /* a download's bytes so far */
	int data_rc;  /* the caller's data callback said stop */
	bool stop_sent;
	remote_dirent *ents;
	size_t n_ents, cap_ents;
	bool bad;   /* a frame that did not parse */
	bool heard; /* a frame of the call's came */
	bool retry; /* the call may run again elsewhere: it changes nothing twice */
	bool lost;  /* the master went away while a callback ran */
};

static int64_t silence_ms(const remote_conn *c)
{
	int ka = c->target->keepalive_s;
	return ka > 0 ? (int64_t)ka * 3000 + 1000 : 0;
}

static void entries(struct call *k, const char *p, size_t n)
{
	mf_reader r = {(const unsigned char *)p, n};
	uint32_t cnt = 0;
	if (!mf_get_u32(&r, &cnt)) {
		k->bad = true;
		return;
	}
	for (uint32_t i = 0; i < cnt; i++) {
		const char *name;
		size_t len;
		uint32_t type, mode;
		uint64_t size;
		if (!mf_get_lstr(&r, &name, &len) || !mf_get_u32(&r, &type) ||
		    !mf_get_u32(&r, &mode) || !mf_get_u64(&r, &size) || type > REMOTE_FS_OTHER ||
		    memchr(name, '\0', len) || memchr(name, '/', len)) {
			k->bad = true;
			return;
		}
		k->ents = xgrow(k->ents, &k->cap_ents, k->n_ents + 1, sizeof(*k->ents));
		k->ents[k->n_ents++] = (remote_dirent){xstrndup(name, len), (remote_fs_type)type,
						       mode & 07777, size};
	}
}

/* One frame of the call's: RES returns 1 (its payload in *res), others 0. */
static int on_frame(remote_conn *c, struct call *k, int type, const char *p, size_t n, strbuf *res)
{
	mf_reader r = {(const unsigned char *)p, n};
	uint64_t done, total;
	switch (type) {
	case MF_RES: strbuf_add(res, p, n); return 1;
	case MF_ENT: entries(k, p, n); break;
	case MF_GOT:
		if (k->put && k->put->progress && mf_get_u64(&r, &done) && mf_get_u64(&r, &total))
			k->put->progress(k->put->progress_ctx, done, total);
		break;
	case MF_CREATED: {
		if (k->put && k->put->created)
			k->put->created(k->put->created_ctx);
		strbuf f = STRBUF_INIT;
		mf_add(&f, MF_RESUME, NULL, 0);
		if (remote_master_send(c, f.buf, f.len, -1) < 0)
			k->lost = true; /* the callback's command found it gone */
		strbuf_release(&f);
		break;
	}
	case MF_DATA:
		if (!k->get || k->data_rc < 0)
			break;
		k->data_rc = k->get->data(k->get->data_ctx, p, n);
		if (k->data_rc < 0) {
			strbuf f = STRBUF_INIT;
			mf_add(&f, MF_STOP, NULL, 0);
			remote_master_send(c, f.buf, f.len, -1);
			strbuf_release(&f);
			break;
		}
		k->got += n;
		if (k->get->progress)
			k->get->progress(k->get->progress_ctx, k->got, 0);
		break;
	default: break;
	}
	return 0;
}

/* Sends the OP frame and waits for its RES (in *res): 0, or negative when
 * the master went silent or away (err set; no call goes through it again),
 * or 1 when it was gone before the call went out (the caller goes fresh). */
static int call(remote_conn *c, const strbuf *op, int fd, struct call *k, int64_t deadline,
		strbuf *res, bg_err *err)
{
	const char *name = c->target->name;
	if (!c->m_sftp_said) {
		remote_master_trace(c, "file transfer (SFTP) through the connection master");
		c->m_sftp_said = true;
	}
	strbuf f = STRBUF_INIT;
	mf_add(&f, MF_OP, op->buf, op->len);
	int w = remote_master_send(c, f.buf, f.len, fd);
	strbuf_release(&f);
	if (w < 0) {
		remote_master_drop(c);
		if (c->n_m_execs == 0)
			return 1;
		return bg_fail(err, BG_ECONNECT,
			       "%s: connection lost: the connection master went away", name);
	}
	int64_t limit = silence_ms(c);
	int64_t heard = bg_now_ms();
	/* The master keeps the deadline; without keepalives the client waits
	 * a little past it for the answer. */
	int64_t until = deadline == BG_NEVER ? BG_NEVER : deadline + 10000;
	for (;;) {
		int type, t;
		const char *p;
		size_t n;
		while ((t = mf_take(&c->m_opq, &c->m_opq_off, &type, &p, &n)) == 1) {
			if (type == MF_KEEP)
				continue;
			k->heard = true;
			/* A callback may start a command: its frames queue apart. */
			strbuf frame = STRBUF_INIT;
			strbuf_add(&frame, p, n);
			int done = on_frame(c, k, type, frame.buf, frame.len, res);
			strbuf_release(&frame);
			if (done)
				return 0;
			if (k->lost || c->mfd < 0) {
				remote_master_drop(c);
				return bg_fail(
					err, BG_ECONNECT,
					"%s: connection lost: the connection master went away",
					name);
			}
			if (k->bad) {
				remote_master_drop(c);
				return bg_fail(err, BG_EPROTO,
					       "%s: the connection master sent a bad frame", name);
			}
		}
		mf_compact(&c->m_opq, &c->m_opq_off);
		int64_t now = bg_now_ms();
		if (c->m_heard_ms > heard)
			heard = c->m_heard_ms;
		if (limit && now - heard > limit) {
			remote_master_drop(c);
			return bg_fail(err, BG_ECONNECT,
				       "%s: connection lost: the connection master sent nothing "
				       "for %lld s",
				       name, (long long)(limit / 1000));
		}
		if (!limit && now >= until) {
			remote_master_drop(c);
			return bg_fail(err, BG_ETIMEOUT,
				       "%s: the connection master did not answer in time", name);
		}
		int64_t wake = limit ? heard + limit + 1 : until;
		if (remote_master_pull(c, wake) < 0) {
			remote_master_drop(c);
			/* Gone before it answered anything (killed, or it ended as
			 * its idle time ran out): a call that can run twice runs
			 * on a fresh connection. */
			if (k->retry && !k->heard && c->n_m_execs == 0)
				return 1;
			return bg_fail(err, BG_ECONNECT,
				       "%s: connection lost: the connection master went away",
				       name);
		}
	}
}

static int bad_answer(remote_conn *c, bg_err *err)
{
	return bg_fail(err, BG_EPROTO, "%s: the connection master sent a bad answer",
		       c->target->name);
}

/* The RES header: the call's code and message (err), its flags. */
static int result(remote_conn *c, mf_reader *r, uint32_t *flags, bg_err *err)
{
	uint32_t code = 0;
	const char *msg = "";
	size_t len = 0;
	if (!mf_get_u32(r, &code) || !mf_get_u32(r, flags) || !mf_get_str(r, &msg, &len))
		return bad_answer(c, err);
	int rc = (int)code;
	if (rc > 0 || rc < BG_EUNSUPPORTED)
		return bad_answer(c, err);
	if (rc < 0)
		return bg_fail(err, rc, "%.*s", (int)len, msg);
	return 0;
}

static void op_head(strbuf *x, uint32_t op, int64_t deadline)
{
	mf_put_u32(x, op);
	int64_t left = deadline == BG_NEVER ? 0 : deadline - bg_now_ms();
	mf_put_u64(x, (uint64_t)(deadline == BG_NEVER ? 0 : left > 0 ? left : 1));
}

/* A call with a path and no more: c gone fresh (1), or its RES. */
static int simple(remote_conn *c, uint32_t op, const char *path, const uint32_t *arg,
		  int64_t deadline, strbuf *res, bg_err *err)
{
	strbuf x = STRBUF_INIT;
	op_head(&x, op, deadline);
	if (arg)
		mf_put_u32(&x, *arg);
	mf_put_lstr(&x, path, strlen(path));
	struct call k = {.retry = true};
	int rc = call(c, &x, -1, &k, deadline, res, err);
	strbuf_release(&x);
	remote_dirents_free(k.ents, k.n_ents);
	return rc;
}

/* The master was gone before the call: the connection goes fresh. */
static int fresh(remote_conn *c, bg_err *err)
{
	return remote_master_go_fresh(
		c, "the connection master is gone: connecting fresh for file transfer", err);
}

/* One file call through the master, its answer's result read: 0 with *r
 * on the rest of the answer (in res, which the caller releases), 1 when the
 * master was gone before the call and the connection went fresh (the caller
 * runs the call again on it), negative on failure. */
static int ask(remote_conn *c, uint32_t op, const char *path, const uint32_t *arg, int64_t deadline,
	       strbuf *res, mf_reader *r, bg_err *err)
{
	int rc = c->mfd < 0 ? 1 : simple(c, op, path, arg, deadline, res, err);
	if (rc == 1) {
		rc = fresh(c, err);
		return rc < 0 ? rc : 1;
	}
	*r = (mf_reader){(const unsigned char *)res->buf, res->len};
	uint32_t flags = 0;
	return rc == 0 ? result(c, r, &flags, err) : rc;
}

int remote_master_fs_stat(remote_conn *c, const char *path, bool follow, remote_fs_stat *st,
			  int64_t deadline, bg_err *err)
{
	strbuf res = STRBUF_INIT;
	mf_reader r;
	int rc = ask(c, follow ? MO_FOLLOW : MO_LSTAT, path, NULL, deadline, &res, &r, err);
	uint32_t type = 0, mode = 0;
	uint64_t size = 0;
	if (rc == 1)
		rc = follow ? remote_fs_follow(c, path, st, deadline, err)
			    : remote_fs_lstat(c, path, st, deadline, err);
	else if (rc == 0 && (!mf_get_u32(&r, &type) || !mf_get_u32(&r, &mode) ||
			     !mf_get_u64(&r, &size) || type > REMOTE_FS_OTHER))
		rc = bad_answer(c, err);
	else if (rc == 0)
		*st = (remote_fs_stat){(remote_fs_type)type, mode & 07777, size};
	strbuf_release(&res);
	return rc;
}

int remote_master_fs_mkdir(remote_conn *c, const char *path, unsigned mode, int64_t deadline,
			   bg_err *err)
{
	strbuf res = STRBUF_INIT;
	mf_reader r;
	uint32_t m = mode;
	int rc = ask(c, MO_MKDIR, path, &m, deadline, &res, &r, err);
	strbuf_release(&res);
	return rc == 1 ? remote_fs_mkdir(c, path, mode, deadline, err) : rc;
}

int remote_master_fs_unlink(remote_conn *c, const char *path, int64_t deadline, bg_err *err)
{
	strbuf res = STRBUF_INIT;
	mf_reader r;
	int rc = ask(c, MO_UNLINK, path, NULL, deadline, &res, &r, err);
	strbuf_release(&res);
	return rc == 1 ? remote_fs_unlink(c, path, deadline, err) : rc;
}

int remote_master_fs_space(remote_conn *c, const char *path, uint64_t *avail, bool *read_only,
			   int64_t deadline, bg_err *err)
{
	strbuf res = STRBUF_INIT;
	mf_reader r;
	int rc = ask(c, MO_SPACE, path, NULL, deadline, &res, &r, err);
	uint32_t ro = 0;
	uint64_t a = 0;
	if (rc == 1) {
		rc = remote_fs_space(c, path, avail, read_only, deadline, err);
	} else if (rc == 0) {
		if (!mf_get_u64(&r, &a) || !mf_get_u32(&r, &ro))
			rc = bad_answer(c, err);
		*avail = a;
		*read_only = ro != 0;
	}
	strbuf_release(&res);
	return rc;
}

int remote_master_fs_realpath(remote_conn *c, const char *path, char **out, int64_t deadline,
			      bg_err *err)
{
	strbuf res = STRBUF_INIT;
	mf_reader r;
	int rc = ask(c, MO_REALPATH, path, NULL, deadline, &res, &r, err);
	if (rc == 1) {
		rc = remote_fs_realpath(c, path, out, deadline, err);
	} else if (rc == 0) {
		*out = mf_get_path(&r);
		if (!*out)
			rc = bad_answer(c, err);
	}
	strbuf_release(&res);
	return rc;
}

int remote_master_fs_readdir(remote_conn *c, const char *path, remote_dirent **out, size_t *n,
			     int64_t deadline, bg_err *err)
{
	strbuf res = STRBUF_INIT, x = STRBUF_INIT;
	struct call k = {.retry = true};
	int rc = 1;
	if (c->mfd >= 0) {
		op_head(&x, MO_READDIR, deadline);
		mf_put_lstr(&x, path, strlen(path));
		rc = call(c, &x, -1, &k, deadline, &res, err);
	}
	strbuf_release(&x);
	if (rc == 1) {
		strbuf_release(&res);
		remote_dirents_free(k.ents, k.n_ents);
		if ((rc = fresh(c, err)) < 0)
			return rc;
		return remote_fs_readdir(c, path, out, n, deadline, err);
	}
	mf_reader r = {(const unsigned char *)res.buf, res.len};
	uint32_t flags = 0;
	if (rc == 0)
		rc = result(c, &r, &flags, err);
	strbuf_release(&res);
	if (rc < 0) {
		remote_dirents_free(k.ents, k.n_ents);
		return rc;
	}
	*out = k.ents;
	*n = k.n_ents;
	return 0;
}

int remote_master_put_file(remote_conn *c, int fd, uint64_t size, const char *path,
			   const remote_put_opts *o, bool *exists, bg_err *err)
{
	strbuf res = STRBUF_INIT, x = STRBUF_INIT;
	struct call k = {.put = o};
	int rc = 1;
	if (c->mfd >= 0) {
		op_head(&x, MO_PUT, BG_NEVER);
		mf_put_u64(&x, size);
		mf_put_u32(&x, o->mode);
		mf_put_u32(&x, o->fsync);
		mf_put_u64(&x, (uint64_t)o->window);
		mf_put_u32(&x, (uint32_t)(o->stall_ms > 0 ? o->stall_ms : 0));
		mf_put_lstr(&x, path, strlen(path));
		rc = call(c, &x, fd, &k, BG_NEVER, &res, err);
	}
	strbuf_release(&x);
	if (rc == 1) {
		strbuf_release(&res);
		if ((rc = fresh(c, err)) < 0)
			return rc;
		return remote_put_file(c, fd, size, path, o, exists, err);
	}
	mf_reader r = {(const unsigned char *)res.buf, res.len};
	uint32_t flags = 0;
	if (rc == 0) {
		rc = result(c, &r, &flags, err);
		*exists = (flags & MR_EXISTS) != 0;
	}
	strbuf_release(&res);
	return rc;
}

int remote_master_get_file(remote_conn *c, const char *path, uint64_t size,
			   const remote_get_opts *o, uint64_t *got, bg_err *err)
{
	strbuf res = STRBUF_INIT, x = STRBUF_INIT;
	struct call k = {.get = o, .retry = true};
	int rc = 1;
	if (c->mfd >= 0) {
		op_head(&x, MO_GET, BG_NEVER);
		mf_put_u64(&x, size);
		mf_put_u32(&x, (uint32_t)(o->stall_ms > 0 ? o->stall_ms : 0));
		mf_put_lstr(&x, path, strlen(path));
		rc = call(c, &x, -1, &k, BG_NEVER, &res, err);
	}
	strbuf_release(&x);
	if (rc == 1) {
		strbuf_release(&res);
		if ((rc = fresh(c, err)) < 0)
			return rc;
		return remote_get_file(c, path, size, o, got, err);
	}
	*got = k.got;
	mf_reader r = {(const unsigned char *)res.buf, res.len};
	uint32_t flags = 0;
	if (rc == 0 && k.data_rc < 0)
		rc = k.data_rc; /* the caller's own error, in its own words */
	else if (rc == 0)
		rc = result(c, &r, &flags, err);
	strbuf_release(&res);
	return rc;
}
