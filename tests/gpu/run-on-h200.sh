#!/usr/bin/env bash
# boxgate-agent on a real NVIDIA GPU (written for one H200): builds the agent and
# tests/gpu/spin.cu on the machine, then shows that
#   - a CUDA kernel spinning forever is killed at the watchdog timeout, the TIMEOUT_HANG
#     line says gpu_freed true and nvidia-smi then lists no compute process (also when the
#     spinning process escaped by double fork, and when it ignores SIGTERM);
#   - while another process holds the GPU, `run --gpus 0` refuses with INVALID naming its pid;
#   - CUDA_VISIBLE_DEVICES + CUDA_DEVICE_ORDER make CUDA's device 0 NVML's GPU 0.
# Usage: tests/gpu/run-on-h200.sh [OUTDIR]   (log: OUTDIR/run-on-h200.log)
# Needs gcc (or cc), nvcc, nvidia-smi. Ends with "N passed, N failed"; exit 0 when all pass.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
outdir=${1:-${OUT:-/tmp/boxgate-gpu}}
mkdir -p "$outdir"
log=$outdir/run-on-h200.log
exec > >(tee "$log") 2>&1
T=$(mktemp -d /tmp/bggpu.XXXXXX)
AG=$T/boxgate-agent
LOCKS=$T/locks
pass=0 fail=0
holder=

cleanup() {
  [ -n "$holder" ] && kill -9 "$holder" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT

# show CMD...: print the command, run it, print its output and exit status; RC holds it.
show() {
  local a line='$'
  for a in "$@"; do
    if [[ $a =~ ^[A-Za-z0-9_./=:,@%+-]+$ ]]; then line+=" $a"; else line+=" '${a//\'/\'\\\'\'}'"; fi
  done
  printf '\n%s\n' "$line"
  "$@" >"$T/o" 2>&1
  RC=$?
  cat "$T/o"
  printf '[exit %d]\n' "$RC"
}
verdict() { # DESC COND...
  local desc=$1; shift
  if "$@"; then pass=$((pass + 1)); echo "PASS: $desc"; else fail=$((fail + 1)); echo "FAIL: $desc"; fi
}
apps() { nvidia-smi --query-compute-apps=pid,name --format=csv,noheader -i 0 2>/dev/null; }
no_apps() { [ -z "$(apps)" ]; }
wait_no_apps() { for _ in $(seq 100); do no_apps && return 0; sleep 0.1; done; return 1; }

echo "== boxgate-agent GPU test on $(hostname) at $(date -u +%FT%TZ)"
show nvidia-smi -L
show nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.used --format=csv
CC=$(command -v gcc || command -v cc)
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
# The agent's one source, joined from its parts as `make` does.
"$root/gate/agent/gen.sh" >"$T/boxgate-agent.c"
show "$CC" -std=c11 -Wall -Wextra -Werror -Wshadow -D_GNU_SOURCE -O2 -o "$AG" "$T/boxgate-agent.c" -ldl -lm
verdict "agent builds with -Werror" test "$RC" = 0
show "$NVCC" -O2 -arch=sm_90 -o "$T/spin" "$root/tests/gpu/spin.cu"
if [ "$RC" != 0 ]; then show "$NVCC" -O2 -o "$T/spin" "$root/tests/gpu/spin.cu"; fi
verdict "spin.cu builds" test "$RC" = 0
cd "$T" || exit 1

show ./boxgate-agent version
show ./boxgate-agent gpus
verdict "agent sees the GPU through NVML" grep -q '^gpu 0 ' "$T/o"
show ./boxgate-agent procs --gpus 0
show nvidia-smi --query-compute-apps=pid,name --format=csv
verdict "GPU 0 idle before the tests" no_apps

# 1. a kernel that spins forever, under the watchdog
show ./boxgate-agent run --gpus 0 --timeout 5 --grace 2 --no-stdin --lock-dir "$LOCKS" -- ./spin spin
verdict "spin: exit 124" test "$RC" = 124
verdict "spin: TIMEOUT_HANG with gpu_freed true" \
  grep -qE '^FAITHFUL_RESULT \{"verdict":"TIMEOUT_HANG","timeout_s":5,"killed":[1-9][0-9]*,"gpu_freed":true,' "$T/o"
show nvidia-smi --query-compute-apps=pid,name --format=csv
verdict "spin: nvidia-smi lists no compute process" no_apps

# 2. the spinning process escaped by double fork (what a wrapper-level timeout orphans)
show ./boxgate-agent run --gpus 0 --timeout 5 --grace 2 --no-stdin --lock-dir "$LOCKS" -- \
  sh -c '(setsid ./spin spin &); exec sleep 1000'
verdict "orphaned spin: exit 124" test "$RC" = 124
verdict "orphaned spin: TIMEOUT_HANG with gpu_freed true" grep -qE '"verdict":"TIMEOUT_HANG".*"gpu_freed":true' "$T/o"
show nvidia-smi --query-compute-apps=pid,name --format=csv
verdict "orphaned spin: nvidia-smi lists no compute process" no_apps

# 3. a spinning process that ignores SIGTERM: SIGKILL after the grace
show ./boxgate-agent run --gpus 0 --timeout 5 --grace 2 --no-stdin --lock-dir "$LOCKS" -- ./spin spin-ignore-term
verdict "TERM-ignoring spin: exit 124" test "$RC" = 124
verdict "TERM-ignoring spin: TIMEOUT_HANG with gpu_freed true" grep -qE '"verdict":"TIMEOUT_HANG".*"gpu_freed":true' "$T/o"
show nvidia-smi --query-compute-apps=pid,name --format=csv
verdict "TERM-ignoring spin: nvidia-smi lists no compute process" no_apps
show sh -c "(printf 'nonce 0123456789abcdef0123456789abcdef\n'; sleep 12) | ./boxgate-agent run --gpus 0 --timeout 5 --grace 2 --nonce-stdin --lock-dir '$LOCKS' -- ./spin spin"
verdict "framed spin: exit 124" test "$RC" = 124
verdict "framed spin: TIMEOUT_HANG with gpu_freed true, framed" \
  grep -qE '^@boxgate-agent 0123456789abcdef0123456789abcdef FAITHFUL_RESULT \{"verdict":"TIMEOUT_HANG".*"gpu_freed":true' "$T/o"
verdict "framed spin: the end report says timeout, rc 124" \
  grep -qE '^@boxgate-agent 0123456789abcdef0123456789abcdef end \{"rc":124,"why":"timeout"' "$T/o"
verdict "framed spin: nvidia-smi lists no compute process" no_apps

# 4. exclusivity: another process holds the GPU
printf '\n$ ./spin hold &\n'
./spin hold >"$T/hold.out" 2>&1 &
holder=$!
for _ in $(seq 300); do grep -q holding "$T/hold.out" && break; sleep 0.1; done
cat "$T/hold.out"
for _ in $(seq 100); do [ -n "$(apps)" ] && break; sleep 0.1; done
show nvidia-smi --query-compute-apps=pid,name --format=csv
verdict "nvidia-smi lists the holder" test -n "$(apps)"
show ./boxgate-agent procs --gpus 0
show ./boxgate-agent run --gpus 0 --no-stdin --lock-dir "$LOCKS" -- sh -c 'echo GATE-RAN'
verdict "busy GPU: exit 125" test "$RC" = 125
verdict "busy GPU: INVALID gpu_busy naming the holder's pid $holder" \
  grep -qE "^FAITHFUL_RESULT \{\"verdict\":\"INVALID\",\"reason\":\"gpu_busy\",\"gpu\":0,\"pid\":$holder,\"process\":\"[^\"]+\"\}$" "$T/o"
verdict "busy GPU: the gate never ran" sh -c "! grep -q GATE-RAN '$T/o'"
# the same refusal as boxgate run asks for it: framed by the client's nonce
NONCE=0123456789abcdef0123456789abcdef
show sh -c "(printf 'nonce $NONCE\n'; sleep 3) | ./boxgate-agent run --gpus 0 --nonce-stdin --lock-dir '$LOCKS' -- sh -c 'echo GATE-RAN'"
verdict "framed busy GPU: exit 125" test "$RC" = 125
verdict "framed busy GPU: the agent's gpu_busy line carries the nonce" \
  grep -qE "^@boxgate-agent $NONCE FAITHFUL_RESULT \{\"verdict\":\"INVALID\",\"reason\":\"gpu_busy\",\"gpu\":0,\"pid\":$holder," "$T/o"
verdict "framed busy GPU: the end report says invalid, rc 125" \
  grep -qE "^@boxgate-agent $NONCE end \{\"rc\":125,\"why\":\"invalid\"" "$T/o"
printf '\n$ kill %s\n' "$holder"
kill "$holder"; wait "$holder" 2>/dev/null; holder=
wait_no_apps
show nvidia-smi --query-compute-apps=pid,name --format=csv
show ./boxgate-agent run --gpus 0 --no-stdin --lock-dir "$LOCKS" -- sh -c 'echo GATE-RAN'
verdict "GPU free again: the gate runs" test "$RC" = 0

# 5. device mapping and a GPU that is not there
show ./boxgate-agent run --gpus 0 --no-stdin --lock-dir "$LOCKS" -- ./spin probe
bus_cuda=$(sed -n 's/^probe: cuda 0 .* \([0-9A-Fa-f:.]*\)$/\1/p' "$T/o" | tr 'a-f' 'A-F')
bus_nvml=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader -i 0 | tr 'a-f' 'A-F')
echo "cuda device 0 bus $bus_cuda, nvml gpu 0 bus $bus_nvml"
verdict "CUDA device 0 in the slot is NVML GPU 0" test -n "$bus_cuda" -a "${bus_nvml%"$bus_cuda"}" != "$bus_nvml"
show ./boxgate-agent run --gpus 99 --no-stdin --lock-dir "$LOCKS" -- true
verdict "absent GPU: INVALID no_gpu, exit 125" grep -q '"reason":"no_gpu"' "$T/o"

show nvidia-smi --query-compute-apps=pid,name --format=csv
printf '\n%d passed, %d failed\n' "$pass" "$fail"
[ "$fail" = 0 ]
