/* Unit tests: the egress proxy's TLS ClientHello SNI parser, HTTP request
 * head parser and DNS query parser/answer builder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "eg_dns.h"
#include "eg_http.h"
#include "eg_sni.h"

static unsigned char  scratch[EG_SNI_MAX_HELLO];

/* A minimal ClientHello with optional server_name; returns its length. */
static size_t
hello(unsigned char *b, const char *name, int split)
{
    unsigned char  body[1024];
    size_t         n = 0, ext_start, nl = name ? strlen(name) : 0, len, off;

    body[n++] = 1;                     /* ClientHello */
    n += 3;                            /* length, later */
    body[n++] = 3; body[n++] = 3;      /* legacy_version */
    memset(body + n, 0xab, 32); n += 32;
    body[n++] = 0;                     /* session id */
    body[n++] = 0; body[n++] = 2; body[n++] = 0x13; body[n++] = 0x01;
    body[n++] = 1; body[n++] = 0;      /* compression */
    ext_start = n; n += 2;
    /* an unrelated extension first */
    body[n++] = 0; body[n++] = 0x0b; body[n++] = 0; body[n++] = 2;
    body[n++] = 1; body[n++] = 0;
    if (name) {
        body[n++] = 0; body[n++] = 0;
        body[n++] = 0; body[n++] = (unsigned char) (nl + 5);
        body[n++] = 0; body[n++] = (unsigned char) (nl + 3);
        body[n++] = 0;
        body[n++] = 0; body[n++] = (unsigned char) nl;
        memcpy(body + n, name, nl); n += nl;
    }
    body[ext_start] = (unsigned char) ((n - ext_start - 2) >> 8);
    body[ext_start + 1] = (unsigned char) (n - ext_start - 2);
    body[1] = 0; body[2] = (unsigned char) ((n - 4) >> 8);
    body[3] = (unsigned char) (n - 4);

    if (!split) {
        b[0] = 22; b[1] = 3; b[2] = 1; b[3] = (unsigned char) (n >> 8);
        b[4] = (unsigned char) n;
        memcpy(b + 5, body, n);
        return n + 5;
    }
    /* two records: 10 bytes, then the rest */
    len = 0;
    for (off = 0; off < n; ) {
        size_t  part = off == 0 ? 10 : n - off;
        b[len] = 22; b[len + 1] = 3; b[len + 2] = 1;
        b[len + 3] = (unsigned char) (part >> 8);
        b[len + 4] = (unsigned char) part;
        memcpy(b + len + 5, body + off, part);
        len += 5 + part;
        off += part;
    }
    return len;
}

static void
test_sni(void **state)
{
    unsigned char  b[2048];
    const char    *name, *why;
    size_t         nl, n, i;

    (void) state;
    n = hello(b, "registry.example.test", 0);
    assert_int_equal(eg_sni_parse(b, n, scratch, &name, &nl, &why), EG_SNI_FOUND);
    assert_int_equal(nl, 21);
    assert_memory_equal(name, "registry.example.test", 21);

    /* every prefix is NEED_MORE, never FOUND or ERROR */
    for (i = 0; i < n; i++) {
        assert_int_equal(eg_sni_parse(b, i, scratch, &name, &nl, &why),
                         EG_SNI_NEED_MORE);
    }

    n = hello(b, "a.test", 1);
    assert_int_equal(eg_sni_parse(b, n, scratch, &name, &nl, &why), EG_SNI_FOUND);
    assert_memory_equal(name, "a.test", 6);

    n = hello(b, NULL, 0);
    assert_int_equal(eg_sni_parse(b, n, scratch, &name, &nl, &why), EG_SNI_NONE);

    /* malformed: not handshake, bad record length, lying lengths */
    assert_int_equal(eg_sni_parse((const unsigned char *) "GET / HTTP/1.1",
                                  14, scratch, &name, &nl, &why), EG_SNI_ERROR);
    n = hello(b, "x.test", 0);
    b[3] = 0; b[4] = 0;
    assert_int_equal(eg_sni_parse(b, n, scratch, &name, &nl, &why), EG_SNI_ERROR);
    n = hello(b, "x.test", 0);
    b[n - 7] = 0xff;                   /* server_name length past the end */
    assert_int_equal(eg_sni_parse(b, n, scratch, &name, &nl, &why), EG_SNI_ERROR);
    n = hello(b, "x.test", 0);
    b[5] = 2;                          /* ServerHello, not ClientHello */
    assert_int_equal(eg_sni_parse(b, n, scratch, &name, &nl, &why), EG_SNI_ERROR);
    /* a handshake claiming more than the proxy accepts */
    n = hello(b, "x.test", 0);
    b[6] = 0x01;
    assert_int_equal(eg_sni_parse(b, n, scratch, &name, &nl, &why), EG_SNI_ERROR);
}

static int
parse(const char *s, eg_http_req_t *r, const char **why)
{
    size_t  hl = eg_http_head_len(s, strlen(s));

    if (hl == 0) {
        *why = "incomplete";
        return -2;
    }
    return eg_http_parse(s, hl, r, why);
}

static void
test_http(void **state)
{
    eg_http_req_t  r;
    const char    *why;

    (void) state;
    assert_int_equal(parse("GET http://a.test:8080/p?q=1 HTTP/1.1\r\n"
                           "Host: evil.test\r\nProxy-Connection: keep-alive\r\n"
                           "Accept: */*\r\n\r\n", &r, &why), 0);
    assert_int_equal(r.form, EG_HTTP_FORM_ABSOLUTE);
    assert_int_equal(r.authority.len, 11);
    assert_memory_equal(r.authority.p, "a.test:8080", 11);
    assert_memory_equal(r.path.p, "/p?q=1", 6);
    assert_int_equal(r.ndrop, 2);      /* Host (rewritten), Proxy-Connection */
    assert_int_equal(r.host_count, 1);
    assert_memory_equal(r.host.p, "evil.test", 9);
    assert_int_equal(r.minor, 1);

    assert_int_equal(parse("CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n",
                           &r, &why), 0);
    assert_int_equal(r.form, EG_HTTP_FORM_AUTHORITY);
    assert_memory_equal(r.authority.p, "a.test:443", 10);

    assert_int_equal(parse("GET /x HTTP/1.0\r\nHost:  a.test  \r\n\r\n", &r, &why), 0);
    assert_int_equal(r.form, EG_HTTP_FORM_ORIGIN);
    assert_int_equal(r.host.len, 6);
    assert_memory_equal(r.host.p, "a.test", 6);
    assert_int_equal(r.ndrop, 1);      /* Host: the forwarder writes it */

    /* the body's length: one Content-Length of digits, never with TE */
    assert_int_equal(parse("POST /x HTTP/1.1\r\nHost: a\r\n"
                           "Content-Length: 12\r\n\r\n", &r, &why), 0);
    assert_int_equal(r.has_cl, 1);
    assert_int_equal(r.content_length, 12);
    assert_int_equal(r.has_te, 0);
    assert_int_equal(parse("POST /x HTTP/1.1\r\nHost: a\r\n"
                           "Transfer-Encoding: chunked\r\n\r\n", &r, &why), 0);
    assert_int_equal(r.has_te, 1);
    assert_int_equal(parse("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n"
                           "Transfer-Encoding: chunked\r\n\r\n", &r, &why), -1);
    assert_int_equal(parse("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n"
                           "Content-Length: 1\r\n\r\n", &r, &why), -1);
    assert_int_equal(parse("POST /x HTTP/1.1\r\nHost: a\r\n"
                           "Content-Length: -1\r\n\r\n", &r, &why), -1);
    assert_int_equal(parse("POST /x HTTP/1.1\r\nHost: a\r\n"
                           "Content-Length: 1, 1\r\n\r\n", &r, &why), -1);
    assert_int_equal(parse("POST /x HTTP/1.1\r\nHost: a\r\n"
                           "Content-Length: 1234567890123456789\r\n\r\n",
                           &r, &why), -1);

    assert_int_equal(parse("GET http://a.test HTTP/1.1\r\n\r\n", &r, &why), 0);
    assert_memory_equal(r.path.p, "/", 1);

    /* refused */
    assert_int_equal(parse("GET /x HTTP/1.1\r\n\r\n", &r, &why), -1);
    assert_int_equal(parse("GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", &r, &why), -1);
    assert_int_equal(parse("GET https://a.test/ HTTP/1.1\r\n\r\n", &r, &why), -1);
    assert_int_equal(parse("GET http://u:p@a.test/ HTTP/1.1\r\n\r\n", &r, &why), -1);
    assert_int_equal(parse("GET http://a.test/ HTTP/2.0\r\n\r\n", &r, &why), -1);
    assert_int_equal(parse("GET http://a.test/ HTTP/1.1\r\nX: a\r\n b\r\n\r\n", &r, &why), -1);
    assert_int_equal(parse("G(T http://a.test/ HTTP/1.1\r\n\r\n", &r, &why), -1);
    assert_int_equal(parse("GET http://a.test/ HTTP/1.1\r\nX\x01: a\r\n\r\n", &r, &why), -1);
    assert_int_equal(parse("GET http://a.test/ HTTP/1.1\r\nX: a\x7f\r\n\r\n", &r, &why), -1);
    assert_int_equal(parse("GET  http://a.test/ HTTP/1.1\r\n\r\n", &r, &why), -1);
    assert_int_equal(parse("GET http://a.test/ HTTP/1.1\nX: a\r\n\r\n", &r, &why), -1);
    assert_int_equal(parse("GET http:// HTTP/1.1\r\n\r\n", &r, &why), -1);
    assert_int_equal(eg_http_head_len("GET / HTTP/1.1\r\nHost: a\r\n", 25), 0);
}

static size_t
query(unsigned char *q, const char *name, uint16_t type, int edns)
{
    size_t  n = 12;
    const char  *p = name, *dot;

    memset(q, 0, 12);
    q[0] = 0x12; q[1] = 0x34; q[2] = 0x01; q[5] = 1;
    if (edns) {
        q[11] = 1;
    }
    while (*p) {
        dot = strchr(p, '.');
        size_t  l = dot ? (size_t) (dot - p) : strlen(p);
        q[n++] = (unsigned char) l;
        memcpy(q + n, p, l);
        n += l;
        p += l + (dot ? 1 : 0);
    }
    q[n++] = 0;
    q[n++] = 0; q[n++] = (unsigned char) type; q[n++] = 0; q[n++] = 1;
    if (edns) {
        q[n++] = 0; q[n++] = 0; q[n++] = 41; q[n++] = 4; q[n++] = 0xd0;
        memset(q + n, 0, 6); n += 6;
    }
    return n;
}

static void
test_dns(void **state)
{
    unsigned char   q[600], a[EG_DNS_MAX_MSG];
    eg_dns_query_t  dq;
    int             rcode;
    const char     *why;
    size_t          n, an;
    const unsigned char  sentinel[4] = { 198, 18, 0, 1 };

    (void) state;
    n = query(q, "Registry.Example.Test", 1, 0);
    assert_int_equal(eg_dns_parse_query(q, n, &dq, &rcode, &why), 0);
    assert_string_equal(dq.name, "registry.example.test");
    assert_int_equal(dq.qtype, 1);
    an = eg_dns_build_answer(&dq, EG_DNS_NOERROR, sentinel, 5, 0, NULL, a, sizeof(a));
    assert_int_equal(an, n + 16);
    assert_int_equal(a[0], 0x12);
    assert_int_equal(a[3] & 0xf, 0);
    assert_int_equal(a[7], 1);                  /* one answer */
    assert_memory_equal(a + an - 4, sentinel, 4);

    n = query(q, "blocked.test", 28, 1);
    assert_int_equal(eg_dns_parse_query(q, n, &dq, &rcode, &why), 0);
    assert_true(dq.edns);
    an = eg_dns_build_answer(&dq, EG_DNS_NXDOMAIN, NULL, 0, EG_DNS_EDE_BLOCKED,
                             "blocked by Veto Sandbox egress policy", a, sizeof(a));
    assert_true(an > 0);
    assert_int_equal(a[3] & 0xf, 3);
    assert_int_equal(a[7], 0);
    assert_int_equal(a[11], 1);                 /* the OPT record */
    assert_non_null(memmem(a, an, "blocked by Veto", 15));

    /* refused shapes */
    assert_int_equal(eg_dns_parse_query(q, 5, &dq, &rcode, &why), -1);
    assert_int_equal(rcode, -1);
    n = query(q, "a.test", 1, 0);
    q[2] |= 0x80;                               /* a response */
    assert_int_equal(eg_dns_parse_query(q, n, &dq, &rcode, &why), -1);
    assert_int_equal(rcode, -1);
    n = query(q, "a.test", 1, 0);
    q[5] = 2;                                   /* two questions */
    assert_int_equal(eg_dns_parse_query(q, n, &dq, &rcode, &why), -1);
    assert_int_equal(rcode, EG_DNS_FORMERR);
    n = query(q, "a.test", 1, 0);
    q[12] = 0xc0;                               /* compression pointer */
    assert_int_equal(eg_dns_parse_query(q, n, &dq, &rcode, &why), -1);
    n = query(q, "a.test", 1, 0);
    q[12] = 60;                                 /* label past the end */
    assert_int_equal(eg_dns_parse_query(q, n, &dq, &rcode, &why), -1);
    n = query(q, "a.test", 1, 0);
    assert_int_equal(eg_dns_parse_query(q, n + 1, &dq, &rcode, &why), -1);
    n = query(q, "a.test", 1, 0);
    q[2] = 0x28;                                /* opcode UPDATE */
    assert_int_equal(eg_dns_parse_query(q, n, &dq, &rcode, &why), -1);
    assert_int_equal(rcode, EG_DNS_NOTIMP);
    assert_int_equal(eg_dns_build_error(q, n, EG_DNS_FORMERR, a, sizeof(a)), 12);
}

int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(test_sni),
        cmocka_unit_test(test_http),
        cmocka_unit_test(test_dns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
