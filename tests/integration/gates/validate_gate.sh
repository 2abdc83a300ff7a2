#!/bin/sh
# A stand-in gate for boxgate validate's tests: --variant stub|halfk asks for the
# stub and the drop-the-feature variant, as the demo gate takes them; --broken stub
# makes the stub score cos 0.5, --broken drop makes the drop variant pass the cos gate.
variant=candidate
broken=none
shape=q_b
nw=8
for a in "$@"; do
  case $prev in
    --variant) variant=$a ;; --broken) broken=$a ;; --shape) shape=$a ;; --num-workers) nw=$a ;;
  esac
  prev=$a
done
side() { printf '{"slowCTA_us":%s,"wall_us":%s,"sumCTA_us":%s,"cos":%s,"status":"%s"}' "$1" "$2" "$3" "$4" "$5"; }
result() {
  printf 'FAITHFUL_RESULT {"kind":"demo","shape":"%s","num_workers":%s,"candidate":%s,"baseline_in_tree":%s,"slowCTA_ratio_base_over_cand":%s,"verdict":"%s","reason":"%s"}\n' \
    "$shape" "$nw" "$1" "$(side 5.2 6.1 402 1.0 PASS)" "$2" "$3" "$4"
}
echo "validate_gate: variant $variant broken $broken" >&2
case $variant in
  stub)
    if [ "$broken" = stub ]; then result "$(side 4.0 5.0 400 0.5 FAIL)" 1.3 INVALID "cos 0.5"
    else result "$(side 0.5 1.0 40 0.0 FAIL)" 10.4 INVALID "cos 0.0"; fi
    exit 125 ;;
  halfk)
    if [ "$broken" = drop ]; then result "$(side 4.0 5.0 400 0.995 PASS)" 1.3 PASS_GATE "ratio 1.3"
    else result "$(side 2.0 3.0 200 0.711 FAIL)" 2.6 INVALID "cos 0.711"; exit 125; fi ;;
  *) result "$(side 4.0 5.0 400 0.9999 PASS)" 1.3 PASS_GATE "ratio 1.3" ;;
esac
