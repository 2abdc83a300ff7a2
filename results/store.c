#include "results/store.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xmalloc.h"

/* mkdir -p of the directory part of `path`. */
static int make_parents(const char *path, bg_err *err)
{
	char *dir = xstrdup(path);
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
			int e = errno;
			bg_fail(err, BG_EIO, "results: cannot create %s: %s", dir, strerror(e));
			free(dir);
			return BG_EIO;
		}
		*p = '/';
	}
	free(dir);
	return 0;
}

int results_append(const char *path, const char *json, size_t len, bg_err *err)
{
	if (memchr(json, '\n', len))
		return bg_fail(err, BG_EUSAGE, "results: a record must be one line");
	if (make_parents(path, err) < 0)
		return BG_EIO;
	int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return bg_fail(err, BG_EIO, "results: cannot open %s: %s", path, strerror(errno));
	/* Appenders (threads of one campaign, other runs) take turns: the tail
	 * check below must not see another append half done, or it would take that
	 * line for a torn one and leave a blank line. */
	while (flock(fd, LOCK_EX) < 0 && errno == EINTR)
		;
	/* A file left ending in a torn line (a write cut short by a crash) gets
	 * that line ended first: glued to it, this record would be lost too, and
	 * the torn line would no longer be the last. */
	struct stat sb;
	char tail = '\n';
	size_t lead = 0;
	if (fstat(fd, &sb) == 0 && sb.st_size > 0 && pread(fd, &tail, 1, sb.st_size - 1) == 1 &&
	    tail != '\n')
		lead = 1;
	/* One write of the whole line: O_APPEND places it at the end as a unit. */
	char *line = xmalloc(lead + len + 1);
	line[0] = '\n';
	memcpy(line + lead, json, len);
	line[lead + len] = '\n';
	size_t total = lead + len + 1;
	ssize_t n;
	do
		n = write(fd, line, total);
	while (n < 0 && errno == EINTR);
	int e = errno;
	free(line);
	int rc = 0;
	if (n != (ssize_t)total)
		rc = bg_fail(err, BG_EIO, "results: writing %s: %s", path,
			     n < 0 ? strerror(e) : "short write");
	else if (fsync(fd) < 0)
		rc = bg_fail(err, BG_EIO, "results: fsync %s: %s", path, strerror(errno));
	close(fd);
	return rc;
}

int results_append_json(const char *path, const cJSON *rec, bg_err *err)
{
	char *s = cJSON_PrintUnformatted(rec);
	if (!s)
		return bg_fail(err, BG_EIO, "results: cannot print a record");
	int rc = results_append(path, s, strlen(s), err);
	free(s);
	return rc;
}

int results_read(const char *path, results_record_fn fn, void *ctx, results_read_stats *st,
		 bg_err *err)
{
	results_read_stats local = {0};
	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	/* Opened without blocking and read only when it is a regular file: a FIFO
	 * named as the results file would hold open() until a writer came. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return bg_fail(err, errno == ENOENT ? BG_ENOTFOUND : BG_EIO, "results: %s: %s",
			       path, strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return bg_fail(err, BG_EIO, "results: %s: not a regular file", path);
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return bg_fail(err, BG_EIO, "results: %s: %s", path, strerror(errno));
	}
	char *buf = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t n;
	int rc = 0;
	while (rc == 0 && (n = getline(&buf, &cap, f)) > 0) {
		lineno++;
		bool whole = buf[n - 1] == '\n';
		if (whole)
			buf[--n] = '\0';
		if (n == 0 && whole)
			continue; /* an empty line is not a record */
		cJSON *rec = NULL;
		/* A NUL inside the line is not JSON. The length given to cJSON counts the
		 * terminator: with require_null_terminated it must see the NUL. */
		if (strlen(buf) == (size_t)n)
			rec = cJSON_ParseWithLengthOpts(buf, (size_t)n + 1, NULL, 1);
		if (!rec || !cJSON_IsObject(rec)) {
			if (!whole)
				st->torn = 1;
			else if (!st->bad++)
				st->first_bad = lineno;
			cJSON_Delete(rec);
			continue;
		}
		st->records++;
		rc = fn ? fn(ctx, rec, lineno) : 0;
		cJSON_Delete(rec);
	}
	int e = errno;
	bool failed = ferror(f);
	free(buf);
	fclose(f);
	if (failed)
		return bg_fail(err, BG_EIO, "results: reading %s: %s", path, strerror(e));
	return rc;
}
