#!/usr/bin/env bash
# ssh_config resolved as OpenSSH resolves it, with `ssh -G -F FILE HOST` as the oracle.
# Each case is one ssh_config and the hosts to ask about; for each host, boxgate
# (`config check --json`, one box `host = HOST`) must print what ssh -G prints for
# hostname, user, port, identityfile (when ssh_config set one), userknownhostsfile,
# globalknownhostsfile, connecttimeout, proxyjump (each hop resolved) and proxycommand
# (refused by name), or
# refuse the box naming the keyword it cannot honour, or reject the file when ssh does.
# No sshd needed.
source "$(dirname "$0")/lib.sh"
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

# ---- the corpus -------------------------------------------------------------------
cfg basic <<'EOF'
Host b200
  HostName 10.0.0.5
  User alice
  Port 2222
  IdentityFile ~/.ssh/b200_key
EOF
run basic b200 other

cfg host-case <<'EOF'
# Host patterns are case-sensitive; the name ssh connects to is lowercased.
Host GPU1
  User upper
Host gpu1
  User lower
Host *
  HostName %h.Example.COM
EOF
run host-case GPU1 gpu1 Gpu1

cfg hostname-tokens <<'EOF'
Host tok
  HostName pre-%h-%%-post
Host *
  User %u-not-expanded
EOF
run hostname-tokens tok

cfg hostname-percent <<'EOF'
# A '%' or ':' in the name makes ssh take it for an address: it is not lowercased.
Host *
  HostName %h.Lab%%
EOF
run hostname-percent GPU

cfg first-wins <<'EOF'
Host n1
  User first
  Port 2001
Host n*
  User second
  Port 2002
  HostName from-glob.lab
  ConnectTimeout 5
Host *
  HostName last.lab
  User third
  ConnectTimeout 9
EOF
run first-wins n1 n2 z

cfg identity-accumulate <<'EOF'
Host acc
  IdentityFile ~/.ssh/one
  IdentityFile ~/.ssh/two
Host a*
  IdentityFile ~/.ssh/one
  IdentityFile /abs/three
Host *
  IdentityFile ~/.ssh/four
EOF
run identity-accumulate acc abc xyz

cfg identity-tokens <<'EOF'
Host *
  User ruser
  Port 2200
  IdentityFile ~/k_%h_%n_%r_%u_%p_%i_%k_%%
  IdentityFile %d/.ssh/by_home
  IdentityFile ${BG_T11_VAR}/k
  IdentityFile ~root/.ssh/root_key
EOF
run identity-tokens Tok.Host

cfg known-hosts-list <<'EOF'
Host kh
  UserKnownHostsFile ~/kh1 %d/kh2 ${BG_T11_VAR}/kh3 /x/%h_%p_%r_%n_%u_%i ~root/kh5
  GlobalKnownHostsFile /etc/g1 ~/g2 %h_g3
Host *
  UserKnownHostsFile /never/used
  GlobalKnownHostsFile /never/used
EOF
run known-hosts-list kh other

cfg known-hosts-none <<'EOF'
Host n
  UserKnownHostsFile none
  GlobalKnownHostsFile none
Host *
  UserKnownHostsFile /not/this
EOF
run known-hosts-none n

cfg connect-timeout <<'EOF'
Host t1
  ConnectTimeout none
Host t1 t2
  ConnectTimeout 1m30s
Host t3
  ConnectTimeout 0
Host t4
  ConnectTimeout 2h
EOF
run connect-timeout t1 t2 t3 t4 t5

cfg port-forms <<'EOF'
Host svc
  Port ssh
Host alt
  Port http-alt
Host plus
  Port +2022
Host lead0
  Port 022
EOF
run port-forms svc alt plus lead0

cfg port-bad <<'EOF'
Host elsewhere
  Port 0
EOF
run port-bad anyhost

cfg port-bad-name <<'EOF'
Host *
  Port no-such-service
EOF
run port-bad-name h

cfg equals-syntax <<'EOF'
Host=eq
  User=equser
  Port = 2023
  HostName =real.eq
  IdentityFile= ~/.ssh/eq_key
EOF
run equals-syntax eq

cfg quoting <<'EOF'
Host "q1" 'q2'
  User "quoted user"
  IdentityFile "~/.ssh/my key"
  IdentityFile ~/.ssh/back\ slash
  HostName 'single.q'
Host q3
  UserKnownHostsFile "/kh/a" '/kh/b'
EOF
run quoting q1 q2 q3

cfg comments-case <<'EOF'
# a comment
	hOsT	cc   # trailing comment
    HOSTNAME	tabbed.cc
  user  mixed # comment after a value
  PORT 2024
EOF
run comments-case cc

cfg host-negation <<'EOF'
Host * !bastion* !*.lan
  User general
Host !only-negated
  User never
Host bastion1 x.lan
  User special
EOF
run host-negation gpu7 bastion1 x.lan

cfg host-wildcards <<'EOF'
Host b200-? node*1*
  User wild
Host b200-??
  User two
EOF
run host-wildcards b200-a b200-ab node0010 node

mkdir -p "$HOME/.ssh/inc"
cat >"$HOME/.ssh/inc/10-a.conf" <<'EOF'
Host inc1
  User from-include
  HostName inc1.internal
Match all
  Port 2101
EOF
cat >"$HOME/.ssh/inc/20-b.conf" <<'EOF'
Host *
  IdentityFile ~/.ssh/from_inc
EOF
chmod 644 "$HOME/.ssh/inc/"*.conf
cfg include-relative <<'EOF'
Host inc1 other
  Include inc/*.conf
  # the Match all inside the include does not leak out: this still belongs to Host
  ConnectTimeout 3
Host *
  Port 2999
EOF
run include-relative inc1 other z

cat >"$BG_TMP/abs-inc.conf" <<'EOF'
User abs-included
EOF
chmod 644 "$BG_TMP/abs-inc.conf"
cfg include-absolute <<EOF
Include $BG_TMP/abs-inc.conf
Host never
  Include $BG_TMP/abs-inc.conf
Host *
  User after
EOF
run include-absolute h

cfg include-missing <<'EOF'
Include does-not-exist/*.conf ~/nothing-here
Host *
  User still
EOF
run include-missing h

cfg match-host <<'EOF'
Host alias
  HostName Real.Example
Match host real.example
  User via-match-host
Match host *.example,!bad.example
  Port 2201
EOF
run match-host alias real.example bad.example

cfg match-originalhost <<'EOF'
Match originalhost gpu-*
  HostName %h.cluster.lab
Match originalhost GPU-X
  User upper-matched
EOF
run match-originalhost gpu-1 GPU-X other

cfg match-user <<EOF
Match user alice
  Port 2301
Host h1
  User alice
Match user alice
  Port 2302
Match localuser $PW_NAME
  HostName local-user-matched
Match !localuser $PW_NAME
  HostName never
EOF
run match-user h1 h2

cfg match-all-negate <<'EOF'
Match !host skip*
  User not-skipped
Match all
  Port 2401
Match !all
  Port 9
EOF
run match-all-negate skipme keep

cfg match-final <<'EOF'
Host short
  HostName Short.Cluster.Lab
Match final host short.cluster.lab
  User final-user
Host short.cluster.lab
  Port 2501
  IdentityFile ~/.ssh/final_only
Host short
  IdentityFile ~/.ssh/first_pass
EOF
run match-final short other

cfg match-canonical <<'EOF'
Match canonical
  User canonical-user
Host c1
  HostName c1.lab
Match final
  Port 2601
Host c1.lab
  User from-final-pass
EOF
run match-canonical c1

cfg match-canonical-alone <<'EOF'
# No `final` anywhere and CanonicalizeHostname off: no second pass, canonical never matches.
Match canonical
  User never
Host c1.lab
  User never
Host c1
  HostName c1.lab
EOF
run match-canonical-alone c1

cfg match-final-negated <<'EOF'
Match !final
  User first-pass
Match final
  User final-pass
  Port 2701
EOF
run match-final-negated x

cfg match-exec-decides <<'EOF'
Match exec "test -e /"
  HostName from-exec
EOF
run match-exec-decides e1 refuse:"Match exec"

cfg match-exec-moot <<'EOF'
# exec after a criterion that fails: ssh does not even run it, the line is false.
Match host gpu* exec "false"
  HostName never
Host *
  User plain
EOF
run match-exec-moot cpu1

cfg match-unknown <<'EOF'
Match tagged prod
  User tagged
EOF
run match-unknown t refuse:"Match tagged"

cfg match-bad <<'EOF'
Match all host x
  User bad
EOF
run match-bad h

cfg proxyjump <<'EOF'
Host behind
  ProxyJump bastion.lab
  ProxyCommand not-this
Host nojump
  ProxyJump none
  ProxyCommand nc %h %p
Host nojump2
  ProxyJump none
  ProxyJump not-this
Host cmd-first
  ProxyCommand nc %h %p
  ProxyJump not-this
Host *
  ProxyCommand ssh -W %h:%p gateway
EOF
run proxyjump behind nojump nojump2 cmd-first other

cfg proxyjump-chain <<'EOF'
# A list with users and ports; the first hop's own ProxyJump comes before it (as ssh -W to
# it honours it); later hops' own ProxyJump lines do not count (ssh -J overrides them).
Host gpu*
  ProxyJump ops@bastion:2222,inner
Host bastion
  HostName 10.0.0.1
  ProxyJump outer
Host inner
  HostName 10.0.0.2
  User admin
  ProxyJump ignored
EOF
run proxyjump-chain gpu1 gpu7

cfg proxycommand-none <<'EOF'
Host direct
  ProxyCommand none
Host *
  ProxyJump bastion
EOF
run proxycommand-none direct other

cfg unknown-keyword <<'EOF'
Host *
  Hostnmae typo.lab
EOF
run unknown-keyword h

cfg ignore-unknown <<'EOF'
IgnoreUnknown UseFoo,Bar*
Host *
  UseFoo yes
  BarBaz 1
  User ignored-unknown-ok
EOF
run ignore-unknown h

cfg addresses <<'EOF'
Host v4
  HostName 10.0.0.001
Host short4
  HostName 127.1
Host v6
  HostName FE80::A
Host num
  HostName 123
EOF
run addresses v4 short4 v6 num

cfg canonicalize <<'EOF'
Host off
  CanonicalizeHostname no
Host *
  CanonicalizeHostname yes
  CanonicalDomains lab
EOF
run canonicalize off
run canonicalize on refuse:CanonicalizeHostname

cfg hostkeyalias <<'EOF'
Host *
  HostKeyAlias shared-key
EOF
run hostkeyalias h refuse:HostKeyAlias

cfg token-C <<'EOF'
Host *
  IdentityFile ~/.ssh/id_%C
EOF
run token-C h refuse:"%C in IdentityFile"

cfg env-unset <<'EOF'
Host *
  UserKnownHostsFile ${BG_T11_UNSET_VARIABLE}/kh
EOF
run env-unset h

cfg syntax-errors <<'EOF'
Host ok
  User "unterminated
EOF
run syntax-errors ok

cfg extra-args <<'EOF'
Host *
  User a b
EOF
run extra-args h

cfg none-not-alone <<'EOF'
Host *
  UserKnownHostsFile none /also
EOF
run none-not-alone h

cfg hostname-bad-token <<'EOF'
Host *
  HostName %r.lab
EOF
run hostname-bad-token h

cfg inactive-validation <<'EOF'
# Values are checked even in blocks that do not apply, as ssh checks them.
Host never-this
  ConnectTimeout soon
EOF
run inactive-validation h

n_files=$(ls "$BG_TMP"/*.cfg | wc -l)
if [ "$n_files" -ge 30 ]; then ok "the corpus holds $n_files ssh_config files"; else
  not_ok "the corpus holds only $n_files ssh_config files"; fi
# `host` is what ssh takes on its command line, where it refuses "hostname contains
# invalid characters": every printable ASCII character, and a few controls, between
# two letters and at the start, must be refused by both or by neither.
# Those ssh takes are asked of boxgate in one ini (one box each; each alone when boxgate
# rejects that file), those it refuses one ini each (the refusal must name that line).
n_host=0 host_bad='' host_ok=()
hostchar_bg() { # NAME...: bg_no, boxgate refused the ini of boxes hb1.. with these hosts
  local i=0 h
  for h in "$@"; do i=$((i + 1)); printf '[box hb%d]\nhost = %s\n' "$i" "$h"; done >"$BG_TMP/hostchar.ini"
  bg_no=0; "$BOXGATE" --config "$BG_TMP/hostchar.ini" config check >/dev/null 2>"$BG_TMP/hostchar.err" || bg_no=1
}
for code in $(seq 1 8) 11 12 $(seq 14 31) $(seq 33 126) 127; do
  printf -v c %03o "$code"; printf -v c "\\$c"
  for h in "a${c}b" "${c}a"; do
    # Not comparable: a leading blank (the ini reader strips it), a leading
    # comment or key character, and '@' (ssh splits user@host; boxgate wants user = ...).
    [[ $h == *'#'* || $h == *';'* || $h == *'='* || $h == *'['* || $h == *']'* || $h == [[:space:]]* ]] && [[ $h != a?b ]] && continue
    [[ $h == *@* ]] && continue
    n_host=$((n_host + 1))
    ssh_no=0; [[ $(ssh -G -F /dev/null -- "$h" 2>&1) == *'hostname contains invalid characters'* ]] && ssh_no=1
    if [ $ssh_no = 0 ]; then host_ok+=("$h"); continue; fi
    hostchar_bg "$h"
    if ! grep -q "hostchar.ini:2: .*host in \[box hb1\]\|hostchar.ini:2: host must not start with '-'\|hostchar.ini:2: host must be one word" "$BG_TMP/hostchar.err"; then
      host_bad+=" $(printf %q "$h")(unnamed:$(head -c 200 "$BG_TMP/hostchar.err"))"
    fi
  done
done
hostchar_bg "${host_ok[@]}"
if [ $bg_no = 1 ]; then
  for h in "${host_ok[@]}"; do
    hostchar_bg "$h"
    [ $bg_no = 0 ] || host_bad+=" $(printf %q "$h")(ssh:0 boxgate:1)"
  done
fi
[ -z "$host_bad" ] && ok "host: $n_host names, boxgate refuses exactly those ssh refuses, naming FILE:LINE and the box" \
  || not_ok "host: boxgate and ssh disagree on:$host_bad"
printf '[box hb]\nhost = gpu-a,gpu-b\n' >"$BG_TMP/hostchar.ini"
expect_rc 2 "host = gpu-a,gpu-b is refused" "$BOXGATE" --config "$BG_TMP/hostchar.ini" config check
has "$ERR_FILE" "hostchar.ini:2: host in \[box hb\]: 'gpu-a,gpu-b' has a character ssh refuses \(byte 0x2c\): hostname contains invalid characters" \
  "... naming FILE:LINE, the box and ssh's words"
finish
