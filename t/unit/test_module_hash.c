/*
 * The canonical request hash an approval is bound to (docs/approvals.md,
 * "Canonical request"), its canonical path and query, the one query
 * argument a route reads, and percent-decoding: two requests that hash
 * alike must name the same thing, and the hash must be the documented
 * one, computed here independently of the module.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <openssl/evp.h>

#include "module_pool.h"
#include "ngx_http_veto_sandbox_hash.h"


static ngx_str_t
str(const char *s)
{
    ngx_str_t  v;

    v.data = (u_char *) s;
    v.len = strlen(s);

    return v;
}


static void
assert_str(ngx_str_t *got, const char *want)
{
    char  buf[4096];

    assert_true(got->len < sizeof(buf));
    memcpy(buf, got->data, got->len);
    buf[got->len] = '\0';
    assert_string_equal(buf, want);
}


static char *
canon_query(const char *args)
{
    static char  buf[4096];
    ngx_str_t    in, out;

    in = str(args);
    assert_int_equal(ngx_http_veto_sandbox_hash_canon_query(pool, &in, &out),
                     NGX_OK);
    assert_true(out.len < sizeof(buf));
    memcpy(buf, out.data, out.len);
    buf[out.len] = '\0';

    return buf;
}


static void
test_canon_path(void **state)
{
    ngx_str_t  in, out;

    in = str("/v1/sandboxes/sb-1/files");
    assert_int_equal(ngx_http_veto_sandbox_hash_canon_path(pool, &in, &out),
                     NGX_OK);
    assert_str(&out, "/v1/sandboxes/sb-1/files");

    /* unreserved and '/' stay, everything else is %XX, upper case */
    in = str("/a b/~._-/%/\xc3\xa9?#");
    assert_int_equal(ngx_http_veto_sandbox_hash_canon_path(pool, &in, &out),
                     NGX_OK);
    assert_str(&out, "/a%20b/~._-/%25/%C3%A9%3F%23");

    in = str("");
    assert_int_equal(ngx_http_veto_sandbox_hash_canon_path(pool, &in, &out),
                     NGX_OK);
    assert_int_equal(out.len, 0);
}


static void
test_canon_query(void **state)
{
    /* sorted by name, then value, bytewise on the encoded forms */
    assert_string_equal(canon_query("b=2&a=1"), "a=1&b=2");
    assert_string_equal(canon_query("a=2&a=1&a=10"), "a=1&a=10&a=2");
    assert_string_equal(canon_query("B=1&a=1"), "B=1&a=1");

    /* empty parts dropped, a missing '=' is an empty value */
    assert_string_equal(canon_query("&&a=1&&b&"), "a=1&b=");
    assert_string_equal(canon_query(""), "");
    assert_string_equal(canon_query("="), "=");

    /* %XX decodes and re-encodes canonically, in names too */
    assert_string_equal(canon_query("%61=%41"), "a=A");
    assert_string_equal(canon_query("path=a%2fb"), "path=a%2Fb");
    assert_string_equal(canon_query("path=a/b"), "path=a%2Fb");

    /* '+' is not a space; a '%' that is not %XX stays a '%' */
    assert_string_equal(canon_query("q=a+b"), "q=a%2Bb");
    assert_string_equal(canon_query("q=%zz&r=%4"), "q=%25zz&r=%254");
    assert_string_equal(canon_query("q=%25zz"), "q=%25zz");

    /* only the first '=' splits */
    assert_string_equal(canon_query("a=b=c"), "a=b%3Dc");
}


static void
test_query_arg(void **state)
{
    ngx_str_t    args, v;
    const char  *why;

    args = str("path=src%2Fmain.sh");
    assert_int_equal(ngx_http_veto_sandbox_hash_query_arg(pool, &args, "path",
                                                          &v, &why), NGX_OK);
    assert_str(&v, "src/main.sh");
    assert_int_equal(v.data[v.len], '\0');

    args = str("&path=x&");
    assert_int_equal(ngx_http_veto_sandbox_hash_query_arg(pool, &args, "path",
                                                          &v, &why), NGX_OK);
    assert_str(&v, "x");

    /* the name is decoded as the hash decodes it */
    args = str("%70ath=x");
    assert_int_equal(ngx_http_veto_sandbox_hash_query_arg(pool, &args, "path",
                                                          &v, &why), NGX_OK);
    assert_str(&v, "x");

    args = str("path");
    assert_int_equal(ngx_http_veto_sandbox_hash_query_arg(pool, &args, "path",
                                                          &v, &why), NGX_OK);
    assert_int_equal(v.len, 0);

    args = str("");
    assert_int_equal(ngx_http_veto_sandbox_hash_query_arg(pool, &args, "path",
                                                          &v, &why),
                     NGX_DECLINED);

    /* what hashes alike but could name different files is refused */
    args = str("path=a&path=b");
    assert_int_equal(ngx_http_veto_sandbox_hash_query_arg(pool, &args, "path",
                                                          &v, &why),
                     NGX_ABORT);
    assert_string_equal(why, "the query argument is given more than once");

    args = str("PATH=b&path=a");
    assert_int_equal(ngx_http_veto_sandbox_hash_query_arg(pool, &args, "path",
                                                          &v, &why),
                     NGX_ABORT);
    assert_string_equal(why, "unknown query argument");

    args = str("path=%zz");
    assert_int_equal(ngx_http_veto_sandbox_hash_query_arg(pool, &args, "path",
                                                          &v, &why),
                     NGX_ABORT);

    args = str("pa%th=x");
    assert_int_equal(ngx_http_veto_sandbox_hash_query_arg(pool, &args, "path",
                                                          &v, &why),
                     NGX_ABORT);
}


/* several arguments (a write's path and mode): each once, the one at
 * fault named */
static void
test_query_args(void **state)
{
    size_t                        i;
    ngx_str_t                     args, at;
    const char                   *why;
    ngx_http_veto_sandbox_qarg_t  q[2];

    /* refused: the argument at fault ("": none is named), and why (NULL:
     * not checked); n, the arguments the route takes */
    static const struct {
        const char  *args;
        ngx_uint_t   n;
        const char  *at;
        const char  *why;
    } refused[] = {
        /* hashes like "mode=0644&mode=0755" either way round: refused */
        { "path=x&mode=0755&mode=0644", 2, "mode",
          "the query argument is given more than once" },
        { "path=x&%6Fwner=root", 2, "owner", "unknown query argument" },
        { "path=x&mode=%zz", 2, "mode", NULL },
        /* a name that does not decode names nothing */
        { "path=x&mo%zz=1", 2, "", NULL },
        /* a route that takes only path: mode is unknown there */
        { "path=x&mode=0755", 1, "mode", NULL },
    };

    q[0].name = "path";
    q[1].name = "mode";

    args = str("mode=0755&path=bin%2Frun.sh");
    assert_int_equal(ngx_http_veto_sandbox_hash_query_args(pool, &args, q, 2,
                                                           &why, &at),
                     NGX_OK);
    assert_str(&q[0].value, "bin/run.sh");
    assert_str(&q[1].value, "0755");
    assert_int_equal(q[1].value.data[q[1].value.len], '\0');
    assert_int_equal(at.len, 0);

    /* absent is not empty */
    args = str("path=x&mode");
    assert_int_equal(ngx_http_veto_sandbox_hash_query_args(pool, &args, q, 2,
                                                           &why, &at),
                     NGX_OK);
    assert_non_null(q[1].value.data);
    assert_int_equal(q[1].value.len, 0);

    args = str("path=x");
    assert_int_equal(ngx_http_veto_sandbox_hash_query_args(pool, &args, q, 2,
                                                           &why, &at),
                     NGX_OK);
    assert_null(q[1].value.data);

    for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        args = str(refused[i].args);
        assert_int_equal(ngx_http_veto_sandbox_hash_query_args(pool, &args, q,
                                                               refused[i].n,
                                                               &why, &at),
                         NGX_ABORT);

        if (refused[i].at[0] == '\0') {
            assert_int_equal(at.len, 0);

        } else {
            assert_str(&at, refused[i].at);
        }

        if (refused[i].why != NULL) {
            assert_string_equal(why, refused[i].why);
        }
    }
}


static void
test_pct_decode(void **state)
{
    u_char   buf[64], *end;
    u_char   in[] = "a%41%zz%4%%42";

    /* lenient: a '%' that is not %XX stays */
    end = ngx_http_veto_sandbox_pct_decode(buf, in, sizeof(in) - 1, 0);
    assert_non_null(end);
    assert_int_equal(end - buf, 9);
    assert_memory_equal(buf, "aA%zz%4%B", 9);

    /* strict: it fails */
    assert_null(ngx_http_veto_sandbox_pct_decode(buf, in, sizeof(in) - 1, 1));

    /* upper and lower case digits; a NUL byte decodes like any other */
    memcpy(in, "%2f%2F%00", 10);
    end = ngx_http_veto_sandbox_pct_decode(buf, in, 9, 1);
    assert_int_equal(end - buf, 3);
    assert_memory_equal(buf, "//\0", 3);

    /* in place */
    memcpy(in, "x%20y", 6);
    end = ngx_http_veto_sandbox_pct_decode(in, in, 5, 1);
    assert_int_equal(end - in, 3);
    assert_memory_equal(in, "x y", 3);
}


/* the hash as docs/approvals.md defines it, computed here */
static void
reference_hash(const char *method, const char *cpath, const char *cquery,
    const char *body, char *out)
{
    char           canon[8192];
    u_char         md[EVP_MAX_MD_SIZE], bmd[EVP_MAX_MD_SIZE];
    unsigned int   n;
    int            len, i;

    assert_int_equal(EVP_Digest(body, strlen(body), bmd, &n, EVP_sha256(),
                                NULL), 1);

    len = snprintf(canon, sizeof(canon), "veto-request-v1\n%s\n%s\n%s\n",
                   method, cpath, cquery);

    for (i = 0; i < 32; i++) {
        len += snprintf(canon + len, sizeof(canon) - len, "%02x", bmd[i]);
    }

    len += snprintf(canon + len, sizeof(canon) - len, "\n%zu\n",
                    strlen(body));

    assert_int_equal(EVP_Digest(canon, len, md, &n, EVP_sha256(), NULL), 1);

    for (i = 0; i < 32; i++) {
        sprintf(out + 2 * i, "%02x", md[i]);
    }
}


static void
module_hash(const char *method, const char *path, const char *args,
    ngx_chain_t *body, u_char *out)
{
    u_char     md[32];
    off_t      len;
    ngx_str_t  m, p, a;

    m = str(method);
    p = str(path);
    a = str(args);

    assert_int_equal(ngx_http_veto_sandbox_hash_body(body, md, &len,
                                                     ngx_cycle->log),
                     NGX_OK);
    assert_int_equal(ngx_http_veto_sandbox_hash_request(pool, &m, &p, &a, md,
                                                        len, NULL, out),
                     NGX_OK);
    assert_int_equal(out[NGX_HTTP_VSB_HASH_HEX_LEN], '\0');
}


static ngx_chain_t *
memory_chain(const char *s, size_t split)
{
    ngx_buf_t    *b;
    ngx_chain_t  *cl, **ll, *head;
    size_t        len, off, n;

    head = NULL;
    ll = &head;
    len = strlen(s);

    for (off = 0; off < len; off += n) {
        n = ngx_min(split, len - off);

        b = ngx_pcalloc(pool, sizeof(ngx_buf_t));
        cl = ngx_pcalloc(pool, sizeof(ngx_chain_t));
        assert_non_null(b);
        assert_non_null(cl);

        b->pos = (u_char *) s + off;
        b->last = b->pos + n;
        b->memory = 1;
        cl->buf = b;
        *ll = cl;
        ll = &cl->next;
    }

    return head;
}


static void
test_request_hash(void **state)
{
    char          want[65];
    u_char        got[65], again[65];
    const char   *body = "{\"argv\":[\"git\",\"push\"]}";

    reference_hash("POST", "/v1/sandboxes/sb-1/exec", "", body, want);
    module_hash("POST", "/v1/sandboxes/sb-1/exec", "",
                memory_chain(body, 1024), got);
    assert_string_equal((char *) got, want);

    /* the body's split across buffers does not matter */
    module_hash("POST", "/v1/sandboxes/sb-1/exec", "",
                memory_chain(body, 3), again);
    assert_string_equal((char *) again, want);

    /* an empty body is the digest of "" */
    reference_hash("GET", "/v1/sandboxes/sb-1/files", "path=a%2Fb", "", want);
    module_hash("GET", "/v1/sandboxes/sb-1/files", "path=a/b", NULL, got);
    assert_string_equal((char *) got, want);

    /* the same request written another way hashes alike ... */
    module_hash("GET", "/v1/sandboxes/sb-1/files", "&path=a%2fb", NULL,
                again);
    assert_string_equal((char *) again, (char *) got);

    /* ... and any change to what it names does not */
    module_hash("GET", "/v1/sandboxes/sb-1/files", "path=a%2Fc", NULL,
                again);
    assert_string_not_equal((char *) again, (char *) got);
    module_hash("HEAD", "/v1/sandboxes/sb-1/files", "path=a%2Fb", NULL,
                again);
    assert_string_not_equal((char *) again, (char *) got);
    module_hash("GET", "/v1/sandboxes/sb-2/files", "path=a%2Fb", NULL,
                again);
    assert_string_not_equal((char *) again, (char *) got);
}


/* an exec binds what its sandbox adds: a context line after the body */
static void
test_request_context(void **state)
{
    u_char     md[32], a[NGX_HTTP_VSB_HASH_HEX_LEN + 1],
               b[NGX_HTTP_VSB_HASH_HEX_LEN + 1],
               c[NGX_HTTP_VSB_HASH_HEX_LEN + 1],
               d[NGX_HTTP_VSB_HASH_HEX_LEN + 1];
    off_t      len;
    ngx_str_t  m, p, q, ctx1, ctx2, none;

    m = str("POST");
    p = str("/v1/sandboxes/sb-0123456789abcdef01234567/exec");
    q = str("");
    ctx1 = str("sandbox-env 44136fa355b3678a1146ad16f7e8649e"
               "94fb4fc21fe77e8310c060f61caaff8a");
    ctx2 = str("sandbox-env 0000000000000000000000000000000"
               "000000000000000000000000000000000");
    none = str("");

    assert_int_equal(ngx_http_veto_sandbox_hash_body(NULL, md, &len,
                                                     ngx_cycle->log),
                     NGX_OK);

    assert_int_equal(ngx_http_veto_sandbox_hash_request(pool, &m, &p, &q, md,
                                                        len, NULL, a), NGX_OK);
    assert_int_equal(ngx_http_veto_sandbox_hash_request(pool, &m, &p, &q, md,
                                                        len, &none, b), NGX_OK);
    assert_int_equal(ngx_http_veto_sandbox_hash_request(pool, &m, &p, &q, md,
                                                        len, &ctx1, c), NGX_OK);
    assert_int_equal(ngx_http_veto_sandbox_hash_request(pool, &m, &p, &q, md,
                                                        len, &ctx2, d), NGX_OK);

    assert_string_equal(a, b);          /* no context: the request alone */
    assert_string_not_equal(a, c);      /* the context is bound */
    assert_string_not_equal(c, d);      /* and which one */
}


static void
test_body_in_file(void **state)
{
    int           fd;
    char          path[] = "/tmp/veto-unit-hash-XXXXXX";
    u_char        md_mem[32], md_file[32];
    off_t         len_mem, len_file;
    ngx_buf_t    *b;
    ngx_file_t   *file;
    ngx_chain_t   cl;
    static char   big[100000];

    memset(big, 'x', sizeof(big) - 1);
    big[123] = '\n';

    fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(write(fd, "head", 4), 4);
    assert_int_equal(write(fd, big, sizeof(big) - 1), sizeof(big) - 1);

    /* a body spooled to a temp file at an offset: the same bytes */
    file = ngx_pcalloc(pool, sizeof(ngx_file_t));
    b = ngx_pcalloc(pool, sizeof(ngx_buf_t));
    file->fd = fd;
    file->log = ngx_cycle->log;
    b->in_file = 1;
    b->file = file;
    b->file_pos = 4;
    b->file_last = 4 + sizeof(big) - 1;
    cl.buf = b;
    cl.next = NULL;

    assert_int_equal(ngx_http_veto_sandbox_hash_body(&cl, md_file, &len_file,
                                                     ngx_cycle->log), NGX_OK);
    assert_int_equal(ngx_http_veto_sandbox_hash_body(memory_chain(big, 7000),
                                                     md_mem, &len_mem,
                                                     ngx_cycle->log), NGX_OK);
    assert_int_equal(len_file, sizeof(big) - 1);
    assert_int_equal(len_mem, len_file);
    assert_memory_equal(md_mem, md_file, 32);

    /* a file shorter than the buffer says fails, it is not cut short */
    b->file_last += 10;
    assert_int_equal(ngx_http_veto_sandbox_hash_body(&cl, md_file, &len_file,
                                                     ngx_cycle->log),
                     NGX_ERROR);

    close(fd);
}


/* the one lowercase-hex check every id, epoch, nonce and digest uses */
static void
test_hex_lower(void **state)
{
    static const u_char  all[] = "0123456789abcdef";
    u_char               one[2];
    unsigned             c;

    (void) state;

    assert_int_equal(ngx_http_veto_sandbox_hex_lower(all, 16), 1);
    assert_int_equal(ngx_http_veto_sandbox_hex_lower(all, 0), 1);

    /* every byte: only 0-9 and a-f pass */
    for (c = 0; c < 256; c++) {
        one[0] = (u_char) c;
        assert_int_equal(ngx_http_veto_sandbox_hex_lower(one, 1),
                         (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
    }

    /* uppercase, a NUL inside, the last byte */
    assert_int_equal(ngx_http_veto_sandbox_hex_lower((u_char *) "00aF", 4),
                     0);
    assert_int_equal(ngx_http_veto_sandbox_hex_lower((u_char *) "ab\0cd", 5),
                     0);
    assert_int_equal(ngx_http_veto_sandbox_hex_lower((u_char *) "abcdeg", 6),
                     0);
    assert_int_equal(ngx_http_veto_sandbox_hex_lower((u_char *) "abcdeg", 5),
                     1);

    /* a shorter NUL-terminated string is read up to its NUL only */
    assert_int_equal(ngx_http_veto_sandbox_hex_lower((u_char *) "abc", 64),
                     0);
}


/* RFC 8785 (JCS): the JSON body's canonical form */

static char *
jcs(const char *json)
{
    static char  buf[4096];
    ngx_str_t    out;

    assert_int_equal(ngx_http_veto_sandbox_jcs(pool, (u_char *) json,
                                               strlen(json), &out), NGX_OK);
    assert_true(out.len < sizeof(buf));
    memcpy(buf, out.data, out.len);
    buf[out.len] = '\0';

    return buf;
}


static void
test_jcs_rfc8785(void **state)
{
    /* RFC 8785 3.2.2 and 3.2.3, byte for byte */
    assert_string_equal(jcs(
        "{\n  \"numbers\": [333333333.33333329, 1E30, 4.50, 2e-3, "
        "0.000000000000000000000000001],\n"
        "  \"string\": \"\\u20ac$\\u000F\\u000aA'\\u0042\\u0022\\u005c\\\\"
        "\\\"\\/\",\n"
        "  \"literals\": [null, true, false]\n}"),
        "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,"
        "1e+30,4.5,0.002,1e-27],\"string\":\"\xe2\x82\xac$\\u000f\\nA'B"
        "\\\"\\\\\\\\\\\"/\"}");

    assert_string_equal(jcs(
        "{\"\\u20ac\": \"Euro Sign\", \"\\r\": \"Carriage Return\", "
        "\"\\ufb33\": \"Hebrew Letter Dalet With Dagesh\", \"1\": \"One\", "
        "\"\\ud83d\\ude00\": \"Emoji: Grinning Face\", "
        "\"\\u0080\": \"Control\", "
        "\"\\u00f6\": \"Latin Small Letter O With Diaeresis\"}"),
        "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\xc2\x80\":\"Control\","
        "\"\xc3\xb6\":\"Latin Small Letter O With Diaeresis\","
        "\"\xe2\x82\xac\":\"Euro Sign\","
        "\"\xf0\x9f\x98\x80\":\"Emoji: Grinning Face\","
        "\"\xef\xac\xb3\":\"Hebrew Letter Dalet With Dagesh\"}");

    /* escapes: only the minimal ones, \u00XX lower case; DEL and
     * non-ASCII stay raw */
    assert_string_equal(jcs("[\"\\b\\f\\n\\r\\t\\u0001\\u001F\\u007f\"]"),
                        "[\"\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\"]");
    assert_string_equal(jcs(" { \"b\" : [ 1 , { } , [ ] ] , \"a\" : \"\" } "),
                        "{\"a\":\"\",\"b\":[1,{},[]]}");
    /* integers exactly, also beyond 2^53 (the module reads 64 bits) */
    assert_string_equal(jcs("[-0, 0, 9007199254740993, -9223372036854775808]"),
                        "[0,0,9007199254740993,-9223372036854775808]");
    assert_string_equal(jcs("[1.0, 1e2, -0.0, 1E-7, 1e21, 1e20]"),
                        "[1,100,0,1e-7,1e+21,100000000000000000000]");
}


static void
test_jcs_numbers(void **state)
{
    /* RFC 8785 Appendix B: IEEE-754 bits and their ES form */
    static const struct {
        uint64_t     bits;
        const char  *es;
    } cases[] = {
        { 0x0000000000000000ULL, "0" },
        { 0x8000000000000000ULL, "0" },
        { 0x0000000000000001ULL, "5e-324" },
        { 0x8000000000000001ULL, "-5e-324" },
        { 0x7fefffffffffffffULL, "1.7976931348623157e+308" },
        { 0xffefffffffffffffULL, "-1.7976931348623157e+308" },
        { 0x4340000000000000ULL, "9007199254740992" },
        { 0xc340000000000000ULL, "-9007199254740992" },
        { 0x4430000000000000ULL, "295147905179352830000" },
        { 0x44b52d02c7e14af5ULL, "9.999999999999997e+22" },
        { 0x44b52d02c7e14af6ULL, "1e+23" },
        { 0x44b52d02c7e14af7ULL, "1.0000000000000001e+23" },
        { 0x444b1ae4d6e2ef4eULL, "999999999999999700000" },
        { 0x444b1ae4d6e2ef4fULL, "999999999999999900000" },
        { 0x444b1ae4d6e2ef50ULL, "1e+21" },
        { 0x3eb0c6f7a0b5ed8cULL, "9.999999999999997e-7" },
        { 0x3eb0c6f7a0b5ed8dULL, "0.000001" },
        { 0x41b3de4355555553ULL, "333333333.3333332" },
        { 0x41b3de4355555554ULL, "333333333.33333325" },
        { 0x41b3de4355555555ULL, "333333333.3333333" },
        { 0x41b3de4355555556ULL, "333333333.3333334" },
        { 0x41b3de4355555557ULL, "333333333.33333343" },
        { 0xbecbf647612f3696ULL, "-0.0000033333333333333333" },
        { 0x43143ff3c1cb0959ULL, "1424953923781206.2" },
    };
    u_char      out[40];
    double      d;
    size_t      i, n;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memcpy(&d, &cases[i].bits, sizeof(d));
        n = ngx_http_veto_sandbox_jcs_number(d, out);
        assert_true(n < sizeof(out));
        out[n] = '\0';
        assert_string_equal((char *) out, cases[i].es);
    }
}


static void
test_jcs_body(void **state)
{
    u_char       md1[32], md2[32], md3[32], want[32];
    off_t        len1, len2, len3;
    ngx_str_t    out;
    const char  *canon = "{\"argv\":[\"npm\",\"test\"],\"env\":{\"A\":\"1\"}}";
    const char  *a = "{\"argv\":[\"npm\",\"test\"],\"env\":{\"A\":\"1\"}}";
    const char  *b = "{ \"env\" : { \"A\" : \"1\" },\n  \"argv\" : "
                     "[ \"npm\", \"\\u0074est\" ] }";
    const char  *c = "{\"argv\":[\"npm\",\"test\"],\"env\":{\"A\":\"2\"}}";

    /* another spacing, key order and escape: the same digest, that of the
     * canonical bytes, and their length */
    assert_int_equal(ngx_http_veto_sandbox_hash_body_jcs(pool,
                         memory_chain(a, 5), 1 << 20, md1, &len1,
                         ngx_cycle->log), NGX_OK);
    assert_int_equal(ngx_http_veto_sandbox_hash_body_jcs(pool,
                         memory_chain(b, 7), 1 << 20, md2, &len2,
                         ngx_cycle->log), NGX_OK);
    assert_int_equal(ngx_http_veto_sandbox_hash_body_jcs(pool,
                         memory_chain(c, 64), 1 << 20, md3, &len3,
                         ngx_cycle->log), NGX_OK);
    assert_int_equal(EVP_Digest(canon, strlen(canon), want, NULL,
                                EVP_sha256(), NULL), 1);
    assert_memory_equal(md1, want, 32);
    assert_memory_equal(md2, want, 32);
    assert_int_equal(len1, strlen(canon));
    assert_int_equal(len2, strlen(canon));
    /* another value: another digest */
    assert_memory_not_equal(md3, want, 32);

    /* duplicate keys stay refused, in any nesting; not JSON either */
    assert_int_equal(ngx_http_veto_sandbox_hash_body_jcs(pool,
                         memory_chain("{\"a\":1,\"a\":1}", 3), 1 << 20,
                         md1, &len1, ngx_cycle->log), NGX_DECLINED);
    assert_int_equal(ngx_http_veto_sandbox_jcs(pool,
                         (u_char *) "{\"x\":{\"a\":1,\"a\":2}}", 19, &out),
                     NGX_DECLINED);
    assert_int_equal(ngx_http_veto_sandbox_jcs(pool, (u_char *) "{\"a\":", 5,
                                               &out), NGX_DECLINED);
    /* over the bound */
    assert_int_equal(ngx_http_veto_sandbox_hash_body_jcs(pool,
                         memory_chain(a, 5), 8, md1, &len1, ngx_cycle->log),
                     NGX_DECLINED);

    /* no body: the digest of no bytes, as before */
    assert_int_equal(ngx_http_veto_sandbox_hash_body_jcs(pool, NULL, 1 << 20,
                         md1, &len1, ngx_cycle->log), NGX_OK);
    assert_int_equal(EVP_Digest("", 0, want, NULL, EVP_sha256(), NULL), 1);
    assert_memory_equal(md1, want, 32);
    assert_int_equal(len1, 0);

    /* canonical is a fixed point */
    assert_string_equal(jcs(jcs(b)), canon);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_canon_path, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_canon_query, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_query_arg, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_query_args, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_pct_decode, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_request_hash, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_request_context, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_body_in_file, pool_setup,
                                        pool_teardown),
        cmocka_unit_test(test_hex_lower),
        cmocka_unit_test_setup_teardown(test_jcs_rfc8785, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_jcs_numbers, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_jcs_body, pool_setup,
                                        pool_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
