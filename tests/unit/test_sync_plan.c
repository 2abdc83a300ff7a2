/* sync plans: path normalisation and refusals, LOCAL=REMOTE, symlinks out of
 * the root, temporary names, verifier substitution, display of odd names,
 * exit codes. Real files in a temporary directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/exit.h"
#include "base/path.h"
#include "base/sha256.h"
#include "base/xmalloc.h"
#include "sync/pull_temp.h"
#include "sync/sync.h"
#include "tests/unit/unit.h"

static char root[PATH_MAX];
static char outside[PATH_MAX];

static void write_file(const char *path, const char *content, mode_t mode)
{
	write_text(path, content);
	chmod(path, mode);
}

static int setup(void **state)
{
	(void)state;
	assert_int_equal(unit_tmpdir_make("sync"), 0);
	char *real = realpath(tmpdir, NULL);
	snprintf(root, sizeof(root), "%s/repo", real);
	snprintf(outside, sizeof(outside), "%s/outside.py", real);
	free(real);
	assert_int_equal(mkdir(root, 0755), 0);
	char p[PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/scripts", root);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/scripts/a.py", root);
	write_file(p, "print('a')\n", 0750);
	snprintf(p, sizeof(p), "%s/x=y.py", root);
	write_file(p, "x = 1\n", 0644);
	write_file(outside, "secret\n", 0644);
	snprintf(p, sizeof(p), "%s/scripts/out.py", root);
	assert_int_equal(symlink(outside, p), 0);
	snprintf(p, sizeof(p), "%s/scripts/in.py", root);
	assert_int_equal(symlink("a.py", p), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unit_tmpdir_remove();
	return 0;
}

static void expect_norm(const char *in, const char *want)
{
	char *out = NULL;
	bg_err err = {0};
	int rc = bg_path_normalize_rel(in, &out, &err);
	if (want) {
		if (rc != 0 || strcmp(out, want) != 0)
			fail_msg("normalize(%s) = %d [%s], wanted [%s]", in, rc, out ? out : "",
				 want);
	} else if (rc != BG_EUSAGE) {
		fail_msg("normalize(%s) = %d [%s], wanted a refusal", in, rc, out ? out : "");
	}
	free(out);
}

static void test_normalize(void **state)
{
	(void)state;
	expect_norm("a/b.py", "a/b.py");
	expect_norm("./a//b/", "a/b");
	expect_norm("a/./c/../b.py", "a/b.py");
	expect_norm("a b/$x'\"/\n.py", "a b/$x'\"/\n.py");
	expect_norm("../a.py", NULL);
	expect_norm("a/../../b.py", NULL);
	expect_norm("/etc/passwd", NULL);
	expect_norm("", NULL);
	expect_norm(".", NULL);
	expect_norm("a/..", NULL);
}

static void expect_temp_name(const char *target, const char *want)
{
	unit_expect_str(sync_temp_name(target, "0123456789abcdef"), want, "sync_temp_name", target);
}

static void test_temp_names(void **state)
{
	(void)state;
	expect_temp_name("scripts/a.py", "scripts/.a.py.boxgate-0123456789abcdef.tmp.py");
	expect_temp_name("Makefile", ".Makefile.boxgate-0123456789abcdef.tmp");
	expect_temp_name("d/.bashrc", "d/..bashrc.boxgate-0123456789abcdef.tmp");
	expect_temp_name("d/x.weird ext", "d/.x.weird_ext.boxgate-0123456789abcdef.tmp");
	/* The name part is only of safe bytes (verifiers see it); the directory
	 * is the target's own. */
	char *t = sync_temp_name("a b/z$(touch X)'\"`;\n.py", "0123456789abcdef");
	assert_string_equal(t, "a b/.z__touch_X______.py.boxgate-0123456789abcdef.tmp.py");
	assert_true(bg_path_safe(strrchr(t, '/') + 1));
	free(t);
	expect_temp_name("caf\xc3\xa9.json", ".caf__.json.boxgate-0123456789abcdef.tmp.json");
	assert_true(bg_path_safe("./a/.b-c_d.tmp.py"));
	assert_false(bg_path_safe("-x"));
	assert_false(bg_path_safe("a b"));
	assert_false(bg_path_safe("a$b"));
	assert_false(bg_path_safe(""));
	/* A name at NAME_MAX: the temporary name still fits. */
	char longname[NAME_MAX + 1];
	memset(longname, 'n', NAME_MAX - 3);
	memcpy(longname + NAME_MAX - 3, ".py", 4);
	t = sync_temp_name(longname, "0123456789abcdef");
	assert_true(strlen(t) <= NAME_MAX);
	assert_non_null(strstr(t, ".boxgate-0123456789abcdef.tmp.py"));
	free(t);
	char a[17], b[17];
	sync_random_hex(a);
	sync_random_hex(b);
	assert_int_equal(strlen(a), 16);
	assert_int_equal(strspn(a, "0123456789abcdef"), 16);
	assert_string_not_equal(a, b);
}

/* pull's temporary names: made, recognised, never confused with a file; push's
 * recognised too (both are skipped when a pull walks a directory on the box). */
static void test_pull_temp_names(void **state)
{
	(void)state;
	char *t = sync_pull_temp_name("blob.bin", "0123456789abcdef");
	assert_string_equal(t, ".blob.bin.boxgate-pull-0123456789abcdef.tmp");
	assert_true(sync_pull_is_temp(t) && sync_is_boxgate_temp(t));
	free(t);
	char longname[NAME_MAX + 1];
	memset(longname, 'x', NAME_MAX);
	longname[NAME_MAX] = '\0';
	t = sync_pull_temp_name(longname, "fedcba9876543210");
	assert_int_equal(strlen(t), NAME_MAX);
	assert_true(sync_pull_is_temp(t));
	free(t);
	t = sync_pull_temp_name("a b\n;$", "0123456789abcdef");
	assert_string_equal(t, ".a_b___.boxgate-pull-0123456789abcdef.tmp");
	free(t);
	t = sync_temp_name("d/k.py", "0123456789abcdef");
	assert_true(sync_is_boxgate_temp(strrchr(t, '/') + 1));
	assert_false(sync_pull_is_temp(strrchr(t, '/') + 1));
	free(t);
	static const char *const no[] = {"blob.bin",
					 ".boxgate-pull-0123456789abcdef.tmp",
					 ".x.boxgate-pull-XYZ.tmp",
					 ".x.boxgate-pull-0123456789ABCDEF.tmp",
					 "x.boxgate-pull-0123456789abcdef.tmp",
					 ".x.boxgate-pull-0123456789abcdef.tmpx",
					 ".x.boxgate-0123456789abcde.tmp",
					 ".x.boxgate-0123456789abcdef.tmp.a-b",
					 ".x.boxgate-0123456789abcdef.tmp.",
					 "x.boxgate-rollback-20261205T101010Z",
					 ".x.boxgate-0123456789abcdef.tmp.12345678901234567",
					 ""};
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (sync_pull_is_temp(no[i]) ||
		    (sync_is_boxgate_temp(no[i]) &&
		     strcmp(no[i], ".boxgate-pull-0123456789abcdef.tmp")))
			fail_msg("'%s' taken for a temporary name", no[i]);
	assert_true(sync_is_boxgate_temp(".x.boxgate-0123456789abcdef.tmp"));
	assert_true(sync_is_boxgate_temp(".x.py.boxgate-0123456789abcdef.tmp.py"));
}

static void test_plan_paths(void **state)
{
	(void)state;
	sync_plan p;
	bg_err err = {0};
	char cwd[PATH_MAX];
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir("/"), 0);
	assert_int_equal(sync_plan_init(&p, root, &err), 0);

	/* cwd outside the root: relative to the root. */
	assert_int_equal(sync_plan_add(&p, "scripts/a.py", SYNC_ADD_NEED_LOCAL, &err), 0);
	assert_string_equal(p.items[0].rel, "scripts/a.py");
	assert_int_equal(sync_plan_add(&p, "scripts/a.py=deploy/", SYNC_ADD_NEED_LOCAL, &err), 0);
	assert_string_equal(p.items[1].rel, "deploy/a.py");
	assert_int_equal(sync_plan_add(&p, "scripts/a.py=other/b.py", SYNC_ADD_NEED_LOCAL, &err),
			 0);
	assert_string_equal(p.items[2].rel, "other/b.py");
	/* An existing file whose name has '=' is not split. */
	assert_int_equal(sync_plan_add(&p, "x=y.py", SYNC_ADD_NEED_LOCAL, &err), 0);
	assert_string_equal(p.items[3].rel, "x=y.py");
	/* A symlink inside the root: the content of its target, at its own name. */
	assert_int_equal(sync_plan_add(&p, "scripts/in.py", SYNC_ADD_NEED_LOCAL, &err), 0);
	assert_string_equal(p.items[4].rel, "scripts/in.py");
	assert_non_null(strstr(p.items[4].local, "/scripts/a.py"));
	/* An absolute path inside the root. */
	char abs[PATH_MAX + 32];
	snprintf(abs, sizeof(abs), "%s/scripts/../scripts/a.py=abs.py", root);
	assert_int_equal(sync_plan_add(&p, abs, SYNC_ADD_NEED_LOCAL, &err), 0);

	/* Refusals. */
	assert_int_equal(sync_plan_add(&p, "../outside.py", SYNC_ADD_NEED_LOCAL, &err), BG_EUSAGE);
	assert_non_null(strstr(err.msg, "outside the repo root"));
	assert_int_equal(sync_plan_add(&p, outside, SYNC_ADD_NEED_LOCAL, &err), BG_EUSAGE);
	assert_int_equal(sync_plan_add(&p, "scripts/out.py", SYNC_ADD_NEED_LOCAL, &err), BG_EUSAGE);
	assert_non_null(strstr(err.msg, "symlink that leads out"));
	assert_int_equal(sync_plan_add(&p, "scripts", SYNC_ADD_NEED_LOCAL, &err), BG_EUSAGE);
	assert_int_equal(sync_plan_add(&p, "scripts/a.py=/etc/x", SYNC_ADD_NEED_LOCAL, &err),
			 BG_EUSAGE);
	assert_int_equal(sync_plan_add(&p, "scripts/a.py=a/../../x", SYNC_ADD_NEED_LOCAL, &err),
			 BG_EUSAGE);
	assert_int_equal(sync_plan_add(&p, "scripts/a.py=", SYNC_ADD_NEED_LOCAL, &err), BG_EUSAGE);
	assert_int_equal(sync_plan_add(&p, "nope.py", SYNC_ADD_NEED_LOCAL, &err), BG_EUSAGE);
	assert_int_equal(sync_plan_add(&p, "x=y.py=scripts/a.py", SYNC_ADD_NEED_LOCAL, &err),
			 BG_EUSAGE);
	assert_int_equal(sync_plan_add(&p, "./scripts//a.py", SYNC_ADD_NEED_LOCAL, &err),
			 BG_EUSAGE);
	assert_non_null(strstr(err.msg, "the same target"));
	/* A target only (rollback): no local file needed, still no escape. */
	assert_int_equal(sync_plan_add(&p, "gone/z.py", 0, &err), 0);
	assert_null(p.items[p.n - 1].local);
	assert_int_equal(sync_plan_add(&p, "../z.py", 0, &err), BG_EUSAGE);
	size_t n = p.n;

	/* cwd inside the root: relative to the cwd. */
	char sub[PATH_MAX + 16];
	snprintf(sub, sizeof(sub), "%s/scripts", root);
	assert_int_equal(chdir(sub), 0);
	assert_int_equal(sync_plan_add(&p, "a.py=cwd.py", SYNC_ADD_NEED_LOCAL, &err), 0);
	assert_string_equal(p.items[n].rel, "cwd.py");
	assert_non_null(strstr(p.items[n].local, "/scripts/a.py"));
	assert_int_equal(sync_plan_add(&p, "../x=y.py=top.py", SYNC_ADD_NEED_LOCAL, &err),
			 BG_EUSAGE);

	assert_int_equal(sync_plan_finish(&p, NULL, NULL, &err), 0);
	char want[BG_SHA256_HEX_LEN + 1];
	bg_sha256_hex("print('a')\n", 11, want);
	assert_string_equal(p.items[0].sha, want);
	assert_int_equal(p.items[0].size, 11);
	assert_int_equal(p.items[0].mode, 0750);
	assert_null(p.items[0].verifier);
	sync_plan_release(&p);
	assert_int_equal(chdir(cwd), 0);
}

static void test_plan_add_rel(void **state)
{
	(void)state;
	sync_plan p;
	bg_err err = {0};
	assert_int_equal(sync_plan_init(&p, root, &err), 0);
	assert_int_equal(sync_plan_add_rel(&p, "scripts/a.py", &err), 0);
	assert_non_null(p.items[0].local);
	assert_int_equal(sync_plan_add_rel(&p, "scripts/a.py", &err), 0); /* duplicates fold */
	assert_int_equal(p.n, 1);
	assert_int_equal(sync_plan_add_rel(&p, "scripts/out.py", &err), 0);
	assert_null(p.items[1].local); /* leads out: not compared */
	assert_int_equal(sync_plan_add_rel(&p, "only/on/box.py", &err), 0);
	assert_null(p.items[2].local);
	assert_int_equal(sync_plan_add_rel(&p, "../up.py", &err), BG_EUSAGE);
	sync_plan_release(&p);
	assert_int_equal(sync_plan_init(&p, "/nonexistent/root", &err), BG_EUSAGE);
}

static void test_verifier_command(void **state)
{
	(void)state;
	char *c =
		sync_verifier_command("{python} -c \"import ast\" {}", "./a b/it's.py", "python3");
	assert_string_equal(c, "python3 -c \"import ast\" './a b/it'\\''s.py'");
	free(c);
	c = sync_verifier_command("{python} {} {}", "./x", "~/venv/bin/python");
	assert_string_equal(c, "\"$HOME\"/venv/bin/python ./x ./x");
	free(c);
	c = sync_verifier_command("bash -n {}", "./$x.sh", NULL);
	assert_string_equal(c, "bash -n './$x.sh'");
	free(c);
	c = sync_verifier_command("test -s {", "./x", NULL);
	assert_string_equal(c, "test -s {");
	free(c);
}

static void expect_display(const char *in, const char *want)
{
	unit_expect_str(sync_path_display(in), want, "sync_path_display", in);
}

static void test_display(void **state)
{
	(void)state;
	expect_display("scripts/a.py", "scripts/a.py");
	expect_display("a b/$x's.py", "a b/$x's.py");
	expect_display("caf\xc3\xa9.py", "caf\xc3\xa9.py");
	expect_display("new\nline", "\"new\\nline\"");
	expect_display("q\"uote", "\"q\\\"uote\"");
	expect_display("back\\slash", "\"back\\\\slash\"");
	expect_display("\xff\xfe.txt", "\"\\xff\\xfe.txt\"");
	expect_display("caf\xc3\xa9\x01", "\"caf\xc3\xa9\\x01\"");
}

static void test_exit_codes(void **state)
{
	(void)state;
	sync_plan p = {0};
	p.n = 1;
	sync_target box = {.name = "b"};
	sync_file f[4][1];
	sync_box b[4];
	memset(f, 0, sizeof(f));
	memset(b, 0, sizeof(b));
	for (int i = 0; i < 4; i++) {
		b[i].plan = &p;
		b[i].box = &box;
		b[i].files = f[i];
		f[i][0].state = SYNC_UPDATED;
	}
	assert_int_equal(sync_exit_code(b, 4), 0);
	f[0][0].state = SYNC_FAILED;
	f[0][0].code = BG_EREMOTE;
	assert_int_equal(sync_exit_code(b, 4), 1);
	b[1].rc = BG_ECONNECT;
	f[1][0].state = SYNC_FAILED;
	f[1][0].code = BG_ECONNECT;
	assert_int_equal(sync_exit_code(b, 4), 3);
	f[2][0].state = SYNC_VERIFY_FAILED;
	assert_int_equal(sync_exit_code(b, 4), 4);
	assert_int_equal(sync_exit_code(b + 3, 1), 0);
	assert_string_equal(sync_state_name(SYNC_WOULD_UPDATE), "would update");
	assert_true(sync_state_failed(SYNC_VERIFY_FAILED));
	assert_false(sync_state_failed(SYNC_UNCHANGED));
}

/* The local checks of a whole plan: the built-in ones run here (bash -n on
 * the .sh files), a refusal is BG_EXIT_VERIFY with the verifier's output, an
 * item without a built-in verifier is passed by. */
static const char *sh_only(void *ctx, const char *rel, bool *builtin)
{
	(void)ctx;
	size_t n = strlen(rel);
	*builtin = n > 3 && strcmp(rel + n - 3, ".sh") == 0;
	return *builtin ? "bash -n {}" : NULL;
}

struct checks_seen {
	int refused, could_not;
	char last[256];
};

static void seen_refused(void *ctx, const sync_item *it, int rc, const char *out)
{
	struct checks_seen *c = ctx;
	c->refused++;
	snprintf(c->last, sizeof(c->last), "%s %d %s", it->rel, rc, out);
}

static void seen_could_not(void *ctx, const sync_item *it, const char *why)
{
	(void)it;
	(void)why;
	((struct checks_seen *)ctx)->could_not++;
}

static void test_local_checks(void **state)
{
	(void)state;
	char p[PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/good.sh", root);
	write_file(p, "echo ok\n", 0644);
	snprintf(p, sizeof(p), "%s/bad.sh", root);
	write_file(p, "if then fi (\n", 0644);
	snprintf(p, sizeof(p), "%s/it's bad;.sh", root);
	write_file(p, "done\n", 0644);
	char cwd[PATH_MAX];
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(root), 0);
	sync_plan pl;
	bg_err err = {0};
	assert_int_equal(sync_plan_init(&pl, root, &err), 0);
	assert_int_equal(sync_plan_add(&pl, "good.sh", SYNC_ADD_NEED_LOCAL, &err), 0);
	assert_int_equal(sync_plan_add(&pl, "scripts/a.py", SYNC_ADD_NEED_LOCAL, &err), 0);
	assert_int_equal(sync_plan_finish(&pl, sh_only, NULL, &err), 0);
	struct checks_seen seen = {0};
	sync_local_checks_cb cb = {seen_could_not, seen_refused, &seen};
	assert_int_equal(sync_local_checks(NULL, &pl, &cb), 0);
	assert_int_equal(seen.refused + seen.could_not, 0);
	sync_plan_release(&pl);

	assert_int_equal(sync_plan_init(&pl, root, &err), 0);
	assert_int_equal(sync_plan_add(&pl, "good.sh", SYNC_ADD_NEED_LOCAL, &err), 0);
	assert_int_equal(sync_plan_add(&pl, "bad.sh", SYNC_ADD_NEED_LOCAL, &err), 0);
	assert_int_equal(sync_plan_add(&pl, "it's bad;.sh", SYNC_ADD_NEED_LOCAL, &err), 0);
	assert_int_equal(sync_plan_finish(&pl, sh_only, NULL, &err), 0);
	assert_int_equal(sync_local_checks(NULL, &pl, &cb), BG_EXIT_VERIFY);
	assert_int_equal(seen.refused, 2);
	assert_non_null(strstr(seen.last, "it's bad;.sh 2 "));
	sync_plan_release(&pl);
	assert_int_equal(chdir(cwd), 0);
}

/* All-or-nothing commits only when no box failed: its connection or a file. */
static void test_boxes_all_ok(void **state)
{
	(void)state;
	sync_plan pl = {.n = 2};
	sync_file f[3][2] = {{{.state = SYNC_UPDATED}, {.state = SYNC_UNCHANGED}},
			     {{.state = SYNC_UPDATED}, {.state = SYNC_VERIFY_FAILED}},
			     {{.state = SYNC_UPDATED}, {.state = SYNC_UPDATED}}};
	sync_box b[3];
	memset(b, 0, sizeof(b));
	for (int i = 0; i < 3; i++) {
		b[i].plan = &pl;
		b[i].files = f[i];
	}
	assert_false(sync_box_failed(&b[0]));
	assert_true(sync_box_failed(&b[1]));
	assert_true(sync_boxes_all_ok(b, 1));
	assert_false(sync_boxes_all_ok(b, 2));
	assert_true(sync_boxes_all_ok(b, 0));
	b[2].rc = BG_ECONNECT; /* not reached: failed, whatever its files say */
	assert_true(sync_box_failed(&b[2]));
	b[1] = b[0];
	assert_false(sync_boxes_all_ok(b, 3));
	b[2].rc = 0;
	assert_true(sync_boxes_all_ok(b, 3));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normalize),        cmocka_unit_test(test_temp_names),
		cmocka_unit_test(test_plan_paths),       cmocka_unit_test(test_plan_add_rel),
		cmocka_unit_test(test_verifier_command), cmocka_unit_test(test_display),
		cmocka_unit_test(test_exit_codes),       cmocka_unit_test(test_pull_temp_names),
		cmocka_unit_test(test_local_checks),     cmocka_unit_test(test_boxes_all_ok),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
