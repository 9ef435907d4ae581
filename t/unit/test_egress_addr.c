/* Unit tests: the egress proxy's address classifier, IP literal parser
 * (odd IPv4 spellings) and allowlist matching. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "eg_addr.h"
#include "eg_allow.h"

static const char *
special_of(const char *lit)
{
    eg_addr_t  a;

    assert_int_equal(eg_addr_parse_literal(lit, strlen(lit), &a), 1);
    return eg_addr_special(&a);
}

static void
test_special_ranges(void **state)
{
    static const struct { const char *a, *range; } cases[] = {
        { "127.0.0.1", "loopback" }, { "127.255.255.254", "loopback" },
        { "0.0.0.0", "this-network" }, { "10.0.0.1", "private" },
        { "172.16.0.1", "private" }, { "172.31.255.255", "private" },
        { "192.168.0.1", "private" }, { "100.64.0.1", "cgnat" },
        { "100.127.255.255", "cgnat" }, { "169.254.169.254", "link-local" },
        { "224.0.0.1", "multicast" }, { "239.255.255.255", "multicast" },
        { "240.0.0.1", "reserved" }, { "255.255.255.255", "reserved" },
        { "192.0.0.8", "ietf-protocol" }, { "192.0.2.1", "documentation" },
        { "198.51.100.1", "documentation" }, { "203.0.113.1", "documentation" },
        { "198.18.0.1", "benchmark" }, { "198.19.255.255", "benchmark" },
        { "::1", "loopback" }, { "::", "unspecified" },
        { "::ffff:127.0.0.1", "ipv4-mapped" }, { "::ffff:8.8.8.8", "ipv4-mapped" },
        { "::7f00:1", "ipv4-compatible" }, { "64:ff9b::808:808", "nat64" },
        { "64:ff9b:1::1", "nat64" }, { "2002:808:808::1", "6to4" },
        { "2001::1", "teredo" }, { "2001:db8::1", "documentation" },
        { "2001:2::1", "benchmark" }, { "2001:10::1", "ietf-protocol" },
        { "fc00::1", "unique-local" }, { "fdff::1", "unique-local" },
        { "fe80::1", "link-local" }, { "fec0::1", "site-local" },
        { "ff02::1", "multicast" }, { "100::1", "discard" },
        { "3fff::1", "documentation" }, { "4000::1", "reserved" },
        { "::2", "ipv4-compatible" },
    };
    size_t  i;

    (void) state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char  *r = special_of(cases[i].a);
        if (r == NULL || strcmp(r, cases[i].range) != 0) {
            fail_msg("%s: expected %s, got %s", cases[i].a, cases[i].range,
                     r ? r : "global");
        }
    }
}

static void
test_global(void **state)
{
    static const char *const  g[] = {
        "8.8.8.8", "1.1.1.1", "172.15.255.255", "172.32.0.0", "100.63.255.255",
        "100.128.0.0", "198.17.255.255", "198.20.0.0", "223.255.255.255",
        "11.0.0.0", "2606:4700::1111", "2a00:1450::1", "2001:4860::8888",
    };
    size_t  i;

    (void) state;
    for (i = 0; i < sizeof(g) / sizeof(g[0]); i++) {
        const char  *r = special_of(g[i]);
        if (r != NULL) {
            fail_msg("%s: expected global, got %s", g[i], r);
        }
    }
}

static void
test_odd_ipv4(void **state)
{
    static const struct { const char *s; const char *canon; } ok[] = {
        { "2130706433", "127.0.0.1" }, { "0x7f000001", "127.0.0.1" },
        { "0X7F000001", "127.0.0.1" }, { "017700000001", "127.0.0.1" },
        { "127.1", "127.0.0.1" }, { "127.0.1", "127.0.0.1" },
        { "0x7f.1", "127.0.0.1" }, { "0177.0.0.1", "127.0.0.1" },
        { "127.0.0.1.", "127.0.0.1" }, { "127.000.000.001", "127.0.0.1" },
        { "0xa9.0xfe.0xa9.0xfe", "169.254.169.254" },
        { "2852039166", "169.254.169.254" }, { "0", "0.0.0.0" },
        { "0x", "0.0.0.0" }, { "10.0.1", "10.0.0.1" },
        { "4294967295", "255.255.255.255" },
    };
    static const char *const  bad[] = {
        "1.2.3.256", "08.1.2.3", "1.2.3.4.5", "4294967296", "0x1g.1.1.1",
        "1..2.3", "256.1", "09", "::1%lo", "1:2",
    };
    static const char *const  names[] = {
        "example.com", "1.2.3.com", "0x7f.example", "a1", "1a.b", "xn--e1a",
    };
    eg_addr_t  a;
    char       buf[EG_ADDR_STRLEN];
    size_t     i;

    (void) state;
    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        if (eg_addr_parse_literal(ok[i].s, strlen(ok[i].s), &a) != 1) {
            fail_msg("%s: not parsed as a literal", ok[i].s);
        }
        eg_addr_format(&a, buf, sizeof(buf));
        assert_string_equal(buf, ok[i].canon);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (eg_addr_parse_literal(bad[i], strlen(bad[i]), &a) != -1) {
            fail_msg("%s: should be an invalid literal", bad[i]);
        }
    }
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (eg_addr_parse_literal(names[i], strlen(names[i]), &a) != 0) {
            fail_msg("%s: should be a name", names[i]);
        }
    }
}

static void
test_cidr(void **state)
{
    eg_cidr_t  c;
    eg_addr_t  a;

    (void) state;
    assert_int_equal(eg_cidr_parse("198.19.7.0/24", &c), 0);
    assert_int_equal(eg_addr_parse_literal("198.19.7.200", 12, &a), 1);
    assert_true(eg_cidr_contains(&c, &a));
    assert_int_equal(eg_addr_parse_literal("198.19.8.1", 10, &a), 1);
    assert_false(eg_cidr_contains(&c, &a));
    assert_int_equal(eg_cidr_parse("2001:db8::/32", &c), 0);
    assert_int_equal(eg_addr_parse_literal("2001:db8:1::1", 13, &a), 1);
    assert_true(eg_cidr_contains(&c, &a));
    assert_int_equal(eg_cidr_parse("10.0.0.0/33", &c), -1);
    assert_int_equal(eg_cidr_parse("0x0a.0.0.0/8", &c), -1);
    assert_int_equal(eg_cidr_parse("10.0.0.0/", &c), -1);
}

static void
test_allow(void **state)
{
    eg_allow_entry_t  l[4];
    char              err[256];
    eg_host_t         h;
    const char       *why;
    uint16_t          port;

    (void) state;
    assert_int_equal(eg_allow_parse("*.example.test", &l[0], err, sizeof(err)), 0);
    assert_int_equal(eg_allow_parse("Registry.Example.ORG", &l[1], err, sizeof(err)), 0);
    assert_int_equal(eg_allow_parse("git.test:22", &l[2], err, sizeof(err)), 0);
    assert_int_equal(eg_allow_parse("[::1]:443", &l[3], err, sizeof(err)), 0);

    assert_true(eg_allow_match(l, 4, "a.example.test", 443));
    assert_true(eg_allow_match(l, 4, "b.a.example.test", 80));
    assert_false(eg_allow_match(l, 4, "example.test", 443));
    assert_false(eg_allow_match(l, 4, "evil-example.test", 443));
    assert_false(eg_allow_match(l, 4, "example.test.evil", 443));
    assert_false(eg_allow_match(l, 4, "aexample.test", 443));
    assert_false(eg_allow_match(l, 4, "a.example.test", 8080));
    assert_true(eg_allow_match(l, 4, "registry.example.org", 443));
    assert_true(eg_allow_match(l, 4, "git.test", 22));
    assert_false(eg_allow_match(l, 4, "git.test", 443));
    assert_true(eg_allow_match(l, 4, "git.test", 0));
    assert_true(eg_allow_match(l, 4, "::1", 443));

    assert_int_equal(eg_allow_parse("*.test", &l[0], err, sizeof(err)), -1);
    assert_int_equal(eg_allow_parse("*.1.2.3.4", &l[0], err, sizeof(err)), -1);
    assert_int_equal(eg_allow_parse("a b.test", &l[0], err, sizeof(err)), -1);
    assert_int_equal(eg_allow_parse("a.test:0", &l[0], err, sizeof(err)), -1);
    assert_int_equal(eg_allow_parse("a.test:70000", &l[0], err, sizeof(err)), -1);
    assert_int_equal(eg_allow_parse("::1", &l[0], err, sizeof(err)), -1);

    assert_int_equal(eg_hostport_parse("A.Example.Test.:443", 19, 0, &h, &port,
                                       &why), 0);
    assert_string_equal(h.host, "a.example.test");
    assert_int_equal(port, 443);
    assert_int_equal(eg_hostport_parse("[::ffff:7f00:1]:80", 18, 0, &h, &port,
                                       &why), 0);
    assert_true(h.is_literal);
    assert_string_equal(h.host, "::ffff:127.0.0.1");
    assert_int_equal(eg_hostport_parse("a.test", 6, 0, &h, &port, &why), -1);
    assert_int_equal(eg_hostport_parse("a..test:80", 10, 0, &h, &port, &why), -1);
    assert_int_equal(eg_host_parse("1.2.3.4 ", 8, &h, &why), -1);
    assert_int_equal(eg_hostport_parse("a%2e.test:80", 12, 0, &h, &port, &why),
                     -1);
}

int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(test_special_ranges),
        cmocka_unit_test(test_global),
        cmocka_unit_test(test_odd_ipv4),
        cmocka_unit_test(test_cidr),
        cmocka_unit_test(test_allow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
