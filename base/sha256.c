#include "base/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/xmalloc.h"

static void to_hex(const unsigned char *md, char out[BG_SHA256_HEX_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < 32; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[BG_SHA256_HEX_LEN] = '\0';
}

void bg_sha256_hex(const void *data, size_t n, char out[BG_SHA256_HEX_LEN + 1])
{
	unsigned char md[32];
	unsigned int len = 0;
	EVP_Digest(data, n, md, &len, EVP_sha256(), NULL);
	to_hex(md, out);
}

int bg_sha256_file(const char *path, char out[BG_SHA256_HEX_LEN + 1], bg_err *err)
{
	unsigned char md[32], buf[1 << 16];
	unsigned int len = 0;
	int rc = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return bg_fail(err, BG_EIO, "%s: %s", path, strerror(errno));
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = bg_fail(err, BG_EIO, "%s: read: %s", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		EVP_DigestUpdate(ctx, buf, (size_t)n);
	}
	EVP_DigestFinal_ex(ctx, md, &len);
	to_hex(md, out);
out:
	EVP_MD_CTX_free(ctx);
	close(fd);
	return rc;
}

struct bg_sha256 {
	EVP_MD_CTX *ctx;
};

bg_sha256 *bg_sha256_init(void)
{
	bg_sha256 *h = xcalloc(1, sizeof(*h));
	h->ctx = EVP_MD_CTX_new();
	if (!h->ctx)
		abort();
	EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL);
	return h;
}

void bg_sha256_update(bg_sha256 *h, const void *data, size_t n)
{
	EVP_DigestUpdate(h->ctx, data, n);
}

void bg_sha256_final(bg_sha256 *h, char out[BG_SHA256_HEX_LEN + 1])
{
	unsigned char md[32];
	unsigned int len = 0;
	EVP_DigestFinal_ex(h->ctx, md, &len);
	to_hex(md, out);
	bg_sha256_release(h);
}

void bg_sha256_release(bg_sha256 *h)
{
	if (!h)
		return;
	EVP_MD_CTX_free(h->ctx);
	free(h);
}
