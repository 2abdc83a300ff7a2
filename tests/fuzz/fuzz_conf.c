/* libFuzzer target for conf/: the input is a boxgate.ini.
 *
 * Invariants checked:
 *   - conf_load_file never crashes or leaks; it returns 0 or a BG_E* code;
 *   - a configuration error names where: its message holds "FILE:LINE: "
 *     (of the ini file or of an ssh_config it pointed at); a failed load
 *     leaves the conf empty;
 *   - a loaded conf is consistent: every ssh box has host, hostname, user,
 *     known_hosts and a port in 1-65535; every box a python; pool slots name
 *     existing boxes; the three built-in verifiers come last;
 *   - conf_dump's output loads again, to the same number of boxes and pools;
 *   - conf_select(all) and conf_verify_for never crash.
 *
 * Build and run:
 *   clang -g -O1 -std=c11 -D_GNU_SOURCE -I. -fsanitize=fuzzer,address,undefined \
 *     tests/fuzz/fuzz_conf.c conf/?*.c base/?*.c -linih -lcrypto -o build/fuzz_conf
 *   build/fuzz_conf -max_total_time=60 -max_len=4096 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"
#include "base/strbuf.h"
#include "base/xmalloc.h"
#include "conf/conf.h"

/* What cli/ hands conf_load: the process environment, read now. */
#define ENV                                                                                        \
	(&(conf_env){getenv("HOME"), getenv("USER"), getenv("BOXGATE_CONFIG"),                     \
		     getenv("XDG_CONFIG_HOME"), getenv("SSH_AUTH_SOCK"), fuzz_env_lookup, NULL})

static char dir[64];
static char ini_path[128];
static char dump_path[128];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_tmpdir(dir, sizeof(dir), "conf");
	snprintf(ini_path, sizeof(ini_path), "%s/boxgate.ini", dir);
	snprintf(dump_path, sizeof(dump_path), "%s/dump.ini", dir);
	/* Keep the real ~/.ssh out of it: a fixed, empty home. */
	setenv("HOME", dir, 1);
	setenv("USER", "fuzz", 1);
	return 0;
}

static void collect(void *ctx, const char *line)
{
	strbuf *sb = ctx;
	strbuf_addstr(sb, line);
	strbuf_addch(sb, '\n');
}

static void check_conf(const conf *c)
{
	CHECK(c->root != NULL && c->ssh_config != NULL);
	CHECK(c->n_boxes >= 1);
	for (size_t i = 0; i < c->n_boxes; i++) {
		const conf_box *b = &c->boxes[i];
		CHECK(b->name && b->python && b->file);
		if (b->transport == CONF_TRANSPORT_SSH) {
			CHECK(b->host && b->hostname && b->user && b->known_hosts);
			CHECK(b->port >= 1 && b->port <= 65535);
		} else {
			CHECK(b->repo != NULL);
		}
		for (size_t j = 0; j < b->n_env; j++)
			CHECK(b->env[j].flag[0] == '-' && b->env[j].name[0]);
		for (size_t j = 0; j < b->n_allow; j++)
			CHECK(b->allow[j][0] == '-');
	}
	for (size_t i = 0; i < c->n_pools; i++) {
		CHECK(c->pools[i].n_slots >= 1);
		for (size_t j = 0; j < c->pools[i].n_slots; j++)
			CHECK(conf_find_box(c, c->pools[i].slots[j].box) != NULL);
	}
	CHECK(c->n_verify >= 3);
	CHECK(strcmp(c->verify[c->n_verify - 1].pattern, ".json") == 0);
	CHECK(strcmp(c->verify[c->n_verify - 3].pattern, ".py") == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_write_file(ini_path, data, size);
	conf c;
	bg_err e = {0};
	int rc = conf_load_file(&c, ini_path, ENV, &e);
	CHECK(rc <= 0);
	if (rc) {
		CHECK(c.boxes == NULL && c.n_boxes == 0 && c.path == NULL);
		if (rc == BG_ECONFIG)
			CHECK(fuzz_names_a_line(e.msg) || strstr(e.msg, "larger than") != NULL);
		return 0;
	}
	check_conf(&c);

	const conf_box **sel = NULL;
	size_t n_sel = 0;
	CHECK(conf_select(&c, NULL, true, &sel, &n_sel, &e) == 0);
	CHECK(n_sel >= 1);
	free(sel);
	if (c.n_pools) {
		char *spec = xasprintf("@%s", c.pools[0].name);
		CHECK(conf_select(&c, spec, false, &sel, &n_sel, &e) == 0);
		free(sel);
		free(spec);
	}
	(void)conf_verify_for(&c, "a/b.py");
	(void)conf_verify_for(&c, "x");

	strbuf sb = STRBUF_INIT;
	conf_dump(&c, collect, &sb);
	fuzz_write_file(dump_path, sb.buf, sb.len);
	conf c2;
	rc = conf_load_file(&c2, dump_path, ENV, &e);
	if (rc)
		fprintf(stderr, "fuzz_conf: dump does not load again: %s\n%s", e.msg,
			strbuf_str(&sb));
	CHECK(rc == 0);
	CHECK(c2.n_boxes == c.n_boxes);
	CHECK(c2.n_pools == c.n_pools);
	conf_release(&c2);
	strbuf_release(&sb);
	conf_release(&c);
	return 0;
}
