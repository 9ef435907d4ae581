/*
 * The workload's seccomp filter.  An allowlist: what build and test
 * tooling needs is allowed by name (seccomp_table.c); everything else,
 * including every syscall a later kernel adds and every number the
 * installed libseccomp cannot name, is refused.  See vsb_seccomp.h for
 * the two variants and docs/isolation.md for the reasoning.
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "vsb_fdpass.h"
#include "vsb_seccomp.h"
#include "vsb_seccomp_int.h"

#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP  0x02000000
#endif

#define VSB_SC_MAX_INSNS  4096

/* every namespace flag clone(2) can carry (CLONE_NEWTIME lies in the
 * exit-signal byte of clone's flags: only unshare and clone3 take it) */
#define VSB_SC_NS_FLAGS  (CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC         \
                          | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET     \
                          | CLONE_NEWCGROUP)


#if defined(__x86_64__)
#define VSB_SC_ARCH  AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define VSB_SC_ARCH  AUDIT_ARCH_AARCH64
#else
#error "seccomp: add this architecture's AUDIT_ARCH_* value"
#endif

#define VSB_SC_NR       offsetof(struct seccomp_data, nr)
#define VSB_SC_ARG_LO(n)  offsetof(struct seccomp_data, args[n])
#define VSB_SC_ARG_HI(n)  (offsetof(struct seccomp_data, args[n]) + 4)

#define VSB_LD(off)          BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define VSB_JEQ(k, t, f)     BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))
#define VSB_JSET(k, t, f)    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, (k), (t), (f))
#define VSB_AND(k)           BPF_STMT(BPF_ALU | BPF_AND | BPF_K, (k))
#define VSB_RET(v)           BPF_STMT(BPF_RET | BPF_K, (v))
#define VSB_ERRNO(e)         VSB_RET(SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))

/*
 * The argument checks, hand-written because libseccomp 2.5 cannot say
 * "not one of these" (one comparison per argument per rule).  It only
 * ever refuses, and otherwise goes on to the allowlist.  Each block
 * starts by loading the syscall number and jumps only within itself or
 * to the next block.  Only the low 32 bits of an argument are checked
 * where the kernel reads an int (family, cmd, mode, clone's flags).
 * Another ABI is left to the allowlist, which kills it.
 *
 * It is not a filter of its own: vsb_seccomp_merge() puts it in front of
 * each allowlist program, its two "allow"s (the third instruction and
 * the last) becoming "go on to the allowlist".  The allowlist allows
 * every syscall it refuses, so the verdict is the one the two filters
 * gave when they were loaded apart, for one installation per process
 * instead of two (the kernel checks, translates and JITs each, and runs
 * it over every syscall number for its cache) and one program run per
 * syscall.
 */
static const struct sock_filter  vsb_sc_args[] = {
    VSB_LD(offsetof(struct seccomp_data, arch)),
    VSB_JEQ(VSB_SC_ARCH, 1, 0),
    VSB_RET(SECCOMP_RET_ALLOW),

    /* personality: only the harmless personas (0, PER_LINUX32, UNAME26,
     * both, and the 0xffffffff query); notably not ADDR_NO_RANDOMIZE,
     * which switches ASLR off for what the workload runs next */
    VSB_LD(VSB_SC_NR),
    VSB_JEQ(__NR_personality, 0, 9),
    VSB_LD(VSB_SC_ARG_HI(0)),
    VSB_JEQ(0, 0, 6),
    VSB_LD(VSB_SC_ARG_LO(0)),
    VSB_JEQ(0x0, 5, 0),
    VSB_JEQ(0x8, 4, 0),
    VSB_JEQ(0x20000, 3, 0),
    VSB_JEQ(0x20008, 2, 0),
    VSB_JEQ(0xffffffff, 1, 0),
    VSB_ERRNO(EPERM),

    /* socket, socketpair: AF_UNIX, AF_INET, AF_INET6, AF_NETLINK only.
     * Any other family (AF_ALG, AF_PACKET, AF_RDS, AF_TIPC, AF_VSOCK,
     * ...) is rarely used code the kernel would autoload as a module for
     * any caller, a steady source of privilege escalations */
    VSB_LD(VSB_SC_NR),
    VSB_JEQ(__NR_socket, 1, 0),
    VSB_JEQ(__NR_socketpair, 0, 6),
    VSB_LD(VSB_SC_ARG_LO(0)),
    VSB_JEQ(AF_UNIX, 4, 0),
    VSB_JEQ(AF_INET, 3, 0),
    VSB_JEQ(AF_INET6, 2, 0),
    VSB_JEQ(AF_NETLINK, 1, 0),
    VSB_ERRNO(EAFNOSUPPORT),

    /* clone: no new namespaces, whatever the flag */
    VSB_LD(VSB_SC_NR),
    VSB_JEQ(__NR_clone, 0, 3),
    VSB_LD(VSB_SC_ARG_LO(0)),
    VSB_JSET(VSB_SC_NS_FLAGS, 0, 1),
    VSB_ERRNO(EPERM),

#ifdef __NR_mknod
    /* device nodes (the user namespace refuses them too) */
    VSB_LD(VSB_SC_NR),
    VSB_JEQ(__NR_mknod, 0, 5),
    VSB_LD(VSB_SC_ARG_LO(1)),
    VSB_AND(S_IFMT),
    VSB_JEQ(S_IFCHR, 1, 0),
    VSB_JEQ(S_IFBLK, 0, 1),
    VSB_ERRNO(EPERM),
#endif

    VSB_LD(VSB_SC_NR),
    VSB_JEQ(__NR_mknodat, 0, 5),
    VSB_LD(VSB_SC_ARG_LO(2)),
    VSB_AND(S_IFMT),
    VSB_JEQ(S_IFCHR, 1, 0),
    VSB_JEQ(S_IFBLK, 0, 1),
    VSB_ERRNO(EPERM),

    /* terminal input injection */
    VSB_LD(VSB_SC_NR),
    VSB_JEQ(__NR_ioctl, 0, 4),
    VSB_LD(VSB_SC_ARG_LO(1)),
    VSB_JEQ(TIOCSTI, 1, 0),
    VSB_JEQ(TIOCLINUX, 0, 1),
    VSB_ERRNO(EPERM),

    VSB_RET(SECCOMP_RET_ALLOW),
};


/* The two allowlist programs. */
typedef struct {
    struct sock_filter  *insns;
    unsigned short       len;
} vsb_sc_prog_t;

static vsb_sc_prog_t  vsb_sc_init_prog;
static vsb_sc_prog_t  vsb_sc_workload_prog;


static int
vsb_seccomp_add(scmp_filter_ctx ctx, const char *const *names,
    uint32_t action, char *err, size_t errlen)
{
    int     nr, rc;
    size_t  i;

    for (i = 0; names[i] != NULL; i++) {
        nr = seccomp_syscall_resolve_name(names[i]);
        if (nr == __NR_SCMP_ERROR) {
            continue;       /* unknown to this libseccomp: stays refused */
        }

        rc = seccomp_rule_add(ctx, action, nr, 0);
        if (rc < 0) {
            snprintf(err, errlen, "seccomp: rule for %s: %s", names[i],
                     strerror(-rc));
            return -1;
        }
    }

    return 0;
}


/* Exports ctx into prog (libseccomp 2.5 can only export to a fd). */
static int
vsb_seccomp_export(scmp_filter_ctx ctx, vsb_sc_prog_t *prog, char *err,
    size_t errlen)
{
    int                  fd, rc;
    off_t                size;
    ssize_t              n;
    struct sock_filter  *insns;

    fd = memfd_create("vsb-seccomp", MFD_CLOEXEC);
    if (fd == -1) {
        snprintf(err, errlen, "seccomp: memfd_create: %s", strerror(errno));
        return -1;
    }

    rc = seccomp_export_bpf(ctx, fd);
    if (rc < 0) {
        snprintf(err, errlen, "seccomp: export: %s", strerror(-rc));
        close(fd);
        return -1;
    }

    size = lseek(fd, 0, SEEK_END);
    if (size <= 0 || size % sizeof(struct sock_filter) != 0
        || size / sizeof(struct sock_filter) > VSB_SC_MAX_INSNS)
    {
        snprintf(err, errlen, "seccomp: export: bad program size %lld",
                 (long long) size);
        close(fd);
        return -1;
    }

    insns = malloc(size);
    if (insns == NULL) {
        snprintf(err, errlen, "seccomp: %s", strerror(errno));
        close(fd);
        return -1;
    }

    n = pread(fd, insns, size, 0);
    if (n != size) {
        snprintf(err, errlen, "seccomp: read back: %s",
                 n == -1 ? strerror(errno) : "short read");
        free(insns);
        close(fd);
        return -1;
    }

    close(fd);

    prog->insns = insns;
    prog->len = (unsigned short) (size / sizeof(struct sock_filter));
    return 0;
}


/* workload: the default hands the call to the listener (the init's
 * supervisor answers); init: the filter answers by itself */
static int
vsb_seccomp_build(int workload, vsb_sc_prog_t *prog, char *err,
    size_t errlen)
{
    int              rc;
    scmp_filter_ctx  ctx;

    ctx = seccomp_init(workload ? SCMP_ACT_NOTIFY : SCMP_ACT_ERRNO(ENOSYS));
    if (ctx == NULL) {
        snprintf(err, errlen, "seccomp: init failed");
        return -1;
    }

    /* another ABI (i386, x32 on x86_64) would dodge every rule */
    rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (rc < 0) {
        snprintf(err, errlen, "seccomp: bad-arch action: %s", strerror(-rc));
        goto failed;
    }

    /* a binary search over ~280 numbers, not a linear scan */
    rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    if (rc < 0) {
        snprintf(err, errlen, "seccomp: optimize: %s", strerror(-rc));
        goto failed;
    }

    if (vsb_seccomp_add(ctx, vsb_sc_allowed, SCMP_ACT_ALLOW, err, errlen)
        != 0)
    {
        goto failed;
    }

    /* the init's default already is ENOSYS (libseccomp refuses a rule
     * that repeats the default) */
    if (workload
        && vsb_seccomp_add(ctx, vsb_sc_refused_enosys, SCMP_ACT_ERRNO(ENOSYS),
                           err, errlen) != 0)
    {
        goto failed;
    }

    /* the workload's EPERM list goes to the supervisor with the rest,
     * so that it is reported too */
    if (!workload
        && vsb_seccomp_add(ctx, vsb_sc_refused_eperm, SCMP_ACT_ERRNO(EPERM),
                           err, errlen) != 0)
    {
        goto failed;
    }

    if (vsb_seccomp_export(ctx, prog, err, errlen) != 0) {
        goto failed;
    }

    seccomp_release(ctx);
    return 0;

failed:

    seccomp_release(ctx);
    return -1;
}


/* The argument checks, then the allowlist: see vsb_sc_args. */
static int
vsb_seccomp_merge(vsb_sc_prog_t *prog, char *err, size_t errlen)
{
    size_t                    nargs, len;
    struct sock_filter       *insns;
    const struct sock_filter  allow = VSB_RET(SECCOMP_RET_ALLOW);

    nargs = sizeof(vsb_sc_args) / sizeof(vsb_sc_args[0]);
    len = nargs - 1 + prog->len;

    if (memcmp(&vsb_sc_args[2], &allow, sizeof(allow)) != 0
        || memcmp(&vsb_sc_args[nargs - 1], &allow, sizeof(allow)) != 0
        || len > VSB_SC_MAX_INSNS)
    {
        snprintf(err, errlen, "seccomp: the argument checks do not merge");
        return -1;
    }

    insns = malloc(len * sizeof(*insns));
    if (insns == NULL) {
        snprintf(err, errlen, "seccomp: %s", strerror(errno));
        return -1;
    }

    /* the allowlist starts where the last "allow" was, so every block's
     * jump to it is unchanged; another ABI jumps there from the third
     * (a jump lands 1 + k further on) */
    memcpy(insns, vsb_sc_args, (nargs - 1) * sizeof(*insns));
    insns[2] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JA,
                                             (unsigned) (nargs - 1 - 3), 0, 0);
    memcpy(insns + nargs - 1, prog->insns, prog->len * sizeof(*insns));

    free(prog->insns);
    prog->insns = insns;
    prog->len = (unsigned short) len;
    return 0;
}


/* The supervisor's buffers in supervise.c must hold what this kernel
 * exchanges; they are fixed so the child allocates nothing. */
static int
vsb_seccomp_check_sizes(char *err, size_t errlen)
{
    struct seccomp_notif_sizes  sz;

    if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) != 0) {
        snprintf(err, errlen, "seccomp: notification sizes: %s",
                 strerror(errno));
        return -1;
    }

    if (sz.seccomp_notif > VSB_SC_NOTIF_BUF
        || sz.seccomp_notif_resp > VSB_SC_NOTIF_BUF)
    {
        snprintf(err, errlen, "seccomp: this kernel's notification is %u "
                 "bytes, the supervisor holds %u", (unsigned) sz.seccomp_notif,
                 (unsigned) VSB_SC_NOTIF_BUF);
        return -1;
    }

    return 0;
}


int
vsb_seccomp_prepare(char *err, size_t errlen)
{
    int     nr;
    size_t  i;

    if (vsb_sc_workload_prog.insns != NULL) {
        return 0;
    }

    if (vsb_seccomp_check_sizes(err, errlen) != 0) {
        return -1;
    }

    memset(vsb_sc_eperm_map, 0, sizeof(vsb_sc_eperm_map));

    for (i = 0; vsb_sc_refused_eperm[i] != NULL; i++) {
        nr = seccomp_syscall_resolve_name(vsb_sc_refused_eperm[i]);
        if (nr >= 0 && nr < VSB_SC_NR_MAX) {
            vsb_sc_eperm_map[nr / 64] |= 1ULL << (nr % 64);
        }
    }

    if (vsb_seccomp_build(0, &vsb_sc_init_prog, err, errlen) != 0) {
        return -1;
    }

    if (vsb_seccomp_build(1, &vsb_sc_workload_prog, err, errlen) != 0) {
        free(vsb_sc_init_prog.insns);
        vsb_sc_init_prog.insns = NULL;
        return -1;
    }

    if (vsb_seccomp_merge(&vsb_sc_init_prog, err, errlen) != 0
        || vsb_seccomp_merge(&vsb_sc_workload_prog, err, errlen) != 0)
    {
        free(vsb_sc_init_prog.insns);
        free(vsb_sc_workload_prog.insns);
        vsb_sc_init_prog.insns = NULL;
        vsb_sc_workload_prog.insns = NULL;
        return -1;
    }

    return 0;
}


int
vsb_seccomp_refusal_errno(long nr)
{
    if (nr >= 0 && nr < VSB_SC_NR_MAX
        && (vsb_sc_eperm_map[nr / 64] & (1ULL << (nr % 64))))
    {
        return EPERM;
    }

    return ENOSYS;
}


/* Sends the listener to the init; the in-flight copy keeps it open. */
static int
vsb_seccomp_send_listener(int sock, int listener, char *err, size_t errlen)
{
    char     byte = 'L';
    ssize_t  n;

    n = vsb_fd_send(sock, &byte, 1, listener);
    if (n != 1) {
        snprintf(err, errlen, "seccomp: hand the listener to the init: %s",
                 n == -1 ? strerror(errno) : "short write");
        return -1;
    }

    return 0;
}


int
vsb_seccomp_apply(int notify_sock, char *err, size_t errlen)
{
    int                 listener, rc;
    struct sock_fprog   prog;
    vsb_sc_prog_t      *p;

    p = (notify_sock == -1) ? &vsb_sc_init_prog : &vsb_sc_workload_prog;

    if (p->insns == NULL) {
        snprintf(err, errlen, "seccomp: filter not prepared");
        return -1;
    }

    prog.len = p->len;
    prog.filter = p->insns;

    if (notify_sock == -1) {
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
            snprintf(err, errlen, "seccomp: load filter: %s",
                     strerror(errno));
            return -1;
        }

        return 0;
    }

    /*
     * The listener must stay open as long as the workload lives: while it
     * is, no later filter of the workload can have a listener of its own
     * (EBUSY), and only a listener could answer "continue" to what this
     * filter refuses.  The init holds it until the workload is gone.
     */
    listener = (int) syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                             SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    if (listener == -1) {
        snprintf(err, errlen, "seccomp: load filter: %s", strerror(errno));
        return -1;
    }

    rc = vsb_seccomp_send_listener(notify_sock, listener, err, errlen);

    close(listener);
    close(notify_sock);

    return rc;
}


void
vsb_seccomp_refused_add(vsb_sc_refused_t *r, long nr, int err)
{
    uint32_t  i;

    if (r->total != UINT32_MAX) {
        r->total++;
    }

    for (i = 0; i < r->n && i < VSB_SC_REFUSED_MAX; i++) {
        if (r->sc[i].nr == nr) {
            if (r->sc[i].count != UINT32_MAX) {
                r->sc[i].count++;
            }
            return;
        }
    }

    if (r->n < VSB_SC_REFUSED_MAX) {
        r->sc[r->n].nr = (int32_t) nr;
        r->sc[r->n].err = err;
        r->sc[r->n].count = 1;
        r->n++;
    }
}


json_t *
vsb_seccomp_refused_json(const vsb_sc_refused_t *r)
{
    char      *name;
    json_t    *a, *e;
    uint32_t   i, n;

    a = json_array();
    if (a == NULL) {
        return NULL;
    }

    n = r->n < VSB_SC_REFUSED_MAX ? r->n : VSB_SC_REFUSED_MAX;

    for (i = 0; i < n; i++) {
        /* libseccomp names negative pseudo numbers too: not ours */
        name = (r->sc[i].nr >= 0)
               ? seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE,
                                                  r->sc[i].nr)
               : NULL;

        e = json_pack("{s:i, s:s?, s:s, s:I}",
                      "nr", (int) r->sc[i].nr,
                      "name", name,
                      "errno", r->sc[i].err == EPERM ? "EPERM" : "ENOSYS",
                      "count", (json_int_t) r->sc[i].count);
        free(name);

        if (e == NULL || json_array_append_new(a, e) != 0) {
            json_decref(a);
            return NULL;
        }
    }

    return a;
}
