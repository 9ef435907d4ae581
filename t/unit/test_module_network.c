/*
 * The policy's network section (ngx_http_veto_sandbox_network.c): what
 * "nginx -t" refuses, naming the entry; how agents inherit and stay
 * within their tenant; which requested entries are allowed, askable or
 * refused (wildcards strictly below their suffix, ports 80 and 443 when
 * none is named); the "credentials" section and the names a request
 * attaches; and the byte bound of an exec's attempts in its audit
 * record (what an approval shows of the hosts: test_module_summary.c).
 */

#include "ngx_http_veto_sandbox_faces.h"
#include "ngx_http_veto_sandbox_network.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "module_policy_file.h"


static const char  *policy =
    "{\"version\": 1, \"tenants\": {"
    " \"acme\": {"
    "  \"network\": {\"allow\": [\"registry.example.test\","
    "                            \"*.example.test\", \"[2001:db8::1]:8443\","
    "                            \"files.test:443\", \"only80.test:80\"],"
    "               \"ask\": [\"askme.test\", \"*.ask.test:443\","
    "                         \"files.test:80\"],"
    "               \"default\": [\"registry.example.test\"]},"
    "  \"agents\": {"
    "   \"narrow\": {\"network\": {\"allow\": [\"registry.example.test\"],"
    "                              \"ask\": [\"a.example.test\"]}},"
    "   \"quiet\": {\"network\": {\"default\": \"none\"}},"
    "   \"same\": {}}},"
    " \"open\": {}}}";


/* NGX_OK / NGX_DECLINED / NGX_ERROR of one entry, and whether askable */
static ngx_int_t
classify(ngx_http_veto_sandbox_rule_t *r, const char *entry,
    ngx_uint_t *askable)
{
    char        why[256];
    size_t      bad;
    json_t     *e, *ask;
    ngx_int_t   rc;

    e = json_pack("[s]", entry);
    assert_non_null(e);

    rc = ngx_http_veto_sandbox_network_classify(pool, &r->net, e, &ask, &bad,
                                                why, sizeof(why));
    *askable = (ask != NULL);

    if (ask != NULL) {
        assert_int_equal(json_array_size(ask), 1);
        assert_string_equal(json_string_value(json_array_get(ask, 0)),
                            entry);
    }

    json_decref(e);

    return rc;
}


static void
decided(ngx_http_veto_sandbox_rule_t *r, const char *entry, ngx_int_t want,
    ngx_uint_t want_askable)
{
    ngx_int_t   rc;
    ngx_uint_t  askable;

    rc = classify(r, entry, &askable);

    if (rc != want || askable != want_askable) {
        fail_msg("\"%s\": %d%s, wanted %d%s", entry, (int) rc,
                 askable ? " askable" : "", (int) want,
                 want_askable ? " askable" : "");
    }
}


static void
test_classify(void **state)
{
    ngx_http_veto_sandbox_rule_t    *r, *n;
    ngx_http_veto_sandbox_policy_t  *p;

    p = load(policy);
    if (p == NULL) {
        fail_msg("%s", ngx_stub_last_error());
    }

    /* askable hosts wait for a human: Redis is needed */
    assert_true(p->needs_redis);

    r = rule(p, "acme", "someone");

    /* exact, any case, a trailing dot: as the proxy reads names */
    decided(r, "registry.example.test", NGX_OK, 0);
    decided(r, "Registry.Example.Test.", NGX_OK, 0);
    decided(r, "registry.example.test:443", NGX_OK, 0);
    decided(r, "registry.example.test:80", NGX_OK, 0);

    /* a wildcard: strictly below its suffix, nothing beside it */
    decided(r, "a.example.test", NGX_OK, 0);
    decided(r, "b.a.example.test:443", NGX_OK, 0);
    decided(r, "*.example.test", NGX_OK, 0);
    decided(r, "*.a.example.test", NGX_OK, 0);
    decided(r, "example.test", NGX_DECLINED, 0);
    decided(r, "evil-example.test", NGX_DECLINED, 0);
    decided(r, "example.test.evil", NGX_DECLINED, 0);
    decided(r, "aexample.test", NGX_DECLINED, 0);
    decided(r, "*.test", NGX_ERROR, 0);          /* one label: no */
    decided(r, "*.le.test", NGX_DECLINED, 0);
    decided(r, "a.example.test:8080", NGX_DECLINED, 0);

    /* an exact entry never covers a wildcard */
    decided(r, "*.registry.example.test", NGX_OK, 0);
    decided(r, "*.files.test", NGX_DECLINED, 0);

    /* IP literals in canonical form */
    decided(r, "[2001:db8::1]:8443", NGX_OK, 0);
    decided(r, "[2001:DB8:0::1]:8443", NGX_OK, 0);
    decided(r, "[2001:db8::1]:443", NGX_DECLINED, 0);
    decided(r, "10.0.0.1", NGX_DECLINED, 0);

    /* no port means 80 and 443: each must be covered */
    decided(r, "files.test:443", NGX_OK, 0);
    decided(r, "files.test", NGX_OK, 1);        /* 80 is askable */
    decided(r, "files.test:80", NGX_OK, 1);
    decided(r, "only80.test:80", NGX_OK, 0);
    decided(r, "only80.test", NGX_DECLINED, 0);  /* 443 is neither */

    /* askable */
    decided(r, "askme.test", NGX_OK, 1);
    decided(r, "askme.test:443", NGX_OK, 1);
    decided(r, "askme.test:22", NGX_DECLINED, 0);
    decided(r, "x.ask.test:443", NGX_OK, 1);
    decided(r, "x.ask.test", NGX_DECLINED, 0);   /* 80 is not askable */
    decided(r, "notallowed.test", NGX_DECLINED, 0);

    /* malformed: the proxy's parser says why */
    decided(r, "a b.test", NGX_ERROR, 0);
    decided(r, "a.test:99999", NGX_ERROR, 0);
    decided(r, "*.", NGX_ERROR, 0);
    decided(r, "", NGX_ERROR, 0);
    decided(r, "*.1.2.3.4", NGX_ERROR, 0);

    /* the default, and the ask list for the helper */
    assert_non_null(r->net.def);
    assert_int_equal(json_array_size(r->net.def), 1);
    assert_int_equal(json_array_size(r->net.ask_json), 3);

    /* an agent narrowing both lists; the default still fits */
    n = rule(p, "acme", "narrow");
    decided(n, "registry.example.test", NGX_OK, 0);
    decided(n, "a.example.test", NGX_OK, 1);
    decided(n, "b.example.test", NGX_DECLINED, 0);
    decided(n, "askme.test", NGX_DECLINED, 0);
    assert_int_equal(json_array_size(n->net.def), 1);

    /* an agent turning the default off, everything else inherited */
    n = rule(p, "acme", "quiet");
    assert_null(n->net.def);
    decided(n, "askme.test", NGX_OK, 1);

    n = rule(p, "acme", "same");
    decided(n, "a.example.test", NGX_OK, 0);

    /* no network section: nothing at all */
    n = rule(p, "open", "x");
    decided(n, "registry.example.test", NGX_DECLINED, 0);
    assert_null(n->net.def);
}


static void
test_classify_many(void **state)
{
    char                             why[256];
    size_t                           bad;
    json_t                          *e, *ask;
    ngx_http_veto_sandbox_policy_t  *p;

    p = load(policy);
    assert_non_null(p);

    /* the first refused entry is named */
    e = json_pack("[s, s, s, s]", "a.example.test", "askme.test",
                  "evil.test", "a b");
    assert_int_equal(ngx_http_veto_sandbox_network_classify(pool,
                         &rule(p, "acme", "x")->net, e, &ask, &bad, why,
                         sizeof(why)),
                     NGX_DECLINED);
    assert_int_equal(bad, 2);
    json_decref(e);

    /* every askable one is listed */
    e = json_pack("[s, s, s]", "askme.test", "a.example.test",
                  "y.ask.test:443");
    assert_int_equal(ngx_http_veto_sandbox_network_classify(pool,
                         &rule(p, "acme", "x")->net, e, &ask, &bad, why,
                         sizeof(why)),
                     NGX_OK);
    assert_non_null(ask);
    assert_int_equal(json_array_size(ask), 2);
    assert_string_equal(json_string_value(json_array_get(ask, 1)),
                        "y.ask.test:443");
    json_decref(e);

    /* a malformed entry: its index and the parser's reason */
    e = json_pack("[s, s]", "a.example.test", "a..b");
    assert_int_equal(ngx_http_veto_sandbox_network_classify(pool,
                         &rule(p, "acme", "x")->net, e, &ask, &bad, why,
                         sizeof(why)),
                     NGX_ERROR);
    assert_int_equal(bad, 1);
    assert_non_null(strstr(why, "empty label"));
    json_decref(e);

    /* a string with a NUL inside is no entry */
    e = json_array();
    json_array_append_new(e, json_stringn("a.example.test\0x", 16));
    assert_int_equal(ngx_http_veto_sandbox_network_classify(pool,
                         &rule(p, "acme", "x")->net, e, &ask, &bad, why,
                         sizeof(why)),
                     NGX_ERROR);
    json_decref(e);
}


static void
test_refusals(void **state)
{
    char   *big;
    size_t  i;

    refused("{\"tenants\": {\"a\": {\"network\": []}}}",
            "field \"network\" has the wrong type");
    refused("{\"tenants\": {\"a\": {\"network\": {\"deny\": []}}}}",
            "tenants.a: network: unknown field \"deny\"");
    refused("{\"tenants\": {\"a\": {\"network\": {\"allow\": \"x.test\"}}}}",
            "tenants.a: network.allow must be an array");
    refused("{\"tenants\": {\"a\": {\"network\": {\"allow\": [\"ok.test\","
            " \"a b.test\"]}}}}",
            "tenants.a: network.allow[1]: allow entry \"a b.test\": "
            "invalid character");
    refused("{\"tenants\": {\"a\": {\"network\": {\"allow\": [7]}}}}",
            "network.allow[0]: must be a string");
    refused("{\"tenants\": {\"a\": {\"network\": {\"ask\": [\"x.test:0\"]}}}}",
            "network.ask[0]: allow entry \"x.test:0\": invalid port");
    refused("{\"tenants\": {\"a\": {\"network\": {\"allow\": [\"*.test\"]}}}}",
            "a wildcard needs a suffix of at least two labels");
    refused("{\"tenants\": {\"a\": {\"network\": {\"default\": \"all\"}}}}",
            "network.default is \"none\" or an array");
    refused("{\"tenants\": {\"a\": {\"network\": {\"allow\": [\"a.test\"],"
            " \"default\": [\"b.test\"]}}}}",
            "tenants.a: network.default[0] \"b.test\" is outside "
            "network.allow");
    refused("{\"tenants\": {\"a\": {\"network\": {\"ask\": [\"a.test\"],"
            " \"default\": [\"a.test\"]}}}}",
            "network.default[0] \"a.test\" is outside network.allow");

    /* an agent stays within its tenant */
    refused("{\"tenants\": {\"a\": {\"network\": {\"allow\": [\"*.x.test\"]},"
            " \"agents\": {\"b\": {\"network\": {\"allow\": [\"*.test.x\"]}}}"
            "}}}",
            "tenants.a.agents.b: network.allow[0] \"*.test.x\" is outside "
            "the tenant's network.allow");
    refused("{\"tenants\": {\"a\": {\"network\": {\"allow\": [\"a.x.test\"]},"
            " \"agents\": {\"b\": {\"network\": {\"allow\": [\"*.x.test\"]}}}"
            "}}}",
            "tenants.a.agents.b: network.allow[0] \"*.x.test\" is outside");
    refused("{\"tenants\": {\"a\": {\"network\": {\"allow\": [\"a.test:443\"]},"
            " \"agents\": {\"b\": {\"network\": {\"allow\": [\"a.test\"]}}}"
            "}}}",
            "tenants.a.agents.b: network.allow[0] \"a.test\" is outside");
    refused("{\"tenants\": {\"a\": {\"network\": {\"ask\": [\"a.test\"]},"
            " \"agents\": {\"b\": {\"network\": {\"ask\": [\"b.test\"]}}}"
            "}}}",
            "tenants.a.agents.b: network.ask[0] \"b.test\" is outside the "
            "tenant's network.allow and network.ask");
    /* an inherited default outside the agent's narrower allow */
    refused("{\"tenants\": {\"a\": {\"network\": {\"allow\": [\"a.test\","
            " \"b.test\"], \"default\": [\"b.test\"]},"
            " \"agents\": {\"c\": {\"network\": {\"allow\": [\"a.test\"]}}}"
            "}}}",
            "tenants.a.agents.c: network.default[0] \"b.test\" is outside");

    /* bounds: 256 entries, 8 KiB */
    big = malloc(64 * 1024);
    assert_non_null(big);
    strcpy(big, "{\"tenants\": {\"a\": {\"network\": {\"allow\": [");
    for (i = 0; i < 257; i++) {
        sprintf(big + strlen(big), "%s\"h%zu.test\"", i ? "," : "", i);
    }
    strcat(big, "]}}}}");
    refused(big, "network.allow has 257 entries, at most 256");

    strcpy(big, "{\"tenants\": {\"a\": {\"network\": {\"ask\": [");
    for (i = 0; i < 40; i++) {
        sprintf(big + strlen(big), "%s\"%0250zu.test\"", i ? "," : "", i);
    }
    strcat(big, "]}}}}");
    refused(big, "network.ask[0]");     /* a label over 63 bytes */

    strcpy(big, "{\"tenants\": {\"a\": {\"network\": {\"ask\": [");
    for (i = 0; i < 40; i++) {
        sprintf(big + strlen(big), "%s\"%060zu.%060zu.%060zu.%060zu.t\"",
                i ? "," : "", i, i, i, i);
    }
    strcat(big, "]}}}}");
    refused(big, "network.ask takes");
    free(big);

    /* askable hosts need Redis; an allowlist alone does not */
    assert_false(load("{\"tenants\": {\"a\": {\"network\": {\"allow\": "
                      "[\"a.test\"], \"ask\": []}}}}")->needs_redis);
    assert_true(load("{\"tenants\": {\"a\": {\"agents\": {\"b\": "
                     "{\"network\": {\"ask\": [\"a.test\"]}}},"
                     " \"network\": {\"ask\": [\"a.test\"]}}}}")
                ->needs_redis);
}


static void
test_record_bound(void **state)
{
    char     host[64];
    size_t   i;
    json_t  *net, *att, *out;

    net = json_string("none");
    out = ngx_http_veto_sandbox_network_record(net, 4096);
    assert_string_equal(json_string_value(out), "none");
    json_decref(out);
    json_decref(net);

    assert_null(ngx_http_veto_sandbox_network_record(NULL, 4096));

    /* 200 attempts of ~150 bytes, 3 already dropped by the helper */
    att = json_array();
    for (i = 0; i < 200; i++) {
        snprintf(host, sizeof(host), "h%zu.example.test", i);
        json_array_append_new(att, json_pack("{s:s, s:s, s:i, s:s, s:s}",
                                             "kind", "tls", "host", host,
                                             "port", 443, "decision",
                                             i < 2 ? "refused" : "allowed",
                                             "reason", "host not allowed"));
    }

    net = json_pack("{s:o, s:i, s:b}", "attempts", att, "dropped", 3,
                    "complete", 0);

    out = ngx_http_veto_sandbox_network_record(net, 4096);
    assert_non_null(out);
    assert_true(json_dumpb(json_object_get(out, "attempts"), NULL, 0,
                           JSON_COMPACT) <= 4096);
    assert_true(json_array_size(json_object_get(out, "attempts")) > 10);
    assert_int_equal(json_array_size(json_object_get(out, "attempts"))
                     + json_integer_value(json_object_get(out, "dropped")),
                     200 + 3);
    /* order kept: the refusals (first, from the helper) survive */
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(out, "attempts"),
                                           0), "decision")), "refused");
    assert_false(json_is_true(json_object_get(out, "complete")));
    json_decref(out);

    /* a small one is kept whole */
    json_array_clear(att);
    json_array_append_new(att, json_pack("{s:s}", "host", "a.test"));
    json_object_set_new(net, "dropped", json_integer(0));
    json_object_set_new(net, "complete", json_true());
    out = ngx_http_veto_sandbox_network_record(net, 4096);
    assert_int_equal(json_array_size(json_object_get(out, "attempts")), 1);
    assert_int_equal(json_integer_value(json_object_get(out, "dropped")), 0);
    assert_true(json_is_true(json_object_get(out, "complete")));
    json_decref(out);

    json_decref(net);
}


/* The policy's "credentials": inheritance, refusals at load, and what a
 * request's names are (allowed, askable, refused, malformed). */
static void
test_credentials(void **state)
{
    char                             why[256];
    size_t                           bad;
    json_t                          *names, *ask;
    ngx_http_veto_sandbox_rule_t    *t, *a, *o;
    ngx_http_veto_sandbox_policy_t  *p;

    p = load("{\"version\": 1, \"tenants\": {"
             " \"acme\": {\"credentials\": {\"allow\": [\"git-deploy\","
             "                                           \"ci.token\"],"
             "                              \"ask\": [\"prod-api\"]},"
             "  \"agents\": {\"narrow\": {\"credentials\": {\"allow\": [],"
             "                        \"ask\": [\"git-deploy\"]}},"
             "              \"same\": {}}},"
             " \"open\": {}}}");
    assert_non_null(p);

    t = rule(p, "acme", "anyone");
    a = rule(p, "acme", "narrow");
    o = rule(p, "open", "anyone");
    assert_non_null(t);
    assert_non_null(a);
    assert_non_null(o);

    /* allowed at once, askable, refused, in one request */
    names = json_pack("[s, s]", "git-deploy", "prod-api");
    assert_int_equal(ngx_http_veto_sandbox_credentials_classify(pool,
                         &t->cred, names, &ask, &bad, why, sizeof(why)),
                     NGX_OK);
    assert_non_null(ask);
    assert_int_equal(json_array_size(ask), 1);
    assert_string_equal(json_string_value(json_array_get(ask, 0)),
                        "prod-api");

    /* the agent's rule replaces the tenant's: git-deploy needs a human */
    assert_int_equal(ngx_http_veto_sandbox_credentials_classify(pool,
                         &a->cred, names, &ask, &bad, why, sizeof(why)),
                     NGX_DECLINED);
    assert_int_equal(bad, 1);
    json_decref(names);

    names = json_pack("[s]", "git-deploy");
    assert_int_equal(ngx_http_veto_sandbox_credentials_classify(pool,
                         &a->cred, names, &ask, &bad, why, sizeof(why)),
                     NGX_OK);
    assert_non_null(ask);

    /* a tenant without a credentials section attaches none */
    assert_int_equal(ngx_http_veto_sandbox_credentials_classify(pool,
                         &o->cred, names, &ask, &bad, why, sizeof(why)),
                     NGX_DECLINED);
    json_decref(names);

    /* malformed: not a name, twice, not a string */
    names = json_pack("[s, s]", "ci.token", "Git Deploy");
    assert_int_equal(ngx_http_veto_sandbox_credentials_classify(pool,
                         &t->cred, names, &ask, &bad, why, sizeof(why)),
                     NGX_ERROR);
    assert_int_equal(bad, 1);
    assert_non_null(strstr(why, "[a-z0-9._-]"));
    json_decref(names);

    names = json_pack("[s, s]", "ci.token", "ci.token");
    assert_int_equal(ngx_http_veto_sandbox_credentials_classify(pool,
                         &t->cred, names, &ask, &bad, why, sizeof(why)),
                     NGX_ERROR);
    assert_non_null(strstr(why, "named twice"));
    json_decref(names);

    names = json_pack("[{s:s}]", "host", "evil.test");
    assert_int_equal(ngx_http_veto_sandbox_credentials_classify(pool,
                         &t->cred, names, &ask, &bad, why, sizeof(why)),
                     NGX_ERROR);
    json_decref(names);

    refused("{\"version\": 1, \"tenants\": {\"acme\": {\"credentials\":"
            " {\"allow\": [\"UPPER\"]}}}}",
            "credentials.allow[0]: a credential name is 1 .. 64 bytes");
    refused("{\"version\": 1, \"tenants\": {\"acme\": {\"credentials\":"
            " {\"host\": [\"evil.test\"]}}}}",
            "credentials: unknown field \"host\"");
    refused("{\"version\": 1, \"tenants\": {\"acme\": {\"credentials\":"
            " {\"allow\": [\"a\"]}, \"agents\": {\"x\": {\"credentials\":"
            " {\"allow\": [\"b\"]}}}}}}",
            "credentials.allow[0] \"b\" is outside the tenant's");
    refused("{\"version\": 1, \"tenants\": {\"acme\": {\"credentials\":"
            " {\"allow\": [\"a\"]}, \"agents\": {\"x\": {\"credentials\":"
            " {\"ask\": [\"b\"]}}}}}}",
            "credentials.ask[0] \"b\" is outside the tenant's credentials.allow"
            " and credentials.ask");
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_classify, policy_setup,
                                        policy_teardown),
        cmocka_unit_test_setup_teardown(test_classify_many, policy_setup,
                                        policy_teardown),
        cmocka_unit_test_setup_teardown(test_refusals, policy_setup,
                                        policy_teardown),
        cmocka_unit_test_setup_teardown(test_record_bound, policy_setup,
                                        policy_teardown),
        cmocka_unit_test_setup_teardown(test_credentials, policy_setup,
                                        policy_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
