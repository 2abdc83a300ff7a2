/* remote/hostfile: known_hosts as OpenSSH reads it (patterns, hashed names,
 * lines, the verdict). The integration test t12 checks the same against the
 * real ssh client; these pin the pure parts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "remote/hostfile.h"

/* Keys written by ssh-keygen. */
#define ED1 "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH9btZMMGz0YpV3YfTFqDsUIKfET6/BtyAc7ee1uq7CG"
#define ED2 "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEUYdSlqygWvboTbNmW3QOHEXxdI16t7jkg1PT2XiAfV"
#define EC1                                                                                        \
	"ecdsa-sha2-nistp256 "                                                                     \
	"AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBFByLNKWhnJ/"                         \
	"7dXgcfISQrXMu68RlusYxUKQ6Bo"                                                              \
	"SK/i/d9pks35n538aNNhRNIMnR+EvXkYiI9Vo5iXeBBYqhEs="
/* `ssh-keygen -H` of "1.2.3.4" and of "[1.2.3.4]:2222". */
#define H_1234      "|1|BBSAD4zo7SGYoiYax0g8yRaM0CU=|bnCCCGcn4iKbRaqFOELhlDiDkrM="
#define H_1234_2222 "|1|3OlVXBrFa44u8V3mD7Lh+OTBk1w=|LnK9aQRkxRql5LTAicfD+CQYmQw="

static void patterns(void **state)
{
	(void)state;
	assert_true(remote_hostfile_match_pattern("gpu1.lab", "gpu?.lab"));
	assert_true(remote_hostfile_match_pattern("gpu12.lab", "gpu*.lab"));
	assert_true(remote_hostfile_match_pattern("x", "*"));
	assert_true(remote_hostfile_match_pattern("", "*"));
	assert_false(remote_hostfile_match_pattern("gpu12.lab", "gpu?.lab"));
	assert_false(
		remote_hostfile_match_pattern("GPU1", "gpu1")); /* the pattern itself is exact */
	assert_true(remote_hostfile_match_pattern("[10.0.0.1]:2222", "[10.0.0.1]:*"));
	assert_true(remote_hostfile_match_pattern("abcabd", "*ab?"));
	assert_false(remote_hostfile_match_pattern("abc", "abcd"));
}

static void lists(void **state)
{
	(void)state;
	assert_int_equal(remote_hostfile_match_list("b", "a,b,c"), 1);
	assert_int_equal(remote_hostfile_match_list("d", "a,b,c"), 0);
	/* Case-insensitive both ways, as match_hostname lowercases both. */
	assert_int_equal(remote_hostfile_match_list("GPU1.Lab", "gpu1.lab"), 1);
	assert_int_equal(remote_hostfile_match_list("gpu1.lab", "GPU*.LAB"), 1);
	/* A negated match voids the line, whatever comes before or after. */
	assert_int_equal(remote_hostfile_match_list("10.0.0.1", "10.0.0.*,!10.0.0.1"), -1);
	assert_int_equal(remote_hostfile_match_list("10.0.0.1", "!10.0.0.1,10.0.0.*"), -1);
	assert_int_equal(remote_hostfile_match_list("10.0.0.2", "!10.0.0.1,10.0.0.*"), 1);
	assert_int_equal(remote_hostfile_match_list("10.0.0.2", "!10.0.0.1"), 0);
	assert_int_equal(remote_hostfile_match_list("", "a,,b"), 1);
	/* A pattern of 1023 characters or more voids the whole list. */
	char big[1100];
	memset(big, 'x', sizeof(big));
	memcpy(big, "h,", 2);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(remote_hostfile_match_list("h", big), 0);
}

static void hashed(void **state)
{
	(void)state;
	assert_int_equal(remote_hostfile_match_hashed("1.2.3.4", H_1234), 1);
	assert_int_equal(remote_hostfile_match_hashed("1.2.3.5", H_1234), 0);
	assert_int_equal(remote_hostfile_match_hashed("[1.2.3.4]:2222", H_1234_2222), 1);
	assert_int_equal(remote_hostfile_match_hashed("1.2.3.4", H_1234_2222), 0);
	assert_int_equal(remote_hostfile_match_names("1.2.3.4", H_1234), 1);
	/* Malformed: not |1|, no salt end, salt not 20 bytes, empty salt. */
	assert_int_equal(remote_hostfile_match_names("1.2.3.4", "|2|abc|def"), -1);
	assert_int_equal(remote_hostfile_match_names("1.2.3.4", "|1|BBSAD4zo7SGYoiYax0g8yRaM0CU="),
			 -1);
	assert_int_equal(remote_hostfile_match_names("1.2.3.4", "|1|eA==|eA=="), -1);
	assert_int_equal(remote_hostfile_match_names("1.2.3.4", "|1||eA=="), -1);
	/* Names are compared in full: a truncated hash is no match. */
	assert_int_equal(
		remote_hostfile_match_names("1.2.3.4", "|1|BBSAD4zo7SGYoiYax0g8yRaM0CU=|bnCC"), 0);
	/* Our own hashing round-trips. */
	unsigned char salt[20] = {1, 2, 3};
	char *h = remote_hostfile_hash_name("gpu1.lab", salt);
	assert_int_equal(remote_hostfile_match_hashed("gpu1.lab", h), 1);
	assert_int_equal(remote_hostfile_match_hashed("gpu2.lab", h), 0);
	free(h);
}

static void host_port(void **state)
{
	(void)state;
	char *a = remote_hostfile_host_port("gpu1", 22),
	     *b = remote_hostfile_host_port("gpu1", 2222);
	assert_string_equal(a, "gpu1");
	assert_string_equal(b, "[gpu1]:2222");
	free(a);
	free(b);
}

/* parse LINE: the kind, with the marker and names of a key line. */
static remote_hostfile_line_kind parse(const char *text, remote_hostfile_line *l, char *buf,
				       size_t n)
{
	snprintf(buf, n, "%s", text);
	remote_hostfile_parse_line(buf, l);
	return l->kind;
}

static void lines(void **state)
{
	(void)state;
	char buf[1024];
	remote_hostfile_line l;
	assert_int_equal(parse("", &l, buf, sizeof(buf)), REMOTE_HOSTFILE_LINE_SKIP);
	assert_int_equal(parse("  \t# c", &l, buf, sizeof(buf)), REMOTE_HOSTFILE_LINE_SKIP);
	assert_int_equal(parse("a,b " ED1 " comment", &l, buf, sizeof(buf)),
			 REMOTE_HOSTFILE_LINE_KEY);
	assert_string_equal(l.names, "a,b");
	assert_int_equal(l.marker, REMOTE_HOSTFILE_MARK_NONE);
	assert_string_equal(remote_hostkey_label(l.key.type), "ED25519");
	free(l.key.blob);
	assert_int_equal(parse("@revoked \th " ED1, &l, buf, sizeof(buf)),
			 REMOTE_HOSTFILE_LINE_KEY);
	assert_int_equal(l.marker, REMOTE_HOSTFILE_MARK_REVOKED);
	assert_string_equal(l.names, "h");
	free(l.key.blob);
	assert_int_equal(parse("@cert-authority *.lab " EC1, &l, buf, sizeof(buf)),
			 REMOTE_HOSTFILE_LINE_KEY);
	assert_int_equal(l.marker, REMOTE_HOSTFILE_MARK_CA);
	assert_string_equal(remote_hostkey_label(l.key.type), "ECDSA");
	free(l.key.blob);
	/* CR is kept, as OpenSSH keeps it: base64 skips it. */
	assert_int_equal(parse("h " ED1 "\r", &l, buf, sizeof(buf)), REMOTE_HOSTFILE_LINE_KEY);
	free(l.key.blob);
	/* What OpenSSH skips. */
	const char *bad[] = {
		"@revoked\th " ED1,         /* marker ends at the first space */
		"@bogus h " ED1,            /* unknown marker */
		"@revoked @revoked h " ED1, /* two markers */
		"only-one-field",           /* no key */
		"h # " ED1,                 /* comment before the key */
		"h ssh-ed25519",            /* no blob */
		"h ssh-foo AAAA",           /* unknown type */
		"h ssh-ed25519 !!!",        /* not base64 */
		"h ssh-ed25519 AAAA",       /* truncated blob */
		"h ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIH9btZMMGz0YpV3YfTFqDsUIKfET6/BtyAc7ee1uq7CG",
		"h ssh-ed25519 "
		"AAAAC3NzaC1lZDI1NTE5AAAAIH9btZMMGz0YpV3YfTFqDsUIKfET6/BtyAc7ee1uq7CGAAAA",
		"h ecdsa-sha2-nistp384 "
		"AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBFByLNKWhnJ/7dXgcf"
		"ISQrXMu68RlusYxUKQ6BoSK/i/d9pks35n538aNNhRNIMnR+EvXkYiI9Vo5iXeBBYqhEs=",
		/* the point moved off the curve */
		"h ecdsa-sha2-nistp256 "
		"AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBFByLNKWhnJ/7dXgcf"
		"ISQrXMu68RlusYxUKQ6BoSK/i/d9pks35n538aNNhRNIMnR+EvXkYiI9Vo5iXeBBYqhEA=",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(bad[i], &l, buf, sizeof(buf)) != REMOTE_HOSTFILE_LINE_INVALID)
			fail_msg("accepted: %s", bad[i]);
		assert_non_null(l.why);
		assert_null(l.key.blob);
	}
}

/* An RSA blob with a modulus of `nbytes` bytes whose top byte is `top`. */
static size_t rsa_blob(unsigned char *b, size_t nbytes, unsigned char top)
{
	size_t o = 0;
	const unsigned char head[] = {0,   0,   0, 7, 's', 's', 'h', '-', 'r',
				      's', 'a', 0, 0, 0,   3,   1,   0,   1};
	memcpy(b, head, sizeof(head));
	o = sizeof(head);
	b[o++] = 0, b[o++] = 0, b[o++] = (unsigned char)(nbytes >> 8),
	b[o++] = (unsigned char)nbytes;
	memset(b + o, 0x5a, nbytes);
	b[o] = top;
	return o + nbytes;
}

static void rsa_sizes(void **state)
{
	(void)state;
	unsigned char b[600];
	const char *why = NULL;
	assert_int_equal(remote_hostkey_parse_blob(b, rsa_blob(b, 128, 0x40), &why),
			 -1); /* 1023 bits */
	assert_string_equal(why, "RSA key shorter than 1024 bits");
	size_t n = rsa_blob(b, 129, 0x00); /* leading zero, then 0x5a...: 1023 bits */
	assert_int_equal(remote_hostkey_parse_blob(b, n, NULL), -1);
	n = rsa_blob(b, 129, 0x00);
	b[18 + 4 + 1] = 0x80; /* 1024 bits */
	assert_int_equal(remote_hostkey_parse_blob(b, n, NULL), 4);
	assert_string_equal(remote_hostkey_label(4), "RSA");
	n = rsa_blob(b, 128, 0x80); /* negative mpint */
	assert_int_equal(remote_hostkey_parse_blob(b, n, NULL), -1);
}

static char *write_file(const char *text)
{
	char *path = strdup("/tmp/test_knownhosts.XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static remote_hostkey key_of(const char *text)
{
	char buf[1024];
	remote_hostfile_line l;
	snprintf(buf, sizeof(buf), "h %s", text);
	remote_hostfile_parse_line(buf, &l);
	assert_int_equal(l.kind, REMOTE_HOSTFILE_LINE_KEY);
	return l.key;
}

struct warned {
	int n;
	int last_line;
};

static void on_warn(void *ctx, const char *path, int line, const char *why)
{
	struct warned *w = ctx;
	(void)path;
	(void)why;
	w->n++;
	w->last_line = line;
}

/* verdict FILE-TEXT HOST KEY: load and check. */
static remote_hostkey_status verdict(const char *text, const char *host, const char *key, int *line)
{
	char *path = write_file(text);
	remote_hostfile_set s = REMOTE_HOSTFILE_SET_INIT;
	const remote_hostfile_entry *found = NULL;
	remote_hostkey k = key_of(key);
	remote_hostfile_load(&s, host, path, NULL, NULL);
	remote_hostkey_status st = remote_hostfile_check(&s, &k, &found);
	if (line)
		*line = found ? found->line : 0;
	remote_hostfile_set_release(&s);
	free(k.blob);
	unlink(path);
	free(path);
	return st;
}

static void check(void **state)
{
	(void)state;
	int line = 0;
	assert_int_equal(verdict("", "h", ED1, NULL), REMOTE_HOSTKEY_NEW);
	assert_int_equal(verdict("h " ED1 "\n", "h", ED1, &line), REMOTE_HOSTKEY_OK);
	assert_int_equal(line, 1);
	assert_int_equal(verdict("H " ED1 "\n", "h", ED1, NULL), REMOTE_HOSTKEY_OK);
	/* Any other key for the host, of any type, is a change... */
	assert_int_equal(verdict("h " ED2 "\n", "h", ED1, NULL), REMOTE_HOSTKEY_CHANGED);
	assert_int_equal(verdict("h " EC1 "\nh " ED2 "\n", "h", ED1, &line),
			 REMOTE_HOSTKEY_CHANGED);
	assert_int_equal(line, 2); /* the last differing entry is the offending one */
	/* ...unless an entry holds the key. */
	assert_int_equal(verdict("h " EC1 "\nh " ED1 "\n", "h", ED1, NULL), REMOTE_HOSTKEY_OK);
	/* @revoked wins, before or after; it never makes a key known. */
	assert_int_equal(verdict("@revoked h " ED1 "\nh " ED1 "\n", "h", ED1, &line),
			 REMOTE_HOSTKEY_REVOKED);
	assert_int_equal(line, 1);
	assert_int_equal(verdict("h " ED1 "\n@revoked * " ED1 "\n", "h", ED1, &line),
			 REMOTE_HOSTKEY_REVOKED);
	assert_int_equal(line, 2);
	assert_int_equal(verdict("@revoked " H_1234 " " ED1 "\n", "1.2.3.4", ED1, NULL),
			 REMOTE_HOSTKEY_REVOKED);
	assert_int_equal(verdict("@revoked h " ED2 "\nh " ED1 "\n", "h", ED1, NULL),
			 REMOTE_HOSTKEY_OK);
	/* @cert-authority is never a plain key match, nor a change. */
	assert_int_equal(verdict("@cert-authority h " ED1 "\n", "h", ED1, NULL),
			 REMOTE_HOSTKEY_NEW);
	assert_int_equal(verdict("@cert-authority h " ED2 "\n", "h", ED1, NULL),
			 REMOTE_HOSTKEY_NEW);
	/* Negation voids the line; other hosts' lines do not count. */
	assert_int_equal(verdict("!h,* " ED2 "\n", "h", ED1, NULL), REMOTE_HOSTKEY_NEW);
	assert_int_equal(verdict("g " ED2 "\n[h]:2222 " ED2 "\n", "h", ED1, NULL),
			 REMOTE_HOSTKEY_NEW);
	assert_int_equal(verdict("[h]:2222 " ED1 "\n", "[h]:2222", ED1, NULL), REMOTE_HOSTKEY_OK);
	/* CRLF lines, and lines OpenSSH cannot parse, are skipped as it skips them. */
	assert_int_equal(verdict("h " ED1 "\r\n", "h", ED1, NULL), REMOTE_HOSTKEY_OK);
	assert_int_equal(verdict("h ssh-ed25519 AAAA\n", "h", ED1, NULL), REMOTE_HOSTKEY_NEW);
}

static void load_warns(void **state)
{
	(void)state;
	char *path = write_file("# c\n\ngarbage\nh " ED1 "\n|1|x " ED1 "\n@x h " ED1 "\n");
	remote_hostfile_set s = REMOTE_HOSTFILE_SET_INIT;
	struct warned w = {0, 0};
	remote_hostfile_load(&s, "h", path, on_warn, &w);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.e[0].line, 4);
	assert_int_equal(w.n, 3);
	assert_int_equal(w.last_line, 6);
	remote_hostfile_set_release(&s);
	/* A missing file is an empty one. */
	remote_hostfile_load(&s, "h", "/nonexistent/known_hosts", on_warn, &w);
	assert_int_equal(s.n, 0);
	unlink(path);
	free(path);
}

static void lookup_and_format(void **state)
{
	(void)state;
	char *path =
		write_file("@revoked h " EC1 "\nh " EC1 "\nh " ED2 "\n@cert-authority h " ED1 "\n");
	remote_hostfile_set s = REMOTE_HOSTFILE_SET_INIT;
	remote_hostfile_load(&s, "h", path, NULL, NULL);
	assert_non_null(remote_hostfile_lookup_type(&s, 0)); /* ed25519 */
	assert_null(remote_hostfile_lookup_type(&s, 1));     /* ecdsa p256: its key is revoked */
	assert_null(remote_hostfile_lookup_type(&s, 4));
	assert_int_equal(remote_hostfile_find_marker(&s, REMOTE_HOSTFILE_MARK_CA)->line, 4);
	const char *m = NULL;
	assert_true(remote_hostkey_method(1, &m));
	assert_string_equal(m, "ecdsa-sha2-nistp256");
	remote_hostfile_set_release(&s);
	unlink(path);
	free(path);

	remote_hostkey k = key_of(ED1);
	char *line = remote_hostfile_format_entry("[GPU1.Lab]:2222", &k);
	assert_string_equal(line, "[gpu1.lab]:2222 " ED1 "\n");
	free(line);
	free(k.blob);
}

static void verdicts(void **state)
{
	(void)state;
	assert_string_equal(remote_hostkey_verdict("h1: @ " REMOTE_HOSTKEY_REVOKED_TEXT " @ ..."),
			    "REVOKED");
	assert_string_equal(remote_hostkey_verdict("h1: " REMOTE_HOSTKEY_CHANGED_TEXT " ..."),
			    "CHANGED");
	assert_string_equal(remote_hostkey_verdict("h1: host key for h is not known (x)"),
			    "UNKNOWN");
	assert_string_equal(remote_hostkey_verdict("h1: short write"), "REFUSED");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(patterns),
		cmocka_unit_test(lists),
		cmocka_unit_test(hashed),
		cmocka_unit_test(host_port),
		cmocka_unit_test(lines),
		cmocka_unit_test(rsa_sizes),
		cmocka_unit_test(check),
		cmocka_unit_test(load_warns),
		cmocka_unit_test(lookup_and_format),
		cmocka_unit_test(verdicts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
