# shellcheck shell=sh
# The probe (sync/internal.h): the repo, the push lock, each target's state.
# Assigned before it: BG_LOCK (1: take the lock), BG_WAIT (seconds to wait
# for it, 0: do not wait), BG_FAIL_BUSY (1: stop when another push holds it),
# BG_CLEAN (1: remove stale temporary files), BG_HOLD (1: serve the next
# steps under the lock). The client then calls bgp per target, bgstats,
# bghashes, bgbig and bgend.
cd -P . || exit 3
R=$PWD
printf '%s\n' "@$BGN repo $R"
L=n
bglock() { if [ "$BG_WAIT" -gt 0 ]; then flock -w "$BG_WAIT" 9; else flock -n 9; fi; }
if [ "$BG_LOCK" = 1 ] && command -v flock >/dev/null 2>&1; then exec 9<.; if bglock; then L=o; else L=b; fi; fi
echo "@$BGN lock $L"
[ "$BG_FAIL_BUSY" = 1 ] && [ "$L" = b ] && exit 4
C=$BG_CLEAN; [ "$L" = b ] && C=0
# Links an interrupted verify step left (sync_apply_file.vlink).
[ "$C" = 1 ] && for g in ./.boxgate-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f].vdir; do [ -L "$g" ] && rm -f -- "$g"; done

# bgp INDEX TARGET DIR STALE-TEMP...: the target's type, its .bak's, where
# its directory leads, whether it is writable; stale temporary files.
bgp() {
	i=$1 f=$2 d=$3; shift 3
	t=M
	if [ -L "$f" ]; then t=L; elif [ -d "$f" ]; then t=D; elif [ -f "$f" ]; then if [ -r "$f" ]; then t=F; else t=U; fi; elif [ -e "$f" ]; then t=O; fi
	k=-; if [ -L "$f.bak" ]; then k=L; elif [ -f "$f.bak" ]; then k=F; elif [ -e "$f.bak" ]; then k=O; fi
	a=$d; while [ ! -d "$a" ]; do case $a in */*) a=${a%/*};; *) a=.;; esac; done
	e=1; [ "$a" = "$d" ] || e=0
	w=0; [ -w "$a" ] && w=1
	p=e; if cd -P -- "$a" 2>/dev/null; then case $PWD/ in "$R"/*) p=i;; *) p=o;; esac; cd -- "$R" || exit 3; fi
	echo "@$BGN f $i $t $k $p $w $e"
	eval "T$i=\$t"
	for g in "$@"; do
		[ -e "$g" ] || [ -L "$g" ] || continue
		if [ "$C" = 1 ] && rm -f -- "$g"; then r=r; else r=k; fi
		echo "@$BGN t $i $r ${g##*.boxgate-}"
	done
}

# Mode and size, then SHA-256, of the regular targets given.
bgstats() { echo "@$BGN stats $#"; [ $# = 0 ] || stat -c '%a %s' -- "$@"; }
bghashes() { echo "@$BGN hashes $#"; [ $# = 0 ] || sha256sum -- "$@"; }

# bgbig INDEX SIZE TARGET: a big target's hash when its size is SIZE.
bgbig() {
	eval "t=\$T$1"
	if [ "$t" = F ]; then
		s=$(stat -c %s -- "$3")
		if [ "$s" = "$2" ]; then printf '%s ' "@$BGN H $1"; bh < "$3" || echo; else echo "@$BGN S $1 $s"; fi
	fi
}

# With BG_HOLD, serve the next steps of this push under the lock: each is a
# script on stdin ended by a go line; stdin's end ends it all.
bgend() {
	echo "@$BGN end"
	[ "$BG_HOLD" = 1 ] || exit 0
	while :; do
		s='' g=''
		while IFS= read -r l; do if [ "$l" = "@$BGN go" ]; then g=1; break; fi; s="$s$l
"; done
		[ -n "$g" ] || exit 0
		eval "$s"
		echo "@$BGN done"
	done
}
