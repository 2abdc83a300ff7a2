#!/usr/bin/env bash
# run --kernel / --overlay against a real sshd test host: the gate sees the candidate's
# bytes at the overlaid paths and the production bytes everywhere else, through the
# configured variable too; the production tree's hash is the same before and after; a
# second run with the same candidate reuses the shadow tree; the record names the
# candidate; bad input is refused before anything connects; bootstrap --clean removes
# old shadow trees and only them.
source "$(dirname "$0")/lib.sh"
HOSTS=$BG_ROOT/tests/hosts/hosts

hosts_up 1
R=$BG_HOST_1_ROOT/repo
mkdir -p "$R/kernels" "$R/data" "$R/linked-target"
echo "production kernel" >"$R/kernels/largem.cuh"
echo "production data" >"$R/data/table.txt"
ln -s linked-target "$R/linkdir"
cat >"$R/gate.sh" <<'GATE'
#!/bin/sh
echo "kernel: $(cat kernels/largem.cuh)"
echo "data: $(cat data/table.txt)"
echo "root: ${MIRAGE_ROOT-unset}"
echo "via-root: $(cat "${MIRAGE_ROOT:-.}/kernels/largem.cuh")"
echo "listing: $(ls data | tr '\n' ' ')"
echo "new: $(cat data/new.txt 2>/dev/null || echo absent)"
echo 'FAITHFUL_RESULT {"kind":"largem_compact","shape":"w13","num_workers":8,"candidate":{"slowCTA_us":4.0,"wall_us":5.0,"sumCTA_us":400,"cos":0.9999,"status":"PASS"},"baseline_in_tree":{"slowCTA_us":5.2,"wall_us":6.1,"sumCTA_us":402,"cos":1.0,"status":"PASS"},"slowCTA_ratio_base_over_cand":1.3,"verdict":"PASS_GATE"}'
GATE
chmod +x "$R/gate.sh"
INI=$BG_TMP/t55.ini
cat "$BG_CONFIG" >"$INI"
cat >>"$INI" <<EOF2

[box g1]
host = h1
repo = /root/repo
gate = gate.sh
require_gpu = no
allow = --kind --shape --num-workers
kernel_paths = largem_compact:kernels/largem.cuh gemv_m1:kernels/gemv.cuh
overlay_env = MIRAGE_ROOT

[box bare]
host = h1
repo = /root/repo
gate = gate.sh
require_gpu = no
allow = --kind
EOF2
bg() { "$BOXGATE" --config "$INI" "$@"; }
cd "$BG_TMP" || exit 1
tree_hash() { (cd "$R" && find . -path ./.boxgate -prune -o -print0 | sort -z | xargs -0 ls -ld --time-style=+ | sha256sum; \
  find . -type f -not -path './.boxgate/*' -print0 | sort -z | xargs -0 sha256sum | sha256sum) | sha256sum | cut -d' ' -f1; }
before=$(tree_hash)
echo "candidate kernel A" >cand.cuh
echo "candidate data" >table.txt
RES=$BG_TMP/r.jsonl

expect_rc 0 "run --kernel" bg run g1 -v --kernel cand.cuh --results "$RES" -- --kind largem_compact --shape w13
has "$OUT_FILE" '^kernel: candidate kernel A$' "the gate sees the candidate at the kind's kernel path"
has "$OUT_FILE" '^data: production data$' "and the production bytes elsewhere"
has "$OUT_FILE" '^root: /.*/\.cache/boxgate/shadow/[0-9a-f]{64}$' "MIRAGE_ROOT (overlay_env) is the shadow tree"
has "$OUT_FILE" '^via-root: candidate kernel A$' "the candidate is there through MIRAGE_ROOT too"
has "$ERR_FILE" '^boxgate: g1: candidate overlay [0-9a-f]{12} made at ' "the first run made the shadow tree"
check "the production tree is unchanged (every path, mode and content hashed)" test "$(tree_hash)" = "$before"
check "the record names the candidate: path, sha256 and the shadow tree" python3 - "$RES" "$(sha256sum <cand.cuh | cut -d' ' -f1)" <<'PY'
import json, sys
rec = json.loads(open(sys.argv[1]).read().splitlines()[-1])
ov = rec["overlay"]
assert ov["files"] == [{"path": "kernels/largem.cuh", "sha256": sys.argv[2], "local": "cand.cuh"}], ov
assert len(ov["id"]) == 64 and ov["root"].endswith(ov["id"]) and ov["reused"] is False, ov
PY

expect_rc 0 "the same candidate again" bg run g1 -v --kernel cand.cuh --no-results -- --kind largem_compact
has "$ERR_FILE" '^boxgate: g1: candidate overlay [0-9a-f]{12} reused at ' "the second run reused the shadow tree"
check "one shadow tree on the box" test "$(find "$BG_HOST_1_ROOT/.cache/boxgate/shadow" -mindepth 1 -maxdepth 1 | wc -l)" = 1

# the shadow tree follows the repo: a file pushed, one modified, one deleted between runs
echo "gone soon" >"$R/data/gone.txt"
expect_rc 0 "a run with the candidate" bg run g1 -v --kernel cand.cuh --no-results -- --kind largem_compact
has "$OUT_FILE" '^listing: gone.txt table.txt $' "the gate sees the repo's files"
echo "pushed new" >new.txt
echo "production data v2" >table2.txt
expect_rc 0 "push a new file and a changed one into the repo" bg push --boxes g1 new.txt=data/new.txt table2.txt=data/table.txt
rm "$R/data/gone.txt" "$R/data/table.txt.bak"
expect_rc 0 "the same candidate after the push" bg run g1 -v --kernel cand.cuh --no-results -- --kind largem_compact
has "$OUT_FILE" '^new: pushed new$' "the gate sees the pushed file"
has "$OUT_FILE" '^data: production data v2$' "and the pushed change"
has "$OUT_FILE" '^listing: new.txt table.txt $' "and not the deleted file"
has "$OUT_FILE" '^kernel: candidate kernel A$' "with the candidate still in place"
has "$ERR_FILE" 'candidate overlay [0-9a-f]{12} made at ' "a changed repo gets a new tree"
expect_rc 0 "again, nothing changed" bg run g1 -v --kernel cand.cuh --no-results -- --kind largem_compact
has "$ERR_FILE" 'candidate overlay [0-9a-f]{12} reused at ' "an unchanged repo reuses it"
echo "production data" >"$R/data/table.txt"
rm -f "$R/data/new.txt" "$R/data/table.txt.bak" "$R/.boxgate/pushed"
rmdir "$R/.boxgate" 2>/dev/null
expect_rc 0 "the repo back as it was" bg run g1 -v --kernel cand.cuh --no-results -- --kind largem_compact
has "$OUT_FILE" '^listing: table.txt $' "the gate sees the repo as it is"
has "$ERR_FILE" 'candidate overlay [0-9a-f]{12} reused at ' "the first tree, which matches it again, is reused"
before=$(tree_hash)

expect_rc 0 "--kernel and --overlay together" bg run g1 -v --kernel cand.cuh --overlay table.txt=data/table.txt --no-results -- --kind largem_compact
has "$OUT_FILE" '^data: candidate data$' "--overlay places a file at any repo path"
echo "candidate kernel B" >cand.cuh
expect_rc 0 "another candidate" bg run g1 -v --kernel cand.cuh --no-results -- --kind largem_compact
has "$OUT_FILE" '^kernel: candidate kernel B$' "a changed candidate gets its own tree"
has "$ERR_FILE" 'candidate overlay [0-9a-f]{12} made at ' "made, not reused"
expect_rc 0 "no overlay: the production tree" bg run g1 -v --no-results -- --kind largem_compact
has "$OUT_FILE" '^kernel: production kernel$' "without --kernel the gate runs in the repo"
has "$OUT_FILE" '^root: unset$' "and MIRAGE_ROOT is not set"
check "the production tree is still unchanged" test "$(tree_hash)" = "$before"
check "no temporary tree left" test -z "$(find "$BG_HOST_1_ROOT/.cache/boxgate/shadow" -mindepth 1 -maxdepth 1 -name '.*')"

# bad input, refused before anything connects
expect_rc 2 "--kernel without --kind" bg run g1 --kernel cand.cuh -- --shape w13
has "$ERR_FILE" '--kernel needs the gate.s --kind' "the error says --kind is needed"
expect_rc 2 "--kernel for a kind the box has no path for" bg run g1 --kernel cand.cuh -- --kind nope
has "$ERR_FILE" 'box g1 names no kernel path for --kind nope' "the error names the box, the kind and the key"
expect_rc 2 "--kernel on a box without kernel_paths" bg run bare --kernel cand.cuh -- --kind largem_compact
expect_rc 2 "a missing candidate file" bg run g1 --kernel missing.cuh -- --kind largem_compact
has "$ERR_FILE" 'missing\.cuh' "the error names the file"
expect_rc 2 "--overlay without '='" bg run g1 --overlay table.txt -- --kind largem_compact
has "$ERR_FILE" "--overlay wants LOCAL=REPO_PATH, got 'table.txt'" "the error shows the form"
expect_rc 2 "--overlay above the repo" bg run g1 --overlay table.txt=../evil.txt -- --kind largem_compact
has "$ERR_FILE" 'escapes the repo' "the error says it escapes the repo"
expect_rc 2 "--overlay with shell bytes" bg run g1 --overlay 'table.txt=data/$(id).txt' -- --kind largem_compact
expect_rc 2 "the same path twice" bg run g1 --kernel cand.cuh --overlay table.txt=kernels/largem.cuh -- --kind largem_compact
has "$ERR_FILE" 'overlaid twice' "the error says so"
printf '[box x]\nhost = h1\nkernel_paths = nokind\n' >bad.ini
expect_rc 2 "a kernel_paths entry without KIND:" "$BOXGATE" --config bad.ini config check
has "$ERR_FILE" 'bad\.ini:3: kernel_paths' "the error names the file and line"
# a directory on the way that is a link in the repo would write the production tree
expect_rc 1 "an overlay under a symlinked directory is refused" bg run g1 --overlay table.txt=linkdir/t.txt --no-results -- --kind largem_compact
has "$ERR_FILE" 'symlink in the repo' "the refusal says why"
check "nothing was written through the link" test ! -e "$R/linked-target/t.txt"

# bootstrap --clean: trees unused for DAYS days go, the others stay
n_trees() { find "$BG_HOST_1_ROOT/.cache/boxgate/shadow" -mindepth 1 -maxdepth 1 | wc -l; }
have=$(n_trees)
old=$(find "$BG_HOST_1_ROOT/.cache/boxgate/shadow" -mindepth 1 -maxdepth 1 | head -1)
touch -d '10 days ago' "$old/.boxgate-shadow"
expect_rc 0 "bootstrap --clean" bg bootstrap g1 --clean
has "$OUT_FILE" '^g1: shadow trees removed 1$' "the one tree unused for 10 days was removed (default 7 days)"
check "the others stay" test "$(n_trees)" = $((have - 1))
check "the production tree is still unchanged after the clean" test "$(tree_hash)" = "$before"
expect_rc 0 "bootstrap --clean --older-than 0" bg bootstrap g1 --clean --older-than 0
check "every tree is gone" test "$(n_trees)" = 0
expect_rc 2 "--older-than without --clean" bg bootstrap g1 --older-than 3
expect_rc 2 "a bad --older-than" bg bootstrap g1 --clean --older-than 1.5
check "the production tree is unchanged at the end" test "$(tree_hash)" = "$before"

# a gate that edits the overlaid file in its tree spoils it: the next run makes a new one
expect_rc 0 "a run with candidate B after the clean" bg run g1 -v --kernel cand.cuh --no-results -- --kind largem_compact
SH=$BG_HOST_1_ROOT/.cache/boxgate/shadow
root=$(ls -d "$SH"/[0-9a-f]*)
check "one tree" test "$(echo "$root" | wc -l)" = 1
echo spoiled >>"$root/kernels/largem.cuh"  # as a gate editing its candidate in place would
expect_rc 0 "the next run with the same candidate" bg run g1 -v --kernel cand.cuh --no-results -- --kind largem_compact
has "$OUT_FILE" '^kernel: candidate kernel B$' "sees the candidate's bytes, not the spoiled ones"
has "$ERR_FILE" 'candidate overlay [0-9a-f]{12} made at ' "in a tree made anew"
ln -sf /etc/hostname "$root/data/extra"
expect_rc 0 "a tree with a link added by a gate is not reused" bg run g1 -v --kernel cand.cuh --no-results -- --kind largem_compact
has "$ERR_FILE" 'candidate overlay [0-9a-f]{12} made at ' "made anew"
hasnt "$OUT_FILE" 'extra' "the added link is not in it"
root=$(ls -d "$SH"/[0-9a-f]*)
rm "$root/data/table.txt"; echo "poisoned" >"$root/data/table.txt"
echo "$(basename "$root")" >"$root/.boxgate-shadow"
expect_rc 0 "a tree whose link a gate replaced by its own file (mark rewritten) is not reused" bg run g1 -v --kernel cand.cuh --no-results -- --kind largem_compact
has "$OUT_FILE" '^data: production data$' "the gate sees the repo's bytes, not the planted ones"
has "$ERR_FILE" 'candidate overlay [0-9a-f]{12} made at ' "in a tree made anew"
root=$(ls -d "$SH"/[0-9a-f]*)
ln -sfn /etc "$root/kernels" 2>/dev/null || { rm -rf "$root/kernels"; ln -s /etc "$root/kernels"; }
expect_rc 0 "a tree whose directory a gate replaced by a link out is not reused" bg run g1 -v --kernel cand.cuh --no-results -- --kind largem_compact
has "$OUT_FILE" '^kernel: candidate kernel B$' "the candidate is in place again"
check "still one complete tree (the spoiled ones moved aside, unmarked)" test "$(ls -d "$SH"/[0-9a-f]* | wc -l)" = 1
check "the spoiled ones go with bootstrap --clean's temporary trees" test "$(find "$SH" -mindepth 2 -maxdepth 2 -path "$SH/.*/.boxgate-shadow" | wc -l)" = 0

finish
