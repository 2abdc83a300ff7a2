/* libFuzzer target for conf/sshconfig: the input's first line is the host
 * to look up, the rest is an ssh_config.
 *
 * Invariants checked: sshcfg_lookup never crashes or leaks; it returns 0,
 * BG_ECONFIG with "FILE:LINE: " in its message, or BG_EIO; on success the
 * host name is set, a port is 0 or 1-65535, the timeout -1 or >= 0, every
 * path has its "FILE:LINE", and sshcfg_expand of every value returns a
 * string or BG_ECONFIG with a message; a ProxyJump has its line and parses
 * into hops (each with a host and a valid port) or says why not.
 *
 * Build and run:
 *   clang -g -O1 -std=c11 -D_GNU_SOURCE -I. -fsanitize=fuzzer,address,undefined \
 *     tests/fuzz/fuzz_conf_sshconfig.c conf/?*.c base/?*.c -linih -lcrypto -o
 * build/fuzz_conf_sshconfig build/fuzz_conf_sshconfig -max_total_time=60 -max_len=4096 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"
#include "base/xmalloc.h"
#include "conf/jumpspec.h"
#include "conf/sshconfig.h"

static char dir[64];
static char path[128];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_tmpdir(dir, sizeof(dir), "sshcfg");
	snprintf(path, sizeof(path), "%s/config", dir);
	return 0;
}

/* Expansion either gives a string or says why not. */
static void expand_checked(const char *raw, const sshcfg_tokens *t)
{
	char *s = NULL;
	bg_err e = {0};
	int rc = sshcfg_expand(raw, t, SSHCFG_X_TILDE | SSHCFG_X_DOLLAR, &s, &e);
	CHECK(rc == 0 || rc == BG_ECONFIG);
	CHECK((rc == 0) == (s != NULL));
	CHECK(rc == 0 || e.msg[0] != '\0');
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t hl = nl ? (size_t)(nl - data) : size;
	char *host = xstrndup((const char *)data, hl);
	fuzz_write_file(path, nl ? nl + 1 : data, nl ? size - hl - 1 : 0);

	sshcfg_host h;
	bg_err e = {0};
	/* `dir` as home: relative Includes look under dir/.ssh, which is empty. */
	int rc = sshcfg_lookup(path, host, dir, &h, &e);
	CHECK(rc == 0 || rc == BG_ECONFIG || rc == BG_EIO);
	if (rc == BG_ECONFIG)
		CHECK(fuzz_names_a_line(e.msg));
	if (rc == 0) {
		CHECK(h.hostname != NULL);
		CHECK(h.port == 0 || (h.port >= 1 && h.port <= 65535));
		CHECK(h.connect_timeout_s >= -1);
		CHECK(h.connect_timeout_s == -1 || h.connect_timeout_at != NULL);
		CHECK(h.n_known_hosts == 0 || h.known_hosts_at != NULL);
		sshcfg_tokens t = {h.hostname,
				   host,
				   "me",
				   h.user ? h.user : "me",
				   dir,
				   h.port ? h.port : 22,
				   fuzz_env_lookup,
				   NULL};
		for (size_t i = 0; i < h.n_identities; i++) {
			CHECK(h.identities_at[i] != NULL);
			expand_checked(h.identities[i], &t);
		}
		for (size_t i = 0; i < h.n_known_hosts; i++)
			expand_checked(h.known_hosts[i], &t);
		if (h.jump) {
			/* a ProxyJump is never "none", has its line, and parses into
			 * hops with a host each or says why not */
			CHECK(h.jump_at != NULL && strcmp(h.jump, "none") != 0);
			conf_jump_hop *hops = NULL;
			size_t n = 0;
			char why[300] = "";
			int jr = conf_jumpspec_parse(h.jump, &hops, &n, why, sizeof(why));
			CHECK(jr == 0 || jr == -1);
			CHECK(jr == 0 ? n >= 1 : (n == 0 && hops == NULL && why[0]));
			for (size_t i = 0; i < n; i++)
				CHECK(hops[i].host && hops[i].host[0] &&
				      (hops[i].port == 0 ||
				       (hops[i].port >= 1 && hops[i].port <= 65535)));
			conf_jumpspec_free(hops, n);
		}
		sshcfg_host_release(&h);
	}
	free(host);
	return 0;
}
