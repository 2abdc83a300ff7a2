/* The one hashing helper: SHA-256 through OpenSSL's EVP (already linked for
 * libssh2), as lowercase hex. */
#ifndef BG_SHA256_H
#define BG_SHA256_H

#include <stddef.h>

#include "base/error.h"

#define BG_SHA256_HEX_LEN 64

/* Hex digest of a buffer into out[65]. */
void bg_sha256_hex(const void *data, size_t n, char out[BG_SHA256_HEX_LEN + 1]);
/* Hex digest of a file's contents into out[65]; BG_EIO naming the path on failure. */
int bg_sha256_file(const char *path, char out[BG_SHA256_HEX_LEN + 1], bg_err *err);

/* A digest fed in pieces (a file as it arrives): init, update, final.
 * bg_sha256_final frees the state; release does so without a digest. */
typedef struct bg_sha256 bg_sha256;
bg_sha256 *bg_sha256_init(void);
void bg_sha256_update(bg_sha256 *h, const void *data, size_t n);
void bg_sha256_final(bg_sha256 *h, char out[BG_SHA256_HEX_LEN + 1]);
void bg_sha256_release(bg_sha256 *h);

#endif
