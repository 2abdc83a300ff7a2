/* ssh_config as OpenSSH 9.2 reads it: ssh.c main()'s two passes over the
 * files and its host name handling (HostName's %h, lowercasing, address
 * normalisation), and what boxgate refuses once both passes are done. The
 * pieces live beside it: sshconfig_lex.c (words), sshconfig_read.c (lines,
 * keywords, Include), sshconfig_match.c (Host and Match), sshconfig_expand.c
 * (`~`, %-tokens, ${VAR}). */
#include "conf/sshconfig_internal.h"

#include <netdb.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/xmalloc.h"
#include "conf/internal.h"

/* ssh.c's is_addr(). */
static bool is_addr(const char *name)
{
	if (strchr(name, '%') || strchr(name, ':') || strspn(name, "0123456789.") == strlen(name))
		return true;
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	if (getaddrinfo(name, "22", &hints, &res) != 0)
		return false;
	bool one = res && !res->ai_next;
	freeaddrinfo(res);
	return one;
}

/* ssh.c's resolve_addr() as resolve_canonicalize() uses it for an address:
 * the numeric form getnameinfo() gives, or NULL. No name lookup. */
static char *canonical_addr(const char *name)
{
	struct addrinfo hints, *res = NULL;
	char addr[NI_MAXHOST];
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	if (getaddrinfo(name, "22", &hints, &res) != 0 || !res)
		return NULL;
	char *out = NULL;
	if (!res->ai_next && getnameinfo(res->ai_addr, res->ai_addrlen, addr, sizeof(addr), NULL, 0,
					 NI_NUMERICHOST) == 0)
		out = xstrdup(addr);
	freeaddrinfo(res);
	return out;
}

static int run_pass(sshcfg_state *lk, const char *path)
{
	bool active = true;
	return sshcfg_parse_file(lk, path, 0, &active, false, true);
}

int sshcfg_resolve(const char *path, const sshcfg_query *q, sshcfg_host *out, bg_err *err)
{
	int rc = 0;
	char *host = NULL;
	memset(out, 0, sizeof(*out));
	out->connect_timeout_s = -1;
	struct passwd *pw = getpwuid(getuid());
	char *local_user = xstrdup(pw && pw->pw_name ? pw->pw_name : "unknown");
	sshcfg_state lk;
	memset(&lk, 0, sizeof(lk));
	lk.q = q;
	lk.host = q->host;
	lk.out = out;
	lk.local_user = local_user;
	lk.canonicalize = -1;
	lk.err = err;

	rc = run_pass(&lk, path);
	if (rc)
		goto out;
	/* ssh.c main(): HostName with %h, then lowercase (an address is
	 * normalised instead), then the final pass when one was asked for. */
	if (out->hostname) {
		rc = sshcfg_expand_hostname(out->hostname, q->host, lk.hostname_at, &host, lk.err);
		if (rc)
			goto out;
	} else {
		host = xstrdup(q->host);
	}
	if (is_addr(host)) {
		char *c = canonical_addr(host);
		if (c && strcasecmp(c, host) != 0) {
			free(host);
			host = c;
			c = NULL;
		}
		free(c);
	} else {
		sshcfg_lowercase(host);
	}
	if (lk.want_final) {
		free(out->hostname);
		out->hostname = xstrdup(host);
		lk.host = host;
		lk.final_pass = true;
		rc = run_pass(&lk, path);
		if (rc)
			goto out;
	}
	free(out->hostname);
	out->hostname = host;
	host = NULL;

	if (lk.canonicalize == 1)
		sshcfg_refuse_at(&lk, "CanonicalizeHostname", lk.canonicalize_at);
	if (lk.host_key_alias_at)
		sshcfg_refuse_at(&lk, "HostKeyAlias", lk.host_key_alias_at);
	if (lk.hostkey_opt_at)
		sshcfg_refuse_at(&lk, lk.hostkey_opt_name, lk.hostkey_opt_at);
	if (lk.jump_host && strcasecmp(lk.jump_host, "none") != 0) {
		out->jump = lk.jump_host;
		out->jump_at = lk.jump_at;
		lk.jump_host = lk.jump_at = NULL;
	} else if (lk.proxy_command && strcasecmp(lk.proxy_command, "none") != 0) {
		sshcfg_refuse_at(&lk, "ProxyCommand", lk.proxy_at);
	}
out:
	free(host);
	free(local_user);
	free(lk.hostname_at);
	free(lk.jump_host);
	free(lk.jump_at);
	free(lk.proxy_command);
	free(lk.proxy_at);
	free(lk.canonicalize_at);
	free(lk.host_key_alias_at);
	free(lk.hostkey_opt_at);
	free(lk.ignore_unknown);
	if (rc)
		sshcfg_host_release(out);
	return rc;
}

int sshcfg_lookup(const char *path, const char *host, const char *home, sshcfg_host *out,
		  bg_err *err)
{
	sshcfg_query q = {host, NULL, 0, NULL, home ? home : "/"};
	return sshcfg_resolve(path, &q, out, err);
}

void sshcfg_host_release(sshcfg_host *h)
{
	if (!h)
		return;
	free(h->hostname);
	free(h->user);
	conf_strv_free(h->identities, h->n_identities);
	conf_strv_free(h->identities_at, h->n_identities);
	conf_strv_free(h->known_hosts, h->n_known_hosts);
	free(h->known_hosts_at);
	conf_strv_free(h->global_known_hosts, h->n_global_known_hosts);
	free(h->connect_timeout_at);
	free(h->jump);
	free(h->jump_at);
	free(h->unsupported);
	memset(h, 0, sizeof(*h));
	h->connect_timeout_s = -1;
}
