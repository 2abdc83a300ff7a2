/* The demo gate's front end, shared by its CPU twin and its CUDA build: the shape
 * registry, option parsing, span statistics, the verdict and the one FAITHFUL_RESULT line.
 * A backend only measures; everything a user or boxgate sees is decided here, so the two
 * builds cannot drift apart. Plain C11; usable from C++ (the CUDA build). */
#ifndef BOXGATE_DEMO_COMMON_H
#define BOXGATE_DEMO_COMMON_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exit codes, boxgate's table: 0 PASS_GATE, 1 BELOW_BAR, 2 usage, 125 INVALID.
 * 69 (EX_UNAVAILABLE) is the CUDA build's "no usable GPU here": it prints nothing on
 * stdout then, so the launcher can fall back to the CPU twin. */
enum {
	DEMO_EXIT_PASS = 0,
	DEMO_EXIT_BELOW = 1,
	DEMO_EXIT_USAGE = 2,
	DEMO_EXIT_NODEV = 69,
	DEMO_EXIT_INVALID = 125,
};

struct demo_shape {
	const char *name;
	int n; /* output features (rows of W) */
	int k; /* input features (columns of W, the reduction) */
	const char *what;
};

/* The registry: DeepSeek-V3 projection shapes at decode (M = 1), unsharded, plus a small
 * shape for tests. */
extern const struct demo_shape demo_shapes[];
const struct demo_shape *demo_shape_find(const char *name);

enum demo_dtype { DEMO_BF16, DEMO_FP8 };

enum demo_variant {
	DEMO_V_BASELINE,  /* in-tree: a warp (CPU: a thread) per row, scalar loads */
	DEMO_V_CANDIDATE, /* 128-bit loads, several rows per warp, split-K over the grid */
	DEMO_V_NOSPLIT,   /* the candidate with split-K off */
	DEMO_V_STUB,      /* writes zeros: must be judged INVALID */
	DEMO_V_HALFK,     /* the candidate reducing only the first half of K: must fail cos */
	DEMO_V_HANG,      /* spins forever (watchdog tests); not listed in --help */
	DEMO_V_COUNT
};
const char *demo_variant_name(enum demo_variant v);

enum demo_timer { DEMO_TIMER_AUTO, DEMO_TIMER_GLOBAL, DEMO_TIMER_CLOCK };

struct demo_opts {
	const char *kind; /* "demo" or "gemv_m1": the same task */
	const struct demo_shape *shape;
	int num_workers;
	enum demo_variant variant;
	int iters, warmup;
	int baseline_only; /* --baseline: the candidate is the in-tree kernel, ratio 1.0 */
	enum demo_dtype dtype;
	double bar;        /* PASS_GATE needs slowCTA ratio >= bar */
	double slough_tol; /* anti-sloughing: sumCTA may grow by at most this fraction */
	uint64_t seed;
	int seed_given;
	int l2_cold; /* rotate weight copies so every launch reads device memory */
	enum demo_timer timer;
	int force_rows, force_split, force_depth; /* CUDA tuning knobs, 0 = automatic */
	int tune; /* --tune: also time every candidate plan (TUNE lines) */
};

/* One measured implementation. Times are medians over the timed iterations. */
struct demo_impl {
	enum demo_variant variant;
	int measured;
	double slow_us, wall_us, sum_us;
	double rsd_pct; /* relative standard deviation of slowCTA over the timed iterations */
	double cos, cos_after, relerr;
	long nonfinite; /* outputs left unwritten (poisoned) or not finite */
	int below_res;
	int rows, split, depth; /* the candidate's plan; 0 when it has none */
	double gbps, bw_frac;
};

struct demo_report {
	const char *backend; /* "cpu" or "cuda" */
	char device[256];    /* "cpu" for the twin, else the GPU's name */
	char device_name[320];
	int units;             /* SMs, or online CPUs */
	const char *units_key; /* "sm_count" or "cpus" */
	const char *timer;
	double timer_res_ns;
	double copy_gbps; /* device copy bandwidth measured in this run, read + write */
	int have_clocks;
	double clk_before, clk_after, clk_min, clk_max;
	int throttled;
	double bytes; /* bytes one launch must move: W (+ scales) + x + y */
	int l2_copies;
	double cos_base_cand;
	struct demo_impl cand, base;
	char error[256]; /* set: the run failed, verdict INVALID */
};

struct demo_backend {
	const char *name;
	int default_iters, default_warmup;
	int max_workers;
	int gpu_knobs; /* accepts --timer, --rows, --split, --depth, --tune */
	int (*default_workers)(void);
	/* --probe: 0 when this backend can run here, else DEMO_EXIT_NODEV. */
	int (*probe)(void);
	/* Backend-specific modes (--probe-timers); NULL when none. Returns an exit code. */
	int (*probe_timers)(void);
	/* Measures base (unless opts->baseline_only) and cand; fills rep. Returns 0, or
	 * DEMO_EXIT_NODEV before printing anything, or -1 with rep->error set. */
	int (*run)(const struct demo_opts *opts, struct demo_report *rep);
};

/* Parses argv, runs the backend, prints the FAITHFUL_RESULT line; returns the exit code. */
int demo_main(int argc, char **argv, const struct demo_backend *be);

/* Span statistics. For iteration i and worker w, span_b/span_e[i*nw + w] bound the
 * worker's body (slowCTA, sumCTA) and wall_b/wall_e the same on a clock common to all
 * workers (wall); all in ns. Fills slow/wall/sum medians, rsd and below_res (median
 * slowCTA under 4 timer steps). */
void demo_reduce_spans(const double *span_b, const double *span_e, const double *wall_b,
		       const double *wall_e, int iters, int nw, double res_ns,
		       struct demo_impl *out);

/* cos(a, ref) and ||a - ref|| / ||ref||; counts non-finite a. cos is 0 when either
 * vector is all zeros. */
void demo_compare(const float *a, const double *ref, int n, double *cos, double *relerr,
		  long *nonfinite);
double demo_cos_ff(const float *a, const float *b, int n);

double demo_median(double *v, int n); /* sorts v */

#ifdef __cplusplus
}
#endif
#endif
