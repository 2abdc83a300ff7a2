#!/bin/sh
# A stand-in gate with known numbers, for run --repeat and sweeps: invocation k
# (counted in the file given by --counter) reports the k-th value of --values as
# the candidate's slowCTA (baseline --base, default 130), on the CPU twin with
# --cpus cpus (default 4). A value "inv" reports a candidate with cos 0.1
# (INVALID), "fail" exits 3 without a result, "sleep" sleeps until killed.
# --cand-sum-pct P[,P...]: invocation k's candidate sumCTA is P% above the baseline's
# (the k-th of the list); above 10% the gate itself says BELOW_BAR (sloughing).
values=100 counter= base=130 nw=8 cpus=4 shape=q_b sumpct=0
prev=
for a in "$@"; do
  case $prev in
    --values) values=$a ;; --counter) counter=$a ;; --base) base=$a ;;
    --num-workers) nw=$a ;; --cpus) cpus=$a ;; --shape) shape=$a ;; --cand-sum-pct) sumpct=$a ;;
  esac
  case $a in --num-workers=*) nw=${a#--num-workers=} ;; esac
  prev=$a
done
# item LIST: the (k mod count + 1)-th of the comma-separated LIST, in $item (no forks:
# the gate runs dozens of times a test).
item() {
  item=$1 i=1
  while [ "${item#*,}" != "$item" ]; do item=${item#*,} i=$((i + 1)); done
  item=$1 i=$((k % i))
  while [ "$i" -gt 0 ]; do item=${item#*,} i=$((i - 1)); done
  item=${item%%,*}
}
k=0
if [ -n "$counter" ]; then
  [ -f "$counter" ] && read -r k <"$counter"
  echo $((k + 1)) >"$counter"
fi
item "$values"; v=$item
echo "argv:$*"
echo "env: SEQ_NW=${SEQ_NW-unset}"
cos=0.9999
case $v in
  fail) echo "boom" >&2; exit 3 ;;
  sleep) echo "sleeping until killed"; exec sleep 300 ;;
  inv) v=100 cos=0.1 ;;
esac
item "$sumpct"; pct=$item
csum=$((v * 100 * (100 + pct) / 100))
rv=$(awk -v b="$base" -v c="$v" -v cs="$cos" -v p="$pct" 'BEGIN { r = sprintf("%.4f", b / c)
  print r, (cs < 0.99 ? "INVALID" : r + 0 >= 1 && p <= 10 ? "PASS_GATE" : "BELOW_BAR") }')
ratio=${rv% *} verdict=${rv#* }
printf 'FAITHFUL_RESULT {"kind":"seq","shape":"%s","num_workers":%s,"candidate":{"slowCTA_us":%s,"wall_us":%s,"sumCTA_us":%s,"cos":%s,"status":"PASS"},"baseline_in_tree":{"slowCTA_us":%s,"wall_us":%s,"sumCTA_us":%s,"cos":1.0,"status":"PASS"},"slowCTA_ratio_base_over_cand":%s,"verdict":"%s","device":"cpu","cpus":%s}\n' \
  "$shape" "$nw" "$v" "$((v + 1))" "$csum" "$cos" "$base" "$((base + 1))" "$((v * 100))" "$ratio" "$verdict" "$cpus"
case $verdict in PASS_GATE) exit 0 ;; BELOW_BAR) exit 1 ;; *) exit 125 ;; esac
