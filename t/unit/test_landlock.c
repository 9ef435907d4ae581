/*
 * Landlock unit tests: what the ruleset handles at each ABI (the kernel
 * rejects a ruleset naming rights it does not know, so an ABI must never
 * get a later one's bits), and the ABI detection against the kernel's
 * own answer.
 */
#include <linux/landlock.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "vsb_landlock.h"

#define FS_V1      ((1ULL << 13) - 1)   /* EXECUTE .. MAKE_SYM */
#define FS_REFER   (1ULL << 13)
#define FS_TRUNC   (1ULL << 14)
#define FS_IOCTL   (1ULL << 15)
#define SCOPES     3ULL                 /* abstract unix socket, signal */


static void
test_handled_per_abi(void **state)
{
    vsb_landlock_handled_t  h;

    vsb_landlock_handled(0, &h);
    assert_true(h.fs == 0 && h.net == 0 && h.scoped == 0);

    vsb_landlock_handled(1, &h);
    assert_true(h.fs == FS_V1 && h.net == 0 && h.scoped == 0);

    vsb_landlock_handled(2, &h);
    assert_true(h.fs == (FS_V1 | FS_REFER));

    vsb_landlock_handled(3, &h);
    assert_true(h.fs == (FS_V1 | FS_REFER | FS_TRUNC));

    /* ABI 4: TCP rules exist, but mode "none" needs every loopback port */
    vsb_landlock_handled(4, &h);
    assert_true(h.fs == (FS_V1 | FS_REFER | FS_TRUNC) && h.net == 0);

    vsb_landlock_handled(5, &h);
    assert_true(h.fs == (FS_V1 | FS_REFER | FS_TRUNC | FS_IOCTL));
    assert_true(h.scoped == 0);

    vsb_landlock_handled(6, &h);
    assert_true(h.fs == (FS_V1 | FS_REFER | FS_TRUNC | FS_IOCTL));
    assert_true(h.scoped == SCOPES && h.net == 0);

    vsb_landlock_handled(7, &h);
    assert_true(h.scoped == SCOPES);
}


static void
test_detect(void **state)
{
    int   abi;
    long  kabi;
    char  msg[256];

    kabi = syscall(SYS_landlock_create_ruleset, NULL, 0,
                   LANDLOCK_CREATE_RULESET_VERSION);

    abi = vsb_landlock_init(msg, sizeof(msg));
    assert_int_equal(abi, vsb_landlock_abi());

    if (kabi < 1) {
        assert_int_equal(abi, 0);
        assert_non_null(strstr(msg, "not available"));
    } else {
        assert_int_equal(abi, kabi > 7 ? 7 : kabi);
        assert_non_null(strstr(msg, "landlock: kernel ABI"));
    }
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(test_handled_per_abi),
        cmocka_unit_test(test_detect),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
