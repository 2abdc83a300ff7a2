/* Host-key checking exactly as `ssh -o StrictHostKeyChecking=yes|accept-new`
 * (OpenSSH 9.2 sshconnect.c check_host_key, CheckHostIP off): every user
 * known_hosts file, then every global one, is read by remote/hostfile.c;
 * libssh2 only supplies the server's key. Strict refuses an unknown key,
 * accept-new records it in the first user file; a changed or revoked key is
 * always refused. One deliberate difference: a key revoked only under the
 * port-less name of a non-default port is refused (ssh warns, then goes on
 * as for a new key). */
#include "remote/internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <openssl/evp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xmalloc.h"
#include "remote/hostfile.h"

void remote_sha256_fingerprint(const unsigned char *hash, char *out, size_t n)
{
	unsigned char b64[64];
	int len = EVP_EncodeBlock(b64, hash, 32);
	while (len > 0 && b64[len - 1] == '=')
		len--;
	snprintf(out, n, "SHA256:%.*s", len, (const char *)b64);
}

static void warn(const remote_connect_opts *opts, const remote_target *b, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void warn(const remote_connect_opts *opts, const remote_target *b, const char *fmt, ...)
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

/* Keeps an unparsable line's warning until the key is checked. */
static void keep_warning(void *ctx, const char *path, int line, const char *why)
{
	remote_known_hosts *kh = ctx;
	kh->warnings =
		xgrow(kh->warnings, &kh->cap_warnings, kh->n_warnings + 1, sizeof(*kh->warnings));
	kh->warnings[kh->n_warnings++] =
		line ? xasprintf("%s:%d: cannot parse this known_hosts line (%s); skipped", path,
				 line, why)
		     : xasprintf("%s: %s; skipped (as if it were empty)", path, why);
}

/* The host name ssh looks up: HostName lowercased, or an address in its
 * canonical numeric form (ssh.c resolve_canonicalize for addresses). */
static char *lookup_host(const remote_target *b)
{
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST, .ai_socktype = SOCK_STREAM};
	struct addrinfo *ai = NULL;
	char ntop[NI_MAXHOST];
	if (getaddrinfo(b->hostname, NULL, &hints, &ai) == 0) {
		int r = getnameinfo(ai->ai_addr, ai->ai_addrlen, ntop, sizeof(ntop), NULL, 0,
				    NI_NUMERICHOST);
		freeaddrinfo(ai);
		if (r == 0)
			return xstrdup(ntop);
	}
	char *h = xstrdup(b->hostname);
	for (char *p = h; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return h;
}

/* load_hostkeys over every user file, then every global file. */
static void load_all(remote_hostfile_set *s, const remote_target *b, const char *name,
		     remote_known_hosts *warn_to)
{
	remote_hostfile_warn_fn warn_fn = warn_to ? keep_warning : NULL;
	for (size_t i = 0; i < b->n_known_hosts; i++)
		remote_hostfile_load(s, name, b->known_hosts[i], warn_fn, warn_to);
	for (size_t i = 0; i < b->n_global_known_hosts; i++)
		remote_hostfile_load(s, name, b->global_known_hosts[i], warn_fn, warn_to);
}

void remote_knownhosts_load(remote_conn *c, remote_known_hosts *kh)
{
	memset(kh, 0, sizeof(*kh));
	kh->host = lookup_host(c->target);
	kh->name = remote_hostfile_host_port(kh->host, c->target->port);
	load_all(&kh->set, c->target, kh->name, kh);
}

void remote_knownhosts_release(remote_known_hosts *kh)
{
	remote_hostfile_set_release(&kh->set);
	free(kh->host);
	free(kh->name);
	for (size_t i = 0; i < kh->n_warnings; i++)
		free(kh->warnings[i]);
	free(kh->warnings);
	memset(kh, 0, sizeof(*kh));
}

void remote_knownhosts_prefer(remote_conn *c, const remote_known_hosts *kh)
{
	char first[256] = "", last[256] = "";
	/* order_hostkeyalgs: a known key of the best algorithm keeps the list
	 * as is; otherwise known types first, in list order. */
	bool best_known = remote_hostfile_lookup_type(&kh->set, 0) != NULL;
	for (int t = 0; t < REMOTE_HOSTKEY_N_METHODS; t++) {
		const char *m = NULL;
		remote_hostkey_method(t, &m);
		char *to = best_known || remote_hostfile_lookup_type(&kh->set, t) ? first : last;
		if (*to)
			strcat(to, ",");
		strcat(to, m);
	}
	if (*first && *last)
		strcat(first, ",");
	strcat(first, last);
	libssh2_session_method_pref(c->session, LIBSSH2_METHOD_HOSTKEY, first);
}

/* ssh's ~/.ssh is created when the file to record into lies in it
 * (hostfile_create_user_ssh_dir). */
static void create_user_ssh_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	struct passwd pw, *pwp = NULL;
	char buf[4096];
	struct stat st;
	if (!slash || getpwuid_r(getuid(), &pw, buf, sizeof(buf), &pwp) != 0 || !pwp)
		return;
	char *dir = xasprintf("%s/.ssh", pw.pw_dir);
	size_t len = (size_t)(slash - path);
	if (strlen(dir) <= len && strncmp(path, dir, len) == 0 && stat(dir, &st) != 0 &&
	    errno == ENOENT)
		mkdir(dir, 0700);
	free(dir);
}

/* add_host_to_hostfile: one whole line per locked append (boxes connect in
 * parallel), after a newline when the file lacks its last one. */
static int record(const remote_target *b, const char *name, const remote_hostkey *k, bg_err *err)
{
	const char *path = b->known_hosts[0];
	char *line = remote_hostfile_format_entry(name, k);
	size_t n = strlen(line);
	struct stat st;
	char lastc = '\n';
	int rc = 0;
	create_user_ssh_dir(path);
	int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = bg_fail(err, BG_EHOSTKEY, "%s: cannot record the host key in %s: %s", b->name,
			     path, strerror(errno));
		goto out;
	}
	flock(fd, LOCK_EX);
	if (fstat(fd, &st) == 0 && st.st_size > 0 && pread(fd, &lastc, 1, st.st_size - 1) == 1 &&
	    lastc != '\n' && write(fd, "\n", 1) != 1)
		rc = -1;
	if (rc == 0 && write(fd, line, n) != (ssize_t)n)
		rc = -1;
	flock(fd, LOCK_UN);
	close(fd);
	if (rc < 0)
		rc = bg_fail(err, BG_EHOSTKEY, "%s: short write recording the host key in %s",
			     b->name, path);
out:
	free(line);
	return rc;
}

/* Says how the key was judged, for callers that branch on it. */
static int with_detail(bg_err *err, int rc, int detail)
{
	if (err)
		err->detail = detail;
	return rc;
}

static int fail_revoked(const remote_target *b, const char *label, const char *name, const char *fp,
			const remote_hostfile_entry *e, const char *extra, bg_err *err)
{
	return with_detail(err,
			   bg_fail(err, BG_EHOSTKEY,
				   "%s: @ " REMOTE_HOSTKEY_REVOKED_TEXT
				   " @ The %s host key for %s is marked as "
				   "revoked (%s; @revoked in %s:%d). This could mean that a stolen "
				   "key is being "
				   "used to impersonate this host. %s host key for %s was revoked "
				   "and you have "
				   "requested strict checking.%s Host key verification failed.",
				   b->name, label, name, fp, e->file, e->line, label, name, extra),
			   BG_DETAIL_HOSTKEY_REVOKED);
}

int remote_knownhosts_check(remote_conn *c, const remote_known_hosts *kh,
			    const remote_connect_opts *opts, bg_err *err)
{
	const remote_target *b = c->target;
	size_t keylen = 0;
	int type = 0;
	const char *key = libssh2_session_hostkey(c->session, &keylen, &type);
	const unsigned char *hash = (const unsigned char *)libssh2_hostkey_hash(
		c->session, LIBSSH2_HOSTKEY_HASH_SHA256);
	const remote_hostfile_set *s = &kh->set;
	remote_hostfile_set s2 = REMOTE_HOSTFILE_SET_INIT;
	const remote_hostfile_entry *found = NULL;
	const char *host = kh->host, *name = kh->name;
	const char *why = NULL;
	int rc = 0;

	if (!key || !hash)
		return with_detail(
			err, bg_fail(err, BG_EHOSTKEY, "%s: the server sent no host key", b->name),
			BG_DETAIL_HOSTKEY_REFUSED);
	remote_hostkey k = {remote_hostkey_parse_blob((const unsigned char *)key, keylen, &why),
			    (unsigned char *)key, keylen};
	if (k.type < 0)
		return with_detail(
			err,
			bg_fail(err, BG_EHOSTKEY,
				"%s: the server offered a host key boxgate cannot check (%s)",
				b->name, why),
			BG_DETAIL_HOSTKEY_REFUSED);
	const char *label = remote_hostkey_label(k.type);
	remote_sha256_fingerprint(hash, c->fingerprint, sizeof(c->fingerprint));
	for (size_t i = 0; i < kh->n_warnings; i++)
		warn(opts, b, "%s", kh->warnings[i]);
	switch (remote_hostfile_check(s, &k, &found)) {
	case REMOTE_HOSTKEY_OK: goto out;
	case REMOTE_HOSTKEY_REVOKED:
		rc = fail_revoked(b, label, name, c->fingerprint, found, "", err);
		goto out;
	case REMOTE_HOSTKEY_CHANGED:
		rc = bg_fail(
			err, BG_EHOSTKEY,
			"%s: " REMOTE_HOSTKEY_CHANGED_TEXT
			" The fingerprint for the %s key sent by "
			"the remote host is %s; offending %s key in %s:%d. Someone could be "
			"eavesdropping on you right now (man-in-the-middle attack), or the host "
			"key "
			"has just been changed. Host key for %s has changed and you have requested "
			"strict checking. Host key verification failed. Once you have verified the "
			"new key, remove the old entry with: ssh-keygen -f '%s' -R '%s'",
			b->name, label, c->fingerprint, remote_hostkey_label(found->key.type),
			found->file, found->line, name, found->file, name);
		with_detail(err, rc, BG_DETAIL_HOSTKEY_CHANGED);
		goto out;
	case REMOTE_HOSTKEY_NEW: break;
	}

	/* "checking without port identifier": for a non-default port, a key
	 * recorded under the bare name is accepted; a different one there is
	 * not a change (ssh stays quiet and goes on as for a new key). */
	if (b->port != 22 && b->port != 0) {
		load_all(&s2, b, host, NULL);
		switch (remote_hostfile_check(&s2, &k, &found)) {
		case REMOTE_HOSTKEY_OK: goto out;
		case REMOTE_HOSTKEY_REVOKED: {
			char extra[160];
			snprintf(extra, sizeof(extra),
				 " (Revoked under the port-less name: ssh would go on as for a new "
				 "key "
				 "for %s; boxgate refuses.)",
				 name);
			rc = fail_revoked(b, label, host, c->fingerprint, found, extra, err);
			goto out;
		}
		default: break;
		}
	}

	/* New. Say so when certificates would have been the way in. */
	char note[512] = "";
	const remote_hostfile_entry *ca = remote_hostfile_find_marker(s, REMOTE_HOSTFILE_MARK_CA);
	if (!ca)
		ca = remote_hostfile_find_marker(&s2, REMOTE_HOSTFILE_MARK_CA);
	if (ca)
		snprintf(note, sizeof(note),
			 " A @cert-authority line names this host (%s:%d), but boxgate does not do "
			 "host certificates: it checks only plain host keys.",
			 ca->file, ca->line);
	bool accept_new = b->host_key_check == REMOTE_HKC_ACCEPT_NEW || (opts && opts->accept_new);
	const char *unrecordable = NULL;
	if (b->n_known_hosts == 0)
		unrecordable = "there is no user known_hosts file to record it in";
	else if (strcspn(host, "@?*#[]|'\"\\") != strlen(host))
		unrecordable = "ssh never records a host name with any of @?*#[]|'\"\\ in it";
	if (accept_new && !unrecordable) {
		rc = record(b, name, &k, err);
		if (rc < 0)
			with_detail(err, rc, BG_DETAIL_HOSTKEY_REFUSED);
		if (rc == 0)
			warn(opts, b,
			     "Warning: Permanently added '%s' (%s) to the list of known hosts: %s "
			     "key %s "
			     "recorded in %s.%s",
			     name, label, label, c->fingerprint, b->known_hosts[0], note);
		goto out;
	}
	char others[64] = "";
	size_t n_files = b->n_known_hosts + b->n_global_known_hosts;
	if (n_files > 1)
		snprintf(others, sizeof(others), " and %zu other known_hosts file%s", n_files - 1,
			 n_files > 2 ? "s" : "");
	if (accept_new)
		rc = bg_fail(err, BG_EHOSTKEY,
			     "%s: host key for %s " REMOTE_HOSTKEY_UNKNOWN_TEXT " (%s key %s) and "
			     "cannot be recorded: %s. Host key verification failed.%s",
			     b->name, name, label, c->fingerprint, unrecordable, note);
	else
		rc = bg_fail(err, BG_EHOSTKEY,
			     "%s: host key for %s " REMOTE_HOSTKEY_UNKNOWN_TEXT
			     " (%s key %s) in %s%s; "
			     "refusing to connect (host_key_check = strict). No %s host key is "
			     "known for "
			     "%s and you have requested strict checking. Host key verification "
			     "failed.%s "
			     "If this fingerprint is right, accept it with: boxgate check "
			     "--accept-new %s",
			     b->name, name, label, c->fingerprint,
			     b->n_known_hosts ? b->known_hosts[0] : "(no file)", others, label,
			     name, note, b->name);
	with_detail(err, rc, BG_DETAIL_HOSTKEY_UNKNOWN);
out:
	remote_hostfile_set_release(&s2);
	return rc;
}
