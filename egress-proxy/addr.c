/*
 * Address classification.  The special ranges are those of the IANA
 * IPv4 and IPv6 special-purpose registries plus everything outside IPv6
 * global unicast (2000::/3).  IPv4 literals are read the way the
 * WHATWG URL standard and inet_aton() read them, so "2130706433",
 * "0x7f.1" and "0177.0.0.1" are all 127.0.0.1 here too: a sandbox
 * cannot hide an address from the classifier by spelling it oddly.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "eg_addr.h"

typedef struct {
    unsigned char  net[16];
    unsigned       prefix;
    const char    *name;
} eg_range_t;

static const eg_range_t  eg_v4_special[] = {
    { { 0, 0, 0, 0 }, 8, "this-network" },
    { { 10, 0, 0, 0 }, 8, "private" },
    { { 100, 64, 0, 0 }, 10, "cgnat" },
    { { 127, 0, 0, 0 }, 8, "loopback" },
    { { 169, 254, 0, 0 }, 16, "link-local" },
    { { 172, 16, 0, 0 }, 12, "private" },
    { { 192, 0, 0, 0 }, 24, "ietf-protocol" },
    { { 192, 0, 2, 0 }, 24, "documentation" },
    { { 192, 31, 196, 0 }, 24, "as112" },
    { { 192, 52, 193, 0 }, 24, "amt" },
    { { 192, 88, 99, 0 }, 24, "6to4-relay" },
    { { 192, 168, 0, 0 }, 16, "private" },
    { { 192, 175, 48, 0 }, 24, "as112" },
    { { 198, 18, 0, 0 }, 15, "benchmark" },
    { { 198, 51, 100, 0 }, 24, "documentation" },
    { { 203, 0, 113, 0 }, 24, "documentation" },
    { { 224, 0, 0, 0 }, 4, "multicast" },
    { { 240, 0, 0, 0 }, 4, "reserved" },
};

#define V6(a, b, c, d, e, f, g, h)                                          \
    { (a) >> 8, (a) & 0xff, (b) >> 8, (b) & 0xff, (c) >> 8, (c) & 0xff,     \
      (d) >> 8, (d) & 0xff, (e) >> 8, (e) & 0xff, (f) >> 8, (f) & 0xff,     \
      (g) >> 8, (g) & 0xff, (h) >> 8, (h) & 0xff }

/* Checked in order: the first match names the range. */
static const eg_range_t  eg_v6_special[] = {
    { V6(0, 0, 0, 0, 0, 0, 0, 0), 128, "unspecified" },
    { V6(0, 0, 0, 0, 0, 0, 0, 1), 128, "loopback" },
    { V6(0, 0, 0, 0, 0, 0xffff, 0, 0), 96, "ipv4-mapped" },
    { V6(0, 0, 0, 0, 0xffff, 0, 0, 0), 96, "ipv4-translated" },
    { V6(0, 0, 0, 0, 0, 0, 0, 0), 96, "ipv4-compatible" },
    { V6(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96, "nat64" },
    { V6(0x64, 0xff9b, 1, 0, 0, 0, 0, 0), 48, "nat64" },
    { V6(0x100, 0, 0, 0, 0, 0, 0, 0), 64, "discard" },
    { V6(0x2001, 0, 0, 0, 0, 0, 0, 0), 32, "teredo" },
    { V6(0x2001, 0x2, 0, 0, 0, 0, 0, 0), 48, "benchmark" },
    { V6(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32, "documentation" },
    { V6(0x2001, 0, 0, 0, 0, 0, 0, 0), 23, "ietf-protocol" },
    { V6(0x2002, 0, 0, 0, 0, 0, 0, 0), 16, "6to4" },
    { V6(0x3fff, 0, 0, 0, 0, 0, 0, 0), 20, "documentation" },
    { V6(0x5f00, 0, 0, 0, 0, 0, 0, 0), 16, "srv6" },
    { V6(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7, "unique-local" },
    { V6(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10, "link-local" },
    { V6(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10, "site-local" },
    { V6(0xff00, 0, 0, 0, 0, 0, 0, 0), 8, "multicast" },
};


static int
eg_prefix_match(const unsigned char *net, const unsigned char *a,
    unsigned prefix)
{
    unsigned       full = prefix / 8, rest = prefix % 8;
    unsigned char  mask;

    if (memcmp(net, a, full) != 0) {
        return 0;
    }

    if (rest == 0) {
        return 1;
    }

    mask = (unsigned char) (0xff << (8 - rest));
    return (net[full] & mask) == (a[full] & mask);
}


const char *
eg_addr_special(const eg_addr_t *a)
{
    size_t  i;

    if (a->family == AF_INET) {
        for (i = 0; i < sizeof(eg_v4_special) / sizeof(eg_v4_special[0]);
             i++)
        {
            if (eg_prefix_match(eg_v4_special[i].net, a->a,
                                eg_v4_special[i].prefix))
            {
                return eg_v4_special[i].name;
            }
        }
        return NULL;
    }

    if (a->family != AF_INET6) {
        return "unknown-family";
    }

    for (i = 0; i < sizeof(eg_v6_special) / sizeof(eg_v6_special[0]); i++) {
        if (eg_prefix_match(eg_v6_special[i].net, a->a,
                            eg_v6_special[i].prefix))
        {
            return eg_v6_special[i].name;
        }
    }

    /* Only 2000::/3 is global unicast; everything else is reserved. */
    if ((a->a[0] & 0xe0) != 0x20) {
        return "reserved";
    }

    return NULL;
}


/* One part of an IPv4 literal, inet_aton style.  -1 if not a number. */
static int
eg_v4_part(const char *s, size_t len, uint64_t *out)
{
    unsigned  base = 10;
    uint64_t  v = 0;
    size_t    i = 0;
    unsigned  d;
    char      c;

    if (len == 0) {
        return -1;
    }

    if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        i = 2;
    } else if (len >= 2 && s[0] == '0') {
        base = 8;
        i = 1;
    }

    for (; i < len; i++) {
        c = s[i];
        if (c >= '0' && c <= '9') {
            d = (unsigned) (c - '0');
        } else if (base == 16 && c >= 'a' && c <= 'f') {
            d = (unsigned) (c - 'a' + 10);
        } else if (base == 16 && c >= 'A' && c <= 'F') {
            d = (unsigned) (c - 'A' + 10);
        } else {
            return -1;
        }

        if (d >= base) {
            return -1;
        }

        v = v * base + d;
        if (v > 0xffffffffULL) {
            return -1;
        }
    }

    *out = v;
    return 0;
}


/* WHATWG "ends in a number": the last label (after a trailing dot is
 * dropped) is all digits, or 0x followed by hex digits. */
static int
eg_ends_in_number(const char *s, size_t len)
{
    size_t  start, i;

    if (len > 0 && s[len - 1] == '.') {
        len--;
    }

    start = len;
    while (start > 0 && s[start - 1] != '.') {
        start--;
    }

    if (start == len) {
        return 0;
    }

    for (i = start; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            break;
        }
    }
    if (i == len) {
        return 1;
    }

    if (len - start >= 2 && s[start] == '0'
        && (s[start + 1] == 'x' || s[start + 1] == 'X'))
    {
        for (i = start + 2; i < len; i++) {
            if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')
                  || (s[i] >= 'A' && s[i] <= 'F')))
            {
                return 0;
            }
        }
        return 1;
    }

    return 0;
}


static int
eg_parse_v4(const char *s, size_t len, eg_addr_t *out)
{
    uint64_t  parts[4], v;
    size_t    n = 0, start = 0, i;

    if (len > 0 && s[len - 1] == '.') {
        len--;
    }

    for (i = 0; i <= len; i++) {
        if (i == len || s[i] == '.') {
            if (n == 4 || eg_v4_part(s + start, i - start, &parts[n]) != 0) {
                return -1;
            }
            n++;
            start = i + 1;
        }
    }

    if (n == 0) {
        return -1;
    }

    for (i = 0; i + 1 < n; i++) {
        if (parts[i] > 255) {
            return -1;
        }
    }

    if (parts[n - 1] >= (1ULL << (8 * (5 - n)))) {
        return -1;
    }

    v = parts[n - 1];
    for (i = 0; i + 1 < n; i++) {
        v += parts[i] << (8 * (3 - i));
    }

    memset(out, 0, sizeof(*out));
    out->family = AF_INET;
    out->a[0] = (unsigned char) (v >> 24);
    out->a[1] = (unsigned char) (v >> 16);
    out->a[2] = (unsigned char) (v >> 8);
    out->a[3] = (unsigned char) v;
    return 0;
}


int
eg_addr_parse_literal(const char *s, size_t len, eg_addr_t *out)
{
    char             buf[64];
    struct in6_addr  in6;

    if (len == 0 || memchr(s, '\0', len) != NULL) {
        return len == 0 ? 0 : -1;
    }

    if (memchr(s, ':', len) != NULL) {
        /* Only IPv6 has colons; zone ids and anything else: invalid. */
        if (len >= sizeof(buf)) {
            return -1;
        }
        memcpy(buf, s, len);
        buf[len] = '\0';
        if (inet_pton(AF_INET6, buf, &in6) != 1) {
            return -1;
        }
        memset(out, 0, sizeof(*out));
        out->family = AF_INET6;
        memcpy(out->a, &in6, 16);
        return 1;
    }

    if (!eg_ends_in_number(s, len)) {
        return 0;
    }

    return eg_parse_v4(s, len, out) == 0 ? 1 : -1;
}


int
eg_cidr_parse(const char *s, eg_cidr_t *out)
{
    const char     *slash;
    char            buf[64];
    size_t          alen;
    unsigned long   p = 0;
    const char     *q;
    struct in_addr  in4;
    struct in6_addr in6;

    memset(out, 0, sizeof(*out));
    slash = strchr(s, '/');
    alen = slash ? (size_t) (slash - s) : strlen(s);
    if (alen == 0 || alen >= sizeof(buf)) {
        return -1;
    }
    memcpy(buf, s, alen);
    buf[alen] = '\0';

    /* Operator ranges are written canonically: no odd spellings. */
    if (inet_pton(AF_INET, buf, &in4) == 1) {
        out->net.family = AF_INET;
        memcpy(out->net.a, &in4, 4);
        p = 32;
    } else if (inet_pton(AF_INET6, buf, &in6) == 1) {
        out->net.family = AF_INET6;
        memcpy(out->net.a, &in6, 16);
        p = 128;
    } else {
        return -1;
    }

    if (slash != NULL) {
        q = slash + 1;
        if (*q == '\0' || strlen(q) > 3) {
            return -1;
        }
        unsigned long  max = p;
        p = 0;
        for (; *q; q++) {
            if (*q < '0' || *q > '9') {
                return -1;
            }
            p = p * 10 + (unsigned long) (*q - '0');
        }
        if (p > max) {
            return -1;
        }
    }

    out->prefix = (unsigned) p;
    return 0;
}


int
eg_cidr_contains(const eg_cidr_t *c, const eg_addr_t *a)
{
    return c->net.family == a->family
           && eg_prefix_match(c->net.a, a->a, c->prefix);
}


int
eg_addr_equal(const eg_addr_t *x, const eg_addr_t *y)
{
    return x->family == y->family
           && memcmp(x->a, y->a, x->family == AF_INET ? 4 : 16) == 0;
}


void
eg_addr_format(const eg_addr_t *a, char *buf, size_t len)
{
    if (inet_ntop(a->family, a->a, buf, (socklen_t) len) == NULL) {
        snprintf(buf, len, "?");
    }
}


socklen_t
eg_addr_to_sockaddr(const eg_addr_t *a, uint16_t port,
    struct sockaddr_storage *ss)
{
    struct sockaddr_in   *s4 = (struct sockaddr_in *) ss;
    struct sockaddr_in6  *s6 = (struct sockaddr_in6 *) ss;

    memset(ss, 0, sizeof(*ss));
    if (a->family == AF_INET) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons(port);
        memcpy(&s4->sin_addr, a->a, 4);
        return sizeof(*s4);
    }

    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(port);
    memcpy(&s6->sin6_addr, a->a, 16);
    return sizeof(*s6);
}


int
eg_addr_from_sockaddr(const struct sockaddr *sa, eg_addr_t *a,
    uint16_t *port)
{
    memset(a, 0, sizeof(*a));
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in  *s4 = (const struct sockaddr_in *) sa;
        a->family = AF_INET;
        memcpy(a->a, &s4->sin_addr, 4);
        *port = ntohs(s4->sin_port);
        return 0;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6  *s6 = (const struct sockaddr_in6 *) sa;
        a->family = AF_INET6;
        memcpy(a->a, &s6->sin6_addr, 16);
        *port = ntohs(s6->sin6_port);
        return 0;
    }
    return -1;
}
