/* The SFTP calls of remote/sftp.h on a connection through a box's master
 * (master_files.c: the client's half; master_serve_files.c: the master's):
 * each call is one OP frame, run by the master on its own SFTP session with
 * the same sftp.c code a fresh connection uses, its result and message
 * sent back. An upload's local file goes to the master as a descriptor
 * (SCM_RIGHTS), so its bytes cross no socket but the box's. */
#ifndef BG_REMOTE_MASTER_FILES_H
#define BG_REMOTE_MASTER_FILES_H

#include "remote/sftp.h"

int remote_master_fs_stat(remote_conn *c, const char *path, bool follow, remote_fs_stat *st,
			  int64_t deadline, bg_err *err);
int remote_master_fs_mkdir(remote_conn *c, const char *path, unsigned mode, int64_t deadline,
			   bg_err *err);
int remote_master_fs_unlink(remote_conn *c, const char *path, int64_t deadline, bg_err *err);
int remote_master_fs_space(remote_conn *c, const char *path, uint64_t *avail, bool *read_only,
			   int64_t deadline, bg_err *err);
int remote_master_fs_realpath(remote_conn *c, const char *path, char **out, int64_t deadline,
			      bg_err *err);
int remote_master_fs_readdir(remote_conn *c, const char *path, remote_dirent **out, size_t *n,
			     int64_t deadline, bg_err *err);
int remote_master_put_file(remote_conn *c, int fd, uint64_t size, const char *path,
			   const remote_put_opts *opts, bool *exists, bg_err *err);
int remote_master_get_file(remote_conn *c, const char *path, uint64_t size,
			   const remote_get_opts *opts, uint64_t *got, bg_err *err);

/* The master's half: runs one OP frame's call on c (the master's own
 * connection) for the client on `fd`, sending its frames. */
struct master_client;
void remote_master_serve_op(struct master_client *cl, const char *p, size_t n);

#endif
