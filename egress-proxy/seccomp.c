/*
 * Seccomp allowlist for the proxy, installed after start-up (config
 * read, control socket bound, resolver initialized, privileges dropped).
 * Built with SAN=1 the sanitizers' runtime needs a few more calls (the
 * leak checker reads /proc/self/maps and stops the world with clone and
 * ptrace): those are added only in that build.
 */
#include <errno.h>
#include <linux/netlink.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "eg_seccomp.h"

static const char *const  eg_sc_allow[] = {
    "read", "write", "readv", "writev", "recvfrom", "recvmsg", "recvmmsg",
    "sendto", "sendmsg", "sendmmsg", "connect", "accept", "accept4",
    "getsockopt", "setsockopt", "getsockname", "getpeername", "shutdown",
    "bind", "close", "fcntl", "epoll_wait", "epoll_pwait", "epoll_pwait2",
    "epoll_ctl", "clock_gettime", "clock_getres", "gettimeofday", "time",
    "nanosleep", "clock_nanosleep",
    "mmap", "munmap", "mremap", "brk", "madvise", "mprotect",
    "exit", "exit_group", "rt_sigreturn", "rt_sigprocmask", "rt_sigaction",
    "getpid", "gettid", "getuid", "geteuid", "getgid", "getegid",
    "getrandom", "futex", "restart_syscall", "sched_yield", "fstat",
    "newfstatat", "lseek", "tgkill", "poll", "ppoll", "pipe2", "dup", "dup3",
    "signalfd4",
    NULL
};

#ifdef EG_SANITIZER
static const char *const  eg_sc_allow_san[] = {
    "open", "openat", "clone", "clone3", "ptrace", "wait4", "prctl",
    "sigaltstack", "sched_getaffinity", "getdents64", "readlink", "kill",
    "set_robust_list", "rseq", "getppid", "munlock", "mlock", "statx",
    "pread64", "sysinfo", "getrlimit", "prlimit64", "setrlimit", "uname",
    "getdents", "fstatfs", "waitid", "sched_setaffinity", "arch_prctl",
    "set_tid_address", "process_vm_readv", "open_tree", "stat", "lstat",
    "access", "faccessat", "faccessat2", "capget", "getpgid", "getsid",
    NULL
};
#endif

static const char *const  eg_sc_kill[] = {
    "execve", "execveat", NULL
};


static int
eg_sc_add(scmp_filter_ctx ctx, const char *name, uint32_t action,
    char *err, size_t errlen)
{
    int  nr = seccomp_syscall_resolve_name(name), rc;

    if (nr == __NR_SCMP_ERROR) {
        return 0;                    /* not on this architecture */
    }
    rc = seccomp_rule_add(ctx, action, nr, 0);
    if (rc != 0) {
        snprintf(err, errlen, "seccomp_rule_add(%s): %s", name,
                 strerror(-rc));
        return -1;
    }
    return 0;
}


int
eg_seccomp_install(char *err, size_t errlen)
{
    scmp_filter_ctx  ctx;
    size_t           i;
    int              rc;
    static const int families[] = { AF_INET, AF_INET6, AF_NETLINK };

    ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
    if (ctx == NULL) {
        snprintf(err, errlen, "seccomp_init failed");
        return -1;
    }

    for (i = 0; eg_sc_allow[i] != NULL; i++) {
        if (eg_sc_add(ctx, eg_sc_allow[i], SCMP_ACT_ALLOW, err, errlen)
            != 0)
        {
            goto fail;
        }
    }
#ifdef EG_SANITIZER
    for (i = 0; eg_sc_allow_san[i] != NULL; i++) {
        if (eg_sc_add(ctx, eg_sc_allow_san[i], SCMP_ACT_ALLOW, err, errlen)
            != 0)
        {
            goto fail;
        }
    }
#endif
    for (i = 0; eg_sc_kill[i] != NULL; i++) {
        if (eg_sc_add(ctx, eg_sc_kill[i], SCMP_ACT_KILL_PROCESS, err, errlen)
            != 0)
        {
            goto fail;
        }
    }

    /* socket(): inet families for dialling and c-ares, netlink for the
     * host's address list; nothing else (no unix, no packet sockets). */
    for (i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
                              SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t) families[i]));
        if (rc != 0) {
            snprintf(err, errlen, "seccomp_rule_add(socket): %s",
                     strerror(-rc));
            goto fail;
        }
    }

    /* ioctl: only FIONBIO and FIONREAD (c-ares) */
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
                          SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t) FIONBIO));
    if (rc == 0) {
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
                              SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t) FIONREAD));
    }
    if (rc != 0) {
        snprintf(err, errlen, "seccomp_rule_add(ioctl): %s", strerror(-rc));
        goto fail;
    }

    rc = seccomp_load(ctx);
    if (rc != 0) {
        snprintf(err, errlen, "seccomp_load: %s", strerror(-rc));
        goto fail;
    }
    seccomp_release(ctx);
    return 0;

fail:
    seccomp_release(ctx);
    return -1;
}
