/*
 * ClientHello parser.  Records are unwrapped into scratch first (the
 * handshake message may be fragmented across records), then the
 * ClientHello is walked with explicit bounds at every length field.
 */
#include <stdint.h>
#include <string.h>

#include "eg_sni.h"

#define TLS_HANDSHAKE        22
#define TLS_CLIENT_HELLO     1
#define TLS_EXT_SERVER_NAME  0
#define TLS_SNI_HOST_NAME    0

typedef struct {
    const unsigned char  *p;
    size_t                len;
} eg_rd_t;


static int
eg_rd_u8(eg_rd_t *r, unsigned *v)
{
    if (r->len < 1) {
        return -1;
    }
    *v = r->p[0];
    r->p++;
    r->len--;
    return 0;
}


static int
eg_rd_u16(eg_rd_t *r, unsigned *v)
{
    if (r->len < 2) {
        return -1;
    }
    *v = ((unsigned) r->p[0] << 8) | r->p[1];
    r->p += 2;
    r->len -= 2;
    return 0;
}


static int
eg_rd_skip(eg_rd_t *r, size_t n)
{
    if (r->len < n) {
        return -1;
    }
    r->p += n;
    r->len -= n;
    return 0;
}


/* A sub-reader of n bytes (a length-prefixed vector). */
static int
eg_rd_sub(eg_rd_t *r, size_t n, eg_rd_t *sub)
{
    if (r->len < n) {
        return -1;
    }
    sub->p = r->p;
    sub->len = n;
    r->p += n;
    r->len -= n;
    return 0;
}


static eg_sni_rc_t
eg_sni_hello(const unsigned char *m, size_t len, const char **name,
    size_t *name_len, const char **why)
{
    eg_rd_t   r = { m, len }, v, ext, list;
    unsigned  n, type, elen, nt, nl;

    /* legacy_version, random */
    if (eg_rd_skip(&r, 2 + 32) != 0
        || eg_rd_u8(&r, &n) != 0 || n > 32 || eg_rd_skip(&r, n) != 0
        || eg_rd_u16(&r, &n) != 0 || n < 2 || (n & 1) || eg_rd_skip(&r, n) != 0
        || eg_rd_u8(&r, &n) != 0 || n < 1 || eg_rd_skip(&r, n) != 0)
    {
        *why = "malformed ClientHello";
        return EG_SNI_ERROR;
    }

    if (r.len == 0) {
        return EG_SNI_NONE;          /* no extensions at all */
    }

    if (eg_rd_u16(&r, &n) != 0 || eg_rd_sub(&r, n, &v) != 0 || r.len != 0) {
        *why = "malformed ClientHello extensions";
        return EG_SNI_ERROR;
    }

    while (v.len > 0) {
        if (eg_rd_u16(&v, &type) != 0 || eg_rd_u16(&v, &elen) != 0
            || eg_rd_sub(&v, elen, &ext) != 0)
        {
            *why = "malformed ClientHello extension";
            return EG_SNI_ERROR;
        }

        if (type != TLS_EXT_SERVER_NAME) {
            continue;
        }

        if (eg_rd_u16(&ext, &n) != 0 || eg_rd_sub(&ext, n, &list) != 0
            || ext.len != 0 || list.len == 0)
        {
            *why = "malformed server_name extension";
            return EG_SNI_ERROR;
        }

        /* RFC 6066: at most one name of each type; we want host_name. */
        while (list.len > 0) {
            eg_rd_t  nm;

            if (eg_rd_u8(&list, &nt) != 0 || eg_rd_u16(&list, &nl) != 0
                || eg_rd_sub(&list, nl, &nm) != 0)
            {
                *why = "malformed server_name entry";
                return EG_SNI_ERROR;
            }
            if (nt == TLS_SNI_HOST_NAME) {
                if (nl == 0 || memchr(nm.p, '\0', nl) != NULL) {
                    *why = "empty or NUL-bearing server_name";
                    return EG_SNI_ERROR;
                }
                *name = (const char *) nm.p;
                *name_len = nl;
                return EG_SNI_FOUND;
            }
        }

        return EG_SNI_NONE;
    }

    return EG_SNI_NONE;
}


eg_sni_rc_t
eg_sni_parse(const unsigned char *data, size_t len, unsigned char *scratch,
    const char **name, size_t *name_len, const char **why)
{
    size_t    off = 0, have = 0, rlen, want = 0;
    unsigned  hs_len;

    *why = NULL;

    for ( ;; ) {
        if (len - off < 5) {
            if (off < len && data[off] != TLS_HANDSHAKE) {
                *why = "not a TLS handshake record";
                return EG_SNI_ERROR;
            }
            return EG_SNI_NEED_MORE;
        }

        if (data[off] != TLS_HANDSHAKE || data[off + 1] != 3) {
            *why = "not a TLS handshake record";
            return EG_SNI_ERROR;
        }

        rlen = ((size_t) data[off + 3] << 8) | data[off + 4];
        if (rlen == 0 || rlen > 16384) {
            *why = "bad TLS record length";
            return EG_SNI_ERROR;
        }

        if (len - off - 5 < rlen) {
            return EG_SNI_NEED_MORE;
        }

        if (have + rlen > EG_SNI_MAX_HELLO) {
            *why = "ClientHello larger than the proxy accepts";
            return EG_SNI_ERROR;
        }

        memcpy(scratch + have, data + off + 5, rlen);
        have += rlen;
        off += 5 + rlen;

        if (want == 0 && have >= 4) {
            if (scratch[0] != TLS_CLIENT_HELLO) {
                *why = "first handshake message is not a ClientHello";
                return EG_SNI_ERROR;
            }
            hs_len = ((unsigned) scratch[1] << 16)
                     | ((unsigned) scratch[2] << 8) | scratch[3];
            if (hs_len == 0 || hs_len + 4 > EG_SNI_MAX_HELLO) {
                *why = "ClientHello larger than the proxy accepts";
                return EG_SNI_ERROR;
            }
            want = hs_len + 4;
        }

        if (want != 0 && have >= want) {
            return eg_sni_hello(scratch + 4, want - 4, name, name_len, why);
        }
    }
}
