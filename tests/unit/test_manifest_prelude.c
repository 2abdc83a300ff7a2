/* sync/manifest_prelude: the push manifest read in front of a gate's run,
 * its lines collected back out of the run's stream, and the shell that
 * prints them run by /bin/sh against real files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/lines.h"
#include "base/xmalloc.h"
#include "sync/manifest_prelude.h"
#include "sync/report.h"

#define T SYNC_MANIFEST_TAG

static void feed(sync_manifest_collect *m, const char *line, int flags)
{
	sync_manifest_collect_line(m, line, strlen(line), flags);
}

static void lines_and_end(void **state)
{
	(void)state;
	sync_manifest_collect m = {0};
	sync_target box = {.name = "b", .repo = "/r"};
	feed(&m, T "=aa\t1\tx.py", 0);
	feed(&m, T "=bb\t2\ty", LINE_PARTIAL); /* a long line in pieces */
	feed(&m, T "!not a why: the middle of a line", LINE_PARTIAL);
	feed(&m, ".py", 0);
	feed(&m, T "-other", 0); /* no tag word: not the manifest's */
	feed(&m, T ".", 0);
	assert_true(m.ended);
	char *text = NULL;
	bg_err err = {0};
	assert_int_equal(sync_manifest_collect_end(&m, &box, &text, &err), 0);
	assert_string_equal(text,
			    "aa\t1\tx.py\nbb\t2\ty" T "!not a why: the middle of a line.py\n");
	free(text);
}

static void why_over_and_no_end(void **state)
{
	(void)state;
	sync_target box = {.name = "b", .repo = "/r"};
	char *text = NULL;
	bg_err err = {0};
	sync_manifest_collect m = {0};
	feed(&m, T "!not a regular file", 0);
	feed(&m, T ".", 0);
	assert_true(sync_manifest_collect_end(&m, &box, &text, &err) < 0);
	assert_null(text);
	assert_string_equal(err.msg, "cannot read /r/.boxgate/pushed: not a regular file");

	memset(&m, 0, sizeof(m));
	char *big = xmalloc(SYNC_MANIFEST_MAX / 2 + 1);
	memset(big, 'a', SYNC_MANIFEST_MAX / 2);
	big[SYNC_MANIFEST_MAX / 2] = '\0';
	char *line = xasprintf(T "=%s", big);
	for (int i = 0; i < 3; i++)
		feed(&m, line, 0);
	feed(&m, T ".", 0);
	assert_true(sync_manifest_collect_end(&m, &box, &text, &err) < 0);
	assert_non_null(strstr(err.msg, "larger than"));
	free(line);
	free(big);

	memset(&m, 0, sizeof(m));
	feed(&m, T "=aa\t1\tx.py", 0);
	/* a tag and '.' as a piece of a longer line is no end */
	feed(&m, T ".", LINE_PARTIAL);
	feed(&m, "more", 0);
	assert_false(m.ended);
	assert_true(sync_manifest_collect_end(&m, &box, &text, &err) < 0);
	assert_non_null(strstr(err.msg, "ended before it was read"));
}

/* The prelude's shell run by /bin/sh in a scratch repo, its output fed
 * back line by line. */
static int run_prelude(const char *repo, char **text, bg_err *err)
{
	sync_target box = {.name = "b", .repo = repo};
	char *sh = sync_manifest_prelude(&box);
	char *tmp = xasprintf("%s.sh", repo);
	FILE *f = fopen(tmp, "w");
	assert_non_null(f);
	fputs(sh, f);
	fclose(f);
	char *cmd = xasprintf("sh %s 2>/dev/null </dev/null", tmp);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	sync_manifest_collect m = {0};
	char buf[4096];
	while (fgets(buf, sizeof(buf), p)) {
		size_t n = strlen(buf);
		int flags = n && buf[n - 1] == '\n' ? 0 : LINE_PARTIAL;
		if (!flags)
			buf[--n] = '\0';
		sync_manifest_collect_line(&m, buf, n, flags);
	}
	pclose(p);
	unlink(tmp);
	free(tmp);
	free(cmd);
	free(sh);
	return sync_manifest_collect_end(&m, &box, text, err);
}

static void shell_against_files(void **state)
{
	(void)state;
	char dir[] = "/tmp/bg-prelude-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *meta = xasprintf("%s/.boxgate", dir), *f = xasprintf("%s/.boxgate/pushed", dir);
	char *text = NULL;
	bg_err err = {0};
	/* none yet: empty */
	assert_int_equal(run_prelude(dir, &text, &err), 0);
	assert_string_equal(text, "");
	free(text);
	/* a last line without newline, and a line that looks like the end */
	mkdir(meta, 0700);
	FILE *w = fopen(f, "w");
	fputs("aa\t1\tx.py\n" T ".\nbb\t2\ty", w);
	fclose(w);
	assert_int_equal(run_prelude(dir, &text, &err), 0);
	assert_string_equal(text, "aa\t1\tx.py\n" T ".\nbb\t2\ty\n");
	free(text);
	/* a directory in its place */
	unlink(f);
	mkdir(f, 0700);
	assert_true(run_prelude(dir, &text, &err) < 0);
	assert_non_null(strstr(err.msg, "not a regular file"));
	rmdir(f);
	/* too large: said, not read */
	w = fopen(f, "w");
	for (unsigned i = 0; i <= SYNC_MANIFEST_MAX / 64; i++)
		fputs("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n", w);
	fclose(w);
	assert_true(run_prelude(dir, &text, &err) < 0);
	assert_non_null(strstr(err.msg, "larger than"));
	unlink(f);
	rmdir(meta);
	rmdir(dir);
	/* no repo: nothing to read */
	sync_target none = {.name = "b"};
	char *sh = sync_manifest_prelude(&none);
	assert_string_equal(sh, "echo '" T ".'");
	free(sh);
	free(meta);
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lines_and_end),
		cmocka_unit_test(why_over_and_no_end),
		cmocka_unit_test(shell_against_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
