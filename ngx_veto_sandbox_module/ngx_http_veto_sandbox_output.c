/*
 * Veto Sandbox: an exec's output streams as JSON strings or base64
 * (contract: ngx_http_veto_sandbox_output.h, README "Exec").  One pass
 * decides, one pass writes; no backtracking, no copy of the input.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_veto_sandbox_output.h"


/* the length of the valid UTF-8 sequence at p (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0 */
static size_t
ngx_http_veto_sandbox_utf8_len(u_char *p, u_char *last)
{
    u_char  c, lo, hi;
    size_t  n, i;

    c = p[0];

    if (c < 0x80) {
        return 1;
    }

    lo = 0x80;
    hi = 0xbf;

    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;

    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        lo = (c == 0xe0) ? 0xa0 : 0x80;
        hi = (c == 0xed) ? 0x9f : 0xbf;

    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        lo = (c == 0xf0) ? 0x90 : 0x80;
        hi = (c == 0xf4) ? 0x8f : 0xbf;

    } else {
        return 0;
    }

    if ((size_t) (last - p) < n || p[1] < lo || p[1] > hi) {
        return 0;
    }

    for (i = 2; i < n; i++) {
        if (p[i] < 0x80 || p[i] > 0xbf) {
            return 0;
        }
    }

    return n;
}


/* the bytes an ASCII character takes inside a JSON string */
static size_t
ngx_http_veto_sandbox_escaped_len(u_char c)
{
    switch (c) {
    case '"': case '\\': case '\b': case '\f': case '\n': case '\r':
    case '\t':
        return 2;
    }

    return c < 0x20 ? 6 : 1;
}


void
ngx_http_veto_sandbox_output_choose(ngx_http_veto_sandbox_output_t *o)
{
    u_char  *p, *last;
    size_t   size, n, limit;

    limit = ngx_base64_encoded_length(o->len);
    size = 0;

    p = o->data;
    last = p + o->len;

    while (p < last) {

        if (*p < 0x80) {
            size += ngx_http_veto_sandbox_escaped_len(*p++);

        } else {
            n = ngx_http_veto_sandbox_utf8_len(p, last);
            if (n == 0) {
                break;
            }

            size += n;
            p += n;
        }

        /* only grows: past base64's size it cannot win any more */
        if (size > limit) {
            break;
        }
    }

    o->base64 = (p < last || size > limit);
    o->size = o->base64 ? limit : size;
}


u_char *
ngx_http_veto_sandbox_output_write(u_char *dst,
    ngx_http_veto_sandbox_output_t *o)
{
    u_char     *p, *last, c;
    ngx_str_t   src, enc;

    static u_char  hex[] = "0123456789abcdef";

    if (o->base64) {
        src.data = o->data;
        src.len = o->len;
        enc.data = dst;

        ngx_encode_base64(&enc, &src);

        return dst + enc.len;
    }

    if (o->size == o->len) {
        return ngx_cpymem(dst, o->data, o->len);
    }

    last = o->data + o->len;

    for (p = o->data; p < last; p++) {
        c = *p;

        if (c >= 0x20 && c != '"' && c != '\\') {
            *dst++ = c;
            continue;
        }

        *dst++ = '\\';

        switch (c) {
        case '"':  *dst++ = '"'; break;
        case '\\': *dst++ = '\\'; break;
        case '\b': *dst++ = 'b'; break;
        case '\f': *dst++ = 'f'; break;
        case '\n': *dst++ = 'n'; break;
        case '\r': *dst++ = 'r'; break;
        case '\t': *dst++ = 't'; break;
        default:
            *dst++ = 'u';
            *dst++ = '0';
            *dst++ = '0';
            *dst++ = hex[c >> 4];
            *dst++ = hex[c & 0xf];
        }
    }

    return dst;
}
