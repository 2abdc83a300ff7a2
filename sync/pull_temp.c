/* pull's temporary files (sync/pull_temp.h). */
#include "sync/pull_temp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/path.h"
#include "base/xmalloc.h"
#include "sync/plan.h"

#define PULL_MARK   ".boxgate-pull-"
#define PUSH_MARK   ".boxgate-"
#define HEX_LEN     16
#define TEMP_SUFFIX ".tmp"

char *sync_pull_temp_name(const char *base, const char *hex)
{
	/* "." + base + mark + hex + ".tmp" within NAME_MAX */
	size_t room = NAME_MAX - 1 - strlen(PULL_MARK) - HEX_LEN - strlen(TEMP_SUFFIX);
	size_t blen = strlen(base);
	if (blen > room)
		blen = room;
	char *t = xasprintf(".%.*s" PULL_MARK "%.16s" TEMP_SUFFIX, (int)blen, base, hex);
	/* safe bytes only in the part that came from the box */
	for (char *c = t + 1; c < t + 1 + blen; c++)
		if (!bg_path_safe_byte(*c))
			*c = '_';
	return t;
}

static bool hex16(const char *s)
{
	for (int i = 0; i < HEX_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

bool sync_pull_is_temp(const char *name)
{
	size_t n = strlen(name), ml = strlen(PULL_MARK), sl = strlen(TEMP_SUFFIX);
	if (n < 2 + ml + HEX_LEN + sl || name[0] != '.' || strcmp(name + n - sl, TEMP_SUFFIX) != 0)
		return false;
	const char *m = name + n - sl - HEX_LEN - ml;
	return memcmp(m, PULL_MARK, ml) == 0 && hex16(m + ml);
}

bool sync_is_boxgate_temp(const char *name)
{
	if (sync_pull_is_temp(name))
		return true;
	if (name[0] != '.')
		return false;
	/* push's: ".NAME.boxgate-HEX.tmp" with the target's extension (up to 16
	 * bytes of [A-Za-z0-9_] after a dot) kept at the end */
	size_t ml = strlen(PUSH_MARK), sl = strlen(TEMP_SUFFIX);
	for (const char *m = strstr(name + 1, PUSH_MARK); m; m = strstr(m + 1, PUSH_MARK)) {
		const char *h = m + ml;
		if (strnlen(h, HEX_LEN) < HEX_LEN || !hex16(h) ||
		    strncmp(h + HEX_LEN, TEMP_SUFFIX, sl))
			continue;
		const char *ext = h + HEX_LEN + sl;
		if (!*ext)
			return true;
		size_t el = strlen(ext);
		if (ext[0] == '.' && el >= 2 && el <= 16 &&
		    strspn(ext + 1,
			   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") ==
			    el - 1)
			return true;
	}
	return false;
}

int sync_pull_temp_create(int dfd, const char *base, char **temp)
{
	*temp = NULL;
	for (int tries = 0; tries < 8; tries++) {
		char hex[17];
		sync_random_hex(hex);
		char *t = sync_pull_temp_name(base, hex);
		int fd = openat(dfd, t, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0) {
			int e = errno;
			free(t);
			if (e == EEXIST)
				continue;
			errno = e;
			return -1;
		}
		/* A cleaner that found it before the lock below may have removed it:
		 * holding the lock on a file still linked, it is ours for good. */
		struct stat st;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &st) == 0 && st.st_nlink > 0) {
			*temp = t;
			return fd;
		}
		close(fd);
		free(t);
	}
	errno = EEXIST;
	return -1;
}

size_t sync_pull_clean_stale(int dfd)
{
	int d2 = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = d2 >= 0 ? fdopendir(d2) : NULL;
	if (!d) {
		if (d2 >= 0)
			close(d2);
		return 0;
	}
	size_t removed = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!sync_pull_is_temp(e->d_name) ||
		    (e->d_type != DT_REG && e->d_type != DT_UNKNOWN))
			continue;
		int fd = openat(dfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		struct stat st;
		if (fd < 0)
			continue;
		/* a free lock: its pull is gone (a live one holds it while it writes) */
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    flock(fd, LOCK_EX | LOCK_NB) == 0 && unlinkat(dfd, e->d_name, 0) == 0)
			removed++;
		close(fd);
	}
	closedir(d);
	return removed;
}
