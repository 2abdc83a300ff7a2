/* File transfer to a box: SFTP on the connection's SSH session, or plain
 * file I/O for the local box.
 *
 * libssh2 1.10 runs SFTP synchronously per handle; throughput comes from
 * libssh2_sftp_write() itself, which turns what it is given into 30000-byte
 * write requests, sends them all and returns as soon as the first is
 * acknowledged. So the loop below always hands it the bytes from the first
 * unacknowledged one on, up to the window: libssh2 skips what it already
 * sent and packetises only the new tail, keeping about a window in flight. */
#include "remote/sftp.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/timer.h"
#include "base/xmalloc.h"
#include "remote/internal.h"
#include "remote/master_files.h"

#define PACKET 30000

static bool is_local(const remote_conn *c)
{
	return c->target->transport == REMOTE_TRANSPORT_LOCAL;
}

static const char *fx_name(unsigned long fx)
{
	switch (fx) {
	case LIBSSH2_FX_NO_SUCH_FILE: return "no such file or directory";
	case LIBSSH2_FX_PERMISSION_DENIED: return "permission denied";
	case LIBSSH2_FX_FAILURE: return "the server reported a failure";
	case LIBSSH2_FX_BAD_MESSAGE: return "bad message (name too long or invalid)";
	case LIBSSH2_FX_OP_UNSUPPORTED: return "operation not supported by the server";
	case LIBSSH2_FX_NO_SUCH_PATH: return "no such path";
	case LIBSSH2_FX_FILE_ALREADY_EXISTS: return "file exists";
	case LIBSSH2_FX_WRITE_PROTECT: return "write protected";
	case LIBSSH2_FX_NO_SPACE_ON_FILESYSTEM: return "no space left on the file system";
	case LIBSSH2_FX_QUOTA_EXCEEDED: return "quota exceeded";
	case LIBSSH2_FX_NOT_A_DIRECTORY: return "not a directory";
	case LIBSSH2_FX_INVALID_FILENAME: return "invalid file name";
	default: return "SFTP error";
	}
}

/* Waits for the socket after EAGAIN; negative when the deadline passed or the
 * peer went silent. */
static int wait_io(remote_conn *c, int64_t deadline, const char *what, bg_err *err)
{
	if (bg_now_ms() >= deadline)
		return bg_fail(err, BG_ETIMEOUT, "%s: %s: timed out", c->target->name, what);
	if (c->wait_hook) {
		/* A master's call: its client went, or asked to stop. */
		if (c->wait_hook(c->wait_hook_ctx) < 0) {
			c->wait_hook = NULL;
			return bg_fail(err, BG_EIO, "%s: %s: the client went away", c->target->name,
				       what);
		}
		int64_t soon = bg_deadline_ms(1000);
		if (soon < deadline)
			deadline = soon;
	}
	if (remote_ssh_wait_socket(c, deadline, -1) < 0)
		return bg_fail(err, BG_ECONNECT,
			       "%s: %s: no reply from the box for %d s: connection lost",
			       c->target->name, what, c->keepalive_s * 3);
	return 0;
}

/* After a libssh2 call failed with `rc` (not EAGAIN): a protocol status from
 * the server (BG_EREMOTE, *fx set) or a lost connection (BG_ECONNECT). */
static int sftp_error(remote_conn *c, int rc, const char *what, const char *path, unsigned long *fx,
		      bg_err *err)
{
	if (fx)
		*fx = 0;
	if (rc == LIBSSH2_ERROR_SFTP_PROTOCOL && c->sftp) {
		unsigned long code = libssh2_sftp_last_error(c->sftp);
		if (fx)
			*fx = code;
		return bg_fail(err, BG_EREMOTE, "%s: %s %s: %s", c->target->name, what, path,
			       fx_name(code));
	}
	return bg_fail(err, BG_ECONNECT, "%s: %s %s: connection lost: %s", c->target->name, what,
		       path, remote_ssh_errmsg(c->session));
}

int remote_sftp_open(remote_conn *c, int64_t deadline, bg_err *err)
{
	if (is_local(c) || c->sftp)
		return 0;
	if (c->ops == &remote_master_ops)
		return 0; /* the master opens its own when a call needs it */
	libssh2_session_set_blocking(c->session, 0);
	for (;;) {
		c->sftp = libssh2_sftp_init(c->session);
		if (c->sftp)
			return 0;
		int e = libssh2_session_last_errno(c->session);
		if (e != LIBSSH2_ERROR_EAGAIN)
			return bg_fail(
				err, e == LIBSSH2_ERROR_CHANNEL_FAILURE ? BG_EREMOTE : BG_ECONNECT,
				"%s: cannot start SFTP: %s", c->target->name,
				remote_ssh_errmsg(c->session));
		int rc = wait_io(c, deadline, "starting SFTP", err);
		if (rc < 0)
			return rc;
	}
}

void remote_sftp_finish(remote_conn *c)
{
	/* A connection that leaves a master keeps SFTP open for it. */
	if (is_local(c) || !c->sftp || c->leave_master)
		return;
	LIBSSH2_CHANNEL *ch = libssh2_sftp_get_channel(c->sftp);
	if (!ch)
		return;
	libssh2_session_set_blocking(c->session, 0);
	int64_t deadline = bg_deadline_ms(2000);
	bg_err ignored = {0};
	while (libssh2_channel_send_eof(ch) == LIBSSH2_ERROR_EAGAIN)
		if (wait_io(c, deadline, "ending SFTP", &ignored) < 0)
			break;
}

remote_fs_type remote_fs_type_of(unsigned long m)
{
	if (S_ISREG(m))
		return REMOTE_FS_FILE;
	if (S_ISDIR(m))
		return REMOTE_FS_DIR;
	if (S_ISLNK(m))
		return REMOTE_FS_LINK;
	return REMOTE_FS_OTHER;
}

/* stat(2) or lstat(2) on the box: *st zeroed (type REMOTE_FS_NONE) when the
 * path does not exist. */
static int fs_stat(remote_conn *c, const char *path, bool follow, remote_fs_stat *st,
		   int64_t deadline, bg_err *err)
{
	memset(st, 0, sizeof(*st));
	if (c->ops == &remote_master_ops)
		return remote_master_fs_stat(c, path, follow, st, deadline, err);
	if (is_local(c)) {
		struct stat sb;
		if ((follow ? stat(path, &sb) : lstat(path, &sb)) < 0) {
			if (errno == ENOENT || errno == ENOTDIR)
				return 0;
			return bg_fail(err, BG_EREMOTE, "%s: stat %s: %s", c->target->name, path,
				       strerror(errno));
		}
		st->type = remote_fs_type_of(sb.st_mode);
		st->mode = sb.st_mode & 07777;
		st->size = (uint64_t)sb.st_size;
		return 0;
	}
	int rc = remote_sftp_open(c, deadline, err);
	if (rc < 0)
		return rc;
	LIBSSH2_SFTP_ATTRIBUTES a;
	memset(&a, 0, sizeof(a));
	int how = follow ? LIBSSH2_SFTP_STAT : LIBSSH2_SFTP_LSTAT;
	while ((rc = libssh2_sftp_stat_ex(c->sftp, path, (unsigned)strlen(path), how, &a)) ==
	       LIBSSH2_ERROR_EAGAIN)
		if ((rc = wait_io(c, deadline, "stat", err)) < 0)
			return rc;
	if (rc < 0) {
		unsigned long fx = 0;
		bg_err tmp = {0};
		rc = sftp_error(c, rc, "stat", path, &fx, &tmp);
		if (fx == LIBSSH2_FX_NO_SUCH_FILE || fx == LIBSSH2_FX_NO_SUCH_PATH)
			return 0;
		if (err)
			*err = tmp;
		return rc;
	}
	if (a.flags & LIBSSH2_SFTP_ATTR_PERMISSIONS) {
		st->type = remote_fs_type_of(a.permissions);
		st->mode = (unsigned)(a.permissions & 07777);
	} else {
		st->type = REMOTE_FS_OTHER;
	}
	if (a.flags & LIBSSH2_SFTP_ATTR_SIZE)
		st->size = a.filesize;
	return 0;
}

int remote_fs_lstat(remote_conn *c, const char *path, remote_fs_stat *st, int64_t deadline,
		    bg_err *err)
{
	return fs_stat(c, path, false, st, deadline, err);
}

int remote_fs_follow(remote_conn *c, const char *path, remote_fs_stat *st, int64_t deadline,
		     bg_err *err)
{
	return fs_stat(c, path, true, st, deadline, err);
}

int remote_fs_mkdir(remote_conn *c, const char *path, unsigned mode, int64_t deadline, bg_err *err)
{
	if (c->ops == &remote_master_ops)
		return remote_master_fs_mkdir(c, path, mode, deadline, err);
	if (is_local(c)) {
		if (mkdir(path, mode) == 0)
			return 0;
		int e = errno;
		struct stat sb;
		if (e == EEXIST && stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
			return 0;
		return bg_fail(err, BG_EREMOTE, "%s: mkdir %s: %s", c->target->name, path,
			       strerror(e));
	}
	int rc = remote_sftp_open(c, deadline, err);
	if (rc < 0)
		return rc;
	while ((rc = libssh2_sftp_mkdir_ex(c->sftp, path, (unsigned)strlen(path), (long)mode)) ==
	       LIBSSH2_ERROR_EAGAIN)
		if ((rc = wait_io(c, deadline, "mkdir", err)) < 0)
			return rc;
	if (rc == 0)
		return 0;
	unsigned long fx = 0;
	bg_err first = {0};
	rc = sftp_error(c, rc, "mkdir", path, &fx, &first);
	if (rc == BG_ECONNECT) {
		if (err)
			*err = first;
		return rc;
	}
	/* OpenSSH answers an existing directory with the generic failure: look. */
	remote_fs_stat st;
	int src = remote_fs_lstat(c, path, &st, deadline, err);
	if (src < 0)
		return src;
	if (st.type == REMOTE_FS_DIR)
		return 0;
	if (st.type != REMOTE_FS_MISSING)
		return bg_fail(err, BG_EREMOTE,
			       "%s: mkdir %s: a file that is not a directory is in the way",
			       c->target->name, path);
	if (err)
		*err = first;
	return rc;
}

int remote_fs_unlink(remote_conn *c, const char *path, int64_t deadline, bg_err *err)
{
	if (c->ops == &remote_master_ops)
		return remote_master_fs_unlink(c, path, deadline, err);
	if (is_local(c)) {
		if (unlink(path) == 0 || errno == ENOENT)
			return 0;
		return bg_fail(err, BG_EREMOTE, "%s: unlink %s: %s", c->target->name, path,
			       strerror(errno));
	}
	int rc = remote_sftp_open(c, deadline, err);
	if (rc < 0)
		return rc;
	while ((rc = libssh2_sftp_unlink_ex(c->sftp, path, (unsigned)strlen(path))) ==
	       LIBSSH2_ERROR_EAGAIN)
		if ((rc = wait_io(c, deadline, "unlink", err)) < 0)
			return rc;
	if (rc == 0)
		return 0;
	unsigned long fx = 0;
	rc = sftp_error(c, rc, "unlink", path, &fx, err);
	if (fx == LIBSSH2_FX_NO_SUCH_FILE || fx == LIBSSH2_FX_NO_SUCH_PATH)
		return 0;
	return rc;
}

int remote_fs_space(remote_conn *c, const char *path, uint64_t *avail, bool *read_only,
		    int64_t deadline, bg_err *err)
{
	*avail = 0;
	*read_only = false;
	if (c->ops == &remote_master_ops)
		return remote_master_fs_space(c, path, avail, read_only, deadline, err);
	if (is_local(c)) {
		struct statvfs sv;
		if (statvfs(path, &sv) < 0)
			return bg_fail(err, BG_EREMOTE, "%s: statvfs %s: %s", c->target->name, path,
				       strerror(errno));
		*avail = (uint64_t)sv.f_bavail * sv.f_frsize;
		*read_only = sv.f_flag & ST_RDONLY;
		return 0;
	}
	int rc = remote_sftp_open(c, deadline, err);
	if (rc < 0)
		return rc;
	LIBSSH2_SFTP_STATVFS sv;
	memset(&sv, 0, sizeof(sv));
	while ((rc = libssh2_sftp_statvfs(c->sftp, path, strlen(path), &sv)) ==
	       LIBSSH2_ERROR_EAGAIN)
		if ((rc = wait_io(c, deadline, "statvfs", err)) < 0)
			return rc;
	if (rc < 0)
		return sftp_error(c, rc, "statvfs", path, NULL, err);
	*avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	*read_only = sv.f_flag & LIBSSH2_SFTP_ST_RDONLY;
	return 0;
}

static char *dir_of(const char *path)
{
	const char *s = strrchr(path, '/');
	if (!s)
		return xstrdup(".");
	if (s == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(s - path));
}

/* Turns a failed write into the reason a person can act on: a full or
 * read-only disk on the box. */
static void explain_write_failure(remote_conn *c, const char *path, uint64_t left, bg_err *err)
{
	char *dir = dir_of(path);
	uint64_t avail = 0;
	bool ro = false;
	bg_err ignored = {0};
	if (remote_fs_space(c, dir, &avail, &ro, bg_deadline_ms(5000), &ignored) == 0) {
		if (ro)
			bg_fail(err, BG_EREMOTE, "%s: writing %s: the file system is read-only",
				c->target->name, path);
		else if (avail < left + 65536)
			bg_fail(err, BG_EREMOTE,
				"%s: writing %s: no space left on the box's disk (%llu bytes free "
				"in %s)",
				c->target->name, path, (unsigned long long)avail, dir);
	}
	free(dir);
}

/* The local box: O_EXCL create, kernel copy, fchmod, fsync. */
static int local_put(remote_conn *c, int fd, uint64_t size, const char *path,
		     const remote_put_opts *o, bool *exists, bg_err *err)
{
	int rc = 0;
	int out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0) {
		if (errno == EEXIST)
			*exists = true;
		return bg_fail(err, BG_EREMOTE, "%s: cannot create %s: %s", c->target->name, path,
			       strerror(errno));
	}
	uint64_t done = 0;
	off_t in_off = 0;
	char *buf = NULL;
	if (o->created)
		o->created(o->created_ctx);
	while (done < size) {
		ssize_t n = copy_file_range(
			fd, &in_off, out, NULL,
			(size_t)(size - done > (1 << 24) ? 1 << 24 : size - done), 0);
		if (n < 0 &&
		    (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
			if (!buf)
				buf = xmalloc(1 << 20);
			n = pread(fd, buf,
				  (size_t)(size - done > (1 << 20) ? 1 << 20 : size - done),
				  in_off);
			if (n > 0) {
				ssize_t w = 0;
				for (ssize_t k = 0; k < n; k += w) {
					w = write(out, buf + k, (size_t)(n - k));
					if (w < 0) {
						n = -1;
						break;
					}
				}
				if (n > 0)
					in_off += n;
			}
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			rc = bg_fail(err, BG_EREMOTE, "%s: writing %s: %s", c->target->name, path,
				     strerror(e));
			goto out;
		}
		if (n == 0) {
			rc = bg_fail(err, BG_EIO,
				     "%s: the local file shrank while it was copied (%llu of %llu "
				     "bytes)",
				     c->target->name, (unsigned long long)done,
				     (unsigned long long)size);
			goto out;
		}
		done += (uint64_t)n;
		if (o->progress)
			o->progress(o->progress_ctx, done, size);
	}
	if (fchmod(out, o->mode & 07777) < 0) {
		rc = bg_fail(err, BG_EREMOTE, "%s: chmod %s: %s", c->target->name, path,
			     strerror(errno));
		goto out;
	}
	if (o->fsync && fsync(out) < 0) {
		rc = bg_fail(err, BG_EREMOTE, "%s: fsync %s: %s", c->target->name, path,
			     strerror(errno));
		goto out;
	}
out:
	free(buf);
	if (close(out) < 0 && rc == 0)
		rc = bg_fail(err, BG_EREMOTE, "%s: closing %s: %s", c->target->name, path,
			     strerror(errno));
	if (rc < 0)
		unlink(path);
	return rc;
}

/* Closes an SFTP handle; returns the libssh2 result. */
static int close_handle(remote_conn *c, LIBSSH2_SFTP_HANDLE *h, int64_t deadline)
{
	int rc;
	bg_err ignored = {0};
	while ((rc = libssh2_sftp_close_handle(h)) == LIBSSH2_ERROR_EAGAIN)
		if (wait_io(c, deadline, "close", &ignored) < 0)
			return LIBSSH2_ERROR_TIMEOUT;
	return rc;
}

int remote_put_file(remote_conn *c, int fd, uint64_t size, const char *path,
		    const remote_put_opts *o, bool *exists, bg_err *err)
{
	bool exists_local = false;
	if (!exists)
		exists = &exists_local;
	*exists = false;
	if (is_local(c))
		return local_put(c, fd, size, path, o, exists, err);
	if (c->ops == &remote_master_ops)
		return remote_master_put_file(c, fd, size, path, o, exists, err);

	int stall = o->stall_ms > 0 ? o->stall_ms : 60000;
	int64_t deadline = bg_deadline_ms(stall);
	int rc = remote_sftp_open(c, deadline, err);
	if (rc < 0)
		return rc;

	LIBSSH2_SFTP_HANDLE *h = NULL;
	char *buf = NULL;
	bool created = false;
	unsigned long fx = 0;
	int64_t t_open = bg_now_ms();
	for (;;) {
		h = libssh2_sftp_open_ex(c->sftp, path, (unsigned)strlen(path),
					 LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT | LIBSSH2_FXF_EXCL,
					 0600, LIBSSH2_SFTP_OPENFILE);
		if (h)
			break;
		int e = libssh2_session_last_errno(c->session);
		if (e != LIBSSH2_ERROR_EAGAIN) {
			rc = sftp_error(c, e, "cannot create", path, &fx, err);
			if (rc == BG_EREMOTE &&
			    (fx == LIBSSH2_FX_FAILURE || fx == LIBSSH2_FX_FILE_ALREADY_EXISTS)) {
				/* OpenSSH reports EEXIST as a plain failure: look. */
				remote_fs_stat st;
				bg_err ignored = {0};
				if (remote_fs_lstat(c, path, &st, deadline, &ignored) == 0 &&
				    st.type != REMOTE_FS_MISSING)
					*exists = true;
				else if (fx == LIBSSH2_FX_FAILURE)
					explain_write_failure(c, path, size, err);
			}
			goto out;
		}
		if ((rc = wait_io(c, deadline, "creating a file", err)) < 0)
			goto out;
	}
	created = true;
	int64_t rtt_ms = bg_now_ms() - t_open;
	if (o->created)
		o->created(o->created_ctx);

	size_t window = o->window;
	if (!window) {
		/* The bandwidth-delay product of a fast link, within bounds. */
		window = (size_t)(rtt_ms > 0 ? rtt_ms : 0) * REMOTE_PUT_WINDOW_PER_MS;
		if (window < REMOTE_PUT_WINDOW_MIN)
			window = REMOTE_PUT_WINDOW_MIN;
		if (window > REMOTE_PUT_WINDOW_MAX)
			window = REMOTE_PUT_WINDOW_MAX;
	}
	window -= window % PACKET;
	if (window < PACKET)
		window = PACKET;
	/* A buffer of a few windows, refilled by read() and compacted rarely:
	 * libssh2 copies what it packetises, so moving unacknowledged bytes is
	 * fine as long as they keep their file offsets. */
	size_t cap = window * 4;
	buf = xmalloc(cap);
	uint64_t bstart = 0, acked = 0;
	size_t blen = 0;
	int zeros = 0;
	while (acked < size) {
		uint64_t rem = size - acked;
		size_t want = rem < window ? (size_t)rem : window;
		while (bstart + blen < acked + want) {
			if (bstart + cap < acked + want || blen == cap) {
				size_t skip = (size_t)(acked - bstart);
				memmove(buf, buf + skip, blen - skip);
				blen -= skip;
				bstart = acked;
			}
			uint64_t file_left = size - (bstart + blen);
			size_t room = cap - blen;
			if (room > file_left)
				room = (size_t)file_left;
			ssize_t n = pread(fd, buf + blen, room, (off_t)(bstart + blen));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				rc = n < 0 ? bg_fail(err, BG_EIO, "reading the local file: %s",
						     strerror(errno))
					   : bg_fail(err, BG_EIO,
						     "the local file shrank while it was pushed");
				goto out;
			}
			blen += (size_t)n;
		}
		ssize_t w = libssh2_sftp_write(h, buf + (acked - bstart), want);
		if (w > 0) {
			acked += (uint64_t)w;
			zeros = 0;
			deadline = bg_deadline_ms(stall);
			if (o->progress)
				o->progress(o->progress_ctx, acked, size);
			continue;
		}
		if (w == 0 && ++zeros < 1000)
			continue;
		if (w == LIBSSH2_ERROR_EAGAIN || w == 0) {
			zeros = 0;
			if ((rc = wait_io(c, deadline, "writing", err)) < 0)
				goto out;
			continue;
		}
		rc = sftp_error(c, (int)w, "writing", path, &fx, err);
		if (rc == BG_EREMOTE)
			explain_write_failure(c, path, size - acked, err);
		goto out;
	}

	LIBSSH2_SFTP_ATTRIBUTES a = {.flags = LIBSSH2_SFTP_ATTR_PERMISSIONS,
				     .permissions = o->mode & 07777};
	while ((rc = libssh2_sftp_fsetstat(h, &a)) == LIBSSH2_ERROR_EAGAIN)
		if ((rc = wait_io(c, deadline, "chmod", err)) < 0)
			goto out;
	if (rc < 0) {
		rc = sftp_error(c, rc, "cannot set the mode of", path, &fx, err);
		goto out;
	}
	if (o->fsync) {
		while ((rc = libssh2_sftp_fsync(h)) == LIBSSH2_ERROR_EAGAIN)
			if ((rc = wait_io(c, deadline, "fsync", err)) < 0)
				goto out;
		if (rc < 0) {
			rc = sftp_error(c, rc, "fsync", path, &fx, err);
			if (rc == BG_EREMOTE && fx == LIBSSH2_FX_OP_UNSUPPORTED) {
				rc = 0; /* a server without fsync@openssh.com: the rename still is
					   atomic */
			} else {
				if (rc == BG_EREMOTE)
					explain_write_failure(c, path, 0, err);
				goto out;
			}
		}
	}
	rc = close_handle(c, h, deadline);
	h = NULL;
	if (rc < 0) {
		rc = sftp_error(c, rc, "closing", path, &fx, err);
		if (rc == BG_EREMOTE)
			explain_write_failure(c, path, 0, err);
		goto out;
	}
out:
	free(buf);
	if (h)
		close_handle(c, h, bg_deadline_ms(5000));
	if (rc < 0 && created && rc != BG_ECONNECT) {
		bg_err ignored = {0};
		remote_fs_unlink(c, path, bg_deadline_ms(5000), &ignored);
	}
	return rc;
}

int remote_sftp_wait(remote_conn *c, int64_t deadline, const char *what, bg_err *err)
{
	return wait_io(c, deadline, what, err);
}

int remote_sftp_fail(remote_conn *c, int rc, const char *what, const char *path, unsigned long *fx,
		     bg_err *err)
{
	return sftp_error(c, rc, what, path, fx, err);
}

bool remote_is_local(const remote_conn *c)
{
	return is_local(c);
}
