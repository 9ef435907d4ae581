/*
 * HTTP request head parser.  The proxy needs only the request line, Host
 * and the body's length; everything else is passed through untouched
 * except Host and hop-by-hop headers, which it drops (it writes its own
 * Host and Connection: close).
 */
#include <string.h>
#include <strings.h>

#include "eg_http.h"


size_t
eg_http_head_len(const char *buf, size_t len)
{
    size_t  i;

    for (i = 3; i < len; i++) {
        if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n'
            && buf[i - 3] == '\r')
        {
            return i + 1;
        }
    }
    return 0;
}


static int
eg_tchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
        || (c >= '0' && c <= '9'))
    {
        return 1;
    }
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}


static int
eg_vchar_or_ws(unsigned char c)
{
    return (c >= 0x21 && c != 0x7f) || c == ' ' || c == '\t';
}


static int
eg_str_ieq(eg_str_t s, const char *lit)
{
    size_t  n = strlen(lit);
    return s.len == n && strncasecmp(s.p, lit, n) == 0;
}


static eg_str_t
eg_trim(const char *p, size_t len)
{
    eg_str_t  s;

    while (len > 0 && (*p == ' ' || *p == '\t')) {
        p++;
        len--;
    }
    while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t')) {
        len--;
    }
    s.p = p;
    s.len = len;
    return s;
}


static int
eg_http_target(eg_http_req_t *r, const char **why)
{
    const char  *t = r->target.p, *slash;
    size_t       n = r->target.len, i;

    for (i = 0; i < n; i++) {
        if ((unsigned char) t[i] <= 0x20 || (unsigned char) t[i] == 0x7f) {
            *why = "control character in the request target";
            return -1;
        }
    }

    if (eg_str_ieq(r->method, "CONNECT")) {
        r->form = EG_HTTP_FORM_AUTHORITY;
        r->authority = r->target;
        return 0;
    }

    if (n > 0 && t[0] == '/') {
        r->form = EG_HTTP_FORM_ORIGIN;
        r->path = r->target;
        return 0;
    }

    if (n > 7 && strncasecmp(t, "http://", 7) == 0) {
        r->form = EG_HTTP_FORM_ABSOLUTE;
        r->authority.p = t + 7;
        slash = memchr(t + 7, '/', n - 7);
        /* "?" or "#" may also end the authority */
        for (i = 7; i < n && t[i] != '/' && t[i] != '?' && t[i] != '#'; i++) {
            /* nothing */
        }
        r->authority.len = i - 7;
        if (memchr(r->authority.p, '@', r->authority.len) != NULL) {
            *why = "userinfo in the request target";
            return -1;
        }
        if (i < n && t[i] == '/') {
            r->path.p = t + i;
            r->path.len = n - i;
        } else {
            r->path.p = "/";
            r->path.len = 1;
            (void) slash;
            if (i < n) {
                *why = "request target has a query but no path";
                return -1;
            }
        }
        if (r->authority.len == 0) {
            *why = "empty host in the request target";
            return -1;
        }
        return 0;
    }

    if (n > 8 && strncasecmp(t, "https://", 8) == 0) {
        *why = "https:// through the proxy: use CONNECT";
        return -1;
    }

    *why = "unsupported request target form";
    return -1;
}


int
eg_http_parse(const char *buf, size_t head_len, eg_http_req_t *r,
    const char **why)
{
    const char  *p = buf, *end = buf + head_len, *eol, *sp1, *sp2, *colon;
    size_t       nheaders = 0;
    eg_str_t     name, value;

    memset(r, 0, sizeof(*r));
    r->head_len = head_len;

    if (head_len < 4 || memcmp(end - 4, "\r\n\r\n", 4) != 0) {
        *why = "incomplete request head";
        return -1;
    }

    eol = memchr(p, '\r', (size_t) (end - p));
    if (eol == NULL || eol + 1 >= end || eol[1] != '\n') {
        *why = "request line not terminated by CRLF";
        return -1;
    }

    sp1 = memchr(p, ' ', (size_t) (eol - p));
    if (sp1 == NULL || sp1 == p) {
        *why = "malformed request line";
        return -1;
    }
    sp2 = memchr(sp1 + 1, ' ', (size_t) (eol - sp1 - 1));
    if (sp2 == NULL || sp2 == sp1 + 1) {
        *why = "malformed request line";
        return -1;
    }

    r->method.p = p;
    r->method.len = (size_t) (sp1 - p);
    for (size_t i = 0; i < r->method.len; i++) {
        if (!eg_tchar((unsigned char) p[i])) {
            *why = "invalid method";
            return -1;
        }
    }

    r->target.p = sp1 + 1;
    r->target.len = (size_t) (sp2 - sp1 - 1);

    if (eol - sp2 - 1 != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0
        || (sp2[8] != '0' && sp2[8] != '1'))
    {
        *why = "not an HTTP/1.0 or HTTP/1.1 request";
        return -1;
    }
    r->minor = sp2[8] - '0';

    if (eg_http_target(r, why) != 0) {
        return -1;
    }

    p = eol + 2;
    r->headers_start = (size_t) (p - buf);

    while (p < end - 2) {
        eol = memchr(p, '\r', (size_t) (end - p));
        if (eol == NULL || eol[1] != '\n') {
            *why = "header line not terminated by CRLF";
            return -1;
        }

        if (*p == ' ' || *p == '\t') {
            *why = "obsolete line folding in headers";
            return -1;
        }

        if (++nheaders > EG_HTTP_MAX_HEADERS) {
            *why = "too many header lines";
            return -1;
        }

        colon = memchr(p, ':', (size_t) (eol - p));
        if (colon == NULL || colon == p) {
            *why = "header line without a name";
            return -1;
        }

        name.p = p;
        name.len = (size_t) (colon - p);
        for (size_t i = 0; i < name.len; i++) {
            if (!eg_tchar((unsigned char) p[i])) {
                *why = "invalid character in a header name";
                return -1;
            }
        }

        for (const char *q = colon + 1; q < eol; q++) {
            if (!eg_vchar_or_ws((unsigned char) *q)) {
                *why = "control character in a header value";
                return -1;
            }
        }
        value = eg_trim(colon + 1, (size_t) (eol - colon - 1));

        if (eg_str_ieq(name, "Host")) {
            r->host = value;
            r->host_count++;
        }

        if (eg_str_ieq(name, "Content-Length")) {
            if (r->has_cl) {
                *why = "more than one Content-Length header";
                return -1;
            }
            if (value.len == 0 || value.len > 18) {
                *why = "Content-Length is not a number of at most 18 digits";
                return -1;
            }
            for (size_t i = 0; i < value.len; i++) {
                if (value.p[i] < '0' || value.p[i] > '9') {
                    *why = "Content-Length is not a number of at most 18 "
                           "digits";
                    return -1;
                }
                r->content_length = r->content_length * 10
                                    + (unsigned) (value.p[i] - '0');
            }
            r->has_cl = 1;
        }

        if (eg_str_ieq(name, "Transfer-Encoding")) {
            r->has_te = 1;
        }

        /* the forwarder writes Host itself (from the allowed authority) */
        if (eg_str_ieq(name, "Host")
            || eg_str_ieq(name, "Connection") || eg_str_ieq(name, "Keep-Alive")
            || eg_str_ieq(name, "Proxy-Connection")
            || eg_str_ieq(name, "Proxy-Authorization")
            || eg_str_ieq(name, "Proxy-Authenticate")
            || eg_str_ieq(name, "Upgrade") || eg_str_ieq(name, "TE"))
        {
            r->drop[r->ndrop][0] = (size_t) (p - buf);
            r->drop[r->ndrop][1] = (size_t) (eol + 2 - buf);
            r->ndrop++;
        }

        p = eol + 2;
    }

    if (r->host_count > 1) {
        *why = "more than one Host header";
        return -1;
    }

    if (r->has_cl && r->has_te) {
        *why = "both Content-Length and Transfer-Encoding";
        return -1;
    }

    if (r->form == EG_HTTP_FORM_ORIGIN && r->host_count == 0) {
        *why = "no Host header";
        return -1;
    }

    return 0;
}
