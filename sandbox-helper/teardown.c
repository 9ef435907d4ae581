/*
 * A sandbox's files and mounts are removed by a child process, so that
 * a tenant's big tree never stalls the helper's single thread.  The child
 * is forked from the single-threaded helper (libc is safe in it), keeps
 * only its report pipe, does the removal with its checks, writes one
 * report (smaller than PIPE_BUF: atomic) and exits.  The helper watches
 * its pidfd, reads the report, checks once more and calls done.  A
 * sandbox whose tmpfs is nearly empty (VSB_TEARDOWN_INLINE_*: what a
 * create leaves, or little more) is removed on the helper's thread, with
 * the same work and checks: the child would cost more than the umount.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vsb_log.h"
#include "vsb_loop.h"
#include "vsb_netns.h"
#include "vsb_storage.h"
#include "vsb_teardown.h"

#define VSB_TEARDOWN_FD    3        /* the report pipe, in the child */
#define VSB_TEARDOWN_NICE  10

/* A tmpfs at most this full is removed on the helper's thread: its
 * umount frees a few dozen inodes and pages (a fresh sandbox holds about
 * 40 inodes and no data), less than the fork, the child's wake-up and
 * its report cost (about 1 ms, more when the child at nice 10 waits for
 * a CPU). */
#define VSB_TEARDOWN_INLINE_INODES  256
#define VSB_TEARDOWN_INLINE_BYTES   (1024 * 1024)

typedef struct {
    int32_t   failed;
    char      step[16];
    char      detail[480];
} vsb_teardown_report_t;

typedef struct {
    vsb_sandbox_t          *sb;
    vsb_teardown_done_pt    done;
    pid_t                   pid;
    int                     rfd;        /* report pipe, read end */
    vsb_event_t             ev;         /* the child's pidfd */
    vsb_timer_t             later;      /* no child: report from the loop */
    uint64_t                start_ms;
    vsb_teardown_report_t   rep;
} vsb_teardown_t;


/* The removal itself, with its own verification; fills rep on failure. */
static void
vsb_teardown_work(vsb_sandbox_t *sb, vsb_teardown_report_t *rep)
{
    const char  *step = NULL;

    memset(rep, 0, sizeof(*rep));

    if (vsb_netns_remove(sb, rep->detail, sizeof(rep->detail)) != 0) {
        rep->failed = 1;
        snprintf(rep->step, sizeof(rep->step), "network");
        return;
    }

    if (vsb_storage_delete(sb, &step, rep->detail, sizeof(rep->detail))
        != 0)
    {
        rep->failed = 1;
        snprintf(rep->step, sizeof(rep->step), "%s", step ? step : "files");
    }
}


static void
vsb_teardown_child(vsb_sandbox_t *sb, int wfd, pid_t parent)
{
    vsb_teardown_report_t  rep;
    ssize_t                n;

    /* the helper's handlers would poke its signal pipe */
    (void) signal(SIGTERM, SIG_DFL);
    (void) signal(SIGINT, SIG_DFL);

    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0
        || getppid() != parent)
    {
        _exit(1);               /* nobody would read the report */
    }

    (void) prctl(PR_SET_NAME, "vsb-teardown", 0, 0, 0);

    /* background work: the helper's loop, nginx and the workloads come
     * first; nice 10 still has a share under load, so a destroy is slowed
     * by a busy machine, never starved (its reply waits for this) */
    if (setpriority(PRIO_PROCESS, 0, VSB_TEARDOWN_NICE) != 0) {
        vsb_log_errno(VSB_LOG_WARN, "teardown: setpriority(%d)",
                      VSB_TEARDOWN_NICE);
    }

    /* hold no client connection open: only 0-2 and the report pipe */
    if ((wfd != VSB_TEARDOWN_FD && dup2(wfd, VSB_TEARDOWN_FD) == -1)
        || close_range(VSB_TEARDOWN_FD + 1, ~0U, 0) != 0)
    {
        _exit(1);
    }

    vsb_teardown_work(sb, &rep);

    do {
        n = write(VSB_TEARDOWN_FD, &rep, sizeof(rep));
    } while (n == -1 && errno == EINTR);

    _exit(n == (ssize_t) sizeof(rep) ? 0 : 1);
}


static void
vsb_teardown_report(vsb_teardown_t *t)
{
    const char  *step = NULL;

    /* confirmed by the child; the cheap part is checked again here */
    if (!t->rep.failed && (access(t->sb->dir, F_OK) == 0 || errno != ENOENT))
    {
        t->rep.failed = 1;
        snprintf(t->rep.step, sizeof(t->rep.step), "files");
        snprintf(t->rep.detail, sizeof(t->rep.detail), "\"%.400s\" still "
                 "exists after its removal was reported", t->sb->dir);
    }

    if (t->rep.failed) {
        step = t->rep.step[0] != '\0' ? t->rep.step : "files";
    }

    t->rep.step[sizeof(t->rep.step) - 1] = '\0';
    t->rep.detail[sizeof(t->rep.detail) - 1] = '\0';

    vsb_log(VSB_LOG_DEBUG, "sandbox %s: storage teardown %s after %llu ms",
            t->sb->id, step ? "failed" : "done",
            (unsigned long long) (vsb_now_ms() - t->start_ms));

    t->done(t->sb, step, t->rep.detail);
    free(t);
}


static void
vsb_teardown_exited(vsb_event_t *ev, uint32_t revents)
{
    vsb_teardown_t  *t = ev->data;
    siginfo_t        si;
    ssize_t          n;

    memset(&si, 0, sizeof(si));

    if (waitid(P_PIDFD, (id_t) ev->fd, &si, WEXITED | WNOHANG) != 0) {
        if (errno == EINTR || errno == EAGAIN) {
            return;
        }
        vsb_log_errno(VSB_LOG_ERR, "sandbox %s: waitid for teardown %d",
                      t->sb->id, (int) t->pid);

    } else if (si.si_pid == 0) {
        return;                 /* spurious: still running */
    }

    (void) vsb_loop_del(ev);
    close(ev->fd);
    ev->fd = -1;

    do {
        n = read(t->rfd, &t->rep, sizeof(t->rep));
    } while (n == -1 && errno == EINTR);

    close(t->rfd);
    t->rfd = -1;

    if (n != (ssize_t) sizeof(t->rep)) {
        memset(&t->rep, 0, sizeof(t->rep));
        t->rep.failed = 1;
        snprintf(t->rep.detail, sizeof(t->rep.detail), "the teardown "
                 "process %d ended (%s %d) without a report", (int) t->pid,
                 si.si_code == CLD_EXITED ? "status" : "signal",
                 si.si_status);
    }

    vsb_teardown_report(t);
}


static void
vsb_teardown_later(vsb_timer_t *timer)
{
    vsb_teardown_report(timer->data);
}


/* 1 when sb's tmpfs is small enough to go on the helper's thread. */
static int
vsb_teardown_small(const vsb_sandbox_t *sb)
{
    struct statfs  sf;

    if (sb->dir[0] == '\0' || statfs(sb->dir, &sf) != 0
        || sf.f_type != TMPFS_MAGIC)
    {
        return 0;               /* not a tmpfs as expected: the child */
    }

    return sf.f_files - sf.f_ffree <= VSB_TEARDOWN_INLINE_INODES
           && (uint64_t) (sf.f_blocks - sf.f_bfree) * (uint64_t) sf.f_bsize
              <= VSB_TEARDOWN_INLINE_BYTES;
}


void
vsb_teardown_start(vsb_sandbox_t *sb, vsb_teardown_done_pt done)
{
    int              p[2] = { -1, -1 }, pidfd = -1;
    pid_t            pid = -1, parent;
    vsb_teardown_t  *t;

    t = calloc(1, sizeof(*t));
    if (t == NULL) {
        done(sb, "files", "out of memory for the teardown");
        return;
    }

    /* the helper's hold on the network namespace goes first: with no
     * process left in it, the pin is then the last reference */
    vsb_netns_release(sb);

    t->sb = sb;
    t->done = done;
    t->rfd = -1;
    t->ev.fd = -1;
    t->start_ms = vsb_now_ms();
    parent = getpid();

    if (vsb_teardown_small(sb)) {
        vsb_log(VSB_LOG_DEBUG, "sandbox %s: storage teardown here (small)",
                sb->id);
        goto here;
    }

    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
        vsb_log_errno(VSB_LOG_WARN, "sandbox %s: teardown pipe", sb->id);
        goto no_child;
    }

    pid = fork();
    if (pid == -1) {
        vsb_log_errno(VSB_LOG_WARN, "sandbox %s: fork teardown", sb->id);
        goto no_child;
    }

    if (pid == 0) {
        close(p[0]);
        vsb_teardown_child(sb, p[1], parent);
    }

    close(p[1]);
    p[1] = -1;
    t->pid = pid;
    t->rfd = p[0];

    pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
    if (pidfd == -1) {
        /* cannot watch it: wait for it here (it runs the same work) */
        vsb_log_errno(VSB_LOG_WARN, "sandbox %s: pidfd_open(teardown %d)",
                      sb->id, (int) pid);
        goto wait_here;
    }

    t->ev.fd = pidfd;
    t->ev.handler = vsb_teardown_exited;
    t->ev.data = t;

    if (vsb_loop_add(&t->ev, EPOLLIN) != 0) {
        vsb_log_errno(VSB_LOG_WARN, "sandbox %s: watch teardown %d", sb->id,
                      (int) pid);
        goto wait_here;
    }

    vsb_log(VSB_LOG_DEBUG, "sandbox %s: storage teardown in process %d",
            sb->id, (int) pid);
    return;

wait_here:

    if (pidfd != -1) {
        close(pidfd);
    }
    t->ev.fd = -1;

    while (waitpid(pid, NULL, 0) == -1 && errno == EINTR) {
        /* void */
    }

    if (read(t->rfd, &t->rep, sizeof(t->rep)) != (ssize_t) sizeof(t->rep)) {
        /* the child failed or said nothing: do it (again) here */
        vsb_teardown_work(sb, &t->rep);
    }

    close(t->rfd);
    t->rfd = -1;
    goto later;

no_child:

    if (p[0] != -1) {
        close(p[0]);
        close(p[1]);
    }

here:

    vsb_teardown_work(sb, &t->rep);

later:

    t->later.handler = vsb_teardown_later;
    t->later.data = t;
    vsb_timer_add(&t->later, 0);
}
