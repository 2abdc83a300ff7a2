/* What the master's two files share (master_serve.c: the session, its
 * clients and commands; master_serve_files.c: file transfer). */
#ifndef BG_REMOTE_MASTER_SERVE_H
#define BG_REMOTE_MASTER_SERVE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/strbuf.h"
#include "remote/internal.h"

struct master;
struct mexec;

/* The client being served. */
struct master_client {
	struct master *m;
	remote_conn *c;
	int fd;
	strbuf in; /* its bytes, not yet a whole frame */
	size_t off;
	int passed_fd; /* a descriptor that came with its bytes, not yet taken */
	bool gone;     /* it closed, or a write to it failed */
	bool stop;     /* it sent STOP during the call */
	int64_t sent_ms, heard_ms;
	struct mexec *x; /* its commands */
	size_t n_x, cap_x;
};

/* Sends one frame (nothing once the client is gone). */
void mc_send(struct master_client *cl, int type, const void *p, size_t n);
/* Handles one frame of the client's other than OP (commands' frames). */
void mc_dispatch(struct master_client *cl, int type, const char *p, size_t n);
/* Reads what the client sent, if anything: false once it is gone. */
bool mc_read(struct master_client *cl);
/* What the master does while a call waits: its alarm re-armed, another
 * client turned away, a keepalive frame when one is due. */
void mc_tick(struct master_client *cl);
/* The master ends at once (a call cut short left its SFTP session midway). */
_Noreturn void mc_end(void);
/* The client's silence allowed (ms) before it counts as gone; 0: none. */
int64_t mc_silence_ms(const struct master_client *cl);

#endif
