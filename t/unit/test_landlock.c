/*
 * Landlock unit tests: what the ruleset handles at each ABI (the kernel
 * rejects a ruleset naming rights it does not know, so an ABI must never
 * get a later one's bits), the ABI detection against the kernel's own
 * answer, and a kernel without Landlock: said so, carried on.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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


/*
 * A kernel without Landlock, as seccomp makes it look (the call answers
 * ENOSYS, or EOPNOTSUPP when disabled at boot): detection says so, the
 * exec's step is a no-op, nothing fails.
 */
static void
test_kernel_without_landlock(void **state)
{
    int    err_no, status, i;
    char   msg[256], err[256];
    pid_t  pid;
    static const int  errs[] = { ENOSYS, EOPNOTSUPP };
    static const char *const  why[] = { "kernel built without it",
                                        "disabled at boot" };

    for (i = 0; i < 2; i++) {
        err_no = errs[i];
        pid = fork();
        assert_true(pid != -1);

        if (pid == 0) {
            struct sock_filter  insns[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                         offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
                         SYS_landlock_create_ruleset, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | err_no),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
            };
            struct sock_fprog  prog = { 4, insns };

            if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog)
                   != 0)
            {
                _exit(2);
            }

            if (vsb_landlock_init(msg, sizeof(msg)) != 0
                || vsb_landlock_abi() != 0
                || strstr(msg, "landlock: not available") == NULL
                || strstr(msg, why[i]) == NULL
                || vsb_landlock_apply(NULL, err, sizeof(err)) != 0)
            {
                _exit(1);
            }

            _exit(0);
        }

        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(test_handled_per_abi),
        cmocka_unit_test(test_detect),
        cmocka_unit_test(test_kernel_without_landlock),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
