/*
 * Host canonicalization and allowlist matching.  Strict on purpose: a
 * host with anything but letters, digits, '-', '_' and dots, an empty
 * or over-long label, or a number-like last label that is not a valid
 * IPv4 literal is refused, never passed on to a resolver.
 */
#include <stdio.h>
#include <string.h>

#include "eg_allow.h"


static int
eg_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'
           || c == '_';
}


int
eg_host_parse(const char *s, size_t len, eg_host_t *h, const char **why)
{
    size_t  i, label = 0;
    int     r;
    char    c;

    memset(h, 0, sizeof(*h));

    if (len >= 2 && s[0] == '[') {
        if (s[len - 1] != ']') {
            *why = "unterminated IPv6 literal";
            return -1;
        }
        if (eg_addr_parse_literal(s + 1, len - 2, &h->addr) != 1
            || h->addr.family != AF_INET6)
        {
            *why = "invalid IPv6 literal";
            return -1;
        }
        h->is_literal = 1;
        eg_addr_format(&h->addr, h->host, sizeof(h->host));
        return 0;
    }

    if (len == 0 || len > EG_HOST_MAX + 1) {
        *why = len == 0 ? "empty host" : "host name too long";
        return -1;
    }

    r = eg_addr_parse_literal(s, len, &h->addr);
    if (r == -1) {
        *why = "invalid IP literal";
        return -1;
    }
    if (r == 1) {
        h->is_literal = 1;
        eg_addr_format(&h->addr, h->host, sizeof(h->host));
        return 0;
    }

    if (s[len - 1] == '.') {
        len--;
    }
    if (len == 0 || len > EG_HOST_MAX) {
        *why = len == 0 ? "empty host" : "host name too long";
        return -1;
    }

    for (i = 0; i < len; i++) {
        c = s[i];
        if (c >= 'A' && c <= 'Z') {
            c = (char) (c - 'A' + 'a');
        }
        if (c == '.') {
            if (label == 0) {
                *why = "empty label in host name";
                return -1;
            }
            label = 0;
        } else if (eg_name_char(c)) {
            if (++label > 63) {
                *why = "label longer than 63 bytes in host name";
                return -1;
            }
        } else {
            *why = "invalid character in host name";
            return -1;
        }
        h->host[i] = c;
    }
    h->host[len] = '\0';
    return 0;
}


static int
eg_port_parse(const char *s, size_t len, uint16_t *port)
{
    unsigned long  v = 0;
    size_t         i;

    if (len == 0 || len > 5) {
        return -1;
    }
    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        v = v * 10 + (unsigned long) (s[i] - '0');
    }
    if (v == 0 || v > 65535) {
        return -1;
    }
    *port = (uint16_t) v;
    return 0;
}


int
eg_hostport_parse(const char *s, size_t len, uint16_t default_port,
    eg_host_t *h, uint16_t *port, const char **why)
{
    const char  *colon = NULL;
    size_t       hlen, i;

    if (len > 0 && s[0] == '[') {
        const char  *rb = memchr(s, ']', len);
        if (rb == NULL) {
            *why = "unterminated IPv6 literal";
            return -1;
        }
        hlen = (size_t) (rb - s) + 1;
        if (hlen < len) {
            if (s[hlen] != ':') {
                *why = "junk after IPv6 literal";
                return -1;
            }
            colon = s + hlen;
        }
    } else {
        for (i = len; i > 0; i--) {
            if (s[i - 1] == ':') {
                colon = s + i - 1;
                break;
            }
        }
        if (colon != NULL && memchr(s, ':', (size_t) (colon - s)) != NULL) {
            *why = "IPv6 literal without brackets";
            return -1;
        }
        hlen = colon ? (size_t) (colon - s) : len;
    }

    if (colon != NULL) {
        if (eg_port_parse(colon + 1, len - (size_t) (colon + 1 - s), port)
            != 0)
        {
            *why = "invalid port";
            return -1;
        }
    } else if (default_port == 0) {
        *why = "port missing";
        return -1;
    } else {
        *port = default_port;
    }

    return eg_host_parse(s, hlen, h, why);
}


int
eg_allow_parse(const char *s, eg_allow_entry_t *e, char *err, size_t errlen)
{
    eg_host_t    h;
    const char  *why = NULL;
    size_t       len = strlen(s);
    int          wildcard = 0;
    uint16_t     port = 0;
    const char  *colon;

    memset(e, 0, sizeof(*e));

    if (len >= 2 && s[0] == '*' && s[1] == '.') {
        wildcard = 1;
        s += 2;
        len -= 2;
    }

    /* A port only after the host part: "[v6]:p", "name:p". */
    colon = NULL;
    if (len > 0 && s[0] == '[') {
        const char  *rb = memchr(s, ']', len);
        if (rb != NULL && (size_t) (rb - s) + 1 < len) {
            colon = rb + 1;
        }
    } else {
        colon = memchr(s, ':', len);
    }

    if (colon != NULL) {
        if (eg_hostport_parse(s, len, 0, &h, &port, &why) != 0) {
            snprintf(err, errlen, "allow entry \"%.300s\": %s", s, why);
            return -1;
        }
    } else if (eg_host_parse(s, len, &h, &why) != 0) {
        snprintf(err, errlen, "allow entry \"%.300s\": %s", s, why);
        return -1;
    }

    if (wildcard && h.is_literal) {
        snprintf(err, errlen, "allow entry \"*.%.300s\": a wildcard needs a "
                 "DNS name, not an IP literal", s);
        return -1;
    }

    if (wildcard && strchr(h.host, '.') == NULL) {
        snprintf(err, errlen, "allow entry \"*.%.300s\": a wildcard needs a "
                 "suffix of at least two labels", s);
        return -1;
    }

    memcpy(e->host, h.host, sizeof(e->host));
    e->wildcard = wildcard;
    e->port = port;
    return 0;
}


int
eg_allow_match(const eg_allow_entry_t *list, size_t n, const char *host,
    uint16_t port)
{
    size_t  i, hl = strlen(host), sl;

    for (i = 0; i < n; i++) {
        const eg_allow_entry_t  *e = &list[i];

        if (port != 0) {
            if (e->port == 0 ? (port != 80 && port != 443) : port != e->port) {
                continue;
            }
        }

        if (!e->wildcard) {
            if (strcmp(e->host, host) == 0) {
                return 1;
            }
            continue;
        }

        sl = strlen(e->host);
        if (hl > sl + 1 && host[hl - sl - 1] == '.'
            && memcmp(host + hl - sl, e->host, sl) == 0)
        {
            return 1;
        }
    }

    return 0;
}
