#!/usr/bin/env bash
# The man page, doc/boxgate.1: man(1) and groff render it without a warning, and it
# cannot drift from the binary. Every command of boxgate's command table (as the
# hidden `boxgate __complete` lists it from the table the dispatcher uses) is in
# `boxgate --help` and has its part in COMMANDS; every option of its option table (the
# table the parser uses) is named in `boxgate CMD --help` and in that part. The exit
# codes `boxgate --help` lists, the configuration keys conf/load.c knows and the
# environment variables cli/ reads are described too. An option added to a table
# without docs fails here.
source "$(dirname "$0")/lib.sh"

page=$BG_ROOT/doc/boxgate.1
command -v man >/dev/null 2>&1 || skip_all "man is not installed (tests/install-deps: man-db)"
command -v groff >/dev/null 2>&1 || skip_all "groff is not installed (tests/install-deps: groff-base)"

# --- it renders, without a warning ---
warn=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
if [ -z "$warn" ]; then ok "man --warnings -l renders it without a warning"; else
  not_ok "man --warnings -l renders it without a warning"; diag "$warn"; fi
warn=$(groff -man -ww -z "$page" 2>&1)
if [ -z "$warn" ]; then ok "groff -man -ww -z: no warning"; else
  not_ok "groff -man -ww -z: no warning"; diag "$warn"; fi
warn=$(MANWIDTH=60 man --warnings -l "$page" 2>&1 >/dev/null)
if [ -z "$warn" ]; then ok "... nor on a 60-column terminal"; else
  not_ok "... nor on a 60-column terminal"; diag "$warn"; fi

version=$(cat "$BG_ROOT/VERSION")
if grep -q "^\.TH BOXGATE 1 [0-9-]* \"boxgate $version\"" "$page"; then ok "the page is of this version ($version)"; else
  not_ok "the page is of this version ($version)"; diag "$(grep '^\.TH' "$page")"; fi

# The page as plain text, wide enough that no option is broken across lines.
text=$BG_TMP/page.txt
groff -man -Tascii -rLL=200n -P-c -P-b -P-o -P-u "$page" >"$text" 2>/dev/null
has "$text" "^NAME$" "the page renders to text"
for s in NAME SYNOPSIS DESCRIPTION COMMANDS CONFIGURATION ENVIRONMENT FILES "EXIT STATUS" EXAMPLES "SEE ALSO"; do
  has "$text" "^$s\$" "section $s"
done

# part HEADING: the text of the subsection HEADING ("   run") up to the next heading.
part() {
  awk -v h="   $1" '$0 == h { on = 1; next } on && /^([^ ]|[ ][^ ]|[ ][ ][^ ]|[ ][ ][ ][^ ])/ { exit } on' "$text"
}
# names WORD FILE: WORD appears in FILE as a word of its own (not inside --dry-run).
names() { grep -Eq -- "(^|[^-[:alnum:]_])$1([^-[:alnum:]_]|\$)" "$2"; }

help_main=$BG_TMP/help.txt
"$BOXGATE" --help >"$help_main"
"$BOXGATE" __complete commands >"$BG_TMP/commands"
if [ "$(wc -l <"$BG_TMP/commands")" -ge 10 ]; then ok "__complete lists the command table"; else
  not_ok "__complete lists the command table"; diag "$(cat "$BG_TMP/commands")"; fi
missing=
while read -r cmd; do
  grep -Eq "^  $cmd " "$help_main" || missing="$missing boxgate-help:$cmd"
  part "$cmd" >"$BG_TMP/part"
  [ -s "$BG_TMP/part" ] || { missing="$missing man:$cmd"; continue; }
  "$BOXGATE" "$cmd" --help >"$BG_TMP/cmdhelp" 2>&1
  for opt in $("$BOXGATE" __complete options "$cmd"); do
    names "$opt" "$BG_TMP/cmdhelp" || missing="$missing $cmd-help:$opt"
    names "$opt" "$BG_TMP/part" || missing="$missing man-$cmd:$opt"
  done
done <"$BG_TMP/commands"
if [ -z "$missing" ]; then ok "every command and every option of the tables is in --help and the man page"; else
  not_ok "every command and every option of the tables is in --help and the man page"
  diag "undocumented:$missing"
fi

# A check that cannot fail proves nothing: a made-up option is not found.
part run >"$BG_TMP/part"
if names --no-such-option "$BG_TMP/part"; then not_ok "the drift check finds a missing option"; else
  ok "the drift check finds a missing option"; fi

# --- the exit codes boxgate --help lists ---
codes=$(sed -n '/^Exit codes:/,/^$/p' "$help_main" | grep -Eo '(^|[ ,(])[0-9]{1,3} ' | tr -dc '0-9\n ' | tr -s ' \n' '\n' | grep -v '^$' | sort -un)
sed -n '/^EXIT STATUS$/,/^[A-Z]/p' "$text" >"$BG_TMP/exit"
missing=
for c in $codes; do grep -Eq "^       $c( |$)" "$BG_TMP/exit" || missing="$missing $c"; done
if [ -n "$codes" ] && [ -z "$missing" ]; then ok "EXIT STATUS lists every code of --help (${codes//$'\n'/ })"; else
  not_ok "EXIT STATUS lists every code of --help"; diag "codes: $codes; missing:$missing"; fi

# --- every configuration key conf/load.c accepts ---
sed -n '/^CONFIGURATION$/,/^ENVIRONMENT$/p' "$text" >"$BG_TMP/conf"
keys=$(sed -nE 's/^[[:space:]]*\{"([a-z_]+)", K_[A-Z_]+, IN_.*/\1/p' "$BG_ROOT/conf/load.c")
missing=
for k in $keys slots disabled disabled_why; do grep -Eq "(^ +|, )$k = " "$BG_TMP/conf" || missing="$missing $k"; done
if [ "$(echo "$keys" | wc -w)" -ge 20 ] && [ -z "$missing" ]; then ok "CONFIGURATION describes every key ($(echo "$keys" | wc -w) box and defaults keys)"; else
  not_ok "CONFIGURATION describes every key"; diag "missing:$missing"; fi

# --- every environment variable boxgate itself reads ---
sed -n '/^ENVIRONMENT$/,/^FILES$/p' "$text" >"$BG_TMP/env"
vars=$(cat "$BG_ROOT"/cli/*.c | grep -Eo 'getenv\("[A-Z_]+"\)' | sed -E 's/getenv\("(.*)"\)/\1/' | sort -u)
missing=
for v in $vars; do names "$v" "$BG_TMP/env" || missing="$missing $v"; done
if [ -n "$vars" ] && [ -z "$missing" ]; then ok "ENVIRONMENT names every variable cli/ reads (${vars//$'\n'/ })"; else
  not_ok "ENVIRONMENT names every variable cli/ reads"; diag "missing:$missing"; fi
finish
