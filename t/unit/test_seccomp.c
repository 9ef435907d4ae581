/*
 * seccomp filter unit tests: each case forks, sets no_new_privs, loads
 * the filter and checks one syscall's verdict (errno, or death by
 * SIGSYS for another ABI), reporting back through the exit status.  The
 * workload's variant is tested with the real supervisor (supervise.c)
 * answering in the parent.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "vsb_seccomp.h"
#include "vsb_supervise.h"

#define TEST_ALLOWED  100           /* exit status: the call was allowed */
#define TEST_CRASHED  101           /* setup failed in the child */

typedef long (*test_call_pt)(void);


/* Runs call under the filter; returns the child's wait status. */
static int
test_run(test_call_pt call)
{
    int    status;
    long   rc;
    char   err[256];
    pid_t  pid;

    assert_int_equal(vsb_seccomp_prepare(err, sizeof(err)), 0);

    pid = fork();
    assert_true(pid != -1);

    if (pid == 0) {
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
            || vsb_seccomp_apply(-1, err, sizeof(err)) != 0)
        {
            _exit(TEST_CRASHED);
        }

        errno = 0;
        rc = call();
        _exit(rc == -1 ? (errno & 0x7f) : TEST_ALLOWED);
    }

    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}


static void
test_expect_errno(test_call_pt call, int err)
{
    int  status;

    status = test_run(call);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), err);
}


/* the call ran: the child exited with TEST_ALLOWED */
static void
test_expect_allowed(test_call_pt call)
{
    test_expect_errno(call, TEST_ALLOWED);
}


static long call_mount(void)
{ return syscall(SYS_mount, "none", "/", "tmpfs", 0, NULL); }
static long call_unshare_user(void)
{ return syscall(SYS_unshare, CLONE_NEWUSER); }
static long call_ptrace(void)
{ return syscall(SYS_ptrace, 16 /* PTRACE_ATTACH */, 1, 0, 0); }
static long call_keyctl(void)
{ return syscall(SYS_keyctl, 0, 0, 0, 0, 0); }
static long call_bpf(void)
{ return syscall(SYS_bpf, 0, NULL, 0); }
static long call_clone3(void)
{ return syscall(SYS_clone3, NULL, 0); }
static long call_clone_newns(void)
{ return syscall(SYS_clone, CLONE_NEWNS | SIGCHLD, NULL, NULL, NULL, NULL); }
static long call_mknod_chr(void)
{ return syscall(SYS_mknodat, AT_FDCWD, "/nonexistent-vsb-test/x", S_IFCHR | 0600, 0x0103); }
static long call_personality_norandom(void)
{ return syscall(SYS_personality, 0x0040000); }
static long call_personality_query(void)
{ return syscall(SYS_personality, 0xffffffffUL) == -1 ? -1 : 0; }
static long call_getpid(void)
{ return syscall(SYS_getpid) > 0 ? 0 : -1; }
static long call_socket_alg(void)
{ return syscall(SYS_socket, 38 /* AF_ALG */, 5 /* SOCK_SEQPACKET */, 0); }
/* AF_PACKET and AF_XDP exist on the test kernel and root may open them:
 * only the filter stands between them and the call */
static long call_socket_packet(void)
{ return syscall(SYS_socket, 17 /* AF_PACKET */, 2 /* SOCK_DGRAM */, 0); }
static long call_socket_xdp_hi(void)
{ return syscall(SYS_socket, 0x100000000L | 44 /* AF_XDP */, 3, 0); }
static long call_socketpair_can(void)
{ int sv[2]; return syscall(SYS_socketpair, 29 /* AF_CAN */, 2, 1, sv); }
static long call_socket_inet(void)
{ long fd = syscall(SYS_socket, 2 /* AF_INET */, 1, 0);
  return fd >= 0 ? 0 : -1; }
static long call_socket_netlink(void)
{ long fd = syscall(SYS_socket, 16 /* AF_NETLINK */, 2, 0);
  return fd >= 0 ? 0 : -1; }
static long call_socketpair_unix(void)
{ int sv[2]; return syscall(SYS_socketpair, 1 /* AF_UNIX */, 1, 0, sv); }


/* never reviewed: newer than the allowlist, or unknown to libseccomp */
static long call_statmount(void)
{ return syscall(457, NULL, NULL, 0, 0); }
static long call_mseal(void)
{ return syscall(462, 0, 0, 0); }
static long call_open_tree_attr(void)
{ return syscall(467, -1, NULL, 0, NULL, 0); }
static long call_far(void)
{ return syscall(1000, 0, 0, 0); }
static long call_memfd_secret(void)
{ return syscall(447, 0); }
static long call_io_uring(void)
{ return syscall(425, 1, NULL); }


static void
test_unreviewed_enosys(void **state)
{
    test_expect_errno(call_statmount, ENOSYS);
    test_expect_errno(call_mseal, ENOSYS);
    test_expect_errno(call_open_tree_attr, ENOSYS);
    test_expect_errno(call_far, ENOSYS);
    test_expect_errno(call_memfd_secret, ENOSYS);
    test_expect_errno(call_io_uring, EPERM);
}


static void
test_refused(void **state)
{
    test_expect_errno(call_mount, EPERM);
    test_expect_errno(call_unshare_user, EPERM);
    test_expect_errno(call_ptrace, EPERM);
    test_expect_errno(call_keyctl, EPERM);
    test_expect_errno(call_bpf, EPERM);
    test_expect_errno(call_clone_newns, EPERM);
    test_expect_errno(call_mknod_chr, EPERM);
    test_expect_errno(call_personality_norandom, EPERM);
    test_expect_errno(call_socket_alg, EAFNOSUPPORT);
    test_expect_errno(call_socket_packet, EAFNOSUPPORT);
    test_expect_errno(call_socket_xdp_hi, EAFNOSUPPORT);
    test_expect_errno(call_socketpair_can, EAFNOSUPPORT);
}


static void
test_clone3_enosys(void **state)
{
    test_expect_errno(call_clone3, ENOSYS);
}


static void
test_allowed(void **state)
{
    test_expect_allowed(call_getpid);
    test_expect_allowed(call_personality_query);
    test_expect_allowed(call_socket_inet);
    test_expect_allowed(call_socket_netlink);
    test_expect_allowed(call_socketpair_unix);
}


/*
 * The workload's variant: the child loads it and sends the listener; the
 * parent supervises.  The child reports mount's and statmount's errno and
 * whether a listener of its own was refused (EBUSY).
 */
static void
test_workload_supervised(void **state)
{
    int               sk[2], status, e1, e2, e3;
    char              err[256];
    pid_t             pid;
    sigset_t          none;
    vsb_sc_refused_t  r;

    assert_int_equal(vsb_seccomp_prepare(err, sizeof(err)), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
                                sk), 0);

    pid = fork();
    assert_true(pid != -1);

    if (pid == 0) {
        struct sock_filter  insn = BPF_STMT(BPF_RET | BPF_K,
                                            SECCOMP_RET_USER_NOTIF);
        struct sock_fprog   own = { 1, &insn };

        close(sk[0]);
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
            || vsb_seccomp_apply(sk[1], err, sizeof(err)) != 0)
        {
            _exit(TEST_CRASHED);
        }

        e1 = call_mount() == -1 ? errno : 0;
        e2 = call_statmount() == -1 ? errno : 0;
        e3 = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                     SECCOMP_FILTER_FLAG_NEW_LISTENER, &own) == -1 ? errno : 0;
        (void) call_statmount();

        _exit((e1 == EPERM) | (e2 == ENOSYS) << 1 | (e3 == EBUSY) << 2);
    }

    close(sk[1]);
    memset(&r, 0xff, sizeof(r));

    assert_int_equal(vsb_supervise(sk[0], pid, &status, &r, err,
                                   sizeof(err)), 0);

    sigemptyset(&none);
    assert_int_equal(sigprocmask(SIG_SETMASK, &none, NULL), 0);

    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 7);

    assert_int_equal(r.total, 3);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.sc[0].nr, SYS_mount);
    assert_int_equal(r.sc[0].err, EPERM);
    assert_int_equal(r.sc[0].count, 1);
    assert_int_equal(r.sc[1].nr, 457);
    assert_int_equal(r.sc[1].err, ENOSYS);
    assert_int_equal(r.sc[1].count, 2);
}


/* A workload whose listener never arrives: it ended before its filter. */
static void
test_workload_without_listener(void **state)
{
    int               sk[2], status;
    char              err[256];
    pid_t             pid;
    sigset_t          none;
    vsb_sc_refused_t  r;

    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
                                sk), 0);
    pid = fork();
    assert_true(pid != -1);

    if (pid == 0) {
        _exit(3);
    }

    close(sk[1]);
    assert_int_equal(vsb_supervise(sk[0], pid, &status, &r, err,
                                   sizeof(err)), 0);
    sigemptyset(&none);
    assert_int_equal(sigprocmask(SIG_SETMASK, &none, NULL), 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 3);
    assert_int_equal(r.total, 0);
}


static void
test_refused_record(void **state)
{
    int               i;
    char             *s;
    json_t           *j;
    vsb_sc_refused_t  r;

    memset(&r, 0, sizeof(r));

    for (i = 0; i < VSB_SC_REFUSED_MAX + 4; i++) {
        vsb_seccomp_refused_add(&r, 500 + i, ENOSYS);
    }
    vsb_seccomp_refused_add(&r, 500, ENOSYS);

    assert_int_equal(r.n, VSB_SC_REFUSED_MAX);
    assert_int_equal(r.total, VSB_SC_REFUSED_MAX + 5);
    assert_int_equal(r.sc[0].count, 2);

    /* names where libseccomp knows them; never for negative numbers */
    memset(&r, 0, sizeof(r));
    vsb_seccomp_refused_add(&r, SYS_mount, EPERM);
    vsb_seccomp_refused_add(&r, 467, ENOSYS);
    vsb_seccomp_refused_add(&r, -10100, ENOSYS);
    r.n = 1000;         /* as a corrupt record would: clamped */

    j = vsb_seccomp_refused_json(&r);
    assert_non_null(j);
    assert_int_equal(json_array_size(j), VSB_SC_REFUSED_MAX);

    s = json_dumps(json_array_get(j, 0), JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(s, "{\"count\":1,\"errno\":\"EPERM\",\"name\":"
                        "\"mount\",\"nr\":165}");
    free(s);

    s = json_dumps(json_array_get(j, 1), JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(s, "{\"count\":1,\"errno\":\"ENOSYS\",\"name\":"
                        "null,\"nr\":467}");
    free(s);

    s = json_dumps(json_array_get(j, 2), JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(s, "{\"count\":1,\"errno\":\"ENOSYS\",\"name\":"
                        "null,\"nr\":-10100}");
    free(s);

    json_decref(j);
}


#if defined(__x86_64__)

/* x32 getpid: the x32 bit set on a native syscall number */
static long call_x32_getpid(void)
{ return syscall(0x40000000 | SYS_getpid); }

/* i386 getpid through int 0x80 */
static long
call_i386_getpid(void)
{
    long  rc;

    __asm__ volatile ("int $0x80" : "=a" (rc) : "a" (20L) : "memory");
    return rc;
}


/* the filter killed the child (SIGSYS) */
static void
test_expect_killed(test_call_pt call)
{
    int  status;

    status = test_run(call);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGSYS);
}


static void
test_other_abi_killed(void **state)
{
    test_expect_killed(call_x32_getpid);
    test_expect_killed(call_i386_getpid);
}

#endif


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_unreviewed_enosys),
        cmocka_unit_test(test_workload_supervised),
        cmocka_unit_test(test_workload_without_listener),
        cmocka_unit_test(test_refused_record),
        cmocka_unit_test(test_clone3_enosys),
        cmocka_unit_test(test_allowed),
#if defined(__x86_64__)
        cmocka_unit_test(test_other_abi_killed),
#endif
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
