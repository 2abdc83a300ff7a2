/* Reading from a box: stat, realpath, directory listings and whole files,
 * over SFTP (ssh boxes) or plain file I/O (the local box).
 *
 * libssh2_sftp_read() keeps read requests in flight on its own (up to a few
 * times the buffer it is given), so one large buffer is the pipeline. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/timer.h"
#include "base/xmalloc.h"
#include "remote/internal.h"
#include "remote/master_files.h"
#include "remote/sftp.h"

#define READ_BUF (1u << 20)

int remote_fs_realpath(remote_conn *c, const char *path, char **out, int64_t deadline, bg_err *err)
{
	*out = NULL;
	if (c->ops == &remote_master_ops)
		return remote_master_fs_realpath(c, path, out, deadline, err);
	if (remote_is_local(c)) {
		char *r = realpath(path, NULL);
		if (!r)
			return bg_fail(err, BG_EREMOTE, "%s: realpath %s: %s", c->target->name,
				       path, strerror(errno));
		*out = r;
		return 0;
	}
	int rc = remote_sftp_open(c, deadline, err);
	if (rc < 0)
		return rc;
	char *buf = xmalloc(PATH_MAX + 1);
	while ((rc = libssh2_sftp_symlink_ex(c->sftp, path, (unsigned)strlen(path), buf, PATH_MAX,
					     LIBSSH2_SFTP_REALPATH)) == LIBSSH2_ERROR_EAGAIN)
		if ((rc = remote_sftp_wait(c, deadline, "realpath", err)) < 0)
			goto out;
	if (rc < 0) {
		rc = remote_sftp_fail(c, rc, "realpath", path, NULL, err);
		goto out;
	}
	buf[rc] = '\0';
	*out = buf;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	return rc;
}

void remote_dirents_free(remote_dirent *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

static void add_entry(remote_dirent **v, size_t *n, size_t *cap, const char *name, size_t len,
		      remote_fs_type t, unsigned mode, uint64_t size)
{
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return;
	if (memchr(name, '/', len) || memchr(name, '\0', len))
		return; /* no file system hands these out: a confused server */
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*v = xrealloc(*v, *cap * sizeof(**v));
	}
	(*v)[*n] = (remote_dirent){xstrndup(name, len), t, mode & 07777, size};
	(*n)++;
}

static int local_readdir(remote_conn *c, const char *path, remote_dirent **out, size_t *n,
			 bg_err *err)
{
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	if (!d) {
		int e = errno;
		if (dfd >= 0)
			close(dfd);
		return bg_fail(err, BG_EREMOTE, "%s: reading the directory %s: %s", c->target->name,
			       path, strerror(e));
	}
	size_t cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		struct stat sb;
		remote_fs_type t = REMOTE_FS_OTHER;
		uint64_t size = 0;
		unsigned mode = 0;
		if (fstatat(dfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
			t = remote_fs_type_of(sb.st_mode);
			size = (uint64_t)sb.st_size;
			mode = sb.st_mode;
		}
		add_entry(out, n, &cap, de->d_name, strlen(de->d_name), t, mode, size);
	}
	closedir(d);
	return 0;
}

int remote_fs_readdir(remote_conn *c, const char *path, remote_dirent **out, size_t *n,
		      int64_t deadline, bg_err *err)
{
	*out = NULL;
	*n = 0;
	if (remote_is_local(c))
		return local_readdir(c, path, out, n, err);
	if (c->ops == &remote_master_ops)
		return remote_master_fs_readdir(c, path, out, n, deadline, err);
	int rc = remote_sftp_open(c, deadline, err);
	if (rc < 0)
		return rc;
	LIBSSH2_SFTP_HANDLE *h = NULL;
	for (;;) {
		h = libssh2_sftp_open_ex(c->sftp, path, (unsigned)strlen(path), 0, 0,
					 LIBSSH2_SFTP_OPENDIR);
		if (h)
			break;
		int e = libssh2_session_last_errno(c->session);
		if (e != LIBSSH2_ERROR_EAGAIN)
			return remote_sftp_fail(c, e, "reading the directory", path, NULL, err);
		if ((rc = remote_sftp_wait(c, deadline, "opendir", err)) < 0)
			return rc;
	}
	char *name = xmalloc(PATH_MAX + 1);
	size_t cap = 0;
	for (;;) {
		LIBSSH2_SFTP_ATTRIBUTES a;
		memset(&a, 0, sizeof(a));
		rc = libssh2_sftp_readdir_ex(h, name, PATH_MAX, NULL, 0, &a);
		if (rc == LIBSSH2_ERROR_EAGAIN) {
			if ((rc = remote_sftp_wait(c, deadline, "readdir", err)) < 0)
				goto out;
			continue;
		}
		if (rc < 0) {
			rc = remote_sftp_fail(c, rc, "reading the directory", path, NULL, err);
			goto out;
		}
		if (rc == 0)
			break;
		remote_fs_type t = (a.flags & LIBSSH2_SFTP_ATTR_PERMISSIONS)
					   ? remote_fs_type_of(a.permissions)
					   : REMOTE_FS_OTHER;
		add_entry(out, n, &cap, name, (size_t)rc, t, (unsigned)a.permissions,
			  (a.flags & LIBSSH2_SFTP_ATTR_SIZE) ? a.filesize : 0);
	}
	rc = 0;
out:
	free(name);
	bg_err ignored = {0};
	int64_t close_by = bg_deadline_ms(5000);
	while (libssh2_sftp_close_handle(h) == LIBSSH2_ERROR_EAGAIN)
		if (remote_sftp_wait(c, close_by, "close", &ignored) < 0)
			break;
	if (rc < 0) {
		remote_dirents_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

static int local_get(remote_conn *c, const char *path, uint64_t size, const remote_get_opts *o,
		     uint64_t *got, bg_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return bg_fail(err, BG_EREMOTE, "%s: cannot open %s: %s", c->target->name, path,
			       strerror(errno));
	char *buf = xmalloc(READ_BUF);
	int rc = 0;
	for (;;) {
		ssize_t r = read(fd, buf, READ_BUF);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = bg_fail(err, BG_EREMOTE, "%s: reading %s: %s", c->target->name, path,
				     strerror(errno));
			break;
		}
		if (r == 0)
			break;
		if ((rc = o->data(o->data_ctx, buf, (size_t)r)) < 0)
			break;
		*got += (uint64_t)r;
		if (o->progress)
			o->progress(o->progress_ctx, *got, size);
	}
	free(buf);
	close(fd);
	return rc;
}

int remote_get_file(remote_conn *c, const char *path, uint64_t size, const remote_get_opts *o,
		    uint64_t *got, bg_err *err)
{
	*got = 0;
	if (remote_is_local(c))
		return local_get(c, path, size, o, got, err);
	if (c->ops == &remote_master_ops)
		return remote_master_get_file(c, path, size, o, got, err);
	int stall = o->stall_ms > 0 ? o->stall_ms : 60000;
	int64_t deadline = bg_deadline_ms(stall);
	int rc = remote_sftp_open(c, deadline, err);
	if (rc < 0)
		return rc;
	LIBSSH2_SFTP_HANDLE *h = NULL;
	for (;;) {
		h = libssh2_sftp_open_ex(c->sftp, path, (unsigned)strlen(path), LIBSSH2_FXF_READ, 0,
					 LIBSSH2_SFTP_OPENFILE);
		if (h)
			break;
		int e = libssh2_session_last_errno(c->session);
		if (e != LIBSSH2_ERROR_EAGAIN)
			return remote_sftp_fail(c, e, "cannot open", path, NULL, err);
		if ((rc = remote_sftp_wait(c, deadline, "opening a file", err)) < 0)
			return rc;
	}
	char *buf = xmalloc(READ_BUF);
	for (;;) {
		/* libssh2 keeps requests in flight for a few times the length it is
		 * asked for: asking for what is left of the known size (not the whole
		 * buffer) keeps a small file to a few requests, not a hundred. Once the
		 * known size has arrived, the caller's hash says whether it is whole:
		 * no round trip waits for the end of the file. */
		size_t want = READ_BUF;
		if (size && *got >= size)
			break;
		if (size && size - *got < READ_BUF)
			want = (size_t)(size - *got);
		ssize_t r = libssh2_sftp_read(h, buf, want);
		if (r == LIBSSH2_ERROR_EAGAIN) {
			if ((rc = remote_sftp_wait(c, deadline, "reading", err)) < 0)
				goto out;
			continue;
		}
		if (r < 0) {
			rc = remote_sftp_fail(c, (int)r, "reading", path, NULL, err);
			goto out;
		}
		if (r == 0)
			break;
		deadline = bg_deadline_ms(stall);
		if ((rc = o->data(o->data_ctx, buf, (size_t)r)) < 0)
			goto out;
		*got += (uint64_t)r;
		if (o->progress)
			o->progress(o->progress_ctx, *got, size);
	}
	rc = 0;
out:
	free(buf);
	{
		bg_err ignored = {0};
		int64_t close_by = bg_deadline_ms(rc == BG_ECONNECT ? 0 : 5000);
		if (rc != BG_ECONNECT)
			while (libssh2_sftp_close_handle(h) == LIBSSH2_ERROR_EAGAIN)
				if (remote_sftp_wait(c, close_by, "close", &ignored) < 0)
					break;
	}
	return rc;
}
