/* The CPU twin's timed kernels (demo_cpu_kernels.h). */
#include "gate/demo/demo_cpu_kernels.h"

#include <string.h>

#include "gate/demo/demo_math.h"

float gemv_e4m3_lut[256];

void gemv_row_baseline(const struct gemv *g, int row, uint16_t *y)
{
	float acc = 0.0f;
	if (g->dtype == DEMO_BF16) {
		const uint16_t *w = g->wb + (size_t)row * (size_t)g->k;
		for (int k = 0; k < g->k; k++)
			acc += bg_bf2f(w[k]) * bg_bf2f(g->x[k]);
	} else {
		const uint8_t *w = g->w8 + (size_t)row * (size_t)g->k;
		const float *sc = g->sc + (size_t)(row / BG_FP8_BLOCK) * (size_t)g->ks;
		for (int k = 0; k < g->k; k++)
			acc += gemv_e4m3_lut[w[k]] * sc[k / BG_FP8_BLOCK] * bg_bf2f(g->x[k]);
	}
	y[row] = bg_f2bf(acc);
}

void gemv_rows4_candidate(const struct gemv *g, int r0, int kend, uint16_t *y)
{
	float acc[4][8];
	memset(acc, 0, sizeof acc);
	if (g->dtype == DEMO_BF16) {
		const uint16_t *w0 = g->wb + (size_t)r0 * (size_t)g->k;
		for (int k = 0; k < kend; k += 8) {
			float xv[8];
			for (int j = 0; j < 8; j++)
				xv[j] = bg_bf2f(g->x[k + j]);
			for (int r = 0; r < 4; r++) {
				const uint16_t *w = w0 + (size_t)r * (size_t)g->k + k;
				for (int j = 0; j < 8; j++)
					acc[r][j] += bg_bf2f(w[j]) * xv[j];
			}
		}
	} else {
		const uint8_t *w0 = g->w8 + (size_t)r0 * (size_t)g->k;
		const float *sc = g->sc + (size_t)(r0 / BG_FP8_BLOCK) * (size_t)g->ks;
		for (int kb = 0; kb < kend; kb += BG_FP8_BLOCK) {
			float part[4][8];
			memset(part, 0, sizeof part);
			for (int k = kb; k < kb + BG_FP8_BLOCK; k += 8) {
				float xv[8];
				for (int j = 0; j < 8; j++)
					xv[j] = bg_bf2f(g->x[k + j]);
				for (int r = 0; r < 4; r++) {
					const uint8_t *w = w0 + (size_t)r * (size_t)g->k + k;
					for (int j = 0; j < 8; j++)
						part[r][j] += gemv_e4m3_lut[w[j]] * xv[j];
				}
			}
			float s = sc[kb / BG_FP8_BLOCK];
			for (int r = 0; r < 4; r++)
				for (int j = 0; j < 8; j++)
					acc[r][j] += part[r][j] * s;
		}
	}
	for (int r = 0; r < 4; r++) {
		float s = 0.0f;
		for (int j = 0; j < 8; j++)
			s += acc[r][j];
		y[r0 + r] = bg_f2bf(s);
	}
}
