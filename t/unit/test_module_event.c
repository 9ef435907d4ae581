/*
 * The approval event a webhook receives (ngx_http_veto_sandbox_event.c):
 * the JSON body and its fields, the Slack body with everything an agent
 * controls escaped and cut, the bounds, and the signature against a
 * value computed outside the module (openssl dgst -hmac).
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>

#include "module_pool.h"
#include "ngx_http_veto_sandbox_event.h"


#define str(s)  { sizeof(s) - 1, (u_char *) s }


static void
event_init(ngx_http_veto_sandbox_event_t *ev, const char *summary)
{
    ngx_str_t  id = str("apr_0123456789abcdef0123456789abcdef");
    ngx_str_t  tenant = str("acme");
    ngx_str_t  agent = str("agent-1");
    ngx_str_t  action = str("sandbox.exec");
    ngx_str_t  sandbox = str("sb_00112233445566778899aabbccddeeff");
    ngx_str_t  hash = str("ab01ab01ab01ab01ab01ab01ab01ab01"
                          "ab01ab01ab01ab01ab01ab01ab01ab01");
    ngx_str_t  page = str("https://gw.example/review/");

    ngx_memzero(ev, sizeof(*ev));
    ev->id = id;
    ev->tenant = tenant;
    ev->agent = agent;
    ev->action = action;
    ev->sandbox = sandbox;
    ev->hash = hash;
    ev->page = page;
    ev->threshold = 2;
    ev->created = 1700000000;
    ev->expires = 1700000900;
    ev->summary.data = (u_char *) summary;
    ev->summary.len = strlen(summary);
}


static json_t *
load(ngx_str_t *s)
{
    json_t  *j;

    j = json_loadb((const char *) s->data, s->len, 0, NULL);
    assert_non_null(j);

    return j;
}


static void
test_json(void **state)
{
    json_t                         *j, *sum;
    ngx_str_t                       out;
    ngx_http_veto_sandbox_event_t   ev;

    event_init(&ev, "{\"action\":\"sandbox.exec\",\"argv\":[\"ls\"]}");

    assert_int_equal(ngx_http_veto_sandbox_event_json(pool, &ev, &out),
                     NGX_OK);
    j = load(&out);

    assert_string_equal(json_string_value(json_object_get(j, "type")),
                        "approval.requested");
    assert_string_equal(json_string_value(json_object_get(j, "id")),
                        "apr_0123456789abcdef0123456789abcdef");
    assert_string_equal(json_string_value(json_object_get(j, "tenant")),
                        "acme");
    assert_string_equal(json_string_value(json_object_get(j, "agent")),
                        "agent-1");
    assert_string_equal(json_string_value(json_object_get(j, "action")),
                        "sandbox.exec");
    assert_string_equal(json_string_value(json_object_get(j, "sandbox")),
                        "sb_00112233445566778899aabbccddeeff");
    assert_int_equal(json_integer_value(json_object_get(j, "threshold")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "created_at")),
                     1700000000);
    assert_int_equal(json_integer_value(json_object_get(j, "expires_at")),
                     1700000900);
    assert_string_equal(json_string_value(json_object_get(j, "link")),
                        "https://gw.example/review/#/approval/"
                        "apr_0123456789abcdef0123456789abcdef");

    sum = json_object_get(j, "summary");
    assert_true(json_is_object(sum));
    assert_string_equal(json_string_value(json_array_get(
                            json_object_get(sum, "argv"), 0)), "ls");

    json_decref(j);

    /* no sandbox, no page: nulls, not missing keys */
    ev.sandbox.len = 0;
    ev.page.len = 0;

    assert_int_equal(ngx_http_veto_sandbox_event_json(pool, &ev, &out),
                     NGX_OK);
    j = load(&out);
    assert_true(json_is_null(json_object_get(j, "sandbox")));
    assert_true(json_is_null(json_object_get(j, "link")));
    json_decref(j);
}


static void
test_json_bounds(void **state)
{
    char                           *big;
    size_t                          n;
    json_t                         *j, *sum;
    ngx_str_t                       out;
    ngx_http_veto_sandbox_event_t   ev;

    /* a summary over the limit is left out, with its size */
    n = NGX_HTTP_VSB_EVENT_MAX_SUMMARY + 100;
    big = malloc(n + 1);
    assert_non_null(big);
    memcpy(big, "{\"argv\":[\"", 10);
    memset(big + 10, 'a', n - 13);
    memcpy(big + n - 3, "\"]}", 4);

    event_init(&ev, big);

    assert_int_equal(ngx_http_veto_sandbox_event_json(pool, &ev, &out),
                     NGX_OK);
    assert_true(out.len <= NGX_HTTP_VSB_EVENT_MAX);
    j = load(&out);
    sum = json_object_get(j, "summary");
    assert_true(json_is_true(json_object_get(sum, "omitted")));
    assert_int_equal(json_integer_value(json_object_get(sum, "bytes")),
                     (json_int_t) n);
    json_decref(j);
    free(big);

    /* a summary that is not JSON: omitted as well, never passed on */
    event_init(&ev, "{not json");
    assert_int_equal(ngx_http_veto_sandbox_event_json(pool, &ev, &out),
                     NGX_OK);
    j = load(&out);
    assert_true(json_is_true(json_object_get(json_object_get(j, "summary"),
                                             "omitted")));
    json_decref(j);

    /* names that are not UTF-8 make no event (no invalid JSON leaves) */
    event_init(&ev, "{}");
    ev.agent.data = (u_char *) "bad\xff";
    ev.agent.len = 4;
    assert_int_equal(ngx_http_veto_sandbox_event_json(pool, &ev, &out),
                     NGX_ERROR);
}


static const char *
slack_text(ngx_http_veto_sandbox_event_t *ev)
{
    static char  buf[16384];
    json_t      *j;
    ngx_str_t    out;
    const char  *t;

    assert_int_equal(ngx_http_veto_sandbox_event_slack(pool, ev, &out),
                     NGX_OK);
    j = load(&out);
    assert_int_equal(json_object_size(j), 1);
    t = json_string_value(json_object_get(j, "text"));
    assert_non_null(t);
    assert_true(strlen(t) < sizeof(buf));
    strcpy(buf, t);
    json_decref(j);

    return buf;
}


static void
test_slack(void **state)
{
    const char                     *t;
    ngx_http_veto_sandbox_event_t   ev;

    event_init(&ev, "{\"argv\":[\"sh\",\"-c\",\"echo <!channel> `id` & "
                    "<https://evil.example|x>\"],"
                    "\"network\":{\"hosts\":[\"a.example:443\","
                    "\"b.example\"]}}");
    ev.agent.data = (u_char *) "agent<!here>`";
    ev.agent.len = sizeof("agent<!here>`") - 1;

    t = slack_text(&ev);

    assert_non_null(strstr(t, "*Approval requested*: `sandbox.exec` by agent "
                              "`agent&lt;!here&gt;'` of tenant `acme` on "
                              "sandbox `sb_00112233445566778899aabbccddeeff`"));
    assert_non_null(strstr(t, "\nargv: `sh -c 'echo &lt;!channel&gt; 'id' "
                              "&amp; &lt;https://evil.example|x&gt;'`"));
    assert_non_null(strstr(t, "\nhosts: `a.example:443,b.example`"));
    assert_non_null(strstr(t, "\nExpires <!date^1700000900^"
                              "{date_short_pretty} {time}|"
                              "2023-11-14 22:28:20 UTC>. "));
    assert_non_null(strstr(t, "<https://gw.example/review/#/approval/"
                              "apr_0123456789abcdef0123456789abcdef|Review "
                              "apr_0123456789abcdef0123456789abcdef>"));
    assert_null(strstr(t, "<!channel>"));
    assert_null(strstr(t, "<!here>"));
    assert_null(strstr(t, "<https://evil"));

    /* control characters as spaces; no page: the id, no link */
    event_init(&ev, "{\"path\":\"/tmp/a\\nb\\u0007c\"}");
    ev.page.len = 0;
    t = slack_text(&ev);
    assert_non_null(strstr(t, "\npath: `/tmp/a b c`"));
    assert_non_null(strstr(t, "Review apr_0123456789abcdef0123456789abcdef "
                              "on the approval page."));
    assert_null(strchr(t, '\a'));
}


static void
test_slack_cut(void **state)
{
    char                           *summary, *p;
    const char                     *t, *argv;
    size_t                          i, len;
    ngx_http_veto_sandbox_event_t   ev;

    /* a long argv of two-byte characters: cut on a character boundary,
     * with "…" */
    summary = malloc(4096);
    assert_non_null(summary);
    p = summary + sprintf(summary, "{\"argv\":[\"");

    for (i = 0; i < 400; i++) {
        p += sprintf(p, "\xc3\xa9");                  /* "é" */
    }

    strcpy(p, "\"]}");
    event_init(&ev, summary);

    t = slack_text(&ev);
    argv = strstr(t, "\nargv: `");
    assert_non_null(argv);
    argv += 8;
    p = strchr(argv, '`');
    assert_non_null(p);
    len = p - argv;
    assert_true(len <= NGX_HTTP_VSB_EVENT_SLACK_FIELD);
    assert_int_equal(len % 2, 0);
    assert_memory_equal(p + 1, "\xe2\x80\xa6", 3);

    free(summary);
}


static void
test_sign(void **state)
{
    u_char      buf[NGX_HTTP_VSB_EVENT_SIG_LEN], *last;
    ngx_str_t   secret = str("whsec-0123456789abcdef");
    ngx_str_t   body = str("{\"a\":1}");

    /* printf '1700000000.{"a":1}' | openssl dgst -sha256 \
     *     -hmac whsec-0123456789abcdef */
    last = ngx_http_veto_sandbox_event_sign(pool, buf, &secret, 1700000000,
                                            &body);
    assert_non_null(last);
    assert_int_equal(last - buf, sizeof("t=1700000000,v1=") - 1 + 64);
    assert_memory_equal(buf, "t=1700000000,v1=d77c78ac4da074c56908b55eac3035"
                             "8b2a7bfc573be4c76819af5102e8dcf939",
                        last - buf);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_json, pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_json_bounds, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_slack, pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_slack_cut, pool_setup,
                                        pool_teardown),
        cmocka_unit_test_setup_teardown(test_sign, pool_setup, pool_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
