/* Unit tests: credential bindings (the file's and the line's parsers, an
 * agent's binding from its parts, header and env
 * rules, values, placeholders, host and path matching, the rendered
 * header) and the intercepted request head and chunked framing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "eg_cred_parse.h"
#include "eg_ireq.h"


static int
parse(const char *line, eg_cred_binding_t *b, char *err)
{
    return eg_cred_binding_parse(line, b, err, 400);
}


static void
test_binding(void **state)
{
    eg_cred_binding_t  b;
    char               err[400];

    (void) state;
    assert_int_equal(parse("git-deploy host=git.example.test "
                           "template=\"Basic {{secret}}\" env=GIT_TOKEN "
                           "path=/org/", &b, err), 1);
    assert_string_equal(b.name, "git-deploy");
    assert_string_equal(b.host.host, "git.example.test");
    assert_int_equal(b.host.wildcard, 0);
    assert_int_equal(b.host.port, 443);
    assert_string_equal(b.header, "Authorization");
    assert_string_equal(b.tmpl, "Basic {{secret}}");
    assert_string_equal(b.env, "GIT_TOKEN");
    assert_string_equal(b.path, "/org/");

    assert_int_equal(parse("k host=*.Api.Test. header=X-Api-Key port=443 "
                           "template={{secret}} env=K", &b, err), 1);
    assert_string_equal(b.host.host, "api.test");
    assert_int_equal(b.host.wildcard, 1);
    assert_string_equal(b.header, "X-Api-Key");

    assert_int_equal(parse("   # a comment", &b, err), 0);
    assert_int_equal(parse("", &b, err), 0);

    /* refused, each with its reason */
    assert_int_equal(parse("Bad host=a.test template={{secret}} env=A", &b,
                           err), -1);
    assert_non_null(strstr(err, "credential name"));
    assert_int_equal(parse("a host=a.test env=A", &b, err), -1);
    assert_non_null(strstr(err, "required"));
    assert_int_equal(parse("a host=a.test template=x env=A", &b, err), -1);
    assert_non_null(strstr(err, "exactly once"));
    assert_int_equal(parse("a host=a.test template=\"{{secret}}{{secret}}\" "
                           "env=A", &b, err), -1);
    assert_int_equal(parse("a host=a.test:8443 template={{secret}} env=A",
                           &b, err), -1);
    assert_non_null(strstr(err, "without a port"));
    assert_int_equal(parse("a host=a.test port=80 template={{secret}} env=A",
                           &b, err), -1);
    assert_non_null(strstr(err, "443"));
    assert_int_equal(parse("a host=192.0.2.1 template={{secret}} env=A", &b,
                           err), -1);
    assert_non_null(strstr(err, "IP literal"));
    assert_int_equal(parse("a host=a.test template={{secret}} env=A "
                           "colour=red", &b, err), -1);
    assert_non_null(strstr(err, "unknown key"));
    assert_int_equal(parse("a host=a.test host=b.test template={{secret}} "
                           "env=A", &b, err), -1);
    assert_non_null(strstr(err, "twice"));
    assert_int_equal(parse("a host=a.test template=\"{{secret}} env=A", &b,
                           err), -1);
    assert_non_null(strstr(err, "closing quote"));
    assert_int_equal(parse("a host=a.test template={{secret}} env=A "
                           "path=nope", &b, err), -1);
    assert_int_equal(parse("a host=a.test template={{secret}} env=A "
                           "path=/a%2f", &b, err), -1);
    assert_int_equal(parse("a host=a.test template=\"x\x01{{secret}}\" env=A",
                           &b, err), -1);
    assert_non_null(strstr(err, "control byte"));
}


static void
test_bindings_file(void **state)
{
    static eg_cred_binding_t  out[EG_CRED_MAX];
    static char               big[EG_CRED_MAX * 64 + 64];
    char                      err[480];
    size_t                    n, i, k;

#define FILE_(s) eg_cred_bindings_parse(s, sizeof(s) - 1, out, &n, err,     \
                                        sizeof(err))
    (void) state;
    assert_int_equal(FILE_(""), 0);
    assert_int_equal(n, 0);
    assert_int_equal(FILE_("# only a comment\n\n"), 0);
    assert_int_equal(n, 0);
    /* the last line needs no newline */
    assert_int_equal(FILE_("a host=a.test template={{secret}} env=A\n"
                           "# b\n"
                           "b host=*.b.test header=X-Key template=k{{secret}} "
                           "env=B path=/v1/"), 0);
    assert_int_equal(n, 2);
    assert_string_equal(out[0].name, "a");
    assert_string_equal(out[1].name, "b");
    assert_string_equal(out[1].host.host, "b.test");
    assert_string_equal(out[1].path, "/v1/");

    /* refused, each naming its line */
    assert_int_equal(FILE_("a host=a.test template={{secret}} env=A\n"
                           "a host=b.test template={{secret}} env=B\n"), -1);
    assert_string_equal(err, "line 2: a is bound twice");
    assert_int_equal(FILE_("# x\nz host=a.test env=A\n"), -1);
    assert_non_null(strstr(err, "line 2: z: host, template and env"));
    assert_int_equal(FILE_("a host=a.test template={{secret}} env=A\0\n"),
                     -1);
    assert_string_equal(err, "a NUL byte in the file");
    assert_int_equal(FILE_("a host=a.test template={{secret}} env=A\r\n"),
                     -1);
    assert_non_null(strstr(err, "line 1: a control byte"));

    /* a line of EG_CRED_LINE_MAX bytes is read, one more is not */
    memset(big, '#', EG_CRED_LINE_MAX + 1);
    assert_int_equal(eg_cred_bindings_parse(big, EG_CRED_LINE_MAX, out, &n,
                                            err, sizeof(err)), 0);
    assert_int_equal(eg_cred_bindings_parse(big, EG_CRED_LINE_MAX + 1, out,
                                            &n, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "line 1: longer than"));

    /* EG_CRED_MAX bindings, and not one more */
    for (i = 0, k = 0; i <= EG_CRED_MAX; i++) {
        k += (size_t) snprintf(big + k, sizeof(big) - k, "c%zu host=a.test "
                               "template={{secret}} env=A\n", i);
        assert_true(k < sizeof(big));
        if (i == EG_CRED_MAX - 1) {
            assert_int_equal(eg_cred_bindings_parse(big, k, out, &n, err,
                                                    sizeof(err)), 0);
            assert_int_equal(n, EG_CRED_MAX);
            assert_string_equal(out[EG_CRED_MAX - 1].name, "c63");
        }
    }
    assert_int_equal(eg_cred_bindings_parse(big, k, out, &n, err,
                                            sizeof(err)), -1);
    assert_string_equal(err, "line 65: more than 64 bindings");
#undef FILE_
}


static void
test_header_env(void **state)
{
    static const char *const  bad[] = {
        "Host", "content-length", "Transfer-Encoding", "Connection",
        "Keep-Alive", "Proxy-Authorization", "proxy-anything", "Upgrade",
        "TE", "Trailer", "Cookie", "Expect", "Bad Name", "X:Y", "", NULL
    };
    static const char *const  bad_env[] = {
        "PATH", "HOME", "LD_PRELOAD", "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS",
        "REQUESTS_CA_BUNDLE", "GIT_SSL_CAINFO", "HTTPS_PROXY", "NODE_OPTIONS",
        "lower", "9LIVES", "A-B", "", NULL
    };
    const char  *why;
    size_t       i;

    (void) state;
    assert_int_equal(eg_cred_header_ok("Authorization", 13, &why), 0);
    assert_int_equal(eg_cred_header_ok("X-Api-Key", 9, &why), 0);
    for (i = 0; bad[i] != NULL; i++) {
        assert_int_equal(eg_cred_header_ok(bad[i], strlen(bad[i]), &why), -1);
    }
    assert_int_equal(eg_cred_env_ok("GIT_TOKEN", &why), 0);
    assert_int_equal(eg_cred_env_ok("_T9", &why), 0);
    for (i = 0; bad_env[i] != NULL; i++) {
        assert_int_equal(eg_cred_env_ok(bad_env[i], &why), -1);
    }
}


static void
test_value_placeholder(void **state)
{
    const char  *why;

    (void) state;
    assert_int_equal(eg_cred_value_ok((const unsigned char *) "ghp_abc 123",
                                      11, &why), 0);
    assert_int_equal(eg_cred_value_ok((const unsigned char *) "a\r\nb", 4,
                                      &why), -1);
    assert_non_null(strstr(why, "CR or LF"));
    assert_int_equal(eg_cred_value_ok((const unsigned char *) "a\nb", 3,
                                      &why), -1);
    assert_int_equal(eg_cred_value_ok((const unsigned char *) "a\tb", 3,
                                      &why), -1);
    assert_int_equal(eg_cred_value_ok((const unsigned char *) "a\0b", 3,
                                      &why), -1);
    assert_int_equal(eg_cred_value_ok((const unsigned char *) "\x7f", 1,
                                      &why), -1);
    assert_int_equal(eg_cred_value_ok((const unsigned char *) "\xc3\xa9", 2,
                                      &why), -1);
    assert_int_equal(eg_cred_value_ok((const unsigned char *) "", 0, &why),
                     -1);

    assert_true(eg_cred_placeholder_ok(
        "veto-cred-0123456789abcdef0123456789abcdef", 42));
    assert_false(eg_cred_placeholder_ok(
        "veto-cred-0123456789ABCDEF0123456789abcdef", 42));
    assert_false(eg_cred_placeholder_ok(
        "veto-cred-0123456789abcdef0123456789abcde", 41));
    assert_false(eg_cred_placeholder_ok(
        "veto-crex-0123456789abcdef0123456789abcdef", 42));
}


static void
test_match_render(void **state)
{
    eg_cred_binding_t  b;
    char               err[400], out[256];
    size_t             n;

    (void) state;
    assert_int_equal(parse("w host=*.a.test template=\"Bearer {{secret}}\" "
                           "env=W path=/v1/", &b, err), 1);
    assert_true(eg_cred_host_match(&b, "x.a.test"));
    assert_true(eg_cred_host_match(&b, "y.x.a.test"));
    assert_false(eg_cred_host_match(&b, "a.test"));     /* never the apex */
    assert_false(eg_cred_host_match(&b, "xa.test"));
    assert_false(eg_cred_host_match(&b, "x.a.test.evil"));

    assert_true(eg_cred_path_match(&b, "/v1/repos", 9));
    assert_true(eg_cred_path_match(&b, "/v1/a?x=/../", 12));
    assert_false(eg_cred_path_match(&b, "/v2/repos", 9));
    assert_false(eg_cred_path_match(&b, "/v1", 3));
    assert_false(eg_cred_path_match(&b, "/v1/../v2", 9));
    assert_false(eg_cred_path_match(&b, "/v1/./x", 7));
    assert_false(eg_cred_path_match(&b, "/v1/..", 6));
    assert_false(eg_cred_path_match(&b, "/v1/%2e%2e/v2", 13));
    assert_false(eg_cred_path_match(&b, "/v1/x%2Fy", 9));
    assert_false(eg_cred_path_match(&b, "/v1/x\\y", 7));

    n = eg_cred_render(&b, "s3cr3t", 6, out, sizeof(out));
    assert_int_equal(n, strlen("Authorization: Bearer s3cr3t\r\n"));
    assert_memory_equal(out, "Authorization: Bearer s3cr3t\r\n", n);
    assert_int_equal(eg_cred_render(&b, "s3cr3t", 6, out, 10), 0);
}


static void
test_ireq(void **state)
{
    static const char  head[] =
        "POST /v1/x HTTP/1.1\r\nHost: a.test\r\nauthorization: Bearer ph\r\n"
        "Transfer-Encoding: chunked\r\nX-Other: 1\r\n\r\n";
    eg_ireq_t    r;
    const char  *why, *drop[1] = { "Authorization" };
    eg_str_t     add[1] = { { "Authorization: Bearer real\r\n", 28 } };
    char         out[512];
    size_t       n;

    (void) state;
    assert_int_equal(eg_ireq_parse(head, sizeof(head) - 1, "a.test", &r,
                                   &why), 0);
    assert_int_equal(r.chunked, 1);
    assert_int_equal(r.target.len, 5);

    n = eg_ireq_rewrite(head, sizeof(head) - 1, drop, 1, add, 1, out,
                        sizeof(out));
    assert_true(n > 0);
    out[n] = '\0';
    assert_null(strstr(out, "Bearer ph"));
    assert_non_null(strstr(out, "\r\nX-Other: 1\r\nAuthorization: Bearer "
                                "real\r\n\r\n"));
    assert_int_equal(eg_ireq_rewrite(head, sizeof(head) - 1, drop, 1, add, 1,
                                     out, 40), 0);

#define BAD(h, host)                                                        \
    assert_int_equal(eg_ireq_parse(h, sizeof(h) - 1, host, &r, &why), -1)
    BAD("GET / HTTP/1.1\r\nHost: b.test\r\n\r\n", "a.test");
    BAD("GET / HTTP/1.1\r\nHost: a.test:8443\r\n\r\n", "a.test");
    BAD("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n", "a.test");
    BAD("GET / HTTP/1.0\r\nHost: a.test\r\n\r\n", "a.test");
    BAD("GET / HTTP/1.1\r\nHost: a.test\r\nUpgrade: h2c\r\n\r\n", "a.test");
    BAD("GET / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: gzip\r\n\r\n",
        "a.test");
    BAD("GET / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n"
        "Transfer-Encoding: chunked\r\n\r\n", "a.test");
    BAD("GET / HTTP/1.1\r\nHost: a.test\r\nHost: a.test\r\n\r\n", "a.test");
    BAD("GET / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 1\r\n"
        "Transfer-Encoding: chunked\r\n\r\n", "a.test");
#undef BAD
    {
        static const char  h443[] = "GET / HTTP/1.1\r\nHost: A.Test:443\r\n"
                                    "Content-Length: 7\r\n\r\n";
        assert_int_equal(eg_ireq_parse(h443, sizeof(h443) - 1, "a.test", &r,
                                       &why), 0);
    }
    assert_int_equal(r.content_length, 7);
}


static void
test_chunked(void **state)
{
    static const char  body[] = "5;ext=1\r\nhello\r\n0\r\nT: v\r\n\r\nNEXT";
    eg_chunk_t         st;
    const char        *why;
    ssize_t            n;
    size_t             i, total = 0;
    int                done = 0;

    (void) state;
    eg_chunk_init(&st);
    n = eg_chunk_feed(&st, (const unsigned char *) body, sizeof(body) - 1,
                      &done, &why);
    assert_int_equal(done, 1);
    assert_int_equal(n, sizeof(body) - 1 - 4);

    /* byte by byte, the same end */
    eg_chunk_init(&st);
    done = 0;
    for (i = 0; i < sizeof(body) - 1 && !done; i++) {
        done = 0;
        n = eg_chunk_feed(&st, (const unsigned char *) body + i, 1, &done,
                          &why);
        assert_true(n == 1);
        total += (size_t) n;
        if (done) {
            break;
        }
    }
    assert_int_equal(total, sizeof(body) - 1 - 4);

#define BADC(s)                                                             \
    eg_chunk_init(&st);                                                     \
    assert_int_equal(eg_chunk_feed(&st, (const unsigned char *) s,          \
                                   sizeof(s) - 1, &done, &why), -1)
    BADC("x\r\n");
    BADC("5\nhello");
    BADC("2\r\nabX\r\n");
    BADC("1234567890abcdef0\r\n");
    BADC("0\r\nT\x01: v\r\n\r\n");
#undef BADC
}


/* an agent's own binding, from the parts the helper and the proxy get */
static void
test_binding_from(void **state)
{
    eg_cred_binding_t  b;
    char               err[400];

    (void) state;
    assert_int_equal(eg_cred_binding_from("my-api", "API.example.test", NULL,
                                          "Bearer {{secret}}", "MY_TOKEN",
                                          NULL, &b, err, sizeof(err)), 0);
    assert_string_equal(b.host.host, "api.example.test");
    assert_string_equal(b.header, "Authorization");
    assert_string_equal(b.tmpl, "Bearer {{secret}}");
    assert_string_equal(b.path, "");
    assert_int_equal(eg_cred_binding_from("k", "*.x.test", "X-Api-Key",
                                          "{{secret}}", NULL, "/v1/", &b,
                                          err, sizeof(err)), 0);
    assert_int_equal(b.host.wildcard, 1);
    assert_string_equal(b.path, "/v1/");

    /* the file's rules hold; and no part smuggles a key in */
#define BADF(n, h, hd, t, e, p, why)                                         \
    assert_int_equal(eg_cred_binding_from(n, h, hd, t, e, p, &b, err,       \
                                          sizeof(err)), -1);                \
    assert_non_null(strstr(err, why))
    BADF("a", "a.test", "Host", "{{secret}}", "A", NULL, "header");
    BADF("a", "a.test", "Cookie", "{{secret}}", "A", NULL, "header");
    BADF("a", "a.test", NULL, "Bearer", "A", NULL, "exactly once");
    BADF("a", "1.2.3.4", NULL, "{{secret}}", "A", NULL, "IP literal");
    BADF("a", "a.test", NULL, "{{secret}}", "PATH", NULL, "env");
    BADF("a", "a.test", NULL, "{{secret}}", "A", "v1", "path");
    BADF("a", "a.test env=B", NULL, "{{secret}}", "A", NULL, "blank");
    BADF("a", "a.test", NULL, "{{secret}}\" path=\"/x", "A", NULL, "'\"'");
    BADF("a", "a.test", NULL, "{{secret}}\r\nX: 1", "A", NULL, "control");
    BADF("Bad", "a.test", NULL, "{{secret}}", "A", NULL, "credential name");
    BADF("", "a.test", NULL, "{{secret}}", "A", NULL, "credential name");
#undef BADF
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(test_binding),
        cmocka_unit_test(test_binding_from),
        cmocka_unit_test(test_bindings_file),
        cmocka_unit_test(test_header_env),
        cmocka_unit_test(test_value_placeholder),
        cmocka_unit_test(test_match_render),
        cmocka_unit_test(test_ireq),
        cmocka_unit_test(test_chunked),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
