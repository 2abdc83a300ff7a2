#!/usr/bin/env bash
# The demo gate's measurements on a GPU machine, in one go: build, timer probe, SASS check,
# plan tuning, the sweep (every shape x num_workers {8,64,66,128,132} x 5 repeats, baseline
# and candidate in each run), the cuBLAS comparison, the fp8 sweep, a hang-and-kill check
# and a memcheck pass. Results go to $OUT (default ./device-out), at most 8 files.
# usage: gate/demo/device-run.sh [PHASE...]   (default: every phase, in this order)
#   phases: build timers sass tune sweep bench fp8 hang memcheck diag evidence diag4 spread
#   SHAPES="..." NWS="..." narrow tune, sweep and fp8 to those shapes and grids
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
out=${OUT:-$root/device-out}
mkdir -p "$out"
B=${BUILD:-build-dev}
G=$B/boxgate-demo-gate-cuda
phases=${*:-build timers sass tune sweep bench fp8 hang memcheck}
shapes=${SHAPES:-q_a q_b kv_a o_proj}
nws=${NWS:-8 64 66 128 132}
summary=$out/summary.txt
misc=$out/misc.txt
say() { echo "== $(date +%T) $*" | tee -a "$summary"; }
diag_table() {
	python3 - "$1" <<'PY' | tee -a "$summary"
import json, statistics as st, sys
g = {}
for l in open(sys.argv[1]):
    lab = l[l.index("[") + 1:l.index("]")]
    if "FAITHFUL_RESULT {" not in l:
        continue
    d = json.loads(l[l.index("FAITHFUL_RESULT {") + 16:])
    g.setdefault(lab, []).append(d["candidate"])
for lab, xs in g.items():
    v = [x["slowCTA_us"] for x in xs]
    cv = 100 * st.stdev(v) / st.mean(v) if len(v) > 1 else 0.0
    print("%-44s R%d S%d D%d slowCTA %s  median %.2f  CV %.2f%%  GB/s %.0f  in-run rsd %s" % (lab, xs[0]["rows_per_warp"], xs[0]["split_k"],
          xs[0]["load_depth"], " ".join("%.2f" % x for x in v), st.median(v), cv, st.median([x["gbps"] for x in xs]),
          " ".join("%.1f" % x["rsd_pct"] for x in xs)))
PY
}
t0=$(date +%s)

for ph in $phases; do
	case $ph in
	build)
		say build
		nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv >>"$summary" 2>&1
		nvcc --version | tail -1 >>"$summary"
		make -j16 --no-print-directory BUILD=$B $G $B/boxgate-demo-gate-cpu $B/boxgate-demo-gate $B/gemv-cublas >>"$misc" 2>&1 || { say "build failed"; tail -30 "$misc"; exit 1; }
		$G --probe | tee -a "$summary"
		;;
	timers)
		say timers
		for i in 1 2 3; do $G --probe-timers; done | tee "$out/timers.txt"
		;;
	sass)
		say sass
		{
			cuobjdump --dump-sass $G | awk '/Function : /{f=($0 ~ /gemv_candidateILb0ELi4ELi16/)} f' | grep -oE '(LDG|STG|LDL|STL|ATOMG|RED)[.A-Z0-9_]*' | sort | uniq -c
			echo "-- fp8 R4 W16"
			cuobjdump --dump-sass $G | awk '/Function : /{f=($0 ~ /gemv_candidateILb1ELi4ELi16/)} f' | grep -oE '(LDG|STG|LDL|STL|ATOMG|RED|F2FP|HADD2|F2F)[.A-Z0-9_]*' | sort | uniq -c
			echo "-- baseline bf16"
			cuobjdump --dump-sass $G | awk '/Function : /{f=($0 ~ /gemv_baselineILb0E/)} f' | grep -oE '(LDG|STG)[.A-Z0-9_]*' | sort | uniq -c
		} >>"$misc" 2>&1
		;;
	tune)
		say tune
		for dt in bf16 fp8; do for s in $shapes; do for nw in $nws; do
			timeout 60 $G --tune --dtype $dt --shape $s --num-workers $nw --iters 20 --warmup 5 2>>"$misc" | grep TUNE
		done; done; done >"$out/tune.jsonl"
		python3 gate/demo/sweep_table.py --tune "$out/tune.jsonl" | tee -a "$summary"
		;;
	sweep | fp8)
		dt=bf16
		f=$out/sweep.jsonl
		if [ "$ph" = fp8 ]; then dt=fp8; f=$out/sweep_fp8.jsonl; fi
		say "sweep $dt"
		: >"$f"
		for rep in 1 2 3 4 5; do for s in $shapes; do for nw in $nws; do
			timeout 60 $G --kind gemv_m1 --dtype $dt --shape $s --configs $s --num-workers $nw 2>>"$misc" | grep FAITHFUL_RESULT >>"$f"
		done; done; done
		python3 gate/demo/sweep_table.py "$f" | tee -a "$summary"
		;;
	bench)
		say bench
		$B/gemv-cublas --iters 2000 | tee "$out/bench.txt"
		;;
	hang)
		say "hang: start, kill -9, GPU freed"
		{
			$G --variant hang --shape q_b --num-workers 132 &
			pid=$!
			sleep 4
			echo "running pid $pid:"
			nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
			kill -9 $pid
			wait $pid
			echo "rc after kill: $?"
			sleep 1
			echo "after kill:"
			nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
			$G --shape tiny --num-workers 8 --iters 20 | cut -c1-160
		} >>"$summary" 2>&1
		;;
	memcheck)
		say memcheck
		for a in "--shape kv_a --num-workers 132" "--shape kv_a --num-workers 66 --dtype fp8" "--shape q_b --num-workers 8"; do
			timeout 120 compute-sanitizer --tool memcheck $G $a --iters 3 --warmup 1 2>&1 | grep -E "ERROR SUMMARY|FAITHFUL" | cut -c1-200
		done >>"$summary" 2>&1
		;;
	evidence)
		say "evidence: stub and drop-half-K judged by the gate itself"
		for a in "--variant stub" "--variant halfk" "--variant halfk --dtype fp8" "--variant nosplit --shape kv_a" "--baseline"; do
			$G --shape q_b --num-workers 128 $a 2>>"$misc" | python3 -c 'import json,sys
l=sys.stdin.read(); d=json.loads(l[l.index("{"):])
c=d["candidate"]; print("%-28s rc-verdict %-9s cand %-9s cos %.4f status %s slowCTA %.2f ratio %.2f | %s" % (sys.argv[1], d["verdict"], c["variant"], c["cos"], c["status"], c["slowCTA_us"], d["slowCTA_ratio_base_over_cand"], d["reason"]))' "$a"
			echo "   exit ${PIPESTATUS[0]}"
		done 2>&1 | tee -a "$summary"
		;;
	diag)
		say "diag: o_proj nw128 stability of plans across processes"
		: >"$out/diag.jsonl"
		for rep in 1 2 3 4 5; do
			for cfg in "auto" "--rows 1 --split 1" "--rows 4 --split 1 --depth 8" "--l2 hot"; do
				a=$cfg; [ "$a" = auto ] && a=
				echo "DIAG [$cfg] $($G --shape o_proj --num-workers 128 $a 2>>"$misc" | grep FAITHFUL_RESULT)" >>"$out/diag.jsonl"
			done
		done
		diag_table "$out/diag.jsonl"
		;;
	diag4)
		say "diag4: plan stability across processes, q_a nw128/132 and o_proj nw64"
		: >"$out/diag4.jsonl"
		for rep in 1 2 3 4 5; do
			for sn in "q_a 128" "q_a 132" "o_proj 64"; do
				set -- $sn
				for cfg in "auto" "--rows 1 --split 1" "--rows 4 --split 5 --depth 8" "--rows 4 --split 1 --depth 16" "--rows 4 --split 1 --depth 8"; do
					a=$cfg; [ "$a" = auto ] && a=
					echo "DIAG [$1 nw$2 $cfg] $($G --shape $1 --num-workers $2 $a 2>>"$misc" | grep FAITHFUL_RESULT)" >>"$out/diag4.jsonl"
				done
			done
		done
		set --
		diag_table "$out/diag4.jsonl"
		;;
	spread)
		# Where the candidate's spread across processes comes from, at the grids
		# that matter (q_a nw128/132): 10 processes each of the default (cold L2,
		# automatic timer), a hot L2 (no device memory traffic), the clock64 timer,
		# and the default again while another process holds PAD MiB of device
		# memory first, twice per PAD (the same PAD twice giving the same mode,
		# and modes moving with PAD, points at where the weights land in memory).
		say "spread: q_a nw128/132 across processes"
		f=$out/spread.jsonl
		: >"$f"
		for nw in ${NWS:-128 132}; do
			for cfg in auto "--l2 hot" "--timer clock64"; do
				a=$cfg; [ "$a" = auto ] && a=
				for rep in 1 2 3 4 5 6 7 8 9 10; do
					echo "DIAG [q_a nw$nw $cfg] $(timeout 60 $G --shape q_a --num-workers $nw $a 2>>"$misc" | grep FAITHFUL_RESULT)" >>"$f"
				done
			done
			for pad in 0 2 4 6 8 10 12 14 16 24 32 48 64 96 128 192; do
				python3 -c 'import sys, torch, time
x = torch.empty(int(sys.argv[1]) * 2**20 + 1, dtype=torch.uint8, device="cuda")
print("held", flush=True); time.sleep(600)' "$pad" >"$out/pad.$$" 2>>"$misc" &
				holder=$!
				for _ in $(seq 200); do grep -q held "$out/pad.$$" 2>/dev/null && break; sleep 0.1; done
				for rep in 1 2; do
					echo "DIAG [q_a nw$nw pad $pad] $(timeout 60 $G --shape q_a --num-workers $nw 2>>"$misc" | grep FAITHFUL_RESULT)" >>"$f"
				done
				kill $holder; wait $holder 2>/dev/null
				rm -f "$out/pad.$$"
			done
		done
		diag_table "$f"
		;;
	*)
		say "unknown phase $ph"
		;;
	esac
	echo "   phase $ph done at +$(($(date +%s) - t0)) s" | tee -a "$summary"
done
