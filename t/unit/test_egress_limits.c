/* The egress proxy's fair shares of its connections (limits.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "eg_limits.h"

static char  why[256];     /* the last refusal's reason */

/* eg_share_admit() of the proxy's pool of 2048 connections, as used */
static int
admit(unsigned used, unsigned tenants, unsigned tenant_used,
    unsigned sandboxes, unsigned sandbox_used)
{
    eg_share_t  s = {
        .pool = 2048, .used = used, .tenants = tenants,
        .tenant_used = tenant_used, .sandboxes = sandboxes,
        .sandbox_used = sandbox_used, .tenant_floor = 32,
        .sandbox_floor = 8, .reserve_percent = 10
    };

    return eg_share_admit(&s, why, sizeof(why));
}

static void
test_share(void **state)
{
    (void) state;

    /* alone: one tenant gets the pool less the reserve (204): 1844 */
    assert_int_equal(admit(1843, 1, 1843, 1, 1843), 0);
    assert_int_equal(admit(1844, 1, 1844, 1, 1844), -1);
    assert_non_null(strstr(why, "tenant share exhausted"));

    /* a second tenant arrives: it gets in (the reserve), up to its share
     * of 922; the borrower does not, not even when one is freed */
    assert_int_equal(admit(1844, 2, 0, 1, 0), 0);
    assert_int_equal(admit(2047, 2, 203, 1, 203), 0);
    assert_int_equal(admit(2047, 2, 1844, 1, 1844), -1);
    assert_int_equal(admit(2048, 2, 204, 1, 204), -1);
    assert_non_null(strstr(why, "pool is full"));
    /* more than the reserve free */
    assert_int_equal(admit(1843, 2, 1639, 1, 1639), 0);

    /* many tenants: the floor */
    assert_int_equal(admit(1900, 200, 31, 1, 31), 0);
    assert_int_equal(admit(1900, 200, 32, 1, 32), -1);

    /* within a tenant: its share 922 (2 tenants), less 92 held back,
     * over 4 sandboxes: 207 each; over it a sandbox borrows only while
     * its tenant has more than 92 left of its share */
    assert_int_equal(admit(800, 2, 800, 4, 300), 0);
    assert_int_equal(admit(830, 2, 830, 4, 300), -1);
    assert_non_null(strstr(why, "sandbox share exhausted"));
    assert_int_equal(admit(830, 2, 830, 4, 10), 0);
}

int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(test_share),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
