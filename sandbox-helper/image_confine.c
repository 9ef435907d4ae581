/*
 * The unpacking child, confined (vsb_image_unpack.h).  The privileged
 * side never reads an image byte: it hands over a tarball's descriptor,
 * or opens layout blobs by digest for the child, and waits.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <grp.h>

#include <openssl/evp.h>
#include <seccomp.h>

#include "vsb_caps.h"
#include "vsb_fdio.h"
#include "vsb_fdpass.h"
#include "vsb_image.h"
#include "vsb_image_unpack.h"

#define VSB_CONFINE_NS  (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID \
                         | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS \
                         | CLONE_NEWCGROUP)

#define VSB_FD_TAR      3
#define VSB_FD_BROKER   4
#define VSB_FD_REPORT   5
#define VSB_FD_SYNC     6

#define VSB_REPORT_MAX  1024

#if defined(__SANITIZE_ADDRESS__)
#define VSB_CONFINE_SANITIZED  1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VSB_CONFINE_SANITIZED  1
#endif
#endif

/* all the child may call once it reads the image */
static const char  *vsb_confine_allow[] = {
    "read", "write", "pread64", "lseek", "close", "openat", "openat2",
    "fstat", "newfstatat", "statx", "mkdirat", "unlinkat", "symlinkat",
    "linkat", "readlinkat", "getdents64", "fchmod", "ftruncate",
    "utimensat", "brk", "mmap", "munmap", "mremap", "mprotect", "madvise",
    "sendto", "recvmsg", "exit", "exit_group", "rt_sigreturn",
    "rt_sigprocmask", "futex", "getpid", "gettid", "clock_gettime",
    "gettimeofday", "fcntl", "getrandom", "sched_yield", "sigaltstack",
    "prlimit64", "getrlimit",
    /* what glibc calls for mkdir(), unlink(), stat() on some ABIs */
    "mkdir", "unlink", "rmdir", "stat", "lstat", "readlink",
};


/* ---- the child ---- */

static void vsb_confine_child(const vsb_unpack_args_t *a)
    __attribute__((noreturn));


static void
vsb_confine_report(const char *msg)
{
    /* nowhere to tell of a failure: the parent reads what came */
    (void) vsb_write_full(VSB_FD_REPORT, msg, strlen(msg));
}


static void
vsb_confine_fail(const char *what, int e) __attribute__((noreturn));

static void
vsb_confine_fail(const char *what, int e)
{
    char  msg[VSB_REPORT_MAX];

    if (e) {
        snprintf(msg, sizeof(msg), "unpacker: %s: %s", what, strerror(e));
    } else {
        snprintf(msg, sizeof(msg), "%s", what);
    }

    vsb_confine_report(msg);
    _exit(1);
}


static int
vsb_confine_seccomp(char *err, size_t errlen)
{
    scmp_filter_ctx  ctx;
    size_t           i;
    int              nr, rc;

    ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
    if (ctx == NULL) {
        snprintf(err, errlen, "seccomp_init failed");
        return -1;
    }

    rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (rc != 0) {
        snprintf(err, errlen, "seccomp: bad-arch action: %s", strerror(-rc));
        seccomp_release(ctx);
        return -1;
    }

    for (i = 0; i < sizeof(vsb_confine_allow) / sizeof(vsb_confine_allow[0]);
         i++)
    {
        nr = seccomp_syscall_resolve_name(vsb_confine_allow[i]);
        if (nr == __NR_SCMP_ERROR) {
            continue;           /* not on this architecture */
        }

        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
        if (rc != 0) {
            snprintf(err, errlen, "seccomp: allow %s: %s",
                     vsb_confine_allow[i], strerror(-rc));
            seccomp_release(ctx);
            return -1;
        }
    }

    rc = seccomp_load(ctx);
    seccomp_release(ctx);

    if (rc != 0) {
        snprintf(err, errlen, "seccomp: load: %s", strerror(-rc));
        return -1;
    }

    return 0;
}


static void
vsb_confine_limit(int res, uint64_t v, const char *what)
{
    struct rlimit  rl;

    rl.rlim_cur = rl.rlim_max = (rlim_t) v;

    if (setrlimit(res, &rl) != 0) {
        vsb_confine_fail(what, errno);
    }
}


static void
vsb_confine_child(const vsb_unpack_args_t *a)
{
    struct mount_attr  attr;
    unsigned char      md[EVP_MAX_MD_SIZE];
    unsigned int       mdlen;
    char               err[VSB_REPORT_MAX], sync;
    int                rc;

    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) {
        vsb_confine_fail("set the parent-death signal", errno);
    }

    /* wait for the uid and gid maps */
    if (read(VSB_FD_SYNC, &sync, 1) != 1) {
        vsb_confine_fail("wait for the uid map", errno ? errno : EPIPE);
    }
    close(VSB_FD_SYNC);

    /* OpenSSL may read its configuration once: before the pivot */
    if (EVP_Digest("", 0, md, &mdlen, EVP_sha256(), NULL) != 1) {
        vsb_confine_fail("unpacker: sha256 unavailable", 0);
    }

    /* "/" becomes the staging directory, and nothing else is visible */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        vsb_confine_fail("make / private", errno);
    }

    if (mount(a->staging, a->staging, NULL, MS_BIND, NULL) != 0) {
        vsb_confine_fail("bind the staging directory", errno);
    }

    if (chdir(a->staging) != 0) {
        vsb_confine_fail("chdir into the staging directory", errno);
    }

    if (syscall(SYS_pivot_root, ".", ".") != 0) {
        vsb_confine_fail("pivot_root into the staging directory", errno);
    }

    if (umount2(".", MNT_DETACH) != 0 || chdir("/") != 0) {
        vsb_confine_fail("detach the old root", errno);
    }

    memset(&attr, 0, sizeof(attr));
    attr.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;

    if (syscall(SYS_mount_setattr, AT_FDCWD, "/", AT_RECURSIVE, &attr,
                sizeof(attr)) != 0)
    {
        vsb_confine_fail("make the staging mount nosuid, nodev, noexec",
                         errno);
    }

    /* the one mapped id; no supplementary group of root's is kept */
    if (setgroups(0, NULL) != 0) {
        vsb_confine_fail("drop supplementary groups", errno);
    }

    if (setresgid(0, 0, 0) != 0 || setresuid(0, 0, 0) != 0) {
        vsb_confine_fail("become the mapped user", errno);
    }

    vsb_confine_limit(RLIMIT_FSIZE, a->tar_fd != -1 ? a->lim->max_bytes
                      : a->lim->max_file_bytes, "limit file sizes");
    vsb_confine_limit(RLIMIT_NOFILE, 64, "limit descriptors");
    vsb_confine_limit(RLIMIT_CORE, 0, "disable core dumps");
    vsb_confine_limit(RLIMIT_CPU, a->lim->max_seconds, "limit cpu time");
#ifndef VSB_CONFINE_SANITIZED
    vsb_confine_limit(RLIMIT_AS, 2ULL << 30, "limit memory");
#endif

    /* a file over RLIMIT_FSIZE fails with EFBIG, named, not a signal */
    if (signal(SIGXFSZ, SIG_IGN) == SIG_ERR) {
        vsb_confine_fail("ignore SIGXFSZ", errno);
    }

    if (vsb_caps_lock(err, sizeof(err)) != 0
        || vsb_caps_drop(err, sizeof(err)) != 0)
    {
        vsb_confine_fail(err, 0);
    }

    if (vsb_confine_seccomp(err, sizeof(err)) != 0) {
        vsb_confine_fail(err, 0);
    }

    rc = vsb_image_unpack_run(a->tar_fd != -1 ? -1 : VSB_FD_BROKER,
                              a->tar_fd != -1 ? VSB_FD_TAR : -1, a->digest,
                              a->lim, err, sizeof(err));
    if (rc != 0) {
        vsb_confine_fail(err, 0);
    }

    vsb_confine_report("ok");
    _exit(0);
}


/* ---- the privileged side ---- */

static int
vsb_confine_map(pid_t pid, uid_t uid, char *err, size_t errlen)
{
    static const char  *files[] = { "uid_map", "gid_map" };
    char                path[64], map[64];
    size_t              i, len;
    int                 fd;

    len = (size_t) snprintf(map, sizeof(map), "0 %u 1\n", (unsigned) uid);

    for (i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "/proc/%d/%s", (int) pid, files[i]);

        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd == -1 || write(fd, map, len) != (ssize_t) len) {
            snprintf(err, errlen, "write %s: %s", path, strerror(errno));
            if (fd != -1) {
                close(fd);
            }
            return -1;
        }

        close(fd);
    }

    return 0;
}


/* One blob request: exactly a digest; the answer an errno and an fd. */
static int
vsb_confine_serve(int sock, int layout_fd)
{
    char             req[VSB_IMAGE_DIGEST_LEN + 2], path[96], why[160];
    int              code = 0, fd = -1;
    ssize_t          n;
    struct stat      st;

    n = recv(sock, req, sizeof(req) - 1, MSG_DONTWAIT);
    if (n <= 0) {
        return n == 0 || (n == -1 && errno != EAGAIN) ? -1 : 0;
    }
    req[n] = '\0';

    if (vsb_image_digest_parse(req, NULL, why, sizeof(why)) != 0) {
        code = EINVAL;
    } else {
        snprintf(path, sizeof(path), "blobs/sha256/%s", req + 7);

        fd = vsb_openat2(layout_fd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK,
                         0, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS
                            | RESOLVE_NO_MAGICLINKS);
        if (fd == -1) {
            code = errno;
        } else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            code = EINVAL;
            close(fd);
            fd = -1;
        }
    }

    n = vsb_fd_send(sock, &code, sizeof(code), fd);

    if (fd != -1) {
        close(fd);
    }

    return n == (ssize_t) sizeof(code) ? 0 : -1;
}


static int64_t
vsb_confine_now_ms(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


int
vsb_image_unpack_confined(const vsb_unpack_args_t *a, char *err,
    size_t errlen)
{
    int            rep[2] = { -1, -1 }, syn[2] = { -1, -1 };
    int            sp[2] = { -1, -1 }, status, rc = -1, timed_out = 0;
    char           report[VSB_REPORT_MAX + 1];
    size_t         rlen = 0;
    ssize_t        n;
    pid_t          pid;
    int64_t        deadline, left;
    struct pollfd  pfd[2];

    err[0] = '\0';

    if (pipe2(rep, O_CLOEXEC) != 0 || pipe2(syn, O_CLOEXEC) != 0
        || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0)
    {
        snprintf(err, errlen, "unpack: pipes: %s", strerror(errno));
        goto done;
    }

    pid = (pid_t) syscall(SYS_clone, SIGCHLD | VSB_CONFINE_NS, NULL, NULL,
                          NULL, NULL);
    if (pid == -1) {
        snprintf(err, errlen, "unpack: clone with new namespaces: %s",
                 strerror(errno));
        goto done;
    }

    if (pid == 0) {
        /* fixed descriptors, everything else closed; first moved out of
         * the way, so that no dup2 overwrites a source still needed */
        int  t = -1, b, r, y;

        if (a->tar_fd != -1) {
            t = fcntl(a->tar_fd, F_DUPFD, 32);
        }
        b = fcntl(sp[1], F_DUPFD, 32);
        r = fcntl(rep[1], F_DUPFD, 32);
        y = fcntl(syn[0], F_DUPFD, 32);

        if ((a->tar_fd != -1 && (t == -1 || dup2(t, VSB_FD_TAR) == -1))
            || b == -1 || r == -1 || y == -1
            || dup2(b, VSB_FD_BROKER) == -1
            || dup2(r, VSB_FD_REPORT) == -1
            || dup2(y, VSB_FD_SYNC) == -1
            || syscall(SYS_close_range, VSB_FD_SYNC + 1, ~0U, 0) != 0)
        {
            _exit(127);
        }
        if (a->tar_fd == -1) {
            (void) close(VSB_FD_TAR);
        }
        vsb_confine_child(a);
    }

    close(rep[1]);
    close(syn[0]);
    close(sp[1]);
    rep[1] = syn[0] = sp[1] = -1;

    if (vsb_confine_map(pid, a->uid, err, errlen) != 0
        || write(syn[1], "g", 1) != 1)
    {
        if (err[0] == '\0') {
            snprintf(err, errlen, "unpack: start the child: %s",
                     strerror(errno));
        }
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        goto done;
    }

    deadline = vsb_confine_now_ms() + (int64_t) a->lim->max_seconds * 1000;

    for ( ;; ) {
        left = deadline - vsb_confine_now_ms();
        if (left <= 0) {
            timed_out = 1;
            kill(pid, SIGKILL);
            break;
        }

        pfd[0].fd = rep[0];
        pfd[0].events = POLLIN;
        pfd[1].fd = a->layout_fd != -1 ? sp[0] : -1;
        pfd[1].events = POLLIN;

        n = poll(pfd, 2, (int) (left > 60000 ? 60000 : left));
        if (n == -1 && errno == EINTR) {
            continue;
        }
        if (n == -1) {
            snprintf(err, errlen, "unpack: poll: %s", strerror(errno));
            kill(pid, SIGKILL);
            break;
        }

        if (pfd[1].revents & POLLIN) {
            if (vsb_confine_serve(sp[0], a->layout_fd) != 0) {
                pfd[1].fd = -1;
            }
        }

        if (pfd[0].revents & (POLLIN | POLLHUP)) {
            n = read(rep[0], report + rlen, VSB_REPORT_MAX - rlen);
            if (n == -1 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                break;          /* the child is gone */
            }
            rlen += (size_t) n;
            if (rlen == VSB_REPORT_MAX) {
                break;
            }
        }
    }

    report[rlen] = '\0';

    while (waitpid(pid, &status, 0) == -1) {
        if (errno != EINTR) {
            snprintf(err, errlen, "unpack: waitpid: %s", strerror(errno));
            goto done;
        }
    }

    if (timed_out) {
        snprintf(err, errlen, "unpack: killed after %llu s (the time bound; "
                 "--timeout)", (unsigned long long) a->lim->max_seconds);
        goto done;
    }

    if (WIFEXITED(status) && WEXITSTATUS(status) == 0
        && strcmp(report, "ok") == 0)
    {
        rc = 0;
        goto done;
    }

    if (rlen > 0 && strcmp(report, "ok") != 0) {
        snprintf(err, errlen, "%s", report);
    } else if (WIFSIGNALED(status)) {
        snprintf(err, errlen, "unpacker killed by signal %d%s",
                 WTERMSIG(status), WTERMSIG(status) == SIGSYS
                 ? " (a system call outside its seccomp filter)" : "");
    } else {
        snprintf(err, errlen, "unpacker exited with status %d and no report",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }

done:

    if (rep[0] != -1) close(rep[0]);
    if (rep[1] != -1) close(rep[1]);
    if (syn[0] != -1) close(syn[0]);
    if (syn[1] != -1) close(syn[1]);
    if (sp[0] != -1) close(sp[0]);
    if (sp[1] != -1) close(sp[1]);
    return rc;
}
