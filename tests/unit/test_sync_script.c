/* The scripts push, status and rollback run on a box, run here by real
 * shells (dash and bash) against a temporary repo: probe answers, stale
 * temporary files, the lock, hashes, verify/swap, refusals, forged result
 * lines, rollback, odd names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/sha256.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "sync/internal.h"
#include "tests/capture.h"
#include "tests/unit/unit.h"

#define NONCE "0badc0de0badc0de"
#define M     "@" NONCE " "

static char base[PATH_MAX], repo[PATH_MAX];
static const char *shells[] = {"/bin/dash", "/bin/bash"};
static size_t last_len; /* bytes of the last run's output (it may hold NULs) */

static int setup(void **state)
{
	(void)state;
	assert_int_equal(unit_tmpdir_make("script"), 0);
	char *real = realpath(tmpdir, NULL);
	snprintf(base, sizeof(base), "%s", real);
	free(real);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unit_tmpdir_remove();
	return 0;
}

/* A fresh repo directory for one shell's run. */
static void fresh_repo(const char *name)
{
	snprintf(repo, sizeof(repo), "%s/%s", base, name);
	char cmd[PATH_MAX + 32];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", repo, repo);
	assert_int_equal(system(cmd), 0);
}

static char *rpath(const char *rel)
{
	return xasprintf("%s/%s", repo, rel);
}

static void put(const char *rel, const char *content)
{
	char *p = rpath(rel);
	write_text(p, content);
	free(p);
}

static char *slurp(const char *rel)
{
	char *p = rpath(rel);
	FILE *f = fopen(p, "r");
	free(p);
	if (!f)
		return NULL;
	size_t len;
	char *s = capture_stream(f, &len);
	fclose(f);
	return s;
}

/* The file REL holds exactly `content`. */
static void expect_file(const char *rel, const char *content)
{
	char *got = slurp(rel);
	assert_non_null(got);
	assert_string_equal(got, content);
	free(got);
}

static bool exists(const char *rel)
{
	char *p = rpath(rel);
	struct stat st;
	bool e = lstat(p, &st) == 0;
	free(p);
	return e;
}

/* Runs `script` with `shell` -c in / (the script cds itself); stdout in *out. */
static int run(const char *shell, const char *script, char **out)
{
	int status = 0;
	*out = capture_shell(shell, script, "/", NULL, &last_len, &status);
	assert_non_null(*out);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* Whether `line` is a whole line of `out`. */
static bool has_line(const char *out, const char *line)
{
	size_t l = strlen(line);
	for (const char *s = out; (s = strstr(s, line)); s++)
		if ((s == out || s[-1] == '\n') && (s[l] == '\n' || s[l] == '\0'))
			return true;
	return false;
}

static void expect_line(const char *out, const char *line)
{
	if (!has_line(out, line))
		fail_msg("no line [%s] in:\n%s", line, out);
}

static void expect_no_line(const char *out, const char *line)
{
	if (has_line(out, line))
		fail_msg("unexpected line [%s] in:\n%s", line, out);
}

/* A plan over the repo: rel[i] targets; `local` files given as content. */
static void plan_of(sync_plan *p, const char *const *rel, size_t n)
{
	bg_err err = {0};
	assert_int_equal(sync_plan_init(p, repo, &err), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(sync_plan_add_rel(p, rel[i], &err), 0);
	assert_int_equal(sync_plan_finish(p, NULL, NULL, &err), 0);
}

static void test_probe(void **state)
{
	(void)state;
	for (size_t s = 0; s < 2; s++) {
		fresh_repo(s ? "probe-bash" : "probe-dash");
		put("a.py", "print('a')\n");
		put("a.py.bak", "print('old')\n");
		char *p = rpath("d");
		mkdir(p, 0755);
		free(p);
		p = rpath("l.py");
		assert_int_equal(symlink("a.py", p), 0);
		free(p);
		put(".a.py.boxgate-0123456789abcdef.tmp.py", "stale");
		put(".a.py.boxgate-notours.tmp.py", "someone else's");
		put(".m.py.boxgate-aaaaaaaaaaaaaaaa.tmp.py", "stale too");
		const char *rel[] = {"a.py", "d", "l.py", "m.py", "sub/deeper/new.py"};
		sync_plan plan;
		plan_of(&plan, rel, 5);
		size_t idx[] = {0, 1, 2, 3, 4};
		sync_probe_opts o = {.repo = repo,
				     .nonce = NONCE,
				     .lock = true,
				     .lock_wait_s = 0,
				     .fail_busy = true,
				     .clean = true,
				     .stats = true};
		char *script = sync_script_probe(&o, &plan, idx, 5);
		char *out = NULL;
		assert_int_equal(run(shells[s], script, &out), 0);
		char *want = xasprintf(M "repo %s", repo);
		expect_line(out, want);
		free(want);
		expect_line(out, M "lock o");
		expect_line(out, M "f 0 F F i 1 1");
		expect_line(out, M "f 1 D - i 1 1");
		expect_line(out, M "f 2 L - i 1 1");
		expect_line(out, M "f 3 M - i 1 1");
		expect_line(out, M "f 4 M - i 1 0");
		expect_line(out, M "t 0 r 0123456789abcdef.tmp.py");
		expect_line(out, M "t 3 r aaaaaaaaaaaaaaaa.tmp.py");
		expect_line(out, M "stats 1");
		expect_line(out, M "hashes 1");
		expect_line(out, M "end");
		char *h = strstr(out, M "hashes 1\n");
		assert_non_null(h);
		assert_memory_equal(h + strlen(M "hashes 1\n"), plan.items[0].sha, 64);
		char *st = strstr(out, M "stats 1\n");
		assert_non_null(st);
		assert_memory_equal(st + strlen(M "stats 1\n"), "644 11\n", 7);
		assert_false(exists(".a.py.boxgate-0123456789abcdef.tmp.py"));
		assert_false(exists(".m.py.boxgate-aaaaaaaaaaaaaaaa.tmp.py"));
		assert_true(exists(".a.py.boxgate-notours.tmp.py"));
		free(out);
		free(script);

		/* Without clean: reported, kept. */
		put(".a.py.boxgate-0123456789abcdef.tmp.py", "stale");
		o.clean = false;
		script = sync_script_probe(&o, &plan, idx, 1);
		assert_int_equal(run(shells[s], script, &out), 0);
		expect_line(out, M "t 0 k 0123456789abcdef.tmp.py");
		assert_true(exists(".a.py.boxgate-0123456789abcdef.tmp.py"));
		free(out);
		free(script);
		sync_plan_release(&plan);
	}
}

static void test_probe_lock_busy(void **state)
{
	(void)state;
	fresh_repo("busy");
	put("a.py", "x\n");
	int sync_pipe[2];
	assert_int_equal(pipe(sync_pipe), 0);
	pid_t holder = fork();
	if (holder == 0) {
		int fd = open(repo, O_RDONLY | O_DIRECTORY);
		flock(fd, LOCK_EX);
		if (write(sync_pipe[1], "x", 1) != 1)
			_exit(1);
		sleep(30);
		_exit(0);
	}
	char c;
	assert_int_equal(read(sync_pipe[0], &c, 1), 1);
	const char *rel[] = {"a.py"};
	sync_plan plan;
	plan_of(&plan, rel, 1);
	size_t idx[] = {0};
	sync_probe_opts o = {.repo = repo,
			     .nonce = NONCE,
			     .lock = true,
			     .lock_wait_s = 1,
			     .fail_busy = true,
			     .clean = true};
	char *script = sync_script_probe(&o, &plan, idx, 1);
	char *out = NULL;
	assert_int_equal(run("/bin/sh", script, &out), 4);
	expect_line(out, M "lock b");
	expect_no_line(out, M "end");
	free(out);
	free(script);
	/* Status does not wait and does not clean under someone else's lock. */
	put(".a.py.boxgate-0123456789abcdef.tmp.py", "in use");
	o.lock_wait_s = 0;
	o.fail_busy = false;
	script = sync_script_probe(&o, &plan, idx, 1);
	assert_int_equal(run("/bin/sh", script, &out), 0);
	expect_line(out, M "lock b");
	expect_line(out, M "t 0 k 0123456789abcdef.tmp.py");
	assert_true(exists(".a.py.boxgate-0123456789abcdef.tmp.py"));
	free(out);
	free(script);
	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);
	close(sync_pipe[0]);
	close(sync_pipe[1]);
	sync_plan_release(&plan);
}

static void test_probe_big(void **state)
{
	(void)state;
	fresh_repo("big");
	char *p = rpath("same.bin");
	int fd = open(p, O_CREAT | O_WRONLY, 0644);
	assert_int_equal(ftruncate(fd, SYNC_BIG_FILE), 0);
	close(fd);
	free(p);
	put("other.bin", "small\n");
	const char *rel[] = {"same.bin", "other.bin"};
	sync_plan plan;
	plan_of(&plan, rel, 2);
	/* Pretend both local files are big and of the first one's size. */
	plan.items[1].size = plan.items[0].size;
	free(plan.items[1].local);
	plan.items[1].local = xstrdup(plan.items[0].local);
	size_t idx[] = {0, 1};
	sync_probe_opts o = {.repo = repo, .nonce = NONCE};
	char *script = sync_script_probe(&o, &plan, idx, 2);
	char *out = NULL;
	assert_int_equal(run("/bin/sh", script, &out), 0);
	char *want = xasprintf(M "H 0 %s", plan.items[0].sha);
	assert_non_null(strstr(out, want));
	free(want);
	expect_line(out, M "S 1 6");
	expect_line(out, M "hashes 0");
	free(out);
	free(script);
	sync_plan_release(&plan);
}

/* Runs an apply script for one file; returns its output. */
static char *apply_one(const char *shell, const char *target, const char *temp, const char *sha,
		       const char *verifier, unsigned what)
{
	char *dotted = xasprintf("./%s", temp);
	char *v = verifier ? sync_verifier_command(verifier, dotted, "python3") : NULL;
	sync_apply_file f = {.index = 0,
			     .target = target,
			     .temp = temp,
			     .bak_temp = ".t.boxgate-ffffffffffffffff.tmp",
			     .sha = sha,
			     .verifier = v};
	char *script = sync_script_apply(repo, NONCE, "box1", &f, 1, what);
	char *out = NULL;
	assert_int_equal(run(shell, script, &out), 0);
	free(script);
	free(v);
	free(dotted);
	return out;
}

static void sha_of(const char *s, char out[65])
{
	bg_sha256_hex(s, strlen(s), out);
}

/* Uploads `content` as `temp` and applies it to `target`, as a push does. */
static char *push_content(const char *shell, const char *target, const char *temp,
			  const char *content, const char *verifier, unsigned what)
{
	char sha[65];
	put(temp, content);
	sha_of(content, sha);
	return apply_one(shell, target, temp, sha, verifier, what);
}

/* The script reported the hash of `content` for file 0. */
static void expect_hash_line(const char *out, const char *content)
{
	char sha[65];
	sha_of(content, sha);
	char *want = xasprintf(M "h 0 %s", sha);
	expect_line(out, want);
	free(want);
}

static void test_apply_swap(void **state)
{
	(void)state;
	for (size_t s = 0; s < 2; s++) {
		fresh_repo(s ? "swap-bash" : "swap-dash");
		/* Replace: .bak is the old file, the temporary file is gone. */
		put("t.py", "old\n");
		char *out = push_content(shells[s], "t.py", ".t.py.boxgate-1111111111111111.tmp.py",
					 "new\n",
					 "test -s {} && test \"$BOXGATE_TARGET\" = t.py && test "
					 "\"$BOXGATE_BOX\" = box1",
					 SYNC_DO_VERIFY | SYNC_DO_SWAP);
		expect_hash_line(out, "new\n");
		expect_line(out, M "vok 0");
		expect_line(out, M "ok 0 replaced");
		expect_file("t.py", "new\n");
		expect_file("t.py.bak", "old\n");
		assert_false(exists(".t.py.boxgate-1111111111111111.tmp.py"));
		free(out);

		/* Create. */
		out = push_content(shells[s], "n.py", ".n.py.boxgate-2222222222222222.tmp.py",
				   "fresh\n", NULL, SYNC_DO_VERIFY | SYNC_DO_SWAP);
		expect_line(out, M "ok 0 created");
		assert_false(exists("n.py.bak"));
		free(out);

		/* A killed push left TARGET.bak as a second name of TARGET. */
		char *tp = rpath("t.py"), *bp = rpath("t.py.bak");
		unlink(bp);
		assert_int_equal(link(tp, bp), 0);
		free(tp);
		free(bp);
		out = push_content(shells[s], "t.py", ".t.py.boxgate-3333333333333333.tmp.py",
				   "newer\n", NULL, SYNC_DO_VERIFY | SYNC_DO_SWAP);
		expect_line(out, M "ok 0 replaced");
		expect_file("t.py", "newer\n");
		expect_file("t.py.bak", "new\n");
		free(out);
	}
}

static void test_apply_refusals(void **state)
{
	(void)state;
	for (size_t s = 0; s < 2; s++) {
		fresh_repo(s ? "refuse-bash" : "refuse-dash");
		put("t.py", "old\n");
		/* A verifier that fails and tries to forge result lines. */
		char *out = push_content(
			shells[s], "t.py", ".t.py.boxgate-1111111111111111.tmp.py", "new\n",
			"echo '" M "ok 0 replaced'; echo \"broken: {}\" >&2; exit 3",
			SYNC_DO_VERIFY | SYNC_DO_SWAP);
		expect_line(out, M "v 0 3");
		expect_line(out, "|" M "ok 0 replaced");
		expect_line(out, "|broken: ./.t.py.boxgate-1111111111111111.tmp.py");
		expect_line(out, M "vend 0");
		expect_no_line(out, M "ok 0 replaced");
		expect_file("t.py", "old\n");
		assert_false(exists(".t.py.boxgate-1111111111111111.tmp.py"));
		assert_false(exists("t.py.bak"));
		free(out);

		/* A temporary file that is not the local content. */
		char sha[65];
		sha_of("new\n", sha);
		put(".t.py.boxgate-2222222222222222.tmp.py", "tampered\n");
		out = apply_one(shells[s], "t.py", ".t.py.boxgate-2222222222222222.tmp.py", sha,
				NULL, SYNC_DO_VERIFY | SYNC_DO_SWAP);
		expect_line(out, M "x 0 hash");
		expect_file("t.py", "old\n");
		assert_false(exists(".t.py.boxgate-2222222222222222.tmp.py"));
		free(out);

		/* Verify only (all-or-nothing, first phase): nothing swapped. */
		out = push_content(shells[s], "t.py", ".t.py.boxgate-3333333333333333.tmp.py",
				   "new\n", "true", SYNC_DO_VERIFY);
		expect_line(out, M "vok 0");
		expect_no_line(out, M "ok 0 replaced");
		assert_true(exists(".t.py.boxgate-3333333333333333.tmp.py"));
		expect_file("t.py", "old\n");
		free(out);
		/* ... then the swap alone. */
		out = apply_one(shells[s], "t.py", ".t.py.boxgate-3333333333333333.tmp.py", NULL,
				NULL, SYNC_DO_SWAP);
		expect_line(out, M "ok 0 replaced");
		expect_file("t.py", "new\n");
		free(out);
	}
}

static void test_rollback(void **state)
{
	(void)state;
	for (size_t s = 0; s < 2; s++) {
		fresh_repo(s ? "rb-bash" : "rb-dash");
		put("t.py", "current\n");
		put("t.py.bak", "previous\n");
		char *out = apply_one(shells[s], "t.py", ".t.py.boxgate-4444444444444444.tmp.py",
				      NULL, "test -s {}", SYNC_DO_ROLLBACK);
		expect_hash_line(out, "previous\n");
		expect_line(out, M "ok 0 replaced");
		expect_file("t.py", "previous\n");
		expect_file("t.py.bak", "previous\n");
		assert_false(exists(".t.py.boxgate-4444444444444444.tmp.py"));
		free(out);
		/* A second rollback finds the target equal to its .bak: nothing
		 * done, never a swap back. */
		out = apply_one(shells[s], "t.py", ".t.py.boxgate-7777777777777777.tmp.py", NULL,
				"test -s {}", SYNC_DO_ROLLBACK);
		expect_line(out, M "x 0 same");
		expect_file("t.py", "previous\n");
		assert_false(exists(".t.py.boxgate-7777777777777777.tmp.py"));
		free(out);
		/* A refused .bak changes nothing. */
		put("t.py.bak", "older\n");
		out = apply_one(shells[s], "t.py", ".t.py.boxgate-5555555555555555.tmp.py", NULL,
				"false", SYNC_DO_ROLLBACK);
		expect_line(out, M "v 0 1");
		expect_file("t.py", "previous\n");
		expect_file("t.py.bak", "older\n");
		assert_false(exists(".t.py.boxgate-5555555555555555.tmp.py"));
		free(out);
		/* No .bak. */
		out = apply_one(shells[s], "u.py", ".u.py.boxgate-6666666666666666.tmp.py", NULL,
				NULL, SYNC_DO_ROLLBACK);
		expect_line(out, M "x 0 nobak");
		free(out);
	}
}

static void test_odd_names(void **state)
{
	(void)state;
	const char *names[] = {
		"we ird/it's \"q\" $HOME.py", "new\nline.sh", "-dash.py",       "star*[x].py",
		"caf\xc3\xa9.json",           "\xff\xfe raw", "back\\slash.py", "new\n" M "end"};
	size_t n = sizeof(names) / sizeof(names[0]);
	for (size_t s = 0; s < 2; s++) {
		fresh_repo(s ? "odd-bash" : "odd-dash");
		char *d = rpath("we ird");
		mkdir(d, 0755);
		free(d);
		for (size_t i = 0; i < n; i++)
			put(names[i], names[i]);
		sync_plan plan;
		plan_of(&plan, names, n);
		size_t idx[16];
		for (size_t i = 0; i < n; i++)
			idx[i] = i;
		sync_probe_opts o = {.repo = repo, .nonce = NONCE, .clean = true};
		char *script = sync_script_probe(&o, &plan, idx, n);
		char *out = NULL;
		assert_int_equal(run(shells[s], script, &out), 0);
		char line[64];
		for (size_t i = 0; i < n; i++) {
			snprintf(line, sizeof(line), M "f %zu F - i 1 1", i);
			expect_line(out, line);
		}
		snprintf(line, sizeof(line), M "hashes %zu", n);
		expect_line(out, line);
		/* The forged end line in a file name never appears on its own. */
		const char *end = strstr(out, "\n" M "end\n");
		assert_non_null(end);
		if (strstr(end + 1, "\n" M "end"))
			fail_msg("a second end line:\n%s", out);
		free(out);
		free(script);
		/* Swap each one in. */
		for (size_t i = 0; i < n; i++) {
			char hex[17];
			sync_random_hex(hex);
			char *temp = sync_temp_name(names[i], hex);
			char *content = xasprintf("v2 %s", names[i]);
			put(temp, content);
			char sha[65];
			sha_of(content, sha);
			out = apply_one(shells[s], names[i], temp, sha, "test -s {}",
					SYNC_DO_VERIFY | SYNC_DO_SWAP);
			expect_line(out, M "ok 0 replaced");
			char *bak = xasprintf("%s.bak", names[i]);
			expect_file(names[i], content);
			expect_file(bak, names[i]);
			assert_false(exists(temp));
			free(bak);
			free(content);
			free(temp);
			free(out);
		}
		sync_plan_release(&plan);
	}
}

/* Runs an apply script for `f`, after `prefix` (shell text run first). */
static char *apply_file(const char *shell, const char *prefix, sync_apply_file *f, unsigned what)
{
	char *script = sync_script_apply(repo, NONCE, "box1", f, 1, what);
	char *full = xasprintf("%s\n%s", prefix, script);
	char *out = NULL;
	assert_int_equal(run(shell, full, &out), 0);
	free(full);
	free(script);
	return out;
}

static void owner_of(const char *rel, char *buf, size_t n)
{
	char *p = rpath(rel);
	struct stat st;
	assert_int_equal(lstat(p, &st), 0);
	snprintf(buf, n, "%u:%u:%o", (unsigned)st.st_uid, (unsigned)st.st_gid,
		 (unsigned)(st.st_mode & 07777));
	free(p);
}

/* The verifier sees a safe path: through a link when the directory's is
 * not; a template nesting shells cannot run what a name holds. */
static void test_apply_safe_vpath(void **state)
{
	(void)state;
	for (size_t s = 0; s < 2; s++) {
		fresh_repo(s ? "vpath-bash" : "vpath-dash");
		char *d = rpath("d$(touch CANARY)");
		assert_int_equal(mkdir(d, 0755), 0);
		free(d);
		const char *target = "d$(touch CANARY)/z$(touch CANARY).vtx";
		char *temp = sync_temp_name(target, "7777777777777777");
		put(temp, "new\n");
		char sha[65];
		sha_of("new\n", sha);
		const char *vpath = "./.boxgate-0123456789abcdef.vdir/"
				    ".z__touch_CANARY_.vtx.boxgate-7777777777777777.tmp.vtx";
		assert_string_equal(strrchr(vpath, '/') + 1, strrchr(temp, '/') + 1);
		char *v = sync_verifier_command("sh -c \"test -s {} && test -s $1\" x \"$1\" && "
						"test \"$BOXGATE_FILE\" = {} && echo saw {}",
						vpath, NULL);
		sync_apply_file f = {.index = 0,
				     .target = target,
				     .temp = temp,
				     .bak_temp = ".x.boxgate-ffffffffffffffff.tmp",
				     .sha = sha,
				     .verifier = v,
				     .vpath = vpath,
				     .vlink = ".boxgate-0123456789abcdef.vdir",
				     .vdir = "d$(touch CANARY)",
				     .keep_owner = true};
		char *out = apply_file(shells[s], "", &f, SYNC_DO_VERIFY | SYNC_DO_SWAP);
		expect_line(out, M "vok 0");
		expect_line(out, M "ok 0 created");
		assert_false(exists("CANARY"));
		assert_false(exists("d$(touch CANARY)/CANARY"));
		assert_false(exists(".boxgate-0123456789abcdef.vdir"));
		assert_true(exists(target));
		free(out);
		/* A refusal's output names the path it saw; the link goes too. */
		free(v);
		put(temp, "");
		sha_of("", sha);
		v = sync_verifier_command("echo \"checking {}\"; test -s {}", vpath, NULL);
		f.verifier = v;
		out = apply_file(shells[s], "", &f, SYNC_DO_VERIFY | SYNC_DO_SWAP);
		expect_line(out, M "v 0 1");
		char *saw = xasprintf("|checking %s", vpath);
		expect_line(out, saw);
		free(saw);
		assert_false(exists(".boxgate-0123456789abcdef.vdir"));
		assert_false(exists(temp));
		free(out);
		free(v);
		free(temp);
	}
}

/* The swap keeps the replaced file's owner and group; a refused chown is
 * reported (w line) and the swap still happens. */
static void test_apply_owner(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	for (size_t s = 0; s < 2; s++) {
		fresh_repo(s ? "own-bash" : "own-dash");
		char sha[65], o[64];
		put("t.cfg", "old\n");
		char *t = rpath("t.cfg");
		assert_int_equal(chown(t, 1000, 1000), 0);
		assert_int_equal(chmod(t, 0640), 0);
		put(".t.cfg.boxgate-1111111111111111.tmp.cfg", "new\n");
		sha_of("new\n", sha);
		sync_apply_file f = {.index = 0,
				     .target = "t.cfg",
				     .temp = ".t.cfg.boxgate-1111111111111111.tmp.cfg",
				     .bak_temp = ".t.cfg.boxgate-ffffffffffffffff.tmp.cfg",
				     .sha = sha,
				     .keep_owner = true};
		char *out = apply_file(shells[s], "", &f, SYNC_DO_VERIFY | SYNC_DO_SWAP);
		expect_line(out, M "ok 0 replaced");
		assert_null(strstr(out, M "w 0"));
		owner_of("t.cfg", o, sizeof(o));
		assert_string_equal(o, "1000:1000:644");
		owner_of("t.cfg.bak", o, sizeof(o));
		assert_string_equal(o, "1000:1000:640");
		free(out);
		/* chown refused (as for a user that is not root): said, swapped anyway. */
		put(".t.cfg.boxgate-2222222222222222.tmp.cfg", "newer\n");
		sha_of("newer\n", sha);
		f.temp = ".t.cfg.boxgate-2222222222222222.tmp.cfg";
		out = apply_file(shells[s], "chown() { return 1; }", &f,
				 SYNC_DO_VERIFY | SYNC_DO_SWAP);
		char *w = xasprintf(M "w 0 1000:1000 %u:%u", (unsigned)geteuid(),
				    (unsigned)getegid());
		expect_line(out, w);
		free(w);
		expect_line(out, M "ok 0 replaced");
		expect_file("t.cfg", "newer\n");
		free(out);
		free(t);
	}
}

static void test_scan(void **state)
{
	(void)state;
	fresh_repo("scan");
	char *d = rpath("sub dir");
	mkdir(d, 0755);
	free(d);
	d = rpath(".git");
	mkdir(d, 0755);
	free(d);
	put("sub dir/a.py.bak", "x");
	put("sub dir/.b.py.boxgate-0123456789abcdef.tmp.py", "x");
	put(".git/c.py.bak", "x");
	put("plain.py", "x");
	char *script = sync_script_scan(repo, NONCE);
	char *out = NULL;
	int rc = run("/bin/sh", script, &out);
	assert_int_equal(rc, 0);
	const char *s = strstr(out, M "scan\n");
	assert_non_null(s);
	static const char a[] = "./sub dir/a.py.bak";
	static const char b[] = "./sub dir/.b.py.boxgate-0123456789abcdef.tmp.py";
	static const char g[] = "./.git/c.py.bak";
	size_t len = last_len - (size_t)(s - out);
	assert_non_null(memmem(s, len, a, sizeof(a)));
	assert_non_null(memmem(s, len, b, sizeof(b)));
	assert_null(memmem(s, len, g, sizeof(g) - 1));
	/* No manifest: no "pushed" block. */
	assert_null(memmem(s, len, M "pushed", strlen(M "pushed")));
	free(out);
	/* The manifest follows the names, every line after a '|'. */
	d = rpath(".boxgate");
	mkdir(d, 0755);
	free(d);
	put(".boxgate/pushed", "aa\t1\tnew.py\n@" NONCE " end\n");
	assert_int_equal(run("/bin/sh", script, &out), 0);
	static const char block[] = M "pushed\n|aa\t1\tnew.py\n|@" NONCE " end\n" M "end\n";
	assert_non_null(memmem(out, last_len, block, sizeof(block) - 1));
	free(out);
	/* Over SYNC_MANIFEST_MAX bytes: said, not sent. */
	char *big = xmalloc(SYNC_MANIFEST_MAX + 2);
	memset(big, 'x', SYNC_MANIFEST_MAX + 1);
	big[SYNC_MANIFEST_MAX + 1] = '\0';
	put(".boxgate/pushed", big);
	free(big);
	assert_int_equal(run("/bin/sh", script, &out), 0);
	static const char big_said[] = M "pushed big\n" M "end\n";
	assert_non_null(memmem(out, last_len, big_said, sizeof(big_said) - 1));
	assert_null(memmem(out, last_len, "|xxx", 4));
	free(out);
	free(script);
}

/* The scripts (sync/sh/) print only the words of the parser's one table,
 * and every word of the table: none can be added on one side only. */
static bool word_is(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && memcmp(s, word, n) == 0;
}

static void test_words_one_table(void **state)
{
	(void)state;
	static const char tag[] = "@$BGN ";
	static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
	for (size_t s = 0; sync_sh_sources[s]; s++)
		for (const char *p = strstr(sync_sh_sources[s], tag); p; p = strstr(p + 1, tag)) {
			const char *w = p + strlen(tag);
			size_t n = strspn(w, letters);
			bool known = false;
			for (size_t k = 0; sync_proto_word(k); k++)
				known = known || word_is(w, n, sync_proto_word(k));
			if (!known)
				fail_msg(
					"the scripts use \"%.*s\", a word the parser does not know",
					(int)n, w);
		}
	for (size_t k = 0; sync_proto_word(k); k++) {
		bool used = false;
		for (size_t s = 0; sync_sh_sources[s] && !used; s++)
			for (const char *p = strstr(sync_sh_sources[s], tag); p && !used;
			     p = strstr(p + 1, tag)) {
				const char *w = p + strlen(tag);
				used = word_is(w, strspn(w, letters), sync_proto_word(k));
			}
		if (!used)
			fail_msg("no script uses \"%s\", a word of the parser's table",
				 sync_proto_word(k));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probe),
		cmocka_unit_test(test_probe_lock_busy),
		cmocka_unit_test(test_probe_big),
		cmocka_unit_test(test_apply_swap),
		cmocka_unit_test(test_apply_refusals),
		cmocka_unit_test(test_rollback),
		cmocka_unit_test(test_odd_names),
		cmocka_unit_test(test_scan),
		cmocka_unit_test(test_apply_safe_vpath),
		cmocka_unit_test(test_apply_owner),
		cmocka_unit_test(test_words_one_table),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
