/* conf/sshconfig: ssh_config read as ssh(1) reads it, for the keywords
 * boxgate honours. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xmalloc.h"
#include "conf/sshconfig.h"

static char tmpdir[256];
static char home[300];
static int counter;

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *cfg_file(const char *text)
{
	char *p = xasprintf("%s/cfg%d", tmpdir, ++counter);
	write_text(p, text);
	return p;
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

static int group_setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/bg-test-sshcfg-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(home, sizeof(home), "%s/home", tmpdir);
	mkdir(home, 0700);
	char *ssh = xasprintf("%s/.ssh", home);
	mkdir(ssh, 0700);
	free(ssh);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	nftw(tmpdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

/* Looks `host` up in a config holding `text`; asserts success. */
static void lookup(const char *text, const char *host, sshcfg_host *h)
{
	char *p = cfg_file(text);
	bg_err e = { 0 };
	int rc = sshcfg_lookup(p, host, home, h, &e);
	if (rc)
		print_error("unexpected: %s\n", e.msg);
	assert_int_equal(rc, 0);
	free(p);
}

static void expect_error(const char *text, const char *host, const char *fmt)
{
	char *p = cfg_file(text);
	bg_err e = { 0 };
	sshcfg_host h;
	int rc = sshcfg_lookup(p, host, home, &h, &e);
	char want[1024];
	snprintf(want, sizeof(want), fmt, p);
	if (rc == 0 || strcmp(want, e.msg) != 0)
		print_error("want: %s\ngot:  %d %s\n", want, rc, e.msg);
	assert_int_equal(rc, BG_ECONFIG);
	assert_string_equal(e.msg, want);
	assert_null(h.user);
	free(p);
}

static void test_patterns(void **state)
{
	(void)state;
	assert_true(sshcfg_match_pattern("*", "anything"));
	assert_true(sshcfg_match_pattern("*", ""));
	assert_true(sshcfg_match_pattern("b200-?", "b200-a"));
	assert_false(sshcfg_match_pattern("b200-?", "b200-ab"));
	assert_true(sshcfg_match_pattern("*.lab", "n1.lab"));
	assert_false(sshcfg_match_pattern("*.lab", "n1.lab.org"));
	assert_true(sshcfg_match_pattern("n*1*", "n0010"));
	assert_true(sshcfg_match_pattern("B200-A", "b200-a")); /* ssh lowercases the host */
	assert_false(sshcfg_match_pattern("", "x"));
	assert_true(sshcfg_match_pattern("a**b", "ab"));

	char *p1[] = { "*.lab", "!bad.lab" };
	assert_true(sshcfg_match_host(p1, 2, "n1.lab"));
	assert_false(sshcfg_match_host(p1, 2, "bad.lab"));
	assert_false(sshcfg_match_host(p1, 2, "other"));
	char *p2[] = { "!bad.lab" }; /* only negations: never matches */
	assert_false(sshcfg_match_host(p2, 1, "good"));
	char *p3[] = { "!*.lab", "*" };
	assert_true(sshcfg_match_host(p3, 2, "x.org"));
	assert_false(sshcfg_match_host(p3, 2, "x.lab"));
	char *p4[] = { "a", "b", "c" };
	assert_true(sshcfg_match_host(p4, 3, "b"));
}

static void test_split_args(void **state)
{
	(void)state;
	char **v;
	size_t n;
	assert_true(sshcfg_split_args("  a  \"b c\" 'd e' f\\ g \"h\\\"i\" # comment", &v, &n));
	assert_int_equal(n, 5);
	assert_string_equal(v[0], "a");
	assert_string_equal(v[1], "b c");
	assert_string_equal(v[2], "d e");
	assert_string_equal(v[3], "f g");
	assert_string_equal(v[4], "h\"i");
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	assert_true(sshcfg_split_args("", &v, &n));
	assert_int_equal(n, 0);
	free(v);
	assert_false(sshcfg_split_args("\"open", &v, &n));
	assert_null(v);
}

static void test_first_match_wins(void **state)
{
	(void)state;
	sshcfg_host h;
	lookup("# global part applies to every host\n"
	       "ConnectTimeout 7\n"
	       "\n"
	       "Host b200-a\n"
	       "    HostName 10.0.0.5\n"
	       "    User ubuntu\n"
	       "    IdentityFile ~/.ssh/a_key\n"
	       "Host b200-*\n"
	       "    HostName wrong\n"
	       "    User wrong\n"
	       "    Port 2200\n"
	       "    IdentityFile ~/.ssh/b_key\n"
	       "    ConnectTimeout 99\n"
	       "Host *\n"
	       "    User last\n"
	       "    Port 22\n"
	       "    UserKnownHostsFile ~/.ssh/kh1 ~/.ssh/kh2\n",
	       "b200-a", &h);
	assert_string_equal(h.hostname, "10.0.0.5");
	assert_string_equal(h.user, "ubuntu");
	assert_int_equal(h.port, 2200);
	assert_int_equal(h.n_identities, 2); /* IdentityFile accumulates */
	assert_string_equal(h.identities[0], "~/.ssh/a_key");
	assert_string_equal(h.identities[1], "~/.ssh/b_key");
	assert_string_equal(h.known_hosts[0], "~/.ssh/kh1"); /* the first path */
	assert_int_equal(h.connect_timeout_s, 7);
	assert_null(h.unsupported);
	sshcfg_host_release(&h);
	sshcfg_host_release(&h); /* twice is harmless */

	lookup("Host b200-a\n  User ubuntu\nHost *\n  User last\n", "other", &h);
	assert_string_equal(h.user, "last");
	assert_null(h.hostname);
	assert_int_equal(h.port, 0);
	assert_int_equal(h.connect_timeout_s, -1);
	sshcfg_host_release(&h);
}

static void test_syntax_forms(void **state)
{
	(void)state;
	sshcfg_host h;
	lookup("host=x\n"
	       "\tHOSTNAME=real\n"
	       "  user = \"u s\"\n"
	       "  pOrT\t= 2022\n"
	       "  identityfile \"~/.ssh/with space\"\n"
	       "  ConnectTimeout=1m30s\n"
	       "  SomethingElse whatever\n"
	       "  StrictHostKeyChecking no\n",
	       "x", &h);
	assert_string_equal(h.hostname, "real");
	assert_string_equal(h.user, "u s");
	assert_int_equal(h.port, 2022);
	assert_string_equal(h.identities[0], "~/.ssh/with space");
	assert_int_equal(h.connect_timeout_s, 90);
	sshcfg_host_release(&h);
	/* several patterns, CRLF line ends */
	lookup("Host one two three\r\n  User multi\r\n", "two", &h);
	assert_string_equal(h.user, "multi");
	sshcfg_host_release(&h);
	/* a negated match excludes the block, later blocks still apply */
	lookup("Host *.lab !bad.lab\n  User lab\nHost *\n  User any\n", "bad.lab", &h);
	assert_string_equal(h.user, "any");
	sshcfg_host_release(&h);
	lookup("Host *.lab !bad.lab\n  User lab\nHost *\n  User any\n", "ok.LAB", &h);
	assert_string_equal(h.user, "lab");
	sshcfg_host_release(&h);
}

static void test_match_blocks(void **state)
{
	(void)state;
	sshcfg_host h;
	lookup("Match host x exec \"true\"\n  User from-match\n"
	       "Host x\n  Port 2\n"
	       "Match all\n  IdentityFile all_key\n"
	       "Match user root\n  IdentityFile never\n",
	       "x", &h);
	assert_null(h.user);
	assert_int_equal(h.port, 2);
	assert_int_equal(h.n_identities, 1);
	assert_string_equal(h.identities[0], "all_key");
	sshcfg_host_release(&h);
}

static void test_proxy(void **state)
{
	(void)state;
	sshcfg_host h;
	char *p = cfg_file("Host a\n  ProxyJump bastion\nHost b\n  ProxyCommand none\nHost *\n  ProxyCommand ssh -W %h:%p j\n");
	bg_err e = { 0 };
	assert_int_equal(sshcfg_lookup(p, "a", home, &h, &e), 0);
	char *want = xasprintf("ProxyJump (%s:2)", p);
	assert_string_equal(h.unsupported, want);
	free(want);
	sshcfg_host_release(&h);
	/* `none` is fine and, being first, wins over the later one */
	assert_int_equal(sshcfg_lookup(p, "b", home, &h, &e), 0);
	assert_null(h.unsupported);
	sshcfg_host_release(&h);
	assert_int_equal(sshcfg_lookup(p, "c", home, &h, &e), 0);
	want = xasprintf("ProxyCommand (%s:6)", p);
	assert_string_equal(h.unsupported, want);
	free(want);
	sshcfg_host_release(&h);
	free(p);
	/* an ssh escape boxgate does not implement is reported, not fatal */
	p = cfg_file("Host *\n  IdentityFile ~/.ssh/%C\n");
	assert_int_equal(sshcfg_lookup(p, "c", home, &h, &e), 0);
	want = xasprintf("%%C in IdentityFile (%s:2)", p);
	assert_string_equal(h.unsupported, want);
	assert_int_equal(h.n_identities, 0);
	free(want);
	sshcfg_host_release(&h);
	free(p);
}

static void test_expand(void **state)
{
	(void)state;
	sshcfg_tokens t = { "real.host", "alias", "me", "them", "/home/me", 2222 };
	char *s = sshcfg_expand("~/.ssh/%h_%n_%u_%r_%p_%d_%%", &t, true);
	assert_string_equal(s, "/home/me/.ssh/real.host_alias_me_them_2222_/home/me_%");
	free(s);
	s = sshcfg_expand("~/x", &t, false);
	assert_string_equal(s, "~/x");
	free(s);
	s = sshcfg_expand("~", &t, true);
	assert_string_equal(s, "/home/me");
	free(s);
	s = sshcfg_expand("~other/x", &t, true); /* only ~ and ~/ */
	assert_string_equal(s, "~other/x");
	free(s);
	s = sshcfg_expand("%i", &t, false);
	char uid[32];
	snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
	assert_string_equal(s, uid);
	free(s);
	s = sshcfg_expand("end%", &t, false);
	assert_string_equal(s, "end%");
	free(s);
}

static void test_include(void **state)
{
	(void)state;
	char *d = xasprintf("%s/.ssh/conf.d", home);
	mkdir(d, 0700);
	char *f1 = xasprintf("%s/10-a", d), *f2 = xasprintf("%s/20-b", d);
	write_text(f1, "Host inc\n  User from-include\nHost *\n  Port 2301\n");
	write_text(f2, "Port 9999\nIdentityFile second\n");
	sshcfg_host h;
	/* relative Include is under ~/.ssh; globs expand sorted; a missing
	 * one is fine; an Include in a non-matching block is skipped */
	lookup("Host nomatch\n  Include /nonexistent/zzz\n  Include conf.d/*\n"
	       "Host inc\n  Include conf.d/* missing-file\n  User too-late\n",
	       "inc", &h);
	assert_string_equal(h.user, "from-include");
	assert_int_equal(h.port, 2301);
	assert_int_equal(h.n_identities, 1);
	sshcfg_host_release(&h);
	/* the Host state inside an included file does not leak out */
	write_text(f1, "Host zzz\n");
	write_text(f2, "");
	lookup("Include conf.d/*\nUser after-include\n", "inc", &h);
	assert_string_equal(h.user, "after-include");
	sshcfg_host_release(&h);
	/* a file including itself stops at the depth limit with an error */
	char *self = xasprintf("%s/self", d);
	char *txt = xasprintf("Include %s\n", self);
	write_text(self, txt);
	bg_err e = { 0 };
	assert_int_equal(sshcfg_lookup(self, "x", home, &h, &e), BG_ECONFIG);
	char *want = xasprintf("%s:1: Include nested more than 16 deep", self);
	assert_string_equal(e.msg, want);
	free(want);
	free(txt);
	free(self);
	free(f1);
	free(f2);
	free(d);
}

static void test_missing_and_errors(void **state)
{
	(void)state;
	sshcfg_host h;
	bg_err e = { 0 };
	char *p = xasprintf("%s/does-not-exist", tmpdir);
	assert_int_equal(sshcfg_lookup(p, "x", home, &h, &e), 0);
	assert_null(h.user);
	assert_int_equal(h.connect_timeout_s, -1);
	sshcfg_host_release(&h);
	free(p);
	/* a directory is not a config file */
	assert_int_equal(sshcfg_lookup(tmpdir, "x", home, &h, &e), BG_EIO);

	expect_error("Host x\n  Port 0\n", "x", "%s:2: Port must be an integer 1-65535, got '0'");
	expect_error("\n\nHost x\n  Port abc\n", "x", "%s:4: Port must be an integer 1-65535, got 'abc'");
	expect_error("Host x\n  User \"open\n", "x", "%s:2: unterminated quote");
	expect_error("Host\n", "x", "%s:1: Host needs at least one pattern");
	expect_error("Host x\n  HostName\n", "x", "%s:2: HostName needs a value");
	expect_error("Host x\n  IdentityFile ~/%q\n", "x", "%s:2: unknown escape '%%q' in IdentityFile");
	expect_error("Host x\n  HostName %u.example\n", "x",
		     "%s:2: HostName accepts only %%h and %%%%, got '%%u'");
	expect_error("Host x\n  ConnectTimeout soon\n", "x",
		     "%s:2: ConnectTimeout must be a time such as 10 or 1m, got 'soon'");
	/* errors in blocks that do not apply are not ours to report */
	lookup("Host other\n  Port abc\n", "x", &h);
	assert_int_equal(h.port, 0);
	sshcfg_host_release(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_patterns),      cmocka_unit_test(test_split_args),
		cmocka_unit_test(test_first_match_wins), cmocka_unit_test(test_syntax_forms),
		cmocka_unit_test(test_match_blocks),  cmocka_unit_test(test_proxy),
		cmocka_unit_test(test_expand),        cmocka_unit_test(test_include),
		cmocka_unit_test(test_missing_and_errors),
	};
	return cmocka_run_group_tests_name("sshconfig", tests, group_setup, group_teardown);
}
