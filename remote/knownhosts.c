/* Host-key checking against an OpenSSH known_hosts file, as OpenSSH decides:
 * strict refuses unknown keys, accept-new records them, a changed key is
 * always refused. The file is read line by line so one bad line is skipped
 * with a warning instead of hiding the rest (libssh2's readfile stops). */
#include "remote/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xmalloc.h"

struct keytype {
	int hostkey;   /* LIBSSH2_HOSTKEY_TYPE_* */
	int knownhost; /* LIBSSH2_KNOWNHOST_KEY_* */
	const char *method;
	const char *label;
};

static const struct keytype keytypes[] = {
	{LIBSSH2_HOSTKEY_TYPE_ED25519, LIBSSH2_KNOWNHOST_KEY_ED25519, "ssh-ed25519", "ED25519"},
	{LIBSSH2_HOSTKEY_TYPE_ECDSA_256, LIBSSH2_KNOWNHOST_KEY_ECDSA_256, "ecdsa-sha2-nistp256", "ECDSA"},
	{LIBSSH2_HOSTKEY_TYPE_ECDSA_384, LIBSSH2_KNOWNHOST_KEY_ECDSA_384, "ecdsa-sha2-nistp384", "ECDSA"},
	{LIBSSH2_HOSTKEY_TYPE_ECDSA_521, LIBSSH2_KNOWNHOST_KEY_ECDSA_521, "ecdsa-sha2-nistp521", "ECDSA"},
	{LIBSSH2_HOSTKEY_TYPE_RSA, LIBSSH2_KNOWNHOST_KEY_SSHRSA, "ssh-rsa", "RSA"},
	{LIBSSH2_HOSTKEY_TYPE_DSS, LIBSSH2_KNOWNHOST_KEY_SSHDSS, "ssh-dss", "DSA"},
};
#define N_KEYTYPES (sizeof(keytypes) / sizeof(keytypes[0]))

void remote_sha256_fingerprint(const unsigned char *hash, char *out, size_t n)
{
	unsigned char b64[64];
	int len = EVP_EncodeBlock(b64, hash, 32);
	while (len > 0 && b64[len - 1] == '=')
		len--;
	snprintf(out, n, "SHA256:%.*s", len, (const char *)b64);
}

/* The name OpenSSH records: `host` on port 22, `[host]:port` otherwise. */
static void host_entry_name(const conf_box *b, char *out, size_t n)
{
	if (b->port == 22)
		snprintf(out, n, "%s", b->hostname);
	else
		snprintf(out, n, "[%s]:%d", b->hostname, b->port);
}

static void warn(const remote_connect_opts *opts, const conf_box *b, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void warn(const remote_connect_opts *opts, const conf_box *b, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	if (!opts || !opts->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	opts->log(opts->log_ctx, b->name, msg);
}

/* Loads `path` into a new collection; a missing file is an empty one. */
static LIBSSH2_KNOWNHOSTS *load(remote_conn *c, const remote_connect_opts *opts, bool quiet)
{
	LIBSSH2_KNOWNHOSTS *kh = libssh2_knownhost_init(c->session);
	const char *path = c->box->known_hosts[0];
	FILE *f = path ? fopen(path, "r") : NULL;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int lineno = 0;

	if (!kh || !f)
		goto out;
	while ((len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		const char *p = line;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0' || *p == '#')
			continue;
		if (*p == '@') {
			if (!quiet)
				warn(opts, c->box, "%s:%d: markers such as '%.*s' are not supported; line skipped",
				     path, lineno, (int)strcspn(p, " \t"), p);
			continue;
		}
		if (libssh2_knownhost_readline(kh, p, strlen(p), LIBSSH2_KNOWNHOST_FILE_OPENSSH) != 0 &&
		    !quiet)
			warn(opts, c->box, "%s:%d: cannot parse this known_hosts line; skipped", path, lineno);
	}
out:
	free(line);
	if (f)
		fclose(f);
	return kh;
}

void remote_knownhosts_prefer(remote_conn *c, const remote_connect_opts *opts)
{
	char name[300], prefs[256] = "";
	bool used[N_KEYTYPES] = {false};
	LIBSSH2_KNOWNHOSTS *kh = load(c, opts, true);
	if (!kh)
		return;
	host_entry_name(c->box, name, sizeof(name));
	/* A dummy key of each type: MISMATCH means an entry of that type exists. */
	for (size_t i = 0; i < N_KEYTYPES; i++) {
		int r = libssh2_knownhost_checkp(kh, name, -1, "x", 1,
						 LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW |
							 keytypes[i].knownhost,
						 NULL);
		if (r == LIBSSH2_KNOWNHOST_CHECK_MISMATCH) {
			used[i] = true;
			if (*prefs)
				strcat(prefs, ",");
			strcat(prefs, keytypes[i].method);
		}
	}
	for (size_t i = 0; i < N_KEYTYPES; i++) {
		if (used[i])
			continue;
		if (*prefs)
			strcat(prefs, ",");
		strcat(prefs, keytypes[i].method);
	}
	libssh2_session_method_pref(c->session, LIBSSH2_METHOD_HOSTKEY, prefs);
	libssh2_knownhost_free(kh);
}

static int record(remote_conn *c, LIBSSH2_KNOWNHOSTS *kh, const char *name, const char *key,
		  size_t keylen, int typemask, bg_err *err)
{
	struct libssh2_knownhost *store = NULL;
	char line[16384];
	size_t outlen = 0;
	const char *path = c->box->known_hosts[0];
	if (libssh2_knownhost_addc(kh, name, NULL, key, keylen, NULL, 0, typemask, &store) != 0 ||
	    libssh2_knownhost_writeline(kh, store, line, sizeof(line), &outlen,
					LIBSSH2_KNOWNHOST_FILE_OPENSSH) != 0)
		return bg_fail(err, BG_EHOSTKEY, "%s: cannot format the new known_hosts entry", c->box->name);
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return bg_fail(err, BG_EHOSTKEY, "%s: cannot record the host key in %s: %s", c->box->name,
			       path, strerror(errno));
	/* Boxes connect in parallel: one whole line per locked append. */
	flock(fd, LOCK_EX);
	ssize_t w = write(fd, line, outlen);
	flock(fd, LOCK_UN);
	close(fd);
	if (w != (ssize_t)outlen)
		return bg_fail(err, BG_EHOSTKEY, "%s: short write recording the host key in %s",
			       c->box->name, path);
	return 0;
}

int remote_knownhosts_check(remote_conn *c, const remote_connect_opts *opts, bg_err *err)
{
	const conf_box *b = c->box;
	size_t keylen = 0;
	int type = 0;
	const char *key = libssh2_session_hostkey(c->session, &keylen, &type);
	const unsigned char *hash =
		(const unsigned char *)libssh2_hostkey_hash(c->session, LIBSSH2_HOSTKEY_HASH_SHA256);
	const struct keytype *kt = NULL;
	char name[300];
	int rc = 0;

	for (size_t i = 0; i < N_KEYTYPES; i++)
		if (keytypes[i].hostkey == type)
			kt = &keytypes[i];
	if (!key || !hash || !kt)
		return bg_fail(err, BG_EHOSTKEY, "%s: the server offered a host key type boxgate cannot check",
			       b->name);
	remote_sha256_fingerprint(hash, c->fingerprint, sizeof(c->fingerprint));
	host_entry_name(b, name, sizeof(name));

	LIBSSH2_KNOWNHOSTS *kh = load(c, opts, false);
	if (!kh)
		return bg_fail(err, BG_EHOSTKEY, "%s: cannot read known_hosts", b->name);
	int typemask = LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW | kt->knownhost;
	int r = libssh2_knownhost_checkp(kh, name, -1, key, keylen, typemask, NULL);
	switch (r) {
	case LIBSSH2_KNOWNHOST_CHECK_MATCH:
		break;
	case LIBSSH2_KNOWNHOST_CHECK_MISMATCH:
		rc = bg_fail(err, BG_EHOSTKEY,
			     "%s: WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! The %s host key for %s is "
			     "now %s, which does not match the key recorded in %s. Someone could be "
			     "eavesdropping (a man-in-the-middle attack), or the host key was just changed. "
			     "Refusing to connect. Once you have verified the new key, remove the old entry "
			     "with: ssh-keygen -R '%s' -f %s",
			     b->name, kt->label, name, c->fingerprint, b->known_hosts[0], name, b->known_hosts[0]);
		break;
	case LIBSSH2_KNOWNHOST_CHECK_NOTFOUND:
		if (b->host_key_check == CONF_HKC_ACCEPT_NEW || (opts && opts->accept_new)) {
			rc = record(c, kh, name, key, keylen, typemask, err);
			if (rc == 0)
				warn(opts, b, "recorded new %s host key %s for %s in %s", kt->label,
				     c->fingerprint, name, b->known_hosts[0]);
			break;
		}
		rc = bg_fail(err, BG_EHOSTKEY,
			     "%s: host key for %s is not known (%s key %s) in %s; refusing to connect "
			     "(host_key_check = strict). If this fingerprint is right, accept it with: "
			     "boxgate check --accept-new %s",
			     b->name, name, kt->label, c->fingerprint, b->known_hosts[0],
			     b->name);
		break;
	default:
		rc = bg_fail(err, BG_EHOSTKEY, "%s: host key check failed: %s", b->name,
			     remote_ssh_errmsg(c->session));
	}
	libssh2_knownhost_free(kh);
	return rc;
}
