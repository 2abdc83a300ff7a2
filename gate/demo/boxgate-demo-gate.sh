#!/bin/sh
# boxgate-demo-gate: the demo gate boxgate's built-in `local` box runs. It execs the CUDA
# build when that exists beside it and finds a usable GPU (honouring CUDA_VISIBLE_DEVICES),
# else the CPU twin. Every argument is passed on unchanged.
# BOXGATE_DEMO_GATE=cpu|cuda forces one build.
here=$(dirname "$(readlink -f "$0")")
cpu=$here/boxgate-demo-gate-cpu
cuda=$here/boxgate-demo-gate-cuda
case ${BOXGATE_DEMO_GATE:-auto} in
cpu) exec "$cpu" "$@" ;;
cuda) exec "$cuda" "$@" ;;
auto) ;;
*)
	echo "boxgate-demo-gate: BOXGATE_DEMO_GATE must be auto, cpu or cuda" >&2
	exit 2
	;;
esac
# --probe exits 0 only when a kernel ran on the first visible GPU, 69 when there is none.
if [ -x "$cuda" ] && "$cuda" --probe >/dev/null 2>&1; then
	exec "$cuda" "$@"
fi
exec "$cpu" "$@"
