/* What every libFuzzer target of tests/fuzz/ shares: the entry points, the invariant
 * check, a private temporary directory and files written from the input. Header only:
 * `make fuzz` builds each target from its one .c file and the library sources. */
#ifndef BG_FUZZ_H
#define BG_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts (so libFuzzer keeps the input) naming the target, the condition and its line. */
#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s: invariant failed: %s (line %d)\n", __FILE__, #cond,   \
				__LINE__);                                                         \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* Makes a fresh directory /tmp/bg-fuzz-TAG-XXXXXX into dir[n]; aborts when it cannot. */
static inline void fuzz_tmpdir(char *dir, size_t n, const char *tag)
{
	snprintf(dir, n, "/tmp/bg-fuzz-%s-XXXXXX", tag);
	if (!mkdtemp(dir))
		abort();
}

/* ${VAR} as cli/ resolves it: the process environment. */
static inline const char *fuzz_env_lookup(void *ctx, const char *name)
{
	(void)ctx;
	return getenv(name);
}

/* Replaces the file at path with the n bytes at data. */
static inline void fuzz_write_file(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	if (n)
		CHECK(fwrite(data, 1, n, f) == n);
	fclose(f);
}

/* A configuration error names where: "FILE:LINE: " somewhere in msg (FILE may itself
 * hold a ':'). */
static inline bool fuzz_names_a_line(const char *msg)
{
	for (const char *p = strchr(msg, ':'); p; p = strchr(p + 1, ':')) {
		const char *q = p + 1;
		if (*q < '0' || *q > '9')
			continue;
		while (*q >= '0' && *q <= '9')
			q++;
		if (q[0] == ':' && q[1] == ' ')
			return true;
	}
	return false;
}

#endif
