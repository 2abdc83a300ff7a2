# shellcheck shell=sh
# The start of every sync script: enter the repo or say it is not there.
# Assigned before it: BGN (the nonce of the result lines), BG_REPO.
cd -- "$BG_REPO" 2>/dev/null || { echo "@$BGN norepo"; exit 3; }
# The fastest SHA-256 the box has, for big files.
if command -v openssl >/dev/null 2>&1; then bh() { openssl dgst -sha256 -r; }; else bh() { sha256sum; }; fi
