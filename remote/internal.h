/* What the transports share inside remote/: not for other modules. */
#ifndef BG_REMOTE_INTERNAL_H
#define BG_REMOTE_INTERNAL_H

#include <libssh2.h>
#include <libssh2_sftp.h>

#include "base/lines.h"
#include "base/strbuf.h"
#include "remote/hostfile.h"
#include "remote/remote.h"

struct remote_ops {
	int (*exec_start)(remote_conn *c, const char *cmdline, remote_exec *e, bg_err *err);
	int (*exec_wait)(remote_exec *e, int64_t deadline, bg_err *err);
	int (*exec_signal)(remote_exec *e, int sig, bg_err *err);
	void (*exec_free)(remote_exec *e);
	void (*close)(remote_conn *c);
};

struct remote_conn {
	const struct remote_ops *ops;
	const remote_target *target;
	char fingerprint[96];
	/* ssh */
	int sock;
	LIBSSH2_SESSION *session;
	LIBSSH2_SFTP *sftp;
	int64_t last_rx_ms; /* stamped by the recv hook: silence means a dead peer */
	/* When the last remote_ssh_wait_socket meant to return at the latest,
	 * and when the current stretch of waits began after a pause: silence
	 * counts only while someone waits (a connection left alone sent no
	 * keepalive that could go unanswered). */
	int64_t watch_until_ms, watch_from_ms;
	int keepalive_s;
	bool dead;                    /* the peer is gone: never wait on it again */
	struct ssh_block *ssh_blocks; /* what libssh2 allocated for the session */
	struct remote_jump *jump;     /* the shared jump connection sock tunnels through */
	/* Round trips, counted by the send and recv hooks: bytes that arrive
	 * after a read found nothing, something having been sent since the last
	 * bytes came, answer a request (what was already there answers none). */
	unsigned round_trips, auth_round_trips; /* all; those up to authenticated */
	bool sent_since_wait, waiting;
	/* The handshake's pipelining (ssh_session.c): our NEWKEYS went out
	 * (the last plaintext packet) and how many sends followed it; sends
	 * since the first public key request; a session channel's open sent
	 * behind the signed request, not yet confirmed. */
	bool newkeys_out;
	unsigned sends_after_newkeys;
	bool auth_early; /* the first identity's request went out before the service accept */
	/* Since that request: 1 it went out, 2 bytes came back (its answer),
	 * 3 a send followed them (the signed request). */
	int auth_phase;
	bool open_pending;
	/* The channel sent behind the signed request is a jump lane's first
	 * direct-tcpip channel (remote_jump_lane_first): the lane's pump
	 * finishes its open, not the authentication. */
	bool open_tcpip;
	/* The recv hook reads nothing (says EAGAIN): a call made only to send
	 * must not take in a packet that another call of libssh2's, already
	 * waiting, looks for in what it reads itself. */
	bool hold_recv;
	int64_t tcp_ms; /* how long the TCP connect took: about one round trip */
	/* Connection masters (remote/master*.c). A connection through a
	 * master has mfd >= 0 and the master ops; opts are kept for falling
	 * back to a fresh connection when the master cannot serve. */
	int mfd;
	remote_connect_opts opts;
	bool leave_master; /* a fresh connection that forks a master at close */
	/* A session channel opened ahead of the next command (a master opens
	 * one while idle): its exec then costs one round trip less. */
	LIBSSH2_CHANNEL *spare;
	strbuf m_in; /* bytes from the master, not yet a whole frame */
	size_t m_in_off;
	strbuf m_out; /* frames for the master, not yet written */
	/* Frames from the master that are no command's (file transfer), in
	 * the order they came; the commands running through it, by id. */
	strbuf m_opq;
	size_t m_opq_off;
	struct remote_exec **m_execs;
	size_t n_m_execs, cap_m_execs;
	uint32_t m_next_id;
	int64_t m_heard_ms; /* when the master last sent anything */
	bool m_sftp_said;   /* BOXGATE_TRACE said SFTP goes through the master */
	/* A master runs its client's SFTP calls with this hook called at each
	 * wait (keepalive frames, a client gone): negative ends the call. */
	int (*wait_hook)(void *ctx);
	void *wait_hook_ctx;
};

struct remote_exec {
	remote_conn *conn;
	remote_exec_opts opts;
	lines out_lines, err_lines;
	strbuf stdin_q;
	size_t stdin_off;
	bool stdin_asks;   /* the queued input asks for an answer: a round trip */
	bool stdin_close;  /* asked for */
	bool stdin_closed; /* done */
	/* remote_exec_pump: the transport's wait also returns once the stdin
	 * queue is empty (return_on_drain) or wake_fd is readable. */
	int wake_fd;
	bool return_on_drain;
	bool out_eof, err_eof;
	remote_status st;
	bool done;
	long remote_pid; /* killable commands: their process group */
	/* Killable commands: BOXGATE_EXEC_ID's value in their environment, so a
	 * kill finds what they started outside their process group too. */
	char exec_id[33];
	/* ssh */
	LIBSSH2_CHANNEL *ch;
	/* A stdin write that libssh2 holds part-sent: the transport
	 * takes no other packet (a close, a keepalive) until it is finished. */
	bool send_pending;
	bool eof_pending; /* an EOF libssh2 part-sent: asked again until it is out */
	/* The last wait returned at its deadline with work in hand (it read
	 * bytes, or libssh2 holds some the socket no longer shows): the next
	 * wait goes on at once, never after a wait on the socket. */
	bool more;
	/* The wrapper's status trailer on stderr (ssh_exec.c): its prefix, how
	 * much of it is held back, the status text after it. */
	char trailer[40];
	size_t t_held;
	bool t_in;
	char t_text[48];
	size_t t_len;
	bool have_trailer;
	int t_code;
	char t_signal[32];
	/* through a master: stdin bytes sent to it and those it says the
	 * command took; what of the difference passes REMOTE_MASTER_CREDIT
	 * counts as queued. */
	unsigned long long m_sent, m_acked;
	bool m_eof_sent;
	int64_t m_heard_ms;    /* when the master last sent a frame */
	int64_t m_watch_until; /* when the last wait meant to end */
	uint32_t m_id;         /* its id in the master's frames */
	strbuf m_q;            /* its frames from the master, id taken off */
	size_t m_q_off;
	/* local */
	pid_t pid;
	int fd_in, fd_out, fd_err;
};

extern const struct remote_ops remote_ssh_ops;
extern const struct remote_ops remote_local_ops;
extern const struct remote_ops remote_master_ops;
/* Stdin bytes a master may hold for its command beyond what the command
 * took, counted as sent (the pipe between client and master is no queue);
 * the client sends at most twice as much. */
#define REMOTE_MASTER_CREDIT (1u << 20)

/* master_client.c: c (target set, ssh) reaches its box through the box's
 * master; 0 on success (c->ops the master's), negative when there is none
 * to use (the caller connects fresh). */
int remote_master_attach(remote_conn *c, const remote_connect_opts *opts);
/* A connection through a master becomes a fresh one of its own (SFTP, or
 * a master that cannot serve), saying `reason` under BOXGATE_TRACE; on
 * failure it is dead. No command may be running through the master. */
int remote_master_go_fresh(remote_conn *c, const char *reason, bg_err *err);
/* master_serve.c: at the close of a fresh, healthy connection, a master
 * takes over its session (a background process); the caller then frees its
 * copy without a word on the socket. True when one did. */
bool remote_master_detach(remote_conn *c);

int remote_ssh_connect(remote_conn *c, const remote_connect_opts *opts, bg_err *err);

/* master_client.c, for master_files.c: reads what the master sent (waiting
 * until `deadline`) and hands each frame to its queue: a command's, or
 * c->m_opq. 1 something came, 0 the deadline, -1 the master is gone or
 * sent a bad frame. */
int remote_master_pull(remote_conn *c, int64_t deadline);
/* Writes the frames queued in c->m_out, then `p` (with `fd` passed along
 * when >= 0): 0 or -1. */
int remote_master_send(remote_conn *c, const char *p, size_t n, int fd);
/* Says `what` once under BOXGATE_TRACE. */
void remote_master_trace(const remote_conn *c, const char *what);
/* The master went silent or away mid-call: no command or call goes through
 * it again (running commands end lost; the next call connects fresh). */
void remote_master_drop(remote_conn *c);

/* Feeds output bytes of one stream to its line splitter. */
void remote_exec_feed(remote_exec *e, remote_stream s, const char *data, size_t n);
/* Delivers last lines without newline at end of stream. */
void remote_exec_finish_streams(remote_exec *e);

/* known_hosts (remote/knownhosts.c): the files are read once per
 * connection, before the handshake; the same entries then order the
 * host-key algorithms and judge the key the server sent. */
typedef struct remote_known_hosts {
	remote_hostfile_set set; /* every file's entries for `name` */
	char *host;              /* the name ssh looks up: HostName lowercased */
	char *name;              /* host, or [host]:port */
	char **warnings;         /* unparsable lines, said once the key is checked */
	size_t n_warnings, cap_warnings;
} remote_known_hosts;

void remote_knownhosts_load(remote_conn *c, remote_known_hosts *kh);
/* Orders host-key algorithms so the server offers a type already recorded. */
void remote_knownhosts_prefer(remote_conn *c, const remote_known_hosts *kh);
int remote_knownhosts_check(remote_conn *c, const remote_known_hosts *kh,
			    const remote_connect_opts *opts, bg_err *err);
void remote_knownhosts_release(remote_known_hosts *kh);
/* auth (remote/auth.c) */
int remote_auth(remote_conn *c, bg_err *err);
/* The identity file remote_auth offers first when no ssh-agent is asked
 * (NULL: none): the one whose request may go out early. */
const char *remote_auth_first_identity(const remote_conn *c);
/* remote_auth's call for that identity when its request went out early:
 * finished without blocking, a session channel's open sent right behind
 * the signed request (its answer comes with the server's). */
int remote_auth_pipelined(remote_conn *c, const char *user, const char *path);

/* "SHA256:" + unpadded base64 of 32 raw bytes. */
void remote_sha256_fingerprint(const unsigned char *hash, char *out, size_t n);
/* libssh2's last error message for the session. */
const char *remote_ssh_errmsg(LIBSSH2_SESSION *s);
/* ssh_alloc.c: a session whose allocations are all on c's list; release
 * frees what is left once the session is freed. */
LIBSSH2_SESSION *remote_ssh_session_new(remote_conn *c);
/* jump.c: c->sock becomes a tunnel to c's target through its jump chain's
 * shared connection (c->jump holds it); release when c->sock is closed. */
int remote_jump_connect(remote_conn *c, const remote_connect_opts *opts, bg_err *err);
void remote_jump_release(struct remote_jump *j);
void remote_ssh_blocks_release(remote_conn *c);

/* Marks the connection dead and shuts its socket, so libssh2's closing
 * calls fail at once instead of waiting on a peer that cannot answer (and
 * libssh2_session_free then frees everything). */
void remote_ssh_mark_dead(remote_conn *c);
/* c's transport is up (TCP connected, or its channel through a jump open),
 * its handshake not begun: when c is a connection to a jump host, boxes
 * waiting to choose among its lanes may choose now (jump.c). */
void remote_jump_transport_up(const remote_conn *c);
/* c is a jump host's connection this thread is making for a box behind it
 * (jump.c): *host and *port are where that box's channel goes, opened
 * behind the signed request in place of a session channel. */
bool remote_jump_lane_first(const remote_conn *c, const char **host, int *port);
/* BOXGATE_TRACE: a step of the connection's setup, printf-style, through
 * the connect options' trace hook (quiet without one). */
void remote_tracef(const remote_conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Opens c->spare when there is none (blocking, up to the connect
 * timeout); false when the session cannot. */
bool remote_ssh_open_spare(remote_conn *c);

/* The exec half of the ssh transport (ssh_exec.c). */
int remote_ssh_exec_start(remote_conn *c, const char *cmdline, remote_exec *e, bg_err *err);
int remote_ssh_exec_wait(remote_exec *e, int64_t deadline, bg_err *err);
int remote_ssh_exec_signal(remote_exec *e, int sig, bg_err *err);
void remote_ssh_exec_free(remote_exec *e);

/* Waits for the session's socket in the directions libssh2 asks for, and
 * for wake_fd (-1: none) to be readable: 1 when it is, 0 when the socket is
 * ready or the deadline passed, -1 when the peer is gone. */
int remote_ssh_wait_socket(remote_conn *c, int64_t deadline, int wake_fd);

/* sftp.c's helpers for sftp_get.c: wait for the socket after EAGAIN (the
 * deadline, a silent peer), turn a failed libssh2 SFTP call into BG_EREMOTE
 * (*fx: the server's status) or BG_ECONNECT, and whether c is the local box. */
int remote_sftp_wait(remote_conn *c, int64_t deadline, const char *what, bg_err *err);
int remote_sftp_fail(remote_conn *c, int rc, const char *what, const char *path, unsigned long *fx,
		     bg_err *err);
bool remote_is_local(const remote_conn *c);

#endif
