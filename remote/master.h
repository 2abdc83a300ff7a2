/* Connection masters: a box's authenticated SSH session kept by a small
 * background process after a command ends, as OpenSSH's ControlMaster with
 * ControlPersist, so the next command to the box skips the handshake.
 *
 * A connection made with remote_connect_opts.warm first tries the box's
 * master; a connection it made fresh leaves a master behind when it closes
 * healthy (remote_close forks one holding the session), for the target's
 * control_persist_ms of idleness. Masters live in one directory per user
 * (remote_master_dir): $XDG_RUNTIME_DIR/boxgate, else /tmp/boxgate-UID,
 * 0700 and ours, each a socket (0600) named for the box's key: user, host,
 * port, identities, known_hosts files and host-key policy hashed. A master
 * serves one client at a time (its commands may run at once, beside its
 * SFTP calls: remote/master_files.h) and only its own uid (SO_PEERCRED both
 * ways). Anything amiss (no master, busy, stale, dead, a host key that
 * known_hosts does not vouch for now) makes the connection a fresh one, whose
 * host-key check is the strict one as always. Only direct ssh boxes get
 * masters (not the local box, not boxes behind jump hosts). */
#ifndef BG_REMOTE_MASTER_H
#define BG_REMOTE_MASTER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/error.h"
#include "remote/target.h"

/* The masters' directory, created 0700 when missing; BG_EIO when it is not
 * a directory of ours that only we can enter. Owned. */
int remote_master_dir(char **out, bg_err *err);

/* The socket path of t's master (owned); NULL when t gets no master (the
 * local box, a jump host, control_persist_ms 0, a path too long). */
char *remote_master_path(const remote_target *t, const char *dir);

/* One live master, as it says of itself. */
typedef struct remote_master_info {
	char *path;   /* its socket */
	char *box;    /* the box it was made for */
	char *target; /* user@host:port */
	char fingerprint[96];
	pid_t pid;
	long long idle_ms;    /* idle for */
	long long persist_ms; /* ends after this much idleness */
	bool busy;            /* serving a command now */
} remote_master_info;

/* Every live master in `dir`, by path; a stale socket found on the way is
 * removed. Owned: release with remote_master_infos_free. */
int remote_master_list(const char *dir, remote_master_info **out, size_t *n, bg_err *err);
void remote_master_infos_free(remote_master_info *v, size_t n);
/* Ends the master on `path` (SIGTERM to the pid its socket's peer
 * credentials give, our uid only) and waits up to `wait_ms` for its socket
 * to go: 1 ended, 0 none there, negative on an error. *pid (may be NULL)
 * gets its pid. A master running a command lets it finish first and takes
 * no other. */
int remote_master_end(const char *path, int wait_ms, pid_t *pid, bg_err *err);

#endif
