/*
 * Bytes as lowercase hex text (vsb_hex.h): one encoder for the digests
 * and the random names the helper writes.
 */
#include <errno.h>
#include <sys/random.h>
#include <sys/types.h>

#include "vsb_hex.h"


void
vsb_hex(char *out, const unsigned char *p, size_t n)
{
    static const char  digits[] = "0123456789abcdef";
    size_t             i;

    for (i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 0xf];
    }
    out[2 * n] = '\0';
}


int
vsb_sha256_md_hex(const unsigned char *md, unsigned int mdlen,
    char out[VSB_SHA256_HEX_LEN + 1])
{
    if (mdlen != 32) {
        return -1;
    }

    vsb_hex(out, md, 32);
    return 0;
}


int
vsb_random_hex(char *out, size_t n)
{
    unsigned char  rnd[32];
    size_t         got;
    ssize_t        r;

    if (n > sizeof(rnd)) {
        errno = EINVAL;
        return -1;
    }

    for (got = 0; got < n; got += (size_t) r) {
        r = getrandom(rnd + got, n - got, 0);
        if (r == -1) {
            if (errno == EINTR) {
                r = 0;
                continue;
            }
            return -1;
        }
    }

    vsb_hex(out, rnd, n);
    return 0;
}
