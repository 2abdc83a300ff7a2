#include "base/fanout.h"

#include <pthread.h>
#include <stdlib.h>

#include "base/xmalloc.h"

struct fanout {
	size_t n;
	size_t next;
	pthread_mutex_t mu;
	void (*fn)(void *ctx, size_t i);
	void *ctx;
};

static void *worker(void *arg)
{
	struct fanout *f = arg;
	for (;;) {
		pthread_mutex_lock(&f->mu);
		size_t i = f->next++;
		pthread_mutex_unlock(&f->mu);
		if (i >= f->n)
			return NULL;
		f->fn(f->ctx, i);
	}
}

void bg_fanout(size_t n, size_t max_parallel, void (*fn)(void *ctx, size_t i), void *ctx)
{
	struct fanout f = {n, 0, PTHREAD_MUTEX_INITIALIZER, fn, ctx};
	size_t nthreads = max_parallel ? max_parallel : 64;
	if (nthreads > n)
		nthreads = n;
	if (nthreads <= 1) {
		worker(&f);
		return;
	}
	pthread_t *t = xcalloc(nthreads, sizeof(*t));
	size_t started = 0;
	for (; started < nthreads; started++)
		if (pthread_create(&t[started], NULL, worker, &f) != 0)
			break;
	if (started == 0)
		worker(&f);
	for (size_t i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	free(t);
	pthread_mutex_destroy(&f.mu);
}
