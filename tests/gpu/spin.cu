// spin: GPU programs for boxgate-agent's GPU tests.
//
//   spin spin              launch a kernel that never ends, then wait for it (a hung gate)
//   spin spin-ignore-term  the same, with SIGTERM ignored (only SIGKILL stops it)
//   spin hold              allocate 256 MiB, then sleep holding the GPU (a foreign process)
//   spin probe             print what CUDA sees: count, and name + PCI bus id of each device
//
// Every mode prints one line with its pid once it holds the GPU.
#include <cuda_runtime.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CK(call)                                                                           \
	do {                                                                                   \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "spin: %s: %s\n", #call, cudaGetErrorString(e_));              \
			return 1;                                                                      \
		}                                                                                  \
	} while (0)

__global__ void spin_kernel(volatile int *flag, unsigned long long *sink)
{
	unsigned long long n = 0;
	while (*flag == 0) // never set: the kernel runs until its context is torn down
		n++;
	if (threadIdx.x == 0)
		*sink = n;
}

static int spin(void)
{
	int *flag;
	unsigned long long *sink;
	CK(cudaMalloc(&flag, sizeof *flag));
	CK(cudaMalloc(&sink, sizeof *sink));
	CK(cudaMemset(flag, 0, sizeof *flag));
	CK(cudaDeviceSynchronize());
	spin_kernel<<<264, 128>>>(flag, sink);
	CK(cudaGetLastError());
	printf("spin: pid %d: kernel spinning forever\n", (int)getpid());
	fflush(stdout);
	CK(cudaDeviceSynchronize()); // never returns
	printf("spin: kernel ended?!\n");
	return 1;
}

static int hold(void)
{
	void *p;
	CK(cudaMalloc(&p, 256u << 20));
	CK(cudaMemset(p, 0, 256u << 20));
	CK(cudaDeviceSynchronize());
	printf("hold: pid %d: holding the GPU (256 MiB)\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}

static int probe(void)
{
	int n = 0;
	CK(cudaGetDeviceCount(&n));
	printf("probe: pid %d: %d device(s) visible, CUDA_VISIBLE_DEVICES=%s\n", (int)getpid(), n,
	       getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "(unset)");
	for (int i = 0; i < n; i++) {
		cudaDeviceProp pr;
		char bus[32];
		CK(cudaGetDeviceProperties(&pr, i));
		CK(cudaDeviceGetPCIBusId(bus, sizeof bus, i));
		printf("probe: cuda %d %s %s\n", i, pr.name, bus);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "spin";
	if (!strcmp(mode, "spin"))
		return spin();
	if (!strcmp(mode, "spin-ignore-term")) {
		signal(SIGTERM, SIG_IGN);
		return spin();
	}
	if (!strcmp(mode, "hold"))
		return hold();
	if (!strcmp(mode, "probe"))
		return probe();
	fprintf(stderr, "usage: spin spin|spin-ignore-term|hold|probe\n");
	return 2;
}
