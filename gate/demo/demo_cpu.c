/* The demo gate's CPU twin: the same task, tiles and FAITHFUL_RESULT as the CUDA build,
 * on a persistent pool of --num-workers threads. Worker w takes tiles w, w + nw, ... (a
 * tile is 8 rows) with no barrier inside its tile loop, and times its body with
 * clock_gettime(CLOCK_MONOTONIC); the result is labelled "device":"cpu".
 * C11 + pthreads + libm only. */
#include "gate/demo/demo_common.h"
#include "gate/demo/demo_cpu_kernels.h"
#include "gate/demo/demo_math.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TILE_ROWS 8

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ---- the persistent pool ---- */

struct pool;
typedef void (*job_fn)(struct pool *p, int worker);

struct pool {
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	unsigned gen;
	int pending, quit, nw;
	pthread_t *th;
	/* the current job */
	job_fn fn;
	const struct gemv *g;
	enum demo_variant variant;
	uint16_t *y;
	double *tb, *te; /* this iteration's per-worker spans, or NULL */
};

struct worker_arg {
	struct pool *p;
	int id;
};

/* When the workers fit the cpus, each keeps one: a worker that migrates mid-launch
 * brings a cold cache, and two workers that meet on one cpu double the slowest span;
 * unpinned, repeats of q_b disagreed by 3-20% on a 2-core machine. The workers take the
 * highest-numbered cpus, so the lowest (where the agent, the client and most interrupts
 * run) stays free when --num-workers leaves one. */
static void pin_to_cpu(int worker, int nw)
{
	cpu_set_t allowed, one;
	if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
		return;
	const int count = CPU_COUNT(&allowed);
	if (nw > count)
		return;
	for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed))
			continue;
		if (seen++ == count - nw + worker) {
			CPU_ZERO(&one);
			CPU_SET(cpu, &one);
			pthread_setaffinity_np(pthread_self(), sizeof one, &one);
			return;
		}
	}
}

static void *worker_main(void *arg)
{
	struct worker_arg *wa = arg;
	struct pool *p = wa->p;
	unsigned seen = 0;
	pin_to_cpu(wa->id, p->nw);
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (p->gen == seen && !p->quit)
			pthread_cond_wait(&p->go, &p->mu);
		if (p->quit)
			break;
		seen = p->gen;
		job_fn fn = p->fn;
		pthread_mutex_unlock(&p->mu);
		fn(p, wa->id);
		pthread_mutex_lock(&p->mu);
		if (--p->pending == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static void pool_run(struct pool *p, job_fn fn)
{
	pthread_mutex_lock(&p->mu);
	p->fn = fn;
	p->pending = p->nw;
	p->gen++;
	pthread_cond_broadcast(&p->go);
	while (p->pending > 0)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

/* The gate's task: worker w strides the 8-row tiles by nw; no barrier inside. */
static void job_gemv(struct pool *p, int w)
{
	const struct gemv *g = p->g;
	const int ntiles = (g->n + TILE_ROWS - 1) / TILE_ROWS;
	double t0 = now_ns();
	if (p->variant == DEMO_V_HANG) {
		volatile int spin = 1;
		while (spin) {
		}
	}
	int kend = g->k;
	if (p->variant == DEMO_V_HALFK)
		kend = g->dtype == DEMO_FP8 ? (g->k / 2) / BG_FP8_BLOCK * BG_FP8_BLOCK : g->k / 2;
	for (int t = w; t < ntiles; t += p->nw) {
		int r0 = t * TILE_ROWS, r1 = r0 + TILE_ROWS < g->n ? r0 + TILE_ROWS : g->n;
		switch (p->variant) {
		case DEMO_V_BASELINE:
			for (int r = r0; r < r1; r++)
				gemv_row_baseline(g, r, p->y);
			break;
		case DEMO_V_STUB:
			for (int r = r0; r < r1; r++)
				p->y[r] = 0;
			break;
		default: { /* candidate, nosplit (the CPU twin never splits K), halfk */
			int r = r0;
			for (; r + 4 <= r1; r += 4)
				gemv_rows4_candidate(g, r, kend, p->y);
			for (; r < r1; r++)
				gemv_row_baseline(g, r, p->y);
			break;
		}
		}
	}
	double t1 = now_ns();
	if (p->tb) {
		p->tb[w] = t0;
		p->te[w] = t1;
	}
}

/* Fills W (and scales) in parallel: worker w writes rows w, w + nw, ... */
static void job_generate(struct pool *p, int w)
{
	const struct gemv *g = p->g;
	for (int r = w; r < g->n; r += p->nw) {
		size_t base = (size_t)r * (size_t)g->k;
		if (g->dtype == DEMO_BF16)
			for (int k = 0; k < g->k; k++)
				g->wb[base + k] = bg_gen_w_bf16(g->seed, base + (size_t)k);
		else
			for (int k = 0; k < g->k; k++)
				g->w8[base + k] = bg_gen_w_e4m3(g->seed, base + (size_t)k);
	}
}

/* ---- the backend ---- */

static int cpu_count(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

/* One cpu is left to the agent, the client and the kernel: with every cpu a worker, any of
 * them preempts one worker and that worker's span is the slowCTA. */
static int cpu_default_workers(void)
{
	const int n = cpu_count();
	return n > 1 ? n - 1 : 1;
}

static int cpu_probe(void)
{
	printf("cpu: %d CPUs\n", cpu_count());
	return 0;
}

static void cpu_model(char *out, size_t len)
{
	snprintf(out, len, "cpu");
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "model name", 10) == 0) {
			char *c = strchr(line, ':');
			if (c) {
				c++;
				while (*c == ' ' || *c == '\t')
					c++;
				c[strcspn(c, "\n")] = '\0';
				snprintf(out, len, "%s", c);
			}
			break;
		}
	}
	fclose(f);
}

/* The smallest step CLOCK_MONOTONIC shows here. */
static double clock_step_ns(void)
{
	double best = 1e9, prev = now_ns();
	for (int i = 0; i < 200000; i++) {
		double t = now_ns();
		if (t > prev && t - prev < best)
			best = t - prev;
		prev = t;
	}
	return best;
}

static double copy_gbps(void)
{
	const size_t bytes = 64u << 20;
	char *a = malloc(bytes), *b = malloc(bytes);
	double gbps = 0.0;
	if (a && b) {
		memset(a, 1, bytes);
		memset(b, 2, bytes);
		double best = 1e30;
		for (int i = 0; i < 3; i++) {
			double t0 = now_ns();
			memcpy(b, a, bytes);
			double t1 = now_ns();
			if (t1 - t0 < best)
				best = t1 - t0;
			a[i] = b[bytes - 1 - (size_t)i]; /* keep the copies observable */
		}
		gbps = 2.0 * (double)bytes / best;
	}
	free(a);
	free(b);
	return gbps;
}

static void to_float(const uint16_t *y, float *f, int n)
{
	for (int i = 0; i < n; i++)
		f[i] = bg_bf2f(y[i]);
}

static int cpu_run(const struct demo_opts *o, struct demo_report *rep)
{
	const int n = o->shape->n, k = o->shape->k, nw = o->num_workers;
	const int total = o->warmup + o->iters;
	const int nimpl = o->baseline_only ? 1 : 2;
	int rc = -1, started = 0;
	struct gemv g = {0};
	struct pool p;
	struct worker_arg *wa = NULL;
	uint16_t *y[2] = {NULL, NULL};
	double *ref = NULL, *tb[2] = {NULL, NULL}, *te[2] = {NULL, NULL};
	float *yf = NULL, *yf2 = NULL;

	for (int i = 0; i < 256; i++)
		gemv_e4m3_lut[i] = bg_e4m3_to_f((uint8_t)i);
	snprintf(rep->device, sizeof rep->device, "cpu");
	cpu_model(rep->device_name, sizeof rep->device_name);
	rep->units = cpu_count();
	rep->units_key = "cpus";
	rep->timer = "clock_gettime(CLOCK_MONOTONIC)";
	rep->timer_res_ns = clock_step_ns();
	rep->l2_copies = 1;

	g.n = n;
	g.k = k;
	g.ks = k / BG_FP8_BLOCK;
	g.dtype = o->dtype;
	g.seed = o->seed;
	/* the kernels' bounds: they run unchecked in a sanitizer build (demo_cpu_kernels.h) */
	if (n < 1 || k < BG_FP8_BLOCK || k % BG_FP8_BLOCK) {
		snprintf(rep->error, sizeof rep->error,
			 "shape %s: K must be a positive multiple of %d", o->shape->name,
			 BG_FP8_BLOCK);
		goto out;
	}
	if (o->dtype == DEMO_FP8 && n % 4) {
		snprintf(rep->error, sizeof rep->error, "shape %s does not fit fp8 128x128 blocks",
			 o->shape->name);
		goto out;
	}
	size_t wn = (size_t)n * (size_t)k;
	size_t sn = (size_t)((n + BG_FP8_BLOCK - 1) / BG_FP8_BLOCK) * (size_t)g.ks;
	if (o->dtype == DEMO_BF16)
		g.wb = malloc(wn * sizeof *g.wb);
	else {
		g.w8 = malloc(wn);
		g.sc = malloc(sn * sizeof *g.sc);
	}
	g.x = malloc((size_t)k * sizeof *g.x);
	ref = malloc((size_t)n * sizeof *ref);
	yf = malloc((size_t)n * sizeof *yf);
	yf2 = malloc((size_t)n * sizeof *yf2);
	for (int i = 0; i < 2; i++) {
		y[i] = malloc((size_t)n * sizeof *y[i]);
		tb[i] = calloc((size_t)total * (size_t)nw, sizeof *tb[i]);
		te[i] = calloc((size_t)total * (size_t)nw, sizeof *te[i]);
	}
	if ((!g.wb && !g.w8) || (o->dtype == DEMO_FP8 && !g.sc) || !g.x || !ref || !yf || !yf2 ||
	    !y[0] || !y[1] || !tb[0] || !tb[1] || !te[0] || !te[1]) {
		snprintf(rep->error, sizeof rep->error, "out of memory for shape %s",
			 o->shape->name);
		goto out;
	}
	rep->bytes = (double)wn * (o->dtype == DEMO_BF16 ? 2.0 : 1.0) +
		     (o->dtype == DEMO_FP8 ? (double)sn * 4.0 : 0.0) + 2.0 * k + 2.0 * n;

	/* the pool */
	memset(&p, 0, sizeof p);
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.go, NULL);
	pthread_cond_init(&p.done, NULL);
	p.nw = nw;
	p.g = &g;
	p.th = calloc((size_t)nw, sizeof *p.th);
	wa = calloc((size_t)nw, sizeof *wa);
	if (!p.th || !wa) {
		snprintf(rep->error, sizeof rep->error, "out of memory for %d workers", nw);
		goto out_pool;
	}
	for (; started < nw; started++) {
		wa[started].p = &p;
		wa[started].id = started;
		if (pthread_create(&p.th[started], NULL, worker_main, &wa[started]) != 0) {
			snprintf(rep->error, sizeof rep->error, "cannot start worker %d", started);
			goto out_pool;
		}
	}

	/* inputs and the fp64 reference (sequential in k, an order no implementation uses) */
	pool_run(&p, job_generate);
	for (int i = 0; i < k; i++)
		g.x[i] = bg_gen_x(o->seed, (uint64_t)i);
	if (g.sc)
		for (size_t i = 0; i < sn; i++)
			g.sc[i] = bg_gen_scale(o->seed, i);
	for (int r = 0; r < n; r++) {
		double acc = 0.0;
		size_t base = (size_t)r * (size_t)k;
		for (int c = 0; c < k; c++) {
			double wv =
				o->dtype == DEMO_BF16
					? (double)bg_bf2f(g.wb[base + c])
					: (double)gemv_e4m3_lut[g.w8[base + c]] *
						  (double)g.sc[(size_t)(r / BG_FP8_BLOCK) * g.ks +
							       (size_t)(c / BG_FP8_BLOCK)];
			acc += wv * (double)bg_bf2f(g.x[c]);
		}
		ref[r] = acc;
	}
	rep->copy_gbps = copy_gbps();

	struct demo_impl *impl[2] = {&rep->base, &rep->cand};
	enum demo_variant var[2] = {DEMO_V_BASELINE, o->variant};

	/* correctness on poisoned outputs (0xFFFF is a bf16 NaN) */
	for (int m = 0; m < nimpl; m++) {
		memset(y[m], 0xFF, (size_t)n * sizeof *y[m]);
		p.variant = var[m];
		p.y = y[m];
		p.tb = p.te = NULL;
		if (var[m] == DEMO_V_HANG) {
			fprintf(stderr, "boxgate-demo-gate: variant hang: spinning until killed\n");
			fflush(stderr);
		}
		pool_run(&p, job_gemv);
		to_float(y[m], yf, n);
		demo_compare(yf, ref, n, &impl[m]->cos, &impl[m]->relerr, &impl[m]->nonfinite);
	}

	/* warm-up and timed launches, baseline and candidate interleaved, order alternating */
	for (int it = 0; it < total; it++) {
		for (int j = 0; j < nimpl; j++) {
			int m = (it & 1) ? nimpl - 1 - j : j;
			p.variant = var[m];
			p.y = y[m];
			p.tb = tb[m] + (size_t)it * (size_t)nw;
			p.te = te[m] + (size_t)it * (size_t)nw;
			pool_run(&p, job_gemv);
		}
	}
	for (int m = 0; m < nimpl; m++) {
		double cosv, rel;
		long bad;
		to_float(y[m], yf, n);
		demo_compare(yf, ref, n, &cosv, &rel, &bad);
		impl[m]->cos_after = cosv;
		if (bad > impl[m]->nonfinite)
			impl[m]->nonfinite = bad;
		const size_t off = (size_t)o->warmup * (size_t)nw;
		demo_reduce_spans(tb[m] + off, te[m] + off, tb[m] + off, te[m] + off, o->iters, nw,
				  rep->timer_res_ns, impl[m]);
		impl[m]->variant = var[m];
		if (impl[m]->wall_us > 0) {
			impl[m]->gbps = rep->bytes / (impl[m]->wall_us * 1e3);
			impl[m]->bw_frac = rep->copy_gbps > 0 ? impl[m]->gbps / rep->copy_gbps : 0;
		}
	}
	if (nimpl == 2) {
		to_float(y[0], yf, n);
		to_float(y[1], yf2, n);
		rep->cos_base_cand = demo_cos_ff(yf, yf2, n);
	}
	rc = 0;

out_pool:
	pthread_mutex_lock(&p.mu);
	p.quit = 1;
	pthread_cond_broadcast(&p.go);
	pthread_mutex_unlock(&p.mu);
	for (int i = 0; i < started; i++)
		pthread_join(p.th[i], NULL);
	pthread_mutex_destroy(&p.mu);
	pthread_cond_destroy(&p.go);
	pthread_cond_destroy(&p.done);
	free(p.th);
	free(wa);
out:
	free(g.wb);
	free(g.w8);
	free(g.sc);
	free(g.x);
	free(ref);
	free(yf);
	free(yf2);
	for (int i = 0; i < 2; i++) {
		free(y[i]);
		free(tb[i]);
		free(te[i]);
	}
	return rc;
}

static const struct demo_backend cpu_backend = {
	.name = "cpu",
	.default_iters = 40,
	.default_warmup = 3,
	.max_workers = 512,
	.gpu_knobs = 0,
	.default_workers = cpu_default_workers,
	.probe = cpu_probe,
	.probe_timers = NULL,
	.run = cpu_run,
};

int main(int argc, char **argv)
{
	return demo_main(argc, argv, &cpu_backend);
}
