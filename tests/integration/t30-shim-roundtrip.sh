#!/usr/bin/env bash
# The shim's quoting, end to end: seeded random argument vectors (any bytes but NUL:
# quotes, $, backticks, backslashes, newlines, non-UTF-8) are quoted by bg_quote /
# built into command lines by shim_translate + shim_command_line, sent to a real sshd
# test host, and sh, dash and bash there must reconstruct every vector byte for byte
# (each vector dumps its words with printf '%s\0'; the dumps are compared per vector).
#
#   - 10000 vectors (BG_T30_N) as `printf '%s\0' WORDS`, 4 script files fed to
#     `SHELL -s`, for sh, dash, bash, bash --posix and bash in a UTF-8 locale;
#   - 1000 more quoted twice and run as `eval QUOTED`, every tenth as `SHELL -c QUOTED`;
#   - 300 vectors through shim_translate with env rules ({} values, boolean, repeated,
#     --num-workers exported, --shape/--configs, `--`), run as `env NAME=v ... ./dump ARGS`
#     where ./dump prints the variables and its arguments; the expected bytes come from
#     the generator's model of the rules, not from the shim;
#   - the first 100 of those as ONE ssh exec command, parsed by the login shell.
# The seed is printed; BG_SEED=N reproduces a run.
source "$(dirname "$0")/lib.sh"
BUILD=${BG_BUILD:-$BG_ROOT/build}
LIB=$BUILD/libboxgate.a
HOSTS=$BG_ROOT/tests/hosts/hosts
N=${BG_T30_N:-10000}
SEED=${BG_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
[ -f "$LIB" ] || skip_all "$LIB is not built (run make)"
diag "seed $SEED (reproduce with BG_SEED=$SEED)"

# The driver, built against the library under test (sanitizer builds need the runtime).
DRV=$BG_TMP/shimdrv
drv_src=$BG_ROOT/tests/integration/shimdrv/shimdrv.c
libs="$(pkg-config --libs libssh2 inih libcjson) -lcrypto -lpthread"
if ! cc -std=c11 -D_GNU_SOURCE -I"$BG_ROOT" -o "$DRV" "$drv_src" "$LIB" $libs 2>"$BG_TMP/cc.err" &&
   ! cc -std=c11 -D_GNU_SOURCE -I"$BG_ROOT" -fsanitize=address,undefined -o "$DRV" "$drv_src" \
       "$LIB" $libs 2>>"$BG_TMP/cc.err"; then
  not_ok "build the shim driver"; diag "$(cat "$BG_TMP/cc.err")"; finish; exit 1
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

G=$BG_TMP/gen
mkdir -p "$G"
if "$DRV" quote "$SEED" "$N" 4 "$G" && "$DRV" nested "$SEED" 1000 "$G" &&
   "$DRV" shim "$SEED" 300 "$G" 2>"$BG_TMP/gen.err"; then
  ok "generated $N + 1000 + 300 random vectors (seed $SEED)"
else
  not_ok "generate vectors"; diag "$(cat "$BG_TMP/gen.err")"; finish; exit 1
fi

SHELLS=("sh" "dash" "bash" "bash --posix" "env LC_ALL=C.UTF-8 bash")

# compare DESC BASE OUT: OUT must equal BASE.exp, vector by vector.
compare() {
  local desc=$1 base=$2 out=$3
  if "$DRV" check "$G/$base.exp" "$G/$base.idx" "$out" 2>"$BG_TMP/check.err"; then ok "$desc"
  else not_ok "$desc"; diag "$(cat "$BG_TMP/check.err")"; [ -s "$out.err" ] && diag "stderr: $(head -c 1000 "$out.err")"; fi
}

if [ ! -x "$HOSTS" ]; then
  # No test host harness: check the same vectors with this machine's shells, then skip.
  for sh in "${SHELLS[@]}"; do
    for b in 0 1 2 3; do $sh -s <"$G/q$b.sh" >"$BG_TMP/q$b.out" 2>"$BG_TMP/q$b.out.err"; done
    ok_all=1
    for b in 0 1 2 3; do
      "$DRV" check "$G/q$b.exp" "$G/q$b.idx" "$BG_TMP/q$b.out" 2>"$BG_TMP/check.err" || { ok_all=0; diag "$(cat "$BG_TMP/check.err")"; }
    done
    [ $ok_all = 1 ] && ok "local $sh reconstructs $N vectors" || not_ok "local $sh reconstructs $N vectors"
  done
  printf 'ok %d - real test host # SKIP tests/hosts/hosts is not there\n' $((_tap_n + 1))
  _tap_n=$((_tap_n + 1))
  finish
  exit
fi

hosts_up 1
rsh() { ssh -F "$BG_SSH_CONFIG" -o BatchMode=yes h1 "$@"; }

check "the host has sh, dash and bash" rsh 'command -v sh && command -v dash && command -v bash'
login_shell=$(rsh 'echo "$0"' 2>/dev/null || true)
diag "login shell on the host: ${login_shell:-unknown}"

started=$SECONDS
# Everything runs from files on the host (bash reads a script from a pipe or socket one
# byte at a time): one connection uploads, one runs every shell and returns the dumps.
cat >"$G/run.sh" <<'EOF'
mkdir -p out
i=0
for sh in "sh" "dash" "bash" "bash --posix" "env LC_ALL=C.UTF-8 bash"; do
  i=$((i + 1))
  for b in 0 1 2 3; do $sh -s <q$b.sh >out/q$b.$i 2>out/q$b.$i.err; done
done
for sh in sh dash bash; do
  $sh -s $sh <n.sh >out/n.$sh 2>out/n.$sh.err
  $sh -s <s.sh >out/s.$sh 2>out/s.$sh.err
done
tar cf - out
EOF
chmod 755 "$G/dump"
check "upload the scripts to the host" \
  sh -c 'tar cf - -C "$1" . | ssh -F "$BG_SSH_CONFIG" -o BatchMode=yes h1 "rm -rf bgt30 && mkdir bgt30 && tar xf - -C bgt30"' _ "$G"
mkdir -p "$BG_TMP/res"
if rsh 'cd bgt30 && sh run.sh' | tar xf - -C "$BG_TMP/res"; then ok "the host ran the scripts"
else not_ok "the host ran the scripts"; fi
R=$BG_TMP/res/out

# 1. N vectors, 4 scripts, each shell.
i=0
for sh in "${SHELLS[@]}"; do
  i=$((i + 1)) all=1 errs=
  for b in 0 1 2 3; do
    if ! "$DRV" check "$G/q$b.exp" "$G/q$b.idx" "$R/q$b.$i" 2>"$BG_TMP/check.err"; then
      all=0; errs="$errs$(cat "$BG_TMP/check.err") $(head -c 500 "$R/q$b.$i.err" 2>/dev/null)"
    fi
  done
  if [ $all = 1 ]; then ok "$sh on the host reconstructs $N vectors byte for byte"
  else not_ok "$sh on the host reconstructs $N vectors byte for byte"; diag "$errs"; fi
done

for sh in sh dash bash; do
  # 2. Quoted twice: `eval QUOTED`, and `SHELL -c QUOTED` for every tenth.
  compare "$sh on the host reconstructs 1000 twice-quoted vectors (eval, $sh -c)" n "$R/n.$sh"
  # 3. Through shim_translate + shim_command_line, env assignments included.
  compare "$sh on the host gets env and argv of 300 translated vectors" s "$R/s.$sh"
done

# 4. The command lines as one ssh exec request, as boxgate sends them.
out=$BG_TMP/x.out
rsh "$(cat "$G/x.cmd")" >"$out" 2>"$out.err"
compare "100 translated command lines as one ssh exec command (login shell)" x "$out"
rsh 'rm -rf bgt30' || true
diag "host checks took $((SECONDS - started)) s"
cp "$R/q0.1" "$BG_TMP/q0.out"

# The comparison itself can fail: one changed byte is found and located.
cp "$BG_TMP/q0.out" "$BG_TMP/bad.out"
byte=$(od -An -c -j100 -N1 "$BG_TMP/bad.out" | tr -d ' ')
[ "$byte" = Z ] && new=Y || new=Z
printf '%s' "$new" | dd of="$BG_TMP/bad.out" bs=1 seek=100 conv=notrunc 2>/dev/null
if "$DRV" check "$G/q0.exp" "$G/q0.idx" "$BG_TMP/bad.out" 2>"$BG_TMP/check.err"; then
  not_ok "a corrupted dump is detected"
else
  has "$BG_TMP/check.err" 'first difference at byte 100, in vector [0-9]+' "a corrupted dump is detected and located"
fi
finish
