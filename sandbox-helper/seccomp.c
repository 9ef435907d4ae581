/*
 * The workload's seccomp filter.  Default allow (workloads are arbitrary
 * build and test tooling), with the kernel attack surface that a
 * container has no business touching refused with EPERM.  The list is
 * at least what Docker's default profile refuses; see docs/isolation.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vsb_seccomp.h"

#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP  0x02000000
#endif
#ifndef AF_VSOCK
#define AF_VSOCK  40
#endif

#define VSB_SC_MAX_INSNS  4096

typedef struct {
    const char  *name;
    int          err;
} vsb_sc_deny_t;

/* syscall refused when (arg & mask) == value */
typedef struct {
    const char  *name;
    unsigned     arg;
    uint64_t     mask;
    uint64_t     value;
    int          err;
} vsb_sc_masked_t;


static const vsb_sc_deny_t  vsb_sc_deny[] = {
    /* filesystem namespace: a workload never rearranges its mounts or
     * escapes its root */
    { "mount", EPERM }, { "umount", EPERM }, { "umount2", EPERM },
    { "pivot_root", EPERM }, { "chroot", EPERM },
    { "fsopen", EPERM }, { "fsconfig", EPERM }, { "fsmount", EPERM },
    { "fspick", EPERM }, { "move_mount", EPERM }, { "open_tree", EPERM },
    { "mount_setattr", EPERM },

    /* namespaces: new user namespaces are the largest source of kernel
     * privilege-escalation bugs; joining others is never needed */
    { "unshare", EPERM }, { "setns", EPERM },

    /* clone3 carries its flags in memory seccomp cannot read: ENOSYS
     * makes libc fall back to clone, whose flags are checked below */
    { "clone3", ENOSYS },

    /* other processes' memory and tracing */
    { "ptrace", EPERM }, { "process_vm_readv", EPERM },
    { "process_vm_writev", EPERM }, { "kcmp", EPERM },
    { "pidfd_getfd", EPERM }, { "process_madvise", EPERM },

    /* kernel programmability, profiling and tracing interfaces */
    { "bpf", EPERM }, { "perf_event_open", EPERM },
    { "lookup_dcookie", EPERM }, { "fanotify_init", EPERM },

    /* the kernel keyring is not namespaced */
    { "keyctl", EPERM }, { "add_key", EPERM }, { "request_key", EPERM },

    /* kernel replacement and modules */
    { "kexec_load", EPERM }, { "kexec_file_load", EPERM },
    { "init_module", EPERM }, { "finit_module", EPERM },
    { "delete_module", EPERM }, { "create_module", EPERM },
    { "get_kernel_syms", EPERM }, { "query_module", EPERM },

    /* a rich source of use-after-free exploits (race widening) */
    { "userfaultfd", EPERM },

    /* io_uring bypasses seccomp for the operations it performs */
    { "io_uring_setup", EPERM }, { "io_uring_enter", EPERM },
    { "io_uring_register", EPERM },

    /* file handles bypass path-based confinement (shocker) */
    { "open_by_handle_at", EPERM }, { "name_to_handle_at", EPERM },

    /* host-wide state: accounting, swap, power, log, clocks, names */
    { "acct", EPERM }, { "swapon", EPERM }, { "swapoff", EPERM },
    { "reboot", EPERM }, { "syslog", EPERM },
    { "settimeofday", EPERM }, { "clock_settime", EPERM },
    { "clock_adjtime", EPERM }, { "adjtimex", EPERM },
    { "sethostname", EPERM }, { "setdomainname", EPERM },
    { "quotactl", EPERM }, { "quotactl_fd", EPERM },
    { "vhangup", EPERM }, { "nfsservctl", EPERM },

    /* hardware and legacy interfaces */
    { "iopl", EPERM }, { "ioperm", EPERM }, { "modify_ldt", EPERM },
    { "uselib", EPERM }, { "ustat", EPERM }, { "sysfs", EPERM },
    { "_sysctl", EPERM }, { "vm86", EPERM }, { "vm86old", EPERM },

    /* NUMA policy: host-wide memory placement */
    { "get_mempolicy", EPERM }, { "set_mempolicy", EPERM },
    { "set_mempolicy_home_node", EPERM }, { "mbind", EPERM },
    { "move_pages", EPERM }, { "migrate_pages", EPERM },
};


static const vsb_sc_masked_t  vsb_sc_masked[] = {
    /* clone: no new namespaces, whatever the flag */
    { "clone", 0, CLONE_NEWNS, CLONE_NEWNS, EPERM },
    { "clone", 0, CLONE_NEWUTS, CLONE_NEWUTS, EPERM },
    { "clone", 0, CLONE_NEWIPC, CLONE_NEWIPC, EPERM },
    { "clone", 0, CLONE_NEWUSER, CLONE_NEWUSER, EPERM },
    { "clone", 0, CLONE_NEWPID, CLONE_NEWPID, EPERM },
    { "clone", 0, CLONE_NEWNET, CLONE_NEWNET, EPERM },
    { "clone", 0, CLONE_NEWCGROUP, CLONE_NEWCGROUP, EPERM },

    /* device nodes (the user namespace refuses them too) */
    { "mknod", 1, S_IFMT, S_IFCHR, EPERM },
    { "mknod", 1, S_IFMT, S_IFBLK, EPERM },
    { "mknodat", 2, S_IFMT, S_IFCHR, EPERM },
    { "mknodat", 2, S_IFMT, S_IFBLK, EPERM },

    /* terminal input injection */
    { "ioctl", 1, 0xffffffffULL, TIOCSTI, EPERM },
    { "ioctl", 1, 0xffffffffULL, TIOCLINUX, EPERM },

    /* vsock reaches the hypervisor and is not namespaced */
    { "socket", 0, 0xffffffffULL, AF_VSOCK, EPERM },
};


#if defined(__x86_64__)
#define VSB_SC_ARCH  AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define VSB_SC_ARCH  AUDIT_ARCH_AARCH64
#else
#error "seccomp: add this architecture's AUDIT_ARCH_* value"
#endif

#define VSB_SC_ARG0_LO  offsetof(struct seccomp_data, args[0])
#define VSB_SC_ARG0_HI  (offsetof(struct seccomp_data, args[0]) + 4)

/*
 * A second, hand-written filter for what libseccomp 2.5 cannot say ("not
 * one of these": one comparison per argument per rule); the kernel
 * applies the stricter verdict of the two.  Other ABIs are left to the
 * main filter, which kills them.
 *
 * personality: only the harmless personas (Docker's list: 0, PER_LINUX32,
 * UNAME26, both, and the 0xffffffff query); notably not
 * ADDR_NO_RANDOMIZE, which switches ASLR off for what the workload runs
 * next.
 *
 * socket, socketpair: only AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK.
 * Any other family (AF_ALG, AF_RDS, AF_TIPC, AF_CAN, AF_BLUETOOTH, ...)
 * makes the kernel autoload its protocol module for an unprivileged
 * caller: rarely used code, a steady source of privilege escalations.
 * The family is an int: only the low 32 bits count.
 */
static struct sock_filter  vsb_sc_extra[] = {
    /*  0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                      offsetof(struct seccomp_data, arch)),
    /*  1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, VSB_SC_ARCH, 0, 17),
    /*  2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                      offsetof(struct seccomp_data, nr)),
    /*  3 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_personality, 0, 8),
    /*  4 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, VSB_SC_ARG0_HI),
    /*  5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 14),
    /*  6 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, VSB_SC_ARG0_LO),
    /*  7 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x0, 11, 0),
    /*  8 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x8, 10, 0),
    /*  9 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x20000, 9, 0),
    /* 10 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x20008, 8, 0),
    /* 11 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffff, 7, 8),
    /* 12 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 1, 0),
    /* 13 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socketpair, 0, 5),
    /* 14 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, VSB_SC_ARG0_LO),
    /* 15 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 3, 0),
    /* 16 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET, 2, 0),
    /* 17 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 1, 0),
    /* 18 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 0, 2),
    /* 19 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    /* 20 */ BPF_STMT(BPF_RET | BPF_K,
                      SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
    /* 21 */ BPF_STMT(BPF_RET | BPF_K,
                      SECCOMP_RET_ERRNO | (EAFNOSUPPORT & SECCOMP_RET_DATA)),
};

static struct sock_filter  *vsb_sc_insns;
static unsigned short       vsb_sc_len;


static int
vsb_seccomp_rules(scmp_filter_ctx ctx, char *err, size_t errlen)
{
    int       nr, rc;
    size_t    i;

    for (i = 0; i < sizeof(vsb_sc_deny) / sizeof(vsb_sc_deny[0]); i++) {
        nr = seccomp_syscall_resolve_name(vsb_sc_deny[i].name);
        if (nr == __NR_SCMP_ERROR) {
            continue;       /* not on this architecture or libseccomp */
        }

        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(vsb_sc_deny[i].err), nr, 0);
        if (rc < 0) {
            snprintf(err, errlen, "seccomp: rule for %s: %s",
                     vsb_sc_deny[i].name, strerror(-rc));
            return -1;
        }
    }

    for (i = 0; i < sizeof(vsb_sc_masked) / sizeof(vsb_sc_masked[0]); i++) {
        nr = seccomp_syscall_resolve_name(vsb_sc_masked[i].name);
        if (nr == __NR_SCMP_ERROR) {
            continue;
        }

        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(vsb_sc_masked[i].err), nr,
                              1, SCMP_CMP(vsb_sc_masked[i].arg,
                                          SCMP_CMP_MASKED_EQ,
                                          vsb_sc_masked[i].mask,
                                          vsb_sc_masked[i].value));
        if (rc < 0) {
            snprintf(err, errlen, "seccomp: rule for %s: %s",
                     vsb_sc_masked[i].name, strerror(-rc));
            return -1;
        }
    }

    return 0;
}


int
vsb_seccomp_prepare(char *err, size_t errlen)
{
    int              rc, fd;
    off_t            size;
    ssize_t          n;
    scmp_filter_ctx  ctx;

    if (vsb_sc_insns != NULL) {
        return 0;
    }

    ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (ctx == NULL) {
        snprintf(err, errlen, "seccomp: init failed");
        return -1;
    }

    fd = -1;

    /* another ABI (i386, x32 on x86_64) would dodge every rule below */
    rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (rc < 0) {
        snprintf(err, errlen, "seccomp: bad-arch action: %s", strerror(-rc));
        goto failed;
    }

    if (vsb_seccomp_rules(ctx, err, errlen) != 0) {
        goto failed;
    }

    /* libseccomp 2.5 can only export to a descriptor */
    fd = memfd_create("vsb-seccomp", MFD_CLOEXEC);
    if (fd == -1) {
        snprintf(err, errlen, "seccomp: memfd_create: %s", strerror(errno));
        goto failed;
    }

    rc = seccomp_export_bpf(ctx, fd);
    if (rc < 0) {
        snprintf(err, errlen, "seccomp: export: %s", strerror(-rc));
        goto failed;
    }

    size = lseek(fd, 0, SEEK_END);
    if (size <= 0 || size % sizeof(struct sock_filter) != 0
        || size / sizeof(struct sock_filter) > VSB_SC_MAX_INSNS)
    {
        snprintf(err, errlen, "seccomp: export: bad program size %lld",
                 (long long) size);
        goto failed;
    }

    vsb_sc_insns = malloc(size);
    if (vsb_sc_insns == NULL) {
        snprintf(err, errlen, "seccomp: %s", strerror(errno));
        goto failed;
    }

    n = pread(fd, vsb_sc_insns, size, 0);
    if (n != size) {
        snprintf(err, errlen, "seccomp: read back: %s",
                 n == -1 ? strerror(errno) : "short read");
        free(vsb_sc_insns);
        vsb_sc_insns = NULL;
        goto failed;
    }

    vsb_sc_len = (unsigned short) (size / sizeof(struct sock_filter));

    close(fd);
    seccomp_release(ctx);
    return 0;

failed:

    if (fd != -1) {
        close(fd);
    }

    seccomp_release(ctx);
    return -1;
}


int
vsb_seccomp_apply(char *err, size_t errlen)
{
    struct sock_fprog  prog;

    if (vsb_sc_insns == NULL) {
        snprintf(err, errlen, "seccomp: filter not prepared");
        return -1;
    }

    prog.len = sizeof(vsb_sc_extra) / sizeof(vsb_sc_extra[0]);
    prog.filter = vsb_sc_extra;

    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
        snprintf(err, errlen, "seccomp: load personality/socket filter: %s",
                 strerror(errno));
        return -1;
    }

    prog.len = vsb_sc_len;
    prog.filter = vsb_sc_insns;

    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
        snprintf(err, errlen, "seccomp: load filter: %s", strerror(errno));
        return -1;
    }

    return 0;
}
