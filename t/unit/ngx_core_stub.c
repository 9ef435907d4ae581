/*
 * A stand-in for the few nginx core calls the module's pure files make
 * (_hash.c, _redact.c, _summary.c, _output.c, _policy*.c, and
 * _request.c for the fuzz target), so their unit tests and fuzz targets
 * run without nginx.  Debian's nginx-dev ships nginx's
 * headers but not its sources, so the core cannot be linked in; these
 * are written here from the headers' contracts, not copied.
 *
 * Each pool allocation is its own malloc(), so ASan bounds-checks every
 * one and LeakSanitizer sees what a destroyed pool would have leaked.
 * The formatter knows the conversions the module uses and aborts on any
 * other, so a test never passes on a misformatted string.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include <stdarg.h>

#include "ngx_core_stub.h"


static ngx_log_t       ngx_stub_log;
static ngx_open_file_t ngx_stub_file;
static ngx_cycle_t     ngx_stub_cycle;
static char            ngx_stub_last[2048];

volatile ngx_cycle_t  *ngx_cycle = &ngx_stub_cycle;


ngx_log_t *
ngx_stub_init(void)
{
    ngx_stub_file.fd = -1;                 /* nothing writes through it */
    ngx_stub_log.file = &ngx_stub_file;
    ngx_stub_log.log_level = NGX_LOG_DEBUG;
    ngx_stub_cycle.log = &ngx_stub_log;

    return &ngx_stub_log;
}


const char *
ngx_stub_last_error(void)
{
    return ngx_stub_last;
}


void
ngx_stub_clear_error(void)
{
    ngx_stub_last[0] = '\0';
}


void
ngx_stub_conf(ngx_conf_t *cf, ngx_pool_t *pool)
{
    ngx_memzero(cf, sizeof(ngx_conf_t));

    cf->pool = pool;
    cf->temp_pool = pool;
    cf->log = ngx_stub_init();
    cf->cycle = (ngx_cycle_t *) ngx_cycle;
}


/* pools */

ngx_pool_t *
ngx_create_pool(size_t size, ngx_log_t *log)
{
    ngx_pool_t  *p;

    p = calloc(1, sizeof(ngx_pool_t));
    if (p == NULL) {
        return NULL;
    }

    p->log = log;

    return p;
}


void
ngx_destroy_pool(ngx_pool_t *pool)
{
    ngx_pool_large_t    *l, *next;
    ngx_pool_cleanup_t  *c;

    for (c = pool->cleanup; c; c = c->next) {
        if (c->handler) {
            c->handler(c->data);
        }
    }

    for (l = pool->large; l; l = next) {
        next = l->next;
        free(l->alloc);
        free(l);
    }

    free(pool);
}


void *
ngx_palloc(ngx_pool_t *pool, size_t size)
{
    ngx_pool_large_t  *l;

    l = malloc(sizeof(ngx_pool_large_t));
    if (l == NULL) {
        return NULL;
    }

    /* malloc(0) may answer NULL, which a caller takes for a failure */
    l->alloc = malloc(size ? size : 1);
    if (l->alloc == NULL) {
        free(l);
        return NULL;
    }

    l->next = pool->large;
    pool->large = l;

    return l->alloc;
}


void *
ngx_pnalloc(ngx_pool_t *pool, size_t size)
{
    return ngx_palloc(pool, size);
}


/* as nginx's: only an allocation the pool holds is freed, at once */
ngx_int_t
ngx_pfree(ngx_pool_t *pool, void *p)
{
    ngx_pool_large_t  *l;

    for (l = pool->large; l; l = l->next) {
        if (p == l->alloc) {
            free(l->alloc);
            l->alloc = NULL;
            return NGX_OK;
        }
    }

    return NGX_DECLINED;
}


void *
ngx_pcalloc(ngx_pool_t *pool, size_t size)
{
    void  *p;

    p = ngx_palloc(pool, size);
    if (p) {
        ngx_memzero(p, size);
    }

    return p;
}


ngx_pool_cleanup_t *
ngx_pool_cleanup_add(ngx_pool_t *p, size_t size)
{
    ngx_pool_cleanup_t  *c;

    c = ngx_palloc(p, sizeof(ngx_pool_cleanup_t));
    if (c == NULL) {
        return NULL;
    }

    c->data = size ? ngx_palloc(p, size) : NULL;
    c->handler = NULL;
    c->next = p->cleanup;
    p->cleanup = c;

    return c;
}


ngx_chain_t *
ngx_alloc_chain_link(ngx_pool_t *pool)
{
    return ngx_palloc(pool, sizeof(ngx_chain_t));
}


void *
ngx_alloc(size_t size, ngx_log_t *log)
{
    return malloc(size);
}


void *
ngx_calloc(size_t size, ngx_log_t *log)
{
    return calloc(1, size);
}


/* arrays */

ngx_array_t *
ngx_array_create(ngx_pool_t *p, ngx_uint_t n, size_t size)
{
    ngx_array_t  *a;

    a = ngx_palloc(p, sizeof(ngx_array_t));
    if (a == NULL || ngx_array_init(a, p, n, size) != NGX_OK) {
        return NULL;
    }

    return a;
}


void *
ngx_array_push(ngx_array_t *a)
{
    void  *new;

    if (a->nelts == a->nalloc) {
        new = ngx_palloc(a->pool, 2 * a->size * (a->nalloc ? a->nalloc : 1));
        if (new == NULL) {
            return NULL;
        }

        if (a->nelts) {
            ngx_memcpy(new, a->elts, a->size * a->nelts);
        }

        a->elts = new;
        a->nalloc = a->nalloc ? 2 * a->nalloc : 1;
    }

    return (u_char *) a->elts + a->size * a->nelts++;
}


/* strings */

/* RFC 4648 base64 with padding: dst->data holds the encoded length */
void
ngx_encode_base64(ngx_str_t *dst, ngx_str_t *src)
{
    u_char      *d, *s;
    size_t       len;
    static char  b64[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

    s = src->data;
    d = dst->data;

    for (len = src->len; len > 2; len -= 3, s += 3) {
        *d++ = b64[s[0] >> 2];
        *d++ = b64[((s[0] & 3) << 4) | (s[1] >> 4)];
        *d++ = b64[((s[1] & 0x0f) << 2) | (s[2] >> 6)];
        *d++ = b64[s[2] & 0x3f];
    }

    if (len) {
        *d++ = b64[s[0] >> 2];

        if (len == 1) {
            *d++ = b64[(s[0] & 3) << 4];
            *d++ = '=';

        } else {
            *d++ = b64[((s[0] & 3) << 4) | (s[1] >> 4)];
            *d++ = b64[(s[1] & 0x0f) << 2];
        }

        *d++ = '=';
    }

    dst->len = d - dst->data;
}


u_char *
ngx_hex_dump(u_char *dst, u_char *src, size_t len)
{
    static u_char  hex[] = "0123456789abcdef";

    while (len--) {
        *dst++ = hex[*src >> 4];
        *dst++ = hex[*src++ & 0xf];
    }

    return dst;
}


ngx_int_t
ngx_hextoi(u_char *line, size_t n)
{
    u_char     c;
    ngx_int_t  value;

    if (n == 0) {
        return NGX_ERROR;
    }

    for (value = 0; n--; line++) {
        if (value > NGX_MAX_INT_T_VALUE / 16) {
            return NGX_ERROR;
        }

        c = *line;

        if (c >= '0' && c <= '9') {
            value = value * 16 + (c - '0');

        } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
            value = value * 16 + ((c | 0x20) - 'a' + 10);

        } else {
            return NGX_ERROR;
        }
    }

    return value;
}


ngx_int_t
ngx_strncasecmp(u_char *s1, u_char *s2, size_t n)
{
    ngx_uint_t  c1, c2;

    while (n--) {
        /* ngx_tolower() evaluates its argument more than once */
        c1 = *s1++;
        c2 = *s2++;
        c1 = (ngx_uint_t) ngx_tolower(c1);
        c2 = (ngx_uint_t) ngx_tolower(c2);

        if (c1 != c2) {
            return c1 < c2 ? -1 : 1;
        }

        if (c1 == 0) {
            return 0;
        }
    }

    return 0;
}


/* s2 (its first n + 1 bytes) in s1 .. last, case-insensitively, or NULL
 * (nginx's n is the needle's length minus one) */
u_char *
ngx_strlcasestrn(u_char *s1, u_char *last, u_char *s2, size_t n)
{
    for (n++; (size_t) (last - s1) >= n; s1++) {
        if (ngx_strncasecmp(s1, s2, n) == 0) {
            return s1;
        }
    }

    return NULL;
}


/* the decimal of v into dst, at least width digits padded with pad */
static u_char *
ngx_stub_number(u_char *dst, u_char *last, uint64_t v, ngx_uint_t neg,
    ngx_uint_t width, u_char pad)
{
    u_char   tmp[24], *p;
    size_t   len;

    p = tmp + sizeof(tmp);

    do {
        *--p = (u_char) ('0' + v % 10);
        v /= 10;
    } while (v);

    len = tmp + sizeof(tmp) - p;

    if (neg && dst < last) {
        *dst++ = '-';
    }

    while (width > len && dst < last) {
        *dst++ = pad;
        width--;
    }

    while (p < tmp + sizeof(tmp) && dst < last) {
        *dst++ = *p++;
    }

    return dst;
}


u_char *
ngx_vslprintf(u_char *buf, u_char *last, const char *fmt, va_list args)
{
    u_char      *s, pad;
    size_t       len;
    int64_t      i64;
    uint64_t     u64;
    ngx_str_t   *v;
    ngx_uint_t   width, sign, star, quad;

    while (*fmt && buf < last) {

        if (*fmt != '%') {
            *buf++ = (u_char) *fmt++;
            continue;
        }

        fmt++;

        pad = (*fmt == '0') ? '0' : ' ';
        width = 0;
        sign = 1;
        star = 0;
        quad = 0;

        while (*fmt >= '0' && *fmt <= '9') {
            width = width * 10 + (*fmt++ - '0');
        }

        for ( ;; ) {
            if (*fmt == 'u') {
                sign = 0;
            } else if (*fmt == '*') {
                star = 1;
            } else if (*fmt == 'L') {
                quad = 1;
            } else {
                break;
            }

            fmt++;
        }

        switch (*fmt++) {

        case 'V':
            v = va_arg(args, ngx_str_t *);
            len = ngx_min((size_t) (last - buf), v->len);

            if (len) {
                buf = ngx_cpymem(buf, v->data, len);
            }

            continue;

        case 's':
            len = star ? va_arg(args, size_t) : (size_t) -1;
            s = va_arg(args, u_char *);

            while (len-- && *s && buf < last) {
                *buf++ = *s++;
            }

            continue;

        case 'c':
            *buf++ = (u_char) va_arg(args, int);
            continue;

        case 'Z':
            *buf++ = '\0';
            continue;

        case '%':
            *buf++ = '%';
            continue;

        case 'd':
            if (quad) {
                abort();
            }

            i64 = va_arg(args, int);
            break;

        case 'i':
            i64 = sign ? (int64_t) va_arg(args, ngx_int_t)
                       : (int64_t) va_arg(args, ngx_uint_t);
            break;

        case 'D':
            i64 = sign ? (int64_t) va_arg(args, int32_t)
                       : (int64_t) va_arg(args, uint32_t);
            break;

        case 'z':
            i64 = sign ? (int64_t) va_arg(args, ssize_t)
                       : (int64_t) va_arg(args, size_t);
            break;

        case 'O':
            i64 = va_arg(args, off_t);
            sign = 1;
            break;

        case 'T':
            i64 = va_arg(args, time_t);
            sign = 1;
            break;

        case 'M':
            i64 = (int64_t) va_arg(args, ngx_msec_t);
            sign = 0;
            break;

        case 'A':
            i64 = sign ? (int64_t) va_arg(args, ngx_atomic_int_t)
                       : (int64_t) va_arg(args, ngx_atomic_uint_t);
            break;

        default:
            if (quad) {
                /* %L, %uL */
                fmt--;
                i64 = sign ? va_arg(args, int64_t)
                           : (int64_t) va_arg(args, uint64_t);
                break;
            }

            /* a conversion this stand-in does not know: fail loudly */
            abort();
        }

        if (sign && i64 < 0) {
            u64 = (uint64_t) -(i64 + 1) + 1;
            buf = ngx_stub_number(buf, last, u64, 1, width, pad);

        } else {
            buf = ngx_stub_number(buf, last, (uint64_t) i64, 0, width, pad);
        }
    }

    return buf;
}


u_char * ngx_cdecl
ngx_sprintf(u_char *buf, const char *fmt, ...)
{
    u_char   *p;
    va_list   args;

    va_start(args, fmt);
    p = ngx_vslprintf(buf, (void *) -1, fmt, args);
    va_end(args);

    return p;
}


u_char * ngx_cdecl
ngx_snprintf(u_char *buf, size_t max, const char *fmt, ...)
{
    u_char   *p;
    va_list   args;

    va_start(args, fmt);
    p = ngx_vslprintf(buf, buf + max, fmt, args);
    va_end(args);

    return p;
}


u_char * ngx_cdecl
ngx_slprintf(u_char *buf, u_char *last, const char *fmt, ...)
{
    u_char   *p;
    va_list   args;

    va_start(args, fmt);
    p = ngx_vslprintf(buf, last, fmt, args);
    va_end(args);

    return p;
}


/* strings */

u_char *
ngx_cpystrn(u_char *dst, u_char *src, size_t n)
{
    if (n == 0) {
        return dst;
    }

    while (--n) {
        *dst = *src;

        if (*dst == '\0') {
            return dst;
        }

        dst++;
        src++;
    }

    *dst = '\0';

    return dst;
}


u_char *
ngx_pstrdup(ngx_pool_t *pool, ngx_str_t *src)
{
    u_char  *dst;

    dst = ngx_pnalloc(pool, src->len);
    if (dst == NULL) {
        return NULL;
    }

    ngx_memcpy(dst, src->data, src->len);

    return dst;
}


/* base64url (RFC 4648 5), as the header says: no padding written; a
 * decoder reads up to the first '=', refuses any other byte outside the
 * alphabet and a length that leaves a lone sextet */

static const char  ngx_stub_b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";


void
ngx_encode_base64url(ngx_str_t *dst, ngx_str_t *src)
{
    u_char    *d, *s;
    size_t     n;
    uint32_t   v;

    d = dst->data;
    s = src->data;

    for (n = src->len; n >= 3; n -= 3, s += 3) {
        v = (uint32_t) s[0] << 16 | (uint32_t) s[1] << 8 | s[2];
        *d++ = ngx_stub_b64url[v >> 18];
        *d++ = ngx_stub_b64url[(v >> 12) & 0x3f];
        *d++ = ngx_stub_b64url[(v >> 6) & 0x3f];
        *d++ = ngx_stub_b64url[v & 0x3f];
    }

    if (n > 0) {
        v = (uint32_t) s[0] << 16 | (n == 2 ? (uint32_t) s[1] << 8 : 0);
        *d++ = ngx_stub_b64url[v >> 18];
        *d++ = ngx_stub_b64url[(v >> 12) & 0x3f];

        if (n == 2) {
            *d++ = ngx_stub_b64url[(v >> 6) & 0x3f];
        }
    }

    dst->len = d - dst->data;
}


/* standard base64, padded or not, as the header says of the url one */
ngx_int_t
ngx_decode_base64(ngx_str_t *dst, ngx_str_t *src)
{
    u_char     *copy;
    size_t      i;
    ngx_int_t   rc;
    ngx_str_t   s;

    copy = malloc(src->len ? src->len : 1);
    if (copy == NULL) {
        return NGX_ERROR;
    }

    for (i = 0; i < src->len; i++) {
        copy[i] = src->data[i] == '+' ? '-'
                  : src->data[i] == '/' ? '_'
                  : (src->data[i] == '-' || src->data[i] == '_') ? '*'
                  : src->data[i];
    }

    s.data = copy;
    s.len = src->len;

    rc = ngx_decode_base64url(dst, &s);

    free(copy);

    return rc;
}


static int
ngx_stub_b64url_value(u_char c)
{
    const char  *p;

    p = (c == '\0') ? NULL : strchr(ngx_stub_b64url, c);

    return p ? (int) (p - ngx_stub_b64url) : -1;
}


ngx_int_t
ngx_decode_base64url(ngx_str_t *dst, ngx_str_t *src)
{
    u_char    *d;
    size_t     len, i;
    uint32_t   v;
    ngx_uint_t bits;

    for (len = 0; len < src->len && src->data[len] != '='; len++) {
        if (ngx_stub_b64url_value(src->data[len]) < 0) {
            return NGX_ERROR;
        }
    }

    if (len % 4 == 1) {
        return NGX_ERROR;
    }

    d = dst->data;
    v = 0;
    bits = 0;

    for (i = 0; i < len; i++) {
        v = (v << 6) | (uint32_t) ngx_stub_b64url_value(src->data[i]);
        bits += 6;

        if (bits >= 8) {
            bits -= 8;
            *d++ = (u_char) (v >> bits);
        }
    }

    dst->len = d - dst->data;

    return NGX_OK;
}


/* lists (request headers) */

void *
ngx_list_push(ngx_list_t *l)
{
    void             *elt;
    ngx_list_part_t  *last;

    last = l->last;

    if (last->nelts == l->nalloc) {
        last = ngx_palloc(l->pool, sizeof(ngx_list_part_t));
        if (last == NULL) {
            return NULL;
        }

        last->elts = ngx_palloc(l->pool, l->nalloc * l->size);
        if (last->elts == NULL) {
            return NULL;
        }

        last->nelts = 0;
        last->next = NULL;

        l->last->next = last;
        l->last = last;
    }

    elt = (char *) last->elts + l->size * last->nelts;
    last->nelts++;

    return elt;
}


/* files: a request body spooled to a temp file */

ssize_t
ngx_read_file(ngx_file_t *file, u_char *buf, size_t size, off_t offset)
{
    ssize_t  n;

    n = pread(file->fd, buf, size, offset);
    if (n == -1) {
        return NGX_ERROR;
    }

    file->offset += n;

    return n;
}


/* logs: kept, the last one readable by the tests */

static void
ngx_stub_keep(const char *fmt, va_list args)
{
    u_char  *p;

    p = ngx_vslprintf((u_char *) ngx_stub_last,
                      (u_char *) ngx_stub_last + sizeof(ngx_stub_last) - 1,
                      fmt, args);
    *p = '\0';
}


void ngx_cdecl
ngx_log_error_core(ngx_uint_t level, ngx_log_t *log, ngx_err_t err,
    const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    ngx_stub_keep(fmt, args);
    va_end(args);
}


void ngx_cdecl
ngx_conf_log_error(ngx_uint_t level, ngx_conf_t *cf, ngx_err_t err,
    const char *fmt, ...)
{
    va_list  args;

    va_start(args, fmt);
    ngx_stub_keep(fmt, args);
    va_end(args);
}
