/*
 * Veto Sandbox: the canonical request hash an approval is bound to, and
 * the query reading that must agree with it.
 * Contract: ngx_http_veto_sandbox_hash.h and docs/approvals.md.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include <openssl/evp.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "ngx_http_veto_sandbox_hash.h"


typedef struct {
    ngx_str_t   name;
    ngx_str_t   value;
} ngx_http_veto_sandbox_qpair_t;


static u_char *ngx_http_veto_sandbox_pct_encode(u_char *dst, u_char *src,
    size_t len, ngx_uint_t keep_slash);
static int ngx_libc_cdecl ngx_http_veto_sandbox_qpair_cmp(const void *one,
    const void *two);


/*
 * Canonical encoding: every byte but the RFC 3986 unreserved ones
 * (A-Z a-z 0-9 - . _ ~), and '/' in a path, becomes %XX, upper case.
 * dst must hold 3 * len bytes.
 */
static u_char *
ngx_http_veto_sandbox_pct_encode(u_char *dst, u_char *src, size_t len,
    ngx_uint_t keep_slash)
{
    u_char         c;
    static u_char  hex[] = "0123456789ABCDEF";

    while (len--) {
        c = *src++;

        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
            || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_'
            || c == '~' || (keep_slash && c == '/'))
        {
            *dst++ = c;
            continue;
        }

        *dst++ = '%';
        *dst++ = hex[c >> 4];
        *dst++ = hex[c & 0xf];
    }

    return dst;
}


u_char *
ngx_http_veto_sandbox_pct_decode(u_char *dst, u_char *src, size_t len,
    ngx_uint_t strict)
{
    u_char     *last;
    ngx_int_t   hi, lo;

    last = src + len;

    while (src < last) {
        if (*src == '%') {
            hi = last - src >= 3 ? ngx_hextoi(src + 1, 1) : NGX_ERROR;
            lo = last - src >= 3 ? ngx_hextoi(src + 2, 1) : NGX_ERROR;

            if (hi != NGX_ERROR && lo != NGX_ERROR) {
                *dst++ = (u_char) (hi * 16 + lo);
                src += 3;
                continue;
            }

            if (strict) {
                return NULL;
            }
        }

        *dst++ = *src++;
    }

    return dst;
}


/*
 * The query arguments a route takes, read the way the canonical query
 * below reads them (split on '&', empty parts dropped, split at the first
 * '=', percent-decoded), so that two requests with the same hash always
 * name the same thing.  Each may be given once, no other is taken, and
 * no '%' other than %XX: "?path=a&path=b" and "?path=b&path=a",
 * "?PATH=b&path=a" and "?path=a&PATH=b", "?path=%zz" and "?path=%25zz"
 * hash alike but would name different files.  NGX_OK: the values of the
 * ones given (decoded, NUL terminated; data NULL: absent); NGX_ABORT:
 * the query is ambiguous, *why says how and *at names the argument at
 * fault (empty when its name does not decode); NGX_ERROR: no memory.
 */
ngx_int_t
ngx_http_veto_sandbox_hash_query_args(ngx_pool_t *pool, ngx_str_t *args,
    ngx_http_veto_sandbox_qarg_t *known, ngx_uint_t n, const char **why,
    ngx_str_t *at)
{
    u_char      *p, *last, *start, *eq, *end, *dec;
    ngx_uint_t   i;

    for (i = 0; i < n; i++) {
        ngx_str_null(&known[i].value);
    }

    ngx_str_null(at);

    p = args->data;
    last = p + args->len;

    for ( /* void */ ; p < last; p++) {
        start = p;

        while (p < last && *p != '&') {
            p++;
        }

        if (p == start) {
            continue;
        }

        eq = ngx_strlchr(start, p, '=');
        end = eq ? eq : p;

        dec = ngx_pnalloc(pool, (p - start) + 1);
        if (dec == NULL) {
            return NGX_ERROR;
        }

        end = ngx_http_veto_sandbox_pct_decode(dec, start, end - start, 1);

        if (end == NULL) {
            *why = "a query argument name is not percent-encoded correctly";
            ngx_str_null(at);
            return NGX_ABORT;
        }

        at->data = dec;
        at->len = end - dec;

        for (i = 0; i < n; i++) {
            if (at->len == ngx_strlen(known[i].name)
                && ngx_memcmp(dec, known[i].name, at->len) == 0)
            {
                break;
            }
        }

        if (i == n) {
            *why = "unknown query argument";
            return NGX_ABORT;
        }

        if (known[i].value.data != NULL) {
            *why = "the query argument is given more than once";
            return NGX_ABORT;
        }

        /* the value is decoded behind the name, which stays for *at */
        dec = end;

        end = eq ? ngx_http_veto_sandbox_pct_decode(dec, eq + 1, p - eq - 1, 1)
                 : dec;

        if (end == NULL) {
            *why = "the query argument is not percent-encoded correctly";
            return NGX_ABORT;
        }

        *end = '\0';
        known[i].value.data = dec;
        known[i].value.len = end - dec;
    }

    ngx_str_null(at);

    return NGX_OK;
}


/* The one query argument "name" of a route that takes only it. */
ngx_int_t
ngx_http_veto_sandbox_hash_query_arg(ngx_pool_t *pool, ngx_str_t *args,
    const char *name, ngx_str_t *value, const char **why)
{
    ngx_int_t                     rc;
    ngx_str_t                     at;
    ngx_http_veto_sandbox_qarg_t  one;

    one.name = name;

    rc = ngx_http_veto_sandbox_hash_query_args(pool, args, &one, 1, why, &at);

    *value = one.value;

    if (rc != NGX_OK) {
        return rc;
    }

    return value->data ? NGX_OK : NGX_DECLINED;
}


ngx_int_t
ngx_http_veto_sandbox_hash_canon_path(ngx_pool_t *pool, ngx_str_t *path,
    ngx_str_t *out)
{
    out->data = ngx_pnalloc(pool, 3 * path->len + 1);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    out->len = ngx_http_veto_sandbox_pct_encode(out->data, path->data,
                                                path->len, 1)
               - out->data;

    return NGX_OK;
}


static int ngx_libc_cdecl
ngx_http_veto_sandbox_qpair_cmp(const void *one, const void *two)
{
    int                             rc;
    size_t                          n;
    ngx_str_t                      *a, *b;
    ngx_http_veto_sandbox_qpair_t  *p1, *p2;
    ngx_uint_t                      i;

    p1 = (ngx_http_veto_sandbox_qpair_t *) one;
    p2 = (ngx_http_veto_sandbox_qpair_t *) two;

    /* bytewise on the encoded name, then the encoded value */

    for (i = 0; i < 2; i++) {
        a = i ? &p1->value : &p1->name;
        b = i ? &p2->value : &p2->name;

        n = ngx_min(a->len, b->len);
        rc = n ? ngx_memcmp(a->data, b->data, n) : 0;

        if (rc != 0) {
            return rc;
        }

        if (a->len != b->len) {
            return a->len < b->len ? -1 : 1;
        }
    }

    return 0;
}


/*
 * Query: split on '&', drop empty parts, split each on the first '='
 * (none: empty value), percent-decode name and value (%XX with two hex
 * digits only; any other '%' and '+' stay as they are),
 * re-encode both canonically, sort the pairs bytewise by name then value,
 * join as name=value with '&'.
 */
ngx_int_t
ngx_http_veto_sandbox_hash_canon_query(ngx_pool_t *pool, ngx_str_t *args,
    ngx_str_t *out)
{
    u_char                         *p, *last, *start, *eq, *dec, *s, *d;
    ngx_str_t                      *part;
    ngx_uint_t                      i, j;
    ngx_array_t                     pairs;
    ngx_http_veto_sandbox_qpair_t  *qp;

    if (ngx_array_init(&pairs, pool, 8, sizeof(ngx_http_veto_sandbox_qpair_t))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    p = args->data;
    last = p + args->len;

    while (p < last) {
        start = p;

        while (p < last && *p != '&') {
            p++;
        }

        if (p > start) {
            qp = ngx_array_push(&pairs);
            if (qp == NULL) {
                return NGX_ERROR;
            }

            eq = ngx_strlchr(start, p, '=');

            for (j = 0; j < 2; j++) {
                part = j ? &qp->value : &qp->name;

                if (j == 0) {
                    s = start;
                    d = eq ? eq : p;

                } else {
                    s = eq ? eq + 1 : p;
                    d = p;
                }

                dec = ngx_pnalloc(pool, (d - s) + 1);
                if (dec == NULL) {
                    return NGX_ERROR;
                }

                {
                    u_char  *dst;

                    dst = ngx_http_veto_sandbox_pct_decode(dec, s, d - s, 0);

                    part->data = ngx_pnalloc(pool, 3 * (dst - dec) + 1);
                    if (part->data == NULL) {
                        return NGX_ERROR;
                    }

                    part->len = ngx_http_veto_sandbox_pct_encode(part->data,
                                                       dec, dst - dec, 0)
                                - part->data;
                }
            }
        }

        if (p < last) {
            p++;
        }
    }

    qp = pairs.elts;

    if (pairs.nelts > 1) {
        ngx_qsort(qp, pairs.nelts, sizeof(ngx_http_veto_sandbox_qpair_t),
                  ngx_http_veto_sandbox_qpair_cmp);
    }

    out->len = 0;

    for (i = 0; i < pairs.nelts; i++) {
        out->len += qp[i].name.len + 1 + qp[i].value.len + 1;
    }

    out->data = ngx_pnalloc(pool, out->len + 1);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    p = out->data;

    for (i = 0; i < pairs.nelts; i++) {
        if (i) {
            *p++ = '&';
        }

        p = ngx_cpymem(p, qp[i].name.data, qp[i].name.len);
        *p++ = '=';
        p = ngx_cpymem(p, qp[i].value.data, qp[i].value.len);
    }

    out->len = p - out->data;

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_hash_request(ngx_pool_t *pool, ngx_str_t *method,
    ngx_str_t *path, ngx_str_t *args, u_char *body_sha256, off_t body_len,
    ngx_str_t *context, u_char *out)
{
    u_char        *p, *canon;
    size_t         len;
    ngx_str_t      cpath, cquery;
    unsigned int   mdlen;
    u_char         md[EVP_MAX_MD_SIZE];

    if (ngx_http_veto_sandbox_hash_canon_path(pool, path, &cpath)
        != NGX_OK
        || ngx_http_veto_sandbox_hash_canon_query(pool, args, &cquery)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    len = sizeof("veto-request-v1\n") - 1 + method->len + 1 + cpath.len + 1
          + cquery.len + 1 + 64 + 1 + NGX_OFF_T_LEN + 1
          + (context ? context->len + 1 : 0);

    canon = ngx_pnalloc(pool, len);
    if (canon == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(canon, "veto-request-v1\n%V\n%V\n%V\n", method, &cpath,
                    &cquery);
    p = ngx_hex_dump(p, body_sha256, 32);
    p = ngx_sprintf(p, "\n%O\n", body_len);

    /* what the request runs with that is not in it (a sandbox's env) */
    if (context && context->len) {
        p = ngx_sprintf(p, "%V\n", context);
    }

    if (EVP_Digest(canon, p - canon, md, &mdlen, EVP_sha256(), NULL) != 1) {
        return NGX_ERROR;
    }

    p = ngx_hex_dump(out, md, 32);
    *p = '\0';

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_hash_body(ngx_chain_t *bufs, u_char *md,
    off_t *len, ngx_log_t *log)
{
    u_char        buf[16384];
    off_t         pos;
    ssize_t       n;
    ngx_int_t     rc;
    ngx_buf_t    *b;
    EVP_MD_CTX   *ctx;
    unsigned int  mdlen;

    ctx = EVP_MD_CTX_new();
    if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        return NGX_ERROR;
    }

    rc = NGX_ERROR;
    *len = 0;

    for ( /* void */ ; bufs; bufs = bufs->next) {
        b = bufs->buf;

        if (ngx_buf_in_memory(b)) {
            if (EVP_DigestUpdate(ctx, b->pos, b->last - b->pos) != 1) {
                goto done;
            }

            *len += b->last - b->pos;
            continue;
        }

        if (!b->in_file || b->file == NULL) {
            continue;
        }

        /* a request body spooled to a temp file: the same bytes */

        for (pos = b->file_pos; pos < b->file_last; pos += n) {
            n = ngx_read_file(b->file, buf,
                              (size_t) ngx_min((off_t) sizeof(buf),
                                               b->file_last - pos),
                              pos);
            if (n == NGX_ERROR || n == 0) {
                ngx_log_error(NGX_LOG_ERR, log, ngx_errno,
                              "veto_sandbox: reading request body from "
                              "\"%V\" for its digest failed", &b->file->name);
                goto done;
            }

            if (EVP_DigestUpdate(ctx, buf, n) != 1) {
                goto done;
            }

            *len += n;
        }
    }

    if (EVP_DigestFinal_ex(ctx, md, &mdlen) == 1) {
        rc = NGX_OK;
    }

done:

    EVP_MD_CTX_free(ctx);
    return rc;
}


ngx_uint_t
ngx_http_veto_sandbox_hex_lower(const u_char *p, size_t len)
{
    size_t  i;

    for (i = 0; i < len; i++) {
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f'))) {
            return 0;
        }
    }

    return 1;
}


/*
 * RFC 8785 (JCS): the canonical form of a JSON body.  The writer either
 * feeds a digest, fills a buffer of a known capacity, or both; it counts
 * every byte.
 */

typedef struct {
    EVP_MD_CTX   *md;
    u_char       *buf;
    size_t        cap;
    size_t        len;
    ngx_pool_t   *pool;
    ngx_uint_t    failed;
} ngx_http_veto_sandbox_jcs_t;


static void
ngx_http_veto_sandbox_jcs_put(ngx_http_veto_sandbox_jcs_t *w, const u_char *p,
    size_t n)
{
    if (w->failed || n == 0) {
        return;
    }

    if (w->md != NULL && EVP_DigestUpdate(w->md, p, n) != 1) {
        w->failed = 1;
        return;
    }

    if (w->buf != NULL) {
        if (w->cap - w->len < n) {
            w->failed = 1;
            return;
        }

        ngx_memcpy(w->buf + w->len, p, n);
    }

    w->len += n;
}


size_t
ngx_http_veto_sandbox_jcs_number(double d, u_char *out)
{
    char     tmp[40], digits[24];
    u_char  *p;
    int      prec, k, n, e, i;
    char    *s, *x;

    p = out;

    /* JSON has no NaN nor infinity; -0 is "0" (ES Number::toString) */
    if (d == 0 || d != d || d - d != 0) {
        *p++ = '0';
        return p - out;
    }

    if (d < 0) {
        *p++ = '-';
        d = -d;
    }

    /* the shortest digits that read back as d: correctly rounded, so the
     * closest of that length, as ES asks */
    for (prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, d);
        if (strtod(tmp, NULL) == d) {
            break;
        }
    }

    /* tmp: D[.DDD]e[+-]XX */
    k = 0;
    for (s = tmp; *s && *s != 'e'; s++) {
        if (*s >= '0' && *s <= '9') {
            digits[k++] = *s;
        }
    }

    e = (int) strtol(s + 1, &x, 10);

    while (k > 1 && digits[k - 1] == '0') {
        k--;
    }

    n = e + 1;    /* d = 0.digits * 10^n */

    if (k <= n && n <= 21) {
        p = ngx_cpymem(p, digits, k);
        for (i = k; i < n; i++) {
            *p++ = '0';
        }

    } else if (0 < n && n <= 21) {
        p = ngx_cpymem(p, digits, n);
        *p++ = '.';
        p = ngx_cpymem(p, digits + n, k - n);

    } else if (-6 < n && n <= 0) {
        *p++ = '0';
        *p++ = '.';
        for (i = n; i < 0; i++) {
            *p++ = '0';
        }
        p = ngx_cpymem(p, digits, k);

    } else {
        *p++ = (u_char) digits[0];
        if (k > 1) {
            *p++ = '.';
            p = ngx_cpymem(p, digits + 1, k - 1);
        }
        p = ngx_sprintf(p, "e%c%d", n - 1 < 0 ? '-' : '+',
                        n - 1 < 0 ? 1 - n : n - 1);
    }

    return p - out;
}


static void
ngx_http_veto_sandbox_jcs_string(ngx_http_veto_sandbox_jcs_t *w,
    const u_char *s, size_t len)
{
    u_char         c, esc[6];
    const u_char  *run, *last;
    static u_char  hex[] = "0123456789abcdef";

    ngx_http_veto_sandbox_jcs_put(w, (u_char *) "\"", 1);

    last = s + len;

    for (run = s; s < last; s++) {
        c = *s;

        if (c >= 0x20 && c != '"' && c != '\\') {
            continue;
        }

        ngx_http_veto_sandbox_jcs_put(w, run, s - run);
        run = s + 1;

        esc[0] = '\\';

        switch (c) {
        case '"':  esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 0xf];
            ngx_http_veto_sandbox_jcs_put(w, esc, 6);
            continue;
        }

        ngx_http_veto_sandbox_jcs_put(w, esc, 2);
    }

    ngx_http_veto_sandbox_jcs_put(w, run, s - run);
    ngx_http_veto_sandbox_jcs_put(w, (u_char *) "\"", 1);
}


/* the next UTF-16 code unit of valid UTF-8 at *p (a pair: *hi holds the
 * second half for the next call) */
static ngx_uint_t
ngx_http_veto_sandbox_jcs_unit(const u_char **p, ngx_uint_t *lo)
{
    uint32_t       c;
    const u_char  *s;

    if (*lo) {
        c = *lo;
        *lo = 0;
        return c;
    }

    s = *p;

    if (s[0] < 0x80) {
        c = s[0];
        *p = s + 1;

    } else if ((s[0] & 0xe0) == 0xc0) {
        c = ((s[0] & 0x1f) << 6) | (s[1] & 0x3f);
        *p = s + 2;

    } else if ((s[0] & 0xf0) == 0xe0) {
        c = ((s[0] & 0x0f) << 12) | ((s[1] & 0x3f) << 6) | (s[2] & 0x3f);
        *p = s + 3;

    } else {
        c = ((s[0] & 0x07) << 18) | ((s[1] & 0x3f) << 12)
            | ((s[2] & 0x3f) << 6) | (s[3] & 0x3f);
        *p = s + 4;
    }

    if (c >= 0x10000) {
        c -= 0x10000;
        *lo = 0xdc00 + (c & 0x3ff);
        return 0xd800 + (c >> 10);
    }

    return c;
}


/* keys in the order of their UTF-16 code units (RFC 8785 3.2.3) */
static int ngx_libc_cdecl
ngx_http_veto_sandbox_jcs_key_cmp(const void *one, const void *two)
{
    ngx_uint_t     a, b, alo, blo;
    const u_char  *p, *q;

    p = *(const u_char **) one;
    q = *(const u_char **) two;
    alo = 0;
    blo = 0;

    for ( ;; ) {
        if (*p == '\0' && alo == 0) {
            return (*q == '\0' && blo == 0) ? 0 : -1;
        }

        if (*q == '\0' && blo == 0) {
            return 1;
        }

        a = ngx_http_veto_sandbox_jcs_unit(&p, &alo);
        b = ngx_http_veto_sandbox_jcs_unit(&q, &blo);

        if (a != b) {
            return a < b ? -1 : 1;
        }
    }
}


static void
ngx_http_veto_sandbox_jcs_value(ngx_http_veto_sandbox_jcs_t *w, json_t *v)
{
    u_char       num[40];
    size_t       i, n;
    json_t      *e;
    const char  *key, **keys;
    json_int_t   iv;

    if (w->failed) {
        return;
    }

    switch (json_typeof(v)) {

    case JSON_OBJECT:
        n = json_object_size(v);
        keys = ngx_palloc(w->pool, (n ? n : 1) * sizeof(const char *));
        if (keys == NULL) {
            w->failed = 1;
            return;
        }

        i = 0;
        json_object_foreach(v, key, e) {
            keys[i++] = key;
        }

        ngx_qsort(keys, n, sizeof(const char *),
                  ngx_http_veto_sandbox_jcs_key_cmp);

        ngx_http_veto_sandbox_jcs_put(w, (u_char *) "{", 1);

        for (i = 0; i < n; i++) {
            if (i) {
                ngx_http_veto_sandbox_jcs_put(w, (u_char *) ",", 1);
            }

            ngx_http_veto_sandbox_jcs_string(w, (u_char *) keys[i],
                                             ngx_strlen(keys[i]));
            ngx_http_veto_sandbox_jcs_put(w, (u_char *) ":", 1);
            ngx_http_veto_sandbox_jcs_value(w, json_object_get(v, keys[i]));
        }

        ngx_http_veto_sandbox_jcs_put(w, (u_char *) "}", 1);
        return;

    case JSON_ARRAY:
        ngx_http_veto_sandbox_jcs_put(w, (u_char *) "[", 1);

        for (i = 0; i < json_array_size(v); i++) {
            if (i) {
                ngx_http_veto_sandbox_jcs_put(w, (u_char *) ",", 1);
            }

            ngx_http_veto_sandbox_jcs_value(w, json_array_get(v, i));
        }

        ngx_http_veto_sandbox_jcs_put(w, (u_char *) "]", 1);
        return;

    case JSON_STRING:
        ngx_http_veto_sandbox_jcs_string(w, (u_char *) json_string_value(v),
                                         json_string_length(v));
        return;

    case JSON_INTEGER:
        /*
         * the exact integer: ES's form up to 2^53; beyond it, where ES
         * would round to a double, still exact, since the module reads
         * integers as 64 bits and two of its values must not share a form
         */
        iv = json_integer_value(v);
        n = ngx_sprintf(num, "%L", (int64_t) iv) - num;

        ngx_http_veto_sandbox_jcs_put(w, num, n);
        return;

    case JSON_REAL:
        n = ngx_http_veto_sandbox_jcs_number(json_real_value(v), num);
        ngx_http_veto_sandbox_jcs_put(w, num, n);
        return;

    case JSON_TRUE:
        ngx_http_veto_sandbox_jcs_put(w, (u_char *) "true", 4);
        return;

    case JSON_FALSE:
        ngx_http_veto_sandbox_jcs_put(w, (u_char *) "false", 5);
        return;

    default:  /* JSON_NULL */
        ngx_http_veto_sandbox_jcs_put(w, (u_char *) "null", 4);
        return;
    }
}


/* parses as the module's requests are parsed (duplicate keys refused) */
static json_t *
ngx_http_veto_sandbox_jcs_parse(u_char *json, size_t len)
{
    json_error_t  err;

    return json_loadb((char *) json, len,
                      JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &err);
}


ngx_int_t
ngx_http_veto_sandbox_jcs(ngx_pool_t *pool, u_char *json, size_t len,
    ngx_str_t *out)
{
    json_t                       *j;
    ngx_http_veto_sandbox_jcs_t   w;

    j = ngx_http_veto_sandbox_jcs_parse(json, len);
    if (j == NULL) {
        return NGX_DECLINED;
    }

    ngx_memzero(&w, sizeof(w));
    w.pool = pool;
    w.cap = NGX_HTTP_VSB_JCS_MAX(len);
    w.buf = ngx_pnalloc(pool, w.cap);

    if (w.buf == NULL) {
        json_decref(j);
        return NGX_ERROR;
    }

    ngx_http_veto_sandbox_jcs_value(&w, j);
    json_decref(j);

    if (w.failed) {
        return NGX_ERROR;
    }

    out->data = w.buf;
    out->len = w.len;

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_hash_body_jcs(ngx_pool_t *pool, ngx_chain_t *bufs,
    size_t max, u_char *md, off_t *len, ngx_log_t *log)
{
    u_char                       *buf, *p;
    off_t                         size;
    ssize_t                       n;
    json_t                       *j;
    ngx_int_t                     rc;
    ngx_buf_t                    *b;
    ngx_chain_t                  *cl;
    unsigned int                  mdlen;
    ngx_http_veto_sandbox_jcs_t   w;

    size = 0;

    for (cl = bufs; cl; cl = cl->next) {
        size += ngx_buf_size(cl->buf);
    }

    /* no body hashes as no bytes, as before */
    if (size == 0) {
        return ngx_http_veto_sandbox_hash_body(bufs, md, len, log);
    }

    if ((size_t) size > max) {
        return NGX_DECLINED;
    }

    buf = ngx_pnalloc(pool, (size_t) size);
    if (buf == NULL) {
        return NGX_ERROR;
    }

    p = buf;

    for (cl = bufs; cl; cl = cl->next) {
        b = cl->buf;

        if (ngx_buf_in_memory(b)) {
            if (b->last != b->pos) {
                p = ngx_cpymem(p, b->pos, b->last - b->pos);
            }

            continue;
        }

        if (b->in_file) {
            if (b->file == NULL) {
                return NGX_ERROR;
            }

            n = ngx_read_file(b->file, p,
                              (size_t) (b->file_last - b->file_pos),
                              b->file_pos);

            if (n != b->file_last - b->file_pos) {
                ngx_log_error(NGX_LOG_ERR, log, ngx_errno,
                              "veto_sandbox: reading request body from "
                              "\"%V\" for its digest failed", &b->file->name);
                return NGX_ERROR;
            }

            p += n;
        }
    }

    j = ngx_http_veto_sandbox_jcs_parse(buf, p - buf);
    if (j == NULL) {
        return NGX_DECLINED;
    }

    ngx_memzero(&w, sizeof(w));
    w.pool = pool;
    w.md = EVP_MD_CTX_new();

    rc = NGX_ERROR;

    if (w.md != NULL && EVP_DigestInit_ex(w.md, EVP_sha256(), NULL) == 1) {
        ngx_http_veto_sandbox_jcs_value(&w, j);

        if (!w.failed && EVP_DigestFinal_ex(w.md, md, &mdlen) == 1) {
            *len = (off_t) w.len;
            rc = NGX_OK;
        }
    }

    EVP_MD_CTX_free(w.md);
    json_decref(j);

    return rc;
}
