/*
 * Clone of the exec's init and everything that runs between clone and
 * the workload's execve.  The helper is single-threaded, so the child may
 * use libc freely (no lock can be held by another thread); it still
 * allocates nothing: argv, envp and the seccomp program were prepared by
 * the helper.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vsb_caps.h"
#include "vsb_landlock.h"
#include "vsb_netns.h"
#include "vsb_rlimits.h"
#include "vsb_rootfs.h"
#include "vsb_seccomp.h"
#include "vsb_spawn.h"
#include "vsb_spawn_ns.h"
#include "vsb_supervise.h"
#include "vsb_user.h"

/* no CLONE_NEWNET: the init is cloned inside the sandbox's network
 * namespace (vsb_netns_enter()), which its execs share */
#define VSB_SPAWN_NS  (CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS         \
                       | CLONE_NEWIPC | CLONE_NEWUTS)

/* what discovery reports (ping): VSB_SPAWN_NS, the network namespace the
 * init is cloned in, and the cgroup namespace it unshares; t/module/discovery.t holds
 * this list against a workload's /proc/self/ns */
const char *const  vsb_spawn_namespaces[] = {
    "user", "pid", "mount", "ipc", "uts", "network", "cgroup", NULL
};

/* the init's descriptors after it has tidied up */
#define VSB_FD_STATUS  3
#define VSB_FD_SYNC    4
/* the workload's: where its seccomp listener goes to the init */
#define VSB_FD_NOTIFY  4

extern char  **environ;

static pid_t vsb_spawn_clone(int *pidfd);
static void vsb_spawn_init(const vsb_spawn_t *sp, int sync_fd, int tree,
    int *cgfds, size_t ncg)
    __attribute__((noreturn));
static pid_t vsb_spawn_vfork(const vsb_spawn_t *sp, int notify_fd);
static void vsb_spawn_workload(const vsb_spawn_t *sp, int notify_fd)
    __attribute__((noreturn));
static void vsb_spawn_fail(int fd, int code, const char *step)
    __attribute__((noreturn));
static void vsb_spawn_fail_msg(int fd, int code, const char *detail)
    __attribute__((noreturn));


static void
vsb_spawn_report(int fd, uint32_t kind, int status, int errnum,
    const char *detail, const vsb_sc_refused_t *refused)
{
    ssize_t             n;
    vsb_spawn_status_t  st;

    memset(&st, 0, sizeof(st));
    st.kind = kind;
    st.status = status;
    st.errnum = errnum;

    if (detail != NULL) {
        strncpy(st.detail, detail, sizeof(st.detail) - 1);
    }

    if (refused != NULL) {
        st.refused = *refused;
    }

    do {
        n = write(fd, &st, sizeof(st));
    } while (n == -1 && errno == EINTR);
}


/* A setup step failed: tell the helper which and why, and die. */
static void
vsb_spawn_fail(int fd, int code, const char *step)
{
    int   saved;
    char  detail[sizeof(((vsb_spawn_status_t *) 0)->detail)];

    saved = errno;
    snprintf(detail, sizeof(detail), "%s: %s", step, strerror(saved));
    vsb_spawn_report(fd, VSB_SPAWN_FAILED, 0, saved, detail, NULL);
    _exit(code);
}


/* The same, with a message that already says why. */
static void
vsb_spawn_fail_msg(int fd, int code, const char *detail)
{
    vsb_spawn_report(fd, VSB_SPAWN_FAILED, 0, 0, detail, NULL);
    _exit(code);
}


static pid_t
vsb_spawn_clone(int *pidfd)
{
    long                  pid;
    struct clone_args     args;

    memset(&args, 0, sizeof(args));
    args.flags = VSB_SPAWN_NS | CLONE_PIDFD;
    args.pidfd = (uint64_t) (uintptr_t) pidfd;
    args.exit_signal = 0;       /* a "clone" child: waitpid(-1) skips it */

    pid = syscall(SYS_clone3, &args, sizeof(args));
    if (pid == -1 && errno == ENOSYS) {
        /* fork-like raw clone: no stack, pidfd stored via parent_tid */
        pid = syscall(SYS_clone, VSB_SPAWN_NS | CLONE_PIDFD, NULL, pidfd,
                      NULL, NULL);
    }

    return (pid_t) pid;
}


pid_t
vsb_spawn(const vsb_spawn_t *sp, int *pidfd, char *err, size_t errlen)
{
    int        sync[2], fd, saved, tree, cgfds[VSB_CGROUP_JOIN_MAX];
    char       byte;
    size_t     ncg;
    pid_t      pid;
    ssize_t    n;
    siginfo_t  si;

    if (vsb_seccomp_prepare(err, errlen) != 0) {
        return -1;
    }

    /* v1: the init joins the exec cgroup itself (vsb_cgroup.h says why) */
    if (vsb_cgroup_join_open(sp->cgroup, cgfds, &ncg, err, errlen) != 0) {
        return -1;
    }

    if (pipe2(sync, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "spawn: sync pipe: %s", strerror(errno));
        vsb_cgroup_join_close(cgfds, ncg);
        return -1;
    }

    fd = -1;
    pid = -1;

    /* the init's mounts are copied from the spawn namespace, which has
     * none of the sandboxes': it gets its own sandbox's as a tree */
    if (vsb_spawn_ns_tree(sp->sb, &tree, err, errlen) != 0) {
        goto undo;
    }

    if (tree != -1 && vsb_spawn_ns_enter(err, errlen) != 0) {
        goto undo;
    }

    /* a namespace of the initial user namespace cannot be joined from a
     * new user namespace: join it first, clone, come back */
    if (vsb_netns_enter(sp->sb, err, errlen) != 0) {
        if (tree != -1) {
            vsb_spawn_ns_leave();
        }
        goto undo;
    }

    pid = vsb_spawn_clone(&fd);
    saved = errno;

    if (pid != 0) {
        vsb_netns_leave();
        if (tree != -1) {
            vsb_spawn_ns_leave();
        }
    }

    if (pid == -1) {
        snprintf(err, errlen, "spawn: clone with new namespaces: %s",
                 strerror(saved));
        goto undo;
    }

    if (pid == 0) {
        close(sync[1]);
        vsb_spawn_init(sp, sync[0], tree, cgfds, ncg);
    }

undo:

    close(sync[0]);
    if (tree != -1) {
        close(tree);
    }
    vsb_cgroup_join_close(cgfds, ncg);

    if (pid == -1) {
        close(sync[1]);
        return -1;
    }

    if (ncg == 0 && vsb_cgroup_attach(sp->cgroup, pid) != 0) {
        snprintf(err, errlen, "spawn: attach init %d to exec cgroup: %s",
                 (int) pid, strerror(errno));
        goto failed;
    }

    if (vsb_user_map(pid, sp->sb->host_uid, err, errlen) != 0) {
        goto failed;
    }

    byte = 'g';

    do {
        n = write(sync[1], &byte, 1);
    } while (n == -1 && errno == EINTR);

    if (n != 1) {
        snprintf(err, errlen, "spawn: release init: %s", strerror(errno));
        goto failed;
    }

    close(sync[1]);

    *pidfd = fd;
    return pid;

failed:

    /* the child is still blocked on the sync pipe: this is immediate */
    close(sync[1]);

    if (syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0) != 0) {
        kill(pid, SIGKILL);
    }

    while (waitid(P_PIDFD, (id_t) fd, &si, WEXITED | __WALL) == -1
           && errno == EINTR)
    {
        /* void */
    }

    close(fd);
    return -1;
}


/* ---- in the child ---- */

static void
vsb_spawn_signals(void)
{
    int               sig;
    sigset_t          set;
    struct sigaction  sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);

    /* the helper's handlers and mask mean nothing here */
    for (sig = 1; sig < NSIG; sig++) {
        if (sig != SIGKILL && sig != SIGSTOP) {
            (void) sigaction(sig, &sa, NULL);   /* EINVAL for libc's own */
        }
    }

    sigemptyset(&set);
    (void) sigprocmask(SIG_SETMASK, &set, NULL);
}


/*
 * Moves the pipes to 0, 1, 2 (stdio) and 3 (status, close-on-exec), the
 * sync pipe to 4, and closes everything else the helper had open: its
 * sockets, other sandboxes' pipes, its epoll instance.
 */
static void
vsb_spawn_fds(const vsb_spawn_t *sp, int sync_fd)
{
    int  in, out, er, st, sy;

    /* first above anything we are about to overwrite */
    in = fcntl(sp->stdin_fd, F_DUPFD_CLOEXEC, 16);
    out = fcntl(sp->stdout_fd, F_DUPFD_CLOEXEC, 16);
    er = fcntl(sp->stderr_fd, F_DUPFD_CLOEXEC, 16);
    st = fcntl(sp->status_fd, F_DUPFD_CLOEXEC, 16);
    sy = fcntl(sync_fd, F_DUPFD_CLOEXEC, 16);

    if (in == -1 || out == -1 || er == -1 || st == -1 || sy == -1) {
        vsb_spawn_fail(sp->status_fd, 1, "init: duplicate pipes");
    }

    if (dup2(in, 0) == -1 || dup2(out, 1) == -1 || dup2(er, 2) == -1
        || dup3(st, VSB_FD_STATUS, O_CLOEXEC) == -1
        || dup3(sy, VSB_FD_SYNC, O_CLOEXEC) == -1)
    {
        vsb_spawn_fail(st, 1, "init: move pipes to 0-4");
    }

    if (close_range(VSB_FD_SYNC + 1, ~0U, 0) != 0) {
        vsb_spawn_fail(VSB_FD_STATUS, 1, "init: close inherited descriptors");
    }
}


/*
 * The init is a copy of the helper: its argv and environment (config
 * path, whatever the operator exported) would show in the sandbox's
 * /proc/1/cmdline.  Overwrite both areas in our copy of the memory.
 */
static void
vsb_spawn_hide_args(void)
{
    int                 fd, field;
    char                buf[1024], *p, *end;
    ssize_t             n;
    unsigned long long  v[4];
    static const char   name[] = "sandbox-init";

    if (prctl(PR_SET_NAME, name, 0, 0, 0) != 0) {
        vsb_spawn_fail(VSB_FD_STATUS, 1, "init: set name");
    }

    fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd == -1) {
        vsb_spawn_fail(VSB_FD_STATUS, 1, "init: open /proc/self/stat");
    }

    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);

    if (n <= 0) {
        vsb_spawn_fail(VSB_FD_STATUS, 1, "init: read /proc/self/stat");
    }

    buf[n] = '\0';

    /* the command name may hold anything; fields resume after the last
     * ')' with field 3; arg_start .. env_end are fields 48 .. 51 */
    p = strrchr(buf, ')');
    if (p == NULL) {
        errno = EINVAL;
        vsb_spawn_fail(VSB_FD_STATUS, 1, "init: parse /proc/self/stat");
    }

    p++;

    for (field = 3; field <= 51; field++) {
        while (*p == ' ') {
            p++;
        }

        errno = 0;
        if (field == 3) {
            end = (*p != '\0') ? p + 1 : p;     /* the state letter */
        } else if (field >= 48) {
            v[field - 48] = strtoull(p, &end, 10);
        } else {
            (void) strtoull(p, &end, 10);   /* "-1" parses too */
        }

        if (end == p || errno != 0) {
            errno = EINVAL;
            vsb_spawn_fail(VSB_FD_STATUS, 1, "init: parse /proc/self/stat");
        }

        p = end;
    }

    if (v[1] > v[0] && v[1] - v[0] < 1024 * 1024) {
        memset((void *) (uintptr_t) v[0], 0, v[1] - v[0]);
        if (v[1] - v[0] > sizeof(name)) {
            memcpy((void *) (uintptr_t) v[0], name, sizeof(name));
        }
    }

    if (v[3] > v[2] && v[3] - v[2] < 1024 * 1024) {
        memset((void *) (uintptr_t) v[2], 0, v[3] - v[2]);
    }
}


static void
vsb_spawn_init(const vsb_spawn_t *sp, int sync_fd, int tree, int *cgfds,
    size_t ncg)
{
    int               status, nsk[2];
    char              byte, err[200], msg[240];
    pid_t             workload;
    ssize_t           n;
    struct pollfd     pfd;
    vsb_sc_refused_t  refused;

    /* first: into the exec cgroup, before this process can do or start
     * anything (v1; the helper attached us on v2).  Until then it is
     * only the helper's code, and the helper kills it by its pidfd. */
    if (vsb_cgroup_join_self(cgfds, ncg) != 0) {
        vsb_spawn_fail(sp->status_fd, 1, "init: join the exec cgroup "
                       "(\"0\" to its tasks files)");
    }

    /* where the host has it, before the descriptor goes with the rest */
    if (tree != -1 && vsb_spawn_ns_attach(tree, sp->sb) != 0) {
        vsb_spawn_fail(sp->status_fd, 1, "init: attach the sandbox's tree "
                       "(move_mount)");
    }

    vsb_spawn_fds(sp, sync_fd);

    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
        vsb_spawn_fail(VSB_FD_STATUS, 1, "init: set parent-death signal");
    }

    vsb_spawn_signals();

    /* leave the helper's session: no controlling terminal of the host */
    if (setsid() == -1) {
        vsb_spawn_fail(VSB_FD_STATUS, 1, "init: setsid");
    }

    /* wait until we are in the exec cgroup and our uid map exists */
    do {
        n = read(VSB_FD_SYNC, &byte, 1);
    } while (n == -1 && errno == EINTR);

    if (n != 1) {
        _exit(1);               /* the helper gave up on us */
    }

    close(VSB_FD_SYNC);

#define VSB_STEP(call)                                                       \
    if ((call) != 0) {                                                       \
        snprintf(msg, sizeof(msg), "init: %s", err);                         \
        vsb_spawn_fail_msg(VSB_FD_STATUS, 1, msg);                           \
    }

    err[0] = '\0';

    /* until now the kernel still saw host root's uid; become the
     * sandbox's own root (host_uid) */
    VSB_STEP(vsb_user_become(0, 0, err, sizeof(err)));

    /* a session keyring of our own, not the helper's (keyctl is refused
     * to the workload anyway; ENOSYS: a kernel without keys) */
    if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) == -1
        && errno != ENOSYS)
    {
        vsb_spawn_fail(VSB_FD_STATUS, 1, "init: join a new session keyring");
    }

    /* the credential change cleared it */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
        vsb_spawn_fail(VSB_FD_STATUS, 1, "init: set parent-death signal");
    }

    /* and the helper may have died meanwhile: it alone reads the status
     * pipe, so a reader-less pipe means nobody would ever reap us */
    pfd.fd = VSB_FD_STATUS;
    pfd.events = POLLOUT;
    pfd.revents = 0;

    if (poll(&pfd, 1, 0) == -1 || (pfd.revents & POLLERR)) {
        _exit(1);
    }

    /* we are in the exec cgroup now: make it our cgroup root */
    if (unshare(CLONE_NEWCGROUP) != 0) {
        vsb_spawn_fail(VSB_FD_STATUS, 1, "init: unshare cgroup namespace");
    }

    if (sethostname("sandbox", sizeof("sandbox") - 1) != 0) {
        vsb_spawn_fail(VSB_FD_STATUS, 1, "init: sethostname");
    }

    VSB_STEP(vsb_rootfs_enter(sp->sb, err, sizeof(err)));

    vsb_spawn_hide_args();

    /* the workload sends its seccomp listener to us over this */
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, nsk) != 0) {
        vsb_spawn_fail(VSB_FD_STATUS, 1, "init: seccomp listener socket");
    }

    workload = vsb_spawn_vfork(sp, nsk[1]);
    if (workload == -1) {
        vsb_spawn_fail(VSB_FD_STATUS, 1, "init: start workload "
                       "(clone CLONE_VM|CLONE_VFORK)");
    }

    close(nsk[1]);

    /* the init keeps no end of the workload's pipes */
    status = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (status == -1 || dup2(status, 0) == -1 || dup2(status, 1) == -1
        || dup2(status, 2) == -1)
    {
        vsb_spawn_fail(VSB_FD_STATUS, 1, "init: stdio to /dev/null");
    }

    close(status);

    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
        vsb_spawn_fail(VSB_FD_STATUS, 1, "init: set not dumpable");
    }

    VSB_STEP(vsb_caps_lock(err, sizeof(err)));
    VSB_STEP(vsb_caps_drop(err, sizeof(err)));
    VSB_STEP(vsb_seccomp_apply(-1, err, sizeof(err)));

    /* pid 1: reap everything, answer the workload's refused syscalls;
     * the workload's end is the exec's end */
    VSB_STEP(vsb_supervise(nsk[0], workload, &status, &refused, err,
                           sizeof(err)));

#undef VSB_STEP

    vsb_spawn_report(VSB_FD_STATUS, VSB_SPAWN_EXITED, status, 0, NULL,
                     &refused);
    _exit(0);
}


/* AddressSanitizer cannot follow a switch to a stack of our own (it
 * warns on the workload's stderr): its builds fork */
#if defined(__SANITIZE_ADDRESS__)
#define VSB_SPAWN_FORK  1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VSB_SPAWN_FORK  1
#endif
#endif

/*
 * The workload starts as posix_spawn(3) starts a child: in our memory
 * (CLONE_VM) on a stack of its own, this process held (CLONE_VFORK)
 * until it has called execve or died.  A fork would copy the init's
 * page tables (a copy of the helper's) for the workload to throw away
 * at execve, and both would take copy-on-write faults meanwhile.  What
 * the child changes is its own: its credentials, seccomp filter and
 * Landlock domain (per task), rlimits (its own signal struct: no
 * CLONE_THREAD), descriptors, cwd and umask (no CLONE_FILES, CLONE_FS).
 * In memory it writes only its stack, errno, environ and what the libc
 * calls it makes write.
 */

#ifndef VSB_SPAWN_FORK

typedef struct {
    const vsb_spawn_t  *sp;
    int                 notify_fd;
} vsb_spawn_child_t;

#define VSB_SPAWN_STACK  (256 * 1024)


static int
vsb_spawn_child(void *data)
{
    vsb_spawn_child_t  *c = data;

    vsb_spawn_workload(c->sp, c->notify_fd);
}

#endif


static pid_t
vsb_spawn_vfork(const vsb_spawn_t *sp, int notify_fd)
{
#ifdef VSB_SPAWN_FORK
    pid_t  pid;

    pid = fork();
    if (pid == 0) {
        vsb_spawn_workload(sp, notify_fd);
    }

    return pid;
#else
    void               *stack;
    pid_t               pid;
    vsb_spawn_child_t   c;

    stack = mmap(NULL, VSB_SPAWN_STACK, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) {
        return -1;
    }

    c.sp = sp;
    c.notify_fd = notify_fd;

    /* the stack grows down on every architecture we build for */
    pid = clone(vsb_spawn_child, (char *) stack + VSB_SPAWN_STACK,
                CLONE_VM | CLONE_VFORK | SIGCHLD, &c);

    /* the child has exec'd or died: its stack is ours again */
    (void) munmap(stack, VSB_SPAWN_STACK);
    return pid;
#endif
}


static void
vsb_spawn_workload(const vsb_spawn_t *sp, int notify_fd)
{
    char  err[200], msg[240];
    int   saved;

#define VSB_STEP(call)                                                       \
    if ((call) != 0) {                                                       \
        snprintf(msg, sizeof(msg), "workload: %s", err);                     \
        vsb_spawn_fail_msg(VSB_FD_STATUS, 126, msg);                         \
    }

    err[0] = '\0';

    if (setsid() == -1) {
        vsb_spawn_fail(VSB_FD_STATUS, 126, "workload: setsid");
    }

    /* bounding set and securebits need CAP_SETPCAP, which the uid
     * change takes away */
    VSB_STEP(vsb_caps_lock(err, sizeof(err)));
    VSB_STEP(vsb_user_become(VSB_WORKLOAD_UID, VSB_WORKLOAD_GID, err,
                             sizeof(err)));
    VSB_STEP(vsb_caps_drop(err, sizeof(err)));

    /* the init's death kills us with the pid namespace anyway */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
        vsb_spawn_fail(VSB_FD_STATUS, 126,
                       "workload: set parent-death signal");
    }

    VSB_STEP(vsb_rlimits_apply(&sp->sb->limits, err, sizeof(err)));

    if (notify_fd != VSB_FD_NOTIFY
        && dup3(notify_fd, VSB_FD_NOTIFY, O_CLOEXEC) == -1)
    {
        vsb_spawn_fail(VSB_FD_STATUS, 126, "workload: move listener socket");
    }

    /* 0-2 are the pipes, 3 the status pipe, 4 the listener socket (both
     * close-on-exec) */
    if (close_range(VSB_FD_NOTIFY + 1, ~0U, 0) != 0) {
        vsb_spawn_fail(VSB_FD_STATUS, 126,
                       "workload: close inherited descriptors");
    }

    /* whatever the helper runs under, files come out 0644 and 0755 */
    (void) umask(022);

    if (chdir(sp->cwd) != 0) {
        saved = errno;
        snprintf(err, sizeof(err), "cwd \"%.120s\": %s", sp->cwd,
                 strerror(saved));
        vsb_spawn_report(VSB_FD_STATUS, VSB_SPAWN_BAD_CWD, 0, saved, err,
                         NULL);
        _exit(127);
    }

    /* execvp searches the workload's PATH (environ is shared with the
     * init, which reads it no more: vsb_spawn_hide_args cleared it) */
    environ = (char **) sp->envp;

    /* the mounts are set: Landlock is the second wall around them */
    VSB_STEP(vsb_landlock_apply(sp->sb, err, sizeof(err)));

    /* last: the filter refuses what the steps above needed */
    VSB_STEP(vsb_seccomp_apply(VSB_FD_NOTIFY, err, sizeof(err)));

#undef VSB_STEP

    execvp(sp->argv[0], sp->argv);

    saved = errno;
    dprintf(2, "sandbox: exec %s: %s\n", sp->argv[0], strerror(saved));
    _exit(127);
}
