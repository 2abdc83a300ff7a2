/* Whole files written through a temporary file renamed into place. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/atomic.h"
#include "base/xmalloc.h"

/* "DIR/.NAME.XXXXXX" beside `path` (owned). */
static char *temp_beside(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return xasprintf(".%s.XXXXXX", path);
	return xasprintf("%.*s/.%s.XXXXXX", (int)(slash - path), path, slash + 1);
}

/* An error about `path`: a path too long for the message is shown by its
 * start and end, so the reason is never what gets cut. */
static int fail(bg_err *err, const char *path, const char *what, int e)
{
	size_t n = strlen(path);
	if (n <= 400)
		return bg_fail(err, BG_EIO, "%s: %s%s", path, what, strerror(e));
	return bg_fail(err, BG_EIO, "%.200s...%s (%zu bytes): %s%s", path, path + n - 150, n, what,
		       strerror(e));
}

/* A path that names a file boxgate may replace: not empty, not ending in '/',
 * and where something exists, a regular file. */
static int check_target(const char *path, bg_err *err)
{
	struct stat st;
	size_t n = strlen(path);
	if (!n || path[n - 1] == '/')
		return bg_fail(err, BG_EIO, "'%s': not a file name", path);
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return bg_fail(err, BG_EIO, "%s: %s, not a regular file", path,
			       S_ISDIR(st.st_mode) ? "a directory" : "exists");
	return 0;
}

int bg_write_atomic_check(const char *path, bg_err *err)
{
	int rc = check_target(path, err);
	if (rc < 0)
		return rc;
	char *tmp = temp_beside(path);
	int fd = mkstemp(tmp);
	if (fd < 0)
		rc = fail(err, path, "cannot write there: ", errno);
	else {
		close(fd);
		unlink(tmp);
	}
	free(tmp);
	return rc;
}

int bg_write_atomic(const char *path, const void *data, size_t len, bg_err *err)
{
	int rc = check_target(path, err);
	if (rc < 0)
		return rc;
	char *tmp = temp_beside(path);
	int fd = mkstemp(tmp);
	if (fd < 0) {
		rc = fail(err, path, "", errno);
		goto out;
	}
	const char *p = data;
	size_t off = 0;
	while (off < len && !rc) {
		ssize_t n = write(fd, p + off, len - off);
		if (n < 0 && errno != EINTR)
			rc = fail(err, path, "", errno);
		else if (n > 0)
			off += (size_t)n;
	}
	/* mkstemp makes 0600; what is exported is for reading */
	if (!rc && (fchmod(fd, 0644) < 0 || fsync(fd) < 0))
		rc = fail(err, path, "", errno);
	if (close(fd) < 0 && !rc)
		rc = fail(err, path, "", errno);
	if (!rc && rename(tmp, path) < 0)
		rc = fail(err, path, "", errno);
	if (rc)
		unlink(tmp);
out:
	free(tmp);
	return rc;
}
