/* Moving files to a box: SFTP over the connection's own SSH session (ssh
 * boxes) or plain file I/O (the local box), behind one interface.
 *
 * Every call works on absolute paths on the box and has a deadline
 * (base/timer.h ms; BG_NEVER for none). The SFTP channel is opened on first
 * use and lives as long as the connection; calls run the session in
 * non-blocking mode, as the exec channels do, so SFTP and exec channels can
 * be used one after the other on the same connection (one call at a time:
 * a connection belongs to one thread).
 *
 * Errors: BG_ECONNECT when the connection is lost, BG_ETIMEOUT when the
 * deadline passes, BG_EREMOTE when the box refused (the message names the
 * box, the path and the reason), BG_EIO for local read errors. */
#ifndef BG_REMOTE_SFTP_H
#define BG_REMOTE_SFTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "remote/remote.h"

/* Opens the SFTP subsystem if it is not open yet (a no-op for the local box). */
int remote_sftp_open(remote_conn *c, int64_t deadline, bg_err *err);
/* The caller is done with SFTP on this connection: tells the server now
 * (end of input), so that closing the connection later costs no round trip.
 * Every later SFTP call on this connection fails. */
void remote_sftp_finish(remote_conn *c);

typedef enum {
	REMOTE_FS_MISSING = 0,
	REMOTE_FS_FILE,
	REMOTE_FS_DIR,
	REMOTE_FS_LINK,
	REMOTE_FS_OTHER
} remote_fs_type;

/* The type a st_mode (or an SFTP permissions word) says. */
remote_fs_type remote_fs_type_of(unsigned long mode);

typedef struct remote_fs_stat {
	remote_fs_type type;
	unsigned mode; /* permission bits (07777) */
	uint64_t size;
} remote_fs_stat;

/* lstat(2) on the box; a missing path is not an error (type MISSING). */
int remote_fs_lstat(remote_conn *c, const char *path, remote_fs_stat *st, int64_t deadline,
		    bg_err *err);
/* mkdir(2) with `mode`; an existing directory is success. */
int remote_fs_mkdir(remote_conn *c, const char *path, unsigned mode, int64_t deadline, bg_err *err);
/* unlink(2); a missing path is success. */
int remote_fs_unlink(remote_conn *c, const char *path, int64_t deadline, bg_err *err);
/* Free bytes for unprivileged users and whether the file system is
 * read-only, for the file system holding `path`. */
int remote_fs_space(remote_conn *c, const char *path, uint64_t *avail, bool *read_only,
		    int64_t deadline, bg_err *err);

/* Progress of one upload: bytes the box has acknowledged so far. */
typedef void (*remote_progress_cb)(void *ctx, uint64_t done, uint64_t total);

typedef struct remote_put_opts {
	unsigned mode; /* the file's final permission bits */
	bool fsync;    /* fsync the file on the box before closing it */
	/* Bytes kept in flight (rounded down to 30000-byte packets); 0: chosen
	 * from the round trip of the open request, REMOTE_PUT_WINDOW_MIN on a
	 * fast link up to REMOTE_PUT_WINDOW_MAX on a slow one. */
	size_t window;
	/* Give up when the box acknowledges nothing for this long; 0: 60 s. */
	int stall_ms;
	remote_progress_cb progress;
	void *progress_ctx;
	/* Called once the file exists on the box, before any data is written
	 * (the caller may start a command that reads it as it grows). */
	void (*created)(void *ctx);
	void *created_ctx;
} remote_put_opts;

/* libssh2_sftp_write() sends what it is given as 30000-byte packets and
 * returns when the first is acknowledged, so the window is the pipeline
 * depth. Measured on 256 MiB uploads: about 1 MB is fastest on a local link
 * (more only queues behind the server), about 2 MB (what OpenSSH's sftp
 * keeps in flight, and the server's channel window) at 20 ms round trips. */
#define REMOTE_PUT_WINDOW_MIN    (35 * 30000)
#define REMOTE_PUT_WINDOW_MAX    (69 * 30000)
#define REMOTE_PUT_WINDOW_PER_MS (150 * 1000)

/* Creates `path` on the box exclusively (it must not exist), mode 0600 while
 * it is written, copies `size` bytes of the local file `fd` from offset 0
 * into it with pipelined writes, sets opts->mode, optionally fsyncs, and
 * closes it. On any failure the partial file is removed (best effort) and,
 * when the box stopped accepting data, the message says whether its disk is
 * full or read-only. BG_EEXIST-like collisions come back as BG_EREMOTE with
 * *exists set, so the caller can pick another name. */
int remote_put_file(remote_conn *c, int fd, uint64_t size, const char *path,
		    const remote_put_opts *opts, bool *exists, bg_err *err);

/* ---- reading from the box (sftp_get.c) ---- */

/* stat(2) on the box: like remote_fs_lstat, following symlinks. */
int remote_fs_follow(remote_conn *c, const char *path, remote_fs_stat *st, int64_t deadline,
		     bg_err *err);
/* realpath(3) on the box: *out owned; a missing path is BG_EREMOTE. */
int remote_fs_realpath(remote_conn *c, const char *path, char **out, int64_t deadline, bg_err *err);

typedef struct remote_dirent {
	char *name;          /* owned; any bytes but '/' and NUL */
	remote_fs_type type; /* lstat's (a symlink is REMOTE_FS_LINK) */
	unsigned mode;       /* permission bits (07777) */
	uint64_t size;
} remote_dirent;

/* The entries of a directory on the box, "." and ".." left out, in the
 * order the box gave them: *out owned (remote_dirents_free). */
int remote_fs_readdir(remote_conn *c, const char *path, remote_dirent **out, size_t *n,
		      int64_t deadline, bg_err *err);
void remote_dirents_free(remote_dirent *v, size_t n);

typedef struct remote_get_opts {
	/* Each piece of the file, in order; a negative return stops the copy
	 * and is returned (the caller's error in its own bg_err). */
	int (*data)(void *ctx, const void *buf, size_t n);
	void *data_ctx;
	remote_progress_cb progress; /* bytes received so far of `size` */
	void *progress_ctx;
	/* Give up when the box sends nothing for this long; 0: 60 s. */
	int stall_ms;
} remote_get_opts;

/* Reads the file `path` on the box from its start, handing the bytes to
 * opts->data as they come (libssh2 keeps reads in flight): `size` bytes when
 * size > 0 (what the caller knows it holds; the caller checks what came, by
 * its hash: no round trip waits for the end of the file), else to its end.
 * *got: the bytes delivered. */
int remote_get_file(remote_conn *c, const char *path, uint64_t size, const remote_get_opts *opts,
		    uint64_t *got, bg_err *err);

#endif
