/* A sanitizer build's leak check still finds a leak with its globals narrowed
 * (tests/sanitizer/lsan_roots.c): this program, run again as a child, leaks one block held
 * by nothing and keeps others held from its zeroed and initialised globals and from libc's
 * (an open FILE); LeakSanitizer must name the first and none of the others. Built and
 * run in the sanitizer build only (LSAN_ROOTS). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define LEAKED    4241
#define HELD_BSS  4343
#define HELD_DATA 4447
#define CHILD_ENV "BG_LSAN_PROBE_CHILD"

static char data_marker;
char *held_in_bss;
char *held_in_data = &data_marker;

/* out of line, so no copy of the pointer is left in main's frame */
__attribute__((noinline)) static void leak(void)
{
	char *volatile leaked = malloc(LEAKED);
	leaked[0] = 1;
	leaked = NULL;
}

static int child(void)
{
	leak();
	held_in_bss = malloc(HELD_BSS);
	held_in_data = malloc(HELD_DATA);
	FILE *f = fopen("/dev/null", "r"); /* libc keeps it on its list of open files */
	(void)f;
	return 0;
}

static void test_leak_found_held_not(void **state)
{
	(void)state;
	const char *tmp = getenv("TMPDIR");
	char err[4096];
	snprintf(err, sizeof err, "%s/bg-lsan-probe.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	int fd = mkstemp(err);
	assert_true(fd >= 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fd, 2);
		setenv(CHILD_ENV, "1", 1);
		execl("/proc/self/exe", "test_lsan_roots", (char *)NULL);
		_exit(127);
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	char report[65536] = "";
	ssize_t n = pread(fd, report, sizeof report - 1, 0);
	close(fd);
	unlink(err);
	assert_true(n > 0);
	report[n] = '\0';
	/* a found leak fails the exit (AddressSanitizer's exitcode, 1) */
	assert_true(WIFEXITED(status));
	assert_int_not_equal(WEXITSTATUS(status), 0);
	assert_non_null(strstr(report, "Direct leak of 4241 byte(s) in 1 object(s)"));
	assert_null(strstr(report, "4343 byte"));
	assert_null(strstr(report, "4447 byte"));
	assert_non_null(strstr(
		report, "SUMMARY: AddressSanitizer: 4241 byte(s) leaked in 1 allocation(s)."));
}

int main(void)
{
	if (getenv(CHILD_ENV))
		return child();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_leak_found_held_not),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
