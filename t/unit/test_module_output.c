/*
 * An exec's output in the JSON reply (ngx_http_veto_sandbox_output.c):
 * UTF-8 as a JSON string unless escaping would make it larger than its
 * base64, which it then is; strict UTF-8 (no overlong forms, surrogates
 * or code points above U+10FFFF); what is written is what jansson reads
 * back, byte for byte; and the size is never above 4/3 of the input.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>

#include "ngx_core_stub.h"
#include "ngx_http_veto_sandbox_output.h"


/* o for data, written out; the caller frees *text */
static ngx_http_veto_sandbox_output_t
encode(const void *data, size_t len, char **text)
{
    u_char                          *end;
    ngx_http_veto_sandbox_output_t   o;

    o.data = (u_char *) data;
    o.len = len;

    ngx_http_veto_sandbox_output_choose(&o);

    assert_true(o.size <= ngx_base64_encoded_length(len));

    *text = malloc(o.size + 1);
    assert_non_null(*text);

    end = ngx_http_veto_sandbox_output_write((u_char *) *text, &o);
    assert_int_equal((size_t) (end - (u_char *) *text), o.size);
    (*text)[o.size] = '\0';

    return o;
}


/* what a JSON parser reads back from the written string */
static void
assert_reads_back(const void *data, size_t len, const char *text)
{
    char    *doc;
    size_t   n;
    json_t  *j;

    n = strlen(text);
    doc = malloc(n + 3);
    assert_non_null(doc);

    doc[0] = '"';
    memcpy(doc + 1, text, n);
    doc[n + 1] = '"';

    j = json_loadb(doc, n + 2, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    assert_non_null(j);
    assert_int_equal(json_string_length(j), len);
    assert_memory_equal(json_string_value(j), data, len);

    json_decref(j);
    free(doc);
}


static void
test_output_table(void **state)
{
    char    *text;
    size_t   i;

    ngx_http_veto_sandbox_output_t  o;

    static const struct {
        const char  *in;
        size_t       len;
        ngx_uint_t   base64;
        const char  *out;
    } cases[] = {
        { "", 0, 0, "" },
        { "hello\n", 6, 0, "hello\\n" },
        { "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, 0,
          "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80" },
        { "a/b\x7f", 4, 0, "a/b\x7f" },

        /* a tie goes to the string: 4 escaped, 4 as base64 */
        { "ab\"", 3, 0, "ab\\\"" },
        { "a\tb", 3, 0, "a\\tb" },

        /* escaping would be larger than base64 */
        { "\x01", 1, 1, "AQ==" },
        { "\t\t\t", 3, 1, "CQkJ" },
        { "\x00\x00\x00", 3, 1, "AAAA" },
        { "\"\"\"\"\"\"", 6, 1, "IiIiIiIi" },
        { "\\\\\\", 3, 1, "XFxc" },

        /* not UTF-8 */
        { "\xff\xfe\x00x", 4, 1, "//4AeA==" },
        { "\xc0\x80", 2, 1, "wIA=" },                  /* overlong NUL */
        { "\xe0\x80\xaf", 3, 1, "4ICv" },              /* overlong '/' */
        { "\xed\xa0\x80", 3, 1, "7aCA" },              /* surrogate */
        { "\xf4\x90\x80\x80", 4, 1, "9JCAgA==" },      /* above U+10FFFF */
        { "\xf5\x80\x80\x80", 4, 1, "9YCAgA==" },
        { "ab\xc3", 3, 1, "YWLD" },                    /* cut sequence */
        { "\x80x", 2, 1, "gHg=" },                     /* lone continuation */
        { "\xe2\x82x", 3, 1, "4oJ4" },
    };

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        o = encode(cases[i].in, cases[i].len, &text);

        if (o.base64 != cases[i].base64 || strcmp(text, cases[i].out) != 0)
        {
            fail_msg("case %zu: got %s \"%s\"", i,
                     o.base64 ? "base64" : "utf-8", text);
        }

        if (!o.base64) {
            assert_reads_back(cases[i].in, cases[i].len, text);
        }

        free(text);
    }
}


/* every byte value, alone and among text: what is chosen reads back */
static void
test_output_every_byte(void **state)
{
    char    *text;
    u_char   buf[64];
    size_t   c;

    ngx_http_veto_sandbox_output_t  o;

    for (c = 0; c < 256; c++) {
        memset(buf, 'a', sizeof(buf));
        buf[sizeof(buf) / 2] = (u_char) c;

        o = encode(buf, sizeof(buf), &text);

        assert_int_equal(o.base64, c >= 0x80);

        if (!o.base64) {
            assert_reads_back(buf, sizeof(buf), text);
            assert_true(ngx_http_veto_sandbox_output_verbatim(&o)
                        == (c >= 0x20 && c != '"' && c != '\\'));
        }

        free(text);
    }
}


/* the bound: 8 MiB of \x01 is 48 MiB escaped, 4/3 of it as base64 */
static void
test_output_bound(void **state)
{
    u_char  *big;
    char    *text;
    size_t   len;

    ngx_http_veto_sandbox_output_t  o;

    len = 8 * 1024 * 1024;
    big = malloc(len);
    assert_non_null(big);
    memset(big, 0x01, len);

    o = encode(big, len, &text);
    assert_true(o.base64);
    assert_int_equal(o.size, (len + 2) / 3 * 4);
    free(text);

    /* mostly text with a few escapes: stays text */
    memset(big, 'x', len);
    big[10] = '\n';
    big[len - 1] = '"';

    o = encode(big, len, &text);
    assert_false(o.base64);
    assert_int_equal(o.size, len + 2);
    assert_reads_back(big, len, text);
    free(text);

    free(big);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_output_table),
        cmocka_unit_test(test_output_every_byte),
        cmocka_unit_test(test_output_bound),
    };

    ngx_stub_init();

    return cmocka_run_group_tests(tests, NULL, NULL);
}
