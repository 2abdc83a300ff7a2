#!/usr/bin/env bash
# tests/run's own arguments: a job count is a whole number from 1 to 256, given or not
# given, never an empty or odd one taken for the default; each refusal exits 2 before
# any test runs and names what it refused.
source "$(dirname "$0")/lib.sh"
RUN=$BG_ROOT/tests/run
for a in -j0 -j257 -jabc -j-3 -j1e3 --jobs= -j1.5 "-j 4" $'-j4\n'; do
  rc=0
  "$RUN" "$a" "$BG_TMP/nosuchbuild" >"$BG_TMP/out" 2>&1 || rc=$?
  check "tests/run $(printf %q "$a") is refused (exit 2, got $rc)" test "$rc" = 2
  has "$BG_TMP/out" "^tests/run: -j (takes a whole number|must be 1\.\.256)" "... and says why"
done
rc=0
"$RUN" -j "" "$BG_TMP/nosuchbuild" >"$BG_TMP/out" 2>&1 || rc=$?
check "tests/run -j '' is refused (exit 2, got $rc)" test "$rc" = 2
rc=0
BG_TEST_JOBS=x "$RUN" "$BG_TMP/nosuchbuild" >"$BG_TMP/out" 2>&1 || rc=$?
check "BG_TEST_JOBS=x is refused (exit 2, got $rc)" test "$rc" = 2
# a good count passes the check and stops only at the missing build
for a in -j1 -j256 -j08 --jobs=3; do
  rc=0
  "$RUN" "$a" "$BG_TMP/nosuchbuild" >"$BG_TMP/out" 2>&1 || rc=$?
  check "tests/run $a is taken (it stops at the missing build, exit $rc)" test "$rc" = 2
  has "$BG_TMP/out" "no $BG_TMP/nosuchbuild/boxgate: build it first" "... and says so"
done
finish
