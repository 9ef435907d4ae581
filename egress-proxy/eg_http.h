/*
 * HTTP/1.x request head parsing for the proxy: the request line, the
 * Host header, and which hop-by-hop headers to drop.  Pure, bounded by
 * the caller's buffer (EG_HTTP_MAX_HEAD), strict: CRLF line ends, no
 * obsolete line folding, one Host header, tokens as RFC 9110 says, at
 * most one Content-Length (digits only) and never with Transfer-Encoding.
 */
#ifndef EG_HTTP_H
#define EG_HTTP_H

#include <stddef.h>

#define EG_HTTP_MAX_HEAD     (16 * 1024)
#define EG_HTTP_MAX_HEADERS  100

typedef struct {
    const char  *p;
    size_t       len;
} eg_str_t;

typedef enum {
    EG_HTTP_FORM_ORIGIN = 0,     /* "/path" (transparent mode) */
    EG_HTTP_FORM_ABSOLUTE,       /* "http://host[:port]/path" */
    EG_HTTP_FORM_AUTHORITY       /* "host:port" (CONNECT) */
} eg_http_form_t;

typedef struct {
    eg_str_t        method;
    eg_str_t        target;
    int             minor;          /* HTTP/1.<minor> */
    eg_http_form_t  form;
    eg_str_t        authority;      /* from the target (absolute, CONNECT) */
    eg_str_t        path;           /* origin-form part of absolute-form */
    eg_str_t        host;           /* the Host header's value */
    int             host_count;
    int             has_cl;         /* Content-Length: content_length */
    unsigned long long  content_length;
    int             has_te;         /* Transfer-Encoding (any value) */
    size_t          head_len;       /* through the blank line */
    /* Header lines to drop when forwarding (hop-by-hop, proxy auth, and
     * Host, which the forwarder writes itself): offsets of [start, end)
     * including CRLF. */
    size_t          drop[EG_HTTP_MAX_HEADERS][2];
    unsigned        ndrop;
    size_t          headers_start;  /* offset of the first header line */
} eg_http_req_t;

/* Length of the head through CRLFCRLF, 0 if not complete yet. */
size_t eg_http_head_len(const char *buf, size_t len);

/* Parses a complete head of head_len bytes.  0 ok; -1 with *why. */
int eg_http_parse(const char *buf, size_t head_len, eg_http_req_t *r,
    const char **why);

#endif
