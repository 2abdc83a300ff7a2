# The demo gate (gate/demo/), included by the top Makefile.
#
#   $(BUILD)/boxgate-demo-gate       the launcher boxgate's `local` box runs: the CUDA build
#                                    when a GPU is usable, else the CPU twin
#   $(BUILD)/boxgate-demo-gate-cpu   the CPU twin: C11 + pthreads + libm, always built
#   $(BUILD)/boxgate-demo-gate-cuda  the CUDA build, only where $(NVCC) exists; it needs no
#                                    driver to start (cudart is static, NVML is dlopen'ed)
#   $(BUILD)/gemv-cublas             the cuBLAS comparison (`make gemv-cublas`, not in all)
#
# Sanitizer flags (EXTRA_CFLAGS) reach the C parts only, never nvcc.

NVCC         ?= /usr/local/cuda/bin/nvcc
# sm_90a machine code for Hopper (H100, H200) and compute_90 PTX for later GPUs.
NVCC_GENCODE ?= -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_90,code=compute_90
NVCC_FLAGS   ?= -O3 -std=c++17 -lineinfo -Xcompiler -Wall
DEMO_DIR     := gate/demo
DEMO_HDRS    := $(DEMO_DIR)/demo_common.h $(DEMO_DIR)/demo_math.h
HAVE_NVCC    := $(shell command -v $(NVCC) >/dev/null 2>&1 && echo yes)

DEMO_GATE_BINS += $(BUILD)/boxgate-demo-gate $(BUILD)/boxgate-demo-gate-cpu
ifeq ($(HAVE_NVCC),yes)
DEMO_GATE_BINS += $(BUILD)/boxgate-demo-gate-cuda
endif

$(BUILD)/boxgate-demo-gate: $(DEMO_DIR)/boxgate-demo-gate.sh
	@mkdir -p $(dir $@)
	cp $< $@
	chmod 755 $@

# The twin is a timed workload: it is optimized (-O2) in every build, a sanitizer build's
# -O1 included. Its checks stay everywhere but in its two timed kernels
# (demo_cpu_kernels.c), compiled without $(EXTRA_CFLAGS): instrumented loads timed the
# checks (one default run under ASan/UBSan: 11.3 s of cpu with them, 2.8 s without
# sanitizers) and moved the candidate's ratio (0.76 against 0.44).
DEMO_CPU_OPT ?= -O2
DEMO_CPU_KERNELS := $(BUILD)/obj-demo/demo_cpu_kernels.o
$(DEMO_CPU_KERNELS): $(DEMO_DIR)/demo_cpu_kernels.c $(DEMO_DIR)/demo_cpu_kernels.h $(DEMO_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) $(DEMO_CPU_OPT) -D_GNU_SOURCE -I. -c -o $@ $<
$(BUILD)/boxgate-demo-gate-cpu: $(DEMO_DIR)/demo_cpu.c $(DEMO_DIR)/demo_common.c $(DEMO_HDRS) \
		$(DEMO_DIR)/demo_cpu_kernels.h $(DEMO_CPU_KERNELS)
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) $(DEMO_CPU_OPT) $(EXTRA_CFLAGS) -D_GNU_SOURCE -I. -o $@ \
	  $(DEMO_DIR)/demo_cpu.c $(DEMO_DIR)/demo_common.c $(DEMO_CPU_KERNELS) -lpthread -lm

# The CUDA build is the same for every build directory (sanitizer flags never reach it):
# it is compiled once, in $(DEMO_CUDA_BUILD) (the normal build's directory unless set), and
# copied into each $(BUILD), so `make test` (the normal build, then build-asan) runs nvcc
# once. Its C front end is compiled with $(DEMO_CUDA_CFLAGS), whichever build asks first.
DEMO_CUDA_BUILD  ?= build
DEMO_CUDA_CFLAGS ?= -O2 -g
DEMO_CUDA_OUT    := $(DEMO_CUDA_BUILD)/obj-cuda/boxgate-demo-gate-cuda

# The shared front end, compiled by the C compiler without sanitizers for nvcc to link.
$(DEMO_CUDA_BUILD)/obj-cuda/demo_common.o: $(DEMO_DIR)/demo_common.c $(DEMO_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(DEMO_CUDA_CFLAGS) -D_GNU_SOURCE -I. -c -o $@ $<

$(DEMO_CUDA_OUT): $(DEMO_DIR)/demo_cuda.cu $(DEMO_DIR)/gemv_kernels.cuh \
		$(DEMO_HDRS) $(DEMO_CUDA_BUILD)/obj-cuda/demo_common.o
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_GENCODE) $(NVCC_FLAGS) -I. -o $@ $(DEMO_DIR)/demo_cuda.cu \
	  $(DEMO_CUDA_BUILD)/obj-cuda/demo_common.o -ldl -lpthread

$(BUILD)/boxgate-demo-gate-cuda: $(DEMO_CUDA_OUT)
	@mkdir -p $(dir $@)
	cp -f $< $@

.PHONY: gemv-cublas
gemv-cublas: $(BUILD)/gemv-cublas
$(BUILD)/gemv-cublas: tests/bench/gemv_cublas.cu $(DEMO_DIR)/gemv_kernels.cuh $(DEMO_HDRS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_GENCODE) $(NVCC_FLAGS) -I. -o $@ $< -lcublas
