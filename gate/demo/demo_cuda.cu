// The demo gate's CUDA build: the same front end as the CPU twin (demo_common.c), with
// the kernels of gemv_kernels.cuh measured by their in-kernel profiler. cudart is linked
// statically and NVML is opened with dlopen, so the binary starts on a machine without a
// driver and answers DEMO_EXIT_NODEV there.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <vector>

#include "gate/demo/demo_common.h"
#include "gate/demo/gemv_kernels.cuh"

namespace {

// ---- NVML, opened at run time ----
typedef struct nvmlDevice_st *nvml_dev;
enum { NVML_CLOCK_SM = 1 };

struct Nvml {
	void *lib = nullptr;
	int (*init)(void) = nullptr;
	int (*shutdown)(void) = nullptr;
	int (*by_uuid)(const char *, nvml_dev *) = nullptr;
	int (*by_pci)(const char *, nvml_dev *) = nullptr;
	int (*clock)(nvml_dev, int, unsigned *) = nullptr;
	int (*max_clock)(nvml_dev, int, unsigned *) = nullptr;
	nvml_dev dev = nullptr;
	bool ok = false;

	void open(const cudaDeviceProp &prop, int cuda_dev)
	{
		lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
		if (!lib)
			return;
		init = (int (*)(void))dlsym(lib, "nvmlInit_v2");
		shutdown = (int (*)(void))dlsym(lib, "nvmlShutdown");
		by_uuid = (int (*)(const char *, nvml_dev *))dlsym(lib, "nvmlDeviceGetHandleByUUID");
		by_pci = (int (*)(const char *, nvml_dev *))dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
		clock = (int (*)(nvml_dev, int, unsigned *))dlsym(lib, "nvmlDeviceGetClockInfo");
		max_clock = (int (*)(nvml_dev, int, unsigned *))dlsym(lib, "nvmlDeviceGetMaxClockInfo");
		if (!init || !shutdown || !clock || !max_clock || init() != 0)
			return;
		const unsigned char *u = (const unsigned char *)prop.uuid.bytes;
		char uuid[64];
		snprintf(uuid, sizeof uuid,
			 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
			 u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
			 u[14], u[15]);
		if (by_uuid && by_uuid(uuid, &dev) == 0) {
			ok = true;
			return;
		}
		char pci[32];
		if (by_pci && cudaDeviceGetPCIBusId(pci, sizeof pci, cuda_dev) == cudaSuccess &&
		    by_pci(pci, &dev) == 0)
			ok = true;
	}
	double sm_clock() const
	{
		unsigned mhz = 0;
		return ok && clock(dev, NVML_CLOCK_SM, &mhz) == 0 ? (double)mhz : 0.0;
	}
	double sm_max() const
	{
		unsigned mhz = 0;
		return ok && max_clock(dev, NVML_CLOCK_SM, &mhz) == 0 ? (double)mhz : 0.0;
	}
	~Nvml()
	{
		if (ok)
			shutdown();
		if (lib)
			dlclose(lib);
	}
};

// Samples the SM clock while the timed launches run.
struct Sampler {
	const Nvml *nvml;
	volatile int stop = 0;
	double lo = 1e30, hi = 0;
	pthread_t th;
	bool started = false;
	static void *loop(void *p)
	{
		Sampler *s = (Sampler *)p;
		while (!s->stop) {
			double c = s->nvml->sm_clock();
			if (c > 0) {
				s->lo = std::min(s->lo, c);
				s->hi = std::max(s->hi, c);
			}
			struct timespec ts = {0, 2000000};
			nanosleep(&ts, nullptr);
		}
		return nullptr;
	}
	void start()
	{
		if (nvml->ok)
			started = pthread_create(&th, nullptr, loop, this) == 0;
	}
	void finish()
	{
		stop = 1;
		if (started)
			pthread_join(th, nullptr);
		started = false;
	}
};

// ---- timers ----
__global__ void timer_probe_kernel(unsigned long long *out, int reads, unsigned long long *steps, int nsteps)
{
	// %globaltimer: the steps between distinct successive reads, and the read cost.
	unsigned long long g0 = bgk::globaltimer(), prev = g0, gmin = ~0ull, changes = 0;
	unsigned long long c0 = clock64();
	for (int i = 0; i < reads; i++) {
		unsigned long long g = bgk::globaltimer();
		if (g != prev) {
			unsigned long long d = g - prev;
			if (d < gmin)
				gmin = d;
			if (steps && changes < (unsigned long long)nsteps)
				steps[changes] = d;
			changes++;
			prev = g;
		}
	}
	unsigned long long c1 = clock64();
	out[0] = gmin;
	out[1] = changes;
	out[2] = prev - g0;
	out[3] = c1 - c0;
	// back-to-back reads, cycles per read
	unsigned long long acc = 0;
	c0 = clock64();
#pragma unroll
	for (int i = 0; i < 64; i++)
		acc += bgk::globaltimer();
	c1 = clock64();
	out[4] = (c1 - c0);
	// clock64: the smallest step between successive reads, and the read cost
	unsigned long long cprev = clock64(), cmin = ~0ull;
	for (int i = 0; i < reads; i++) {
		unsigned long long c = clock64();
		if (c != cprev && c - cprev < cmin)
			cmin = c - cprev;
		cprev = c;
	}
	out[5] = cmin;
	c0 = clock64();
#pragma unroll
	for (int i = 0; i < 64; i++)
		acc += clock64();
	c1 = clock64();
	out[6] = (c1 - c0);
	out[7] = acc; // keep the reads
}

// Spins for ns of %globaltimer time; gives the SM clock in cycles per ns.
__global__ void clock_calib_kernel(unsigned long long *out, unsigned long long ns)
{
	unsigned long long g0 = bgk::globaltimer(), c0 = clock64(), g;
	do {
		g = bgk::globaltimer();
	} while (g - g0 < ns);
	unsigned long long c1 = clock64();
	out[0] = g - g0;
	out[1] = c1 - c0;
}

// Every CTA stamps its start on both clocks and its SM id.
__global__ void skew_kernel(unsigned long long *out)
{
	if (threadIdx.x == 0) {
		unsigned smid;
		asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
		unsigned long long g = bgk::globaltimer(), c = clock64();
		out[3 * blockIdx.x] = smid;
		out[3 * blockIdx.x + 1] = g;
		out[3 * blockIdx.x + 2] = c;
	}
}

__global__ void probe_kernel(int *flag) { *flag = 42; }

struct TimerInfo {
	double gt_min_ns, gt_median_ns, gt_read_cycles, clk_min_cycles, clk_read_cycles;
	unsigned long long gt_changes;
};

bool measure_timers(TimerInfo &ti, std::vector<unsigned long long> *steps_out, int reads)
{
	const int nsteps = 4096;
	unsigned long long *d = nullptr, *ds = nullptr;
	if (cudaMalloc(&d, 8 * sizeof *d) != cudaSuccess || cudaMalloc(&ds, nsteps * sizeof *ds) != cudaSuccess)
		return false;
	timer_probe_kernel<<<1, 1>>>(d, reads, ds, nsteps);
	unsigned long long h[8];
	std::vector<unsigned long long> st(nsteps);
	bool ok = cudaDeviceSynchronize() == cudaSuccess &&
		  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess &&
		  cudaMemcpy(st.data(), ds, nsteps * sizeof(unsigned long long), cudaMemcpyDeviceToHost) == cudaSuccess;
	cudaFree(d);
	cudaFree(ds);
	if (!ok)
		return false;
	ti.gt_min_ns = (double)h[0];
	ti.gt_changes = h[1];
	int m = (int)std::min<unsigned long long>(h[1], nsteps);
	st.resize(m);
	if (steps_out)
		*steps_out = st;
	std::sort(st.begin(), st.end());
	ti.gt_median_ns = m ? (double)st[m / 2] : 0.0;
	ti.gt_read_cycles = h[4] / 64.0;
	ti.clk_min_cycles = (double)h[5];
	ti.clk_read_cycles = h[6] / 64.0;
	return true;
}

bool calib_clock(double &cyc_per_ns, unsigned long long ns)
{
	unsigned long long *d = nullptr, h[2];
	if (cudaMalloc(&d, 2 * sizeof *d) != cudaSuccess)
		return false;
	clock_calib_kernel<<<1, 1>>>(d, ns);
	bool ok = cudaDeviceSynchronize() == cudaSuccess &&
		  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess;
	cudaFree(d);
	if (ok && h[0] > 0)
		cyc_per_ns = (double)h[1] / (double)h[0];
	return ok;
}

int cuda_workers(void)
{
	int dev = 0, sms = 0;
	if (cudaGetDevice(&dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
		return 132;
	return sms;
}

int cuda_probe(void)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n == 0) {
		fprintf(stderr, "boxgate-demo-gate-cuda: no usable CUDA device: %s\n",
			e != cudaSuccess ? cudaGetErrorString(e) : "none visible");
		return DEMO_EXIT_NODEV;
	}
	int *d = nullptr, h = 0;
	cudaDeviceProp prop;
	if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess || cudaMalloc(&d, sizeof *d) != cudaSuccess) {
		fprintf(stderr, "boxgate-demo-gate-cuda: device 0 unusable\n");
		return DEMO_EXIT_NODEV;
	}
	probe_kernel<<<1, 1>>>(d);
	e = cudaGetLastError();
	if (e == cudaSuccess)
		e = cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
	cudaFree(d);
	if (e != cudaSuccess || h != 42) {
		fprintf(stderr, "boxgate-demo-gate-cuda: a kernel did not run on %s: %s\n", prop.name,
			cudaGetErrorString(e));
		return DEMO_EXIT_NODEV;
	}
	printf("cuda: %s, %d SMs, compute %d.%d\n", prop.name, prop.multiProcessorCount, prop.major, prop.minor);
	return 0;
}

// --probe-timers: the measurements behind the gate's choice of timer.
int cuda_probe_timers(void)
{
	if (cuda_probe() != 0)
		return DEMO_EXIT_NODEV;
	cudaDeviceProp prop;
	cudaGetDeviceProperties(&prop, 0);
	TimerInfo ti;
	std::vector<unsigned long long> steps;
	double cpn = 0, cpn2 = 0;
	if (!measure_timers(ti, &steps, 200000) || !calib_clock(cpn, 10000000ull) || !calib_clock(cpn2, 10000000ull)) {
		fprintf(stderr, "timer probe failed\n");
		return DEMO_EXIT_INVALID;
	}
	// step histogram
	std::vector<std::pair<unsigned long long, int>> hist;
	for (unsigned long long s : steps) {
		bool found = false;
		for (auto &p : hist)
			if (p.first == s) {
				p.second++;
				found = true;
			}
		if (!found && hist.size() < 16)
			hist.push_back({s, 1});
	}
	// cross-SM skew of clock64 against %globaltimer
	const int blocks = prop.multiProcessorCount * 4;
	unsigned long long *d = nullptr;
	std::vector<unsigned long long> h(3 * blocks);
	cudaMalloc(&d, h.size() * sizeof(unsigned long long));
	skew_kernel<<<blocks, 32>>>(d);
	cudaDeviceSynchronize();
	cudaMemcpy(h.data(), d, h.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost);
	cudaFree(d);
	double gmin = 1e300, gmax = -1e300, omin = 1e300, omax = -1e300;
	unsigned long long gbase = h[1];
	for (int b = 0; b < blocks; b++) {
		double g = (double)(long long)(h[3 * b + 1] - gbase);
		double off = (double)h[3 * b + 2] / cpn - g; // clock64 in ns minus globaltimer
		gmin = std::min(gmin, g);
		gmax = std::max(gmax, g);
		omin = std::min(omin, off);
		omax = std::max(omax, off);
	}
	printf("TIMER_PROBE {\"device\":\"%s\",\"globaltimer\":{\"min_step_ns\":%.0f,\"median_step_ns\":%.0f,"
	       "\"changes\":%llu,\"read_cycles\":%.1f,\"read_ns\":%.2f,\"steps_seen\":[",
	       prop.name, ti.gt_min_ns, ti.gt_median_ns, ti.gt_changes, ti.gt_read_cycles, ti.gt_read_cycles / cpn);
	for (size_t i = 0; i < hist.size(); i++)
		printf("%s[%llu,%d]", i ? "," : "", hist[i].first, hist[i].second);
	printf("]},\"clock64\":{\"min_step_cycles\":%.0f,\"read_cycles\":%.1f,\"cycles_per_ns\":%.4f,"
	       "\"cycles_per_ns_again\":%.4f,\"step_ns\":%.3f},"
	       "\"cross_sm\":{\"ctas\":%d,\"globaltimer_start_spread_ns\":%.0f,"
	       "\"clock64_minus_globaltimer_spread_us\":%.3f}}\n",
	       ti.clk_min_cycles, ti.clk_read_cycles, cpn, cpn2, ti.clk_min_cycles / cpn, blocks, gmax - gmin,
	       (omax - omin) / 1e3);
	return 0;
}

// ---- the gate ----

struct Dev {
	std::vector<void *> ptrs;
	template <class T>
	cudaError_t alloc(T **p, size_t bytes)
	{
		cudaError_t e = cudaMalloc((void **)p, bytes);
		if (e == cudaSuccess)
			ptrs.push_back(*p);
		return e;
	}
	~Dev()
	{
		for (void *p : ptrs)
			cudaFree(p);
	}
};

int fail(struct demo_report *rep, const char *what, cudaError_t e)
{
	snprintf(rep->error, sizeof rep->error, "%s: %s", what, cudaGetErrorString(e));
	return -1;
}

#define CK(call)                                       \
	do {                                           \
		cudaError_t e_ = (call);               \
		if (e_ != cudaSuccess)                 \
			return fail(rep, #call, e_);   \
	} while (0)

struct Impl {
	enum demo_variant v;
	bgk::Plan plan;
	uint16_t *y;
	unsigned long long *prof; // [total][nw][4]
	struct demo_impl *out;
};

double copy_bandwidth(Dev &dev, struct demo_report *rep)
{
	const size_t bytes = 512ull << 20;
	char *a = nullptr, *b = nullptr;
	if (dev.alloc(&a, bytes) != cudaSuccess || dev.alloc(&b, bytes) != cudaSuccess)
		return 0.0;
	cudaMemset(a, 1, bytes);
	cudaEvent_t e0, e1;
	cudaEventCreate(&e0);
	cudaEventCreate(&e1);
	std::vector<double> t;
	for (int i = 0; i < 7; i++) {
		cudaEventRecord(e0);
		cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice);
		cudaEventRecord(e1);
		cudaEventSynchronize(e1);
		float ms = 0;
		cudaEventElapsedTime(&ms, e0, e1);
		if (i >= 2)
			t.push_back(ms);
	}
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	// free early: the gate's own buffers come next
	for (auto it = dev.ptrs.begin(); it != dev.ptrs.end();)
		if (*it == a || *it == b) {
			cudaFree(*it);
			it = dev.ptrs.erase(it);
		} else
			++it;
	(void)rep;
	std::sort(t.begin(), t.end());
	double ms = t[t.size() / 2];
	return ms > 0 ? 2.0 * (double)bytes / (ms * 1e6) : 0.0;
}

// Where the CTAs ran, on stderr (outside the result line): a hash of the grid's
// CTA-to-SM map in the first timed launch, how many launches used another map,
// the SMs in use, and the SM the slowest CTA sat on most often. Two processes
// whose slowCTA differs with the same plan can be told apart by their map.
void say_placement(const char *label, const unsigned long long *hp, const double *se, const double *sb,
		   int count, int nw)
{
	const int W = bgk::PROF_WORDS;
	unsigned long long h = 1469598103934665603ull;
	for (int c = 0; c < nw; c++)
		h = (h ^ (hp[(size_t)W * c + 4] & 0xff)) * 1099511628211ull;
	int moved = 0;
	std::vector<int> slowest_on(256, 0), used(256, 0);
	for (int it = 0; it < count; it++) {
		const unsigned long long *l = hp + (size_t)it * nw * W;
		int same = 1, worst = 0;
		double wspan = -1;
		for (int c = 0; c < nw; c++) {
			if ((l[(size_t)W * c + 4] & 0xff) != (hp[(size_t)W * c + 4] & 0xff))
				same = 0;
			double span = se[(size_t)it * nw + c] - sb[(size_t)it * nw + c];
			if (span > wspan) {
				wspan = span;
				worst = c;
			}
		}
		moved += !same;
		slowest_on[l[(size_t)W * worst + 4] & 0xff]++;
		if (it == 0)
			for (int c = 0; c < nw; c++)
				used[l[(size_t)W * c + 4] & 0xff] = 1;
	}
	int top = 0, nsm = 0, maxsm = 0;
	for (int s = 0; s < 256; s++) {
		if (slowest_on[s] > slowest_on[top])
			top = s;
		if (used[s]) {
			nsm++;
			maxsm = s;
		}
	}
	fprintf(stderr,
		"boxgate-demo-gate-cuda: placement %s: map %016llx, %d of %d launches on another map, "
		"%d SMs used (highest %d), slowest CTA on SM %d in %d launches\n",
		label, h, moved, count, nsm, maxsm, top, slowest_on[top]);
}

int cuda_run(const struct demo_opts *o, struct demo_report *rep)
{
	int ndev = 0;
	cudaError_t e0 = cudaGetDeviceCount(&ndev);
	if (e0 != cudaSuccess || ndev == 0) {
		fprintf(stderr, "boxgate-demo-gate-cuda: no usable CUDA device: %s\n",
			e0 != cudaSuccess ? cudaGetErrorString(e0) : "none visible");
		return DEMO_EXIT_NODEV;
	}
	const int n = o->shape->n, k = o->shape->k, nw = o->num_workers;
	const bool fp8 = o->dtype == DEMO_FP8;
	const int total = o->warmup + o->iters;
	Dev dev;
	Nvml nvml;
	cudaDeviceProp prop;
	CK(cudaSetDevice(0));
	CK(cudaGetDeviceProperties(&prop, 0));
	snprintf(rep->device, sizeof rep->device, "%s", prop.name);
	snprintf(rep->device_name, sizeof rep->device_name, "%s (compute %d.%d)", prop.name, prop.major, prop.minor);
	rep->units = prop.multiProcessorCount;
	rep->units_key = "sm_count";
	nvml.open(prop, 0);

	const int elems = fp8 ? 512 : 256;
	if (k % elems || (fp8 && n % 4)) {
		snprintf(rep->error, sizeof rep->error, "shape %s: K must be a multiple of %d", o->shape->name, elems);
		return -1;
	}
	const int kb = k / elems;

	// timers
	TimerInfo ti;
	double cpn = 0;
	if (!measure_timers(ti, nullptr, 20000) || !calib_clock(cpn, 2000000ull))
		return fail(rep, "timer probe", cudaGetLastError());
	const double gt_res = ti.gt_median_ns;
	const double clk_res = ti.clk_min_cycles / cpn;
	bool use_gt = o->timer == DEMO_TIMER_GLOBAL || (o->timer == DEMO_TIMER_AUTO && gt_res <= 64.0);
	rep->timer = use_gt ? "globaltimer" : "clock64";
	rep->timer_res_ns = use_gt ? gt_res : clk_res;

	rep->copy_gbps = copy_bandwidth(dev, rep);

	// inputs: W copies that together exceed the L2 several times, so that each launch
	// reads its weights from device memory as a decode step does
	const size_t wbytes = (size_t)n * k * (fp8 ? 1 : 2);
	const size_t ns = fp8 ? (size_t)((n + BG_FP8_BLOCK - 1) / BG_FP8_BLOCK) * (k / BG_FP8_BLOCK) : 0;
	const size_t wstride = (wbytes + 255) / 256 * 256;
	const size_t sstride = (ns * sizeof(float) + 255) / 256 * 256;
	int copies = 1;
	if (o->l2_cold) {
		double need = 4.0 * (double)prop.l2CacheSize / (double)(wbytes + ns * 4);
		copies = std::max(2, (int)ceil(need));
	}
	rep->l2_copies = copies;
	rep->bytes = (double)wbytes + ns * 4.0 + 2.0 * k + 2.0 * n;

	uint8_t *w = nullptr;
	float *sc = nullptr, *partial = nullptr;
	uint16_t *x = nullptr, *ybuf = nullptr;
	double *ref = nullptr;
	unsigned *counters = nullptr;
	int *never = nullptr;
	unsigned long long *prof = nullptr;
	CK(dev.alloc(&w, wstride * copies));
	if (fp8)
		CK(dev.alloc(&sc, sstride * copies));
	CK(dev.alloc(&x, (size_t)k * 2));
	CK(dev.alloc(&ybuf, (size_t)n * 2 * 2));
	CK(dev.alloc(&ref, (size_t)n * sizeof(double)));
	CK(dev.alloc(&partial, (size_t)64 * n * sizeof(float)));
	CK(dev.alloc(&counters, (size_t)n * sizeof(unsigned)));
	CK(dev.alloc(&never, sizeof(int)));
	const int slices = std::max(total, 40); // profiler slices per implementation
	CK(dev.alloc(&prof, (size_t)2 * slices * nw * bgk::PROF_WORDS * sizeof(unsigned long long)));
	CK(cudaMemset(counters, 0, (size_t)n * sizeof(unsigned)));
	CK(cudaMemset(never, 0, sizeof(int)));
	if (fp8)
		bgk::gen_w_e4m3<<<1024, 256>>>(w, wbytes, o->seed);
	else
		bgk::gen_w_bf16<<<1024, 256>>>((uint16_t *)w, (size_t)n * k, o->seed);
	bgk::gen_x_scales<<<64, 256>>>(x, k, sc, ns, o->seed);
	CK(cudaGetLastError());
	for (int c = 1; c < copies; c++) {
		CK(cudaMemcpyAsync(w + c * wstride, w, wbytes, cudaMemcpyDeviceToDevice));
		if (fp8)
			CK(cudaMemcpyAsync((char *)sc + c * sstride, sc, ns * 4, cudaMemcpyDeviceToDevice));
	}
	bgk::reference_fp64<<<(n + 63) / 64, 64>>>(w, sc, x, ref, n, k, fp8);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	std::vector<double> href(n);
	CK(cudaMemcpy(href.data(), ref, (size_t)n * sizeof(double), cudaMemcpyDeviceToHost));

	// the implementations
	const int nimpl = o->baseline_only ? 1 : 2;
	Impl impl[2];
	impl[0] = Impl{DEMO_V_BASELINE, bgk::Plan{0, 0, 0}, ybuf, prof, &rep->base};
	impl[1] = Impl{o->variant, bgk::Plan{0, 0, 0}, ybuf + n, prof + (size_t)slices * nw * bgk::PROF_WORDS, &rep->cand};
	if (o->variant == DEMO_V_CANDIDATE || o->variant == DEMO_V_HALFK || o->variant == DEMO_V_NOSPLIT) {
		int kb_used = o->variant == DEMO_V_HALFK ? kb / 2 : kb;
		impl[1].plan = bgk::choose_plan(n, kb_used, nw, o->force_rows,
						o->variant == DEMO_V_NOSPLIT ? 1 : o->force_split, o->force_depth, fp8);
		rep->cand.rows = impl[1].plan.rows;
		rep->cand.split = impl[1].plan.splits;
		rep->cand.depth = impl[1].plan.depth;
	}
	long long launches = 0;
	auto launch = [&](const Impl &m, unsigned long long *slice) -> cudaError_t {
		const int c = (int)(launches++ % copies);
		bgk::Args a;
		a.w = w + c * wstride;
		a.scales = fp8 ? (const float *)((const char *)sc + c * sstride) : nullptr;
		a.x = x;
		a.y = m.y;
		a.partial = partial;
		a.counters = counters;
		a.prof = slice;
		a.n = n;
		a.k = k;
		a.splits = m.plan.splits ? m.plan.splits : 1;
		a.kb_used = m.v == DEMO_V_HALFK ? kb / 2 : kb;
		switch (m.v) {
		case DEMO_V_BASELINE: return bgk::launch_baseline(a, fp8, nw, 0);
		case DEMO_V_STUB: return bgk::launch_stub(a, nw, 0);
		case DEMO_V_HANG:
			bgk::gemv_hang<<<nw, 32>>>(never);
			return cudaGetLastError();
		default: return bgk::launch_candidate(a, fp8, m.plan, nw, 0);
		}
	};
	fprintf(stderr, "boxgate-demo-gate-cuda: %s %s nw=%d candidate=%s rows=%d split=%d depth=%d copies=%d timer=%s\n",
		o->shape->name, fp8 ? "fp8" : "bf16", nw, demo_variant_name(o->variant), impl[1].plan.rows,
		impl[1].plan.splits, impl[1].plan.depth, copies, rep->timer);

	// correctness on poisoned outputs (0xFFFF is a bf16 NaN)
	std::vector<uint16_t> hy(n);
	std::vector<float> yf(n), yf2(n);
	auto check = [&](const Impl &m, double *cosv, double *rel, long *bad) -> int {
		CK(cudaMemcpy(hy.data(), m.y, (size_t)n * 2, cudaMemcpyDeviceToHost));
		for (int i = 0; i < n; i++)
			yf[i] = bg_bf2f(hy[i]);
		demo_compare(yf.data(), href.data(), n, cosv, rel, bad);
		return 0;
	};
	for (int mi = 0; mi < nimpl; mi++) {
		Impl &m = impl[mi];
		CK(cudaMemset(m.y, 0xFF, (size_t)n * 2));
		if (m.v == DEMO_V_HANG) {
			fprintf(stderr, "boxgate-demo-gate: variant hang: spinning until killed\n");
			fflush(stderr);
		}
		CK(launch(m, nullptr));
		CK(cudaDeviceSynchronize());
		if (check(m, &m.out->cos, &m.out->relerr, &m.out->nonfinite))
			return -1;
	}

	// Reduces the profiler slices [first, first + count) of one implementation.
	double cyc_per_ns = cpn;
	auto spans = [&](const unsigned long long *dprof, int first, int count, struct demo_impl *out,
			 const char *label) -> int {
		std::vector<unsigned long long> hp((size_t)count * nw * bgk::PROF_WORDS);
		CK(cudaMemcpy(hp.data(), dprof + (size_t)first * nw * bgk::PROF_WORDS, hp.size() * sizeof(unsigned long long),
			      cudaMemcpyDeviceToHost));
		const size_t cnt = (size_t)count * nw;
		std::vector<double> sb(cnt), se(cnt), wb(cnt), we(cnt);
		unsigned long long base = ~0ull;
		for (size_t j = 0; j < cnt; j++)
			base = std::min(base, hp[bgk::PROF_WORDS * j]);
		for (size_t j = 0; j < cnt; j++) {
			const unsigned long long *r = &hp[bgk::PROF_WORDS * j];
			wb[j] = (double)(r[0] - base);
			we[j] = (double)(r[1] - base);
			if (use_gt) {
				sb[j] = wb[j];
				se[j] = we[j];
			} else {
				sb[j] = 0.0;
				se[j] = (double)(r[3] - r[2]) / cyc_per_ns;
			}
		}
		demo_reduce_spans(sb.data(), se.data(), wb.data(), we.data(), count, nw, rep->timer_res_ns, out);
		if (label)
			say_placement(label, hp.data(), se.data(), sb.data(), count, nw);
		return 0;
	};

	if (o->tune) {
		static const int svals[] = {1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 48, 64};
		const int twarm = 10, titers = 30;
		const bgk::Plan autop = bgk::choose_plan(n, kb, nw, 0, 0, 0, fp8);
		for (int R : {1, 2, 4})
			for (int D : {8, 16})
				for (int S : svals) {
					if (S > kb || n % R || (D == 16 && R != 4))
						continue;
					Impl t{DEMO_V_CANDIDATE, bgk::Plan{R, S, D}, impl[1].y, impl[1].prof, nullptr};
					CK(cudaMemset(t.y, 0xFF, (size_t)n * 2));
					CK(launch(t, nullptr));
					CK(cudaDeviceSynchronize());
					struct demo_impl tr;
					memset(&tr, 0, sizeof tr);
					if (check(t, &tr.cos, &tr.relerr, &tr.nonfinite))
						return -1;
					for (int it = 0; it < twarm + titers; it++)
						CK(launch(t, t.prof + (size_t)it * nw * bgk::PROF_WORDS));
					CK(cudaDeviceSynchronize());
					if (spans(t.prof, twarm, titers, &tr, nullptr))
						return -1;
					printf("TUNE {\"shape\":\"%s\",\"dtype\":\"%s\",\"nw\":%d,\"depth\":%d,\"rows\":%d,\"split\":%d,"
					       "\"slowCTA_us\":%.4f,\"wall_us\":%.4f,\"sumCTA_us\":%.3f,\"rsd_pct\":%.2f,\"cos\":%.7f,\"auto\":%s}\n",
					       o->shape->name, fp8 ? "fp8" : "bf16", nw, D, R, S, tr.slow_us, tr.wall_us, tr.sum_us,
					       tr.rsd_pct, tr.cos,
					       (autop.rows == R && autop.splits == S && autop.depth == D) ? "true" : "false");
				}
		fflush(stdout);
	}

	// warm-up, then the timed launches; baseline and candidate interleaved, order alternating
	Sampler sampler;
	sampler.nvml = &nvml;
	for (int it = 0; it < total; it++) {
		if (it == o->warmup) {
			CK(cudaDeviceSynchronize());
			rep->clk_before = nvml.sm_clock();
			sampler.start();
		}
		for (int j = 0; j < nimpl; j++) {
			const Impl &m = impl[(it & 1) ? nimpl - 1 - j : j];
			CK(launch(m, m.prof + (size_t)it * nw * bgk::PROF_WORDS));
		}
	}
	cudaError_t es = cudaDeviceSynchronize();
	sampler.finish();
	CK(es);
	rep->clk_after = nvml.sm_clock();
	double cpn_after = cpn;
	calib_clock(cpn_after, 2000000ull);
	cyc_per_ns = 0.5 * (cpn + cpn_after);
	if (nvml.ok) {
		rep->have_clocks = 1;
		rep->clk_max = nvml.sm_max();
		rep->clk_min = sampler.lo < 1e29 ? sampler.lo : std::min(rep->clk_before, rep->clk_after);
		rep->clk_min = std::min(rep->clk_min, std::min(rep->clk_before, rep->clk_after));
		rep->throttled = rep->clk_max > 0 && rep->clk_min < 0.75 * rep->clk_max;
	}

	// the spans
	for (int mi = 0; mi < nimpl; mi++) {
		Impl &m = impl[mi];
		if (spans(m.prof, o->warmup, o->iters, m.out, demo_variant_name(m.v)))
			return -1;
		m.out->variant = m.v;
		double cosv, rel;
		long bad;
		if (check(m, &cosv, &rel, &bad))
			return -1;
		m.out->cos_after = cosv;
		m.out->nonfinite = std::max(m.out->nonfinite, bad);
		if (m.out->wall_us > 0) {
			m.out->gbps = rep->bytes / (m.out->wall_us * 1e3);
			m.out->bw_frac = rep->copy_gbps > 0 ? m.out->gbps / rep->copy_gbps : 0.0;
		}
	}
	if (nimpl == 2) {
		CK(cudaMemcpy(hy.data(), impl[0].y, (size_t)n * 2, cudaMemcpyDeviceToHost));
		for (int i = 0; i < n; i++)
			yf2[i] = bg_bf2f(hy[i]);
		CK(cudaMemcpy(hy.data(), impl[1].y, (size_t)n * 2, cudaMemcpyDeviceToHost));
		for (int i = 0; i < n; i++)
			yf[i] = bg_bf2f(hy[i]);
		rep->cos_base_cand = demo_cos_ff(yf.data(), yf2.data(), n);
	}
	return 0;
}

const struct demo_backend cuda_backend = {
	"cuda", 200, 20, 4096, 1, cuda_workers, cuda_probe, cuda_probe_timers, cuda_run,
};

} // namespace

int main(int argc, char **argv) { return demo_main(argc, argv, &cuda_backend); }
