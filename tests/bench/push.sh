#!/usr/bin/env bash
# boxgate push against the usual ways of doing the same job.
#
# 1. One 64 KiB Python file to 8 test hosts with backup + remote ast verify + atomic swap,
#    at an added one-way delay of 0 and 10 ms: boxgate push; a shell loop of scp + ssh
#    (cp .bak, verify, mv), one host after the other and all at once; parallel-scp +
#    parallel-ssh; Ansible's copy module with backup and validate. The payload changes
#    before every run so every tool does the whole job (Ansible's copy skips unchanged files).
# 2. A 256 MiB file to one host at 0 and 10 ms: boxgate push (a new target, as for the
#    others, and replacing an existing one: then boxgate also hashes the old file on the
#    box to tell whether it changed) against scp, sftp and rsync. Fresh random content
#    before every run.
source "$(dirname "$0")/lib.sh"
N=8
DELAYS=${BENCH_DELAYS:-0 10}
BIG_MIB=${BENCH_BIG_MIB:-256}
PARTS=${BENCH_PUSH_PARTS:-small big} # run only some: BENCH_PUSH_PARTS=big
# Local checks run python3 from PATH: a pyenv shim would time pyenv, not the push.
PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '/\.pyenv/' | paste -sd:)
PY=/usr/bin/python3

L=$BENCH_TMP/repo
mkdir -p "$L"
bench_hostlist "$N"
hostlist=$BENCH_HOSTLIST
VERIFY="$PY -c \"import ast,sys; ast.parse(open(sys.argv[1],'rb').read(), sys.argv[1])\""

# A new 64 KiB Python file (comments: every tool parses the same amount).
new_payload() {
  { printf '# %s %s\n' "$RANDOM$RANDOM" "$EPOCHREALTIME"; head -c 49000 /dev/urandom | base64 -w 76 | sed 's/^/# /'; } |
    head -c 65535 >"$L/payload.py"
  printf '\n' >>"$L/payload.py"
}
remote_swap="cd /root/repo && { [ ! -e payload.py ] || cp -p payload.py payload.py.bak; } && $VERIFY payload.py.new && mv -f payload.py.new payload.py"

tool_boxgate() { "$BOXGATE" --config "$BG_CONFIG" push --root "$L" --all payload.py; }
# BENCH_BASELINE=PATH: another boxgate binary (an earlier commit's) side by side.
tool_baseline() { "$BENCH_BASELINE" --config "$BG_CONFIG" push --root "$L" --all payload.py; }
tool_loop() {
  local i
  for i in $(seq 1 "$N"); do
    scp -q -F "$BG_SSH_CONFIG" "$L/payload.py" "h$i:/root/repo/payload.py.new" &&
      ssh -F "$BG_SSH_CONFIG" "h$i" "$remote_swap" || return 1
  done
}
tool_par() {
  local i pids=() rc=0
  for i in $(seq 1 "$N"); do
    { scp -q -F "$BG_SSH_CONFIG" "$L/payload.py" "h$i:/root/repo/payload.py.new" &&
        ssh -F "$BG_SSH_CONFIG" "h$i" "$remote_swap"; } &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || rc=1; done
  return $rc
}
tool_pssh() {
  parallel-scp -h "$hostlist" -x "-F $BG_SSH_CONFIG" -p "$N" -t 60 "$L/payload.py" /root/repo/payload.py.new &&
    parallel-ssh -h "$hostlist" -x "-F $BG_SSH_CONFIG" -p "$N" -t 60 "$remote_swap"
}
bench_ansible_env
export ANSIBLE_HOST_KEY_CHECKING=False ANSIBLE_PYTHON_INTERPRETER=$PY
ansible_inventory() {
  bench_ansible_inventory
  $PY - "$L/payload.py" "$PY" >"$BENCH_TMP/copy-args.json" <<'EOF'
import json, sys
print(json.dumps({"src": sys.argv[1], "dest": "/root/repo/payload.py", "backup": True,
                  "validate": sys.argv[2] + " -c \"import ast,sys; ast.parse(open(sys.argv[1],'rb').read(), sys.argv[1])\" %s"}))
EOF
}
# Ansible as configured by default: ControlPersist 60 s, warm from the warm-up run on.
tool_ansible() { ansible all -i "$BENCH_TMP/inventory" -m copy -a "$(cat "$BENCH_TMP/copy-args.json")" -f "$N" -o; }
for t in boxgate loop par pssh ansible baseline; do eval "bench_prep_$t() { new_payload; }"; done

bench_label boxgate "boxgate push --all"
bench_label loop "scp + ssh, a loop over the hosts"
bench_label par "scp + ssh, all hosts at once"
bench_label pssh "parallel-scp + parallel-ssh"
bench_label ansible "ansible copy (backup, validate)"
SMALL="boxgate loop par pssh ansible"
bench_label baseline "the baseline binary's push --all"
[ -n "${BENCH_BASELINE:-}" ] && SMALL="$SMALL baseline"

# ---- 256 MiB to one host ----
new_big() { head -c $((BIG_MIB << 20)) /dev/urandom >"$L/big.bin"; }
tool_bgnew() { "$BOXGATE" --config "$BG_CONFIG" push --root "$L" --boxes h1 big.bin=bg-new.bin; }
bench_prep_bgnew() { new_big; rm -f "$BG_HOST_1_ROOT/repo/bg-new.bin" "$BG_HOST_1_ROOT/repo/bg-new.bin.bak"; }
tool_bgrep() { "$BOXGATE" --config "$BG_CONFIG" push --root "$L" --boxes h1 big.bin=bg-rep.bin; }
bench_prep_bgrep() { new_big; rm -f "$BG_HOST_1_ROOT/repo/bg-rep.bin.bak"; }
tool_scp() { scp -q -F "$BG_SSH_CONFIG" "$L/big.bin" h1:/root/repo/scp.bin; }
bench_prep_scp() { new_big; rm -f "$BG_HOST_1_ROOT/repo/scp.bin"; }
tool_sftp() { printf 'put %s /root/repo/sftp.bin\n' "$L/big.bin" | sftp -q -F "$BG_SSH_CONFIG" -b - h1 >/dev/null; }
bench_prep_sftp() { new_big; rm -f "$BG_HOST_1_ROOT/repo/sftp.bin"; }
tool_rsync() { rsync -e "ssh -F $BG_SSH_CONFIG" "$L/big.bin" h1:/root/repo/rsync.bin; }
bench_prep_rsync() { new_big; rm -f "$BG_HOST_1_ROOT/repo/rsync.bin"; }
bench_label bgnew "boxgate push (new target)"
bench_label bgrep "boxgate push (replacing a target)"
bench_label scp "scp"
bench_label sftp "sftp put"
bench_label rsync "rsync"
for t in bgnew bgrep scp sftp rsync; do bench_label "${t}tp" "${BENCH_LABEL[$t]}"; done
BIG="bgnew bgrep scp sftp rsync"

keys=''
for d in $DELAYS; do
  key="${d}ms"
  keys="$keys $key"
  bench_up_delayed "$N" "$d"
  ansible_inventory
  case " $PARTS " in *" small "*) bench_measure "$key" "$BENCH_RUNS" $SMALL ;; esac
  case " $PARTS " in *" big "*)
    new_big
    bench_measure "$key" "${BENCH_BIG_RUNS:-5}" $BIG
    rm -f "$L/big.bin" ;;
  esac
  bench_down
done

if [[ " $PARTS " == *" small "* ]]; then
bench_table "64 KiB .py to $N hosts with .bak + ast verify + swap: median of $BENCH_RUNS runs, seconds" "$keys" $SMALL
printf '\nratios (lower is better for boxgate)\n'
bench_ratio "boxgate / scp + ssh all at once" boxgate par "$keys"
bench_ratio "boxgate / parallel-scp + parallel-ssh" boxgate pssh "$keys"
bench_ratio "boxgate / ansible copy" boxgate ansible "$keys"
[ -n "${BENCH_BASELINE:-}" ] && bench_ratio "boxgate / baseline binary" boxgate baseline "$keys"
fi
if [[ " $PARTS " == *" big "* ]]; then
bench_table "$BIG_MIB MiB to one host: median of ${BENCH_BIG_RUNS:-5} runs, seconds" "$keys" $BIG
for k in $keys; do
  for t in $BIG; do
    m=${BENCH_MED[$t@$k]:-}
    [ -n "$m" ] && BENCH_MED[${t}tp@$k]=$(awk -v s="$m" -v n="$BIG_MIB" 'BEGIN { printf "%.1f", n * 1.048576 / s }')
  done
done
bench_table "$BIG_MIB MiB to one host: throughput, MB/s (size / median time)" "$keys" bgnewtp bgreptp scptp sftptp rsynctp
printf '\nthroughput ratios (higher is better for boxgate)\n'
bench_ratio "boxgate (new) / scp" bgnewtp scptp "$keys" ">= 0.9x"
bench_ratio "boxgate (new) / sftp" bgnewtp sftptp "$keys" ">= 0.9x"
bench_ratio "boxgate (new) / rsync" bgnewtp rsynctp "$keys" ">= 0.9x"
fi
bench_note "throughput ratios: boxgate MB/s over the peer MB/s"
bench_note "boxgate's times include hashing the file here, the SHA-256 check of the upload on the box, .bak and rename; the peers only copy"
bench_note "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end; every handshake is CPU-bound here"
bench_notes
