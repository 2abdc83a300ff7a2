/* known_hosts read as OpenSSH 9.2 reads it. Each function names the OpenSSH
 * function whose decisions it repeats; where OpenSSH's behaviour is odd (a
 * negated pattern voiding the whole line, CR kept in a line, a key of
 * another type counting as a changed key) the oddity is kept on purpose:
 * boxgate must accept, refuse and record exactly when ssh would. */
#include "remote/hostfile.h"

#include <ctype.h>
#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/obj_mac.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xmalloc.h"

/* ---- host patterns ---- */

bool remote_hostfile_match_pattern(const char *s, const char *pattern)
{
	for (;;) {
		if (!*pattern)
			return !*s;
		if (*pattern == '*') {
			while (*pattern == '*')
				pattern++;
			if (!*pattern)
				return true;
			if (*pattern != '?' && *pattern != '*') {
				for (; *s; s++)
					if (*s == *pattern &&
					    remote_hostfile_match_pattern(s + 1, pattern + 1))
						return true;
				return false;
			}
			for (; *s; s++)
				if (remote_hostfile_match_pattern(s, pattern))
					return true;
			return false;
		}
		if (!*s)
			return false;
		if (*pattern != '?' && *pattern != *s)
			return false;
		s++;
		pattern++;
	}
}

int remote_hostfile_match_list(const char *host, const char *list)
{
	char sub[1024];
	size_t len = strlen(list), i = 0;
	int got_positive = 0;
	char *lhost = xstrdup(host);

	for (char *p = lhost; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	while (i < len) {
		bool negated = list[i] == '!';
		size_t subi = 0;
		if (negated)
			i++;
		for (; i < len && subi < sizeof(sub) - 1 && list[i] != ','; subi++, i++)
			sub[subi] = (char)tolower((unsigned char)list[i]);
		/* match_pattern_list: an overlong pattern voids the whole list. */
		if (subi >= sizeof(sub) - 1) {
			got_positive = 0;
			break;
		}
		if (i < len && list[i] == ',')
			i++;
		sub[subi] = '\0';
		if (remote_hostfile_match_pattern(lhost, sub)) {
			if (negated) {
				got_positive = -1;
				break;
			}
			got_positive = 1;
		}
	}
	free(lhost);
	return got_positive;
}

/* b64_pton (BIND), as OpenSSH decodes both key blobs and hash salts:
 * whitespace anywhere is skipped, padding must be well formed and the
 * unused bits zero. Like b64_pton it wants one spare byte of room.
 * Returns the decoded length or -1. */
static int b64_decode(const char *src, unsigned char *target, size_t targsize)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t ti = 0;
	int state = 0, ch;

	while ((ch = (unsigned char)*src++) != '\0') {
		if (isspace(ch))
			continue;
		if (ch == '=')
			break;
		const char *pos = strchr(b64, ch);
		if (!pos)
			return -1;
		unsigned v = (unsigned)(pos - b64);
		switch (state) {
		case 0:
			if (ti >= targsize)
				return -1;
			target[ti] = (unsigned char)(v << 2);
			state = 1;
			break;
		case 1:
		case 2:
			/* The second and third digits end one byte and start the
			 * next: 2 bits then 4, and 4 bits then 2. */
			if (ti + 1 >= targsize)
				return -1;
			target[ti] |= (unsigned char)(v >> (6 - 2 * state));
			target[ti + 1] = (unsigned char)(v << (2 + 2 * state));
			ti++;
			state++;
			break;
		default:
			if (ti >= targsize)
				return -1;
			target[ti] |= (unsigned char)v;
			ti++;
			state = 0;
			break;
		}
	}
	if (ch == '=') {
		ch = (unsigned char)*src++;
		switch (state) {
		case 0:
		case 1: return -1;
		case 2:
			for (; ch != '\0'; ch = (unsigned char)*src++)
				if (!isspace(ch))
					break;
			if (ch != '=')
				return -1;
			ch = (unsigned char)*src++;
			/* fall through */
		default:
			for (; ch != '\0'; ch = (unsigned char)*src++)
				if (!isspace(ch))
					return -1;
			if (target[ti] != 0)
				return -1;
		}
	} else if (state != 0) {
		return -1;
	}
	return (int)ti;
}

static char *b64_encode(const unsigned char *data, size_t n)
{
	char *out = xmalloc(4 * ((n + 2) / 3) + 1);
	EVP_EncodeBlock((unsigned char *)out, data, (int)n);
	return out;
}

#define HASH_MAGIC "|1|"
#define SHA1_LEN   20

char *remote_hostfile_hash_name(const char *host, const unsigned char salt[SHA1_LEN])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int maclen = 0;
	HMAC(EVP_sha1(), salt, SHA1_LEN, (const unsigned char *)host, strlen(host), mac, &maclen);
	char *s = b64_encode(salt, SHA1_LEN), *h = b64_encode(mac, maclen);
	char *out = xasprintf("%s%s|%s", HASH_MAGIC, s, h);
	free(s);
	free(h);
	return out;
}

int remote_hostfile_match_hashed(const char *host, const char *hashed)
{
	size_t l = strlen(hashed);
	unsigned char salt[256];
	if (l < strlen(HASH_MAGIC) || strncmp(hashed, HASH_MAGIC, strlen(HASH_MAGIC)) != 0)
		return -1;
	const char *s = hashed + strlen(HASH_MAGIC);
	const char *p = strchr(s, '|');
	if (!p || p == s || p - s > 1024)
		return -1;
	char *b64salt = xstrndup(s, (size_t)(p - s));
	int n = b64_decode(b64salt, salt, sizeof(salt));
	free(b64salt);
	if (n != SHA1_LEN)
		return -1;
	char *mine = remote_hostfile_hash_name(host, salt);
	int r = strcmp(mine, hashed) == 0;
	free(mine);
	return r;
}

int remote_hostfile_match_names(const char *host, const char *names)
{
	if (*names == '|')
		return remote_hostfile_match_hashed(host, names);
	return remote_hostfile_match_list(host, names) == 1;
}

char *remote_hostfile_host_port(const char *host, int port)
{
	if (port == 0 || port == 22)
		return xstrdup(host);
	return xasprintf("[%s]:%d", host, port);
}

/* ---- keys ---- */

enum kind { K_ED25519, K_ECDSA, K_RSA, K_DSA, K_ED25519_SK, K_ECDSA_SK, K_CERT };

struct keytype {
	const char *name;  /* as written in known_hosts and in the blob */
	const char *label; /* sshkey_type() */
	enum kind kind;
	int nid;            /* ECDSA: the curve */
	const char *curve;  /* ECDSA: the blob's curve name */
	const char *method; /* the libssh2 1.10 host-key algorithm, if any */
};

static const struct keytype types[] = {
	{"ssh-ed25519", "ED25519", K_ED25519, 0, NULL, "ssh-ed25519"},
	{"ecdsa-sha2-nistp256", "ECDSA", K_ECDSA, NID_X9_62_prime256v1, "nistp256",
	 "ecdsa-sha2-nistp256"},
	{"ecdsa-sha2-nistp384", "ECDSA", K_ECDSA, NID_secp384r1, "nistp384", "ecdsa-sha2-nistp384"},
	{"ecdsa-sha2-nistp521", "ECDSA", K_ECDSA, NID_secp521r1, "nistp521", "ecdsa-sha2-nistp521"},
	{"ssh-rsa", "RSA", K_RSA, 0, NULL, "ssh-rsa"},
	{"ssh-dss", "DSA", K_DSA, 0, NULL, "ssh-dss"},
	{"sk-ssh-ed25519@openssh.com", "ED25519-SK", K_ED25519_SK, 0, NULL, NULL},
	{"sk-ecdsa-sha2-nistp256@openssh.com", "ECDSA-SK", K_ECDSA_SK, NID_X9_62_prime256v1,
	 "nistp256", NULL},
	/* Certificates are parsed by type name only: boxgate does not check
	 * certificates, and a certificate is never equal to a plain key. */
	{"ssh-ed25519-cert-v01@openssh.com", "ED25519-CERT", K_CERT, 0, NULL, NULL},
	{"ecdsa-sha2-nistp256-cert-v01@openssh.com", "ECDSA-CERT", K_CERT, 0, NULL, NULL},
	{"ecdsa-sha2-nistp384-cert-v01@openssh.com", "ECDSA-CERT", K_CERT, 0, NULL, NULL},
	{"ecdsa-sha2-nistp521-cert-v01@openssh.com", "ECDSA-CERT", K_CERT, 0, NULL, NULL},
	{"ssh-rsa-cert-v01@openssh.com", "RSA-CERT", K_CERT, 0, NULL, NULL},
	{"ssh-dss-cert-v01@openssh.com", "DSA-CERT", K_CERT, 0, NULL, NULL},
	{"sk-ssh-ed25519-cert-v01@openssh.com", "ED25519-SK-CERT", K_CERT, 0, NULL, NULL},
	{"sk-ecdsa-sha2-nistp256-cert-v01@openssh.com", "ECDSA-SK-CERT", K_CERT, 0, NULL, NULL},
};
#define N_TYPES    ((int)(sizeof(types) / sizeof(types[0])))
#define T_RSA      4
#define T_RSA_CERT 12

/* peek_type_nid / sshkey_type_from_name: the signature-only names of RSA
 * name the RSA key type too. */
static int type_from_name(const char *s, size_t l)
{
	static const struct {
		const char *name;
		int type;
	} aliases[] = {
		{"rsa-sha2-256", T_RSA},
		{"rsa-sha2-512", T_RSA},
		{"rsa-sha2-256-cert-v01@openssh.com", T_RSA_CERT},
		{"rsa-sha2-512-cert-v01@openssh.com", T_RSA_CERT},
	};
	for (int i = 0; i < N_TYPES; i++)
		if (strlen(types[i].name) == l && memcmp(types[i].name, s, l) == 0)
			return i;
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (strlen(aliases[i].name) == l && memcmp(aliases[i].name, s, l) == 0)
			return aliases[i].type;
	return -1;
}

const char *remote_hostkey_label(int type)
{
	return type >= 0 && type < N_TYPES ? types[type].label : "unknown";
}

const char *remote_hostkey_name(int type)
{
	return type >= 0 && type < N_TYPES ? types[type].name : "unknown";
}

bool remote_hostkey_method(int type, const char **method)
{
	if (type < 0 || type >= N_TYPES || !types[type].method)
		return false;
	*method = types[type].method;
	return true;
}

struct rd {
	const unsigned char *p;
	size_t n;
};

static bool get_string(struct rd *r, const unsigned char **s, size_t *len)
{
	if (r->n < 4)
		return false;
	uint32_t l = (uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 | (uint32_t)r->p[2] << 8 |
		     r->p[3];
	if (l > r->n - 4)
		return false;
	*s = r->p + 4;
	*len = l;
	r->p += 4 + l;
	r->n -= 4 + l;
	return true;
}

/* sshbuf_get_bignum2: non-negative, at most 16384 bits; *bits the size. */
static bool get_mpint(struct rd *r, size_t *bits)
{
	const unsigned char *d;
	size_t l;
	if (!get_string(r, &d, &l))
		return false;
	if (l > 0 && (d[0] & 0x80))
		return false;
	if (l > 2049 || (l == 2049 && d[0] != 0))
		return false;
	while (l > 0 && d[0] == 0) {
		d++;
		l--;
	}
	size_t b = l * 8;
	if (l > 0)
		for (unsigned char top = d[0]; !(top & 0x80); top <<= 1)
			b--;
	if (bits)
		*bits = b;
	return true;
}

/* sshbuf_get_eckey + sshkey_ec_validate_public, in short: an uncompressed
 * point on the curve, not the point at infinity. */
static bool get_ec_point(struct rd *r, int nid)
{
	const unsigned char *d;
	size_t l;
	bool ok = false;
	if (!get_string(r, &d, &l) || l == 0 || l > 133 || d[0] != POINT_CONVERSION_UNCOMPRESSED)
		return false;
	EC_GROUP *g = EC_GROUP_new_by_curve_name(nid);
	EC_POINT *pt = g ? EC_POINT_new(g) : NULL;
	if (pt && EC_POINT_oct2point(g, pt, d, l, NULL) == 1 && !EC_POINT_is_at_infinity(g, pt) &&
	    EC_POINT_is_on_curve(g, pt, NULL) == 1)
		ok = true;
	EC_POINT_free(pt);
	EC_GROUP_free(g);
	return ok;
}

static bool str_is(const unsigned char *s, size_t l, const char *want)
{
	return l == strlen(want) && memcmp(s, want, l) == 0;
}

int remote_hostkey_parse_blob(const unsigned char *blob, size_t len, const char **why)
{
	struct rd r = {blob, len};
	const unsigned char *s;
	size_t l, bits = 0;
	const char *dummy;
	if (!why)
		why = &dummy;
	*why = "malformed key blob";
	if (!get_string(&r, &s, &l)) {
		*why = "the key blob has no key type";
		return -1;
	}
	int t = type_from_name((const char *)s, l);
	if (t < 0) {
		*why = "unknown key type in the key blob";
		return -1;
	}
	const struct keytype *kt = &types[t];
	switch (kt->kind) {
	case K_ED25519:
	case K_ED25519_SK:
		if (!get_string(&r, &s, &l) || l != 32)
			return -1;
		if (kt->kind == K_ED25519_SK && !get_string(&r, &s, &l))
			return -1;
		break;
	case K_ECDSA:
	case K_ECDSA_SK:
		if (!get_string(&r, &s, &l) || !str_is(s, l, kt->curve)) {
			*why = "the key's curve does not match its type";
			return -1;
		}
		if (!get_ec_point(&r, kt->nid)) {
			*why = "invalid EC point";
			return -1;
		}
		if (kt->kind == K_ECDSA_SK && !get_string(&r, &s, &l))
			return -1;
		break;
	case K_RSA:
		if (!get_mpint(&r, NULL) || !get_mpint(&r, &bits))
			return -1;
		if (bits < 1024) {
			*why = "RSA key shorter than 1024 bits";
			return -1;
		}
		break;
	case K_DSA:
		for (int i = 0; i < 4; i++)
			if (!get_mpint(&r, NULL))
				return -1;
		break;
	case K_CERT:
		r.n = 0; /* not checked further: see the table */
		break;
	}
	if (r.n != 0) {
		*why = "trailing bytes after the key";
		return -1;
	}
	return t;
}

/* The bytes after the blob's type string: with the type, what sshkey_equal
 * compares (so an RSA blob naming "rsa-sha2-256" equals one naming
 * "ssh-rsa", as in OpenSSH). */
static const unsigned char *key_body(const remote_hostkey *k, size_t *n)
{
	size_t l = k->len >= 4 ? ((size_t)k->blob[0] << 24 | (size_t)k->blob[1] << 16 |
				  (size_t)k->blob[2] << 8 | k->blob[3])
			       : 0;
	if (k->len < 4 || l > k->len - 4) {
		*n = 0;
		return NULL;
	}
	*n = k->len - 4 - l;
	return k->blob + 4 + l;
}

bool remote_hostkey_equal(const remote_hostkey *a, const remote_hostkey *b)
{
	size_t na, nb;
	if (a->type < 0 || a->type != b->type)
		return false;
	const unsigned char *ba = key_body(a, &na), *bb = key_body(b, &nb);
	return ba && bb && na == nb && memcmp(ba, bb, na) == 0;
}

/* ---- lines ---- */

/* check_markers: at most one of @cert-authority, @revoked, ended by the
 * first space (or, when the line has none, the first tab). */
static int check_markers(char **cpp)
{
	char marker[32], *sp, *cp = *cpp;
	int ret = REMOTE_HOSTFILE_MARK_NONE;
	while (*cp == '@') {
		if (ret != REMOTE_HOSTFILE_MARK_NONE)
			return -1;
		if ((sp = strchr(cp, ' ')) == NULL && (sp = strchr(cp, '\t')) == NULL)
			return -1;
		if (sp <= cp + 1 || sp >= cp + sizeof(marker))
			return -1;
		memcpy(marker, cp, (size_t)(sp - cp));
		marker[sp - cp] = '\0';
		if (strcmp(marker, "@cert-authority") == 0)
			ret = REMOTE_HOSTFILE_MARK_CA;
		else if (strcmp(marker, "@revoked") == 0)
			ret = REMOTE_HOSTFILE_MARK_REVOKED;
		else
			return -1;
		for (cp = sp; *cp == ' ' || *cp == '\t'; cp++)
			;
	}
	*cpp = cp;
	return ret;
}

/* sshkey_read: "type base64 [comment]"; the blob's type must be the line's
 * (ECDSA curve included). */
static const char *read_key(char *cp, remote_hostkey *k)
{
	size_t space = strcspn(cp, " \t");
	if (space == strlen(cp))
		return "no key after the key type";
	int t = type_from_name(cp, space);
	if (t < 0)
		return "unknown key type";
	for (cp += space; *cp == ' ' || *cp == '\t'; cp++)
		;
	if (*cp == '\0')
		return "no key after the key type";
	space = strcspn(cp, " \t");
	char *b64 = xstrndup(cp, space);
	unsigned char *blob = xmalloc(space + 1);
	int n = b64_decode(b64, blob, space + 1);
	free(b64);
	const char *why = "the key is not valid base64";
	int bt = n > 0 ? remote_hostkey_parse_blob(blob, (size_t)n, &why) : -1;
	if (bt < 0 || bt != t) {
		free(blob);
		return bt < 0 ? why : "the key's type does not match the line's";
	}
	k->type = bt;
	k->blob = blob;
	k->len = (size_t)n;
	return NULL;
}

void remote_hostfile_parse_line(char *line, remote_hostfile_line *out)
{
	char *cp = line, *cp2;
	memset(out, 0, sizeof(*out));
	out->key.type = -1;
	for (; *cp == ' ' || *cp == '\t'; cp++)
		;
	if (!*cp || *cp == '#') {
		out->kind = REMOTE_HOSTFILE_LINE_SKIP;
		return;
	}
	out->kind = REMOTE_HOSTFILE_LINE_INVALID;
	int m = check_markers(&cp);
	if (m < 0) {
		out->why = "invalid marker";
		return;
	}
	out->marker = (remote_hostfile_marker)m;
	for (cp2 = cp; *cp2 && *cp2 != ' ' && *cp2 != '\t'; cp2++)
		;
	out->names = cp;
	if (*cp2)
		*cp2++ = '\0';
	for (; *cp2 == ' ' || *cp2 == '\t'; cp2++)
		;
	if (*cp2 == '\0' || *cp2 == '#') {
		out->why = "no key type after the host names";
		return;
	}
	if ((out->why = read_key(cp2, &out->key)) != NULL)
		return;
	out->kind = REMOTE_HOSTFILE_LINE_KEY;
}

char *remote_hostfile_format_entry(const char *name, const remote_hostkey *k)
{
	char *lname = xstrdup(name);
	for (char *p = lname; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	char *b64 = b64_encode(k->blob, k->len);
	char *out = xasprintf("%s %s %s\n", lname, remote_hostkey_name(k->type), b64);
	free(b64);
	free(lname);
	return out;
}

/* ---- files and the verdict ---- */

void remote_hostfile_load(remote_hostfile_set *s, const char *host, const char *path,
			  remote_hostfile_warn_fn warn, void *ctx)
{
	/* Non-blocking: a FIFO named as a known_hosts file (ssh would wait on
	 * it for ever) is skipped with a warning; /dev/null still reads empty. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	FILE *f = NULL;
	char *line = NULL;
	size_t cap = 0;
	int lineno = 0;
	if (fd < 0)
		return;
	if (fstat(fd, &st) != 0 || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) ||
	    S_ISDIR(st.st_mode)) {
		if (warn && !S_ISDIR(st.st_mode))
			warn(ctx, path, 0, "not a regular file");
		close(fd);
		return;
	}
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return;
	}
	while (getline(&line, &cap, f) >= 0) {
		remote_hostfile_line l;
		lineno++;
		line[strcspn(line, "\n")] = '\0';
		remote_hostfile_parse_line(line, &l);
		if (l.kind == REMOTE_HOSTFILE_LINE_SKIP)
			continue;
		int m = l.names ? remote_hostfile_match_names(host, l.names) : 0;
		if (m < 0 && l.kind == REMOTE_HOSTFILE_LINE_KEY) {
			l.kind = REMOTE_HOSTFILE_LINE_INVALID;
			l.why = "malformed hashed host name";
		}
		if (l.kind == REMOTE_HOSTFILE_LINE_INVALID) {
			if (warn)
				warn(ctx, path, lineno, l.why);
		} else if (m == 1) {
			s->e = xgrow(s->e, &s->cap, s->n + 1, sizeof(*s->e));
			s->e[s->n++] = (remote_hostfile_entry){path, lineno, l.marker, l.key};
			l.key.blob = NULL;
		}
		free(l.key.blob);
	}
	free(line);
	fclose(f);
}

void remote_hostfile_set_release(remote_hostfile_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->e[i].key.blob);
	free(s->e);
	s->e = NULL;
	s->n = s->cap = 0;
}

static const remote_hostfile_entry *revoked_entry(const remote_hostfile_set *s,
						  const remote_hostkey *k)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->e[i].marker == REMOTE_HOSTFILE_MARK_REVOKED &&
		    remote_hostkey_equal(k, &s->e[i].key))
			return &s->e[i];
	return NULL;
}

remote_hostkey_status remote_hostfile_check(const remote_hostfile_set *s, const remote_hostkey *k,
					    const remote_hostfile_entry **found)
{
	remote_hostkey_status st = REMOTE_HOSTKEY_NEW;
	const remote_hostfile_entry *f = NULL, *rv;
	for (size_t i = 0; i < s->n; i++) {
		if (s->e[i].marker != REMOTE_HOSTFILE_MARK_NONE)
			continue;
		f = &s->e[i];
		if (remote_hostkey_equal(k, &s->e[i].key)) {
			st = REMOTE_HOSTKEY_OK;
			break;
		}
		st = REMOTE_HOSTKEY_CHANGED;
	}
	if ((rv = revoked_entry(s, k)) != NULL) {
		st = REMOTE_HOSTKEY_REVOKED;
		f = rv;
	}
	if (found)
		*found = f;
	return st;
}

const remote_hostfile_entry *remote_hostfile_lookup_type(const remote_hostfile_set *s, int type)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->e[i].marker != REMOTE_HOSTFILE_MARK_NONE || s->e[i].key.type != type)
			continue;
		return revoked_entry(s, &s->e[i].key) ? NULL : &s->e[i];
	}
	return NULL;
}

const remote_hostfile_entry *remote_hostfile_find_marker(const remote_hostfile_set *s,
							 remote_hostfile_marker marker)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->e[i].marker == marker)
			return &s->e[i];
	return NULL;
}

const char *remote_hostkey_verdict(const char *msg)
{
	if (strstr(msg, REMOTE_HOSTKEY_REVOKED_TEXT))
		return "REVOKED";
	if (strstr(msg, REMOTE_HOSTKEY_CHANGED_TEXT))
		return "CHANGED";
	if (strstr(msg, REMOTE_HOSTKEY_UNKNOWN_TEXT))
		return "UNKNOWN";
	return "REFUSED";
}

const char *remote_hostkey_detail_name(int detail)
{
	switch (detail) {
	case BG_DETAIL_HOSTKEY_REVOKED: return "REVOKED";
	case BG_DETAIL_HOSTKEY_CHANGED: return "CHANGED";
	case BG_DETAIL_HOSTKEY_UNKNOWN: return "UNKNOWN";
	}
	return "REFUSED";
}
