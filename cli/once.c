/* Notes the agent repeats on every invocation of a run (--repeat, a sweep)
 * although they say the same thing about the box each time: shown once. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"
#include "cli/cli.h"

static pthread_mutex_t once_mu = PTHREAD_MUTEX_INITIALIZER;
static char **seen;
static size_t n_seen;

/* The agent's notes about the box rather than the run. */
static bool box_note(const char *line, size_t len)
{
	static const char *const notes[] = {"boxgate-agent: no GPU check: "};
	for (size_t i = 0; i < sizeof(notes) / sizeof(notes[0]); i++) {
		size_t n = strlen(notes[i]);
		if (len >= n && memcmp(line, notes[i], n) == 0)
			return true;
	}
	return false;
}

bool cli_repeated_note(const char *line, size_t len)
{
	if (!box_note(line, len))
		return false;
	bool repeated = false;
	pthread_mutex_lock(&once_mu);
	for (size_t i = 0; i < n_seen && !repeated; i++)
		repeated = strlen(seen[i]) == len && memcmp(seen[i], line, len) == 0;
	if (!repeated && n_seen < 64) {
		seen = xrealloc(seen, (n_seen + 1) * sizeof(*seen));
		seen[n_seen++] = xstrndup(line, len);
	}
	pthread_mutex_unlock(&once_mu);
	return repeated;
}
