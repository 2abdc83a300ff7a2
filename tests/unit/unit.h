/* What the unit tests share: a scratch directory with a home inside it,
 * files written into it, and ${VAR} resolved from the environment as cli/
 * does. Include after <cmocka.h>. */
#ifndef BG_TESTS_UNIT_H
#define BG_TESTS_UNIT_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/xmalloc.h"

static char tmpdir[256];
static char home[300];
static int counter;

static inline void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Writes `text` to a fresh file named PREFIX<n>SUFFIX in the scratch
 * directory; returns its path (owned). */
static inline char *unit_file(const char *prefix, const char *suffix, const char *text)
{
	char *p = xasprintf("%s/%s%d%s", tmpdir, prefix, ++counter, suffix);
	write_text(p, text);
	return p;
}

/* Fails unless `got` (owned: freed here), what `call` gave for `arg`, is `want`. */
static inline void unit_expect_str(char *got, const char *want, const char *call, const char *arg)
{
	if (strcmp(got, want) != 0)
		fail_msg("%s(\"%s\") = [%s], wanted [%s]", call, arg, got, want);
	free(got);
}

static inline const char *env_lookup(void *ctx, const char *name)
{
	(void)ctx;
	return getenv(name);
}

/* Makes /tmp/bg-test-NAME-XXXXXX with home/.ssh inside. */
static inline int unit_tmpdir_make(const char *name)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/bg-test-%s-XXXXXX", name);
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(home, sizeof(home), "%s/home", tmpdir);
	char *ssh = xasprintf("%s/.ssh", home);
	int rc = mkdir(home, 0700) || mkdir(ssh, 0700) ? -1 : 0;
	free(ssh);
	return rc;
}

static inline int unit_rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

static inline void unit_tmpdir_remove(void)
{
	nftw(tmpdir, unit_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The group setup and teardown of a test file whose setup is MAKE(NAME)
 * (a scratch directory and what the file needs in it). */
#define UNIT_GROUP_WITH(make, name)                                                                \
	static int setup(void **state)                                                             \
	{                                                                                          \
		(void)state;                                                                       \
		return make(name);                                                                 \
	}                                                                                          \
	static int teardown(void **state)                                                          \
	{                                                                                          \
		(void)state;                                                                       \
		unit_tmpdir_remove();                                                              \
		return 0;                                                                          \
	}

/* ... of a test file that works in a scratch directory named NAME. */
#define UNIT_SCRATCH_GROUP(name) UNIT_GROUP_WITH(unit_tmpdir_make, name)

#endif
