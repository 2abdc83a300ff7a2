#!/bin/sh
# A stand-in gate that reports only the candidate (no "baseline_in_tree" side, no
# slowCTA_ratio_base_over_cand), for run's baseline-and-candidate-apart path.
# Candidate invocation k (counted in the file --counter) reports the k-th of --values as
# its slowCTA; with --baseline, baseline invocation k (counted in --counter's file
# with ".b" appended) reports the k-th of --bvalues (default 130) as its candidate,
# the in-tree kernel. Every sumCTA is 100 x slowCTA, except that the candidate's
# is --cand-sum-pct P percent above 100 x the baseline's first value (sloughing);
# --cos C is the candidate's cos (default 0.9999); --stated V makes the gate state V
# whatever the numbers (a gate that misjudges). Prints its argv first.
values=100 bvalues=130 counter= nw=8 cos=0.9999 sumpct= baseline=0 stated=
prev=
for a in "$@"; do
  case $prev in
    --values) values=$a ;; --bvalues) bvalues=$a ;; --counter) counter=$a ;;
    --num-workers) nw=$a ;; --cos) cos=$a ;; --cand-sum-pct) sumpct=$a ;;
    --stated) stated=$a ;;
  esac
  case $a in --baseline) baseline=1 ;; esac
  prev=$a
done
echo "argv:$*"
list=$values file=$counter
if [ $baseline = 1 ]; then list=$bvalues file=$counter.b cos=1.0; fi
k=0
if [ -n "$counter" ]; then
  [ -f "$file" ] && k=$(cat "$file")
  echo $((k + 1)) >"$file"
fi
n=$(echo "$list" | tr ',' '\n' | wc -l)
v=$(echo "$list" | tr ',' '\n' | sed -n "$((k % n + 1))p")
sum=$((v * 100))
if [ $baseline = 0 ] && [ -n "$sumpct" ]; then
  b0=$(echo "$bvalues" | cut -d, -f1)
  sum=$((b0 * 100 * (100 + sumpct) / 100))
fi
verdict=$(awk -v c="$cos" 'BEGIN { print (c < 0.99 ? "INVALID" : "PASS_GATE") }')
[ -n "$stated" ] && verdict=$stated
variant=candidate
[ $baseline = 1 ] && variant=baseline
printf 'FAITHFUL_RESULT {"kind":"cand","shape":"q_b","num_workers":%s,"candidate":{"variant":"%s","slowCTA_us":%s,"wall_us":%s,"sumCTA_us":%s,"cos":%s,"status":"PASS"},"verdict":"%s","device":"cpu","cpus":64}\n' \
  "$nw" "$variant" "$v" "$((v + 1))" "$sum" "$cos" "$verdict"
case $verdict in PASS_GATE) exit 0 ;; *) exit 125 ;; esac
