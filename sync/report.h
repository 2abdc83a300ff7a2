/* sync/'s reporting helpers (no printing): state names, exit codes, a file's
 * description and JSON, the push manifest read and parsed. */
#ifndef BG_SYNC_REPORT_H
#define BG_SYNC_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/sha256.h"
#include "base/strbuf.h"
#include "remote/remote.h"
#include "sync/box.h"

/* "unchanged", "updated", "would update", "verify failed", ...: for people. */
const char *sync_state_name(sync_state s);
/* The same as a JSON key or value: no spaces ("would_update",
 * "no_local_file", "rolled_back"). */
const char *sync_state_key(sync_state s);
/* Status: the box's manifest says push placed the file and no .bak is
 * beside it (push keeps none when it creates a file). */
bool sync_file_created_by_push(const sync_file *f);
/* True for the states that count as failures. */
bool sync_state_failed(sync_state s);
/* A path as a person should see it: as is when printable UTF-8 without
 * quotes or backslashes, else in double quotes with C escapes (\n, \", \\,
 * \xNN for bytes that are not UTF-8). Owned. */
char *sync_path_display(const char *path);
/* The process exit code for a set of boxes: 4 if a verifier refused a file,
 * else 3 if a box could not be reached (connect, host key, auth), else 1 if
 * anything else failed, else 0. */
int sync_exit_code(const sync_box *boxes, size_t n);
/* One line about file i on box b, without the box name: "PATH: updated
 * (sha256 ... confirmed on the box, previous as .bak kept)". Owned. */
char *sync_file_describe(const sync_box *b, size_t i);

/* The box's manifest (<repo>/.boxgate/pushed, one "SHA256 TAB EPOCH TAB
 * PATH" line per path push or rollback last placed there): what to warn
 * about it once, naming the box; NULL when nothing. Owned. */
char *sync_manifest_warning(const sync_box *b);

/* Reads the manifest back through `c` (bounded to SYNC_MANIFEST_MAX bytes):
 * *text owned, "" when there is none. */
#define SYNC_MANIFEST_MAX (1u << 20)
int sync_manifest_read(remote_conn *c, const sync_target *box, char **text, bg_err *err);
/* sync_manifest_read in the same command as `guard` (a shell condition run
 * first, e.g. "the agent is there"), so both cost one channel: *guard_ok says
 * whether it held. When it does not, or the command's status never came
 * back, *guard_ok is false and nothing was read (*text NULL, 0 returned
 * unless the transport failed). */
int sync_manifest_read_if(remote_conn *c, const sync_target *box, const char *guard, bool *guard_ok,
			  char **text, bg_err *err);
/* One well-formed manifest line, "SHA256 TAB EPOCH TAB PATH" (lowercase
 * hex, 1 to 12 digits up to the end of year 9999, a path): path points
 * into the line (not NUL-terminated). */
typedef struct sync_manifest_entry {
	char sha[BG_SHA256_HEX_LEN + 1];
	int64_t epoch;
	const char *path;
	size_t path_len;
} sync_manifest_entry;
bool sync_manifest_line(const char *line, size_t len, sync_manifest_entry *e);
/* Every well-formed line of `text`, in order; *out owned (free), its
 * paths point into text. Returns how many. */
size_t sync_manifest_parse(const char *text, sync_manifest_entry **out);

/* The same as one JSON object {box, path|path_b64, state, ...}; owned by
 * the caller (cJSON_Delete). */
struct cJSON;
struct cJSON *sync_file_json(const sync_box *b, size_t i);
/* How many files across the boxes are in each state. */
void sync_count(const sync_box *boxes, size_t n, size_t counts[SYNC_STATE_COUNT]);

#endif
