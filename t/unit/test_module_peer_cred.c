/*
 * The inter-gateway credential: the parser takes its fields in their
 * order and shapes only (the owner's helper epoch, e=, exactly 32
 * lowercase hex digits when present), and the signature covers every
 * field, the epoch included: another epoch, or one added or dropped,
 * does not hold.
 */

#include "ngx_http_veto_sandbox_faces.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ngx_core_stub.h"


#define HEAD  "v1;h=gw-b;t=1796098559484;n=0123456789abcdef0123456789abcdef;" \
              "b=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define EPOCH "83aa9e0e5a5c49bbae2d396bd0d40d12"
#define SIG   ";s=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"


static ngx_str_t  key = ngx_string("0123456789abcdef0123456789abcdef");
static ngx_str_t  method = ngx_string("POST");
static ngx_str_t  uri = ngx_string("/v1/sandboxes/sbx-1/exec");
static ngx_str_t  tenant = ngx_string("acme");
static ngx_str_t  agent = ngx_string("agent-1");
static ngx_str_t  jti = ngx_string("");


static ngx_int_t
parse(const char *s, ngx_http_veto_sandbox_peer_cred_t *cred)
{
    return ngx_http_veto_sandbox_peer_cred_parse((u_char *) s, strlen(s),
                                                 cred);
}


static void
test_epoch_parsed(void **state)
{
    ngx_http_veto_sandbox_peer_cred_t  cred;

    assert_int_equal(parse(HEAD ";e=" EPOCH SIG, &cred), NGX_OK);
    assert_int_equal(cred.epoch.len, 32);
    assert_memory_equal(cred.epoch.data, EPOCH, 32);
    assert_int_equal(cred.slot.len, 0);

    assert_int_equal(parse(HEAD ";q=new-1;e=" EPOCH SIG, &cred), NGX_OK);
    assert_int_equal(cred.slot.len, 5);
    assert_int_equal(cred.epoch.len, 32);

    /* none: not fenced, as before */
    assert_int_equal(parse(HEAD SIG, &cred), NGX_OK);
    assert_null(cred.epoch.data);
}


static void
test_epoch_malformed(void **state)
{
    ngx_uint_t                          i;
    ngx_http_veto_sandbox_peer_cred_t   cred;
    static const char                  *bad[] = {
        HEAD ";e=" SIG,                                     /* empty */
        HEAD ";e=83aa9e0e5a5c49bbae2d396bd0d40d1" SIG,      /* 31 */
        HEAD ";e=" EPOCH "0" SIG,                           /* 33 */
        HEAD ";e=83AA9E0E5A5C49BBAE2D396BD0D40D12" SIG,     /* upper */
        HEAD ";e=83aa9e0e5a5c49bbae2d396bd0d40d1g" SIG,     /* not hex */
        HEAD ";e=" EPOCH ";q=new-1" SIG,                    /* order */
        HEAD ";e=" EPOCH ";e=" EPOCH SIG,                   /* twice */
        HEAD SIG ";e=" EPOCH,                               /* after s */
    };

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(parse(bad[i], &cred), NGX_DECLINED);
    }
}


static void
test_epoch_signed(void **state)
{
    u_char                             *buf, sig[65];
    size_t                              len;
    ngx_pool_t                         *pool;
    ngx_http_veto_sandbox_peer_cred_t   cred;

    pool = ngx_create_pool(4096, NULL);
    assert_non_null(pool);

    len = sizeof(HEAD ";e=" EPOCH SIG) - 1;
    buf = ngx_pnalloc(pool, len);
    assert_non_null(buf);
    ngx_memcpy(buf, HEAD ";e=" EPOCH SIG, len);

    assert_int_equal(ngx_http_veto_sandbox_peer_cred_parse(buf, len, &cred),
                     NGX_OK);
    assert_int_equal(ngx_http_veto_sandbox_peer_cred_sign(pool, &key, &cred,
                         &method, &uri, &tenant, &agent, &jti, sig), NGX_OK);
    ngx_memcpy(cred.sig.data, sig, 64);

    assert_int_equal(ngx_http_veto_sandbox_peer_cred_check(pool, &key, &cred,
                         &method, &uri, &tenant, &agent, &jti), NGX_OK);

    /* another run of the owner's helper */
    cred.epoch.data[0] = '9';
    assert_int_equal(ngx_http_veto_sandbox_peer_cred_check(pool, &key, &cred,
                         &method, &uri, &tenant, &agent, &jti), NGX_DECLINED);
    cred.epoch.data[0] = '8';

    /* the epoch dropped */
    cred.epoch.len = 0;
    assert_int_equal(ngx_http_veto_sandbox_peer_cred_check(pool, &key, &cred,
                         &method, &uri, &tenant, &agent, &jti), NGX_DECLINED);

    ngx_destroy_pool(pool);
}


int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_epoch_parsed),
        cmocka_unit_test(test_epoch_malformed),
        cmocka_unit_test(test_epoch_signed),
    };

    ngx_stub_init();

    return cmocka_run_group_tests(tests, NULL, NULL);
}
