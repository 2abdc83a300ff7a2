/* libFuzzer target for conf/nodeset: the input is a node set.
 *
 * Invariants checked: nodeset_expand never crashes or leaks; it returns 0 or
 * BG_EUSAGE (then with no output); it never yields more than NODESET_MAX
 * names, none of them holding a bracket, a comma or an operator (! & ^); a
 * spec without brackets or operators expands to exactly nodeset_split()'s items.
 *
 * Build and run:
 *   clang -g -O1 -std=c11 -D_GNU_SOURCE -I. -fsanitize=fuzzer,address,undefined \
 *     tests/fuzz/fuzz_conf_nodeset.c conf/nodeset*.c base/?*.c -lcrypto -lcjson -lpthread \
 *     -o build/fuzz_conf_nodeset
 *   build/fuzz_conf_nodeset -max_total_time=60 -max_len=256 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "base/xmalloc.h"
#include "conf/nodeset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *spec = xstrndup((const char *)data, size);
	char **v = NULL;
	size_t n = 0;
	bg_err e = {0};
	int rc = nodeset_expand(spec, &v, &n, &e);
	CHECK(rc == 0 || rc == BG_EUSAGE);
	if (rc) {
		CHECK(v == NULL && n == 0 && e.msg[0]);
	} else {
		CHECK(n <= NODESET_MAX);
		for (size_t i = 0; i < n; i++)
			CHECK(!strpbrk(v[i], "[],!&^"));
		if (!strpbrk(spec, "[]!&^")) { /* no brackets, no operators */
			char **items;
			size_t n_items;
			nodeset_split(spec, &items, &n_items);
			CHECK(n_items == n);
			for (size_t i = 0; i < n; i++)
				CHECK(strcmp(items[i], v[i]) == 0);
			nodeset_free(items, n_items);
		}
	}
	nodeset_free(v, n);
	free(spec);
	return 0;
}
