# shellcheck shell=sh
# The start of every sync script: enter the repo or say it is not there.
# Assigned before it: BGN (the nonce of the result lines), BG_REPO.
cd -- "$BG_REPO" 2>/dev/null || { echo "@$BGN norepo"; exit 3; }
# The fastest SHA-256 the box has, for big files.
if command -v openssl >/dev/null 2>&1; then bh() { openssl dgst -sha256 -r; }; else bh() { sha256sum; }; fi
# bgpushed: the manifest .boxgate/pushed (what push placed: status and
# rollback name those files), each line after a '|' so none can pass for a
# result line; "big" when it has over BG_PUSHED_MAX bytes.
bgpushed() {
	[ -f .boxgate/pushed ] || return 0
	bgz=$(wc -c < .boxgate/pushed) || return 0
	if [ "$bgz" -gt "$BG_PUSHED_MAX" ]; then echo "@$BGN pushed big"; return 0; fi
	echo "@$BGN pushed"
	sed 's/^/|/' .boxgate/pushed
}
