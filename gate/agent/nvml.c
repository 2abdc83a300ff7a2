/* NVML, opened at run time with dlopen: the GPUs and their compute
 * processes, and the gpus and procs commands. */
#include "gate/agent/output.h"
#include "gate/agent/options.h"
#include "gate/agent/nvml.h"

static const char *nvml_err(struct nvml *nv, nvml_ret r)
{
	static char tmp[32];
	if (nv->errstr)
		return nv->errstr(r);
	snprintf(tmp, sizeof tmp, "error %d", r);
	return tmp;
}

static void *nvml_sym(struct nvml *nv, const char *a, const char *b)
{
	void *f = dlsym(nv->lib, a);
	if (!f && b)
		f = dlsym(nv->lib, b);
	return f;
}

/* Load and initialise NVML. On failure nv->ok is 0 and nv->why says why. */
void nvml_open(struct nvml *nv)
{
	memset(nv, 0, sizeof *nv);
	const char *fake = getenv(AGENT_ENV_FAKE_NVML);
	if (fake && *fake) {
		FILE *f = fopen(fake, "re");
		strbuf b = STRBUF_INIT;
		char buf[512];
		size_t k;
		while (f && (k = fread(buf, 1, sizeof buf, f)) > 0)
			strbuf_add(&b, buf, k);
		if (f)
			fclose(f);
		else
			snprintf(nv->why, sizeof nv->why, "%s: %s", fake, strerror(errno));
		nv->fake = strbuf_detach(&b);
		nv->ok = f != NULL;
		return;
	}
	nv->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!nv->lib) {
		const char *e = dlerror();
		snprintf(nv->why, sizeof nv->why, "cannot load libnvidia-ml.so.1: %s", e ? e : "?");
		return;
	}
	nv->init = (nvml_ret(*)(void))nvml_sym(nv, "nvmlInit_v2", "nvmlInit");
	nv->shutdown = (nvml_ret(*)(void))nvml_sym(nv, "nvmlShutdown", NULL);
	nv->errstr = (const char *(*)(nvml_ret))nvml_sym(nv, "nvmlErrorString", NULL);
	nv->count = (nvml_ret(*)(unsigned *))nvml_sym(nv, "nvmlDeviceGetCount_v2",
						      "nvmlDeviceGetCount");
	nv->by_index = (nvml_ret(*)(unsigned, nvml_dev *))nvml_sym(
		nv, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
	nv->name = (nvml_ret(*)(nvml_dev, char *, unsigned))nvml_sym(nv, "nvmlDeviceGetName", NULL);
	nv->uuid = (nvml_ret(*)(nvml_dev, char *, unsigned))nvml_sym(nv, "nvmlDeviceGetUUID", NULL);
	nv->procname = (nvml_ret(*)(unsigned, char *, unsigned))nvml_sym(
		nv, "nvmlSystemGetProcessName", NULL);
	static const char *const pn[3] = {"nvmlDeviceGetComputeRunningProcesses_v3",
					  "nvmlDeviceGetComputeRunningProcesses_v2",
					  "nvmlDeviceGetComputeRunningProcesses"};
	/* Nominal entry sizes: v3/v2 take nvmlProcessInfo_v2_t (24 bytes), the plain one
	 * nvmlProcessInfo_v1_t (16). Some drivers gave _v3 a 32-byte entry without a version
	 * bump, so the stride is also measured on each call (nvml_list). */
	static const size_t ps[3] = {24, 24, 16};
	for (int i = 0; i < 3; i++) {
		nv->procs[i] = (nvml_ret(*)(nvml_dev, unsigned *, void *))dlsym(nv->lib, pn[i]);
		nv->stride[i] = ps[i];
	}
	if (!nv->init || !nv->count || !nv->by_index ||
	    !(nv->procs[0] || nv->procs[1] || nv->procs[2])) {
		snprintf(nv->why, sizeof nv->why,
			 "libnvidia-ml.so.1 lacks the functions boxgate needs");
		return;
	}
	nvml_ret r = nv->init();
	if (r != NVML_SUCCESS) {
		snprintf(nv->why, sizeof nv->why, "nvmlInit failed: %s", nvml_err(nv, r));
		return;
	}
	nv->ok = 1;
}

void nvml_close(struct nvml *nv)
{
	free(nv->fake);
	nv->fake = NULL;
	if (nv->ok && nv->shutdown)
		nv->shutdown();
	nv->ok = 0;
	/* The library stays loaded: unloading NVML at exit has crashed some drivers. */
}

/* The fake's "gpus N". */
static unsigned fake_count(const char *text)
{
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, "gpus ", 5) == 0)
			return (unsigned)strtoul(l + 5, NULL, 10);
	return 0;
}

int nvml_count(struct nvml *nv, unsigned *n)
{
	*n = 0;
	if (nv->fake) {
		*n = fake_count(nv->fake);
		return 0;
	}
	return nv->count(n) == NVML_SUCCESS ? 0 : -1;
}

/* The fake's "proc GPU PID NAME" lines for GPU idx. */
static int fake_list(struct nvml *nv, int idx, struct gpu_proc **v, int *n, char *why, size_t whyn)
{
	if ((unsigned)idx >= fake_count(nv->fake)) {
		snprintf(why, whyn, "gpu %d: not present (fake NVML)", idx);
		return -1;
	}
	for (const char *l = nv->fake; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		int gpu;
		unsigned pid;
		char name[128];
		if (sscanf(l, "proc %d %u %127s", &gpu, &pid, name) != 3 || gpu != idx)
			continue;
		*v = xrealloc(*v, sizeof **v * (size_t)(*n + 1));
		struct gpu_proc *gp = &(*v)[(*n)++];
		gp->pid = pid;
		gp->gpu = idx;
		gp->mem_mib = -1;
		snprintf(gp->name, sizeof gp->name, "%s", name);
	}
	return 0;
}

static void sanitize_word(char *s)
{
	for (; *s; s++)
		if (isspace((unsigned char)*s) || iscntrl((unsigned char)*s))
			*s = '_';
}

static void proc_comm(unsigned pid, char *out, size_t n)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%u/comm", pid);
	FILE *f = fopen(path, "re");
	out[0] = 0;
	if (f) {
		if (fgets(out, (int)n, f))
			out[strcspn(out, "\n")] = 0;
		fclose(f);
	}
	if (!out[0])
		snprintf(out, n, "?");
}

/* Entry stride of a process list NVML just wrote: the bytes it wrote end at count*stride.
 * The buffer was filled with 0xa5 before the call. Falls back to the nominal size. */
static size_t measure_stride(const unsigned char *b, size_t cap, unsigned count, size_t nominal)
{
	if (count < 2)
		return nominal;
	size_t last = cap;
	while (last > 0 && b[last - 1] == 0xa5)
		last--;
	static const size_t cands[] = {32, 24, 16};
	for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
		size_t s = cands[i];
		if (last <= count * s && last > count * s - s / 2)
			return s;
	}
	return nominal;
}

/* Compute processes on GPU idx, appended to *v. -1 with a reason on failure. */
int nvml_list(struct nvml *nv, int idx, struct gpu_proc **v, int *n, char *why, size_t whyn)
{
	if (nv->fake)
		return fake_list(nv, idx, v, n, why, whyn);
	nvml_dev dev;
	nvml_ret r = nv->by_index((unsigned)idx, &dev);
	if (r != NVML_SUCCESS) {
		snprintf(why, whyn, "gpu %d: %s", idx, nvml_err(nv, r));
		return -1;
	}
	unsigned cap = 64;
	for (int attempt = 0; attempt < 6; attempt++) {
		for (int k = 0; k < 3; k++) {
			if (!nv->procs[k])
				continue;
			size_t bytes = (size_t)cap * 32;
			unsigned char *b = xrealloc(NULL, bytes);
			memset(b, 0xa5, bytes);
			unsigned count = cap;
			r = nv->procs[k](dev, &count, b);
			if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
				free(b);
				cap = count > cap ? count + 16 : cap * 2;
				goto again;
			}
			if (r != NVML_SUCCESS) {
				free(b);
				continue; /* an older entry point may still work */
			}
			size_t stride = measure_stride(b, bytes, count, nv->stride[k]);
			for (unsigned i = 0; i < count && (i + 1) * stride <= bytes; i++) {
				unsigned pid;
				unsigned long long mem;
				memcpy(&pid, b + i * stride, sizeof pid);
				memcpy(&mem, b + i * stride + 8, sizeof mem);
				*v = xrealloc(*v, sizeof **v * (size_t)(*n + 1));
				struct gpu_proc *gp = &(*v)[(*n)++];
				gp->pid = pid;
				gp->gpu = idx;
				gp->mem_mib = mem == ~0ULL ? -1 : (long long)(mem / (1024 * 1024));
				gp->name[0] = 0;
				if (!nv->procname ||
				    nv->procname(pid, gp->name, sizeof gp->name) != NVML_SUCCESS ||
				    !gp->name[0])
					proc_comm(pid, gp->name, sizeof gp->name);
				gp->name[sizeof gp->name - 1] = 0;
			}
			free(b);
			return 0;
		}
		snprintf(why, whyn, "gpu %d: cannot list compute processes: %s", idx,
			 nvml_err(nv, r));
		return -1;
	again:;
	}
	snprintf(why, whyn, "gpu %d: compute process list keeps growing", idx);
	return -1;
}

int cmd_gpus(int argc, char **argv)
{
	if (argc != 0)
		usage_fail("gpus takes no arguments (got '%s')", argv[0]);
	struct nvml nv;
	nvml_open(&nv);
	unsigned n;
	if (!nv.ok) {
		print_line("no-nvml %s", nv.why);
	} else if (nvml_count(&nv, &n) < 0) {
		print_line("no-nvml cannot count GPUs");
	} else {
		if (n == 0)
			print_line("no-nvml no GPU found");
		for (unsigned i = 0; i < n && nv.fake; i++)
			print_line("gpu %u fake-gpu GPU-fake-%u", i, i);
		for (unsigned i = 0; i < n && !nv.fake; i++) {
			nvml_dev d;
			char name[96] = "?", uuid[96] = "?";
			if (nv.by_index(i, &d) != NVML_SUCCESS)
				continue;
			if (nv.name)
				nv.name(d, name, sizeof name);
			if (nv.uuid)
				nv.uuid(d, uuid, sizeof uuid);
			name[sizeof name - 1] = uuid[sizeof uuid - 1] = 0;
			sanitize_word(uuid);
			print_line("gpu %u %s %s", i, name, uuid);
		}
	}
	nvml_close(&nv);
	return 0;
}

int cmd_procs(int argc, char **argv)
{
	int *gpus = NULL, ngpus = 0, all = 1;
	for (int i = 0; i < argc; i++) {
		const char *v;
		if ((v = opt_value(argc, argv, &i, AGENT_OPT_GPUS))) {
			free(gpus);
			if (parse_gpus(v, &gpus, &ngpus) < 0)
				usage_fail("bad --gpus '%s'", v);
			all = 0;
		} else {
			usage_fail("procs: unknown argument '%s'", argv[i]);
		}
	}
	struct nvml nv;
	nvml_open(&nv);
	unsigned n = 0;
	if (!nv.ok) {
		print_line("no-nvml %s", nv.why);
	} else if (nvml_count(&nv, &n) < 0) {
		print_line("no-nvml cannot count GPUs");
	} else {
		if (all) {
			free(gpus);
			gpus = xrealloc(NULL, sizeof *gpus * (n ? n : 1));
			for (unsigned i = 0; i < n; i++)
				gpus[i] = (int)i;
			ngpus = (int)n;
		}
		for (int g = 0; g < ngpus; g++) {
			struct gpu_proc *v = NULL;
			int k = 0;
			char why[256];
			if ((unsigned)gpus[g] >= n) {
				msg("gpu %d: not present (%u GPUs)", gpus[g], n);
				continue;
			}
			if (nvml_list(&nv, gpus[g], &v, &k, why, sizeof why) < 0)
				msg("%s", why);
			for (int i = 0; i < k; i++) {
				sanitize_word(v[i].name);
				print_line("pid %u gpu %d name %s mem_mib %lld", v[i].pid, v[i].gpu,
					   v[i].name, v[i].mem_mib);
			}
			free(v);
		}
	}
	nvml_close(&nv);
	free(gpus);
	return 0;
}
