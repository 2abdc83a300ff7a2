/* Every allocation libssh2 makes for a session sits on the connection's own
 * list, so closing the connection returns all of it. libssh2 1.10 keeps key
 * exchange material it never frees when a handshake is abandoned (a link cut
 * mid-handshake leaked 64 bytes a try), and its session_free gives up on a
 * dead peer; a campaign that retries a flapping box for hours must not grow. */
#include "remote/internal.h"

#include <stddef.h>
#include <stdlib.h>

struct ssh_block {
	struct ssh_block *prev, *next;
	max_align_t align[]; /* the caller's bytes start here, aligned */
};

static struct ssh_block *block_of(void *p)
{
	return (struct ssh_block *)((char *)p - offsetof(struct ssh_block, align));
}

static void link_block(remote_conn *c, struct ssh_block *b)
{
	b->prev = NULL;
	b->next = c->ssh_blocks;
	if (b->next)
		b->next->prev = b;
	c->ssh_blocks = b;
}

static void unlink_block(remote_conn *c, struct ssh_block *b)
{
	if (b->prev)
		b->prev->next = b->next;
	else
		c->ssh_blocks = b->next;
	if (b->next)
		b->next->prev = b->prev;
}

static LIBSSH2_ALLOC_FUNC(ssh_alloc)
{
	remote_conn *c = *abstract;
	struct ssh_block *b = malloc(sizeof(*b) + count);
	if (!b)
		return NULL;
	link_block(c, b);
	return b->align;
}

static LIBSSH2_FREE_FUNC(ssh_free)
{
	if (!ptr)
		return;
	remote_conn *c = *abstract;
	struct ssh_block *b = block_of(ptr);
	unlink_block(c, b);
	free(b);
}

static LIBSSH2_REALLOC_FUNC(ssh_realloc)
{
	if (!ptr)
		return ssh_alloc(count, abstract);
	remote_conn *c = *abstract;
	struct ssh_block *old = block_of(ptr);
	unlink_block(c, old);
	struct ssh_block *b = realloc(old, sizeof(*b) + count);
	if (!b) {
		link_block(c, old); /* realloc failed: the old block is still good */
		return NULL;
	}
	link_block(c, b);
	return b->align;
}

LIBSSH2_SESSION *remote_ssh_session_new(remote_conn *c)
{
	return libssh2_session_init_ex(ssh_alloc, ssh_free, ssh_realloc, c);
}

void remote_ssh_blocks_release(remote_conn *c)
{
	while (c->ssh_blocks) {
		struct ssh_block *b = c->ssh_blocks;
		c->ssh_blocks = b->next;
		free(b);
	}
}
