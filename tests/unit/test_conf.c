/* conf/: INI parsing, validation (every error names file:line), defaults,
 * env rules, pools, verifiers, the built-in local box, selection, dump. */
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
#include "base/parse.h"
#include "conf/conf.h"
#include "tests/unit/unit.h"

/* What cli/ hands conf_load: the process environment, read now. */
#define ENV                                                                                        \
	(&(conf_env){getenv("HOME"), getenv("USER"), getenv("BOXGATE_CONFIG"),                     \
		     getenv("XDG_CONFIG_HOME"), getenv("SSH_AUTH_SOCK"), env_lookup, NULL})

static char startdir[4096];

/* Writes `ini` to a fresh file; returns its path (owned). */
static char *ini_file(const char *ini)
{
	return unit_file("c", ".ini", ini);
}

static char *path_in(const char *rel)
{
	return xasprintf("%s/%s", tmpdir, rel);
}

/* Makes REL in the scratch directory and works there; returns its path (owned). */
static char *enter_new_dir(const char *rel)
{
	char *d = path_in(rel);
	mkdir(d, 0700);
	assert_int_equal(chdir(d), 0);
	return d;
}

static int group_setup(void **state)
{
	(void)state;
	if (unit_tmpdir_make("conf") < 0)
		return -1;
	setenv("HOME", home, 1);
	setenv("USER", "tester", 1);
	unsetenv("BOXGATE_CONFIG");
	unsetenv("XDG_CONFIG_HOME");
	if (!getcwd(startdir, sizeof(startdir)))
		return -1;
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (chdir(startdir) != 0)
		return -1;
	unit_tmpdir_remove();
	return 0;
}

/* Loads `ini`; each %s of the expected message (once or twice) stands for
 * the file. */
static void expect_error(const char *ini, const char *fmt)
{
	char *p = ini_file(ini);
	conf c;
	bg_err e = {0};
	int rc = conf_load_file(&c, p, ENV, &e);
	char want[1024];
	snprintf(want, sizeof(want), fmt, p, p);
	if (rc == 0 || strcmp(e.msg, want) != 0)
		print_error("ini:\n%s\nwant: %s\ngot:  rc=%d %s\n", ini, want, rc, e.msg);
	assert_int_equal(rc, BG_ECONFIG);
	assert_string_equal(e.msg, want);
	/* A failed load leaves nothing to free and an empty conf. */
	assert_null(c.boxes);
	assert_int_equal(c.n_boxes, 0);
	conf_release(&c);
	free(p);
}

static void load_ok(conf *c, const char *ini, char **path_out)
{
	char *p = ini_file(ini);
	bg_err e = {0};
	int rc = conf_load_file(c, p, ENV, &e);
	if (rc)
		print_error("unexpected error: %s\n", e.msg);
	assert_int_equal(rc, 0);
	if (path_out)
		*path_out = p;
	else
		free(p);
}

static const char design_ini[] =
	"[defaults]\n"
	"known_hosts = ~/.ssh/known_hosts\n"
	"host_key_check = strict          ; strict | accept-new\n"
	"connect_timeout_s = 10\n"
	"keepalive_s = 5\n"
	"gate_timeout_s = 420\n"
	"\n"
	"[box b200-a]\n"
	"host = b200-a                    ; resolved through ~/.ssh/config as ssh(1) would\n"
	"repo = /home/ubuntu/mirage       ; the box's own repo copy\n"
	"gate = scripts/faithful_eval.sh  ; remote entry point, relative to repo\n"
	"gpus = 0-7\n"
	"allow = --kind --shape --num-workers --configs --candidate-role --kernel --baseline\n"
	"env --decode-m1 = MPK_GG_DECODE_M1=1\n"
	"\n"
	"[box local]\n"
	"transport = local\n"
	"repo = ~/mirage\n"
	"gpus = 0-4\n"
	"\n"
	"[pool default]\n"
	"slots = local:0-4, b200-a:0-7\n"
	"\n"
	"[verify]\n"
	".py = {python} -c \"import ast,sys; ast.parse(open(sys.argv[1],'rb').read(), "
	"sys.argv[1])\" {}\n"
	".sh = bash -n {}\n";

static void test_design_example(void **state)
{
	(void)state;
	conf c;
	char *p;
	load_ok(&c, design_ini, &p);
	assert_string_equal(c.path, p);
	assert_string_equal(c.root, tmpdir);
	assert_int_equal(c.n_boxes, 2); /* [box local] replaces the built-in one */
	const conf_box *b = conf_find_box(&c, "b200-a");
	assert_non_null(b);
	assert_int_equal(b->transport, CONF_TRANSPORT_SSH);
	assert_string_equal(b->host, "b200-a");
	assert_string_equal(b->hostname, "b200-a");
	assert_string_equal(b->user, "tester");
	assert_int_equal(b->port, 22);
	char *kh = xasprintf("%s/.ssh/known_hosts", home);
	assert_string_equal(b->known_hosts[0], kh);
	free(kh);
	assert_int_equal(b->host_key_check, CONF_HKC_STRICT);
	assert_int_equal(b->connect_timeout_s, 10);
	assert_int_equal(b->keepalive_s, 5);
	assert_int_equal(b->gate_timeout_s, 420);
	assert_int_equal(b->heartbeat_timeout_ms, 15000);
	assert_int_equal(b->kill_grace_ms, 5000);
	assert_true(b->control_persist_ms == 300000);
	assert_true(b->target.control_persist_ms == 300000);
	assert_int_equal(b->lock_wait_s, 0);
	assert_string_equal(b->repo, "/home/ubuntu/mirage");
	assert_string_equal(b->gate, "scripts/faithful_eval.sh");
	assert_string_equal(b->python, "python3");
	assert_string_equal(b->gpus, "0-7");
	assert_int_equal(b->gpu_policy, CONF_GPU_REQUIRED);
	assert_int_equal(b->n_allow, 7);
	assert_string_equal(b->allow[0], "--kind");
	assert_string_equal(b->allow[6], "--baseline");
	assert_int_equal(b->n_env, 1);
	assert_string_equal(b->env[0].flag, "--decode-m1");
	assert_string_equal(b->env[0].name, "MPK_GG_DECODE_M1");
	assert_string_equal(b->env[0].value, "1");
	assert_string_equal(b->env[0].file, p);
	assert_int_equal(b->env[0].line, 14);
	assert_string_equal(b->file, p);
	assert_int_equal(b->line, 8);
	assert_false(b->builtin);
	assert_null(b->unsupported);
	assert_int_equal(b->n_identities, 0); /* no key files in this HOME */

	const conf_box *l = conf_find_box(&c, "local");
	assert_non_null(l);
	assert_int_equal(l->transport, CONF_TRANSPORT_LOCAL);
	char *mirage = xasprintf("%s/mirage", home);
	assert_string_equal(l->repo, mirage);
	free(mirage);
	assert_string_equal(l->gpus, "0-4");
	assert_int_equal(l->gpu_policy, CONF_GPU_OPTIONAL);
	assert_false(l->builtin);
	assert_int_equal(l->line, 16);
	assert_null(l->gate);

	const conf_pool *pool = conf_find_pool(&c, "default");
	assert_non_null(pool);
	assert_int_equal(pool->n_slots, 2);
	assert_string_equal(pool->slots[0].box, "local");
	assert_string_equal(pool->slots[0].gpus, "0-4");
	assert_string_equal(pool->slots[1].box, "b200-a");
	assert_string_equal(pool->slots[1].gpus, "0-7");
	assert_int_equal(pool->line, 21);
	assert_null(conf_find_pool(&c, "nope"));
	assert_null(conf_find_box(&c, "nope"));

	assert_int_equal(c.n_verify, 5); /* two of the file, three built-in */
	assert_string_equal(c.verify[0].pattern, ".py");
	assert_int_equal(c.verify[0].line, 25);
	assert_string_equal(c.verify[4].pattern, ".json");
	assert_string_equal(c.verify[4].file, "(built-in)");
	conf_release(&c);
	conf_release(&c); /* releasing twice is harmless */
	free(p);
}

static void test_builtin_local_only(void **state)
{
	(void)state;
	char *d = enter_new_dir("empty-cwd");
	conf c;
	bg_err e = {0};
	assert_int_equal(conf_load(&c, NULL, ENV, &e), 0);
	assert_null(c.path);
	assert_string_equal(c.root, d);
	assert_int_equal(c.n_boxes, 1);
	const conf_box *l = &c.boxes[0];
	assert_string_equal(l->name, "local");
	assert_int_equal(l->transport, CONF_TRANSPORT_LOCAL);
	assert_true(l->builtin);
	assert_string_equal(l->file, "(built-in)");
	assert_string_equal(l->repo, d);
	assert_null(l->gate);
	assert_null(l->gpus);
	assert_null(l->host);
	assert_int_equal(l->gpu_policy, CONF_GPU_OPTIONAL);
	assert_string_equal(l->python, "python3");
	assert_int_equal(l->gate_timeout_s, 420);
	assert_int_equal(c.n_pools, 0);
	assert_int_equal(c.n_verify, 3);
	char *sc = xasprintf("%s/.ssh/config", home);
	assert_string_equal(c.ssh_config, sc);
	free(sc);
	assert_string_equal(conf_verify_for(&c, "a/b.py"), c.verify[0].command);
	conf_release(&c);
	assert_int_equal(chdir(startdir), 0);
	free(d);
}

static void test_search_order(void **state)
{
	(void)state;
	char *d = enter_new_dir("search");
	char *xdg = path_in("xdg");
	char *xdgb = path_in("xdg/boxgate");
	mkdir(xdg, 0700);
	mkdir(xdgb, 0700);
	char *hc = xasprintf("%s/.config", home);
	char *hcb = xasprintf("%s/.config/boxgate", home);
	mkdir(hc, 0700);
	mkdir(hcb, 0700);
	char *f_home = xasprintf("%s/config.ini", hcb);
	char *f_xdg = xasprintf("%s/config.ini", xdgb);
	char *f_cwd = xasprintf("%s/boxgate.ini", d);
	char *f_env = path_in("env.ini");
	char *f_exp = path_in("explicit.ini");
	write_text(f_home, "[box from-home]\nhost = h\n");
	write_text(f_xdg, "[box from-xdg]\nhost = h\n");
	write_text(f_cwd, "[box from-cwd]\nhost = h\n");
	write_text(f_env, "[box from-env]\nhost = h\n");
	write_text(f_exp, "[box from-explicit]\nhost = h\n");
	setenv("XDG_CONFIG_HOME", xdg, 1);
	setenv("BOXGATE_CONFIG", f_env, 1);
	conf c;
	bg_err e = {0};
	struct {
		const char *path;
		const char *box;
	} steps[] = {{f_exp, "from-explicit"},
		     {NULL, "from-env"},
		     {NULL, "from-cwd"},
		     {NULL, "from-xdg"},
		     {NULL, "from-home"}};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		if (i == 2)
			unsetenv("BOXGATE_CONFIG");
		if (i == 3)
			unlink(f_cwd);
		if (i == 4)
			unlink(f_xdg);
		assert_int_equal(conf_load(&c, steps[i].path, ENV, &e), 0);
		assert_non_null(conf_find_box(&c, steps[i].box));
		assert_int_equal(c.n_boxes, 2);
		conf_release(&c);
	}
	/* The root is the directory holding the file. */
	assert_int_equal(conf_load(&c, NULL, ENV, &e), 0);
	assert_string_equal(c.root, hcb);
	conf_release(&c);
	/* $XDG_CONFIG_HOME set but empty there: ~/.config still counts. */
	unlink(f_home);
	assert_int_equal(conf_load(&c, NULL, ENV, &e), 0);
	assert_null(c.path);
	assert_string_equal(c.root, d);
	conf_release(&c);
	/* A $BOXGATE_CONFIG that does not exist is an error, not a fallback. */
	char *missing = path_in("missing.ini");
	setenv("BOXGATE_CONFIG", missing, 1);
	assert_int_equal(conf_load(&c, NULL, ENV, &e), BG_ECONFIG);
	assert_non_null(strstr(e.msg, missing));
	unsetenv("BOXGATE_CONFIG");
	/* So is a missing --config file. */
	assert_int_not_equal(conf_load(&c, missing, ENV, &e), 0);
	assert_non_null(strstr(e.msg, missing));
	unsetenv("XDG_CONFIG_HOME");
	assert_int_equal(chdir(startdir), 0);
	free(missing);
	free(d);
	free(xdg);
	free(xdgb);
	free(hc);
	free(hcb);
	free(f_home);
	free(f_xdg);
	free(f_cwd);
	free(f_env);
	free(f_exp);
}

static void test_errors_keys(void **state)
{
	(void)state;
	expect_error("[box a]\nhost = x\nhots = y\n",
		     "%s:3: unknown key 'hots' in [box a] (did you mean 'host'?)");
	expect_error("[box a]\nhost = x\nconect_timeout_s = 3\n",
		     "%s:3: unknown key 'conect_timeout_s' in [box a] (did you mean "
		     "'connect_timeout_s'?)");
	expect_error(
		"[box a]\nhost = x\nheartbeat = 3\n",
		"%s:3: unknown key 'heartbeat' in [box a] (did you mean 'heartbeat_timeout_s'?)");
	expect_error("[box a]\nhost = x\nzzzzzz = 3\n", "%s:3: unknown key 'zzzzzz' in [box a]");
	expect_error("[defaults]\nHost = x\n",
		     "%s:2: unknown key 'Host' in [defaults] (did you mean 'host'?)");
	expect_error("[box a]\nhost = x\nenvv --x = A=1\n",
		     "%s:3: unknown key 'envv --x' in [box a]");
	expect_error("[defaults]\ntransport = local\n",
		     "%s:2: 'transport' belongs in a [box NAME] section, not in [defaults]");
	expect_error("[box a]\nhost = x\nssh_config = ~/.ssh/cfg\n",
		     "%s:3: 'ssh_config' belongs in [defaults], not in [box a]");
	expect_error("host = x\n[box a]\n",
		     "%s:1: 'host' comes before any section (start with [defaults] or [box NAME])");
}

static void test_errors_duplicates(void **state)
{
	(void)state;
	expect_error("[box a]\nhost = x\nport = 22\nport = 23\n",
		     "%s:4: port given twice in [box a], first at %s:3");
	expect_error("[box a]\nhost = x\n\n[box b]\nhost = y\n[box a]\nhost = z\n",
		     "%s:6: box 'a' defined twice, first at %s:1");
	expect_error("[pool p]\nslots = local\n[pool p]\nslots = local\n",
		     "%s:3: pool 'p' defined twice, first at %s:1");
	expect_error("[box a]\nhost = x\nenv --f = A=1\nenv --f = B=2\n",
		     "%s:4: env --f given twice in [box a], first at %s:3");
	expect_error("[verify]\n.py = a {}\n.py = b {}\n",
		     "%s:3: [verify] .py given twice, first at %s:2");
	expect_error("[pool p]\nslots = local\nslots = local\n",
		     "%s:3: slots given twice in [pool p], first at %s:2");
	/* Two [defaults] sections merge, but a key still may not repeat. */
	expect_error("[defaults]\nport = 1\n[box a]\nhost = x\n[defaults]\nport = 2\n",
		     "%s:6: port given twice in [defaults], first at %s:2");
}

static void test_errors_values(void **state)
{
	(void)state;
	expect_error("[box a]\nhost = x\nport = x\n",
		     "%s:3: port must be an integer 1-65535, got 'x'");
	expect_error("[box a]\nhost = x\nport = 0\n",
		     "%s:3: port must be an integer 1-65535, got '0'");
	expect_error("[box a]\nhost = x\nport = 65536\n",
		     "%s:3: port must be an integer 1-65535, got '65536'");
	expect_error("[box a]\nhost = x\nport = -1\n",
		     "%s:3: port must be an integer 1-65535, got '-1'");
	expect_error("[box a]\nhost = x\nport = 99999999999999999999\n",
		     "%s:3: port must be an integer 1-65535, got '99999999999999999999'");
	expect_error("[defaults]\nconnect_timeout_s = 0\n",
		     "%s:2: connect_timeout_s must be an integer 1-3600, got '0'");
	expect_error("[defaults]\nkeepalive_s = 1.5\n",
		     "%s:2: keepalive_s must be an integer 0-3600, got '1.5'");
	expect_error("[defaults]\ngate_timeout_s = \n", "%s:2: gate_timeout_s needs a value");
	/* written back as `repo = ;x` it would read as a comment */
	expect_error("[box a]\nhost = a\nrepo =;x\n",
		     "%s:3: repo: a value must not start with ';' (it reads as a comment)");
	expect_error("[defaults]\nhost_key_check = yes\n",
		     "%s:2: host_key_check must be strict or accept-new, got 'yes'");
	expect_error("[box a]\ntransport = telnet\n",
		     "%s:2: transport must be ssh or local, got 'telnet'");
	expect_error("[box a]\nhost = x\nrequire_gpu = maybe\n",
		     "%s:3: require_gpu must be yes or no, got 'maybe'");
	expect_error("[box a]\nhost = x\nno_baseline = yess\n",
		     "%s:3: no_baseline must be yes or no, got 'yess'");
	expect_error("[defaults]\nno_baseline =\n[box a]\nhost = x\n",
		     "%s:2: no_baseline needs a value");
	expect_error("[box a]\nhost = x\ngpus = 0-\n",
		     "%s:3: gpus must be indices and ranges such as 0-7 or 0,2,5 (at most 1023), "
		     "got '0-': expected a GPU index after '-'");
	expect_error("[box a]\nhost = x\ngpus = 3-1\n",
		     "%s:3: gpus must be indices and ranges such as 0-7 or 0,2,5 (at most 1023), "
		     "got '3-1': range goes backwards");
	expect_error("[box a]\nhost = x\ngpus = all\n",
		     "%s:3: gpus must be indices and ranges such as 0-7 or 0,2,5 (at most 1023), "
		     "got 'all': expected a GPU index");
	expect_error("[box a]\nhost = x\ngpus = 0 2\n",
		     "%s:3: gpus must be indices and ranges such as 0-7 or 0,2,5 (at most 1023), "
		     "got '0 2': expected ',' between GPU indices");
	expect_error("[box a]\nhost = x\nallow = --kind shape\n",
		     "%s:3: allow: 'shape' is not a flag (flags start with '-')");
	expect_error("[box a]\nhost = x\nnum_workers_env = 1BAD\n",
		     "%s:3: num_workers_env must be an environment variable name "
		     "([A-Za-z_][A-Za-z0-9_]*), got '1BAD'");
	expect_error("[box a]\nhost = two words\n", "%s:2: host must be one word, got 'two words'");
	expect_error("[box a]\nhost = ubuntu@b\n",
		     "%s:2: host must not contain '@', got 'ubuntu@b' (set user = ... instead)");
	expect_error("[box a]\nhost = -oProxyCommand=x\n",
		     "%s:2: host must not start with '-', got '-oProxyCommand=x'");
}

/* Seconds with a fraction: what the parser takes and what it refuses. */
static void test_seconds_ms(void **state)
{
	(void)state;
	struct {
		const char *s;
		long long ms; /* -1: refused */
	} cases[] = {
		{"0", 0},
		{"2", 2000},
		{"0.5", 500},
		{"1.25", 1250},
		{"0.001", 1},
		{"86400", 86400000},
		{"007.5", 7500},
		{"1.", -1},
		{".5", -1},
		{"1e3", -1},
		{"-1", -1},
		{"+1", -1},
		{"nan", -1},
		{"inf", -1},
		{"0x10", -1},
		{"1.0001", -1},
		{" 1", -1},
		{"1 ", -1},
		{"1s", -1},
		{"", -1},
		{"1..5", -1},
		{"1.5.2", -1},
		{"99999999999999999999", -1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		long long ms = -7;
		bool ok = bg_parse_seconds_ms(cases[i].s, 0, 86400000, &ms);
		if (ok != (cases[i].ms >= 0) || (ok && ms != cases[i].ms))
			print_error("'%s': ok=%d ms=%lld, want %lld\n", cases[i].s, ok, ms,
				    cases[i].ms);
		assert_int_equal(ok, cases[i].ms >= 0);
		assert_int_equal(ms, ok ? cases[i].ms : -7);
	}
	long long ms = 0;
	assert_false(bg_parse_seconds_ms("0.05", 100, 1000, &ms));
	assert_false(bg_parse_seconds_ms("1.001", 0, 1000, &ms));
	assert_true(bg_parse_seconds_ms("0.1", 100, 1000, &ms));
	assert_int_equal(ms, 100);
	assert_false(bg_parse_seconds_ms(NULL, 0, 1000, &ms));
}

static void test_fractional_seconds(void **state)
{
	(void)state;
	conf c;
	load_ok(&c,
		"[defaults]\nheartbeat_timeout_s = 0.5\nkill_grace_s = 0.25\n"
		"[box a]\nhost = a\nrepo = /r\n[box b]\nhost = b\nrepo = /r\n"
		"heartbeat_timeout_s = 1.125\nkill_grace_s = 0\n",
		NULL);
	const conf_box *a = conf_find_box(&c, "a"), *b = conf_find_box(&c, "b");
	assert_int_equal(a->heartbeat_timeout_ms, 500);
	assert_int_equal(a->kill_grace_ms, 250);
	assert_int_equal(b->heartbeat_timeout_ms, 1125);
	assert_int_equal(b->kill_grace_ms, 0);
	conf_release(&c);
	const char *bad[] = {"1.", ".5", "1e3", "-1", "nan", "inf", "0.0005", "1.5x", "0.05"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char ini[128], fmt[256];
		snprintf(ini, sizeof(ini), "[defaults]\nheartbeat_timeout_s = %s\n", bad[i]);
		snprintf(fmt, sizeof(fmt),
			 "%%s:2: heartbeat_timeout_s must be seconds from 0.1 to 86400, with at "
			 "most 3 decimals (2, 0.5), got '%s'",
			 bad[i]);
		expect_error(ini, fmt);
	}
	load_ok(&c,
		"[defaults]\ncontrol_persist_s = 0.25\n"
		"[box a]\nhost = a\nrepo = /r\n[box b]\nhost = b\nrepo = /r\n"
		"control_persist_s = 0\n",
		NULL);
	a = conf_find_box(&c, "a");
	b = conf_find_box(&c, "b");
	assert_true(a->control_persist_ms == 250 && a->target.control_persist_ms == 250);
	assert_true(b->control_persist_ms == 0 && b->target.control_persist_ms == 0);
	conf_release(&c);
	expect_error("[box a]\nhost = a\ncontrol_persist_s = 604801\n",
		     "%s:3: control_persist_s must be seconds from 0 to 604800, with at most 3 "
		     "decimals (2, 0.5), got '604801'");
	expect_error("[defaults]\ncontrol_persist_s = -1\n",
		     "%s:2: control_persist_s must be seconds from 0 to 604800, with at most 3 "
		     "decimals (2, 0.5), got '-1'");
	expect_error("[box a]\nhost = a\nkill_grace_s = 3601\n",
		     "%s:3: kill_grace_s must be seconds from 0 to 3600, with at most 3 decimals "
		     "(2, 0.5), got '3601'");
}

static void test_errors_env(void **state)
{
	(void)state;
	expect_error("[box a]\nhost = x\nenv --f = 1BAD=1\n",
		     "%s:3: env --f: expected NAME=VALUE with NAME of [A-Za-z_][A-Za-z0-9_]*, got "
		     "'1BAD=1'");
	expect_error("[box a]\nhost = x\nenv --f = NOEQUALS\n",
		     "%s:3: env --f: expected NAME=VALUE with NAME of [A-Za-z_][A-Za-z0-9_]*, got "
		     "'NOEQUALS'");
	expect_error("[box a]\nhost = x\nenv --f = A-B=1\n",
		     "%s:3: env --f: expected NAME=VALUE with NAME of [A-Za-z_][A-Za-z0-9_]*, got "
		     "'A-B=1'");
	expect_error("[box a]\nhost = x\nenv = A=1\n",
		     "%s:3: env needs a flag: env --flag = NAME=VALUE");
	expect_error("[box a]\nhost = x\nenv decode = A=1\n",
		     "%s:3: env: 'decode' is not a flag (env --flag = NAME=VALUE)");
	expect_error("[box a]\nhost = x\nenv --a --b = A=1\n",
		     "%s:3: env: '--a --b' is not a flag (env --flag = NAME=VALUE)");
}

static void test_errors_sections(void **state)
{
	(void)state;
	expect_error("[box a]\nhost = x\n[boxx b]\nhost = y\n",
		     "%s:3: unknown section [boxx b] (did you mean [box b]?)");
	expect_error("[default]\nport = 1\n",
		     "%s:1: unknown section [default] (did you mean [defaults]?)");
	expect_error("[pools]\n", "%s:1: unknown section [pools] (did you mean [pool NAME]?)");
	expect_error("[weird]\n", "%s:1: unknown section [weird] (expected [defaults], [box NAME], "
				  "[pool NAME], [verify] or [campaign NAME])");
	expect_error("[campaign]\npool = p\n", "%s:1: [campaign] needs a name: [campaign NAME]");
	expect_error("[box]\nhost = x\n", "%s:1: [box] needs a name: [box NAME]");
	expect_error("[box a b]\nhost = x\n",
		     "%s:1: bad box name 'a b' (letters, digits, '.', '_' and '-' only)");
	expect_error("[box a/b]\nhost = x\n",
		     "%s:1: bad box name 'a/b' (letters, digits, '.', '_' and '-' only)");
	expect_error("[box b[1-2]]\nhost = x\n",
		     "%s:1: bad box name 'b[1-2' (letters, digits, '.', '_' and '-' only)");
	expect_error("[defaults x]\n", "%s:1: [defaults] takes no name, got [defaults x]");
	/* An ssh box without host fails at its section line, even with no keys. */
	expect_error("[defaults]\nport = 2\n\n[box a]\n",
		     "%s:4: box 'a' has no host (an ssh box needs host = ...)");
	expect_error("[box a]\nuser = u\n[box b]\nhost = y\n",
		     "%s:1: box 'a' has no host (an ssh box needs host = ...)");
	expect_error("[box a]\ntransport = local\nhost = x\n",
		     "%s:3: box 'a' is local (transport = local) and takes no host");
	expect_error("[box local]\nhost = x\n",
		     "%s:2: box 'local' is local (transport = local) and takes no host");
}

static void test_errors_syntax(void **state)
{
	(void)state;
	expect_error("[box a]\nhost = x\njust some words\n",
		     "%s:3: expected 'key = value', got 'just some words'");
	expect_error("[box a\nhost = x\n", "%s:1: section header '[box a' lacks its closing ']'");
	expect_error("[box a]\nhost = x\n\n\n[box b ; ]\n",
		     "%s:5: section header '[box b ; ]' lacks its closing ']'");
	expect_error("[box a]\n= x\n", "%s:2: a key is missing before '='");
	expect_error("[box a]\nhost = x\nport\n", "%s:3: expected 'key = value', got 'port'");
	/* Line numbers stay right across comments, blank lines and CRLF. */
	expect_error("; comment\r\n# another\r\n\r\n[box a]\r\nhost = x\r\nprot = 22\r\n",
		     "%s:6: unknown key 'prot' in [box a] (did you mean 'port'?)");
	/* A BOM on the first line is skipped. */
	expect_error("\xEF\xBB\xBF[box a]\nhots = x\n",
		     "%s:2: unknown key 'hots' in [box a] (did you mean 'host'?)");
	/* A NUL byte is refused, naming its line. */
	char *p = ini_file("");
	FILE *f = fopen(p, "w");
	fwrite("[box a]\nhost = x\0y\n", 1, 19, f);
	fclose(f);
	conf c;
	bg_err e = {0};
	assert_int_equal(conf_load_file(&c, p, ENV, &e), BG_ECONFIG);
	char want[600];
	snprintf(want, sizeof(want), "%s:2: NUL byte in a text file", p);
	assert_string_equal(e.msg, want);
	free(p);
}

static void test_long_lines(void **state)
{
	(void)state;
	/* inih cuts lines at 200 bytes; boxgate must not. */
	char cmd[600];
	memset(cmd, 'x', sizeof(cmd));
	memcpy(cmd, "echo ", 5);
	cmd[sizeof(cmd) - 4] = ' ';
	cmd[sizeof(cmd) - 3] = '{';
	cmd[sizeof(cmd) - 2] = '}';
	cmd[sizeof(cmd) - 1] = '\0';
	char long_key[300];
	memset(long_key, 'd', sizeof(long_key));
	memcpy(long_key, "dir/", 4);
	memcpy(long_key + sizeof(long_key) - 4, ".py", 4);
	char *ini = xasprintf(
		"[box a]\nhost = x\nallow = --a --b --c --dd "
		"--"
		"eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"
		"eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee "
		"--fffffffffffffffffffffffffffffffffffffffffffffffffffff --z ; trailing comment\n"
		"[verify]\n.py = %s ; comment\n%s = %s\n",
		cmd, long_key, "check {}");
	conf c;
	load_ok(&c, ini, NULL);
	const conf_box *b = conf_find_box(&c, "a");
	assert_int_equal(b->n_allow, 7);
	assert_string_equal(b->allow[6], "--z");
	assert_string_equal(conf_verify_for(&c, "x.py"), cmd);
	assert_string_equal(conf_verify_for(&c, long_key), "check {}");
	conf_release(&c);
	free(ini);
	/* An error after a long line still names the right line. */
	ini = xasprintf("[verify]\n.py = %s\n[box a]\nhost = x\nhots = y\n", cmd);
	expect_error(ini, "%s:5: unknown key 'hots' in [box a] (did you mean 'host'?)");
	free(ini);
	/* A long section name is not cut either. */
	char name[120];
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	ini = xasprintf("[box %s]\nhost = x\n[box %s]\nhost = y\n", name, name);
	char *fmt = xasprintf("%%s:3: box '%s' defined twice, first at %%s:1", name);
	expect_error(ini, fmt);
	free(fmt);
	free(ini);
}

static void test_continuation(void **state)
{
	(void)state;
	conf c;
	load_ok(&c,
		"[box a]\nhost = x\nallow = --kind --shape\n  --num-workers\n\n\t--configs\nport = "
		"2222\n",
		NULL);
	const conf_box *b = conf_find_box(&c, "a");
	assert_int_equal(b->n_allow, 4);
	assert_string_equal(b->allow[2], "--num-workers");
	assert_string_equal(b->allow[3], "--configs");
	assert_int_equal(b->port, 2222);
	conf_release(&c);
	/* A continued value is checked whole, and the error names the line. */
	expect_error("[box a]\nhost = x\nport = 22\n  33\n",
		     "%s:4: port must be an integer 1-65535, got '22 33'");
	expect_error("[box a]\nhost = x\nallow = --a\n  b\n",
		     "%s:4: allow: 'b' is not a flag (flags start with '-')");
}

static void test_defaults_inheritance(void **state)
{
	(void)state;
	conf c;
	char *kh = path_in("kh");
	char *ini = xasprintf(
		"[box a]\nhost = ha\nport = 2201\nuser = ua\n"
		"[box b]\nhost = hb\n"
		"[box c]\ntransport = local\n"
		"[defaults]\nport = 2200\nuser = du\nknown_hosts = kh\nhost_key_check = "
		"accept-new\n"
		"connect_timeout_s = 3\nkeepalive_s = 0\ngate_timeout_s = 60\nheartbeat_timeout_s "
		"= 7\n"
		"kill_grace_s = 2\nlock_wait_s = 30\nrepo = ~/r\ngate = g.sh\npython = python3.11\n"
		"gpus = 0,2\nrequire_gpu = no\nallow = --x\nnum_workers_env = NW\n");
	load_ok(&c, ini, NULL);
	free(ini);
	assert_int_equal(c.n_boxes, 4);
	assert_string_equal(c.boxes[0].name, "local"); /* the built-in one comes first */
	assert_true(c.boxes[0].builtin);
	const conf_box *a = conf_find_box(&c, "a"), *b = conf_find_box(&c, "b"),
		       *l = conf_find_box(&c, "c"), *bl = conf_find_box(&c, "local");
	assert_int_equal(a->port, 2201);
	assert_string_equal(a->user, "ua");
	assert_int_equal(b->port, 2200); /* [defaults] after the box still applies */
	assert_string_equal(b->user, "du");
	assert_string_equal(b->known_hosts[0], kh); /* relative to the file's directory */
	assert_int_equal(b->host_key_check, CONF_HKC_ACCEPT_NEW);
	assert_int_equal(b->connect_timeout_s, 3);
	assert_int_equal(b->keepalive_s, 0);
	assert_int_equal(b->gate_timeout_s, 60);
	assert_int_equal(b->heartbeat_timeout_ms, 7000);
	assert_int_equal(b->kill_grace_ms, 2000);
	assert_int_equal(b->lock_wait_s, 30);
	assert_string_equal(b->repo, "~/r"); /* kept for the remote shell */
	assert_string_equal(b->gate, "g.sh");
	assert_string_equal(b->python, "python3.11");
	assert_string_equal(b->gpus, "0,2");
	assert_int_equal(b->gpu_policy, CONF_GPU_OPTIONAL);
	assert_int_equal(b->n_allow, 1);
	assert_string_equal(b->num_workers_env, "NW");
	/* A local box expands its repo here; it has no ssh side. */
	char *r = xasprintf("%s/r", home);
	assert_string_equal(l->repo, r);
	assert_string_equal(bl->repo, r);
	free(r);
	assert_int_equal(l->transport, CONF_TRANSPORT_LOCAL);
	assert_null(l->host);
	assert_null(l->user);
	assert_int_equal(bl->gate_timeout_s, 60); /* the built-in box takes [defaults] too */
	assert_string_equal(bl->gate, "g.sh");
	conf_release(&c);
	free(kh);

	/* require_gpu spellings, and the transport defaults. */
	load_ok(&c,
		"[box a]\nhost = h\nrequire_gpu = TRUE\n[box b]\nhost = h\nrequire_gpu = 0\n[box "
		"c]\nhost = h\n"
		"[box local]\nrepo = sub\nrequire_gpu = yes\n[box d]\ntransport = local\nrepo = "
		"/abs\n",
		NULL);
	assert_int_equal(conf_find_box(&c, "a")->gpu_policy, CONF_GPU_REQUIRED);
	assert_int_equal(conf_find_box(&c, "b")->gpu_policy, CONF_GPU_OPTIONAL);
	assert_int_equal(conf_find_box(&c, "c")->gpu_policy, CONF_GPU_REQUIRED);
	const conf_box *loc = conf_find_box(&c, "local");
	assert_int_equal(loc->transport, CONF_TRANSPORT_LOCAL);
	assert_int_equal(loc->gpu_policy, CONF_GPU_REQUIRED);
	char *sub = path_in("sub");
	assert_string_equal(loc->repo, sub);
	free(sub);
	assert_string_equal(conf_find_box(&c, "d")->repo, "/abs");
	assert_int_equal(c.n_boxes, 5);                /* no second local */
	assert_string_equal(c.boxes[3].name, "local"); /* in file order */
	conf_release(&c);

	/* no_baseline: default no, [defaults] inherited, the box's own wins. */
	load_ok(&c,
		"[defaults]\nno_baseline = yes\n[box a]\nhost = h\n[box b]\nhost = h\n"
		"no_baseline = No\n[box c]\nhost = h\nno_baseline = 1\n",
		NULL);
	assert_true(conf_find_box(&c, "a")->no_baseline);
	assert_false(conf_find_box(&c, "b")->no_baseline);
	assert_true(conf_find_box(&c, "c")->no_baseline);
	conf_release(&c);
	load_ok(&c, "[box a]\nhost = h\n", NULL);
	assert_false(conf_find_box(&c, "a")->no_baseline);
	conf_release(&c);
}

static void test_env_rules(void **state)
{
	(void)state;
	conf c;
	char *p;
	load_ok(&c,
		"[defaults]\nenv --decode-m1 = MPK_GG_DECODE_M1=1\nenv --gate-timeout = "
		"MPK_GATE_TIMEOUT_S={}\n"
		"[box a]\nhost = h\nenv --gate-timeout = T=x{}y\nenv --empty = E=\nenv  --spaced   "
		"=  S = v w \n"
		"[box b]\nhost = h\n",
		&p);
	const conf_box *a = conf_find_box(&c, "a"), *b = conf_find_box(&c, "b");
	assert_int_equal(a->n_env, 4);
	/* inherited first, then the box's own; the box's own wins for a flag */
	assert_string_equal(a->env[0].flag, "--decode-m1");
	assert_int_equal(a->env[0].line, 2);
	assert_string_equal(a->env[1].flag, "--gate-timeout");
	assert_string_equal(a->env[1].name, "T");
	assert_string_equal(a->env[1].value, "x{}y");
	assert_int_equal(a->env[1].line, 6);
	assert_string_equal(a->env[1].file, p);
	assert_string_equal(a->env[2].flag, "--empty");
	assert_string_equal(a->env[2].value, "");
	assert_string_equal(a->env[3].flag, "--spaced");
	assert_string_equal(a->env[3].name, "S");
	assert_string_equal(a->env[3].value, "v w");
	assert_int_equal(b->n_env, 2);
	assert_string_equal(b->env[1].name, "MPK_GATE_TIMEOUT_S");
	assert_string_equal(b->env[1].value, "{}");
	assert_int_equal(b->env[1].line, 3);
	conf_release(&c);
	free(p);
}

static void test_pools(void **state)
{
	(void)state;
	conf c;
	load_ok(&c,
		"[pool p]\nslots = local:0,2,5, h[1-3]:0-1 b:3 , c\n"
		"[box h1]\nhost = h1\n[box h2]\nhost = h2\n[box h3]\nhost = h3\n"
		"[box b]\nhost = b\ngpus = 0-7\n[box c]\nhost = c\ngpus = 0-3\n[box d]\nhost = d\n"
		"[pool q]\nslots = d\n",
		NULL);
	const conf_pool *p = conf_find_pool(&c, "p");
	assert_int_equal(p->n_slots, 6);
	assert_string_equal(p->slots[0].box, "local");
	assert_string_equal(p->slots[0].gpus, "0,2,5");
	assert_string_equal(p->slots[1].box, "h1");
	assert_string_equal(p->slots[1].gpus, "0-1");
	assert_string_equal(p->slots[3].box, "h3");
	assert_string_equal(p->slots[4].box, "b");
	assert_string_equal(p->slots[4].gpus, "3");
	assert_string_equal(p->slots[5].box, "c");
	assert_string_equal(p->slots[5].gpus, "0-3"); /* a bare name: all its gpus */
	const conf_pool *q = conf_find_pool(&c, "q");
	assert_int_equal(q->n_slots, 1);
	assert_null(q->slots[0].gpus); /* no gpus configured: whatever it has */
	conf_release(&c);

	expect_error("[box b200-a]\nhost = x\n[pool default]\n\nslots = local:0-4, b200-b:0-7\n",
		     "%s:5: pool 'default': unknown box 'b200-b' (did you mean 'b200-a'?)");
	expect_error("[pool default]\nslots = zzz\n", "%s:2: pool 'default': unknown box 'zzz'");
	expect_error("[pool default]\n", "%s:1: pool 'default' has no slots = BOX:GPUS, ...");
	expect_error("[pool default]\nslots = , ,\n", "%s:2: pool 'default' has no slots");
	expect_error("[pool default]\nslot = local\n",
		     "%s:2: unknown key 'slot' in [pool default] (did you mean 'slots'?)");
	expect_error("[pool default]\nboxes = local\n",
		     "%s:2: unknown key 'boxes' in [pool default] (a pool has slots = BOX:GPUS, "
		     "..., disabled = BOX:GPU ... and disabled_why = TEXT)");
	expect_error(
		"[box a]\nhost = x\ngpus = 0-3\n[pool p]\nslots = a:0-1\ndisabled = a:2\n"
		"disabled_why = w\n",
		"%s:6: pool 'p': disabled 'a:2' is not one of its slots (BOX:GPU, or BOX for a "
		"CPU slot)");
	expect_error("[pool p]\nslots = local\ndisabled_why = w\n",
		     "%s:3: pool 'p': disabled and disabled_why go together (the reason everyone "
		     "refused reads)");
	expect_error("[box a]\nhost = x\ngpus = 0-3\n[pool p]\nslots = a:2-4\n",
		     "%s:5: pool 'p': GPU 4 is not among box 'a' gpus (0-3)");
	expect_error("[pool p]\nslots = local:0-2, local:2\n",
		     "%s:2: pool 'p': GPU 2 of box 'local' is listed twice");
	expect_error("[pool p]\nslots = local, local:2\n",
		     "%s:2: pool 'p': GPU 2 of box 'local' is listed twice");
	expect_error("[pool p]\nslots = local, local\n",
		     "%s:2: pool 'p': box 'local' is listed twice");
	expect_error("[pool p]\nslots = local:x\n",
		     "%s:2: pool 'p': bad GPU list 'x' for box 'local': expected a GPU index");
	expect_error("[pool p]\nslots = :0\n", "%s:2: pool 'p': a slot lacks its box name");
	expect_error("[pool p]\nslots = h[1-\n", "%s:2: pool 'p': 'h[1-': '[' without ']'");
}

static void test_verify_precedence(void **state)
{
	(void)state;
	conf c;
	load_ok(&c,
		"[verify]\n.py = mine {}\ntests/x/_build_helper.py = {python} -c 'import shapes' "
		"{}\n"
		".test.py = tp {}\n.json =\n./docs/a.sh = docs {}\n",
		NULL);
	assert_string_equal(conf_verify_for(&c, "a/b.py"), "mine {}");
	assert_string_equal(conf_verify_for(&c, "tests/x/_build_helper.py"),
			    "{python} -c 'import shapes' {}");
	assert_string_equal(conf_verify_for(&c, "./tests/x/_build_helper.py"),
			    "{python} -c 'import shapes' {}");
	assert_string_equal(conf_verify_for(&c, "other/_build_helper.py"), "mine {}");
	assert_string_equal(conf_verify_for(&c, "k.test.py"), "tp {}");   /* the longer extension */
	assert_string_equal(conf_verify_for(&c, "run.sh"), "bash -n {}"); /* built-in */
	assert_string_equal(conf_verify_for(&c, "docs/a.sh"), "docs {}");
	assert_null(conf_verify_for(&c, "x.json")); /* an empty rule turns it off */
	assert_null(conf_verify_for(&c, "README.md"));
	assert_null(conf_verify_for(&c, "py"));
	assert_string_equal(c.verify[c.n_verify - 3].pattern, ".py"); /* built-ins last */
	conf_release(&c);

	expect_error("[verify]\n/etc/passwd = x {}\n",
		     "%s:2: [verify] key '/etc/passwd' must be an extension such as .py or a path "
		     "inside the repo");
	expect_error("[verify]\na/../../b.py = x {}\n",
		     "%s:2: [verify] key 'a/../../b.py' must be an extension such as .py or a path "
		     "inside the repo");
	expect_error("[verify]\n. = x {}\n",
		     "%s:2: [verify] key '.' is not an extension (write .py, .sh, ...)");
}

static void test_select(void **state)
{
	(void)state;
	conf c;
	load_ok(&c,
		"[box b200-1]\nhost = a\n[box b200-2]\nhost = a\n[box b200-12]\nhost = a\n[box "
		"h01]\nhost = a\n"
		"[box h02]\nhost = a\n[box gpu-x]\nhost = a\n"
		"[pool fast]\nslots = h02, b200-1:0, local\n",
		NULL);
	const conf_box **v = NULL;
	size_t n = 0;
	bg_err e = {0};
	assert_int_equal(conf_select(&c, "h02,b200-[1-2,12]", false, &v, &n, &e), 0);
	assert_int_equal(n, 4);
	/* configuration order, not selection order */
	assert_string_equal(v[0]->name, "b200-1");
	assert_string_equal(v[1]->name, "b200-2");
	assert_string_equal(v[2]->name, "b200-12");
	assert_string_equal(v[3]->name, "h02");
	free(v);
	assert_int_equal(conf_select(&c, "h[01-02], h01, @fast", false, &v, &n, &e), 0);
	assert_int_equal(n, 4); /* duplicates once */
	assert_string_equal(v[0]->name, "local");
	assert_string_equal(v[1]->name, "b200-1");
	assert_string_equal(v[2]->name, "h01");
	assert_string_equal(v[3]->name, "h02");
	free(v);
	assert_int_equal(conf_select(&c, NULL, true, &v, &n, &e), 0);
	assert_int_equal(n, 6); /* all: not the built-in local */
	assert_string_equal(v[0]->name, "b200-1");
	free(v);
	assert_int_equal(conf_select(&c, "local", true, &v, &n, &e), 0);
	assert_int_equal(n, 7);
	free(v);
	assert_int_equal(conf_select(&c, "", false, &v, &n, &e), 0);
	assert_int_equal(n, 0);
	free(v);

	assert_int_equal(conf_select(&c, "b200-1,gpu-y", false, &v, &n, &e), BG_ENOTFOUND);
	assert_string_equal(e.msg, "unknown box 'gpu-y' (did you mean 'gpu-x'?)");
	assert_null(v);
	assert_int_equal(conf_select(&c, "b200-[1-3]", false, &v, &n, &e), BG_ENOTFOUND);
	assert_string_equal(e.msg,
			    "unknown box 'b200-3' (from 'b200-[1-3]') (did you mean 'b200-1'?)");
	assert_int_equal(conf_select(&c, "qqqqqq", false, &v, &n, &e), BG_ENOTFOUND);
	assert_string_equal(e.msg, "unknown box 'qqqqqq'");
	assert_int_equal(conf_select(&c, "@fsat", false, &v, &n, &e), BG_ENOTFOUND);
	assert_string_equal(e.msg, "unknown pool '@fsat' (did you mean '@fast'?)");
	assert_int_equal(conf_select(&c, "h[1", false, &v, &n, &e), BG_EUSAGE);
	conf_release(&c);

	/* Only the built-in box: `all` selects it. */
	char *d = enter_new_dir("sel-cwd");
	assert_int_equal(conf_load(&c, NULL, ENV, &e), 0);
	assert_int_equal(conf_select(&c, NULL, true, &v, &n, &e), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0]->name, "local");
	free(v);
	conf_release(&c);
	assert_int_equal(chdir(startdir), 0);
	free(d);
}

/* clush's operators in a selection, and --exclude: sets of configured boxes. */
static void test_select_exclude(void **state)
{
	(void)state;
	conf c;
	load_ok(&c,
		"[box h1]\nhost = a\n[box h2]\nhost = a\n[box h3]\nhost = a\n[box h4]\nhost = "
		"a\n[box x1]\nhost = a\n[pool p]\nslots = h2, h3\n",
		NULL);
	static const struct {
		const char *spec, *exclude, *want;
	} cases[] = {
		{"h[1-4]!h3", NULL, "h1 h2 h4"},
		{"h[1-4]!h[2-3],x1", NULL, "h1 h4 x1"},
		{"x1,h[1-4]!h2,h3", NULL, "h1 h3 h4 x1"}, /* left to right, as clush */
		{"h[1-4]!@p", NULL, "h1 h4"},
		{"h[1-4]&@p", NULL, "h2 h3"},
		{"h[1-3]^h[2-4]", NULL, "h1 h4"},
		{"h[1-4]", "h2", "h1 h3 h4"},
		{"h[1-4]", "h[1-2],@p", "h4"},
		{NULL, "h[1-3]", "h4 x1"},       /* --all -x */
		{"h[1-4]", "x1", "h1 h2 h3 h4"}, /* excluding a box not selected: nothing */
		{"h[1-2]", "h[1-2]", ""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const conf_box **v = NULL;
		size_t n = 0;
		bg_err e = {0};
		int rc = conf_select_except(&c, cases[i].spec, !cases[i].spec, cases[i].exclude, &v,
					    &n, &e);
		if (rc)
			print_error("%s: %s\n", cases[i].spec, e.msg);
		assert_int_equal(rc, 0);
		char got[200] = "";
		for (size_t j = 0; j < n; j++)
			snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", j ? " " : "",
				 v[j]->name);
		assert_string_equal(got, cases[i].want);
		free(v);
	}
	static const struct {
		const char *spec, *exclude, *says;
	} bad[] = {
		{"h[1-4]!h9", NULL, "unknown box 'h9' (from '!h9') (did you mean 'h1'?)"},
		{"h[1-4]", "h[4-5]",
		 "unknown box 'h5' to exclude (from 'h[4-5]') (did you mean 'h1'?)"},
		{"h[1-4]", "@pp", "unknown pool '@pp' to exclude (did you mean '@p'?)"},
		{"h[1-4]!", NULL, "'!' needs a node set after it in 'h[1-4]!'"},
		{"!h2", NULL, "'!' needs a node set before it in '!h2'"},
		{"h1,,&h2", NULL, "'&' needs a node set before it in 'h1,,&h2'"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const conf_box **v = (const conf_box **)1;
		size_t n = 9;
		bg_err e = {0};
		assert_true(conf_select_except(&c, bad[i].spec, false, bad[i].exclude, &v, &n, &e) <
			    0);
		assert_string_equal(e.msg, bad[i].says);
		assert_null(v);
		assert_int_equal(n, 0);
	}
	conf_release(&c);
}

/* Writes `text` to DIR/NAME, DIR made first. */
static void put(const char *dir, const char *name, const char *text)
{
	char *cmd = xasprintf("mkdir -p '%s'", dir);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	if (!name)
		return;
	char *p = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	free(p);
}

/* boxgate.ini is searched from the working directory up to the repository
 * root (a directory holding .git, file or directory) or /, as git does. */
static void test_config_search(void **state)
{
	(void)state;
	conf c;
	bg_err e = {0};
	char *repo = path_in("search/repo"), *deep = path_in("search/repo/a/b");
	put(deep, NULL, NULL);
	put(repo, "boxgate.ini", "[box up1]\nhost = a\n");
	put(repo, ".git", "gitdir: elsewhere\n"); /* a worktree's .git is a file */
	conf_env env = *ENV;
	env.cwd = deep;
	assert_int_equal(conf_load(&c, NULL, &env, &e), 0);
	char *want = xasprintf("%s/boxgate.ini", repo);
	assert_string_equal(c.path, want);
	free(want);
	want = xasprintf("found from %s", deep);
	assert_string_equal(c.found_by, want);
	free(want);
	assert_null(c.not_found);
	assert_non_null(conf_find_box(&c, "up1"));
	conf_release(&c);

	/* In the working directory itself: the name as before. */
	env.cwd = repo;
	assert_int_equal(chdir(repo), 0);
	assert_int_equal(conf_load(&c, NULL, &env, &e), 0);
	assert_string_equal(c.path, "boxgate.ini");
	assert_string_equal(c.found_by, "in the working directory");
	conf_release(&c);
	assert_int_equal(chdir(startdir), 0);

	/* The search stops at the repository root: a boxgate.ini above it is
	 * another project's. */
	char *outer = path_in("search/outer"), *inner = path_in("search/outer/repo/sub");
	char *root = path_in("search/outer/repo");
	put(outer, "boxgate.ini", "[box far]\nhost = a\n");
	put(inner, NULL, NULL);
	char *git = xasprintf("%s/.git", root);
	put(git, NULL, NULL);
	env.cwd = inner;
	assert_int_equal(conf_load(&c, NULL, &env, &e), 0);
	assert_null(c.path);
	assert_null(conf_find_box(&c, "far"));
	want = xasprintf("none given, no boxgate.ini from %s up to %s, no "
			 "%s/.config/boxgate/config.ini",
			 inner, root, home);
	assert_string_equal(c.not_found, want);
	/* An unknown box then says that no file was loaded, and where boxgate looked. */
	const conf_box **v = NULL;
	size_t n = 0;
	assert_int_equal(conf_select(&c, "far", false, &v, &n, &e), BG_ENOTFOUND);
	char *says = xasprintf("unknown box 'far' (no config file was loaded: %s)", want);
	assert_string_equal(e.msg, says);
	free(says);
	free(want);
	conf_release(&c);

	/* --config and $BOXGATE_CONFIG say so. */
	char *given = xasprintf("%s/boxgate.ini", outer);
	assert_int_equal(conf_load(&c, given, &env, &e), 0);
	assert_string_equal(c.found_by, "--config");
	conf_release(&c);
	env.config_path = given;
	assert_int_equal(conf_load(&c, NULL, &env, &e), 0);
	assert_string_equal(c.found_by, "$BOXGATE_CONFIG");
	conf_release(&c);
	free(given);
	free(git);
	free(root);
	free(inner);
	free(outer);
	free(repo);
	free(deep);
}

typedef struct lines_out {
	char *text;
	size_t n;
} lines_out;

static void collect(void *ctx, const char *line)
{
	lines_out *o = ctx;
	char *t = xasprintf("%s%s\n", o->text ? o->text : "", line);
	free(o->text);
	o->text = t;
	o->n++;
}

/* Drops the comment lines that name where things were written. */
static char *strip_where(const char *s)
{
	char *r = xstrdup("");
	const char *p = s;
	while (*p) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (!(len > 1 && p[0] == ';' &&
		      (strncmp(p, "; defined at", 12) == 0 ||
		       strncmp(p, "; jump set at", 13) == 0 ||
		       strncmp(p, "; configuration:", 16) == 0 || strncmp(p, "; /", 3) == 0))) {
			char *t = xasprintf("%s%.*s\n", r, (int)len, p);
			free(r);
			r = t;
		}
		p += len + (e ? 1 : 0);
	}
	return r;
}

/* ssh takes `~` and %d in ssh_config from the password database, not $HOME. */
static const char *pw_home(void)
{
	struct passwd *pw = getpwuid(getuid());
	return pw ? pw->pw_dir : "/";
}

/* [defaults] results and max_cv are dumped, and what is dumped loads back. */
static void test_dump_results_keys(void **state)
{
	(void)state;
	conf c, c2;
	char *p;
	load_ok(&c, "[defaults]\nresults = runs/r.jsonl\nmax_cv = 0.25\n", &p);
	lines_out o = {0};
	conf_dump(&c, collect, &o);
	char *dir = xstrdup(p);
	*strrchr(dir, '/') = '\0';
	char *want = xasprintf("results = %s/runs/r.jsonl\n", dir);
	assert_non_null(strstr(o.text, want));
	assert_non_null(strstr(o.text, "max_cv = 0.25\n"));
	char *p2 = ini_file(o.text);
	bg_err e = {0};
	assert_int_equal(conf_load_file(&c2, p2, ENV, &e), 0);
	assert_true(c2.max_cv == 0.25);
	assert_string_equal(c2.results, c.results);
	conf_release(&c2);
	conf_release(&c);
	free(want);
	free(dir);
	free(p2);
	free(o.text);
	free(p);
}

static void test_dump(void **state)
{
	(void)state;
	char *ssh = xasprintf("%s/.ssh/config", home);
	write_text(ssh, "Host b200-a\n  HostName 10.9.8.7\n  User ubuntu\n  Port 2222\n"
			"  IdentityFile ~/.ssh/k_%r\n  ProxyJump bastion\n");
	conf c;
	char *p;
	load_ok(&c, design_ini, &p);
	lines_out o = {0};
	conf_dump(&c, collect, &o);
	char *want = xasprintf("; defined at %s:8\n", p);
	assert_non_null(strstr(o.text, want));
	free(want);
	assert_non_null(strstr(o.text, "[box b200-a]\n"));
	assert_non_null(strstr(o.text, "; hostname = 10.9.8.7\n"));
	assert_non_null(strstr(o.text, "user = ubuntu\n"));
	assert_non_null(strstr(o.text, "port = 2222\n"));
	want = xasprintf("identity = %s/.ssh/k_ubuntu\n", pw_home());
	assert_non_null(strstr(o.text, want));
	free(want);
	want = xasprintf("known_hosts = %s/.ssh/known_hosts\n", home);
	assert_non_null(strstr(o.text, want));
	free(want);
	assert_non_null(strstr(o.text, "jump = bastion\n"));
	want = xasprintf("; jump set at %s:6\n", ssh);
	assert_non_null(strstr(o.text, want));
	free(want);
	assert_non_null(strstr(o.text, "env --decode-m1 = MPK_GG_DECODE_M1=1\n"));
	assert_non_null(strstr(o.text, "[pool default]\nslots = local:0-4, b200-a:0-7\n") ||
			strstr(o.text, "slots = local:0-4, b200-a:0-7\n"));
	assert_true(o.n > 40);

	/* What it prints loads back to the same configuration. */
	char *p2 = ini_file(o.text);
	conf c2;
	bg_err e = {0};
	assert_int_equal(conf_load_file(&c2, p2, ENV, &e), 0);
	lines_out o2 = {0};
	conf_dump(&c2, collect, &o2);
	char *s1 = strip_where(o.text), *s2 = strip_where(o2.text);
	assert_string_equal(s1, s2);
	free(s1);
	free(s2);
	conf_release(&c2);
	free(o2.text);
	free(p2);
	free(o.text);
	conf_release(&c);
	free(p);
	unlink(ssh);
	free(ssh);
}

/* ssh_config as seen through conf: precedence of box keys, ssh_config and
 * [defaults]; expansions; defaults for identity and user. */
static void test_ssh_resolution(void **state)
{
	(void)state;
	char *sshdir = xasprintf("%s/.ssh", home);
	char *cfg = path_in("ssh_cfg");
	write_text(cfg, "Host *.lab !bad.lab\n  User labuser\n  Port 2022\n  IdentityFile "
			"%d/.ssh/%h_%r_%p\n"
			"  IdentityFile ~/.ssh/second\n  UserKnownHostsFile ~/.ssh/kh_%n other\n  "
			"ConnectTimeout 1m\n"
			"Host bad.lab\n  ProxyCommand ssh -W %h:%p jump\n"
			"Host alias\n  HostName real.example\n"
			"Host *\n  User fallback\n  Port 2999\n");
	char *ed = xasprintf("%s/id_ed25519", sshdir), *rsa = xasprintf("%s/id_rsa", sshdir);
	write_text(ed, "k");
	write_text(rsa, "k");
	char *ini = xasprintf(
		"[defaults]\nssh_config = %s\nuser = defuser\nport = 2100\nknown_hosts = /d/kh\n"
		"connect_timeout_s = 4\n"
		"[box lab]\nhost = n1.lab\n"
		"[box mine]\nhost = n2.lab\nuser = boxuser\nport = 22\nidentity = ~/k1, k2 "
		"/abs/k3\n"
		"known_hosts = ~/kh\nconnect_timeout_s = 9\n"
		"[box bad]\nhost = bad.lab\n"
		"[box alias]\nhost = alias\n",
		cfg);
	conf c;
	load_ok(&c, ini, NULL);
	free(ini);
	assert_string_equal(c.ssh_config, cfg);
	const conf_box *lab = conf_find_box(&c, "lab"), *mine = conf_find_box(&c, "mine"),
		       *bad = conf_find_box(&c, "bad"), *alias = conf_find_box(&c, "alias");
	/* ssh_config beats [defaults] for user, port, identity, known_hosts */
	assert_string_equal(lab->user, "labuser");
	assert_int_equal(lab->port, 2022);
	assert_int_equal(lab->n_identities, 2);
	char *w = xasprintf("%s/.ssh/n1.lab_labuser_2022", pw_home());
	assert_string_equal(lab->identities[0], w);
	free(w);
	w = xasprintf("%s/.ssh/second", pw_home());
	assert_string_equal(lab->identities[1], w);
	free(w);
	assert_int_equal(lab->n_known_hosts, 2); /* every file of UserKnownHostsFile */
	w = xasprintf("%s/.ssh/kh_n1.lab", pw_home());
	assert_string_equal(lab->known_hosts[0], w);
	free(w);
	assert_string_equal(lab->known_hosts[1], "other");
	assert_int_equal(lab->ssh_connect_timeout_s, 60);
	assert_int_equal(lab->n_global_known_hosts, 2);
	assert_string_equal(lab->global_known_hosts[0], "/etc/ssh/ssh_known_hosts");
	/* [defaults] beats ssh_config for connect_timeout_s */
	assert_int_equal(lab->connect_timeout_s, 4);
	assert_null(lab->unsupported);
	/* the box's own keys win over everything; %r follows the box's user */
	assert_string_equal(mine->user, "boxuser");
	assert_int_equal(mine->port, 22);
	assert_int_equal(mine->n_identities, 3);
	w = xasprintf("%s/k1", home);
	assert_string_equal(mine->identities[0], w);
	free(w);
	w = path_in("k2");
	assert_string_equal(mine->identities[1], w);
	free(w);
	assert_string_equal(mine->identities[2], "/abs/k3");
	w = xasprintf("%s/kh", home);
	assert_string_equal(mine->known_hosts[0], w);
	free(w);
	assert_int_equal(mine->connect_timeout_s, 9);
	/* a negated pattern excludes the whole Host line */
	assert_string_equal(bad->user, "fallback");
	assert_int_equal(bad->port, 2999);
	w = xasprintf("ProxyCommand (%s:9)", cfg);
	assert_string_equal(bad->unsupported, w);
	free(w);
	assert_string_equal(bad->known_hosts[0], "/d/kh"); /* no UserKnownHostsFile: [defaults] */
	/* no IdentityFile anywhere: the default keys that exist */
	assert_int_equal(bad->n_identities, 2);
	assert_string_equal(bad->identities[0], ed);
	assert_string_equal(bad->identities[1], rsa);
	assert_string_equal(alias->hostname, "real.example");
	assert_string_equal(alias->host, "alias");
	assert_string_equal(lab->hostname, "n1.lab");
	conf_release(&c);

	/* No [defaults] either: $USER, 22, ssh's ~/.ssh/known_hosts{,2}, 10 s. */
	char *ini2 = xasprintf("[defaults]\nssh_config = %s/none\n[box z]\nhost = z\n", tmpdir);
	load_ok(&c, ini2, NULL);
	free(ini2);
	const conf_box *z = conf_find_box(&c, "z");
	assert_string_equal(z->user, "tester");
	assert_int_equal(z->port, 22);
	assert_int_equal(z->connect_timeout_s, 10);
	assert_int_equal(z->n_known_hosts, 2);
	w = xasprintf("%s/.ssh/known_hosts", home);
	assert_string_equal(z->known_hosts[0], w);
	free(w);
	w = xasprintf("%s/.ssh/known_hosts2", home);
	assert_string_equal(z->known_hosts[1], w);
	free(w);
	conf_release(&c);

	/* An ssh_config error names the ssh_config line and the box. */
	write_text(cfg, "Host z\n  Port many\n");
	ini2 = xasprintf("[defaults]\nssh_config = %s\n[box z]\nhost = z\n", cfg);
	char *p = ini_file(ini2);
	bg_err e = {0};
	assert_int_equal(conf_load_file(&c, p, ENV, &e), BG_ECONFIG);
	w = xasprintf("box 'z': %s:2: Bad port 'many'", cfg);
	assert_string_equal(e.msg, w);
	free(w);
	free(p);
	free(ini2);

	/* The box's user reaches ssh_config as `ssh -l` would: Match user
	 * sees it; GlobalKnownHostsFile is used as written; ConnectTimeout 0
	 * ("no timeout" to ssh) keeps boxgate's default; an unset ${VAR}
	 * names the line. */
	write_text(cfg, "Match user boxuser\n  HostName via-match\n  ConnectTimeout 0\n"
			"  GlobalKnownHostsFile ~/g1 /g2\n"
			"Host envbox\n  IdentityFile ${BG_TEST_CONF_UNSET}/k\n");
	ini2 = xasprintf("[defaults]\nssh_config = %s\n[box m]\nhost = m\nuser = boxuser\n", cfg);
	load_ok(&c, ini2, NULL);
	free(ini2);
	const conf_box *m = conf_find_box(&c, "m");
	assert_string_equal(m->hostname, "via-match");
	assert_int_equal(m->ssh_connect_timeout_s, 0);
	assert_int_equal(m->connect_timeout_s, 10);
	assert_int_equal(m->n_global_known_hosts, 2);
	assert_string_equal(m->global_known_hosts[0], "~/g1");
	lines_out o = {0};
	conf_dump(&c, collect, &o);
	assert_non_null(strstr(o.text, "; ssh_config ConnectTimeout 0 is \"no timeout\" to ssh"));
	free(o.text);
	conf_release(&c);
	ini2 = xasprintf("[defaults]\nssh_config = %s\n[box e]\nhost = envbox\n", cfg);
	p = ini_file(ini2);
	unsetenv("BG_TEST_CONF_UNSET");
	assert_int_equal(conf_load_file(&c, p, ENV, &e), BG_ECONFIG);
	w = xasprintf("box 'e': %s:6: IdentityFile '${BG_TEST_CONF_UNSET}/k': "
		      "${BG_TEST_CONF_UNSET} is not set",
		      cfg);
	assert_string_equal(e.msg, w);
	free(w);
	free(p);
	free(ini2);
	unlink(ed);
	unlink(rsa);
	free(ed);
	free(rsa);
	free(cfg);
	free(sshdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_design_example),
		cmocka_unit_test(test_builtin_local_only),
		cmocka_unit_test(test_search_order),
		cmocka_unit_test(test_errors_keys),
		cmocka_unit_test(test_errors_duplicates),
		cmocka_unit_test(test_errors_values),
		cmocka_unit_test(test_errors_env),
		cmocka_unit_test(test_seconds_ms),
		cmocka_unit_test(test_fractional_seconds),
		cmocka_unit_test(test_errors_sections),
		cmocka_unit_test(test_errors_syntax),
		cmocka_unit_test(test_long_lines),
		cmocka_unit_test(test_continuation),
		cmocka_unit_test(test_defaults_inheritance),
		cmocka_unit_test(test_env_rules),
		cmocka_unit_test(test_pools),
		cmocka_unit_test(test_verify_precedence),
		cmocka_unit_test(test_select),
		cmocka_unit_test(test_select_exclude),
		cmocka_unit_test(test_config_search),
		cmocka_unit_test(test_dump),
		cmocka_unit_test(test_dump_results_keys),
		cmocka_unit_test(test_ssh_resolution),
	};
	return cmocka_run_group_tests_name("conf", tests, group_setup, group_teardown);
}
