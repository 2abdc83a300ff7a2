/* remote/exec_input: one standard input handed to every box. One box reads
 * the stream straight through; many read one spool, each at its own pace: a
 * box that never reads or stops early holds no other back, each gets every
 * byte in order, the end is 0, and a reader with nothing yet gets -1 and a
 * wake fd to wait on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "remote/exec_input.h"

/* Everything tap t gives until its end, waiting on its wake fd. */
static void read_all(exec_input_tap *t, strbuf *got, size_t chunk)
{
	char buf[4096];
	for (;;) {
		ssize_t r = exec_input_read(t, buf, chunk < sizeof(buf) ? chunk : sizeof(buf));
		if (r == 0)
			return;
		if (r > 0) {
			strbuf_add(got, buf, (size_t)r);
			continue;
		}
		struct pollfd p = {.fd = exec_input_wake_fd(t), .events = POLLIN};
		assert_true(poll(&p, 1, 10000) > 0);
	}
}

struct writer {
	int fd;
	const char *text;
	size_t len;
};

/* Writes the text in pieces, then closes: the input arrives over time. */
static void *write_slowly(void *arg)
{
	struct writer *w = arg;
	for (size_t at = 0; at < w->len;) {
		size_t n = w->len - at < 1000 ? w->len - at : 1000;
		assert_true(write(w->fd, w->text + at, n) == (ssize_t)n);
		at += n;
		usleep(100);
	}
	close(w->fd);
	return NULL;
}

static char *pattern(size_t n)
{
	char *s = xmalloc(n + 1);
	for (size_t i = 0; i < n; i++)
		s[i] = (char)('a' + (i * 7 + i / 26) % 26);
	s[n] = '\0';
	return s;
}

static void one_box_straight_through(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "hello\nworld\n", 12), 12);
	close(p[1]);
	exec_input *in;
	exec_input_tap *t;
	bg_err err = {0};
	assert_int_equal(exec_input_open(p[0], 1, &in, &err), 0);
	assert_int_equal(exec_input_tap_open(in, 0, &t, &err), 0);
	strbuf got = STRBUF_INIT;
	read_all(t, &got, 5);
	assert_string_equal(got.buf, "hello\nworld\n");
	assert_string_equal(exec_input_error(in), "");
	exec_input_done(t);
	exec_input_done(t); /* again is harmless */
	exec_input_free(in);
	close(p[0]);
	strbuf_release(&got);
}

static void many_boxes_each_get_everything(void **state)
{
	(void)state;
	size_t len = 300000; /* more than one read chunk, less than the window */
	char *text = pattern(len);
	int p[2];
	assert_int_equal(pipe(p), 0);
	struct writer w = {p[1], text, len};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, write_slowly, &w), 0);
	exec_input *in;
	bg_err err = {0};
	assert_int_equal(exec_input_open(p[0], 4, &in, &err), 0);
	exec_input_tap *t[4];
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(exec_input_tap_open(in, i, &t[i], &err), 0);
	/* box 3 never reads and is done at once; box 2 takes a little and stops */
	exec_input_done(t[3]);
	char small[10];
	ssize_t r;
	while ((r = exec_input_read(t[2], small, sizeof(small))) < 0) {
		struct pollfd pf = {.fd = exec_input_wake_fd(t[2]), .events = POLLIN};
		assert_true(poll(&pf, 1, 10000) > 0);
	}
	assert_true(r > 0 && memcmp(small, text, (size_t)r) == 0);
	exec_input_done(t[2]);
	/* boxes 0 and 1 read it all, at different paces */
	strbuf a = STRBUF_INIT, b = STRBUF_INIT;
	read_all(t[0], &a, 4096);
	read_all(t[1], &b, 333);
	assert_int_equal(a.len, len);
	assert_int_equal(b.len, len);
	assert_memory_equal(a.buf, text, len);
	assert_memory_equal(b.buf, text, len);
	assert_string_equal(exec_input_error(in), "");
	pthread_join(th, NULL);
	exec_input_free(in);
	close(p[0]);
	strbuf_release(&a);
	strbuf_release(&b);
	free(text);
}

static void empty_and_absent_input(void **state)
{
	(void)state;
	/* an empty input: the end at once, for every box */
	int p[2];
	assert_int_equal(pipe(p), 0);
	close(p[1]);
	exec_input *in;
	exec_input_tap *t[2];
	bg_err err = {0};
	assert_int_equal(exec_input_open(p[0], 2, &in, &err), 0);
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(exec_input_tap_open(in, i, &t[i], &err), 0);
		strbuf got = STRBUF_INIT;
		read_all(t[i], &got, 100);
		assert_int_equal(got.len, 0);
		strbuf_release(&got);
	}
	exec_input_free(in);
	close(p[0]);
	/* no standard input at all (a closed fd, one no pipe of the spool's can
	 * take: cli/main.c gives 0-2 /dev/null) reads as empty, no error */
	int fd = 1000;
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	assert_int_equal(exec_input_open(fd, 2, &in, &err), 0);
	assert_int_equal(exec_input_tap_open(in, 0, &t[0], &err), 0);
	strbuf got = STRBUF_INIT;
	read_all(t[0], &got, 100);
	assert_int_equal(got.len, 0);
	assert_string_equal(exec_input_error(in), "");
	strbuf_release(&got);
	exec_input_free(in);
	exec_input_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_box_straight_through),
		cmocka_unit_test(many_boxes_each_get_everything),
		cmocka_unit_test(empty_and_absent_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
