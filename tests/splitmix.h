/* splitmix64, the seeded generator of the randomised tests: a failing run
 * replays from the seed it printed. */
#ifndef BG_TESTS_SPLITMIX_H
#define BG_TESTS_SPLITMIX_H

#include <stdint.h>

static inline uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

#endif
