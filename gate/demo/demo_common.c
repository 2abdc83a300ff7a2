/* The demo gate's front end: registry, options, statistics, verdict, FAITHFUL_RESULT. */
#include "gate/demo/demo_common.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROG "boxgate-demo-gate"

const struct demo_shape demo_shapes[] = {
	{"q_a", 1536, 7168, "DeepSeek-V3 q_a_proj: hidden 7168 -> q_lora 1536"},
	{"q_b", 24576, 1536, "DeepSeek-V3 q_b_proj: q_lora 1536 -> 128 heads x 192"},
	{"kv_a", 576, 7168, "DeepSeek-V3 kv_a_proj_with_mqa: hidden 7168 -> kv_lora 512 + rope 64"},
	{"o_proj", 7168, 16384, "DeepSeek-V3 o_proj: 128 heads x 128 -> hidden 7168"},
	{"tiny", 384, 1024, "a small shape for tests (not a model shape)"},
	{NULL, 0, 0, NULL},
};

const struct demo_shape *demo_shape_find(const char *name)
{
	for (const struct demo_shape *s = demo_shapes; s->name; s++)
		if (strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

static const char *const variant_names[DEMO_V_COUNT] = {
	"baseline", "candidate", "nosplit", "stub", "halfk", "hang",
};

const char *demo_variant_name(enum demo_variant v)
{
	return ((int)v >= 0 && (int)v < DEMO_V_COUNT) ? variant_names[v] : "?";
}

/* ---- statistics ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double demo_median(double *v, int n)
{
	if (n <= 0)
		return 0.0;
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return (n & 1) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void demo_reduce_spans(const double *span_b, const double *span_e, const double *wall_b,
		       const double *wall_e, int iters, int nw, double res_ns,
		       struct demo_impl *out)
{
	double *slow = calloc((size_t)iters, sizeof *slow);
	double *wall = calloc((size_t)iters, sizeof *wall);
	double *sum = calloc((size_t)iters, sizeof *sum);
	if (!slow || !wall || !sum)
		abort();
	double mean = 0.0;
	for (int i = 0; i < iters; i++) {
		double mx = 0.0, tot = 0.0, lo = 0.0, hi = 0.0;
		for (int w = 0; w < nw; w++) {
			size_t j = (size_t)i * (size_t)nw + (size_t)w;
			double d = span_e[j] - span_b[j];
			if (d < 0)
				d = 0;
			if (d > mx)
				mx = d;
			tot += d;
			if (w == 0 || wall_b[j] < lo)
				lo = wall_b[j];
			if (w == 0 || wall_e[j] > hi)
				hi = wall_e[j];
		}
		slow[i] = mx;
		sum[i] = tot;
		wall[i] = hi > lo ? hi - lo : 0.0;
		mean += mx;
	}
	mean /= iters;
	double var = 0.0;
	for (int i = 0; i < iters; i++)
		var += (slow[i] - mean) * (slow[i] - mean);
	var = iters > 1 ? var / (iters - 1) : 0.0;
	out->rsd_pct = mean > 0 ? 100.0 * sqrt(var) / mean : 0.0;
	out->slow_us = demo_median(slow, iters) / 1e3;
	out->wall_us = demo_median(wall, iters) / 1e3;
	out->sum_us = demo_median(sum, iters) / 1e3;
	out->below_res = out->slow_us * 1e3 < 4.0 * res_ns;
	out->measured = 1;
	free(slow);
	free(wall);
	free(sum);
}

void demo_compare(const float *a, const double *ref, int n, double *cos, double *relerr,
		  long *nonfinite)
{
	double dot = 0, na = 0, nr = 0, nd = 0;
	long bad = 0;
	for (int i = 0; i < n; i++) {
		double x = a[i];
		if (!isfinite(x)) {
			bad++;
			continue;
		}
		dot += x * ref[i];
		na += x * x;
		nr += ref[i] * ref[i];
		nd += (x - ref[i]) * (x - ref[i]);
	}
	*cos = (na > 0 && nr > 0) ? dot / sqrt(na * nr) : 0.0;
	*relerr = nr > 0 ? sqrt(nd / nr) : 0.0;
	if (bad) {
		*cos = 0.0;
		*relerr = 1.0;
	}
	*nonfinite = bad;
}

double demo_cos_ff(const float *a, const float *b, int n)
{
	double dot = 0, na = 0, nb = 0;
	for (int i = 0; i < n; i++) {
		if (!isfinite(a[i]) || !isfinite(b[i]))
			return 0.0;
		dot += (double)a[i] * b[i];
		na += (double)a[i] * a[i];
		nb += (double)b[i] * b[i];
	}
	return (na > 0 && nb > 0) ? dot / sqrt(na * nb) : 0.0;
}

/* ---- usage ---- */

static void usage(FILE *f, const struct demo_backend *be)
{
	fprintf(f,
		"usage: " PROG " [--kind demo|gemv_m1] [--shape NAME] [--num-workers N]\n"
		"         [--variant baseline|candidate|nosplit|stub|halfk] [--baseline]\n"
		"         [--dtype bf16|fp8] [--iters N] [--warmup N] [--configs NAME]\n"
		"         [--bar X] [--slough-tol X] [--seed N] [--l2 cold|hot]\n"
		"       " PROG " --list-shapes | --probe%s | --help\n"
		"\n"
		"A faithful per-task latency gate for a decode (M = 1) GEMV y = W x, bf16 (or\n"
		"e4m3 weights with 128x128 block scales), fp32 accumulation, on a persistent grid "
		"of\n"
		"--num-workers workers (default: $MPK_TEST_NUM_WORKERS, else %s). It measures the\n"
		"in-tree baseline and the --variant candidate, interleaved, and prints one\n"
		"FAITHFUL_RESULT line: slowCTA (max worker body), wall (makespan), sumCTA (busy\n"
		"worker time), each a median over --iters timed launches (default %d after %d\n"
		"warm-up), and cos against an fp64 reference.\n"
		"\n"
		"  --kind       demo or gemv_m1 (the same task)\n"
		"  --shape      a registry shape (--list-shapes); default q_b\n"
		"  --configs    must equal --shape: one shape per invocation\n"
		"  --baseline   measure the in-tree kernel as the candidate (ratio 1.0)\n"
		"  --bar        PASS_GATE needs slowCTA(base)/slowCTA(cand) >= X (default 1.0)\n"
		"  --slough-tol a faster candidate whose sumCTA grows by more than this fraction\n"
		"               only spread the work: BELOW_BAR (default 0.10)\n"
		"  --l2         cold (default): launches rotate over weight copies that together\n"
		"               exceed the cache, as in a real decode step; hot: one copy\n"
		"%s"
		"\n"
		"Exit: 0 PASS_GATE, 1 BELOW_BAR, 2 usage, 125 INVALID%s.\n",
		be->gpu_knobs ? " | --probe-timers" : "",
		be->gpu_knobs ? "the GPU's SM count" : "the online CPU count less one",
		be->default_iters, be->default_warmup,
		be->gpu_knobs
			? "  --timer      auto|globaltimer|clock64 (auto: %globaltimer when its "
			  "step\n"
			  "               is at most 64 ns, else clock64 for spans)\n"
			  "  --rows 1|2|4 --split S --depth 8|16: fix the candidate's plan (rows "
			  "per\n"
			  "               warp, split-K factor, 16-byte loads in flight per lane)\n"
			  "  --tune       first time every candidate plan (TUNE lines on stdout)\n"
			: "",
		be->gpu_knobs ? ", 69 no usable GPU (nothing printed)" : "");
}

static int usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs(PROG ": ", stderr);
	vfprintf(stderr, fmt, ap);
	fputs(" (see --help)\n", stderr);
	va_end(ap);
	return DEMO_EXIT_USAGE;
}

static int parse_int(const char *flag, const char *s, long lo, long hi, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return usage_error("%s: expected an integer in %ld..%ld, got '%s'", flag, lo, hi,
				   s);
	*out = (int)v;
	return 0;
}

static int parse_double(const char *flag, const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi))
		return usage_error("%s: expected a number in %g..%g, got '%s'", flag, lo, hi, s);
	*out = v;
	return 0;
}

static uint64_t fresh_seed(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 48);
}

enum { MODE_RUN, MODE_HELP, MODE_LIST, MODE_PROBE, MODE_PROBE_TIMERS };

/* Parses argv into o; returns 0, or an exit code for a usage error. */
static int parse_args(int argc, char **argv, const struct demo_backend *be, struct demo_opts *o,
		      int *mode)
{
	const char *configs = NULL;
	int workers_given = 0;
	memset(o, 0, sizeof *o);
	o->kind = "demo";
	o->shape = demo_shape_find("q_b");
	o->variant = DEMO_V_CANDIDATE;
	o->iters = be->default_iters;
	o->warmup = be->default_warmup;
	o->dtype = DEMO_BF16;
	o->bar = 1.0;
	o->slough_tol = 0.10;
	o->l2_cold = 1;
	*mode = MODE_RUN;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = NULL;
		char flag[32];
		if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
			if (strcmp(a, "-h") == 0) {
				*mode = MODE_HELP;
				continue;
			}
			return usage_error("unexpected argument '%s'", a);
		}
		const char *eq = strchr(a, '=');
		size_t flen = eq ? (size_t)(eq - a) : strlen(a);
		if (flen >= sizeof flag)
			return usage_error("unknown flag '%s'", a);
		memcpy(flag, a, flen);
		flag[flen] = '\0';
		if (eq)
			val = eq + 1;

		/* flags without a value */
		static const char *const bare[] = {"--help",  "--baseline",     "--list-shapes",
						   "--probe", "--probe-timers", "--tune",
						   NULL};
		int is_bare = 0;
		for (int b = 0; bare[b]; b++)
			if (strcmp(flag, bare[b]) == 0)
				is_bare = 1;
		if (is_bare) {
			if (val)
				return usage_error("%s: takes no value", flag);
			if (strcmp(flag, "--help") == 0)
				*mode = MODE_HELP;
			else if (strcmp(flag, "--baseline") == 0)
				o->baseline_only = 1;
			else if (strcmp(flag, "--list-shapes") == 0)
				*mode = MODE_LIST;
			else if (strcmp(flag, "--probe") == 0)
				*mode = MODE_PROBE;
			else if (strcmp(flag, "--tune") == 0) {
				if (!be->gpu_knobs)
					return usage_error("--tune: only the CUDA build has it");
				o->tune = 1;
			} else if (be->probe_timers)
				*mode = MODE_PROBE_TIMERS;
			else
				return usage_error("--probe-timers: only the CUDA build has it");
			continue;
		}
		static const char *const valued[] = {
			"--kind",   "--shape",   "--num-workers", "--variant", "--iters",
			"--warmup", "--configs", "--dtype",       "--bar",     "--slough-tol",
			"--seed",   "--l2",      "--timer",       "--rows",    "--split",
			"--depth",  NULL};
		int known = 0;
		for (int b = 0; valued[b]; b++)
			if (strcmp(flag, valued[b]) == 0)
				known = 1;
		if (!known)
			return usage_error("unknown flag '%s'", flag);
		if (!val) {
			if (i + 1 >= argc)
				return usage_error("%s: needs a value", flag);
			val = argv[++i];
		}
		int rc = 0;
		if (strcmp(flag, "--kind") == 0) {
			if (strcmp(val, "demo") && strcmp(val, "gemv_m1"))
				return usage_error("--kind: unknown kind '%s' (demo, gemv_m1)",
						   val);
			o->kind = strcmp(val, "demo") == 0 ? "demo" : "gemv_m1";
		} else if (strcmp(flag, "--shape") == 0) {
			o->shape = demo_shape_find(val);
			if (!o->shape)
				return usage_error("--shape: unknown shape '%s' (--list-shapes)",
						   val);
		} else if (strcmp(flag, "--configs") == 0) {
			configs = val;
		} else if (strcmp(flag, "--num-workers") == 0) {
			rc = parse_int(flag, val, 1, be->max_workers, &o->num_workers);
			workers_given = 1;
		} else if (strcmp(flag, "--variant") == 0) {
			int found = 0;
			for (int v = 0; v < DEMO_V_COUNT; v++)
				if (strcmp(val, variant_names[v]) == 0) {
					o->variant = (enum demo_variant)v;
					found = 1;
				}
			if (!found)
				return usage_error("--variant: unknown variant '%s' "
						   "(baseline, candidate, nosplit, stub, halfk)",
						   val);
		} else if (strcmp(flag, "--iters") == 0) {
			rc = parse_int(flag, val, 1, 100000, &o->iters);
		} else if (strcmp(flag, "--warmup") == 0) {
			rc = parse_int(flag, val, 0, 100000, &o->warmup);
		} else if (strcmp(flag, "--dtype") == 0) {
			if (strcmp(val, "bf16") == 0)
				o->dtype = DEMO_BF16;
			else if (strcmp(val, "fp8") == 0)
				o->dtype = DEMO_FP8;
			else
				return usage_error("--dtype: expected bf16 or fp8, got '%s'", val);
		} else if (strcmp(flag, "--bar") == 0) {
			rc = parse_double(flag, val, 0.01, 100.0, &o->bar);
		} else if (strcmp(flag, "--slough-tol") == 0) {
			rc = parse_double(flag, val, 0.0, 100.0, &o->slough_tol);
		} else if (strcmp(flag, "--seed") == 0) {
			char *end;
			errno = 0;
			unsigned long long s = strtoull(val, &end, 0);
			if (errno || end == val || *end || val[0] == '-')
				return usage_error("--seed: expected an unsigned integer, got '%s'",
						   val);
			o->seed = s;
			o->seed_given = 1;
		} else if (strcmp(flag, "--l2") == 0) {
			if (strcmp(val, "cold") == 0)
				o->l2_cold = 1;
			else if (strcmp(val, "hot") == 0)
				o->l2_cold = 0;
			else
				return usage_error("--l2: expected cold or hot, got '%s'", val);
		} else if (strcmp(flag, "--timer") == 0) {
			if (strcmp(val, "auto") == 0)
				o->timer = DEMO_TIMER_AUTO;
			else if (be->gpu_knobs && strcmp(val, "globaltimer") == 0)
				o->timer = DEMO_TIMER_GLOBAL;
			else if (be->gpu_knobs && strcmp(val, "clock64") == 0)
				o->timer = DEMO_TIMER_CLOCK;
			else
				return usage_error("--timer: expected %s, got '%s'",
						   be->gpu_knobs
							   ? "auto, globaltimer or clock64"
							   : "auto (the CPU twin has one clock)",
						   val);
		} else {
			/* --rows, --split, --depth */
			if (!be->gpu_knobs)
				return usage_error("%s: only the CUDA build has it", flag);
			if (strcmp(flag, "--rows") == 0) {
				rc = parse_int(flag, val, 1, 4, &o->force_rows);
				if (!rc && o->force_rows == 3)
					return usage_error("--rows: expected 1, 2 or 4, got '%s'",
							   val);
			} else if (strcmp(flag, "--split") == 0) {
				rc = parse_int(flag, val, 1, 64, &o->force_split);
			} else {
				rc = parse_int(flag, val, 8, 16, &o->force_depth);
				if (!rc && o->force_depth != 8 && o->force_depth != 16)
					return usage_error("--depth: expected 8 or 16, got '%s'",
							   val);
			}
		}
		if (rc)
			return rc;
	}
	if (configs && strcmp(configs, o->shape->name) != 0)
		return usage_error("--configs: '%s' does not match --shape '%s' "
				   "(a gate measures one shape per invocation)",
				   configs, o->shape->name);
	if (!workers_given) {
		const char *env = getenv("MPK_TEST_NUM_WORKERS");
		if (env && *env) {
			int rc = parse_int("MPK_TEST_NUM_WORKERS", env, 1, be->max_workers,
					   &o->num_workers);
			if (rc)
				return rc;
		} else {
			o->num_workers = be->default_workers();
			if (o->num_workers > be->max_workers)
				o->num_workers = be->max_workers;
			if (o->num_workers < 1)
				o->num_workers = 1;
		}
	}
	if (o->variant == DEMO_V_BASELINE)
		o->baseline_only = 1;
	if (!o->seed_given)
		o->seed = fresh_seed();
	return 0;
}

/* ---- the FAITHFUL_RESULT line ---- */

struct jbuf {
	char *p;
	size_t len, cap;
};

static void jb_printf(struct jbuf *b, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			abort();
		if (b->p && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t want = b->cap ? b->cap * 2 : 1024;
		while (want < b->len + (size_t)n + 1)
			want *= 2;
		char *q = realloc(b->p, want);
		if (!q)
			abort();
		b->p = q;
		b->cap = want;
	}
}

static double fin(double v)
{
	return isfinite(v) ? v : 0.0;
}

static void jb_str(struct jbuf *b, const char *key, const char *s)
{
	jb_printf(b, "\"%s\":\"", key);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\')
			jb_printf(b, "\\%c", *c);
		else if (*c < 0x20)
			jb_printf(b, "\\u%04x", *c);
		else
			jb_printf(b, "%c", *c);
	}
	jb_printf(b, "\"");
}

static const char *impl_status(const struct demo_impl *m)
{
	if (!m->measured || m->nonfinite > 0 || m->cos < 0.99 || m->cos_after < 0.99)
		return "FAIL";
	if (m->below_res)
		return "UNRESOLVED";
	return "PASS";
}

static void jb_impl(struct jbuf *b, const char *key, const struct demo_impl *m)
{
	jb_printf(b,
		  "\"%s\":{\"slowCTA_us\":%.4f,\"wall_us\":%.4f,\"sumCTA_us\":%.3f,"
		  "\"cos\":%.7f,\"status\":\"%s\",\"variant\":\"%s\",\"rsd_pct\":%.3f,"
		  "\"cos_after\":%.7f,\"relerr\":%.3e,\"nonfinite\":%ld,"
		  "\"below_resolution\":%s,\"gbps\":%.1f,\"bw_frac\":%.4f",
		  key, fin(m->slow_us), fin(m->wall_us), fin(m->sum_us), fin(m->cos),
		  impl_status(m), demo_variant_name(m->variant), fin(m->rsd_pct), fin(m->cos_after),
		  fin(m->relerr), m->nonfinite, m->below_res ? "true" : "false", fin(m->gbps),
		  fin(m->bw_frac));
	if (m->rows)
		jb_printf(b, ",\"rows_per_warp\":%d,\"split_k\":%d,\"load_depth\":%d", m->rows,
			  m->split, m->depth);
	jb_printf(b, "}");
}

/* Decides the verdict from the numbers, the same policy boxgate applies. */
static const char *decide(const struct demo_opts *o, const struct demo_report *r, double ratio,
			  char *reason, size_t rlen)
{
	const char *cs = impl_status(&r->cand), *bs = impl_status(&r->base);
	if (r->error[0]) {
		snprintf(reason, rlen, "%s", r->error);
		return "INVALID";
	}
	if (strcmp(cs, "FAIL") == 0) {
		snprintf(reason, rlen,
			 "candidate failed correctness: cos %.4f, %ld outputs unwritten",
			 fin(r->cand.cos < r->cand.cos_after ? r->cand.cos : r->cand.cos_after),
			 r->cand.nonfinite);
		return "INVALID";
	}
	if (strcmp(bs, "FAIL") == 0) {
		snprintf(reason, rlen, "baseline failed correctness: cos %.4f", fin(r->base.cos));
		return "INVALID";
	}
	if (strcmp(cs, "UNRESOLVED") == 0 || strcmp(bs, "UNRESOLVED") == 0) {
		snprintf(reason, rlen, "slowCTA under 4 timer steps (%.1f ns): cannot be judged",
			 r->timer_res_ns);
		return "INVALID";
	}
	if (r->cand.slow_us < r->base.slow_us &&
	    r->cand.sum_us > r->base.sum_us * (1.0 + o->slough_tol)) {
		snprintf(reason, rlen, "sloughing: sumCTA rose %.1f%% while slowCTA fell",
			 100.0 * (r->cand.sum_us / r->base.sum_us - 1.0));
		return "BELOW_BAR";
	}
	if (ratio >= o->bar) {
		snprintf(reason, rlen, "ratio %.3f >= bar %.3f", ratio, o->bar);
		return "PASS_GATE";
	}
	snprintf(reason, rlen, "ratio %.3f < bar %.3f", ratio, o->bar);
	return "BELOW_BAR";
}

static int print_result(const struct demo_opts *o, const struct demo_report *r)
{
	struct jbuf b = {0};
	char reason[320];
	double ratio = 0.0;
	if (o->baseline_only)
		ratio = 1.0;
	else if (r->cand.slow_us > 0)
		ratio = r->base.slow_us / r->cand.slow_us;
	const char *verdict = decide(o, r, ratio, reason, sizeof reason);

	jb_printf(&b, "FAITHFUL_RESULT {\"kind\":\"%s\",\"shape\":\"%s\",\"num_workers\":%d,",
		  o->kind, o->shape->name, o->num_workers);
	jb_impl(&b, "candidate", &r->cand);
	jb_printf(&b, ",");
	jb_impl(&b, "baseline_in_tree", &r->base);
	jb_printf(&b, ",\"slowCTA_ratio_base_over_cand\":%.4f,\"verdict\":\"%s\",", fin(ratio),
		  verdict);
	jb_str(&b, "reason", reason);
	jb_printf(&b, ",");
	jb_str(&b, "device", r->device);
	jb_printf(&b, ",\"backend\":\"%s\",", r->backend);
	jb_str(&b, "device_name", r->device_name);
	jb_printf(&b,
		  ",\"%s\":%d,\"n\":%d,\"k\":%d,\"dtype\":\"%s\",\"iters\":%d,\"warmup\":%d,"
		  "\"seed\":%llu,\"l2\":\"%s\",\"l2_copies\":%d,",
		  r->units_key ? r->units_key : "units", r->units, o->shape->n, o->shape->k,
		  o->dtype == DEMO_FP8 ? "fp8" : "bf16", o->iters, o->warmup,
		  (unsigned long long)o->seed, o->l2_cold ? "cold" : "hot", r->l2_copies);
	jb_str(&b, "timer", r->timer ? r->timer : "none");
	jb_printf(&b,
		  ",\"timer_res_ns\":%.2f,\"bytes\":%.0f,\"copy_gbps\":%.1f,"
		  "\"cos_base_cand\":%.7f,\"bar\":%.3f",
		  fin(r->timer_res_ns), fin(r->bytes), fin(r->copy_gbps), fin(r->cos_base_cand),
		  o->bar);
	jb_printf(&b, ",\"sumCTA_ratio_cand_over_base\":%.4f",
		  r->base.sum_us > 0 ? fin(r->cand.sum_us / r->base.sum_us) : 0.0);
	if (r->have_clocks)
		jb_printf(&b,
			  ",\"sm_clock_before_mhz\":%.0f,\"sm_clock_after_mhz\":%.0f,"
			  "\"sm_clock_min_mhz\":%.0f,\"sm_clock_max_mhz\":%.0f",
			  r->clk_before, r->clk_after, r->clk_min, r->clk_max);
	jb_printf(&b, ",\"throttled\":%s}\n", r->throttled ? "true" : "false");
	fputs(b.p, stdout);
	fflush(stdout);
	free(b.p);
	if (strcmp(verdict, "PASS_GATE") == 0)
		return DEMO_EXIT_PASS;
	if (strcmp(verdict, "BELOW_BAR") == 0)
		return DEMO_EXIT_BELOW;
	return DEMO_EXIT_INVALID;
}

int demo_main(int argc, char **argv, const struct demo_backend *be)
{
	struct demo_opts o;
	int mode;
	int rc = parse_args(argc, argv, be, &o, &mode);
	if (rc)
		return rc;
	switch (mode) {
	case MODE_HELP: usage(stdout, be); return 0;
	case MODE_LIST:
		for (const struct demo_shape *s = demo_shapes; s->name; s++)
			printf("%-7s N=%-6d K=%-6d %s\n", s->name, s->n, s->k, s->what);
		return 0;
	case MODE_PROBE: return be->probe();
	case MODE_PROBE_TIMERS: return be->probe_timers();
	default: break;
	}

	struct demo_report *r = calloc(1, sizeof *r);
	if (!r)
		abort();
	r->backend = be->name;
	r->cand.variant = o.baseline_only ? DEMO_V_BASELINE : o.variant;
	r->base.variant = DEMO_V_BASELINE;
	rc = be->run(&o, r);
	if (rc == DEMO_EXIT_NODEV) {
		free(r);
		return rc;
	}
	if (rc != 0 && !r->error[0])
		snprintf(r->error, sizeof r->error, "the %s backend failed", be->name);
	if (o.baseline_only) {
		r->cand = r->base;
		r->cand.variant = DEMO_V_BASELINE;
		r->cos_base_cand = 1.0;
	}
	rc = print_result(&o, r);
	free(r);
	return rc;
}
