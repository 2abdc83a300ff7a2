#!/usr/bin/env bash
# Builds and runs the demo gate's GEMV against cuBLAS on this machine's GPU (see
# tests/bench/gemv_cublas.cu). Skips when there is no nvcc or no usable GPU.
# usage: tests/bench/gemv_cublas.sh [BUILD_DIR] [gemv-cublas args...]
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
[ $# -gt 0 ] && shift
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
if ! command -v "$nvcc" >/dev/null 2>&1; then
	echo "# SKIP gemv_cublas: no nvcc at $nvcc"
	exit 0
fi
make -C "$root" --no-print-directory BUILD="$build" "$build/gemv-cublas" >&2 || exit 1
"$build/gemv-cublas" "$@"
rc=$?
if [ "$rc" = 69 ]; then
	echo "# SKIP gemv_cublas: no usable GPU"
	exit 0
fi
exit "$rc"
