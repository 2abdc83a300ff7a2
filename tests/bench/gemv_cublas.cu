// The demo gate's GEMV against cuBLAS, the library PyTorch calls for `W @ x` (bf16, M=1:
// cublasGemmEx with op(W) = T, n = 1, fp32 compute). Both are timed the same way: CUDA
// events around many back-to-back launches on one stream, after a warm-up. Two
// conditions: "hot" (one weight buffer, as a PyTorch loop over the same W measures) and
// "cold" (launches rotate over weight copies that together exceed the L2 four times, as a
// decode step sees). Also measures the device copy bandwidth (read + write).
//
// usage: gemv-cublas [--iters N] [--shapes a,b,...] [--nw a,b,...]
// Prints one GEMV_BENCH {...} line per (shape, condition, implementation), then a table.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gate/demo/gemv_kernels.cuh"

#define CK(x)                                                                                   \
	do {                                                                                    \
		cudaError_t e_ = (x);                                                           \
		if (e_ != cudaSuccess) {                                                        \
			fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
			exit(1);                                                                \
		}                                                                               \
	} while (0)
#define CB(x)                                                                  \
	do {                                                                   \
		cublasStatus_t s_ = (x);                                       \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                             \
			fprintf(stderr, "%s:%d %s: status %d\n", __FILE__, __LINE__, #x, (int)s_); \
			exit(1);                                               \
		}                                                              \
	} while (0)

struct Shape {
	const char *name;
	int n, k;
};
static const Shape kShapes[] = {{"q_a", 1536, 7168}, {"q_b", 24576, 1536}, {"kv_a", 576, 7168}, {"o_proj", 7168, 16384}};

static std::vector<std::string> split(const char *s)
{
	std::vector<std::string> v;
	std::string cur;
	for (; *s; s++) {
		if (*s == ',') {
			v.push_back(cur);
			cur.clear();
		} else
			cur += *s;
	}
	if (!cur.empty())
		v.push_back(cur);
	return v;
}

template <class F>
static double time_us(F &&fn, int iters)
{
	cudaEvent_t a, b;
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	for (int i = 0; i < 100; i++)
		fn(i);
	CK(cudaDeviceSynchronize());
	// three timed batches, the median reported
	std::vector<double> t;
	for (int rep = 0; rep < 3; rep++) {
		CK(cudaEventRecord(a));
		for (int i = 0; i < iters; i++)
			fn(i);
		CK(cudaEventRecord(b));
		CK(cudaEventSynchronize(b));
		float ms = 0;
		CK(cudaEventElapsedTime(&ms, a, b));
		t.push_back(ms * 1e3 / iters);
	}
	CK(cudaGetLastError());
	cudaEventDestroy(a);
	cudaEventDestroy(b);
	std::sort(t.begin(), t.end());
	return t[1];
}

static double cosine(const std::vector<uint16_t> &y, const std::vector<double> &ref)
{
	double d = 0, a = 0, r = 0;
	for (size_t i = 0; i < y.size(); i++) {
		double v = bg_bf2f(y[i]);
		if (!isfinite(v))
			return 0;
		d += v * ref[i];
		a += v * v;
		r += ref[i] * ref[i];
	}
	return (a > 0 && r > 0) ? d / sqrt(a * r) : 0;
}

int main(int argc, char **argv)
{
	int iters = 2000;
	std::vector<std::string> shapes = {"q_a", "q_b", "kv_a", "o_proj"};
	std::vector<int> nws = {128, 132};
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--shapes") && i + 1 < argc)
			shapes = split(argv[++i]);
		else if (!strcmp(argv[i], "--nw") && i + 1 < argc) {
			nws.clear();
			for (auto &s : split(argv[++i]))
				nws.push_back(atoi(s.c_str()));
		} else {
			fprintf(stderr, "usage: gemv-cublas [--iters N] [--shapes a,b] [--nw a,b]\n");
			return 2;
		}
	}
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		fprintf(stderr, "gemv-cublas: no usable CUDA device\n");
		return 69;
	}
	cudaDeviceProp prop;
	CK(cudaGetDeviceProperties(&prop, 0));
	cublasHandle_t h;
	CB(cublasCreate(&h));
	int ver = 0;
	cublasGetVersion(h, &ver);

	// copy bandwidth
	double copy_tbs = 0;
	{
		const size_t bytes = 1ull << 30;
		char *a, *b;
		CK(cudaMalloc(&a, bytes));
		CK(cudaMalloc(&b, bytes));
		CK(cudaMemset(a, 1, bytes));
		double us = time_us([&](int) { cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice); }, 20);
		copy_tbs = 2.0 * bytes / (us * 1e-6) / 1e12;
		cudaFree(a);
		cudaFree(b);
	}
	printf("GEMV_BENCH {\"device\":\"%s\",\"sm_count\":%d,\"l2_bytes\":%d,\"cublas_version\":%d,\"copy_tbs\":%.3f,\"iters\":%d}\n",
	       prop.name, prop.multiProcessorCount, prop.l2CacheSize, ver, copy_tbs, iters);

	struct Row {
		std::string shape;
		double cub[2], ours[2];
		int best_nw[2];
		bgk::Plan plan[2];
		double bytes;
	};
	std::vector<Row> rows;
	for (auto &sn : shapes) {
		const Shape *s = nullptr;
		for (auto &c : kShapes)
			if (sn == c.name)
				s = &c;
		if (!s) {
			fprintf(stderr, "unknown shape %s\n", sn.c_str());
			return 2;
		}
		const int n = s->n, k = s->k, kb = k / 256;
		const size_t wbytes = (size_t)n * k * 2;
		const int copies = std::max(2, (int)ceil(4.0 * prop.l2CacheSize / (double)wbytes));
		uint16_t *w, *x, *y;
		double *ref;
		float *partial;
		unsigned *counters;
		CK(cudaMalloc(&w, wbytes * copies));
		CK(cudaMalloc(&x, k * 2));
		CK(cudaMalloc(&y, n * 2));
		CK(cudaMalloc(&ref, n * sizeof(double)));
		CK(cudaMalloc(&partial, (size_t)64 * n * sizeof(float)));
		CK(cudaMalloc(&counters, n * sizeof(unsigned)));
		CK(cudaMemset(counters, 0, n * sizeof(unsigned)));
		const uint64_t seed = 12345;
		bgk::gen_w_bf16<<<1024, 256>>>(w, (size_t)n * k, seed);
		bgk::gen_x_scales<<<64, 256>>>(x, k, nullptr, 0, seed);
		for (int c = 1; c < copies; c++)
			CK(cudaMemcpy((char *)w + c * wbytes, w, wbytes, cudaMemcpyDeviceToDevice));
		bgk::reference_fp64<<<(n + 63) / 64, 64>>>(w, nullptr, x, ref, n, k, 0);
		CK(cudaDeviceSynchronize());
		std::vector<double> href(n);
		std::vector<uint16_t> hy(n);
		CK(cudaMemcpy(href.data(), ref, n * sizeof(double), cudaMemcpyDeviceToHost));

		Row row;
		row.shape = sn;
		row.bytes = (double)wbytes + 2.0 * k + 2.0 * n;
		const float alpha = 1.0f, beta = 0.0f;
		for (int cold = 0; cold < 2; cold++) {
			const int nc = cold ? copies : 1;
			auto cub = [&](int i) {
				const uint16_t *wi = (const uint16_t *)((const char *)w + (size_t)(i % nc) * wbytes);
				cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, 1, k, &alpha, wi, CUDA_R_16BF, k, x, CUDA_R_16BF, k,
					     &beta, y, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
			};
			CK(cudaMemset(y, 0xFF, n * 2));
			cub(0);
			CK(cudaDeviceSynchronize());
			CK(cudaMemcpy(hy.data(), y, n * 2, cudaMemcpyDeviceToHost));
			const double cub_cos = cosine(hy, href);
			row.cub[cold] = time_us(cub, iters);
			printf("GEMV_BENCH {\"shape\":\"%s\",\"l2\":\"%s\",\"impl\":\"cublas\",\"us\":%.3f,\"gbps\":%.1f,\"cos\":%.7f,\"copies\":%d}\n",
			       sn.c_str(), cold ? "cold" : "hot", row.cub[cold], row.bytes / (row.cub[cold] * 1e3), cub_cos, nc);
			row.ours[cold] = 1e30;
			for (int nw : nws) {
				const bgk::Plan pl = bgk::choose_plan(n, kb, nw, 0, 0);
				auto ours = [&](int i) {
					bgk::Args a;
					a.w = (const char *)w + (size_t)(i % nc) * wbytes;
					a.scales = nullptr;
					a.x = x;
					a.y = y;
					a.partial = partial;
					a.counters = counters;
					a.prof = nullptr;
					a.n = n;
					a.k = k;
					a.splits = pl.splits;
					a.kb_used = kb;
					bgk::launch_candidate(a, false, pl, nw, 0);
				};
				CK(cudaMemset(y, 0xFF, n * 2));
				ours(0);
				CK(cudaDeviceSynchronize());
				CK(cudaMemcpy(hy.data(), y, n * 2, cudaMemcpyDeviceToHost));
				const double our_cos = cosine(hy, href);
				const double us = time_us(ours, iters);
				printf("GEMV_BENCH {\"shape\":\"%s\",\"l2\":\"%s\",\"impl\":\"candidate\",\"nw\":%d,\"rows\":%d,\"split\":%d,\"depth\":%d,"
				       "\"us\":%.3f,\"gbps\":%.1f,\"cos\":%.7f,\"copies\":%d}\n",
				       sn.c_str(), cold ? "cold" : "hot", nw, pl.rows, pl.splits, pl.depth, us, row.bytes / (us * 1e3), our_cos, nc);
				if (us < row.ours[cold]) {
					row.ours[cold] = us;
					row.best_nw[cold] = nw;
					row.plan[cold] = pl;
				}
			}
		}
		rows.push_back(row);
		cudaFree(w);
		cudaFree(x);
		cudaFree(y);
		cudaFree(ref);
		cudaFree(partial);
		cudaFree(counters);
	}
	printf("\n%s, cuBLAS %d, copy %.2f TB/s (read+write), %d launches per timing, median of 3\n", prop.name, ver, copy_tbs, iters);
	printf("| shape | L2 | cuBLAS us | cuBLAS TB/s | candidate us | candidate TB/s | nw | R x S x depth | cuBLAS/candidate |\n");
	printf("|---|---|---|---|---|---|---|---|---|\n");
	for (auto &r : rows)
		for (int c = 0; c < 2; c++)
			printf("| %s | %s | %.2f | %.2f | %.2f | %.2f | %d | %dx%dx%d | %.2fx |\n", r.shape.c_str(), c ? "cold" : "hot", r.cub[c],
			       r.bytes / (r.cub[c] * 1e6), r.ours[c], r.bytes / (r.ours[c] * 1e6), r.best_nw[c], r.plan[c].rows,
			       r.plan[c].splits, r.plan[c].depth, r.cub[c] / r.ours[c]);
	cublasDestroy(h);
	return 0;
}
