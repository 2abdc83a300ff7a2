/* The framed protocol between a connection master and its clients, inside
 * remote/: a frame is one type byte, a 4-byte big-endian length and that
 * many bytes.
 *
 * master -> client: HELLO or BUSY at once (pid, persist, idle, box, target,
 * host key blob, fingerprint); after EXEC: STARTED or FAIL, then OUT, ERR
 * (the command's bytes), ACK (stdin bytes the command took, a running
 * total; also sent, unchanged, after keepalive_s without another frame, so
 * a client tells a stopped master from a quiet command), and STATUS or
 * FAIL last.
 * client -> master: EXEC (flags, command line), IN (stdin bytes), EOF,
 * KILL (a signal), QUIT (the master ends: its host key is not trusted). */
#ifndef BG_REMOTE_MASTER_PROTO_H
#define BG_REMOTE_MASTER_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strbuf.h"

enum {
	MF_HELLO = 'H',
	MF_BUSY = 'B',
	MF_EXEC = 'X',
	MF_STARTED = 'S',
	MF_FAIL = 'F',
	MF_OUT = 'O',
	MF_ERR = 'E',
	MF_ACK = 'A',
	MF_STATUS = 'T',
	MF_IN = 'I',
	MF_EOF = 'Z',
	MF_KILL = 'K',
	MF_QUIT = 'Q'
};

#define MF_HDR           5
#define MF_MAX           ((size_t)1 << 21) /* a whole line of output fits (lines.h's 1 MiB) */
#define MF_PROTO_VERSION 2
/* EXEC flags */
#define MF_KILLABLE 1u

/* Appends a frame. */
void mf_add(strbuf *sb, int type, const void *p, size_t n);
/* Takes the next whole frame at *off in `in`: 1 and its type and payload
 * (borrowed from `in`), 0 when none is whole yet, -1 on a bad length. */
int mf_take(strbuf *in, size_t *off, int *type, const char **p, size_t *n);
/* Drops what was taken. */
void mf_compact(strbuf *in, size_t *off);
/* Blocking write of all of `sb` (MSG_NOSIGNAL); 0 or -1. */
int mf_write_all(int fd, const char *p, size_t n);
/* Reads until a whole frame is in `in` or `deadline` (bg_now_ms) passes:
 * 1 a frame, 0 the deadline, -1 the peer closed or an error. */
int mf_read_frame(int fd, int64_t deadline, strbuf *in, size_t *off, int *type, const char **p,
		  size_t *n);

/* Payload building and reading: big-endian numbers, strings with a 2-byte
 * length. The readers return false when the payload is too short. */
void mf_put_u32(strbuf *sb, uint32_t v);
void mf_put_u64(strbuf *sb, uint64_t v);
void mf_put_str(strbuf *sb, const void *s, size_t n);
typedef struct mf_reader {
	const unsigned char *p;
	size_t n;
} mf_reader;
bool mf_get_u32(mf_reader *r, uint32_t *v);
bool mf_get_u64(mf_reader *r, uint64_t *v);
bool mf_get_str(mf_reader *r, const char **s, size_t *n);

#endif
