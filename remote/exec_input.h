/* exec's standard input: the bytes boxgate reads on its own stdin, handed
 * to the command on every box. One box reads the stream straight through.
 * Many boxes read one spool, an unlinked file in $TMPDIR that a reader
 * thread fills once, each box at its own pace: a box that is slow, not
 * started yet (more boxes than threads) or never reads holds no other back,
 * memory stays bounded whatever the input's size, and the reader stops
 * reading ahead once the fastest box is a window behind. */
#ifndef BG_REMOTE_EXEC_INPUT_H
#define BG_REMOTE_EXEC_INPUT_H

#include <stddef.h>
#include <sys/types.h>

#include "base/error.h"

typedef struct exec_input exec_input;
typedef struct exec_input_tap exec_input_tap;

/* Starts handing out what `fd` holds to n_boxes boxes. On failure (no
 * spool could be made) *out is NULL and err says why. */
int exec_input_open(int fd, size_t n_boxes, exec_input **out, bg_err *err);
/* Box i's tap, borrowed from `in`, for one thread at a time; opened when
 * the box starts, so a thousand boxes do not hold a thousand wake fds. On
 * failure (no fd left) err says why. */
int exec_input_tap_open(exec_input *in, size_t i, exec_input_tap **out, bg_err *err);
/* Up to `max` next bytes for this box: their count, 0 at the end of the
 * input, -1 when none are there yet (wait for exec_input_wake_fd). */
ssize_t exec_input_read(exec_input_tap *t, void *buf, size_t max);
/* Readable when exec_input_read may have more. */
int exec_input_wake_fd(const exec_input_tap *t);
/* This box takes no more (its command ended or its stdin is closed); its
 * wake fd is closed. Again is harmless. */
void exec_input_done(exec_input_tap *t);
/* A read or spool error seen, "" when none; borrowed. */
const char *exec_input_error(exec_input *in);
/* Stops the reader, closes everything; accepts NULL. */
void exec_input_free(exec_input *in);

#endif
