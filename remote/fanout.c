#include "remote/fanout.h"

#include <pthread.h>
#include <stdlib.h>

#include "base/xmalloc.h"

struct fanout {
	const conf_box *const *boxes;
	size_t n;
	size_t next;
	pthread_mutex_t mu;
	remote_box_fn fn;
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
		f->fn(f->ctx, f->boxes[i], i);
	}
}

void remote_fanout(const conf_box *const *boxes, size_t n, size_t max_parallel, remote_box_fn fn,
		   void *ctx)
{
	struct fanout f = {boxes, n, 0, PTHREAD_MUTEX_INITIALIZER, fn, ctx};
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
