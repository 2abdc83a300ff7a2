/* sync/job: the pipeline push, status and rollback share, over boxes on the
 * local transport (no network): a box per target, each box's report once,
 * serialised; push's local checks refusing before any box is touched; a
 * push to every box, and all-or-nothing swapping nowhere when one box
 * fails; a refused file's verifier output grouped by text across boxes, in
 * the order given. */
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
#include "sync/job.h"
#include "unit.h"

UNIT_SCRATCH_GROUP("sync-job")

static const char *sh_only(void *ctx, const char *rel, bool *builtin)
{
	(void)ctx;
	size_t n = strlen(rel);
	*builtin = n > 3 && strcmp(rel + n - 3, ".sh") == 0;
	return *builtin ? "bash -n {}" : NULL;
}

struct seen {
	strbuf reports; /* "NAME rc\n" per report */
	int in_report;  /* reports running at once (must stay 0 or 1) */
	int refused;
};

static void on_report(void *ctx, const sync_box *b)
{
	struct seen *s = ctx;
	assert_int_equal(s->in_report++, 0);
	strbuf_addf(&s->reports, "%s %s\n", b->box->name, sync_box_failed(b) ? "failed" : "ok");
	s->in_report--;
}

static void refused(void *ctx, const sync_item *it, int rc, const char *out)
{
	(void)it, (void)rc, (void)out;
	((struct seen *)ctx)->refused++;
}

static void could_not(void *ctx, const sync_item *it, const char *why)
{
	(void)ctx, (void)it, (void)why;
}

static char *path_in(const char *dir, const char *name)
{
	return xasprintf("%s/%s/%s", tmpdir, dir, name);
}

static void put(const char *dir, const char *name, const char *text)
{
	char *d = xasprintf("%s/%s", tmpdir, dir);
	mkdir(d, 0755);
	char *p = path_in(dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	free(p);
	free(d);
}

static bool exists(const char *dir, const char *name)
{
	char *p = path_in(dir, name);
	bool yes = access(p, F_OK) == 0;
	free(p);
	return yes;
}

/* Pushes `file` from src/ to boxes b1 and b2 (repos tmp/r1 and tmp/R2, R2
 * made only when `both`); returns sync_job_push's result. */
static int push(const char *file, const char *R2, bool both, bool all_or_nothing, struct seen *s)
{
	char *root = xasprintf("%s/src", tmpdir);
	char *r1 = xasprintf("%s/r1", tmpdir), *r2 = xasprintf("%s/%s", tmpdir, R2);
	mkdir(r1, 0755);
	if (both)
		mkdir(r2, 0755);
	char cwd[PATH_MAX];
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(root), 0);
	sync_plan pl;
	bg_err err = {0};
	assert_int_equal(sync_plan_init(&pl, root, &err), 0);
	assert_int_equal(sync_plan_add(&pl, file, SYNC_ADD_NEED_LOCAL, &err), 0);
	assert_int_equal(sync_plan_finish(&pl, sh_only, NULL, &err), 0);
	remote_target t = {.name = "b", .transport = REMOTE_TRANSPORT_LOCAL};
	sync_target targets[2] = {{.name = "b1", .repo = r1, .connect = &t},
				  {.name = "b2", .repo = r2, .connect = &t}};
	sync_opts o = {.verifier_for = sh_only, .all_or_nothing = all_or_nothing};
	sync_job j;
	sync_job_init(&j, targets, 2, &pl, &o, on_report, s);
	assert_int_equal(j.n, 2);
	sync_local_checks_cb cb = {could_not, refused, s};
	int rc = sync_job_push(&j, NULL, false, &cb);
	sync_job_release(&j);
	sync_plan_release(&pl);
	assert_int_equal(chdir(cwd), 0);
	free(root);
	free(r1);
	free(r2);
	return rc;
}

static void push_to_every_box(void **state)
{
	(void)state;
	put("src", "good.sh", "echo ok\n");
	struct seen s = {STRBUF_INIT, 0, 0};
	assert_int_equal(push("good.sh", "r2", true, false, &s), 0);
	assert_int_equal(s.refused, 0);
	/* each box reported once, in whatever order they finished */
	assert_int_equal(s.reports.len, strlen("b1 ok\nb2 ok\n"));
	assert_non_null(strstr(s.reports.buf, "b1 ok\n"));
	assert_non_null(strstr(s.reports.buf, "b2 ok\n"));
	assert_true(exists("r1", "good.sh") && exists("r2", "good.sh"));
	strbuf_release(&s.reports);
}

static void refused_here_touches_no_box(void **state)
{
	(void)state;
	put("src", "bad.sh", "if then fi (\n");
	struct seen s = {STRBUF_INIT, 0, 0};
	assert_int_equal(push("bad.sh", "r2", true, false, &s), BG_EXIT_VERIFY);
	assert_int_equal(s.refused, 1);
	assert_int_equal(s.reports.len, 0);
	assert_false(exists("r1", "bad.sh"));
	assert_false(exists("r2", "bad.sh"));
	/* all-or-nothing: the same, nothing committed or reported */
	s.refused = 0;
	assert_int_equal(push("bad.sh", "r2", true, true, &s), BG_EXIT_VERIFY);
	assert_int_equal(s.refused, 1);
	assert_int_equal(s.reports.len, 0);
	assert_false(exists("r1", "bad.sh"));
	strbuf_release(&s.reports);
}

static void all_or_nothing_swaps_nowhere_when_one_fails(void **state)
{
	(void)state;
	/* box b2's repo does not exist: it fails */
	put("src", "other.sh", "echo other\n");
	struct seen s = {STRBUF_INIT, 0, 0};
	assert_int_equal(push("other.sh", "none", false, true, &s), 0);
	assert_non_null(strstr(s.reports.buf, "b2 failed\n"));
	assert_non_null(strstr(s.reports.buf, "b1 ok\n"));
	assert_false(exists("r1", "other.sh")); /* b1 verified, but was not swapped */
	strbuf_release(&s.reports);
}

static void on_group(void *ctx, const char *out, const char *const *names, size_t k,
		     const sync_box *first)
{
	strbuf *b = ctx;
	strbuf_addf(b, "[%s] first %s:", out, first->box->name);
	for (size_t i = 0; i < k; i++)
		strbuf_addf(b, " %s", names[i]);
	strbuf_addch(b, '\n');
}

static void verifier_output_grouped(void **state)
{
	(void)state;
	sync_target t[4] = {{.name = "h1"}, {.name = "h2"}, {.name = "h3"}, {.name = "h4"}};
	sync_file f[4][2] = {
		{{.state = SYNC_VERIFY_FAILED, .verify_out = "E1"}, {.state = SYNC_UPDATED}},
		{{.state = SYNC_VERIFY_FAILED, .verify_out = "E2"}, {.state = SYNC_UPDATED}},
		{{.state = SYNC_VERIFY_FAILED, .verify_out = "E1"},
		 {.state = SYNC_VERIFY_FAILED}},              /* refused, said nothing */
		{{.state = SYNC_UPDATED, .verify_out = "E1"}, /* not refused: not shown */
		 {.state = SYNC_VERIFY_FAILED, .verify_out = ""}},
	};
	sync_box b[4];
	memset(b, 0, sizeof(b));
	const sync_box *order[4];
	for (int i = 0; i < 4; i++) {
		b[i].box = &t[i];
		b[i].files = f[i];
		order[i] = &b[i];
	}
	strbuf out = STRBUF_INIT;
	sync_job_verify_groups(order, 4, 0, on_group, &out);
	assert_string_equal(out.buf, "[E1] first h1: h1 h3\n[E2] first h2: h2\n");
	strbuf_reset(&out);
	sync_job_verify_groups(order, 4, 1, on_group, &out);
	assert_string_equal(out.buf, "[] first h4: h4\n");
	strbuf_reset(&out);
	/* another order: groups follow it */
	const sync_box *rev[4] = {&b[3], &b[2], &b[1], &b[0]};
	sync_job_verify_groups(rev, 4, 0, on_group, &out);
	assert_string_equal(out.buf, "[E1] first h3: h3 h1\n[E2] first h2: h2\n");
	strbuf_reset(&out);
	sync_job_verify_groups(NULL, 0, 0, on_group, &out);
	assert_int_equal(out.len, 0);
	strbuf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(push_to_every_box),
		cmocka_unit_test(refused_here_touches_no_box),
		cmocka_unit_test(all_or_nothing_swaps_nowhere_when_one_fails),
		cmocka_unit_test(verifier_output_grouped),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
