# shellcheck shell=sh
# Verify, swap and roll back (sync/internal.h). Assigned before it:
# BOXGATE_BOX. The client then defines a function per verifier and calls
# bgr, bgv and bgs per file.

# Verifiers that import the file must not leave bytecode named after the
# temporary file.
PYTHONDONTWRITEBYTECODE=1; export BOXGATE_BOX PYTHONDONTWRITEBYTECODE

# bgv INDEX TEMP EXPECTED-SHA HOW VERIFIER-FUNCTION TARGET VPATH VLINK VDIR
# HOW: 0 sha256sum, 1 the fastest hasher (big files), 2 already checked.
bgv() {
	if [ "$4" = 2 ]; then h=$3; elif [ "$4" = 1 ]; then h=$(bh < "$2"); else h=$(sha256sum < "$2"); fi
	h=${h%% *}
	echo "@$BGN h $1 $h"
	if [ -n "$3" ] && [ "$h" != "$3" ]; then rm -f -- "$2"; echo "@$BGN x $1 hash"; return 1; fi
	if [ -z "$5" ]; then echo "@$BGN vok $1"; return 0; fi
	BOXGATE_TARGET=$6; BOXGATE_FILE=$7; export BOXGATE_TARGET BOXGATE_FILE
	if [ -n "$8" ] && ! ln -s -- "$9" "$8"; then rm -f -- "$2"; echo "@$BGN x $1 vlink"; return 1; fi
	# The assignment's status is the verifier's, even when it calls exit.
	# The path goes in as $1 too: never as text to splice.
	o=$("$5" "$7" 2>&1 </dev/null); r=$?
	[ -z "$8" ] || rm -f -- "$8"
	# Each output line starts with '|': none can pass for a result line.
	if [ "$r" != 0 ]; then
		echo "@$BGN v $1 $r"; printf '%s\n' "$o" | sed 's/^/|/'; echo "@$BGN vend $1"
		rm -f -- "$2"; return 1
	fi
	echo "@$BGN vok $1"
}

# The manifest .boxgate/pushed: one line per path push placed,
# "SHA256<TAB>EPOCH<TAB>PATH", rewritten whole by rename. bgs adds what it
# swapped in to BGM ("SHA256<TAB>PATH" lines); bgm writes them at the end,
# keeping the other paths' lines, and says "m ok|x SKIPPED". A path with a
# tab or newline cannot be a line: it is skipped and counted (BGMX).
BGT='	' BGL='
' BGM='' BGMX=0

# bgma SHA256 ./TARGET
bgma() {
	p=${2#./}
	case $1$p in *"$BGT"* | *"$BGL"* | '') BGMX=$((BGMX + 1)); return 0;; esac
	[ -n "$1" ] || { BGMX=$((BGMX + 1)); return 0; }
	BGM=$BGM$1$BGT$p$BGL
}

# bgmw EPOCH: the new manifest on stdout.
bgmw() {
	if [ -f .boxgate/pushed ]; then
		while IFS= read -r l || [ -n "$l" ]; do
			p=${l#*"$BGT"}; p=${p#*"$BGT"}
			case $BGL$BGM in *"$BGT$p$BGL"*) continue;; esac
			printf '%s\n' "$l"
		done < .boxgate/pushed || return 1
	fi
	s=$BGM
	while [ -n "$s" ]; do
		l=${s%%"$BGL"*}; s=${s#*"$BGL"}
		printf '%s\t%s\t%s\n' "${l%%"$BGT"*}" "$1" "${l#*"$BGT"}" || return 1
	done
}

bgm() {
	[ -n "$BGM" ] || [ "$BGMX" != 0 ] || return 0
	r=ok
	if [ -n "$BGM" ]; then
		t=.boxgate/.pushed.$$.tmp
		# Under the lock no other push writes one: those left are a killed push's.
		[ "$L" = o ] && rm -f .boxgate/.pushed.*.tmp 2>/dev/null
		if { [ -d .boxgate ] || mkdir .boxgate; } 2>/dev/null && bgmw "$(date +%s)" > "$t" 2>/dev/null &&
			[ ! -d .boxgate/pushed ] && mv -f -- "$t" .boxgate/pushed 2>/dev/null; then :; else rm -f -- "$t" 2>/dev/null; r=x; fi
	fi
	echo "@$BGN m $r $BGMX"
	BGM='' BGMX=0
}

# bgs INDEX TEMP TARGET BAK-TEMP KEEP-OWNER SHA256: TARGET.bak becomes the current
# target (a hard link, or a full copy renamed into place: both keep its
# owner, group and mode), then TEMP replaces TARGET by rename(2). At no
# instant is TARGET anything but the old or the new file, nor TARGET.bak a
# partial one. With KEEP-OWNER=1, TEMP first gets TARGET's owner and group
# (numeric; chown drops setuid/setgid bits, so the mode is set again); when
# that is refused, a w line says so.
bgs() {
	w=created
	if [ -e "$3" ] || [ -L "$3" ]; then
		w=replaced
		# -ef is not POSIX, but dash, bash and busybox sh have it.
		# shellcheck disable=SC3013
		if [ "$3" -ef "$3.bak" ]; then :
		elif ln -f -- "$3" "$3.bak" 2>/dev/null; then :
		elif cp -p -- "$3" "$4" && mv -f -- "$4" "$3.bak"; then :
		else rm -f -- "$2" "$4"; echo "@$BGN x $1 bak"; return 1; fi
		if [ "$5" = 1 ]; then
			s=$(stat -c %u:%g:%a -- "$3" "$2" 2>/dev/null) || s=
			o=${s%%[!0-9:]*}; n=${s#*[!0-9:]}; ou=${o%:*}; nu=${n%:*}; nm=${n##*:}
			if [ -n "$ou" ] && [ -n "$nu" ] && [ "$ou" != "$nu" ]; then
				if chown -- "+${ou%:*}:+${ou#*:}" "$2" 2>/dev/null; then
					case $nm in [0-7][0-7][0-7][0-7]) chmod -- "$nm" "$2";; esac
				else chown -- ":+${ou#*:}" "$2" 2>/dev/null; echo "@$BGN w $1 $ou $nu"; fi
			fi
		fi
	fi
	if mv -f -- "$2" "$3"; then echo "@$BGN ok $1 $w"; bgma "$6" "$3"; else rm -f -- "$2"; echo "@$BGN x $1 mv"; return 1; fi
}

# bgr INDEX TARGET TEMP: TEMP becomes a copy of TARGET.bak (a copy: an edit
# in place of the rolled-back target must not reach the .bak); "same" when
# TARGET already has the .bak's content (a second rollback does nothing).
bgr() {
	if [ ! -f "$2.bak" ] || [ -L "$2.bak" ]; then echo "@$BGN x $1 nobak"; return 1; fi
	if [ -f "$2" ] && [ ! -L "$2" ] && cmp -s -- "$2" "$2.bak"; then echo "@$BGN x $1 same"; return 1; fi
	cp -p -- "$2.bak" "$3" || { rm -f -- "$3"; echo "@$BGN x $1 copy"; return 1; }
}

# bgrs INDEX TEMP TARGET KEEP SHA256: with KEEP, TARGET gets KEEP as a
# second name first (or a copy), never overwriting one; then TEMP replaces
# TARGET by rename(2).
bgrs() {
	if [ -n "$4" ] && [ -e "$3" ]; then
		if [ -e "$4" ] || [ -L "$4" ]; then rm -f -- "$2"; echo "@$BGN x $1 keep"; return 1; fi
		ln -- "$3" "$4" 2>/dev/null || { cp -p -- "$3" "$4.tmp$$" && mv -- "$4.tmp$$" "$4"; } || { rm -f -- "$2" "$4.tmp$$"; echo "@$BGN x $1 keep"; return 1; }
	fi
	if mv -f -- "$2" "$3"; then echo "@$BGN ok $1 replaced"; bgma "$5" "$3"; else rm -f -- "$2"; echo "@$BGN x $1 mv"; return 1; fi
}
