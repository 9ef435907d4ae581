/* A sandbox's network in the helper: the egress_* config keys and the
 * schema of create's "network" and update_network's "add" (pure). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "vsb_config.h"
#include "vsb_egress.h"
#include "vsb_ops.h"

static vsb_config_t  cf;
static char          err[512];


static int
parse_conf(const char *text)
{
    err[0] = '\0';
    return vsb_config_parse_buffer(text, strlen(text), &cf, err,
                                   sizeof(err));
}


static void
test_config(void **state)
{
    assert_int_equal(parse_conf(""), 0);
    assert_int_equal(cf.egress.enabled, 0);
    assert_int_equal(cf.egress.max_entries, 64);
    assert_string_equal(cf.egress.nft, "/usr/sbin/nft");

    assert_int_equal(parse_conf("egress = on\negress_user = nobody\n"
                                "egress_proxy = /opt/egress-proxy\n"
                                "egress_netns = /run/netns/w\n"
                                "egress_resolver = 192.0.2.1:53,[2001:db8::1]:53\n"
                                "egress_allow_range = 198.19.0.0/24\n"
                                "egress_allow_range = 2001:db8::/32\n"
                                "egress_max_entries = 10\n"
                                "egress_max_connections = 7\n"), 0);
    assert_int_equal(cf.egress.enabled, 1);
    assert_string_equal(cf.egress.user, "nobody");
    assert_string_equal(cf.egress.proxy, "/opt/egress-proxy");
    assert_string_equal(cf.egress.netns, "/run/netns/w");
    assert_int_equal(cf.egress.n_allow_ranges, 2);
    assert_string_equal(cf.egress.allow_ranges[1], "2001:db8::/32");
    assert_int_equal(cf.egress.max_entries, 10);
    assert_int_equal(cf.egress.max_connections, 7);

    assert_int_equal(parse_conf("egress = on\n"), -1);
    assert_non_null(strstr(err, "egress_user"));
    assert_int_equal(parse_conf("egress = yes\n"), -1);
    assert_int_equal(parse_conf("egress_allow_range = 10.0.0.0\n"), -1);
    assert_non_null(strstr(err, "CIDR"));
    assert_int_equal(parse_conf("egress_allow_range = 10.0.0.0/33\n"), -1);
    assert_int_equal(parse_conf("egress_resolver = dns.example\n"), -1);
    assert_int_equal(parse_conf("egress_proxy = bin/egress-proxy\n"), -1);
    assert_int_equal(parse_conf("egress_proxy = /a/../b\n"), -1);
    assert_int_equal(parse_conf("egress_max_entries = 257\n"), -1);
    assert_int_equal(parse_conf("egress_user = a b\n"), -1);
}


/* Parses a whole create request with cf. */
static int
create(const char *json, vsb_request_t *r, vsb_error_t *e)
{
    json_t        *root;
    json_error_t   je;
    int            rc;

    root = json_loads(json, JSON_ALLOW_NUL, &je);
    assert_non_null(root);
    rc = vsb_ops_parse(root, 0, &cf, r, e);
    if (rc == 0 && r->network != NULL) {
        /* borrowed from root: check it is the allowlist, then drop it */
        assert_true(json_is_object(r->network));
    }
    json_decref(root);
    return rc;
}


static void
expect(const char *network, const char *error, const char *field)
{
    char           buf[16384];
    vsb_request_t  r;
    vsb_error_t    e;

    snprintf(buf, sizeof(buf), "{\"op\":\"create\",\"tenant\":\"t\","
             "\"agent\":\"a\",\"network\":%s}", network);
    if (error == NULL) {
        if (create(buf, &r, &e) != 0) {
            fail_msg("%s: %s %s", network, e.error, e.detail);
        }
        return;
    }
    assert_int_equal(create(buf, &r, &e), -1);
    assert_string_equal(e.error, error);
    if (field != NULL) {
        assert_non_null(e.field);
        assert_string_equal(e.field, field);
    }
}


static void
test_schema(void **state)
{
    char    big[12000];
    size_t  i, off;

    /* egress off: only "none" */
    assert_int_equal(parse_conf(""), 0);
    expect("\"none\"", NULL, NULL);
    expect("{\"allow\":[\"a.test\"]}", "bad_value", "network");

    assert_int_equal(parse_conf("egress = on\negress_user = nobody\n"
                                "egress_max_entries = 4\n"), 0);
    expect("\"none\"", NULL, NULL);
    expect("{\"allow\":[]}", NULL, NULL);
    expect("{\"allow\":[\"a.test\",\"*.b.test:8443\",\"[2001:db8::1]:443\","
           "\"192.0.2.1\"]}", NULL, NULL);
    expect("\"all\"", "bad_value", "network");
    expect("null", "bad_type", "network");
    expect("{\"allow\":\"a.test\"}", "bad_type", "network.allow");
    expect("{\"allow\":[1]}", "bad_type", "network.allow");
    expect("{\"allow\":[\"a b\"]}", "bad_value", "network.allow");
    expect("{\"allow\":[\"a.test:0\"]}", "bad_value", "network.allow");
    expect("{\"allow\":[\"a.test:65536\"]}", "bad_value", "network.allow");
    expect("{\"allow\":[\"*.\"]}", "bad_value", "network.allow");
    expect("{\"allow\":[\"a..test\"]}", "bad_value", "network.allow");
    expect("{\"allow\":[\"a.test\\u0000x\"]}", "bad_value", "network.allow");
    expect("{\"allow\":[\"a.test\"],\"ask\":{}}", "bad_type", "network.ask");
    expect("{\"ask\":[\"a.test\"]}", "missing_field", "network");
    expect("{\"allow\":[],\"x\":1}", "unknown_field", "x");
    /* the ceiling counts allow and ask together */
    expect("{\"allow\":[\"a.test\",\"b.test\",\"c.test\"],"
           "\"ask\":[\"d.test\",\"e.test\"]}", "over_ceiling", "network.ask");
    expect("{\"allow\":[\"a.test\",\"b.test\",\"c.test\",\"d.test\","
           "\"e.test\"]}", "over_ceiling", "network.allow");

    /* bytes: 40 entries of ~200 bytes over VSB_MAX_NETWORK_BYTES */
    assert_int_equal(parse_conf("egress = on\negress_user = nobody\n"
                                "egress_max_entries = 256\n"), 0);
    off = (size_t) snprintf(big, sizeof(big), "{\"allow\":[");
    for (i = 0; i < 45; i++) {
        off += (size_t) snprintf(big + off, sizeof(big) - off,
                                 "%s\"%063d.%063d.%063d.h%zu.test\"",
                                 i ? "," : "", 0, 0, 0, i);
    }
    snprintf(big + off, sizeof(big) - off, "]}");
    expect(big, "over_ceiling", "network.allow");
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_schema),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
