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

# bgs INDEX TEMP TARGET BAK-TEMP KEEP-OWNER: TARGET.bak becomes the current
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
	if mv -f -- "$2" "$3"; then echo "@$BGN ok $1 $w"; else rm -f -- "$2"; echo "@$BGN x $1 mv"; return 1; fi
}

# bgr INDEX TARGET TEMP: TEMP becomes a second name of TARGET.bak.
bgr() {
	if [ ! -f "$2.bak" ] || [ -L "$2.bak" ]; then echo "@$BGN x $1 nobak"; return 1; fi
	ln -- "$2.bak" "$3" 2>/dev/null || cp -p -- "$2.bak" "$3" || { rm -f -- "$3"; echo "@$BGN x $1 copy"; return 1; }
}
