/* The transport: one interface, two implementations (ssh through libssh2,
 * local through fork/exec), so every command works the same against the
 * built-in `local` box.
 *
 * A remote_conn is one connection to one box; it carries every channel a
 * command needs. A connection and its channels belong to one thread at a
 * time; connections to different boxes may live in different threads.
 * remote/ knows nothing of gates or shims: it runs command lines and moves
 * files. */
#ifndef BG_REMOTE_H
#define BG_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "remote/target.h"

/* libssh2_init() once, before any thread starts. */
int remote_global_init(bg_err *err);
void remote_global_release(void);

/* Warnings that do not stop the operation (a known_hosts line skipped, a new
 * host key recorded). `box` is the box name. */
typedef void (*remote_log_cb)(void *ctx, const char *box, const char *msg);

typedef struct remote_conn remote_conn;

typedef struct remote_connect_opts {
	remote_log_cb log;
	void *log_ctx;
	bool accept_new; /* record an unknown host key even when the box says strict */
	/* Use the box's connection master when it has a live one, and leave
	 * one behind a fresh connection (remote/master.h). SFTP calls on a
	 * connection through a master run on the master's own SFTP session
	 * (remote/master_files.h). */
	bool warm;
	/* Why the master was passed by (BOXGATE_TRACE); NULL: quiet. Gets
	 * log_ctx. */
	remote_log_cb trace;
} remote_connect_opts;

/* Connects, checks the host key, authenticates. On failure *out is NULL and
 * err names the box and the phase (BG_ECONNECT, BG_EHOSTKEY, BG_EAUTH,
 * BG_ETIMEOUT, BG_EUNSUPPORTED); a host-key failure also sets err->detail to
 * one of the BG_DETAIL_HOSTKEY_* values (base/error.h). The target is
 * borrowed: it must outlive the connection. */
int remote_connect(const remote_target *t, const remote_connect_opts *opts, remote_conn **out,
		   bg_err *err);
/* Closes every channel and the connection; accepts NULL. */
void remote_close(remote_conn *c);
/* The target this connection serves (borrowed). */
const remote_target *remote_target_of(const remote_conn *c);
/* How many times this connection waited for the box after sending since
 * its TCP connect (the SSH round trips: key exchange, authentication,
 * channels; an EOF, which asks for no answer, opens none); *to_auth (may be
 * NULL) gets those up to authenticated. 0 for the local box. For
 * BOXGATE_TRACE and the tests. */
unsigned remote_round_trips(const remote_conn *c, unsigned *to_auth);
/* Whether commands on c go through the box's connection master. */
bool remote_is_warm(const remote_conn *c);
/* "SHA256:..." of the host key (ssh) or "" (local); borrowed. */
const char *remote_host_fingerprint(const remote_conn *c);

/* ---- exec channels ---- */

typedef enum { REMOTE_STDOUT = 1, REMOTE_STDERR = 2 } remote_stream;

/* One line of output (without '\n'); flags from base/lines.h: LINE_PARTIAL
 * for a piece of an overlong line, LINE_NO_EOL for a last line that had no
 * newline. Bytes are passed through unchanged. */
typedef void (*remote_line_cb)(void *ctx, remote_stream stream, const char *line, size_t len,
			       int flags);

typedef enum {
	REMOTE_RUNNING = 0,
	REMOTE_EXITED,   /* code = exit status */
	REMOTE_SIGNALED, /* signal = its name ("KILL") */
	REMOTE_LOST,     /* the channel closed without any exit status */
	REMOTE_TIMEDOUT  /* our deadline passed; the remote command was killed */
} remote_how;

typedef struct remote_status {
	remote_how how;
	int code;
	char signal[32];
} remote_status;

/* "exit 3", "signal KILL", "connection lost before exit status", "timed out". */
void remote_status_describe(const remote_status *st, char *buf, size_t n);

typedef struct remote_exec remote_exec;

typedef struct remote_exec_opts {
	remote_line_cb on_line;
	void *ctx;
	size_t max_line; /* 0: LINES_DEFAULT_MAX */
	/* When set, the command runs so that it can be killed (process group)
	 * when remote_exec_kill() is called or its deadline passes. */
	bool killable;
} remote_exec_opts;

/* Starts `cmdline` in the box's shell (as ssh(1) does with a command). */
int remote_exec_start(remote_conn *c, const char *cmdline, const remote_exec_opts *opts,
		      remote_exec **out, bg_err *err);
/* Queues bytes for the command's stdin (sent by remote_exec_wait). */
void remote_exec_write(remote_exec *e, const void *data, size_t n);
/* remote_exec_write for input that asks the command for an answer (a job
 * handed to a serving agent): the round trip count counts its answer, as it
 * does a channel request's; other input asks for none. */
void remote_exec_write_request(remote_exec *e, const void *data, size_t n);
/* Sends EOF on stdin once the queued bytes are out. */
void remote_exec_close_stdin(remote_exec *e);
/* Bytes queued for stdin that the command has not taken yet; a command
 * that closed its stdin takes (drops) everything, as a pipe's reader gone. */
size_t remote_exec_stdin_queued(const remote_exec *e);
/* Moves data until the command ends (returns 1, *st filled) or `deadline`
 * (base/timer.h ms) passes with it still running (returns 0). Negative on a
 * transport error; the status then says REMOTE_LOST. */
int remote_exec_wait(remote_exec *e, int64_t deadline, remote_status *st, bg_err *err);
/* remote_exec_wait for a caller that streams stdin in pieces: it also
 * returns 0 once the bytes queued when it was called are all out, or when
 * wake_fd (-1: none) becomes readable, so the caller can queue more. */
int remote_exec_pump(remote_exec *e, int64_t deadline, int wake_fd, remote_status *st, bg_err *err);
/* Kills a killable command's process group (TERM, then KILL after
 * `grace_ms`) and waits for the channel to close. *st says REMOTE_TIMEDOUT. */
int remote_exec_kill(remote_exec *e, int grace_ms, remote_status *st, bg_err *err);
void remote_exec_free(remote_exec *e);

/* Convenience: start, close stdin, wait; timeout_ms <= 0 means none. When the
 * timeout passes the command is killed and the status says REMOTE_TIMEDOUT. */
int remote_run(remote_conn *c, const char *cmdline, remote_line_cb on_line, void *ctx,
	       int timeout_ms, remote_status *st, bg_err *err);
/* What remote_run_fed does between start and the end: move input and wait
 * until `deadline`, as remote_exec_wait returns (1 ended, 0 deadline, <0). */
typedef int (*remote_feed_fn)(remote_exec *e, int64_t deadline, void *ctx, remote_status *st,
			      bg_err *err);
/* remote_run with `feed` in place of "close stdin, wait": the same timeout,
 * kill and error. */
int remote_run_fed(remote_conn *c, const char *cmdline, remote_line_cb on_line, void *ctx,
		   int timeout_ms, remote_feed_fn feed, void *feed_ctx, remote_status *st,
		   bg_err *err);

/* Runs `cmdline` and collects its stdout (at most `max` bytes, owned by the
 * caller) and exit status; stderr is appended to err->msg on failure. */
int remote_capture(remote_conn *c, const char *cmdline, size_t max, int timeout_ms, char **out,
		   size_t *out_len, remote_status *st, bg_err *err);

#endif
