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


/* Calls fn for each header line of a complete head: [p, eol) without its
 * CRLF, and nl the length of its name (0 for a line with no name before a
 * colon: no header name is empty, so it matches none).  The one walk over
 * header lines: finding a header and rewriting the head both use it.
 * 0 when every line was walked; -1 when the head is too short or a line is
 * not ended by CRLF before the blank line; else what fn returned. */
typedef int (*eg_ireq_line_pt)(const char *p, const char *eol, size_t nl,
    void *arg);

static int
eg_ireq_lines(const char *buf, size_t hl, eg_ireq_line_pt fn, void *arg)
{
    const char  *p, *end, *eol, *colon;
    int          rc;

    if (hl < 4) {
        return -1;
    }
    end = buf + hl - 2;
    p = memchr(buf, '\n', hl);
    if (p == NULL) {
        return -1;
    }
    for (p++; p < end; p = eol + 2) {
        eol = memchr(p, '\r', (size_t) (end - p));
        if (eol == NULL) {
            return -1;
        }
        colon = memchr(p, ':', (size_t) (eol - p));
        rc = fn(p, eol, colon != NULL ? (size_t) (colon - p) : 0, arg);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}


/* Is the line's name (nl bytes at p) name, ignoring case? */
static int
eg_ireq_named(const char *p, size_t nl, const char *name)
{
    return nl != 0 && strlen(name) == nl && strncasecmp(p, name, nl) == 0;
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

    if (eg_ireq_named(p, nl, f->name)) {
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
    (void) eg_ireq_lines(buf, hl, eg_ireq_find_line, &f);
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
        (void) eg_ireq_lines(buf, hl, eg_ireq_find_line, &f);
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


typedef struct {
    const char *const  *drop;
    size_t              ndrop;
    char               *out;
    size_t              off;
    size_t              cap;
} eg_ireq_copy_t;


/* Copies a header line with its CRLF unless it is one to drop; -1 when
 * out is full. */
static int
eg_ireq_copy_line(const char *p, const char *eol, size_t nl, void *arg)
{
    eg_ireq_copy_t  *c = arg;
    size_t           i, n;

    for (i = 0; i < c->ndrop; i++) {
        if (eg_ireq_named(p, nl, c->drop[i])) {
            return 0;
        }
    }
    n = (size_t) (eol + 2 - p);
    if (c->off + n > c->cap) {
        return -1;
    }
    memcpy(c->out + c->off, p, n);
    c->off += n;
    return 0;
}


size_t
eg_ireq_rewrite(const char *buf, size_t hl, const char *const *drop,
    size_t ndrop, const eg_str_t *add, size_t nadd, char *out, size_t cap)
{
    const char      *p;
    eg_ireq_copy_t   c;
    size_t           i;

    p = memchr(buf, '\n', hl);
    if (p == NULL || hl < 4) {
        return 0;
    }
    c.drop = drop;
    c.ndrop = ndrop;
    c.out = out;
    c.off = (size_t) (p + 1 - buf);     /* the request line */
    c.cap = cap;
    if (c.off > cap) {
        return 0;
    }
    memcpy(out, buf, c.off);
    if (eg_ireq_lines(buf, hl, eg_ireq_copy_line, &c) != 0) {
        return 0;
    }

    for (i = 0; i < nadd; i++) {
        if (c.off + add[i].len > cap) {
            return 0;
        }
        memcpy(out + c.off, add[i].p, add[i].len);
        c.off += add[i].len;
    }
    if (c.off + 2 > cap) {
        return 0;
    }
    memcpy(out + c.off, "\r\n", 2);
    return c.off + 2;
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


/* A byte of a chunk extension or a trailer line: CR ends the line (the
 * state becomes lf); a control byte (ctl) or a line longer than
 * EG_CHUNK_LINE_MAX (too_long) is refused. */
static int
eg_chunk_line_byte(eg_chunk_t *st, unsigned char c, int lf, const char *ctl,
    const char *too_long, const char **why)
{
    if (c == '\r') {
        st->state = lf;
    } else if ((c < 0x20 && c != '\t') || c == 0x7f) {
        *why = ctl;
        return -1;
    } else if (++st->line > EG_CHUNK_LINE_MAX) {
        *why = too_long;
        return -1;
    }
    return 0;
}


/* A byte that must be want (a line's CR or LF): the state becomes next,
 * or bad is the error. */
static int
eg_chunk_expect(eg_chunk_t *st, unsigned char c, unsigned char want,
    int next, const char *bad, const char **why)
{
    if (c != want) {
        *why = bad;
        return -1;
    }
    st->state = next;
    return 0;
}


ssize_t
eg_chunk_feed(eg_chunk_t *st, const unsigned char *p, size_t len, int *done,
    const char **why)
{
    size_t  i = 0, take;
    int     d, rc;

    *done = 0;
    while (i < len) {
        unsigned char  c = p[i];

        rc = 0;
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
            break;

        case EG_CK_EXT:
            rc = eg_chunk_line_byte(st, c, EG_CK_SIZE_LF,
                                    "control byte in a chunk extension",
                                    "chunk extension too long", why);
            break;

        case EG_CK_SIZE_LF:
            rc = eg_chunk_expect(st, c, '\n',
                                 st->left == 0 ? EG_CK_TRAILER_START
                                               : EG_CK_DATA,
                                 "chunk size line not ended by CRLF", why);
            st->digits = 0;
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
            continue;           /* i moved by what was taken */

        case EG_CK_DATA_CR:
            rc = eg_chunk_expect(st, c, '\r', EG_CK_DATA_LF,
                                 "chunk data not followed by CRLF", why);
            break;

        case EG_CK_DATA_LF:
            rc = eg_chunk_expect(st, c, '\n', EG_CK_SIZE,
                                 "chunk data not followed by CRLF", why);
            break;

        case EG_CK_TRAILER_START:
            if (c != '\r') {
                if (++st->trailers > EG_CHUNK_TRAILERS) {
                    *why = "too many trailer lines";
                    return -1;
                }
                st->line = 0;
                st->state = EG_CK_TRAILER;
                continue;       /* the byte is the line's first */
            }
            st->state = EG_CK_END_LF;
            break;

        case EG_CK_TRAILER:
            rc = eg_chunk_line_byte(st, c, EG_CK_TRAILER_LF,
                                    "control byte in a trailer",
                                    "trailer line too long", why);
            break;

        case EG_CK_TRAILER_LF:
            rc = eg_chunk_expect(st, c, '\n', EG_CK_TRAILER_START,
                                 "trailer line not ended by CRLF", why);
            break;

        case EG_CK_END_LF:
            if (eg_chunk_expect(st, c, '\n', EG_CK_DONE,
                                "chunked body not ended by CRLF", why) != 0)
            {
                return -1;
            }
            *done = 1;
            return (ssize_t) (i + 1);

        default:
            *done = 1;
            return (ssize_t) i;
        }
        if (rc != 0) {
            return -1;
        }
        i++;
    }
    return (ssize_t) i;
}
