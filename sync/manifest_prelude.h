/* The push manifest read by a command that runs anyway (a gate's run), in
 * front of its own work: shell text that prints the manifest's lines each
 * behind a tag, then the tag and '.', and the collector of those lines on
 * the client. One channel where a read of its own would take another. */
#ifndef BG_SYNC_MANIFEST_PRELUDE_H
#define BG_SYNC_MANIFEST_PRELUDE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "base/strbuf.h"
#include "sync/box.h"

/* The tag of the prelude's lines: "TAG=LINE" a manifest line, "TAG!WHY" why
 * it cannot be read, "TAG." the end. */
#define SYNC_MANIFEST_TAG "@boxgate-pushed"

/* The shell text (owned): no stdin, stderr of no interest. */
char *sync_manifest_prelude(const sync_target *box);

typedef struct sync_manifest_collect {
	strbuf text;   /* the manifest's lines so far */
	strbuf why;    /* the box's word on why it could not be read */
	bool over;     /* more than SYNC_MANIFEST_MAX bytes */
	bool mid;      /* inside a line that arrives in pieces */
	bool mid_text; /* ... a manifest line (else a WHY) */
	bool ended;    /* the end line came */
} sync_manifest_collect;

/* One line of the prelude (its tag included; LINE_PARTIAL pieces of a long
 * one as they come), its end line too. */
void sync_manifest_collect_line(sync_manifest_collect *m, const char *line, size_t len, int flags);
/* *text (owned) the manifest, or a negative return with err saying why it
 * was not read (the box said why, it is too large, or the end line never
 * came). Releases m. */
int sync_manifest_collect_end(sync_manifest_collect *m, const sync_target *box, char **text,
			      bg_err *err);
void sync_manifest_collect_release(sync_manifest_collect *m);

#endif
