/* conf/sshconfig: ssh_config read as ssh(1) reads it, for the keywords
 * boxgate honours. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xmalloc.h"
#include "conf/sshconfig.h"
#include "tests/unit/unit.h"

static char *cfg_file(const char *text)
{
	return unit_file("cfg", "", text);
}

static int group_setup(void **state)
{
	(void)state;
	return unit_tmpdir_make("sshcfg");
}

static int group_teardown(void **state)
{
	(void)state;
	unit_tmpdir_remove();
	return 0;
}

/* Looks `host` up in a config holding `text`; asserts success. */
static void lookup(const char *text, const char *host, sshcfg_host *h)
{
	char *p = cfg_file(text);
	bg_err e = {0};
	int rc = sshcfg_lookup(p, host, home, h, &e);
	if (rc)
		print_error("unexpected: %s\n", e.msg);
	assert_int_equal(rc, 0);
	free(p);
}

/* Looks `host` up in `text`; checks its User and HostName where given
 * (NULL: unchecked). */
static void expect_host(const char *text, const char *host, const char *user, const char *hostname)
{
	sshcfg_host h;
	lookup(text, host, &h);
	if (user)
		assert_string_equal(h.user, user);
	if (hostname)
		assert_string_equal(h.hostname, hostname);
	sshcfg_host_release(&h);
}

static void expect_error(const char *text, const char *host, const char *fmt)
{
	char *p = cfg_file(text);
	bg_err e = {0};
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
	assert_false(sshcfg_match_pattern("B200-A", "b200-a")); /* case-sensitive, as ssh */
	assert_false(sshcfg_match_pattern("", "x"));
	assert_true(sshcfg_match_pattern("a**b", "ab"));

	char *p1[] = {"*.lab", "!bad.lab"};
	assert_true(sshcfg_match_host(p1, 2, "n1.lab"));
	assert_false(sshcfg_match_host(p1, 2, "bad.lab"));
	assert_false(sshcfg_match_host(p1, 2, "other"));
	char *p2[] = {"!bad.lab"}; /* only negations: never matches */
	assert_false(sshcfg_match_host(p2, 1, "good"));
	char *p3[] = {"!*.lab", "*"};
	assert_true(sshcfg_match_host(p3, 2, "x.org"));
	assert_false(sshcfg_match_host(p3, 2, "x.lab"));
	char *p4[] = {"a", "b", "c"};
	assert_true(sshcfg_match_host(p4, 3, "b"));

	/* Match's comma lists */
	assert_int_equal(sshcfg_match_list("gpu1", "cpu*,gpu*", false), 1);
	assert_int_equal(sshcfg_match_list("gpu1", "*,!gpu1", false), -1);
	assert_int_equal(sshcfg_match_list("gpu1", "GPU*", false), 0);
	assert_int_equal(sshcfg_match_list("gpu1", "GPU*", true), 1);
	assert_int_equal(sshcfg_match_list("x", "", false), 0);
}

static void test_split_args(void **state)
{
	(void)state;
	char **v;
	size_t n;
	assert_true(
		sshcfg_split_args("  a  \"b c\" 'd e' f\\ g \"h\\\"i\" x\\q # comment", &v, &n));
	assert_int_equal(n, 6);
	assert_string_equal(v[0], "a");
	assert_string_equal(v[1], "b c");
	assert_string_equal(v[2], "d e");
	assert_string_equal(v[3], "f g");
	assert_string_equal(v[4], "h\"i");
	assert_string_equal(v[5], "x\\q"); /* an unknown escape keeps its backslash */
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	assert_true(sshcfg_split_args("a#b \"\"", &v, &n)); /* '#' inside a word is kept */
	assert_int_equal(n, 2);
	assert_string_equal(v[0], "a#b");
	assert_string_equal(v[1], "");
	free(v[0]);
	free(v[1]);
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
	       "    IdentityFile ~/.ssh/a_key\n"
	       "    ConnectTimeout 99\n"
	       "Host *\n"
	       "    User last\n"
	       "    Port 22\n"
	       "    UserKnownHostsFile ~/.ssh/kh1 ~/.ssh/kh2\n"
	       "    UserKnownHostsFile ~/.ssh/not-this\n",
	       "b200-a", &h);
	assert_string_equal(h.hostname, "10.0.0.5");
	assert_true(h.hostname_set);
	assert_string_equal(h.user, "ubuntu");
	assert_int_equal(h.port, 2200);
	assert_int_equal(h.n_identities, 2); /* accumulates, a duplicate is dropped */
	assert_string_equal(h.identities[0], "~/.ssh/a_key");
	assert_string_equal(h.identities[1], "~/.ssh/b_key");
	assert_int_equal(h.n_known_hosts, 2); /* every file of the first line */
	assert_string_equal(h.known_hosts[0], "~/.ssh/kh1");
	assert_string_equal(h.known_hosts[1], "~/.ssh/kh2");
	assert_int_equal(h.connect_timeout_s, 7);
	assert_false(h.global_known_hosts_set);
	assert_null(h.unsupported);
	sshcfg_host_release(&h);
	sshcfg_host_release(&h); /* twice is harmless */

	lookup("Host b200-a\n  User ubuntu\nHost *\n  User last\n", "Other", &h);
	assert_string_equal(h.user, "last");
	assert_string_equal(h.hostname, "other"); /* ssh lowercases the name */
	assert_false(h.hostname_set);
	assert_int_equal(h.port, 0);
	assert_int_equal(h.connect_timeout_s, -1);
	sshcfg_host_release(&h);
}

static void test_values(void **state)
{
	(void)state;
	sshcfg_host h;
	/* Host is case-sensitive; HostName's %h is the name as given, then
	 * lowercased */
	expect_host("Host GPU\n  User upper\nHost *\n  HostName %h.Lab\n", "GPU", "upper",
		    "gpu.lab");
	/* a '%' or ':' makes ssh take the name for an address: not lowercased */
	expect_host("HostName %h.Lab%%\n", "GPU", NULL, "GPU.Lab%");
	lookup("Host GPU\n  User upper\n", "gpu", &h);
	assert_null(h.user);
	sshcfg_host_release(&h);
	/* Port takes service names; ConnectTimeout none leaves it unset */
	lookup("Port ssh\nConnectTimeout none\nConnectTimeout 0\n", "x", &h);
	assert_int_equal(h.port, 22);
	assert_int_equal(h.connect_timeout_s, 0);
	sshcfg_host_release(&h);
	/* `none` known hosts files */
	lookup("UserKnownHostsFile none\nGlobalKnownHostsFile none\n", "x", &h);
	assert_int_equal(h.n_known_hosts, 1);
	assert_string_equal(h.known_hosts[0], "/dev/null");
	assert_true(h.global_known_hosts_set);
	assert_int_equal(h.n_global_known_hosts, 0);
	sshcfg_host_release(&h);
	lookup("GlobalKnownHostsFile /g1 ~/g2\n", "x", &h);
	assert_int_equal(h.n_global_known_hosts, 2);
	assert_string_equal(h.global_known_hosts[1], "~/g2");
	sshcfg_host_release(&h);
	/* addresses are normalised, not lowercased */
	expect_host("HostName 10.0.0.001\n", "x", NULL, "10.0.0.1");
	expect_host("HostName FE80::A\n", "x", NULL, "FE80::A");
	/* unknown keywords are errors unless IgnoreUnknown names them */
	expect_host("IgnoreUnknown Use*\nUseKeychainX yes\nUser u\n", "x", "u", NULL);
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
	       "  ServerAliveInterval whatever\n"
	       "  StrictHostKeyChecking no   \n",
	       "x", &h);
	assert_string_equal(h.hostname, "real");
	assert_string_equal(h.user, "u s");
	assert_int_equal(h.port, 2022);
	assert_string_equal(h.identities[0], "~/.ssh/with space");
	assert_int_equal(h.connect_timeout_s, 90);
	sshcfg_host_release(&h);
	/* several patterns, CRLF line ends */
	expect_host("Host one two three\r\n  User multi\r\n", "two", "multi", NULL);
	/* a negated match excludes the block, later blocks still apply */
	expect_host("Host *.lab !bad.lab\n  User lab\nHost *\n  User any\n", "bad.lab", "any",
		    NULL);
	expect_host("Host *.lab !bad.lab\n  User lab\nHost *\n  User any\n", "ok.LAB", "any",
		    NULL); /* case-sensitive */
}

static void test_match_blocks(void **state)
{
	(void)state;
	sshcfg_host h;
	struct passwd *pw = getpwuid(getuid());
	assert_non_null(pw);
	char *me = xstrdup(pw->pw_name);
	/* host sees HostName (expanded), originalhost the name as given */
	lookup("Host x\n  HostName Real.%h\n"
	       "Match host real.x originalhost X\n  User both\n"
	       "Match all\n  IdentityFile all_key\n"
	       "Match !all\n  IdentityFile never\n"
	       "Match user nobody-here\n  IdentityFile never2\n",
	       "x", &h);
	assert_string_equal(h.user, "both"); /* both sides lowercased */
	assert_string_equal(h.hostname, "real.x");
	assert_int_equal(h.n_identities, 1);
	assert_string_equal(h.identities[0], "all_key");
	sshcfg_host_release(&h);
	expect_host("Match originalhost X\n  User orig\n", "X", "orig", NULL);
	/* user sees User so far, localuser the password database name */
	char *txt =
		xasprintf("Match user %s\n  Port 2001\nUser alice\nMatch user alice\n  HostName a\n"
			  "Match localuser %s\n  ConnectTimeout 4\n",
			  me, me);
	lookup(txt, "x", &h);
	assert_int_equal(h.port, 2001);
	assert_string_equal(h.hostname, "a");
	assert_int_equal(h.connect_timeout_s, 4);
	sshcfg_host_release(&h);
	free(txt);
	/* final: a second pass, matching Host against the resolved name;
	 * canonical only matches then */
	lookup("Match canonical\n  User canon\n"
	       "Host s\n  HostName S.Lab\n"
	       "Match final host s.lab\n  Port 2002\n"
	       "Host s.lab\n  IdentityFile final_key\n",
	       "s", &h);
	assert_string_equal(h.user, "canon");
	assert_int_equal(h.port, 2002);
	assert_string_equal(h.hostname, "s.lab");
	assert_int_equal(h.n_identities, 1);
	sshcfg_host_release(&h);
	lookup("Match canonical\n  User canon\nHost s.lab\n  User never\nHost s\n  HostName "
	       "s.lab\n",
	       "s", &h);
	assert_null(h.user); /* no `final` anywhere: no second pass */
	sshcfg_host_release(&h);
	free(me);
}

/* Looks `host` up in config file `p` and asserts the box is refused with
 * "WHAT (FILE:LINE)", or (what NULL) not refused at all. */
static void expect_unsupported(const char *p, const char *host, const char *what, int line)
{
	sshcfg_host h;
	bg_err e = {0};
	assert_int_equal(sshcfg_lookup(p, host, home, &h, &e), 0);
	if (what) {
		char *want = xasprintf("%s (%s:%d)", what, p, line);
		assert_non_null(h.unsupported);
		assert_string_equal(h.unsupported, want);
		free(want);
	} else {
		assert_null(h.unsupported);
	}
	sshcfg_host_release(&h);
}

/* Host-key options that would make ssh accept or record differently refuse
 * the box by name; their harmless values and a later line change nothing. */
static void test_hostkey_option_refusals(void **state)
{
	(void)state;
	char *p = cfg_file(
		"Host r\n  RevokedHostKeys ~/.ssh/revoked\n"
		"Host k\n  KnownHostsCommand /bin/echo %H\n"
		"Host hash\n  HashKnownHosts yes\n"
		"Host ip\n  CheckHostIP yes\n"
		"Host dns\n  VerifyHostKeyDNS ask\n"
		"Host ok*\n  CheckHostIP no\n  HashKnownHosts false\n  RevokedHostKeys none\n"
		"Host *\n  CheckHostIP yes\n");
	expect_unsupported(p, "r", "RevokedHostKeys", 2);
	expect_unsupported(p, "k", "KnownHostsCommand", 4);
	expect_unsupported(p, "hash", "HashKnownHosts", 6);
	expect_unsupported(p, "ip", "CheckHostIP", 8);
	expect_unsupported(p, "dns", "VerifyHostKeyDNS", 10);
	/* first value wins: `CheckHostIP no` before `Host *`'s yes */
	expect_unsupported(p, "ok1", NULL, 0);
	free(p);
}

static void test_match_refusals(void **state)
{
	(void)state;
	char *p = cfg_file("Match host gpu* exec \"true\"\n  User from-exec\n"
			   "Match tagged x\n  User tagged\n");
	/* exec after a failed criterion decides nothing: only the unknown
	 * criterion is refused */
	expect_unsupported(p, "cpu", "Match tagged", 3);
	expect_unsupported(p, "gpu1", "Match exec", 1);
	free(p);
	p = cfg_file("Host a\n  CanonicalizeHostname yes\nHost b\n  HostKeyAlias k\n");
	expect_unsupported(p, "a", "CanonicalizeHostname", 2);
	expect_unsupported(p, "b", "HostKeyAlias", 4);
	free(p);
}

static void test_query(void **state)
{
	(void)state;
	/* the box's user and port act as ssh -l / -p: ssh_config's do not
	 * count, Match user sees the box's */
	char *p = cfg_file("Match user boxuser\n  HostName via-box-user\nUser cfg\nPort 1\n");
	sshcfg_query q = {"h", "boxuser", 2200, NULL, home};
	sshcfg_host h;
	bg_err e = {0};
	assert_int_equal(sshcfg_resolve(p, &q, &h, &e), 0);
	assert_string_equal(h.hostname, "via-box-user");
	assert_null(h.user);
	assert_int_equal(h.port, 0);
	sshcfg_host_release(&h);
	/* without one, Match user sees [defaults] user */
	sshcfg_query q2 = {"h", NULL, 0, "boxuser", home};
	assert_int_equal(sshcfg_resolve(p, &q2, &h, &e), 0);
	assert_string_equal(h.hostname, "via-box-user");
	assert_string_equal(h.user, "cfg");
	sshcfg_host_release(&h);
	free(p);
}

static void test_proxy(void **state)
{
	(void)state;
	sshcfg_host h;
	char *p = cfg_file("Host a\n  ProxyJump bastion\nHost b\n  ProxyCommand none\n"
			   "Host c\n  ProxyJump none\nHost *\n  ProxyCommand ssh -W %h:%p j\n");
	bg_err e = {0};
	/* ProxyJump is handed on as written, with its line */
	expect_unsupported(p, "a", NULL, 0);
	assert_int_equal(sshcfg_lookup(p, "a", home, &h, &e), 0);
	assert_non_null(h.jump);
	assert_string_equal(h.jump, "bastion");
	assert_non_null(strstr(h.jump_at, ":2"));
	sshcfg_host_release(&h);
	assert_int_equal(sshcfg_lookup(p, "c", home, &h, &e), 0);
	assert_null(h.jump); /* `none` is no jump */
	sshcfg_host_release(&h);
	/* `none` is fine and, being first, wins over the later one */
	expect_unsupported(p, "b", NULL, 0);
	/* ProxyJump none does not stop a later ProxyCommand (ssh 9.2) */
	expect_unsupported(p, "c", "ProxyCommand", 8);
	free(p);
	/* an ssh token boxgate does not implement is reported, not fatal */
	p = cfg_file("Host *\n  IdentityFile ~/.ssh/%C\n");
	expect_unsupported(p, "c", "%C in IdentityFile", 2);
	assert_int_equal(sshcfg_lookup(p, "c", home, &h, &e), 0);
	assert_int_equal(h.n_identities, 0);
	sshcfg_host_release(&h);
	free(p);
}

static char *expand_ok(const char *s, const sshcfg_tokens *t, int flags)
{
	char *out = NULL;
	bg_err e = {0};
	int rc = sshcfg_expand(s, t, flags, &out, &e);
	if (rc)
		print_error("unexpected: %s\n", e.msg);
	assert_int_equal(rc, 0);
	return out;
}

static void expand_fails(const char *s, const sshcfg_tokens *t, const char *want)
{
	char *out = NULL;
	bg_err e = {0};
	assert_int_equal(sshcfg_expand(s, t, SSHCFG_X_TILDE | SSHCFG_X_DOLLAR, &out, &e),
			 BG_ECONFIG);
	assert_null(out);
	assert_string_equal(e.msg, want);
}

static void test_expand(void **state)
{
	(void)state;
	const int all = SSHCFG_X_TILDE | SSHCFG_X_DOLLAR;
	sshcfg_tokens t = {"real.host", "alias", "me", "them", "/home/me", 2222, env_lookup, NULL};
	char *s = expand_ok("~/.ssh/%h_%n_%k_%u_%r_%p_%d_%%", &t, all);
	assert_string_equal(s, "/home/me/.ssh/real.host_alias_alias_me_them_2222_/home/me_%");
	free(s);
	s = expand_ok("~/x", &t, 0);
	assert_string_equal(s, "~/x");
	free(s);
	s = expand_ok("~", &t, all); /* ssh's tilde_expand() adds the slash */
	assert_string_equal(s, "/home/me/");
	free(s);
	s = expand_ok("~//x", &t, all);
	assert_string_equal(s, "/home/me/x");
	free(s);
	struct passwd *pw = getpwnam("root");
	if (pw) {
		char *want = xasprintf("%s%sx", pw->pw_dir, strcmp(pw->pw_dir, "/") ? "/" : "");
		s = expand_ok("~root/x", &t, all);
		assert_string_equal(s, want);
		free(s);
		free(want);
	}
	s = expand_ok("%i", &t, 0);
	char uid[32];
	snprintf(uid, sizeof(uid), "%llu", (unsigned long long)getuid());
	assert_string_equal(s, uid);
	free(s);
	setenv("BG_TEST_SSHCFG", "val", 1);
	s = expand_ok("${BG_TEST_SSHCFG}/a", &t, all);
	assert_string_equal(s, "val/a");
	free(s);
	s = expand_ok("${BG_TEST_SSHCFG}/a", &t, SSHCFG_X_TILDE);
	assert_string_equal(s, "${BG_TEST_SSHCFG}/a");
	free(s);
	expand_fails("${BG_TEST_SSHCFG_UNSET}", &t, "${BG_TEST_SSHCFG_UNSET} is not set");
	expand_fails("${open", &t, "'${open': no closing '}'");
	expand_fails("${}", &t, "'${}': an empty variable name");
	expand_fails("end%", &t, "a '%' ends the value");
	expand_fails("%q", &t, "unknown token '%q'");
	expand_fails("~no-such-user-bg/x", &t,
		     "'~no-such-user-bg/x': no such user 'no-such-user-bg'");
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
	 * one is fine; an Include in a non-matching block is parsed only */
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
	expect_host("Include conf.d/*\nUser after-include\n", "inc", "after-include", NULL);
	/* an error in an included file counts even in a block that does not
	 * apply, as in ssh */
	write_text(f2, "Bogus x\n");
	bg_err e = {0};
	char *p = cfg_file("Host nomatch\n  Include conf.d/*\n");
	assert_int_equal(sshcfg_lookup(p, "x", home, &h, &e), BG_ECONFIG);
	char *want = xasprintf("%s:1: Bad configuration option: bogus", f2);
	assert_string_equal(e.msg, want);
	free(want);
	free(p);
	/* a group-writable included file is refused, as ssh refuses it */
	write_text(f2, "");
	chmod(f2, 0666);
	p = cfg_file("Include conf.d/*\n");
	assert_int_equal(sshcfg_lookup(p, "x", home, &h, &e), BG_ECONFIG);
	want = xasprintf("%s: Bad owner or permissions", f2);
	assert_string_equal(e.msg, want);
	free(want);
	free(p);
	chmod(f2, 0644);
	/* a file including itself stops at the depth limit with an error */
	char *self = xasprintf("%s/self", d);
	char *txt = xasprintf("Include %s\n", self);
	write_text(self, txt);
	assert_int_equal(sshcfg_lookup(self, "x", home, &h, &e), BG_ECONFIG);
	want = xasprintf("%s:1: Include nested more than 16 deep", self);
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
	bg_err e = {0};
	char *p = xasprintf("%s/does-not-exist", tmpdir);
	assert_int_equal(sshcfg_lookup(p, "x", home, &h, &e), 0);
	assert_null(h.user);
	assert_string_equal(h.hostname, "x");
	assert_int_equal(h.connect_timeout_s, -1);
	sshcfg_host_release(&h);
	free(p);
	/* a directory is not a config file */
	assert_int_equal(sshcfg_lookup(tmpdir, "x", home, &h, &e), BG_EIO);

	expect_error("Host x\n  Port 0\n", "x", "%s:2: Bad port '0'");
	expect_error("\n\nHost x\n  Port abc\n", "x", "%s:4: Bad port 'abc'");
	expect_error("Host x\n  User \"open\n", "x", "%s:2: invalid quotes");
	expect_error("Host\n", "x", "%s:1: no argument after keyword \"host\"");
	expect_error("Host x\n  HostName\n", "x", "%s:2: no argument after keyword \"hostname\"");
	expect_error("Host x\n  HostName \"\"\n", "x", "%s:2: HostName: missing argument");
	expect_error("Host x\n  User a b\n", "x", "%s:2: User: extra arguments at end of line");
	expect_error("Host x\n  IdentityFile ~/%q\n", "x",
		     "%s:2: IdentityFile: unknown token '%%q'");
	expect_error("Host x\n  HostName %u.example\n", "x",
		     "%s:2: HostName accepts only %%h and %%%%, got '%%u'");
	expect_error("Host x\n  ConnectTimeout soon\n", "x",
		     "%s:2: ConnectTimeout: invalid time value 'soon'");
	expect_error("Hostnmae x\n", "x", "%s:1: Bad configuration option: hostnmae");
	expect_error("UserKnownHostsFile none /x\n", "x",
		     "%s:1: UserKnownHostsFile: \"none\" must appear alone");
	expect_error("Match all host x\n", "x",
		     "%s:1: Match 'all' cannot be combined with other criteria");
	expect_error("Match host\n", "x", "%s:1: Match host needs an argument");
	expect_error("Match final\nCanonicalizeHostname maybe\n", "x",
		     "%s:2: CanonicalizeHostname: unsupported option \"maybe\"");
	/* values are checked in blocks that do not apply too, as ssh does */
	expect_error("Host other\n  Port abc\n", "x", "%s:2: Bad port 'abc'");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_patterns),
		cmocka_unit_test(test_split_args),
		cmocka_unit_test(test_first_match_wins),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_syntax_forms),
		cmocka_unit_test(test_match_blocks),
		cmocka_unit_test(test_match_refusals),
		cmocka_unit_test(test_query),
		cmocka_unit_test(test_hostkey_option_refusals),
		cmocka_unit_test(test_proxy),
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_include),
		cmocka_unit_test(test_missing_and_errors),
	};
	return cmocka_run_group_tests_name("sshconfig", tests, group_setup, group_teardown);
}
