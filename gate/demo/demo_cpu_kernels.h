/* The CPU twin's timed kernels: one GEMV row (the baseline) and four rows at once (the
 * candidate). Built without the sanitizers of a sanitizer build (demo.mk): instrumented
 * loads would time the checks, not the kernel (4x slower, and not by the same factor for
 * baseline and candidate, so a sanitizer suite would judge other ratios than a user's run).
 * Their reads are bounded by the shape, which demo_cpu.c checks before any launch. */
#ifndef BOXGATE_DEMO_CPU_KERNELS_H
#define BOXGATE_DEMO_CPU_KERNELS_H

#include <stdint.h>

#include "gate/demo/demo_common.h"

struct gemv {
	int n, k, ks; /* ks: scale blocks along K; K is a multiple of BG_FP8_BLOCK */
	enum demo_dtype dtype;
	uint16_t *wb;
	uint8_t *w8;
	float *sc;
	uint16_t *x;
	uint64_t seed;
};

/* e4m3 byte -> float, filled by the caller before any launch */
extern float gemv_e4m3_lut[256];

/* y[row] = W[row] . x */
void gemv_row_baseline(const struct gemv *g, int row, uint16_t *y);
/* y[r0..r0+3] over K[0, kend): four rows share each load of x; eight independent
 * accumulators per row. kend is a multiple of 8 (of BG_FP8_BLOCK for fp8). */
void gemv_rows4_candidate(const struct gemv *g, int r0, int kend, uint16_t *y);

#endif
