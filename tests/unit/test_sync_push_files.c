/* sync/push_files: a plan from a command's operands (every refusal told, not
 * only the first) and a push of local files to boxes on the local transport
 * (no network): each box reported once and the exit code over them, a local
 * check's refusal before any box is touched, an operand's refusal before any
 * box connects, a box that fails beside one that does not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/exit.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "sync/push_files.h"
#include "unit.h"

UNIT_SCRATCH_GROUP("sync-push-files")

static const char *sh_only(void *ctx, const char *rel, bool *builtin)
{
	(void)ctx;
	size_t n = strlen(rel);
	*builtin = n > 3 && strcmp(rel + n - 3, ".sh") == 0;
	return *builtin ? "bash -n {}" : NULL;
}

struct seen {
	strbuf told;    /* each plan error's sentence, a line each */
	strbuf reports; /* "NAME ok|failed\n" per report */
	int refused, could_not;
};

static void on_error(void *ctx, const bg_err *err)
{
	struct seen *s = ctx;
	strbuf_addf(&s->told, "%s\n", err->msg);
}

static void on_report(void *ctx, const sync_box *b)
{
	struct seen *s = ctx;
	strbuf_addf(&s->reports, "%s %s\n", b->box->name, sync_box_failed(b) ? "failed" : "ok");
}

static void refused(void *ctx, const sync_item *it, int rc, const char *out)
{
	(void)it, (void)rc, (void)out;
	((struct seen *)ctx)->refused++;
}

static void could_not(void *ctx, const sync_item *it, const char *why)
{
	(void)it, (void)why;
	((struct seen *)ctx)->could_not++;
}

static void seen_release(struct seen *s)
{
	strbuf_release(&s->told);
	strbuf_release(&s->reports);
}

static char *in_tmp(const char *rel)
{
	return xasprintf("%s/%s", tmpdir, rel);
}

static void put(const char *name, const char *text)
{
	char *d = in_tmp("src");
	mkdir(d, 0755);
	char *p = xasprintf("%s/%s", d, name);
	write_text(p, text);
	free(p);
	free(d);
}

static bool exists(const char *rel)
{
	char *p = in_tmp(rel);
	bool yes = access(p, F_OK) == 0;
	free(p);
	return yes;
}

static char cwd[PATH_MAX];

static void enter_src(void)
{
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	char *root = in_tmp("src");
	mkdir(root, 0755);
	assert_int_equal(chdir(root), 0);
	free(root);
}

static void leave_src(void)
{
	assert_int_equal(chdir(cwd), 0);
}

static void plan_from_operands(void **state)
{
	(void)state;
	put("a.sh", "echo a\n");
	put("b.txt", "b\n");
	enter_src();
	char *root = in_tmp("src");
	struct seen s = {STRBUF_INIT, STRBUF_INIT, 0, 0};
	sync_plan p;
	char *good[] = {"a.sh", "b.txt"};
	assert_int_equal(sync_plan_build(&p, root, good, 2, SYNC_ADD_NEED_LOCAL, sh_only, NULL,
					 on_error, &s),
			 0);
	assert_int_equal(p.n, 2);
	assert_non_null(p.items[0].verifier); /* a.sh: bash -n */
	assert_null(p.items[1].verifier);
	assert_int_equal(s.told.len, 0);
	sync_plan_release(&p);

	/* every bad operand is told, the plan refused */
	char *bad[] = {"missing.sh", "a.sh", "../outside", "b.txt"};
	assert_int_equal(
		sync_plan_build(&p, root, bad, 4, SYNC_ADD_NEED_LOCAL, sh_only, NULL, on_error, &s),
		BG_EUSAGE);
	assert_non_null(strstr(s.told.buf, "missing.sh"));
	assert_non_null(strstr(s.told.buf, "outside"));
	assert_non_null(strchr(strchr(s.told.buf, '\n') + 1, '\n')); /* two lines */
	sync_plan_release(&p);

	/* a root that is no directory: one refusal */
	strbuf_reset(&s.told);
	char *nowhere = in_tmp("no-such-root");
	assert_int_equal(sync_plan_build(&p, nowhere, good, 2, SYNC_ADD_NEED_LOCAL, sh_only, NULL,
					 on_error, &s),
			 BG_EUSAGE);
	assert_non_null(strstr(s.told.buf, "no-such-root"));
	sync_plan_release(&p);
	free(nowhere);
	free(root);
	seen_release(&s);
	leave_src();
}

/* Pushes files[0..n) from src/ to boxes b1 (repo r1) and b2 (repo R2). */
static int push(char **files, size_t n, const char *R2, struct seen *s)
{
	enter_src();
	char *root = in_tmp("src"), *r1 = in_tmp("r1"), *r2 = in_tmp(R2);
	mkdir(r1, 0755);
	remote_target t = {.name = "b", .transport = REMOTE_TRANSPORT_LOCAL};
	sync_target targets[2] = {{.name = "b1", .repo = r1, .connect = &t},
				  {.name = "b2", .repo = r2, .connect = &t}};
	sync_opts o = {.verifier_for = sh_only};
	sync_push_files_cb cb = {on_error, on_report, {could_not, refused, s}, s};
	int code = sync_push_files(root, files, n, targets, 2, &o, NULL, &cb);
	free(root);
	free(r1);
	free(r2);
	leave_src();
	return code;
}

static void push_to_every_box(void **state)
{
	(void)state;
	put("good.sh", "echo ok\n");
	char *r2 = in_tmp("r2");
	mkdir(r2, 0755);
	free(r2);
	struct seen s = {STRBUF_INIT, STRBUF_INIT, 0, 0};
	char *files[] = {"good.sh"};
	assert_int_equal(push(files, 1, "r2", &s), BG_EXIT_OK);
	assert_int_equal(s.reports.len, strlen("b1 ok\nb2 ok\n"));
	assert_non_null(strstr(s.reports.buf, "b1 ok\n"));
	assert_non_null(strstr(s.reports.buf, "b2 ok\n"));
	assert_true(exists("r1/good.sh") && exists("r2/good.sh"));
	seen_release(&s);
}

static void refusals_touch_no_box(void **state)
{
	(void)state;
	struct seen s = {STRBUF_INIT, STRBUF_INIT, 0, 0};
	/* the local check refuses: no box reported or touched */
	put("bad.sh", "if then fi (\n");
	char *bad[] = {"bad.sh"};
	assert_int_equal(push(bad, 1, "r2", &s), BG_EXIT_VERIFY);
	assert_int_equal(s.refused, 1);
	assert_int_equal(s.reports.len, 0);
	assert_false(exists("r1/bad.sh"));
	/* an operand refused: told, usage, no box reported */
	put("fine.sh", "echo fine\n");
	char *missing[] = {"fine.sh", "gone.sh"};
	assert_int_equal(push(missing, 2, "r2", &s), BG_EXIT_USAGE);
	assert_non_null(strstr(s.told.buf, "gone.sh"));
	assert_int_equal(s.reports.len, 0);
	assert_false(exists("r1/fine.sh"));
	seen_release(&s);
}

static void one_box_fails(void **state)
{
	(void)state;
	put("other.sh", "echo other\n");
	struct seen s = {STRBUF_INIT, STRBUF_INIT, 0, 0};
	char *files[] = {"other.sh"};
	/* b2's repo does not exist: it fails, b1 gets the file, the code says so */
	int code = push(files, 1, "none", &s);
	assert_int_not_equal(code, BG_EXIT_OK);
	assert_non_null(strstr(s.reports.buf, "b2 failed\n"));
	assert_non_null(strstr(s.reports.buf, "b1 ok\n"));
	assert_true(exists("r1/other.sh"));
	seen_release(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(plan_from_operands),
		cmocka_unit_test(push_to_every_box),
		cmocka_unit_test(refusals_touch_no_box),
		cmocka_unit_test(one_box_fails),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
