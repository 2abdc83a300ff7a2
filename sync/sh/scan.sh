# shellcheck shell=sh
# Targets with a .bak or a temporary file beside them, NUL-separated.
echo "@$BGN scan"
find . -name .git -prune -o -type f \( -name '*.bak' -o -name '.*.boxgate-????????????????.tmp*' \) -print0
printf '\n%s\n' "@$BGN end"
