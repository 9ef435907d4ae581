/*
 * Redaction and request summaries (ngx_http_veto_sandbox_redact.c): what
 * audit records and approval summaries keep of a request.  Secrets are
 * hidden; what could run something stays visible to the human who
 * decides; env values, metadata and a body's own "stdin" never appear.
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


static json_t *
summary(const char *action, const char *body, const char *in, size_t inlen,
    const char *path, off_t size, const char *sha)
{
    json_t     *b, *j;
    ngx_str_t   a, i, p, s, out;

    a.data = (u_char *) action;
    a.len = strlen(action);
    i.data = (u_char *) in;
    i.len = inlen;
    p.data = (u_char *) path;
    p.len = path ? strlen(path) : 0;
    s.data = (u_char *) sha;
    s.len = sha ? strlen(sha) : 0;

    b = body ? json_loads(body, 0, NULL) : NULL;
    assert_true(body == NULL || b != NULL);

    assert_int_equal(ngx_http_veto_sandbox_summary(pool, &a, b,
                                                   in ? &i : NULL,
                                                   path ? &p : NULL, size,
                                                   sha ? &s : NULL, &out),
                     NGX_OK);
    json_decref(b);

    j = json_loadb((char *) out.data, out.len, 0, NULL);
    assert_non_null(j);

    return j;
}


static void
test_summary_exec(void **state)
{
    json_t      *j, *names;
    char        *text;

    j = summary("sandbox.exec",
                "{\"argv\": [\"curl\", \"-H\", \"Authorization: Bearer abc\"],"
                " \"env\": {\"B\": \"two\", \"A\": \"one-secret\"},"
                " \"metadata\": {\"k\": \"v\"}, \"cwd\": \"/workspace\","
                " \"timeout_s\": 5, \"stdin\": \"from the body\"}",
                "echo hi", 7, NULL, -1, NULL);

    assert_string_equal(json_string_value(json_object_get(j, "action")),
                        "sandbox.exec");
    assert_string_equal(json_string_value(json_array_get(
                            json_object_get(j, "argv"), 2)),
                        "Authorization: Bearer [redacted]");
    assert_string_equal(json_string_value(json_object_get(j, "cwd")),
                        "/workspace");
    assert_int_equal(json_integer_value(json_object_get(j, "timeout_s")), 5);

    /* env: the names, never the values */
    names = json_object_get(j, "env_names");
    assert_int_equal(json_array_size(names), 2);
    assert_null(json_object_get(j, "env"));

    /* stdin: the frame's payload, not a field of the body */
    assert_string_equal(json_string_value(json_object_get(j, "stdin")),
                        "echo hi");
    assert_int_equal(json_integer_value(json_object_get(j, "stdin_bytes")), 7);
    assert_null(json_object_get(j, "stdin_truncated"));

    assert_null(json_object_get(j, "metadata"));
    assert_null(json_object_get(j, "path"));
    assert_null(json_object_get(j, "size"));

    text = json_dumps(j, 0);
    assert_null(strstr(text, "one-secret"));
    assert_null(strstr(text, "from the body"));
    assert_null(strstr(text, "\"v\""));
    free(text);

    json_decref(j);
}


static void
test_summary_stdin(void **state)
{
    json_t  *j;
    char     in[8192];

    /* 4 KiB of text kept; a cut inside a UTF-8 sequence backs off */
    memset(in, 'a', sizeof(in));
    memcpy(in + 4095, "\xc3\xa9", 2);

    j = summary("sandbox.exec", "{\"argv\": [\"sh\"]}", in, sizeof(in), NULL,
                -1, NULL);
    assert_int_equal(json_integer_value(json_object_get(j, "stdin_bytes")),
                     sizeof(in));
    assert_int_equal(json_string_length(json_object_get(j, "stdin")), 4095);
    assert_true(json_is_true(json_object_get(j, "stdin_truncated")));
    json_decref(j);

    /* bytes that are no text: only their number */
    j = summary("sandbox.exec", "{\"argv\": [\"sh\"]}", "\xff\xfe\x00x", 4,
                NULL, -1, NULL);
    assert_int_equal(json_integer_value(json_object_get(j, "stdin_bytes")), 4);
    assert_null(json_object_get(j, "stdin"));
    json_decref(j);
}


static void
test_summary_file(void **state)
{
    json_t      *j;
    const char  *sha =
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    j = summary("sandbox.files.write", NULL, NULL, 0,
                "conf/password=hunter2.txt", 0, sha);
    assert_string_equal(json_string_value(json_object_get(j, "path")),
                        "conf/password=[redacted]");
    assert_int_equal(json_integer_value(json_object_get(j, "size")), 0);
    assert_string_equal(json_string_value(json_object_get(j, "sha256")), sha);
    json_decref(j);

    /* a create: profile, limits, network kept; secrets in them hidden */
    j = summary("sandbox.create",
                "{\"profile\": \"default\", \"limits\": {\"memory_mb\": 64},"
                " \"network\": \"none\", \"ttl_s\": 60,"
                " \"metadata\": {\"token\": \"t\"},"
                " \"env\": [\"TOKEN=abc\", \"PLAIN\"]}",
                NULL, 0, NULL, -1, NULL);
    assert_string_equal(json_string_value(json_object_get(j, "profile")),
                        "default");
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(j, "limits"), "memory_mb")), 64);
    assert_string_equal(json_string_value(json_array_get(
                            json_object_get(j, "env_names"), 0)), "TOKEN");
    assert_string_equal(json_string_value(json_array_get(
                            json_object_get(j, "env_names"), 1)), "PLAIN");
    assert_null(json_object_get(j, "metadata"));
    json_decref(j);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_redact_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redact_bounds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_summary_exec, setup, teardown),
        cmocka_unit_test_setup_teardown(test_summary_stdin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_summary_file, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
