// The demo gate's kernels: a decode (M = 1) GEMV y = W x on a persistent grid, with the
// per-CTA profiler. Shared by the gate (demo_cuda.cu) and the cuBLAS benchmark.
//
// The grid is production-style: gridDim.x = num_workers, each CTA takes tiles
// blockIdx.x, blockIdx.x + gridDim.x, ... and there is no block barrier inside the tile
// loop (a CTA with fewer tiles leaves early; a barrier there would deadlock a megakernel).
// The only barriers are the profiler's, before the loop and after it.
//
// Layout: W row-major [N][K] (bf16, or e4m3 with one float scale per 128x128 block,
// scales row-major [ceil(N/128)][K/128]); x [K] bf16; y [N] bf16; fp32 accumulation.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

#include "gate/demo/demo_math.h"

namespace bgk {

struct Args {
	const void *w;
	const float *scales;
	const uint16_t *x;
	uint16_t *y;
	float *partial;          // [splits][N] fp32 partial sums when splits > 1
	unsigned *counters;      // [N / rows] arrival counters when splits > 1, kept at zero
	unsigned long long *prof; // [gridDim.x][PROF_WORDS]: globaltimer begin, end; clock64 begin, end; SM id
	int n, k;
	int splits;  // split-K factor S (candidate)
	int kb_used; // K blocks reduced: all of them, or half for the drop-half-K variant
};

__device__ __forceinline__ unsigned long long globaltimer()
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

// Words per CTA in a profiler slice.
constexpr int PROF_WORDS = 5;

// The profiler: thread 0 of each CTA stamps the CTA's body, after a barrier on entry
// and after one on exit (all warps done). Outside the tile loop, so no deadlock risk.
struct Prof {
	unsigned long long g0, c0;
};

__device__ __forceinline__ void prof_begin(const Args &a, Prof &p)
{
	if (a.prof) {
		__syncthreads();
		if (threadIdx.x == 0) {
			p.g0 = globaltimer();
			p.c0 = clock64();
		}
	}
}

__device__ __forceinline__ void prof_end(const Args &a, const Prof &p)
{
	if (a.prof) {
		__syncthreads();
		if (threadIdx.x == 0) {
			unsigned long long c1 = clock64();
			unsigned long long g1 = globaltimer();
			unsigned smid;
			asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
			unsigned long long *r = a.prof + (unsigned long long)PROF_WORDS * blockIdx.x;
			r[0] = p.g0;
			r[1] = g1;
			r[2] = p.c0;
			r[3] = c1;
			r[4] = smid;
		}
	}
}

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ __forceinline__ float fp8_to_float(uint8_t b)
{
	__half_raw h = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)b, __NV_E4M3);
	return __half2float(__half(h));
}

// 16-byte loads: weights are streamed once (no L1 allocation), x is re-read (read-only path).
__device__ __forceinline__ uint4 ld_stream(const void *p)
{
	uint4 v;
	asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
	    : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
	    : "l"(p));
	return v;
}

__device__ __forceinline__ uint4 ld_ro(const void *p) { return __ldg(reinterpret_cast<const uint4 *>(p)); }

__device__ __forceinline__ float bf_lo(uint32_t u) { return __uint_as_float(u << 16); }
__device__ __forceinline__ float bf_hi(uint32_t u) { return __uint_as_float(u & 0xFFFF0000u); }

__device__ __forceinline__ float dot8_bf16(uint4 w, uint4 x, float acc)
{
	acc = fmaf(bf_lo(w.x), bf_lo(x.x), acc);
	acc = fmaf(bf_hi(w.x), bf_hi(x.x), acc);
	acc = fmaf(bf_lo(w.y), bf_lo(x.y), acc);
	acc = fmaf(bf_hi(w.y), bf_hi(x.y), acc);
	acc = fmaf(bf_lo(w.z), bf_lo(x.z), acc);
	acc = fmaf(bf_hi(w.z), bf_hi(x.z), acc);
	acc = fmaf(bf_lo(w.w), bf_lo(x.w), acc);
	acc = fmaf(bf_hi(w.w), bf_hi(x.w), acc);
	return acc;
}

// 4 e4m3 weights (one 32-bit word) against 4 bf16 activations (two words).
__device__ __forceinline__ float dot4_fp8(uint32_t w, uint32_t x01, uint32_t x23, float acc)
{
	__half2_raw lo = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(w & 0xFFFFu), __NV_E4M3);
	__half2_raw hi = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(w >> 16), __NV_E4M3);
	float2 a = __half22float2(__half2(lo));
	float2 b = __half22float2(__half2(hi));
	acc = fmaf(a.x, bf_lo(x01), acc);
	acc = fmaf(a.y, bf_hi(x01), acc);
	acc = fmaf(b.x, bf_lo(x23), acc);
	acc = fmaf(b.y, bf_hi(x23), acc);
	return acc;
}

// 16 e4m3 weights against 16 bf16 activations.
__device__ __forceinline__ float dot16_fp8(uint4 w, uint4 x0, uint4 x1)
{
	float acc = 0.0f;
	acc = dot4_fp8(w.x, x0.x, x0.y, acc);
	acc = dot4_fp8(w.y, x0.z, x0.w, acc);
	acc = dot4_fp8(w.z, x1.x, x1.y, acc);
	acc = dot4_fp8(w.w, x1.z, x1.w, acc);
	return acc;
}

// ---- the in-tree baseline: a warp per row, scalar loads; a tile is one row per warp ----
template <bool FP8>
__global__ void __launch_bounds__(256) gemv_baseline(Args a)
{
	Prof p;
	prof_begin(a, p);
	const int warps = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	const int ntiles = (a.n + warps - 1) / warps;
	for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
		const int row = t * warps + warp;
		if (row >= a.n)
			continue;
		float acc = 0.0f;
		if (!FP8) {
			const uint16_t *w = static_cast<const uint16_t *>(a.w) + (size_t)row * a.k;
			for (int k = lane; k < a.k; k += 32)
				acc += bg_bf2f(w[k]) * bg_bf2f(a.x[k]);
		} else {
			const uint8_t *w = static_cast<const uint8_t *>(a.w) + (size_t)row * a.k;
			const float *sc = a.scales + (size_t)(row / BG_FP8_BLOCK) * (a.k / BG_FP8_BLOCK);
			for (int k = lane; k < a.k; k += 32)
				acc += fp8_to_float(w[k]) * sc[k / BG_FP8_BLOCK] * bg_bf2f(a.x[k]);
		}
		acc = warp_sum(acc);
		if (lane == 0)
			a.y[row] = bg_f2bf(acc);
	}
	prof_end(a, p);
}

// ---- the candidate: 16-byte loads, R rows per warp, split-K over the grid ----
//
// A work unit is (row group g of R rows, K chunk s of S): a warp reduces its R rows over
// its chunk in batches of U = D / R blocks, the D 16-byte weight loads of a batch all in
// flight before the first use; the tail goes in batches of U/2, U/4, ... blocks. A tile is WARPS consecutive units, one per warp. With S > 1 each warp
// writes its R fp32 partials and bumps the group's arrival counter; the warp that arrives
// last sums the S partials in a fixed order (deterministic), writes y and re-arms the
// counter. Nothing waits for anything, so an early-exiting CTA can never deadlock another.
constexpr int kWarps = 16;

template <bool FP8>
struct Blk {
	static constexpr int elems = FP8 ? 512 : 256; // K elements a warp covers per 16 B lane load
};

// One batch of U blocks starting at block kb; with PRED, blocks at or past kb1 read nothing
// and contribute zeros.
template <bool PRED, int R, int U>
__device__ __forceinline__ void batch_bf16(const uint16_t *w, const uint16_t *x, int k, int kb, int kb1, float (&acc)[R])
{
	constexpr int E = Blk<false>::elems;
	uint4 xv[U], wv[U][R];
#pragma unroll
	for (int j = 0; j < U; j++)
#pragma unroll
		for (int r = 0; r < R; r++)
			wv[j][r] = (!PRED || kb + j < kb1) ? ld_stream(w + (size_t)r * k + (size_t)(kb + j) * E) : make_uint4(0, 0, 0, 0);
#pragma unroll
	for (int j = 0; j < U; j++)
		xv[j] = (!PRED || kb + j < kb1) ? ld_ro(x + (size_t)(kb + j) * E) : make_uint4(0, 0, 0, 0);
#pragma unroll
	for (int j = 0; j < U; j++)
#pragma unroll
		for (int r = 0; r < R; r++)
			acc[r] = dot8_bf16(wv[j][r], xv[j], acc[r]);
}

template <bool PRED, int R, int U>
__device__ __forceinline__ void batch_fp8(const uint8_t *w, const uint16_t *x, const float *sc, int k, int kb, int kb1, float (&acc)[R])
{
	constexpr int E = Blk<true>::elems;
	uint4 wv[U][R], x0[U], x1[U];
	float sv[U];
#pragma unroll
	for (int j = 0; j < U; j++)
#pragma unroll
		for (int r = 0; r < R; r++)
			wv[j][r] = (!PRED || kb + j < kb1) ? ld_stream(w + (size_t)r * k + (size_t)(kb + j) * E) : make_uint4(0, 0, 0, 0);
#pragma unroll
	for (int j = 0; j < U; j++) {
		const bool v = !PRED || kb + j < kb1;
		x0[j] = v ? ld_ro(x + (size_t)(kb + j) * E) : make_uint4(0, 0, 0, 0);
		x1[j] = v ? ld_ro(x + (size_t)(kb + j) * E + 8) : make_uint4(0, 0, 0, 0);
		sv[j] = v ? __ldg(sc + (kb + j) * (E / BG_FP8_BLOCK)) : 0.0f;
	}
#pragma unroll
	for (int j = 0; j < U; j++)
#pragma unroll
		for (int r = 0; r < R; r++)
			acc[r] = fmaf(dot16_fp8(wv[j][r], x0[j], x1[j]), sv[j], acc[r]);
}

template <bool FP8, int R, int D>
__global__ void __launch_bounds__(kWarps * 32, 1) gemv_candidate(Args a)
{
	constexpr int U = D / R;
	Prof p;
	prof_begin(a, p);
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	const int S = a.splits;
	const int groups = a.n / R;
	const int units = groups * S;
	const int ntiles = (units + kWarps - 1) / kWarps;
	for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
		const int u = t * kWarps + warp;
		if (u >= units)
			continue;
		const int g = u / S, s = u - g * S;
		const int kb0 = (int)((long long)s * a.kb_used / S);
		const int kb1 = (int)((long long)(s + 1) * a.kb_used / S);
		const int row0 = g * R;
		float acc[R];
#pragma unroll
		for (int r = 0; r < R; r++)
			acc[r] = 0.0f;
		int kb = kb0;
		// Full batches of U blocks, then the tail in unpredicated batches of U/2, U/4, ...
		// blocks, so that every batch issues all its loads before its first use.
		if (!FP8) {
			const uint16_t *w = static_cast<const uint16_t *>(a.w) + (size_t)row0 * a.k + lane * 8;
			const uint16_t *x = a.x + lane * 8;
			for (; kb + U <= kb1; kb += U)
				batch_bf16<false, R, U>(w, x, a.k, kb, kb1, acc);
			if (U >= 8 && kb + 4 <= kb1) {
				batch_bf16<false, R, (U >= 8 ? 4 : 1)>(w, x, a.k, kb, kb1, acc);
				kb += (U >= 8 ? 4 : 1);
			}
			if (U >= 4 && kb + 2 <= kb1) {
				batch_bf16<false, R, (U >= 4 ? 2 : 1)>(w, x, a.k, kb, kb1, acc);
				kb += (U >= 4 ? 2 : 1);
			}
			if (kb < kb1)
				batch_bf16<false, R, 1>(w, x, a.k, kb, kb1, acc);
		} else {
			// A lane's 16 weights lie in one 128-wide scale block; R divides 128, so the
			// R rows of a group share their scales too.
			const uint8_t *w = static_cast<const uint8_t *>(a.w) + (size_t)row0 * a.k + lane * 16;
			const uint16_t *x = a.x + lane * 16;
			const float *sc = a.scales + (size_t)(row0 / BG_FP8_BLOCK) * (a.k / BG_FP8_BLOCK) + lane / 8;
			for (; kb + U <= kb1; kb += U)
				batch_fp8<false, R, U>(w, x, sc, a.k, kb, kb1, acc);
			if (U >= 8 && kb + 4 <= kb1) {
				batch_fp8<false, R, (U >= 8 ? 4 : 1)>(w, x, sc, a.k, kb, kb1, acc);
				kb += (U >= 8 ? 4 : 1);
			}
			if (U >= 4 && kb + 2 <= kb1) {
				batch_fp8<false, R, (U >= 4 ? 2 : 1)>(w, x, sc, a.k, kb, kb1, acc);
				kb += (U >= 4 ? 2 : 1);
			}
			if (kb < kb1)
				batch_fp8<false, R, 1>(w, x, sc, a.k, kb, kb1, acc);
		}
		float mine = 0.0f;
#pragma unroll
		for (int r = 0; r < R; r++) {
			float v = warp_sum(acc[r]);
			if (lane == r)
				mine = v;
		}
		if (S == 1) {
			if (lane < R)
				a.y[row0 + lane] = bg_f2bf(mine);
			continue;
		}
		if (lane < R)
			a.partial[(size_t)s * a.n + row0 + lane] = mine;
		__threadfence();
		__syncwarp();
		unsigned prev = 0;
		if (lane == 0)
			prev = atomicAdd(&a.counters[g], 1u);
		prev = __shfl_sync(0xffffffffu, prev, 0);
		if (prev == (unsigned)S - 1) {
			__threadfence();
			if (lane < R) {
				float sum = 0.0f;
				for (int q = 0; q < S; q++)
					sum += __ldcg(&a.partial[(size_t)q * a.n + row0 + lane]);
				a.y[row0 + lane] = bg_f2bf(sum);
			}
			if (lane == 0)
				a.counters[g] = 0;
		}
	}
	prof_end(a, p);
}

// ---- the stub: writes zeros; the gate must judge it INVALID ----
__global__ void __launch_bounds__(256) gemv_stub(Args a)
{
	Prof p;
	prof_begin(a, p);
	for (int row = blockIdx.x * blockDim.x + threadIdx.x; row < a.n; row += gridDim.x * blockDim.x)
		a.y[row] = 0;
	prof_end(a, p);
}

// ---- hang: spins until the process is killed (watchdog tests) ----
__global__ void gemv_hang(const volatile int *never)
{
	while (*never == 0)
		__nanosleep(1000);
}

// ---- the plan: rows per warp, split-K and load depth for a shape and a grid ----
struct Plan {
	int rows, splits, depth;
};

// The model behind the plan, fitted to a run of every plan on every shape and grid on an
// H200 (gate/demo/README.md): a roofline per CTA. A unit costs a fixed latency (its first
// loads and its reduction) plus its bytes at one SM's streaming rate; a CTA's time is its
// tile count times that, but never less than the whole matrix at the device's rate;
// splitting K adds a handoff.
// Ties: a bf16 plan whose busiest CTA needs at most bw_slack of the device-rate time is
// bandwidth-bound with room to spare; there the fewest concurrent row streams win (fewest rows
// per warp, 8 loads in flight): measured 4-6% faster and steadier across processes at 128-132
// workers (o_proj R1 S1: 54.9 us, CV 0.6%, against R4 S1 D16: 57.9 us, CV 2.2%). fp8, whose
// dequantisation keeps the SM busy, keeps the deep plan. Otherwise the least busy CTA wins, then
// the fewer rows per warp.
struct PlanModel {
	double unit_us = 1.5, split_us = 0.5, sm_gbps = 80.0, hbm_gbps = 3500.0, bw_slack = 0.6;
};

inline Plan choose_plan(int n, int kb, int nw, int force_rows, int force_split, int force_depth = 0,
			bool fp8 = false, PlanModel m = PlanModel())
{
	const double blk = 512.0; // bytes one warp moves per block: 32 lanes x 16 B
	Plan best{1, 1, 8};
	double best_cost = 1e300, best_busy = 1e300;
	int best_cls = 1 << 30, best_r = 1 << 30;
	const double floor_us = (double)n * kb * blk / (m.hbm_gbps * 1e3);
	const int rows_opts[3] = {4, 2, 1};
	for (int ri = 0; ri < 3; ri++) {
		const int R = rows_opts[ri];
		if ((force_rows && R != force_rows) || n % R)
			continue;
		const int smax = kb < 64 ? kb : 64;
		for (int S = 1; S <= smax; S++) {
			if (force_split && S != force_split)
				continue;
			const long long units = (long long)(n / R) * S;
			const long long ntiles = (units + kWarps - 1) / kWarps;
			const long long per_cta = (ntiles + nw - 1) / nw;
			const int chunk = (kb + S - 1) / S;
			const double tile_us = (double)R * chunk * kWarps * blk / (m.sm_gbps * 1e3) + m.unit_us;
			const double work = (double)per_cta * tile_us;
			const double busy = work + (S > 1 ? m.split_us : 0.0);
			const double cost = (work > floor_us ? work : floor_us) + (S > 1 ? m.split_us : 0.0);
			const bool bw = !fp8 && work <= m.bw_slack * floor_us;
			const int cls = bw ? R : 1000; // bandwidth-bound with slack: fewest row streams first
			bool better = cost < best_cost - 1e-9;
			if (!better && cost < best_cost + 1e-9) {
				if (cls != best_cls)
					better = cls < best_cls;
				else if (busy < best_busy - 1e-9)
					better = true;
				else if (busy < best_busy + 1e-9)
					better = R < best_r;
			}
			if (better) {
				best_cost = cost;
				best_busy = busy;
				best_cls = cls;
				best_r = R;
				// four rows deep: 16 loads in flight once a unit has a full batch of 4 blocks,
				// unless the device, not the SM, is the limit
				int depth = (R == 4 && chunk >= 4 && !bw) ? 16 : 8;
				if (force_depth && R == 4)
					depth = force_depth;
				best = Plan{R, S, depth};
			}
		}
	}
	return best;
}

template <bool FP8>
inline cudaError_t launch_candidate_t(const Args &a, const Plan &pl, int nw, cudaStream_t st)
{
	const dim3 block(kWarps * 32);
	if (pl.rows == 1)
		gemv_candidate<FP8, 1, 8><<<nw, block, 0, st>>>(a);
	else if (pl.rows == 2)
		gemv_candidate<FP8, 2, 8><<<nw, block, 0, st>>>(a);
	else if (pl.depth == 16)
		gemv_candidate<FP8, 4, 16><<<nw, block, 0, st>>>(a);
	else
		gemv_candidate<FP8, 4, 8><<<nw, block, 0, st>>>(a);
	return cudaGetLastError();
}

inline cudaError_t launch_candidate(const Args &a, bool fp8, const Plan &pl, int nw, cudaStream_t st)
{
	return fp8 ? launch_candidate_t<true>(a, pl, nw, st) : launch_candidate_t<false>(a, pl, nw, st);
}

inline cudaError_t launch_baseline(const Args &a, bool fp8, int nw, cudaStream_t st)
{
	if (fp8)
		gemv_baseline<true><<<nw, 256, 0, st>>>(a);
	else
		gemv_baseline<false><<<nw, 256, 0, st>>>(a);
	return cudaGetLastError();
}

inline cudaError_t launch_stub(const Args &a, int nw, cudaStream_t st)
{
	gemv_stub<<<nw, 256, 0, st>>>(a);
	return cudaGetLastError();
}

// ---- input generation and the fp64 reference ----
__global__ void gen_w_bf16(uint16_t *w, size_t count, uint64_t seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x)
		w[i] = bg_gen_w_bf16(seed, i);
}

__global__ void gen_w_e4m3(uint8_t *w, size_t count, uint64_t seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x)
		w[i] = bg_gen_w_e4m3(seed, i);
}

__global__ void gen_x_scales(uint16_t *x, int k, float *sc, size_t ns, uint64_t seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (size_t)k || i < ns;
	     i += (size_t)gridDim.x * blockDim.x) {
		if (i < (size_t)k)
			x[i] = bg_gen_x(seed, i);
		if (sc && i < ns)
			sc[i] = bg_gen_scale(seed, i);
	}
}

// One thread per row, sequential over K in fp64, the weights dequantised in software from
// the very bytes the kernels read: an order and a converter no kernel uses.
__global__ void reference_fp64(const void *w, const float *sc, const uint16_t *x, double *out, int n, int k, int fp8)
{
	const int row = blockIdx.x * blockDim.x + threadIdx.x;
	if (row >= n)
		return;
	double acc = 0.0;
	if (!fp8) {
		const uint16_t *wr = static_cast<const uint16_t *>(w) + (size_t)row * k;
		for (int c = 0; c < k; c++)
			acc += (double)bg_bf2f(wr[c]) * (double)bg_bf2f(x[c]);
	} else {
		const uint8_t *wr = static_cast<const uint8_t *>(w) + (size_t)row * k;
		const float *s = sc + (size_t)(row / BG_FP8_BLOCK) * (k / BG_FP8_BLOCK);
		for (int c = 0; c < k; c++)
			acc += (double)bg_e4m3_to_f(wr[c]) * (double)s[c / BG_FP8_BLOCK] * (double)bg_bf2f(x[c]);
	}
	out[row] = acc;
}

} // namespace bgk
