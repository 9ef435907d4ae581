/*
 * Bytes as lowercase hex text (hex.c): a SHA-256 digest's (file hashes,
 * image and snapshot digests after their "sha256:") and fresh
 * randomness's (the epoch, sandbox, snapshot and background exec ids,
 * credential placeholders, temporary names).
 */
#ifndef VSB_HEX_H
#define VSB_HEX_H

#include <stddef.h>

#define VSB_SHA256_HEX_LEN  64

/* The 2 * n hex digits of p[0..n) into out, NUL-terminated. */
void vsb_hex(char *out, const unsigned char *p, size_t n);

/* The 64 hex digits of a SHA-256 digest md of mdlen bytes (what
 * EVP_Digest*() gave); -1 if mdlen is not 32. */
int vsb_sha256_md_hex(const unsigned char *md, unsigned int mdlen,
    char out[VSB_SHA256_HEX_LEN + 1]);

/* 2 * n hex digits of fresh randomness (getrandom(2)) into out,
 * NUL-terminated; n at most 32.  -1 with errno set (EINVAL: n too
 * large; getrandom's). */
int vsb_random_hex(char *out, size_t n);

#endif
