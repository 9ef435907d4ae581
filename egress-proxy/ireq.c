/*
 * Intercepted request heads and chunked bodies (eg_ireq.h).  The head is
 * first held to eg_http_parse()'s strict rules, then to the ones an
 * intercepted connection adds.
 */
#include <string.h>
#include <strings.h>

#include "eg_allow.h"
#include "eg_ireq.h"

#define EG_CHUNK_LINE_MAX   1024    /* a chunk extension or trailer line */
#define EG_CHUNK_TRAILERS   64

enum {
    EG_CK_SIZE = 0, EG_CK_EXT, EG_CK_SIZE_LF, EG_CK_DATA, EG_CK_DATA_CR,
    EG_CK_DATA_LF, EG_CK_TRAILER_START, EG_CK_TRAILER, EG_CK_TRAILER_LF,
    EG_CK_END_LF, EG_CK_DONE
};


/* Calls fn for each header line: [p, eol) and the name's length. */
typedef int (*eg_ireq_line_pt)(const char *p, const char *eol, size_t nl,
    void *arg);

static int
eg_ireq_lines(const char *buf, size_t hl, eg_ireq_line_pt fn, void *arg)
{
    const char  *p, *end = buf + hl - 2, *eol, *colon;
    int          rc;

    p = memchr(buf, '\n', hl);
    if (p == NULL) {
        return 0;
    }
    for (p++; p < end; p = eol + 2) {
        eol = memchr(p, '\r', (size_t) (end - p));
        if (eol == NULL) {
            return 0;
        }
        colon = memchr(p, ':', (size_t) (eol - p));
        if (colon == NULL) {
            continue;
        }
        rc = fn(p, eol, (size_t) (colon - p), arg);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}


static eg_str_t
eg_ireq_value(const char *p, const char *eol, size_t nl)
{
    eg_str_t  v;

    v.p = p + nl + 1;
    v.len = (size_t) (eol - v.p);
    while (v.len > 0 && (*v.p == ' ' || *v.p == '\t')) {
        v.p++;
        v.len--;
    }
    while (v.len > 0 && (v.p[v.len - 1] == ' ' || v.p[v.len - 1] == '\t')) {
        v.len--;
    }
    return v;
}


typedef struct {
    const char  *name;
    eg_str_t     value;
    int          count;
} eg_ireq_find_t;


static int
eg_ireq_find_line(const char *p, const char *eol, size_t nl, void *arg)
{
    eg_ireq_find_t  *f = arg;

    if (strlen(f->name) == nl && strncasecmp(p, f->name, nl) == 0) {
        f->value = eg_ireq_value(p, eol, nl);
        f->count++;
    }
    return 0;
}


int
eg_ireq_has_header(const char *buf, size_t hl, const char *name)
{
    eg_ireq_find_t  f;

    memset(&f, 0, sizeof(f));
    f.name = name;
    eg_ireq_lines(buf, hl, eg_ireq_find_line, &f);
    return f.count > 0;
}


int
eg_ireq_parse(const char *buf, size_t hl, const char *host, eg_ireq_t *r,
    const char **why)
{
    eg_http_req_t   req;
    eg_ireq_find_t  f;
    eg_host_t       h;
    uint16_t        port;

    memset(r, 0, sizeof(*r));
    if (eg_http_parse(buf, hl, &req, why) != 0) {
        return -1;
    }
    if (req.form != EG_HTTP_FORM_ORIGIN) {
        *why = "an intercepted request has an origin-form target (\"/path\")";
        return -1;
    }
    if (req.minor != 1) {
        *why = "HTTP/1.1 only on a connection the proxy adds credentials to";
        return -1;
    }
    if (req.method.len == 7 && memcmp(req.method.p, "CONNECT", 7) == 0) {
        *why = "CONNECT inside an intercepted connection";
        return -1;
    }
    if (eg_hostport_parse(req.host.p, req.host.len, 443, &h, &port, why)
        != 0)
    {
        return -1;
    }
    if (strcmp(h.host, host) != 0 || port != 443) {
        *why = "the Host header names another host than the connection's "
               "(CONNECT and SNI)";
        return -1;
    }
    if (eg_ireq_has_header(buf, hl, "Upgrade")) {
        *why = "Upgrade is not supported on a connection the proxy adds "
               "credentials to (HTTP/1.1 only)";
        return -1;
    }

    if (req.has_te) {
        memset(&f, 0, sizeof(f));
        f.name = "Transfer-Encoding";
        eg_ireq_lines(buf, hl, eg_ireq_find_line, &f);
        if (f.count != 1 || f.value.len != 7
            || strncasecmp(f.value.p, "chunked", 7) != 0)
        {
            *why = "Transfer-Encoding other than a single \"chunked\"";
            return -1;
        }
        r->chunked = 1;
    } else if (req.has_cl) {
        r->content_length = req.content_length;
    }
    r->target = req.target;
    return 0;
}


size_t
eg_ireq_rewrite(const char *buf, size_t hl, const char *const *drop,
    size_t ndrop, const eg_str_t *add, size_t nadd, char *out, size_t cap)
{
    const char  *p, *end = buf + hl - 2, *eol, *colon;
    size_t       off, n, i;
    int          dropped;

    p = memchr(buf, '\n', hl);
    if (p == NULL || hl < 4) {
        return 0;
    }
    p++;
    off = (size_t) (p - buf);
    if (off > cap) {
        return 0;
    }
    memcpy(out, buf, off);

    for (; p < end; p = eol + 2) {
        eol = memchr(p, '\r', (size_t) (end - p));
        if (eol == NULL) {
            return 0;
        }
        colon = memchr(p, ':', (size_t) (eol - p));
        dropped = 0;
        for (i = 0; colon != NULL && i < ndrop; i++) {
            n = strlen(drop[i]);
            if ((size_t) (colon - p) == n && strncasecmp(p, drop[i], n) == 0) {
                dropped = 1;
                break;
            }
        }
        if (dropped) {
            continue;
        }
        n = (size_t) (eol + 2 - p);
        if (off + n > cap) {
            return 0;
        }
        memcpy(out + off, p, n);
        off += n;
    }

    for (i = 0; i < nadd; i++) {
        if (off + add[i].len > cap) {
            return 0;
        }
        memcpy(out + off, add[i].p, add[i].len);
        off += add[i].len;
    }
    if (off + 2 > cap) {
        return 0;
    }
    memcpy(out + off, "\r\n", 2);
    return off + 2;
}


int
eg_ireq_find(const char *buf, size_t len, const char *const *needles,
    size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (needles[i] != NULL
            && memmem(buf, len, needles[i], strlen(needles[i])) != NULL)
        {
            return (int) i;
        }
    }
    return -1;
}


/* ---- chunked bodies -------------------------------------------------- */


void
eg_chunk_init(eg_chunk_t *st)
{
    memset(st, 0, sizeof(*st));
    st->state = EG_CK_SIZE;
}


static int
eg_hex(unsigned char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}


ssize_t
eg_chunk_feed(eg_chunk_t *st, const unsigned char *p, size_t len, int *done,
    const char **why)
{
    size_t  i = 0, take;
    int     d;

    *done = 0;
    while (i < len) {
        unsigned char  c = p[i];

        switch (st->state) {
        case EG_CK_SIZE:
            d = eg_hex(c);
            if (d >= 0) {
                if (++st->digits > 15) {
                    *why = "chunk size longer than 15 hex digits";
                    return -1;
                }
                st->left = st->left * 16 + (uint64_t) d;
            } else if (st->digits == 0) {
                *why = "chunk size is not a hex number";
                return -1;
            } else if (c == ';') {
                st->state = EG_CK_EXT;
                st->line = 0;
            } else if (c == '\r') {
                st->state = EG_CK_SIZE_LF;
            } else {
                *why = "unexpected byte after a chunk size";
                return -1;
            }
            i++;
            break;

        case EG_CK_EXT:
            if (c == '\r') {
                st->state = EG_CK_SIZE_LF;
            } else if ((c < 0x20 && c != '\t') || c == 0x7f) {
                *why = "control byte in a chunk extension";
                return -1;
            } else if (++st->line > EG_CHUNK_LINE_MAX) {
                *why = "chunk extension too long";
                return -1;
            }
            i++;
            break;

        case EG_CK_SIZE_LF:
            if (c != '\n') {
                *why = "chunk size line not ended by CRLF";
                return -1;
            }
            i++;
            st->digits = 0;
            st->state = st->left == 0 ? EG_CK_TRAILER_START : EG_CK_DATA;
            break;

        case EG_CK_DATA:
            take = len - i;
            if (take > st->left) {
                take = (size_t) st->left;
            }
            st->left -= take;
            i += take;
            if (st->left == 0) {
                st->state = EG_CK_DATA_CR;
            }
            break;

        case EG_CK_DATA_CR:
            if (c != '\r') {
                *why = "chunk data not followed by CRLF";
                return -1;
            }
            i++;
            st->state = EG_CK_DATA_LF;
            break;

        case EG_CK_DATA_LF:
            if (c != '\n') {
                *why = "chunk data not followed by CRLF";
                return -1;
            }
            i++;
            st->state = EG_CK_SIZE;
            break;

        case EG_CK_TRAILER_START:
            if (c == '\r') {
                st->state = EG_CK_END_LF;
            } else {
                if (++st->trailers > EG_CHUNK_TRAILERS) {
                    *why = "too many trailer lines";
                    return -1;
                }
                st->line = 0;
                st->state = EG_CK_TRAILER;
                continue;       /* the byte is the line's first */
            }
            i++;
            break;

        case EG_CK_TRAILER:
            if (c == '\r') {
                st->state = EG_CK_TRAILER_LF;
            } else if ((c < 0x20 && c != '\t') || c == 0x7f) {
                *why = "control byte in a trailer";
                return -1;
            } else if (++st->line > EG_CHUNK_LINE_MAX) {
                *why = "trailer line too long";
                return -1;
            }
            i++;
            break;

        case EG_CK_TRAILER_LF:
            if (c != '\n') {
                *why = "trailer line not ended by CRLF";
                return -1;
            }
            i++;
            st->state = EG_CK_TRAILER_START;
            break;

        case EG_CK_END_LF:
            if (c != '\n') {
                *why = "chunked body not ended by CRLF";
                return -1;
            }
            i++;
            st->state = EG_CK_DONE;
            *done = 1;
            return (ssize_t) i;

        default:
            *done = 1;
            return (ssize_t) i;
        }
    }
    return (ssize_t) i;
}
