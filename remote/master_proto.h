/* The framed protocol between a connection master and its clients, inside
 * remote/: a frame is one type byte, a 4-byte big-endian length and that
 * many bytes.
 *
 * master -> client: HELLO or BUSY at once (version, pid, persist, idle,
 * box, target, host key blob, fingerprint); after EXEC: STARTED or FAIL,
 * then OUT, ERR (the command's bytes), ACK (stdin bytes the command took, a
 * running total; also sent, unchanged, after keepalive_s without another
 * frame, so a client tells a stopped master from a quiet command), and
 * STATUS or FAIL last. Every command's frames begin with its id (the
 * client's number for it): several may run at once, as channels do.
 * client -> master: EXEC (id, flags, command line), IN (id, stdin bytes),
 * EOF (id), KILL (id, a signal), CLOSE (id: the client is done with it, running
 * or not, as a channel closed), QUIT (the master ends: its host key is not
 * trusted).
 *
 * File transfer (SFTP, run by the master on its own SFTP session): the
 * client sends OP (an MO_* operation and its arguments; PUT carries the
 * local file's descriptor, SCM_RIGHTS); the master answers with RES
 * (the result: code, flags, message, what the operation returns), after
 * ENT frames (a directory's entries), GOT (upload progress), CREATED (the
 * file exists: the client answers RESUME once it has done what it does
 * then, meanwhile it may start commands), DATA (a download's bytes) and
 * KEEP (sent after keepalive_s without another frame). STOP asks a download
 * to end early. */
#ifndef BG_REMOTE_MASTER_PROTO_H
#define BG_REMOTE_MASTER_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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
	MF_QUIT = 'Q',
	MF_OP = 'P',
	MF_RES = 'R',
	MF_ENT = 'N',
	MF_GOT = 'G',
	MF_CREATED = 'C',
	MF_RESUME = 'U',
	MF_DATA = 'D',
	MF_STOP = 'Y',
	MF_KEEP = 'k',
	MF_CLOSE = 'W'
};

/* OP's operations */
enum {
	MO_LSTAT = 1,
	MO_FOLLOW,
	MO_MKDIR,
	MO_UNLINK,
	MO_SPACE,
	MO_REALPATH,
	MO_READDIR,
	MO_PUT,
	MO_GET
};
/* RES flags */
#define MR_EXISTS 1u

#define MF_HDR           5
#define MF_MAX           ((size_t)1 << 21) /* a whole line of output fits (lines.h's 1 MiB) */
#define MF_PROTO_VERSION 3
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
/* A string of any length up to MF_MAX (4-byte length): paths. */
void mf_put_lstr(strbuf *sb, const void *s, size_t n);
typedef struct mf_reader {
	const unsigned char *p;
	size_t n;
} mf_reader;
bool mf_get_u32(mf_reader *r, uint32_t *v);
bool mf_get_u64(mf_reader *r, uint64_t *v);
bool mf_get_str(mf_reader *r, const char **s, size_t *n);
bool mf_get_lstr(mf_reader *r, const char **s, size_t *n);
/* mf_get_lstr as a string of its own (owned), NULL when too short or when
 * it holds a NUL. */
char *mf_get_path(mf_reader *r);
/* Sends all of p with `fd` attached (SCM_RIGHTS) to its first byte: 0 or -1. */
int mf_send_fd(int sock, const char *p, size_t n, int fd);
/* recv() that keeps any descriptor passed with the bytes: appends to `in`
 * and, when one came, sets *fd_out (closing any before it that was not
 * taken): the bytes read, 0 at the peer's end, -1 (errno) on an error. */
ssize_t mf_recv(int sock, strbuf *in, int *fd_out);

#endif
