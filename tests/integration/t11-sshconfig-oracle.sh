#!/usr/bin/env bash
# ssh_config resolved as OpenSSH resolves it, with `ssh -G -F FILE HOST` as the oracle.
# Each case is one ssh_config and the hosts to ask about; for each host, boxgate
# (`config check --json`, one box `host = HOST`) must print what ssh -G prints for
# hostname, user, port, identityfile (when ssh_config set one), userknownhostsfile,
# globalknownhostsfile, connecttimeout, proxyjump (each hop resolved) and proxycommand
# (refused by name), or
# refuse the box naming the keyword it cannot honour, or reject the file when ssh does.
# No sshd needed. The first part of the corpus (host names and their tokens, first value
# wins, identity files, known_hosts files, timeouts, ports, syntax, Host patterns); t95
# has Include, Match, ProxyJump and the rest, and the characters a host name may hold.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/sshconfig_oracle.sh"

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
n_files=$(ls "$BG_TMP"/*.cfg | wc -l)
if [ "$n_files" -ge 18 ]; then ok "this part of the corpus holds $n_files ssh_config files"; else
  not_ok "this part of the corpus holds only $n_files ssh_config files"; fi
finish
