#!/usr/bin/env bash
# Shell completion: `boxgate __complete` lists the commands, a command's options and
# the configuration's boxes and pools from the tables the parser and the loader use;
# completion/boxgate.bash, driven here as bash drives it (COMP_WORDS, COMP_CWORD,
# COMP_LINE, COMP_POINT, then the function) and in a real interactive bash in a
# pseudo-terminal, completes a command, an option and a box name; completion/_boxgate
# completes the same in a real interactive zsh (zsh/zpty).
# Nothing connects: the boxes are names in a test configuration.
source "$(dirname "$0")/lib.sh"

cd "$BG_TMP" || exit 1
cat >c.ini <<'EOF'
[box gpu-a1]
host = 127.0.0.1
port = 1

[box gpu-a2]
host = 127.0.0.1
port = 1

[box other]
host = 127.0.0.1
port = 1

[box tuned]
host = 127.0.0.1
port = 1
gpus = 0-2
allow = --kind --shape

[pool fleet]
slots = gpu-a1:0, gpu-a2:0
EOF
printf '[box\n' >broken.ini
bg() { "$BOXGATE" --config "$BG_TMP/c.ini" "$@"; }

# --- the hidden command ---
expect_rc 0 "__complete commands" "$BOXGATE" __complete commands
for c in run exec push status config help; do has "$OUT_FILE" "^$c\$" "... lists $c"; done
hasnt "$OUT_FILE" "__complete" "... but not itself"
expect_rc 0 "boxgate --help" "$BOXGATE" --help
hasnt "$OUT_FILE" "__complete" "the hidden command is not in the help"
expect_rc 2 "a typo near it is an unknown command" "$BOXGATE" complete
hasnt "$ERR_FILE" "__complete" "... never pointing at the hidden one"
expect_rc 0 "__complete options exec" "$BOXGATE" __complete options exec
has "$OUT_FILE" "^--boxes$" "... --boxes"
has "$OUT_FILE" "^--gather$" "... --gather"
has "$OUT_FILE" "^-b$" "... and its letter -b"
hasnt "$OUT_FILE" "^--(verify-timeout|dry-run)$" "... and no other command's options"
expect_rc 0 "__complete valued run" "$BOXGATE" __complete valued run
has "$OUT_FILE" "^--gpu$" "... lists the options that take a value"
has "$OUT_FILE" "^--warmup$" "... --warmup"
has "$OUT_FILE" "^--export-markdown$" "... --export-markdown"
has "$OUT_FILE" "^--export-json$" "... --export-json"
hasnt "$OUT_FILE" "^(-v|--verbose)$" "... not -v"
hasnt "$OUT_FILE" "^--json$" "... not the flags"
expect_rc 2 "__complete options of an unknown command" "$BOXGATE" __complete options nope
has "$ERR_FILE" "__complete: options of which command\? \(got 'nope'\)" "... says so"
expect_rc 0 "__complete boxes with --config" bg __complete boxes
has "$OUT_FILE" "^gpu-a1$" "... the configured boxes"
has "$OUT_FILE" "^local$" "... and the built-in local box"
expect_rc 0 "__complete pools" bg __complete pools
has "$OUT_FILE" "^fleet$" "... the pools"
expect_rc 0 "__complete boxes with a broken config" "$BOXGATE" --config "$BG_TMP/broken.ini" __complete boxes
if [ -s "$OUT_FILE" ] || [ -s "$ERR_FILE" ]; then not_ok "... prints nothing at all"; diag "$(cat "$OUT_FILE" "$ERR_FILE")"; else ok "... prints nothing at all"; fi

# --- bash, driven as bash drives a completion function ---
# comp LINE: completes LINE with the cursor at its end; prints COMPREPLY one a line.
cat >drive.bash <<EOF
source "$BG_ROOT/completion/boxgate.bash"
PATH="$(dirname "$BOXGATE"):\$PATH"
comp() {
  COMP_LINE=\$1 COMP_POINT=\${#1}
  read -ra COMP_WORDS <<<"\$1"
  [[ \$1 == *' ' ]] && COMP_WORDS+=("")
  COMP_CWORD=\$((\${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _boxgate boxgate "\${COMP_WORDS[COMP_CWORD]}" "\${COMP_WORDS[COMP_CWORD - 1]}"
  printf '%s\n' "\${COMPREPLY[@]}"
}
EOF
# bcomp LINE [ENV=VALUE...]: the completions of LINE in a fresh bash, in $OUT_FILE.
bcomp() {
  local line=$1; shift
  env "$@" bash -c 'source ./drive.bash && comp "$1"' _ "$line" >"$OUT_FILE" 2>"$ERR_FILE"
}
words_are() { # WANT DESC: $OUT_FILE holds exactly the words WANT (sorted)
  local got; got=$(sort "$OUT_FILE" | tr '\n' ' ')
  if [ "$got" = "$1 " ]; then ok "$2"; else not_ok "$2"; diag "got '$got', wanted '$1 '"; diag "$(cat "$ERR_FILE")"; fi
}
bcomp "boxgate ex"; words_are "exec explain" "bash: a command prefix"
bcomp "boxgate exec --ga"; words_are "--gather" "bash: an option prefix"
bcomp "boxgate push --dry"; words_are "--dry-run" "bash: another command's option"
bcomp "boxgate run --str"; words_are "--strict-noise" "bash: run's --strict-noise"
bcomp "boxgate run --exp"; words_are "--export-json --export-markdown" "bash: run's --export-markdown and --export-json"
bcomp "boxgate run --war"; words_are "--warmup" "bash: run's --warmup"
bcomp "boxgate run --verb"; words_are "--verbose" "bash: run's --verbose"
bcomp "boxgate --config $BG_TMP/c.ini run --warmup 2 oth"; words_are "other" "bash: --warmup's value is not the box operand"
bcomp "boxgate --config $BG_TMP/c.ini run -v oth"; words_are "other" "bash: -v takes no value"
bcomp "boxgate --config $BG_TMP/c.ini run other --export-json $BG_TMP/c."; words_are "$BG_TMP/c.ini" "bash: a file after --export-json"
bcomp "boxgate --config $BG_TMP/c.ini exec --boxes gpu"; words_are "gpu-a1 gpu-a2" "bash: a box name prefix after --boxes, with --config on the line"
bcomp "boxgate --config=$BG_TMP/c.ini run o"; words_are "other" "bash: run's box operand, --config=FILE"
bcomp "boxgate run gpu-a" BOXGATE_CONFIG="$BG_TMP/c.ini"; words_are "gpu-a1 gpu-a2" "bash: a box name from \$BOXGATE_CONFIG"
bcomp "boxgate --config $BG_TMP/c.ini exec --boxes gpu-a1,o"; words_are "gpu-a1,other" "bash: the last item of a comma list"
bcomp "boxgate --config $BG_TMP/c.ini status --boxes @f"; words_are "@fleet" "bash: @pool in a selection"
bcomp "boxgate --config $BG_TMP/c.ini exec --boxes gpu-a1!o"; words_are "gpu-a1!other" "bash: the item after clush's '!'"
bcomp "boxgate --config $BG_TMP/c.ini exec --all -x gpu-a"; words_are "gpu-a1 gpu-a2" "bash: a box name after -x"
bcomp "boxgate exec --config $BG_TMP/c.ini -w oth"; words_are "other" "bash: --config after the command, a box after -w"
bcomp "boxgate run --config $BG_TMP/c.ini oth"; words_are "other" "bash: --config's value is not the box operand"
bcomp "boxgate status --no"; words_are "--no-clean --no-fold" "bash: an option prefix after the command"
bcomp "boxgate status --con"; words_are "--config" "bash: --config after the command"
bcomp "boxgate --config $BG_TMP/c.ini exec --pool f"; words_are "fleet" "bash: a pool name after --pool"
bcomp "boxgate results compare --before ru"; words_are "run=" "bash: a selector key after --before"
bcomp "boxgate report x.jsonl --select var"; words_are "variant=" "bash: a selector key after --select"
bcomp "boxgate results show --by p"; words_are "point" "bash: --by point"
bcomp "boxgate --config $BG_TMP/c.ini check gpu-a1 oth"; words_are "other" "bash: check takes many boxes"
bcomp "boxgate --config $BG_TMP/c.ini disconnect gpu-a1 oth"; words_are "other" "bash: disconnect takes many boxes"
bcomp "boxgate --config $BG_TMP/c.ini run --gpu 0 oth"; words_are "other" "bash: an option's value is not the box operand"
bcomp "boxgate --config $BG_TMP/c.ini run other oth"; words_are "" "bash: run takes one box"
bcomp "boxgate --config $BG_TMP/broken.ini run o"; words_are "" "bash: a broken config completes nothing"
if [ -s "$ERR_FILE" ]; then not_ok "... and prints nothing under the line"; diag "$(cat "$ERR_FILE")"; else ok "... and prints nothing under the line"; fi
bcomp "boxgate help sta"; words_are "status" "bash: help completes a command"
bcomp "boxgate --config $BG_TMP/c.ini run tuned -- --"; words_are "--kind --shape" "bash: after --, the box's allowlist"
bcomp "boxgate --config $BG_TMP/c.ini explain -w tuned --gpu 1 -- --sh"; words_are "--shape" "bash: the allowlist of the box --boxes names"
bcomp "boxgate --config $BG_TMP/c.ini run tuned --gpu "; words_are "0 1 2" "bash: after --gpu, the box's gpus"
bcomp "boxgate --config $BG_TMP/c.ini run other --gpu "; words_are "" "bash: a box without gpus offers none (no file names)"
expect_rc 0 "__complete allow BOX" bg __complete allow tuned
[ "$(paste -sd' ' "$OUT_FILE")" = "--kind --shape" ] && ok "__complete allow lists the allowlist" || not_ok "__complete allow: $(cat "$OUT_FILE")"
expect_rc 0 "__complete gpus BOX" bg __complete gpus tuned
[ "$(paste -sd' ' "$OUT_FILE")" = "0 1 2" ] && ok "__complete gpus lists the gpus one by one" || not_ok "__complete gpus: $(cat "$OUT_FILE")"
# As an interactive bash splits them (COMP_WORDBREAKS holds '='): --flag=VALUE is three words.
cat >>drive.bash <<'EOF'
# compw WORD...: completes the last WORD, the words given as bash splits them.
compw() {
  COMP_WORDS=("$@") COMP_CWORD=$(($# - 1)) COMP_LINE="$*" COMP_POINT=${#COMP_LINE}
  COMPREPLY=()
  _boxgate boxgate "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
  printf '%s\n' "${COMPREPLY[@]}"
}
EOF
bcompw() { bash -c 'source ./drive.bash && compw "$@"' _ "$@" >"$OUT_FILE" 2>"$ERR_FILE"; }
bcompw boxgate --config = "$BG_TMP/c.ini" run oth; words_are "other" "bash: --config=FILE split at '=' is no command"
bcompw boxgate --config = "$BG_TMP/c.ini" exec --boxes = gpu; words_are "gpu-a1 gpu-a2" "bash: --boxes=PREFIX split at '='"
bcompw boxgate --config = "$BG_TMP/c.ini" exec --pool = ""; words_are "fleet" "bash: --pool= split at '='"
bcompw boxgate run --config = "$BG_TMP/c.ini" oth; words_are "other" "bash: a --config=FILE after the command is no operand"
bcompw boxgate --config = "$BG_TMP/c.ini" run --gpu = 0 oth; words_are "other" "bash: --gpu=0 split at '=' is no operand"
# A real interactive bash in a pseudo-terminal (python3's pty): readline splits the
# words itself (at '=' too) and inserts the one completion there is. Each line gets a
# TAB, then a bound key prints the edited line between markers.
cat >drive_pty.py <<'EOF'
# drive_pty.py COMPLETION_FILE BIN_DIR LINE...: prints each LINE as TAB completed it.
import os, pty, select, sys, time
comp, build, lines = sys.argv[1], sys.argv[2], sys.argv[3:]
pid, fd = pty.fork()
if pid == 0:
    os.environ['PS1'] = ''; os.environ['TERM'] = 'dumb'; os.environ['INPUTRC'] = '/dev/null'
    os.execvp('bash', ['bash', '--norc', '--noprofile', '-i'])
def read_until(marker, timeout=20):
    buf, end = b'', time.time() + timeout
    while marker not in buf and time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try: buf += os.read(fd, 65536)
            except OSError: break
    return buf
def send(s): os.write(fd, s.encode())
send("bind 'set enable-bracketed-paste off'; PS1=''; source %s; PATH=%s:$PATH\n" % (comp, build))
send('bind -x \'"\\C-x": echo "<<$READLINE_LINE>>"; READLINE_LINE=""\'\n')
send("echo RE''ADY\n"); read_until(b'READY\r\n')
for line in lines:
    send(line + '\t'); time.sleep(0.3); send('\x18')
    out = read_until(b'>>')
    i = out.rfind(b'<<'); j = out.rfind(b'>>')
    print(out[i+2:j].decode() if 0 <= i < j else '?? ' + repr(out[-200:]))
send('exit\n')
EOF
timeout 60 python3 drive_pty.py "$BG_ROOT/completion/boxgate.bash" "$(dirname "$BOXGATE")" \
  "boxgate --config=$BG_TMP/c.ini run oth" "boxgate --config $BG_TMP/c.ini exec --boxes=gpu-a1,oth" \
  "boxgate expl" "boxgate exec --gat" "boxgate exec --config $BG_TMP/c.ini --pool=fl" >"$OUT_FILE" 2>"$ERR_FILE"
has "$OUT_FILE" "^boxgate --config=$BG_TMP/c.ini run other $" "interactive bash: a box name, --config=FILE"
has "$OUT_FILE" "^boxgate --config $BG_TMP/c.ini exec --boxes=gpu-a1,other $" "interactive bash: the last item of --boxes=LIST"
has "$OUT_FILE" "^boxgate explain $" "interactive bash: a command"
has "$OUT_FILE" "^boxgate exec --gather $" "interactive bash: an option"
has "$OUT_FILE" "^boxgate exec --config $BG_TMP/c.ini --pool=fleet $" "interactive bash: --pool=POOL"
check "bash -n completion/boxgate.bash" bash -n "$BG_ROOT/completion/boxgate.bash"
if command -v shellcheck >/dev/null 2>&1; then
  check "shellcheck completion/boxgate.bash" shellcheck -s bash "$BG_ROOT/completion/boxgate.bash"
fi

# --- zsh: the function parses, and completes in a real interactive zsh ---
if ! command -v zsh >/dev/null 2>&1; then
  printf 'ok %d - zsh completion # SKIP zsh is not installed (tests/install-deps)\n' $((_tap_n += 1))
  finish; exit
fi
check "zsh -n completion/_boxgate" zsh -n "$BG_ROOT/completion/_boxgate"
# A zsh in a pseudo-terminal (zsh/zpty) with compinit: each line gets a TAB, then a
# widget prints the edited line between markers and clears it.
cat >drive.zsh <<EOF
zmodload zsh/zpty
zpty -b z zsh -f -i
zpty -w z "PS1='' RPROMPT=''; fpath=($BG_ROOT/completion \\\$fpath); path=($(dirname "$BOXGATE") \\\$path); autoload -Uz compinit; compinit -u -D"
zpty -w z 'dump() { print -r -- "<<\$BUFFER>>"; BUFFER=""; zle send-break }; zle -N dump; bindkey "^X" dump'
zpty -w z 'print READY'
zpty -r z out '*READY*READY*'
for line in "\$@"; do
  zpty -w -n z "\$line"\$'\t'
  sleep 0.3
  zpty -w -n z \$'\x18'
  zpty -r z out '*<<*>>*' && print -r -- "\${\${out##*<<}%%>>*}"
done
zpty -d z
EOF
zlines=("boxgate expl" "boxgate exec --acc" "boxgate --config $BG_TMP/c.ini run oth"
  "boxgate --config $BG_TMP/c.ini exec --boxes gpu-a1,oth" "boxgate --config $BG_TMP/c.ini exec --pool fl"
  "boxgate run --warm")
timeout 60 zsh -f drive.zsh "${zlines[@]}" >"$OUT_FILE" 2>"$ERR_FILE"
has "$OUT_FILE" "^boxgate explain $" "zsh: a command prefix"
has "$OUT_FILE" "^boxgate exec --accept-new $" "zsh: an option prefix"
has "$OUT_FILE" "^boxgate --config $BG_TMP/c.ini run other $" "zsh: a box name from --config"
has "$OUT_FILE" "^boxgate --config $BG_TMP/c.ini exec --boxes gpu-a1,other $" "zsh: the last item of a comma list"
has "$OUT_FILE" "^boxgate --config $BG_TMP/c.ini exec --pool fleet $" "zsh: a pool name"
has "$OUT_FILE" "^boxgate run --warmup $" "zsh: run's --warmup"
finish
