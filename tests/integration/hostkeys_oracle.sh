# Sourced by the host-key oracle tests (t12: StrictHostKeyChecking yes, t94: accept-new),
# which set MODES first. For every known_hosts case of the corpus and each mode in MODES,
# ssh and boxgate must both connect or both refuse (for the same reason: unknown, changed,
# revoked), and leave the same bytes in every known_hosts file. Cases where boxgate
# deliberately differs are listed in KNOWN with what each does. Leaves prepare (a fresh
# copy of a case for boxgate: $W/boxgate.ini), CASEDIR and the hosts (D, A, P) to the
# test.
HOSTS=$BG_ROOT/tests/hosts/hosts
command -v ssh >/dev/null && command -v ssh-keygen >/dev/null || skip_all "no OpenSSH client"

D=''
SSHD2=''
cleanup() {
  if [ -n "$SSHD2" ] && [ -r "$SSHD2" ]; then kill "$(cat "$SSHD2")" 2>/dev/null; fi
  [ -z "$D" ] || "$HOSTS" down "$D" >/dev/null 2>&1
  rm -rf "$BG_TMP"
}
trap cleanup EXIT
D=$("$HOSTS" up --n 2) || { not_ok "test hosts came up"; finish; exit 1; }
source "$D/env.sh"
[ "$BG_HOSTS_MODE" = netns ] || { D_MODE=$BG_HOSTS_MODE; skip_all "needs netns test hosts on port 22 (mode $D_MODE)"; }
unset SSH_AUTH_SOCK

A=$BG_HOST_1_ADDR
A2=$BG_HOST_2_ADDR
NET=${A%.*}
P=2222
# A second sshd in host 1 on port 2222, same host key: the non-default port cases.
SSHD2=$D/h1/sshd2.pidfile
"$HOSTS" exec "$D" 1 /usr/sbin/sshd -f "$D/h1/sshd_config" -o "ListenAddress=0.0.0.0:$P" \
  -o "PidFile=$SSHD2" || { not_ok "second sshd on port $P"; finish; exit 1; }
for _ in $(seq 50); do (exec 3<>"/dev/tcp/$A/$P") 2>/dev/null && break; sleep 0.1; done

# Keys: the hosts' own, and others to pin instead.
K1=$("$HOSTS" knownhost "$D" 1 | cut -d' ' -f2-)
K2=$("$HOSTS" knownhost "$D" 2 | cut -d' ' -f2-)
ssh-keygen -q -t ed25519 -N '' -f "$BG_TMP/kx" && KX=$(cut -d' ' -f1,2 "$BG_TMP/kx.pub")
ssh-keygen -q -t ecdsa -b 256 -N '' -f "$BG_TMP/ke" && KE=$(cut -d' ' -f1,2 "$BG_TMP/ke.pub")
ssh-keygen -q -t rsa -b 2048 -N '' -f "$BG_TMP/kr" && KR=$(cut -d' ' -f1,2 "$BG_TMP/kr.pub")
[ -n "$K1" ] && [ -n "$K2" ] && [ -n "$KX" ] && [ -n "$KE" ] && [ -n "$KR" ] \
  && ok "keys: the hosts' ed25519 keys, other ed25519, ecdsa and rsa keys" || { not_ok "keys"; finish; exit 1; }
B1=${K1#* }   # the base64 blob alone
BE=${KE#* }

# hashed NAME: the name as `ssh-keygen -H` writes it.
hashed() {
  printf '%s %s\n' "$1" "$K1" >"$BG_TMP/h.tmp"
  ssh-keygen -q -H -f "$BG_TMP/h.tmp" >/dev/null 2>&1
  cut -d' ' -f1 "$BG_TMP/h.tmp"
  rm -f "$BG_TMP/h.tmp" "$BG_TMP/h.tmp.old"
}
HA=$(hashed "$A")
HAP=$(hashed "[$A]:$P")
case $HA in "|1|"*) ok "ssh-keygen -H hashes names" ;; *) not_ok "ssh-keygen -H: '$HA'" ;; esac

# ---- the corpus ----
# newcase NAME TARGET: TARGET is h1 (port 22), h1p (host 1 on port 2222) or h2.
# u1/u2/g LINE...: lines of the first, second user file and the global file
# (a file a case never writes does not exist); raw FILE FORMAT...: exact bytes.
CASEDIR=$BG_TMP/cases
CASES=()
declare -A TARGET=()
newcase() { C=$CASEDIR/$1; mkdir -p "$C"; TARGET[$1]=$2; CASES+=("$1"); }
u1() { printf '%s\n' "$@" >>"$C/u1"; }
u2() { printf '%s\n' "$@" >>"$C/u2"; }
g() { printf '%s\n' "$@" >>"$C/g"; }
raw() { local f=$1; shift; printf "$@" >>"$C/$f"; }

newcase plain-match h1;           u1 "$A $K1"
newcase empty h1;                 u1
newcase no-files h1
newcase other-ed25519 h1;         u1 "$A $KX"
newcase other-ecdsa h1;           u1 "$A $KE"
newcase other-rsa h1;             u1 "$A $KR"
newcase other-then-match h1;      u1 "$A $KX" "$A $KE" "$A $K1"
newcase ecdsa-and-match h1;       u1 "$A $KE" "$A $K1 with a comment"
newcase other-host-only h1;       u1 "$A2 $K2" "10.9.9.9 $KX"
newcase hashed-match h1;          u1 "$HA $K1"
newcase hashed-other h1;          u1 "$HA $KX"
newcase hashed-bad h1;            u1 "|1|bm90LWEtc2FsdA==|bm90LWEtaGFzaA== $KX" "|2|abc|def $KX" "|1|x $KX"
newcase hashed-bad-then-match h1; u1 "|1|eA==|eA== $KX" "$A $K1"
newcase star-match h1;            u1 "$NET.* $K1"
newcase qmark-match h1;           u1 "${A%?}? $K1"
newcase qmark-nomatch h1;         u1 "${A}? $KX"
newcase star-other h1;            u1 "10.231.*.* $KX"
newcase star-other-h2 h2;         u1 "$NET.* $K1"
newcase negated-match h1;         u1 "!$A,$NET.* $K1"
newcase negated-other h1;         u1 "!$A,$NET.* $KX"
newcase negated-elsewhere h1;     u1 "!10.9.9.9,$A $K1"
newcase negated-then-plain h1;    u1 "!$A,$NET.* $KX" "$A $K1"
newcase comma-list h1;            u1 "gpu-a.example,$A,gpu-b $K1"
newcase comma-list-other h1;      u1 "gpu-a.example,$A $KX"
newcase revoked-before h1;        u1 "@revoked $A $K1" "$A $K1"
newcase revoked-after h1;         u1 "$A $K1" "@revoked $A $K1"
newcase revoked-only h1;          u1 "@revoked $A $K1"
newcase revoked-hashed h1;        u1 "@revoked $HA $K1" "$A $K1"
newcase revoked-star h1;          u1 "$A $K1" "@revoked $NET.* $K1"
newcase revoked-other-key h1;     u1 "@revoked $A $KX" "$A $K1"
newcase revoked-tab-marker h1;    u1 "$(printf '@revoked\t%s %s' "$A" "$K1")" "$A $K1"
newcase revoked-in-global h1;     u1 "$A $K1"; g "@revoked $A $K1"
newcase bad-marker h1;            u1 "@trusted $A $KX" "@revoked @revoked $A $K1" "$A $K1"
newcase ca-only h1;               u1 "@cert-authority $A $KX"
newcase ca-star-only h1;          u1 "@cert-authority $NET.* $KX"
newcase ca-and-plain h1;          u1 "@cert-authority $A $KX" "$A $K1"
newcase ca-and-other h1;          u1 "@cert-authority $A $K1" "$A $KX"
newcase second-file-pin h1;       u1 "10.9.9.9 $KX"; u2 "$A $KX"
newcase second-file-match h1;     u1 "10.9.9.9 $KX"; u2 "$A $K1"
newcase first-file-missing h1;    u2 "10.9.9.9 $KX"; rm -f "$C/u1"
newcase global-pin h1;            u1; g "$A $KE"
newcase global-match h1;          u1; g "$A $K1"
newcase global-pin-user-match h1; u1 "$A $K1"; g "$A $KX"
newcase crlf-match h1;            raw u1 '# crlf file\r\n%s %s\r\n' "$A" "$K1"
newcase crlf-other h1;            raw u1 '%s %s\r\n\r\n' "$A" "$KX"
newcase crlf-comment h1;          raw u1 '%s %s a comment\r\n' "$A" "$K1"
newcase comments-blank h1;        u1 "# known hosts" "" "   " "	# indented comment" "  $A $K1 trailing comment"
newcase garbage-only h1;          u1 "garbage" "$A" "$A ssh-ed25519" "$A ssh-ed25519 AAAA" "$A ssh-ed25519 !!!notbase64" \
                                     "$A ssh-foo $B1" "$A ssh-rsa $B1" "$A ecdsa-sha2-nistp384 $BE" "$A ssh-ed25519 ${B1}AAAA" \
                                     "$A # $K1"
newcase garbage-then-match h1;    u1 "garbage line" "$A ssh-ed25519 AAAA" "$A $K1"
newcase garbage-then-other h1;    u1 "$A ssh-rsa $B1" "$A $KR"
newcase port-bracket-match h1p;   u1 "[$A]:$P $K1"
newcase port-bare-match h1p;      u1 "$A $K1"
newcase port-bare-other h1p;      u1 "$A $KX"
newcase port-bracket-other h1p;   u1 "[$A]:$P $KX" "$A $K1"
newcase port-other-port-only h1p; u1 "[$A]:2223 $K1"
newcase port-22-bracket-only h1;  u1 "[$A]:$P $K1"
newcase port-hashed-match h1p;    u1 "$HAP $K1"
newcase port-hashed-bare h1p;     u1 "$HA $K1"
newcase port-star-match h1p;      u1 "[$A]:* $K1"
newcase port-bare-star h1p;       u1 "$NET.* $K1"
newcase port-revoked-bracket h1p; u1 "@revoked [$A]:$P $K1" "$A $K1"
newcase port-revoked-bare h1p;    u1 "@revoked $A $K1"
newcase port-empty h1p;           u1
newcase no-final-newline h1;      raw u1 '10.9.9.9 %s' "$KX"

# ssh's default user files, ~/.ssh/known_hosts and ~/.ssh/known_hosts2 (u1 and u2
# here): neither tool is told which files to read. Each runs in a private mount
# namespace where a fresh directory is mounted over the password database's home
# (where ssh looks), so the real ~/.ssh is never read or written.
DCASES=()
dcase() { newcase "$@"; unset 'CASES[-1]'; DCASES+=("$1"); }
dcase d-second-pin h1;            u2 "$A $KX"
dcase d-second-match h1;          u2 "$A $K1"
dcase d-second-pin-port h1p;      u2 "[$A]:$P $KX"
dcase d-second-hashed-pin h1;     u2 "$HA $KX"
dcase d-second-revoked h1;        u1 "$A $K1"; u2 "@revoked $A $K1"
dcase d-first-match-second-pin h1; u1 "$A $K1"; u2 "$A $KX"
dcase d-first-pin-second-match h1; u1 "$A $KX"; u2 "$A $K1"
dcase d-first-other-host h1;      u1 "10.9.9.9 $KX"; u2 "$A $KX"
dcase d-second-other-type h1;     u2 "$A $KE"
dcase d-none h1
dcase d-ssh-dir-empty h1;         mkdir -p "$C/.ssh"

# Cases where boxgate knowingly differs: "MODE NAME" -> "ssh-result | boxgate-result".
declare -A KNOWN=(
  # A key revoked under the bare name of a non-default port: ssh 9.2 prints
  # the REVOKED banner, then treats the key as new (and accept-new records it).
  # boxgate refuses it as REVOKED in both modes.
  ["accept-new port-revoked-bare"]="connected recorded | refused:REVOKED unchanged"
  ["yes port-revoked-bare"]="refused:UNKNOWN unchanged | refused:REVOKED unchanged"
  # A file without its final newline: ssh 9.2 appends the new line to the last
  # one (corrupting both); boxgate writes the newline first, as later OpenSSH does.
  ["accept-new no-final-newline"]="connected recorded | connected recorded"
)

# ---- one run of each tool ----
PW_HOME=$(getent passwd "$(id -u)" | cut -d: -f6)
DFLT=0 # 1: the case runs on ssh's default user files, under $W/home
# fpath DIR F: where file F (u1 u2 g) of a run in DIR lives, in $FP.
fpath() {
  case $DFLT$2 in
    1u1) FP=$1/home/.ssh/known_hosts ;; 1u2) FP=$1/home/.ssh/known_hosts2 ;;
    *) FP=$1/$2 ;;
  esac
}
# in_home CMD...: CMD with $W/home mounted over the password database's home.
in_home() {
  unshare -m -- sh -c 'mount --bind "$1" "$2" || exit 99; shift 2; exec "$@"' sh "$W/home" "$PW_HOME" "$@"
}

# prepare TOOL CASE MODE: a fresh copy of the case's files in $W, $RUN/TOOL (and, for
# boxgate, its boxgate.ini and ssh_config there); sets ADDR and PORT.
RUN=$BG_TMP/run
prepare() {
  local tool=$1 c=$CASEDIR/$2 mode=$3
  W=$RUN/$tool
  [ ! -e "$W" ] || rm -rf "$W"
  [ -d "${W%/*}" ] || mkdir -p "${W%/*}"
  if [ $DFLT = 1 ]; then
    mkdir -p "$W/home"; [ -e "$c/.ssh" ] && mkdir -p "$W/home/.ssh"
    for f in u1 u2 g; do
      [ -e "$c/$f" ] || continue
      fpath "$W" "$f"; [ -d "${FP%/*}" ] || mkdir -p "${FP%/*}"; cp "$c/$f" "$FP"
    done
  else
    # the case's directory holds only its files u1 u2 g, under their own names here: one
    # process for the copy (a process costs this test more than the connection's wait)
    cp -r "$c" "$W"
  fi
  case ${TARGET[$2]} in
    h1) ADDR=$A PORT=22 ;; h1p) ADDR=$A PORT=$P ;; h2) ADDR=$A2 PORT=22 ;;
  esac
  [ "$tool" = bg ] || return 0
  printf 'GlobalKnownHostsFile %s\n' "$W/g" >"$W/ssh_config"
  local hkc=strict; [ "$mode" = accept-new ] && hkc=accept-new
  local kh="known_hosts = $W/u1 $W/u2"
  [ $DFLT = 1 ] && kh='; known_hosts: the default'
  # control_persist_s = 0: each run is a fresh connection judged by its own host-key check
  # (a master per case would also keep an sshd session of h1 alive for minutes).
  printf '[defaults]\nssh_config = %s\nconnect_timeout_s = 5\ncontrol_persist_s = 0\nhost_key_check = %s\n[box h1]\nhost = %s\nport = %s\nuser = root\nidentity = %s\n%s\nrepo = /root/repo\nrequire_gpu = no\n' \
    "$W/ssh_config" "$hkc" "$ADDR" "$PORT" "$BG_KEY" "$kh" >"$W/boxgate.ini"
}

# stall_watch: a run that is still going after 60 s (one takes a second or two) leaves
# what it was doing in its directory's stall file before its 90 s timeout ends it: every
# process of this test with its state and kernel wait channel, its TCP connections to the
# host with their timers and retransmits, and the end of host 1's sshd log. One watcher
# for all the runs (each run notes its start in DIR/started and its end in DIR/ended), so
# a run costs no process of its own for it. Sets WATCHER (kill it after).
stall_watch() {
  local sid
  sid=$(ps -o sid= -p $$ | tr -d ' ')
  (
    shopt -s nullglob
    while sleep 5; do
      for f in "$BG_TMP"/run/*/*/*/started; do
        dir=${f%/started}
        [ ! -e "$dir/ended" ] && [ ! -e "$dir/stall" ] || continue
        t=; read -r t <"$f" 2>/dev/null || continue
        [ $((EPOCHSECONDS - t)) -ge 60 ] || continue
        {
          echo "still running after 60 s:"
          ps -o pid,ppid,stat,wchan:32,etimes,args -s "$sid" 2>&1 | grep -v ' sleep 5$'
          echo "tcp to $A:"; ss -tnoip dst "$A" 2>&1
          echo "h1 sshd.log:"; tail -n 30 "$D/h1/sshd.log" 2>&1
        } >"$dir/stall" 2>&1
      done
    done
  ) &
  WATCHER=$!
}

# run_tool TOOL CASE MODE: runs the tool on a fresh copy, sets SIG
# ("connected|refused:WHY recorded|unchanged"); its stderr stays in $W/err.
run_tool() {
  local tool=$1 name=$2 mode=$3 c=$CASEDIR/$2 rc=0
  prepare "$tool" "$name" "$mode"
  echo "$EPOCHSECONDS" >"$W/started"
  local ukh=(-o UserKnownHostsFile="$W/u1 $W/u2") wrap=()
  [ $DFLT = 1 ] && { ukh=(); wrap=(in_home env HOME="$PW_HOME"); }
  if [ "$tool" = ssh ]; then
    "${wrap[@]}" timeout 90 ssh -F none -o BatchMode=yes -o StrictHostKeyChecking="$mode" \
      "${ukh[@]}" -o GlobalKnownHostsFile="$W/g" \
      -o HostKeyAlgorithms=ssh-ed25519 -o KexAlgorithms=curve25519-sha256 \
      -o UpdateHostKeys=no -o CheckHostIP=no \
      -o ConnectTimeout=5 -o IdentitiesOnly=yes -o PasswordAuthentication=no \
      -i "$BG_KEY" -p "$PORT" "root@$ADDR" true </dev/null >/dev/null 2>"$W/err" || rc=$?
  else
    "${wrap[@]}" timeout 90 "$BOXGATE" --config "$W/boxgate.ini" exec --boxes h1 -- true </dev/null >/dev/null 2>"$W/err" || rc=$?
    # Host-key refusals are BG_EHOSTKEY: exit 3.
    [ "$rc" = 0 ] || [ "$rc" = 3 ] || echo "boxgate exit $rc (wanted 0 or 3)" >"$W/err.bad"
  fi
: >"$W/ended"
  local why=OTHER l revoked=0 no_key=0 changed_key=0 not_known=0
  if [ "$rc" = 0 ]; then SIG=connected; else
    # the tool's words, line by line (as grep reads them)
    while IFS= read -r l || [ -n "$l" ]; do
      [[ $l == *'REVOKED HOST KEY DETECTED'* ]] && revoked=1
      [[ $l =~ No\ .*\ host\ key\ is\ known ]] && no_key=1
      [[ $l == *'REMOTE HOST IDENTIFICATION HAS CHANGED'* ]] && changed_key=1
      [[ $l == *'is not known'* ]] && not_known=1
    done <"$W/err"
    if [ $revoked = 1 ] && [ $no_key = 0 ]; then why=REVOKED
    elif [ $changed_key = 1 ]; then why=CHANGED
    elif [ $no_key = 1 ] || [ $not_known = 1 ]; then why=UNKNOWN; fi
    SIG=refused:$why
  fi
}

# same_bytes A B: files A and B are both missing, or both exist with the same bytes (by
# their sha256 in SUMS, from sums_of); a file without a sum (it could not be read) is never
# the same.
declare -A SUMS=()
same_bytes() {
  [ -e "$1" ] || [ -e "$2" ] || return 0
  [ -n "${SUMS[$1]:-}" ] && [ "${SUMS[$1]}" = "${SUMS[$2]:-}" ]
}
# sums_of FILE...: SUMS[FILE] for each FILE that exists, from one sha256sum for all (where
# a cmp for each pair cost a process each).
sums_of() {
  local f l i=0 have=()
  SUMS=()
  for f in "$@"; do [ -e "$f" ] && have+=("$f"); done
  [ ${#have[@]} -gt 0 ] || return 0
  while IFS= read -r l; do
    # the sum, two spaces, the name (names here have no newline or backslash: no escape)
    [ "${l:64:2}" = '  ' ] && [ "${l:66}" = "${have[$i]:-}" ] && SUMS[${have[$i]}]=${l:0:64}
    i=$((i + 1))
  done < <(sha256sum -- "${have[@]}" 2>/dev/null)
}
# changed_sig DIR CASE: CHG is "recorded" when a file u1 u2 g of the run in DIR differs
# from the case's copy (SUMS filled for both), else "unchanged".
changed_sig() {
  local f
  CHG=unchanged
  for f in u1 u2 g; do
    fpath "$1" "$f"
    same_bytes "$CASEDIR/$2/$f" "$FP" || CHG=recorded
  done
}

files_of() { for f in u1 u2 g; do fpath "$1" "$f"; [ -e "$FP" ] && { printf '%s: ' "$f"; od -c "$FP" | head -20; }; done; }

# The default cases need a private mount namespace; without one they are skipped.
DFLT_OK=1
mkdir -p "$BG_TMP/mnt"
W=$BG_TMP/mnt; mkdir -p "$W/home"; : >"$W/home/probe"
if ! in_home test -e "$PW_HOME/probe" 2>/dev/null; then DFLT_OK=0; fi
[ $DFLT_OK = 1 ] && [ ! -e "$PW_HOME/probe" ] || DFLT_OK=0
G=$(in_home ssh -F none -G "$A" 2>/dev/null | sed -n 's/^userknownhostsfile //p')
if [ $DFLT_OK = 1 ]; then
  [ "$G" = "$PW_HOME/.ssh/known_hosts $PW_HOME/.ssh/known_hosts2" ] \
    && ok "ssh -G: the default user files are ~/.ssh/known_hosts and ~/.ssh/known_hosts2" \
    || not_ok "ssh -G default userknownhostsfile: '$G'"
else
  ok "# SKIP no private mount namespace (unshare -m): the default-file cases are not run"
fi

n_agree=0 n_known=0 n_runs=0
ALL=("${CASES[@]}")
[ $DFLT_OK = 1 ] && ALL+=("${DCASES[@]}")
# oracle_run MODE CASE: both tools on fresh copies of CASE in $BG_TMP/run/MODE/CASE; their
# signatures and whether they left the same files go to sig there.
oracle_run() {
  local mode=$1 name=$2 ssh_sig bg_sig same_files=1 f a
  DFLT=0; [[ $name == d-* ]] && DFLT=1
  RUN=$BG_TMP/run/$mode/$name
  run_tool ssh "$name" "$mode"; ssh_sig=$SIG
  run_tool bg "$name" "$mode"; bg_sig=$SIG
  # every file of the case and of both runs, hashed at once
  local all=()
  for f in u1 u2 g; do
    all+=("$CASEDIR/$name/$f"); fpath "$RUN/ssh" "$f"; all+=("$FP"); fpath "$RUN/bg" "$f"; all+=("$FP")
  done
  sums_of "${all[@]}"
  changed_sig "$RUN/ssh" "$name"; ssh_sig="$ssh_sig $CHG"
  changed_sig "$RUN/bg" "$name"; bg_sig="$bg_sig $CHG"
  for f in u1 u2 g; do
    fpath "$RUN/ssh" "$f"; a=$FP; fpath "$RUN/bg" "$f"
    same_bytes "$a" "$FP" || same_files=0
  done
  printf '%s\n%s\n%s\n' "$ssh_sig" "$bg_sig" "$same_files" >"$RUN/sig"
}
# The runs wait on the hosts' sshds more than on this cpu: four at a time, each in its
# own directory; they are judged in order once all are done.
n_bg=0 runs=()
# every run's directory at once: one mkdir, not one a run
dirs=()
for mode in "${MODES[@]}"; do for name in "${ALL[@]}"; do dirs+=("$BG_TMP/run/$mode/$name"); done; done
mkdir -p "${dirs[@]}"
stall_watch
for mode in "${MODES[@]}"; do
  for name in "${ALL[@]}"; do
    oracle_run "$mode" "$name" &
    runs+=($!)
    n_bg=$((n_bg + 1))
    if [ $n_bg -ge 4 ]; then wait -n; n_bg=$((n_bg - 1)); fi
  done
done
wait "${runs[@]}"
kill "$WATCHER" 2>/dev/null; wait "$WATCHER" 2>/dev/null
for mode in "${MODES[@]}"; do
  for name in "${ALL[@]}"; do
    DFLT=0; [[ $name == d-* ]] && DFLT=1
    n_runs=$((n_runs + 1))
    R=$BG_TMP/run/$mode/$name
    ssh_sig='' bg_sig='' same_files='' bad_rc=''
    { read -r ssh_sig; read -r bg_sig; read -r same_files; } <"$R/sig"
    [ ! -e "$R/bg/err.bad" ] || bad_rc=$(<"$R/bg/err.bad")
    known=${KNOWN["$mode $name"]:-}
    if [ -n "$known" ]; then
      if [ "$ssh_sig | $bg_sig" = "$known" ] && [ -z "$bad_rc" ]; then
        n_known=$((n_known + 1)); ok "$mode $name: known difference: ssh $ssh_sig, boxgate $bg_sig"
      else
        not_ok "$mode $name: wanted '$known', got 'ssh $ssh_sig | boxgate $bg_sig'"
        diag "ssh: $(cat "$R/ssh/err")"; diag "boxgate: $(cat "$R/bg/err")"
      fi
    elif [ "$ssh_sig" = "$bg_sig" ] && [ "$same_files" = 1 ] && [ -z "$bad_rc" ] && [[ $ssh_sig != *OTHER* ]]; then
      n_agree=$((n_agree + 1)); ok "$mode $name: both $ssh_sig"
    else
      not_ok "$mode $name: ssh $ssh_sig, boxgate $bg_sig (same files: $same_files) $bad_rc"
      diag "case files:"; diag "$(files_of "$CASEDIR/$name")"
      diag "ssh stderr: $(cat "$R/ssh/err")"
      diag "boxgate stderr: $(cat "$R/bg/err")"
      for f in "$R/ssh/stall" "$R/bg/stall"; do [ ! -e "$f" ] || diag "${f#"$R/"}: $(cat "$f")"; done
      [ "$same_files" = 1 ] || { diag "ssh files:"; diag "$(files_of "$R/ssh")"; diag "boxgate files:"; diag "$(files_of "$R/bg")"; }
    fi
  done
done
RUN=$BG_TMP/run
DFLT=0
[ $((n_agree + n_known)) = "$n_runs" ] \
  && ok "oracle: ${#ALL[@]} cases x ${#MODES[@]} mode(s) (${MODES[*]}): $n_agree agree with ssh, $n_known known differences" \
  || not_ok "oracle: only $n_agree of $n_runs runs agree with ssh ($n_known known differences)"
