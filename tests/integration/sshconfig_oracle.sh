# Sourced by the ssh_config oracle tests (t11, t95): a private HOME, cfg NAME (an
# ssh_config from stdin), and run NAME HOST... (each host of it asked of `ssh -G` and of
# boxgate's `config check --json`, compared field by field; see t11's header).
command -v ssh >/dev/null || skip_all "no ssh client (the oracle)"
command -v jq >/dev/null || skip_all "no jq"
cd "$BG_TMP"
unset BOXGATE_CONFIG SSH_AUTH_SOCK
# A private $HOME: relative Includes are read under it, as ssh's glob(3) reads them.
# ssh takes `~` and %d from the password database, and so does boxgate.
export HOME=$BG_TMP/home XDG_CONFIG_HOME=$BG_TMP/xdg
PW_NAME=$(id -un)
PW_HOME=$(getent passwd "$(id -u)" | cut -d: -f6)
export USER=$PW_NAME BG_T11_VAR=from-env
mkdir -p "$HOME/.ssh/inc" && chmod 700 "$HOME/.ssh"
SSH_VERSION=$(ssh -V 2>&1)
diag "oracle: $SSH_VERSION; password-database home $PW_HOME, HOME=$HOME"

DEFAULT_IDS="~/.ssh/id_rsa ~/.ssh/id_ecdsa ~/.ssh/id_ecdsa_sk ~/.ssh/id_ed25519 ~/.ssh/id_ed25519_sk ~/.ssh/id_xmss ~/.ssh/id_dsa"

# ssh's expansion of IdentityFile (ssh -G prints it raw): tilde_expand then %-tokens and
# ${VAR}, into $EXP. The same expansion ssh -G shows applied to UserKnownHostsFile.
expand_ssh() {
  local s=$1 h=$2 r=$3 p=$4 n=$5 u d out='' c i
  case $s in
    '~') s=$PW_HOME/ ;;
    '~/'*) s=${s#\~}; s=$PW_HOME/${s##+(/)}; s=${s//\/\//\/} ;;
    '~'*) u=${s%%/*}; u=${u#\~}; d=$(getent passwd "$u" | cut -d: -f6)
          if [[ $s == */* ]]; then s=$d/${s#*/}; else s=$d/; fi ;;
  esac
  for ((i = 0; i < ${#s}; i++)); do
    c=${s:i:1}
    if [[ $c == '$' && ${s:i+1:1} == '{' ]]; then
      local rest=${s:i+2} name; name=${rest%%\}*}; out+=${!name}; i=$((i + 2 + ${#name})); continue
    fi
    if [[ $c != '%' ]]; then out+=$c; continue; fi
    i=$((i + 1))
    case ${s:i:1} in
      %) out+=% ;; h) out+=$h ;; r) out+=$r ;; p) out+=$p ;; n|k) out+=$n ;;
      u) out+=$PW_NAME ;; d) out+=$PW_HOME ;; i) out+=$(id -u) ;;
      l) out+=$(hostname) ;; L) c=$(hostname); out+=${c%%.*} ;;
    esac
  done
  EXP=$out
}

# cfg NAME: the ssh_config text on stdin becomes $BG_TMP/NAME.cfg.
cfg() { cat >"$BG_TMP/$1.cfg"; }

# bg_query NAME HOST...: one `config check --json` over an ini with one box per HOST
# (b1, b2, ... in order, each `host = HOST`): sets bgrc, bgerr and BOXSH[bI], the shell
# assignments of box bI's fields (read with one jq). Boxes resolve one by one, so a
# file boxgate accepts says for every host what an ini of that box alone says.
declare -A BOXSH=()
bg_query() {
  local name=$1 ini=$BG_TMP/$1.ini i=0 h bgout
  shift
  {
    printf '[defaults]\nssh_config = %s\ncontrol_persist_s = 0\n' "$BG_TMP/$name.cfg"
    for h in "$@"; do i=$((i + 1)); printf '[box b%d]\nhost = %s\n' "$i" "$h"; done
  } >"$ini"
  BOXSH=()
  bgrc=0
  bgout=$("$BOXGATE" --config "$ini" config check --json 2>"$BG_TMP/bg.err") || bgrc=$?
  bgerr=$(<"$BG_TMP/bg.err")
  # j_* as jq -r prints them (null prints as null).
  [ "$bgrc" = 0 ] && eval "$(jq -r '.boxes[] | select(.name | test("^b[0-9]+$")) | "BOXSH[\(.name)]=" + (@sh "box=1 unsup=\(.unsupported // "")
    j_hostname=\(.hostname) j_user=\(.user) j_port=\(.port) j_ids=(\(.identities // []))
    j_kh=\(.known_hosts // [] | join(" ")) j_gkh=\(.global_known_hosts // [] | join(" "))
    j_sct=\(.ssh_connect_timeout_s) j_ct=\(.connect_timeout_s) j_pj=\(.proxyjump // "")
    j_jumps=(\([.jumps // [] | .[] | [.host, .hostname] | @tsv]))" | @sh)' <<<"$bgout")"
}

# check_host NAME HOST BOX [refuse:WHAT]: one TAP line; bg_query's results for the case
# (box BOX is HOST's).
check_host() {
  local name=$1 host=$2 bx=$3 want=${4:-}
  local file=$BG_TMP/$name.cfg desc="$name: $host"
  local sshout sshrc=0
  sshout=$(ssh -G -T -F "$file" "$host" 2>"$BG_TMP/ssh.err" </dev/null) || sshrc=$?
  local box='' unsup='' j_hostname='' j_user='' j_port='' j_ids=() j_kh='' j_gkh='' j_sct='' j_ct='' j_pj='' j_jumps=()
  [ "$bgrc" = 0 ] && eval "${BOXSH[$bx]}"

  if [ -n "$want" ]; then
    want=${want#refuse:}
    if [ "$bgrc" = 0 ] && [[ $unsup == "$want ("*:[0-9]*")" ]]; then
      ok "$desc: refused by name: $unsup$([ "$sshrc" = 0 ] || echo " (ssh -G rejects the file)")"
    else
      not_ok "$desc: wanted a refusal naming '$want'"
      diag "boxgate exit $bgrc, unsupported '$unsup': $bgerr"
    fi
    return 0
  fi
  if [ "$sshrc" != 0 ]; then
    if [ "$bgrc" != 0 ]; then
      ok "$desc: rejected by both ($(head -c 150 <<<"$bgerr" | head -1))"
    else
      not_ok "$desc: ssh -G rejects the file, boxgate accepts it"
      diag "ssh: $(cat "$BG_TMP/ssh.err")"
    fi
    return 0
  fi
  if [ "$bgrc" != 0 ]; then
    not_ok "$desc: ssh -G accepts the file, boxgate rejects it"; diag "$bgerr"; return 0
  fi

  # ssh -G's lines "keyword value": S[keyword] holds its values, one a line.
  local diffs='' g b line k
  local -A S=()
  while IFS= read -r line; do
    [[ $line == *' '* ]] || continue
    k=${line%% *}
    S[$k]+=${S[$k]+$'\n'}${line#* }
  done <<<"$sshout"
  local s_host=${S[hostname]-} s_user=${S[user]-} s_port=${S[port]-}
  [ "$s_host" = "$j_hostname" ] || diffs+=" hostname ssh='$s_host' boxgate='$j_hostname';"
  [ "$s_user" = "$j_user" ] || diffs+=" user ssh='$s_user' boxgate='$j_user';"
  [ "$s_port" = "$j_port" ] || diffs+=" port ssh='$s_port' boxgate='$j_port';"

  # identityfile: ssh -G lists its defaults when ssh_config sets none; then boxgate's list
  # holds only the default keys that exist under $HOME/.ssh (none here).
  local ids=()
  [ -z "${S[identityfile]+x}" ] || mapfile -t ids <<<"${S[identityfile]}"
  g=''
  if [ "${ids[*]}" != "$DEFAULT_IDS" ]; then
    for line in "${ids[@]}"; do expand_ssh "$line" "$s_host" "$s_user" "$s_port" "$host"; g+=$EXP$'\n'; done
  fi
  b=''; [ ${#j_ids[@]} = 0 ] || b=$(printf '%s\n' "${j_ids[@]}"); [ -n "$b" ] && b+=$'\n'
  [ "$g" = "$b" ] || diffs+=" identityfile ssh='${g//$'\n'/|}' boxgate='${b//$'\n'/|}';"

  # userknownhostsfile: ssh -G prints it expanded. `none` is /dev/null to boxgate; ssh's
  # default pair is boxgate's own default (the same two files, under $HOME).
  g=${S[userknownhostsfile]-}; b=$j_kh
  if [ "$g" = "$PW_HOME/.ssh/known_hosts $PW_HOME/.ssh/known_hosts2" ]; then
    [ "$b" = "$HOME/.ssh/known_hosts $HOME/.ssh/known_hosts2" ] || diffs+=" userknownhostsfile (default) boxgate='$b';"
  elif [ "$g" = none ]; then
    [ "$b" = /dev/null ] || diffs+=" userknownhostsfile ssh=none boxgate='$b';"
  else
    [ "$g" = "$b" ] || diffs+=" userknownhostsfile ssh='$g' boxgate='$b';"
  fi
  g=${S[globalknownhostsfile]-}; b=$j_gkh
  [ "$g" = none ] && g=''
  [ "$g" = "$b" ] || diffs+=" globalknownhostsfile ssh='$g' boxgate='$b';"

  g=${S[connecttimeout]-}; b=$j_sct
  [ "$g" = none ] && g=-1
  [ "$g" = "$b" ] || diffs+=" connecttimeout ssh='$g' boxgate='$b';"
  local eff=$j_ct
  if [ "$g" -gt 0 ]; then [ "$eff" = "$g" ] || diffs+=" connect_timeout_s '$eff' != $g;"
  else [ "$eff" = 10 ] || diffs+=" connect_timeout_s '$eff' != 10 (boxgate's default);"; fi

  g=${S[proxyjump]-}; local pc=${S[proxycommand]-}
  if [ -n "$g" ]; then
    # ProxyJump is honoured: the list as ssh -G prints it, each hop resolved as ssh -G
    # resolves that host; a hop boxgate cannot honour refuses the box naming the hop.
    [ "$g" = "$j_pj" ] || diffs+=" proxyjump ssh='$g' boxgate='$j_pj';"
    local hop hh jl
    for jl in "${j_jumps[@]}"; do
      IFS=$'\t' read -r hop hh <<<"$jl"
      [ -n "$hop" ] || continue
      local hop_out hrc=0
      hop_out=$(ssh -G -T -F "$file" "$hop" 2>"$BG_TMP/hop.err" </dev/null) || hrc=$?
      if [ "$hrc" != 0 ]; then
        # ssh cannot reach this hop ("jumphost loop via ..."): boxgate refuses the box
        [ -n "$unsup" ] || diffs+=" ssh -G rejects hop $hop ($(head -1 "$BG_TMP/hop.err")), boxgate does not refuse the box;"
        continue
      fi
      local want_h='' hl
      while IFS= read -r hl; do [[ $hl == 'hostname '* ]] && want_h+=${want_h:+$'\n'}${hl#hostname }; done <<<"$hop_out"
      [ "$want_h" = "$hh" ] || diffs+=" hop $hop: ssh hostname '$want_h', boxgate '$hh';"
    done
    [ -z "$unsup" ] || [[ $unsup == *" on jump "* ]] || diffs+=" refused ('$unsup') though ssh -G shows a ProxyJump;"
  elif [ -n "$pc" ] && [ "$pc" != none ]; then
    [[ $unsup == "ProxyCommand ("* ]] || diffs+=" proxycommand '$pc' not refused (unsupported='$unsup');"
  elif [ -n "$unsup" ]; then
    diffs+=" refused ('$unsup') though ssh -G shows no proxy;"
  fi
  if [ -z "$diffs" ]; then ok "$desc: hostname $s_host, user $s_user, port $s_port${unsup:+, refused: $unsup}"
  else not_ok "$desc"; diag "$diffs"; fi
}

# run NAME HOST...: every host of a case (a trailing refuse:WHAT applies to all), asked
# of boxgate in one ini; when boxgate rejects that file, each host alone (a rejection may
# be one host's).
run() {
  local name=$1 h want='' hosts=() i
  shift
  for h in "$@"; do if [[ $h == refuse:* ]]; then want=$h; else hosts+=("$h"); fi; done
  bg_query "$name" "${hosts[@]}"
  if [ "$bgrc" = 0 ] || [ ${#hosts[@]} = 1 ]; then
    for i in "${!hosts[@]}"; do check_host "$name" "${hosts[i]}" "b$((i + 1))" "$want"; done
  else
    for h in "${hosts[@]}"; do bg_query "$name" "$h"; check_host "$name" "$h" b1 "$want"; done
  fi
}

shopt -s extglob

