/* remote/master: the frames a master and its clients exchange (whole, cut,
 * oversized, short payloads), the socket path a box's key gives (each part of
 * the key makes another; no master for the local box, a jump host, a
 * control_persist_s of 0 or a path too long) and the directory the masters
 * live in (created 0700; refused when others may enter it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "remote/master.h"
#include "remote/master_proto.h"
#include "unit.h"

UNIT_SCRATCH_GROUP("master")

static void frames_round_trip(void **state)
{
	(void)state;
	strbuf sb = STRBUF_INIT;
	mf_add(&sb, MF_OUT, "hello\n", 6);
	mf_add(&sb, MF_EOF, NULL, 0);
	int type;
	const char *p;
	size_t n, off = 0;
	/* Cut anywhere, a frame is not whole until its last byte is there. */
	for (size_t cut = 0; cut < MF_HDR + 6; cut++) {
		strbuf part = STRBUF_INIT;
		size_t o = 0;
		strbuf_add(&part, sb.buf, cut);
		assert_int_equal(mf_take(&part, &o, &type, &p, &n), 0);
		assert_int_equal(o, 0);
		strbuf_release(&part);
	}
	assert_int_equal(mf_take(&sb, &off, &type, &p, &n), 1);
	assert_int_equal(type, MF_OUT);
	assert_int_equal(n, 6);
	assert_memory_equal(p, "hello\n", 6);
	assert_int_equal(mf_take(&sb, &off, &type, &p, &n), 1);
	assert_int_equal(type, MF_EOF);
	assert_int_equal(n, 0);
	assert_int_equal(mf_take(&sb, &off, &type, &p, &n), 0);
	mf_compact(&sb, &off);
	assert_int_equal(sb.len, 0);
	assert_int_equal(off, 0);
	strbuf_release(&sb);
}

static void frames_refused(void **state)
{
	(void)state;
	/* A length past MF_MAX is a broken peer, never a wait for 4 GiB. */
	strbuf sb = STRBUF_INIT;
	strbuf_add(&sb, "H\xff\xff\xff\xff", 5);
	int type;
	const char *p;
	size_t n, off = 0;
	assert_int_equal(mf_take(&sb, &off, &type, &p, &n), -1);
	strbuf_reset(&sb);
	off = 0;
	strbuf_addch(&sb, 'O');
	mf_put_u32(&sb, (uint32_t)MF_MAX + 1);
	assert_int_equal(mf_take(&sb, &off, &type, &p, &n), -1);
	strbuf_release(&sb);
}

static void payload_readers(void **state)
{
	(void)state;
	strbuf sb = STRBUF_INIT;
	mf_put_u32(&sb, 0xdeadbeefu);
	mf_put_u64(&sb, 0x0102030405060708ull);
	mf_put_str(&sb, "box", 3);
	mf_reader r = {(const unsigned char *)sb.buf, sb.len};
	uint32_t a;
	uint64_t b;
	const char *s;
	size_t n;
	assert_true(mf_get_u32(&r, &a));
	assert_int_equal(a, 0xdeadbeefu);
	assert_true(mf_get_u64(&r, &b));
	assert_true(b == 0x0102030405060708ull);
	assert_true(mf_get_str(&r, &s, &n));
	assert_int_equal(n, 3);
	assert_memory_equal(s, "box", 3);
	assert_false(mf_get_u32(&r, &a)); /* nothing left */
	/* A string whose length runs past the payload. */
	strbuf_reset(&sb);
	mf_put_str(&sb, "abcdef", 6);
	mf_reader cut = {(const unsigned char *)sb.buf, sb.len - 1};
	assert_false(mf_get_str(&cut, &s, &n));
	mf_reader one = {(const unsigned char *)sb.buf, 1};
	assert_false(mf_get_str(&one, &s, &n));
	strbuf_release(&sb);
}

static remote_target box(void)
{
	static char *ids[] = {"/home/u/.ssh/id_ed25519"};
	static char *kh[] = {"/home/u/.ssh/known_hosts"};
	return (remote_target){.name = "h1",
			       .transport = REMOTE_TRANSPORT_SSH,
			       .hostname = "10.0.0.1",
			       .port = 22,
			       .user = "root",
			       .identities = ids,
			       .n_identities = 1,
			       .known_hosts = kh,
			       .n_known_hosts = 1,
			       .connect_timeout_s = 10,
			       .keepalive_s = 5,
			       .control_persist_ms = 300000};
}

/* Paths travel with a 4-byte length: none is cut at 64 KiB, a NUL inside
 * one is refused, a length past the payload too. */
static void long_strings(void **state)
{
	(void)state;
	strbuf sb = STRBUF_INIT;
	char *big = malloc(70001);
	memset(big, 'x', 70000);
	big[70000] = '\0';
	mf_put_lstr(&sb, big, 70000);
	mf_put_lstr(&sb, "a\0b", 3);
	mf_reader r = {(const unsigned char *)sb.buf, sb.len};
	char *p = mf_get_path(&r);
	assert_non_null(p);
	assert_int_equal(strlen(p), 70000);
	free(p);
	assert_null(mf_get_path(&r)); /* the NUL */
	unsigned char shortp[] = {0, 0, 0, 9, 'a', 'b'};
	mf_reader r2 = {shortp, sizeof(shortp)};
	const char *s;
	size_t n;
	assert_false(mf_get_lstr(&r2, &s, &n));
	free(big);
	strbuf_release(&sb);
}

/* A descriptor passed with a frame arrives with its bytes; a second one
 * before the first is taken replaces it (the first closed). */
static void descriptors_passed(void **state)
{
	(void)state;
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	int fd = open("/dev/null", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(mf_send_fd(sv[0], "hello", 5, fd), 0);
	strbuf in = STRBUF_INIT;
	int got = -1;
	assert_int_equal(mf_recv(sv[1], &in, &got), 5);
	assert_memory_equal(in.buf, "hello", 5);
	assert_true(got >= 0);
	struct stat a, b;
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(fstat(got, &b), 0);
	assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	int first = got;
	assert_int_equal(mf_send_fd(sv[0], "x", 1, fd), 0);
	assert_int_equal(mf_recv(sv[1], &in, &got), 1);
	assert_true(got >= 0);
	assert_int_equal(fcntl(first, F_GETFD), -1); /* closed */
	close(got);
	close(fd);
	close(sv[0]);
	assert_int_equal(mf_recv(sv[1], &in, &got), 0); /* the peer's end */
	close(sv[1]);
	strbuf_release(&in);
}

static void paths_by_key(void **state)
{
	(void)state;
	remote_target t = box();
	char *base = remote_master_path(&t, "/run/user/0/boxgate");
	assert_non_null(base);
	assert_int_equal(strncmp(base, "/run/user/0/boxgate/", 20), 0);
	assert_string_equal(base + strlen(base) - 5, ".sock");
	char *again = remote_master_path(&t, "/run/user/0/boxgate");
	assert_string_equal(base, again);
	free(again);
	static char *other_kh[] = {"/tmp/kh"};
	remote_target v[7];
	for (int i = 0; i < 7; i++)
		v[i] = box();
	v[0].user = "alice";
	v[1].port = 2222;
	v[2].n_identities = 0;
	v[3].known_hosts = other_kh;
	v[4].host_key_check = REMOTE_HKC_ACCEPT_NEW;
	v[5].name = "h1-alias";
	v[6].keepalive_s = 1;
	for (int i = 0; i < 7; i++) {
		char *p = remote_master_path(&v[i], "/run/user/0/boxgate");
		assert_non_null(p);
		assert_string_not_equal(p, base);
		free(p);
	}
	free(base);
	/* No master: persist 0, the local box, a jump host, no room in sun_path. */
	remote_target off = box(), local = box(), jumped = box(), hop = box();
	off.control_persist_ms = 0;
	local.transport = REMOTE_TRANSPORT_LOCAL;
	jumped.jump = &hop;
	assert_null(remote_master_path(&off, "/d"));
	assert_null(remote_master_path(&local, "/d"));
	assert_null(remote_master_path(&jumped, "/d"));
	char longdir[120];
	memset(longdir, 'x', sizeof(longdir) - 1);
	longdir[0] = '/';
	longdir[sizeof(longdir) - 1] = '\0';
	remote_target t2 = box();
	assert_null(remote_master_path(&t2, longdir));
}

static void the_directory(void **state)
{
	(void)state;
	char *run = xasprintf("%s/run", tmpdir);
	assert_int_equal(mkdir(run, 0700), 0);
	setenv("XDG_RUNTIME_DIR", run, 1);
	char *dir = NULL;
	bg_err err = {0};
	assert_int_equal(remote_master_dir(&dir, &err), 0);
	char *want = xasprintf("%s/boxgate", run);
	assert_string_equal(dir, want);
	struct stat st;
	assert_int_equal(lstat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	free(dir);
	/* Open to others: no masters there. */
	assert_int_equal(chmod(want, 0755), 0);
	assert_int_equal(remote_master_dir(&dir, &err), BG_EIO);
	assert_null(dir);
	assert_non_null(strstr(err.msg, "0700"));
	free(want);
	free(run);
	unsetenv("XDG_RUNTIME_DIR");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(frames_round_trip),  cmocka_unit_test(frames_refused),
		cmocka_unit_test(payload_readers),    cmocka_unit_test(paths_by_key),
		cmocka_unit_test(the_directory),      cmocka_unit_test(long_strings),
		cmocka_unit_test(descriptors_passed),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
