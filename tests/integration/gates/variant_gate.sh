#!/bin/sh
# A stand-in gate whose numbers depend on --variant only, so that two variants differ in
# that one gate argument: invocation k of variant V reports the k-th value of the file
# DIR/V.values (one a line, decimals allowed) as the candidate's slowCTA, against a
# baseline of DIR/V.base (default 130), counting invocations in DIR/V.cnt.
variant=candidate dir=. nw=8 shape=q_b prev=
for a in "$@"; do
  case $prev in
    --variant) variant=$a ;; --dir) dir=$a ;; --num-workers) nw=$a ;; --shape) shape=$a ;;
  esac
  prev=$a
done
k=0
[ -f "$dir/$variant.cnt" ] && k=$(cat "$dir/$variant.cnt")
echo $((k + 1)) >"$dir/$variant.cnt"
n=$(wc -l <"$dir/$variant.values")
v=$(sed -n "$((k % n + 1))p" "$dir/$variant.values")
base=130
[ -f "$dir/$variant.base" ] && base=$(cat "$dir/$variant.base")
awk -v v="$v" -v b="$base" -v nw="$nw" -v s="$shape" 'BEGIN {
  r = b / v
  printf "FAITHFUL_RESULT {\"kind\":\"var\",\"shape\":\"%s\",\"num_workers\":%s,\"candidate\":{\"slowCTA_us\":%s,\"wall_us\":%s,\"sumCTA_us\":%s,\"cos\":0.9999,\"status\":\"PASS\"},\"baseline_in_tree\":{\"slowCTA_us\":%s,\"wall_us\":%s,\"sumCTA_us\":%s,\"cos\":1.0,\"status\":\"PASS\"},\"slowCTA_ratio_base_over_cand\":%.6f,\"verdict\":\"%s\",\"device\":\"cpu\",\"cpus\":4}\n", s, nw, v, v + 1, v * nw, b, b + 1, b * nw, r, (r >= 1 ? "PASS_GATE" : "BELOW_BAR")
  exit (r >= 1 ? 0 : 1) }'
