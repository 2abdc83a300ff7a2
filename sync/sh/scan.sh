# shellcheck shell=sh
# Targets with a .bak or a temporary file beside them, NUL-separated, then
# the manifest (the files push placed, .bak or not).
echo "@$BGN scan"
find . -name .git -prune -o -type f \( -name '*.bak' -o -name '.*.boxgate-????????????????.tmp*' \) -print0
printf '\n'
bgpushed
echo "@$BGN end"
