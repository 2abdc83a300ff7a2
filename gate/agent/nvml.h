/* NVML through dlopen (nvml.c): the GPUs and the processes computing on them;
 * `gpus` and `procs`. */
#ifndef BG_GATE_AGENT_NVML_H
#define BG_GATE_AGENT_NVML_H

#include "gate/agent/agent.h"

typedef int nvml_ret;
typedef void *nvml_dev;
#define NVML_SUCCESS                 0
#define NVML_ERROR_INSUFFICIENT_SIZE 7

struct nvml {
	void *lib;
	int ok;
	char why[256];
	nvml_ret (*init)(void);
	nvml_ret (*shutdown)(void);
	const char *(*errstr)(nvml_ret);
	nvml_ret (*count)(unsigned *);
	nvml_ret (*by_index)(unsigned, nvml_dev *);
	nvml_ret (*name)(nvml_dev, char *, unsigned);
	nvml_ret (*uuid)(nvml_dev, char *, unsigned);
	nvml_ret (*procname)(unsigned, char *, unsigned);
	nvml_ret (*procs[3])(nvml_dev, unsigned *, void *);
	size_t stride[3];
	char *fake; /* BOXGATE_AGENT_FAKE_NVML's file, when set: NVML is not loaded */
};

struct gpu_proc {
	unsigned pid;
	int gpu;
	long long mem_mib; /* -1: unknown */
	char name[128];
};

void nvml_open(struct nvml *nv);
void nvml_close(struct nvml *nv);
int nvml_count(struct nvml *nv, unsigned *n);
int nvml_list(struct nvml *nv, int idx, struct gpu_proc **v, int *n, char *why, size_t whyn);
int cmd_gpus(int argc, char **argv);
int cmd_procs(int argc, char **argv);

#endif
