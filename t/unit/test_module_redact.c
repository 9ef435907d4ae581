/*
 * Redaction (ngx_http_veto_sandbox_redact.c): what audit records and
 * approval summaries keep of free text.  Secrets are hidden; what could
 * run something stays visible to the human who decides.  The summaries
 * themselves: test_module_summary.c.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>

#include "ngx_core_stub.h"
#include "ngx_http_veto_sandbox_redact.h"


static ngx_pool_t  *pool;


static int
setup(void **state)
{
    pool = ngx_create_pool(1024, ngx_stub_init());
    return pool == NULL;
}


static int
teardown(void **state)
{
    ngx_destroy_pool(pool);
    return 0;
}


static const char *
redact(const char *s)
{
    static char  buf[65536];
    ngx_str_t    in, out;

    in.data = (u_char *) s;
    in.len = strlen(s);

    assert_int_equal(ngx_http_veto_sandbox_redact(pool, &in, &out), NGX_OK);
    assert_true(out.len < sizeof(buf));
    assert_int_equal(out.data[out.len], '\0');

    memcpy(buf, out.data, out.len + 1);

    return buf;
}


static void
test_redact_table(void **state)
{
    size_t  i;

    static const char  *cases[][2] = {
        /* schemes */
        { "Authorization: Bearer abc.def",
          "Authorization: Bearer [redacted]" },
        { "curl -H 'authorization: bearer xyz' http://h",
          "curl -H 'authorization: bearer [redacted]' http://h" },
        { "Basic dXNlcjpwYXNz, then", "Basic [redacted], then" },

        /* anything shaped like a JWT */
        { "t eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln end",
          "t [redacted] end" },
        { "eyJonly.one", "eyJonly.one" },

        /* key=value, key: value, "key": "value" with a secret key */
        { "password=hunter2 next", "password=[redacted] next" },
        { "PASSWORD = hunter2", "PASSWORD = [redacted]" },
        { "{\"token\": \"abc\", \"user\": \"bob\"}",
          "{\"token\": \"[redacted]\", \"user\": \"bob\"}" },
        { "MY_API_KEY=k1&x=2", "MY_API_KEY=[redacted]&x=2" },
        { "mytoken=abc", "mytoken=[redacted]" },
        { "a=1;session_id=s;b=2", "a=1;session_id=[redacted];b=2" },
        { "aws_access_key: AKIAEXAMPLE", "aws_access_key: [redacted]" },
        { "'secret':'a\\'b' tail", "'secret':'[redacted]' tail" },

        /* what could run something stays in sight */
        { "password=\"$(curl x | sh)\"", "password=\"$(curl x | sh)\"" },
        { "token=`id`", "token=`id`" },
        { "Bearer $(cat /etc/key)", "Bearer $(cat /etc/key)" },

        /* and what is no secret is left alone */
        { "user=bob", "user=bob" },
        { "tokens are nice", "tokens are nice" },
        { "session:", "session:" },
        { "git push origin main", "git push origin main" },
        { "", "" },
    };

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_string_equal(redact(cases[i][0]), cases[i][1]);
    }
}


static void
test_redact_bounds(void **state)
{
    char        *in, *want;
    size_t       i, n;
    const char  *out;

    /* many short secrets: each grows to "[redacted]", within the output's
     * bound (ASan watches the buffer) */
    n = 1000;
    in = malloc(n * sizeof("token=a;"));
    want = malloc(n * sizeof("token=[redacted];"));
    assert_non_null(in);
    assert_non_null(want);
    in[0] = '\0';
    want[0] = '\0';

    for (i = 0; i < n; i++) {
        strcat(in, "token=a;");
        strcat(want, "token=[redacted];");
    }

    out = redact(in);
    assert_string_equal(out, want);

    free(in);
    free(want);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_redact_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redact_bounds, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
