/*
 * What a worker reads from Redis Sentinel: the master's address (numeric
 * only, a port 1..65535) and the +switch-master message (exactly five
 * fields, the master's own name, a numeric new address).  A name, a
 * hostile port or a message with a field too many or too few is never
 * taken for an address to connect to.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ngx_core_stub.h"
#include "ngx_http_veto_sandbox_sentinel.h"


static ngx_int_t
addr(const char *host, const char *port, u_char *out, in_port_t *p)
{
    return ngx_http_veto_sandbox_sentinel_addr((u_char *) host, strlen(host),
                                               (u_char *) port, strlen(port),
                                               out, p);
}


static ngx_int_t
sw(const char *msg, u_char *out, in_port_t *p)
{
    ngx_str_t  name = ngx_string("veto");

    return ngx_http_veto_sandbox_sentinel_switch((u_char *) msg, strlen(msg),
                                                 &name, out, p);
}


static void
test_addr_numeric(void **state)
{
    u_char     out[NGX_HTTP_VSB_SENTINEL_HOST_LEN];
    in_port_t  port;

    assert_int_equal(addr("10.0.0.7", "6379", out, &port), NGX_OK);
    assert_string_equal((char *) out, "10.0.0.7");
    assert_int_equal(port, 6379);

    assert_int_equal(addr("::1", "1", out, &port), NGX_OK);
    assert_string_equal((char *) out, "::1");
    assert_int_equal(port, 1);

    assert_int_equal(addr("fd00::17", "65535", out, &port), NGX_OK);
    assert_int_equal(port, 65535);
}


static void
test_addr_name_declined(void **state)
{
    u_char     out[NGX_HTTP_VSB_SENTINEL_HOST_LEN];
    in_port_t  port = 0;

    /* resolving is blocking: a worker never does it */
    assert_int_equal(addr("redis-1.internal", "6379", out, &port),
                     NGX_DECLINED);
    assert_int_equal(addr("localhost", "6379", out, &port), NGX_DECLINED);
    assert_int_equal(addr("10.0.0.7 ", "6379", out, &port), NGX_DECLINED);
    assert_int_equal(port, 0);
}


static void
test_addr_bad(void **state)
{
    char       long_host[NGX_HTTP_VSB_SENTINEL_HOST_LEN + 1];
    u_char     out[NGX_HTTP_VSB_SENTINEL_HOST_LEN];
    in_port_t  port = 0;

    assert_int_equal(addr("", "6379", out, &port), NGX_ERROR);
    assert_int_equal(addr("10.0.0.7", "", out, &port), NGX_ERROR);
    assert_int_equal(addr("10.0.0.7", "0", out, &port), NGX_ERROR);
    assert_int_equal(addr("10.0.0.7", "65536", out, &port), NGX_ERROR);
    assert_int_equal(addr("10.0.0.7", "99999", out, &port), NGX_ERROR);
    assert_int_equal(addr("10.0.0.7", "123456", out, &port), NGX_ERROR);
    assert_int_equal(addr("10.0.0.7", "-1", out, &port), NGX_ERROR);
    assert_int_equal(addr("10.0.0.7", "+80", out, &port), NGX_ERROR);
    assert_int_equal(addr("10.0.0.7", "80 ", out, &port), NGX_ERROR);

    memset(long_host, '1', sizeof(long_host) - 1);
    long_host[sizeof(long_host) - 1] = '\0';
    assert_int_equal(addr(long_host, "6379", out, &port), NGX_ERROR);

    /* a NUL inside the host would cut it short for inet_pton() */
    assert_int_equal(ngx_http_veto_sandbox_sentinel_addr(
                         (u_char *) "10.0.0.7\0evil", 13,
                         (u_char *) "6379", 4, out, &port), NGX_ERROR);
    assert_int_equal(port, 0);
}


static void
test_switch(void **state)
{
    u_char     out[NGX_HTTP_VSB_SENTINEL_HOST_LEN];
    in_port_t  port;

    assert_int_equal(sw("veto 127.0.0.1 6379 127.0.0.1 6380", out, &port),
                     NGX_OK);
    assert_string_equal((char *) out, "127.0.0.1");
    assert_int_equal(port, 6380);

    assert_int_equal(sw("veto ::1 6379 ::2 7000", out, &port), NGX_OK);
    assert_string_equal((char *) out, "::2");
    assert_int_equal(port, 7000);
}


static void
test_switch_other_master(void **state)
{
    u_char     out[NGX_HTTP_VSB_SENTINEL_HOST_LEN];
    in_port_t  port = 0;

    assert_int_equal(sw("other 127.0.0.1 6379 127.0.0.1 6380", out, &port),
                     NGX_DECLINED);
    assert_int_equal(sw("vetox 127.0.0.1 6379 127.0.0.1 6380", out, &port),
                     NGX_DECLINED);
    assert_int_equal(sw("vet 127.0.0.1 6379 127.0.0.1 6380", out, &port),
                     NGX_DECLINED);
    assert_int_equal(port, 0);
}


static void
test_switch_malformed(void **state)
{
    u_char     out[NGX_HTTP_VSB_SENTINEL_HOST_LEN];
    in_port_t  port = 0;

    assert_int_equal(sw("", out, &port), NGX_ERROR);
    assert_int_equal(sw("veto", out, &port), NGX_ERROR);
    assert_int_equal(sw("veto 127.0.0.1 6379 127.0.0.1", out, &port),
                     NGX_ERROR);
    assert_int_equal(sw("veto 127.0.0.1 6379 127.0.0.1 6380 x", out, &port),
                     NGX_ERROR);
    assert_int_equal(sw("veto 127.0.0.1 6379 127.0.0.1 6380 ", out, &port),
                     NGX_ERROR);
    assert_int_equal(sw(" veto 127.0.0.1 6379 127.0.0.1 6380", out, &port),
                     NGX_ERROR);
    assert_int_equal(sw("veto  127.0.0.1 6379 127.0.0.1 6380", out, &port),
                     NGX_ERROR);
    assert_int_equal(sw("veto 127.0.0.1 6379 redis-2 6380", out, &port),
                     NGX_ERROR);
    assert_int_equal(sw("veto 127.0.0.1 6379 127.0.0.1 0", out, &port),
                     NGX_ERROR);
    assert_int_equal(port, 0);
}


static ngx_int_t
promo(const char *msg, u_char *out, in_port_t *p)
{
    ngx_str_t  name = ngx_string("veto");

    return ngx_http_veto_sandbox_sentinel_promoting((u_char *) msg,
                                                    strlen(msg), &name, out,
                                                    p);
}


static void
test_promoting(void **state)
{
    u_char     out[NGX_HTTP_VSB_SENTINEL_HOST_LEN];
    in_port_t  port = 0;

    /* the master to fence off is the one after "@ <name>" */
    assert_int_equal(promo("slave 127.0.0.1:6380 127.0.0.1 6380 @ veto "
                           "127.0.0.1 6379", out, &port), NGX_OK);
    assert_string_equal((char *) out, "127.0.0.1");
    assert_int_equal(port, 6379);

    port = 0;
    assert_int_equal(promo("slave [::2]:6380 ::2 6380 @ other ::1 6379",
                           out, &port), NGX_DECLINED);
    assert_int_equal(promo("master veto 127.0.0.1 6379", out, &port),
                     NGX_ERROR);
    assert_int_equal(promo("slave 127.0.0.1:6380 127.0.0.1 6380 # veto "
                           "127.0.0.1 6379", out, &port), NGX_ERROR);
    assert_int_equal(promo("slave 127.0.0.1:6380 127.0.0.1 6380 @ veto "
                           "127.0.0.1", out, &port), NGX_ERROR);
    assert_int_equal(promo("slave 127.0.0.1:6380 127.0.0.1 6380 @ veto "
                           "127.0.0.1 6379 x", out, &port), NGX_ERROR);
    assert_int_equal(promo("slave 127.0.0.1:6380 127.0.0.1 6380 @ veto "
                           "redis-1 6379", out, &port), NGX_ERROR);
    assert_int_equal(port, 0);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_addr_numeric),
        cmocka_unit_test(test_addr_name_declined),
        cmocka_unit_test(test_addr_bad),
        cmocka_unit_test(test_switch),
        cmocka_unit_test(test_switch_other_master),
        cmocka_unit_test(test_switch_malformed),
        cmocka_unit_test(test_promoting),
    };

    ngx_stub_init();

    return cmocka_run_group_tests(tests, NULL, NULL);
}
