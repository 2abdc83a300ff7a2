/* Number formats and the seeded input generator shared by the demo gate's CPU twin, its
 * CUDA build and the cuBLAS benchmark. Every function here is a pure function of its
 * arguments, so the host, the device and every build produce the same bytes for a seed.
 * Plain C11 when compiled by a C compiler; __host__ __device__ under nvcc. */
#ifndef BOXGATE_DEMO_MATH_H
#define BOXGATE_DEMO_MATH_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define BG_HD __host__ __device__ __forceinline__
#else
#define BG_HD static inline
#endif

BG_HD uint32_t bg_f2u(float f)
{
#ifdef __CUDA_ARCH__
	return __float_as_uint(f);
#else
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
#endif
}

BG_HD float bg_u2f(uint32_t u)
{
#ifdef __CUDA_ARCH__
	return __uint_as_float(u);
#else
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
#endif
}

/* bfloat16 <-> float, round to nearest even (inputs here are always finite). */
BG_HD uint16_t bg_f2bf(float f)
{
	uint32_t u = bg_f2u(f);
	u += 0x7FFFu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

BG_HD float bg_bf2f(uint16_t b)
{
	return bg_u2f((uint32_t)b << 16);
}

/* OCP e4m3 (the "fn" variant: no infinities, S.1111.111 is NaN, largest finite 448),
 * decoded in software so that the reference never depends on the hardware converter the
 * kernels use. */
BG_HD float bg_e4m3_to_f(uint8_t b)
{
	uint32_t e = (b >> 3) & 15u, m = b & 7u;
	float v;
	if (e == 15u && m == 7u)
		v = bg_u2f(0x7FC00000u);
	else if (e == 0u)
		v = (float)m * (1.0f / 512.0f);
	else
		v = bg_u2f(((e + 120u) << 23) | (m << 20));
	return (b & 0x80u) ? -v : v;
}

/* float -> e4m3, round to nearest even, saturating at +-448 (never produces NaN). */
BG_HD uint8_t bg_f_to_e4m3(float f)
{
	uint32_t u = bg_f2u(f);
	uint32_t sign = (u >> 24) & 0x80u;
	uint32_t a = u & 0x7FFFFFFFu;
	uint32_t code;
	if (a >= 0x43E00000u) { /* >= 448 */
		code = 0x7Eu;
	} else if (a < 0x3C800000u) {         /* < 2^-6: subnormal step 2^-9 */
		float q = bg_u2f(a) * 512.0f; /* exact: a power-of-two scale */
		uint32_t m = (uint32_t)q;
		float rem = q - (float)m;
		if (rem > 0.5f || (rem == 0.5f && (m & 1u)))
			m++;
		code = m; /* m == 8 is the smallest normal, code 0x08 */
	} else {
		uint32_t e = (a >> 23) - 120u; /* biased e4m3 exponent, >= 1 */
		uint32_t mant = a & 0x7FFFFFu;
		uint32_t r = mant >> 20, rem = mant & 0xFFFFFu;
		if (rem > 0x80000u || (rem == 0x80000u && (r & 1u)))
			r++;
		if (r == 8u) {
			r = 0;
			e++;
		}
		code = (e << 3) | r;
		if (code > 0x7Eu)
			code = 0x7Eu;
	}
	return (uint8_t)(sign | code);
}

/* splitmix64 of (seed, index): a counter-based generator, so any thread can produce any
 * element without sharing state. */
BG_HD uint64_t bg_hash(uint64_t seed, uint64_t i)
{
	uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* Uniform in [-1, 1), 24 random bits. */
BG_HD float bg_uniform(uint64_t seed, uint64_t i)
{
	return (float)(bg_hash(seed, i) >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

/* The inputs, element by element. Weights and activations are uniform in [-1, 1); fp8
 * weights are the e4m3 codes of a uniform in [-448, 448) (each 128x128 block uses the whole
 * e4m3 range, as a per-block absmax quantiser would) and the per-block scales are drawn in
 * [0.5, 1.5)/448, left unrounded as a real checkpoint's would be. */
#define BG_SEED_W(seed) ((seed) ^ 0x5745494748545321ull)
#define BG_SEED_X(seed) ((seed) ^ 0x4143544956415445ull)
#define BG_SEED_S(seed) ((seed) ^ 0x5343414c45535321ull)

BG_HD uint16_t bg_gen_w_bf16(uint64_t seed, uint64_t i)
{
	return bg_f2bf(bg_uniform(BG_SEED_W(seed), i));
}
BG_HD uint8_t bg_gen_w_e4m3(uint64_t seed, uint64_t i)
{
	return bg_f_to_e4m3(bg_uniform(BG_SEED_W(seed), i) * 448.0f);
}
BG_HD float bg_gen_scale(uint64_t seed, uint64_t i)
{
	return (1.0f + 0.5f * bg_uniform(BG_SEED_S(seed), i)) / 448.0f;
}
BG_HD uint16_t bg_gen_x(uint64_t seed, uint64_t i)
{
	return bg_f2bf(bg_uniform(BG_SEED_X(seed), i));
}

/* fp8 weights carry one float scale per 128x128 block of W. */
#define BG_FP8_BLOCK 128

#endif
