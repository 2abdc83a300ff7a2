/* Public-key authentication: ssh-agent keys first, then identity files. A
 * failure lists what was tried; an RSA-only setup is told why it fails. */
#include "remote/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/strbuf.h"

/* True when the key at `path` is RSA (its .pub, or a PEM RSA header). */
static bool key_is_rsa(const char *path)
{
	char pub[4096], buf[64] = "";
	snprintf(pub, sizeof(pub), "%s.pub", path);
	FILE *f = fopen(pub, "r");
	if (f) {
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = '\0';
		fclose(f);
		return strncmp(buf, "ssh-rsa ", 8) == 0;
	}
	f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return strstr(buf, "BEGIN RSA PRIVATE KEY") != NULL;
}

struct tried {
	strbuf list;
	int total;
	int rsa;
};

static void note(struct tried *t, const char *what, bool rsa)
{
	if (t->list.len)
		strbuf_addstr(&t->list, ", ");
	strbuf_addstr(&t->list, what);
	t->total++;
	if (rsa)
		t->rsa++;
}

/* Returns 1 when an agent key was accepted. */
static int try_agent(remote_conn *c, const char *user, struct tried *t)
{
	const char *sock = c->target->agent_socket;
	if (!sock || !*sock)
		return 0;
	LIBSSH2_AGENT *agent = libssh2_agent_init(c->session);
	struct libssh2_agent_publickey *id = NULL, *prev = NULL;
	int ok = 0, n = 0;
	if (!agent)
		return 0;
	/* The caller's socket, not libssh2's own read of $SSH_AUTH_SOCK. */
	libssh2_agent_set_identity_path(agent, sock);
	if (libssh2_agent_connect(agent) != 0 || libssh2_agent_list_identities(agent) != 0)
		goto out;
	/* sshd's MaxAuthTries (6) counts agent keys too: leave room for files. */
	while (n < 5 && libssh2_agent_get_identity(agent, &id, prev) == 0) {
		char what[300];
		bool rsa = id->blob_len > 11 && memcmp(id->blob + 4, "ssh-rsa", 7) == 0;
		snprintf(what, sizeof(what), "agent key '%s'", id->comment ? id->comment : "?");
		note(t, what, rsa);
		n++;
		if (libssh2_agent_userauth(agent, user, id) == 0) {
			ok = 1;
			break;
		}
		prev = id;
	}
out:
	libssh2_agent_disconnect(agent);
	libssh2_agent_free(agent);
	return ok;
}

const char *remote_auth_first_identity(const remote_conn *c)
{
	const remote_target *b = c->target;
	if (b->agent_socket && *b->agent_socket)
		return NULL;
	for (size_t i = 0; i < b->n_identities; i++)
		if (access(b->identities[i], R_OK) == 0)
			return b->identities[i];
	return NULL;
}

int remote_auth(remote_conn *c, bg_err *err)
{
	const remote_target *b = c->target;
	const char *user = b->user ? b->user : "root";
	struct tried t = {STRBUF_INIT, 0, 0};
	int rc = 0;

	if (try_agent(c, user, &t))
		goto out;
	for (size_t i = 0; i < b->n_identities; i++) {
		const char *path = b->identities[i];
		char what[4200];
		if (access(path, R_OK) != 0)
			continue;
		bool rsa = key_is_rsa(path);
		snprintf(what, sizeof(what), "%s", path);
		bool early = c->auth_early && path == remote_auth_first_identity(c);
		int r = early ? remote_auth_pipelined(c, user, path)
			      : libssh2_userauth_publickey_fromfile_ex(
					c->session, user, (unsigned)strlen(user), NULL, path, NULL);
		if (r == 0)
			goto out;
		if (r == LIBSSH2_ERROR_FILE || r == LIBSSH2_ERROR_PUBLICKEY_UNVERIFIED)
			snprintf(what, sizeof(what),
				 "%s (cannot read it: %s; a passphrase-protected key must "
				 "be loaded into ssh-agent)",
				 path, remote_ssh_errmsg(c->session));
		note(&t, what, rsa);
		/* a channel open that followed a refused signature waits for an
		 * answer that never comes: no other key on this session */
		if (c->open_pending)
			break;
	}
	/* Asking for the method list costs a round trip: only on failure, to say why. */
	char *methods = libssh2_userauth_list(c->session, user, (unsigned)strlen(user));
	if (methods && !strstr(methods, "publickey")) {
		rc = bg_fail(
			err, BG_EAUTH,
			"%s: the server does not accept public keys for user %s (it offers: %s)",
			b->name, user, methods);
	} else if (t.total == 0) {
		rc = bg_fail(err, BG_EAUTH,
			     "%s: no key to offer for %s@%s: no ssh-agent keys and no identity "
			     "file found "
			     "(set identity = ~/.ssh/id_ed25519 for the box)",
			     b->name, user, b->hostname);
	} else if (t.rsa == t.total) {
		rc = bg_fail(err, BG_EAUTH,
			     "%s: authentication as %s failed with RSA keys only (tried %s): "
			     "libssh2 1.10 "
			     "cannot sign with rsa-sha2-256/512 and modern OpenSSH refuses ssh-rsa "
			     "(SHA-1) "
			     "signatures; create an ed25519 key (ssh-keygen -t ed25519) and "
			     "authorise it on the box",
			     b->name, user, strbuf_str(&t.list));
	} else {
		rc = bg_fail(err, BG_EAUTH, "%s: permission denied for %s@%s (tried %s)", b->name,
			     user, b->hostname, strbuf_str(&t.list));
	}
out:
	strbuf_release(&t.list);
	return rc;
}
