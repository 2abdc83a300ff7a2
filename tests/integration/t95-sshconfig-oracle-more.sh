#!/usr/bin/env bash
# ssh_config resolved as OpenSSH resolves it, with `ssh -G -F FILE HOST` as the oracle
# (the second part of t11's corpus: Include, Match, ProxyJump, unknown keywords,
# canonicalization, tokens, syntax errors; then every character a host name may hold,
# refused by both or neither).
# No sshd needed.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/sshconfig_oracle.sh"


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
if [ "$n_files" -ge 30 ]; then ok "this part of the corpus holds $n_files ssh_config files"; else
  not_ok "this part of the corpus holds only $n_files ssh_config files"; fi
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
