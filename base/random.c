#include "base/random.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>

void bg_random_hex(char *out, size_t nbytes)
{
	unsigned char r[32];
	size_t got = 0;
	if (nbytes > sizeof(r))
		nbytes = sizeof(r);
	while (got < nbytes) {
		ssize_t k = getrandom(r + got, nbytes - got, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			abort(); /* no kernel randomness: nothing sensible to do */
		got += (size_t)k;
	}
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < nbytes; i++) {
		out[2 * i] = hex[r[i] >> 4];
		out[2 * i + 1] = hex[r[i] & 15];
	}
	out[2 * nbytes] = '\0';
}
