/*
 * Veto Sandbox: reading what Redis Sentinel answers (see
 * ngx_http_veto_sandbox_sentinel.h).
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include <arpa/inet.h>

#include "ngx_http_veto_sandbox_sentinel.h"


#define NGX_HTTP_VSB_SENTINEL_MAX_FIELDS  8


static ngx_int_t ngx_http_veto_sandbox_sentinel_fields(u_char *msg,
    size_t len, ngx_uint_t n, u_char **f, size_t *flen);


ngx_int_t
ngx_http_veto_sandbox_sentinel_addr(u_char *host, size_t host_len,
    u_char *port, size_t port_len, u_char *out, in_port_t *pout)
{
    u_char           *p;
    ngx_int_t         n;
    struct in_addr    a4;
    struct in6_addr   a6;

    if (host_len == 0 || host_len >= NGX_HTTP_VSB_SENTINEL_HOST_LEN) {
        return NGX_ERROR;
    }

    /* inet_pton() reads up to a NUL: none inside, one after */
    for (p = host; p < host + host_len; p++) {
        if (*p == '\0') {
            return NGX_ERROR;
        }
    }

    /* decimal digits only, as Sentinel writes a port */
    if (port_len == 0 || port_len > 5) {
        return NGX_ERROR;
    }

    n = 0;

    for (p = port; p < port + port_len; p++) {
        if (*p < '0' || *p > '9') {
            return NGX_ERROR;
        }

        n = n * 10 + (*p - '0');
    }

    if (n < 1 || n > 65535) {
        return NGX_ERROR;
    }

    ngx_memcpy(out, host, host_len);
    out[host_len] = '\0';

    if (inet_pton(AF_INET, (char *) out, &a4) != 1
        && inet_pton(AF_INET6, (char *) out, &a6) != 1)
    {
        return NGX_DECLINED;
    }

    *pout = (in_port_t) n;

    return NGX_OK;
}


ngx_int_t
ngx_http_veto_sandbox_sentinel_switch(u_char *msg, size_t len,
    ngx_str_t *name, u_char *host, in_port_t *port)
{
    u_char  *f[5];
    size_t   flen[5];

    if (ngx_http_veto_sandbox_sentinel_fields(msg, len, 5, f, flen)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (flen[0] != name->len || ngx_strncmp(f[0], name->data, flen[0]) != 0) {
        return NGX_DECLINED;
    }

    return ngx_http_veto_sandbox_sentinel_addr(f[3], flen[3], f[4], flen[4],
                                               host, port) == NGX_OK
           ? NGX_OK : NGX_ERROR;
}


ngx_int_t
ngx_http_veto_sandbox_sentinel_promoting(u_char *msg, size_t len,
    ngx_str_t *name, u_char *host, in_port_t *port)
{
    u_char  *f[8];
    size_t   flen[8];

    if (ngx_http_veto_sandbox_sentinel_fields(msg, len, 8, f, flen)
        != NGX_OK
        || flen[0] != 5 || ngx_strncmp(f[0], "slave", 5) != 0
        || flen[4] != 1 || f[4][0] != '@')
    {
        return NGX_ERROR;
    }

    if (flen[5] != name->len || ngx_strncmp(f[5], name->data, flen[5]) != 0) {
        return NGX_DECLINED;
    }

    return ngx_http_veto_sandbox_sentinel_addr(f[6], flen[6], f[7], flen[7],
                                               host, port) == NGX_OK
           ? NGX_OK : NGX_ERROR;
}


/* exactly n fields, each one space apart, none empty */
static ngx_int_t
ngx_http_veto_sandbox_sentinel_fields(u_char *msg, size_t len, ngx_uint_t n,
    u_char **f, size_t *flen)
{
    u_char      *p, *last;
    ngx_uint_t   i;

    if (n > NGX_HTTP_VSB_SENTINEL_MAX_FIELDS) {
        return NGX_ERROR;
    }

    p = msg;
    last = msg + len;

    for (i = 0; i < n; i++) {
        if (i > 0) {
            if (p == last || *p != ' ') {
                return NGX_ERROR;
            }

            p++;
        }

        f[i] = p;

        while (p < last && *p != ' ') {
            p++;
        }

        flen[i] = p - f[i];

        if (flen[i] == 0) {
            return NGX_ERROR;
        }
    }

    /* a field more: not this message */
    return p == last ? NGX_OK : NGX_ERROR;
}
