/*
 * Records made durable off the loop (vsb_durable.h).  One FIFO of
 * entries, each with a sequence number.  A flush forks a child (from the
 * single-threaded helper: libc is safe in it) that fsyncs every queued
 * record and then each directory they are in, writes one report (smaller
 * than PIPE_BUF) and exits; the helper watches its pidfd.  When the child
 * succeeded, every entry up to the last one it saw is done: the unlinks
 * among them happen now, in the helper.  Entries queued meanwhile wait
 * for the next flush, which starts as soon as this one ended.  A failed
 * flush is logged and tried again a second later; its unlinks wait.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vsb_durable.h"
#include "vsb_log.h"
#include "vsb_loop.h"
#include "vsb_statefile.h"

#define VSB_DURABLE_FD        3       /* the report pipe, in the child */
#define VSB_DURABLE_RETRY_MS  1000
#define VSB_DURABLE_DELAY_MS  1
#define VSB_DURABLE_DIRS      8

typedef struct vsb_durable_s  vsb_durable_t;

struct vsb_durable_s {
    vsb_durable_t  *next;
    uint64_t        seq;
    unsigned        unlink:1;
    size_t          dirlen;           /* path[dirlen] is the '/' */
    char            path[];
};

typedef struct {
    int32_t         failed;
    char            detail[480];
} vsb_durable_report_t;

static vsb_durable_t         *vsb_durable_head, *vsb_durable_tail;
static unsigned               vsb_durable_n;
static uint64_t               vsb_durable_seq;
static vsb_timer_t            vsb_durable_timer;

/* the flush running now */
static pid_t                  vsb_durable_pid = -1;
static int                    vsb_durable_rfd = -1;
static uint64_t               vsb_durable_upto;
static vsb_event_t            vsb_durable_ev = { .fd = -1 };
static int                    vsb_durable_failing;

static void vsb_durable_start(vsb_timer_t *t);


static int
vsb_durable_queue(const char *dir, const char *name, int unlink)
{
    vsb_durable_t  *d;
    size_t          dl = strlen(dir), nl = strlen(name);

    d = malloc(sizeof(*d) + dl + 1 + nl + 1);
    if (d == NULL) {
        return -1;
    }

    d->next = NULL;
    d->seq = ++vsb_durable_seq;
    d->unlink = unlink ? 1 : 0;
    d->dirlen = dl;
    memcpy(d->path, dir, dl);
    d->path[dl] = '/';
    memcpy(d->path + dl + 1, name, nl + 1);

    if (vsb_durable_tail != NULL) {
        vsb_durable_tail->next = d;
    } else {
        vsb_durable_head = d;
    }
    vsb_durable_tail = d;
    vsb_durable_n++;

    /* a moment later, from the loop: the reply that waits on the loop
     * (a destroy's) is written before the fork, and every record of
     * these turns goes in one flush */
    if (vsb_durable_pid == -1 && !vsb_durable_timer.armed) {
        vsb_durable_timer.handler = vsb_durable_start;
        vsb_timer_add(&vsb_durable_timer, VSB_DURABLE_DELAY_MS);
    }

    return 0;
}


int
vsb_durable_sync(const char *dir, const char *name)
{
    return vsb_durable_queue(dir, name, 0);
}


int
vsb_durable_unlink(const char *dir, const char *name)
{
    return vsb_durable_queue(dir, name, 1);
}


unsigned
vsb_durable_pending(void)
{
    return vsb_durable_n;
}


static int
vsb_durable_fsync(const char *path, int dir, vsb_durable_report_t *rep)
{
    int  fd;

    fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC
                    | (dir ? O_DIRECTORY : O_NONBLOCK));
    if (fd == -1) {
        if (errno == ENOENT && !dir) {
            return 0;           /* removed or replaced since: nothing to do */
        }
        snprintf(rep->detail, sizeof(rep->detail), "open(\"%.400s\"): %s",
                 path, strerror(errno));
        return -1;
    }

    if (fsync(fd) != 0) {
        snprintf(rep->detail, sizeof(rep->detail), "fsync(\"%.400s\"): %s",
                 path, strerror(errno));
        close(fd);
        return -1;
    }

    close(fd);
    return 0;
}


/* Every record queued up to seq upto on disk, then their directories. */
static void
vsb_durable_work(uint64_t upto, vsb_durable_report_t *rep)
{
    vsb_durable_t  *d, *dirs[VSB_DURABLE_DIRS];
    size_t          nd = 0, i;
    char            path[PATH_MAX];

    memset(rep, 0, sizeof(*rep));

    for (d = vsb_durable_head; d != NULL && d->seq <= upto; d = d->next) {
        if (d->unlink) {
            continue;
        }

        if (vsb_durable_fsync(d->path, 0, rep) != 0) {
            rep->failed = 1;
            return;
        }

        for (i = 0; i < nd; i++) {
            if (dirs[i]->dirlen == d->dirlen
                && memcmp(dirs[i]->path, d->path, d->dirlen) == 0)
            {
                break;
            }
        }

        if (i < nd) {
            continue;
        }

        if (nd == VSB_DURABLE_DIRS) {
            /* more directories than kept: this one is synced now */
            memcpy(path, d->path, d->dirlen);
            path[d->dirlen] = '\0';
            if (vsb_durable_fsync(path, 1, rep) != 0) {
                rep->failed = 1;
                return;
            }
            continue;
        }

        dirs[nd++] = d;
    }

    for (i = 0; i < nd; i++) {
        memcpy(path, dirs[i]->path, dirs[i]->dirlen);
        path[dirs[i]->dirlen] = '\0';
        if (vsb_durable_fsync(path, 1, rep) != 0) {
            rep->failed = 1;
            return;
        }
    }
}


/* The entries up to upto are durable: their unlinks happen now. */
static int
vsb_durable_done(uint64_t upto)
{
    vsb_durable_t  *d;
    char            err[512];
    int             rc = 0;

    while (vsb_durable_head != NULL && vsb_durable_head->seq <= upto) {
        d = vsb_durable_head;
        vsb_durable_head = d->next;
        if (vsb_durable_head == NULL) {
            vsb_durable_tail = NULL;
        }
        vsb_durable_n--;

        if (d->unlink) {
            d->path[d->dirlen] = '\0';
            if (vsb_statefile_remove(d->path, d->path + d->dirlen + 1, err,
                                     sizeof(err)) != 0)
            {
                vsb_log(VSB_LOG_ERR, "record %s/%s remains (the next start "
                        "removes it): %s", d->path, d->path + d->dirlen + 1,
                        err);
                rc = -1;
            }
        }

        free(d);
    }

    return rc;
}


static void
vsb_durable_result(const vsb_durable_report_t *rep)
{
    uint64_t  upto = vsb_durable_upto;

    vsb_durable_pid = -1;

    if (rep->failed) {
        /* kept, tried again: their unlinks wait (nothing is lost while
         * the host runs; a host crash would cost what is queued) */
        if (!vsb_durable_failing) {
            vsb_log(VSB_LOG_ERR, "state records not yet on disk, trying "
                    "again every %d ms: %s", VSB_DURABLE_RETRY_MS,
                    rep->detail);
        }
        vsb_durable_failing = 1;
        vsb_durable_timer.handler = vsb_durable_start;
        vsb_timer_add(&vsb_durable_timer, VSB_DURABLE_RETRY_MS);
        return;
    }

    if (vsb_durable_failing) {
        vsb_log(VSB_LOG_INFO, "state records on disk again");
        vsb_durable_failing = 0;
    }

    (void) vsb_durable_done(upto);

    if (vsb_durable_head != NULL) {
        vsb_durable_timer.handler = vsb_durable_start;
        vsb_timer_add(&vsb_durable_timer, 0);
    }
}


/* The child ended: its report says whether it got them all on disk. */
static void
vsb_durable_reap(int block)
{
    vsb_durable_report_t  rep;
    siginfo_t             si;
    ssize_t               n;

    for ( ;; ) {
        memset(&si, 0, sizeof(si));

        if (waitid(P_PIDFD, (id_t) vsb_durable_ev.fd, &si,
                   WEXITED | (block ? 0 : WNOHANG)) == 0)
        {
            if (si.si_pid == 0) {
                return;         /* spurious: still running */
            }
            break;
        }

        if (errno == EINTR && block) {
            continue;
        }

        if (errno == EINTR || errno == EAGAIN) {
            return;
        }

        vsb_log_errno(VSB_LOG_ERR, "waitid for the flush %d",
                      (int) vsb_durable_pid);
        break;
    }

    (void) vsb_loop_del(&vsb_durable_ev);
    close(vsb_durable_ev.fd);
    vsb_durable_ev.fd = -1;

    do {
        n = read(vsb_durable_rfd, &rep, sizeof(rep));
    } while (n == -1 && errno == EINTR);

    close(vsb_durable_rfd);
    vsb_durable_rfd = -1;

    if (n != (ssize_t) sizeof(rep)) {
        memset(&rep, 0, sizeof(rep));
        rep.failed = 1;
        snprintf(rep.detail, sizeof(rep.detail), "the flush process %d "
                 "ended (%s %d) without a report", (int) vsb_durable_pid,
                 si.si_code == CLD_EXITED ? "status" : "signal",
                 si.si_status);
    }

    rep.detail[sizeof(rep.detail) - 1] = '\0';
    vsb_durable_result(&rep);
}


static void
vsb_durable_exited(vsb_event_t *ev, uint32_t revents)
{
    (void) ev;
    (void) revents;
    vsb_durable_reap(0);
}


static void
vsb_durable_child(int wfd, pid_t parent)
{
    vsb_durable_report_t  rep;
    ssize_t               n;

    (void) signal(SIGTERM, SIG_DFL);
    (void) signal(SIGINT, SIG_DFL);

    /* a helper gone has its records in the page cache: nothing is lost
     * by not finishing */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0
        || getppid() != parent)
    {
        _exit(1);
    }

    (void) prctl(PR_SET_NAME, "vsb-sync", 0, 0, 0);

    if ((wfd != VSB_DURABLE_FD && dup2(wfd, VSB_DURABLE_FD) == -1)
        || close_range(VSB_DURABLE_FD + 1, ~0U, 0) != 0)
    {
        _exit(1);
    }

    vsb_durable_work(vsb_durable_upto, &rep);

    do {
        n = write(VSB_DURABLE_FD, &rep, sizeof(rep));
    } while (n == -1 && errno == EINTR);

    _exit(n == (ssize_t) sizeof(rep) ? 0 : 1);
}


/* Here, blocking: the fallback when no child can do it. */
static void
vsb_durable_here(void)
{
    vsb_durable_report_t  rep;

    vsb_durable_work(vsb_durable_upto, &rep);
    vsb_durable_result(&rep);
}


static void
vsb_durable_start(vsb_timer_t *t)
{
    int    p[2] = { -1, -1 }, pidfd;
    pid_t  pid, parent;

    (void) t;

    if (vsb_durable_pid != -1 || vsb_durable_head == NULL) {
        return;
    }

    vsb_durable_upto = vsb_durable_tail->seq;
    parent = getpid();

    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
        vsb_log_errno(VSB_LOG_WARN, "flush of state records: pipe");
        vsb_durable_here();
        return;
    }

    pid = fork();
    if (pid == -1) {
        vsb_log_errno(VSB_LOG_WARN, "flush of state records: fork");
        close(p[0]);
        close(p[1]);
        vsb_durable_here();
        return;
    }

    if (pid == 0) {
        close(p[0]);
        vsb_durable_child(p[1], parent);
    }

    close(p[1]);
    vsb_durable_pid = pid;
    vsb_durable_rfd = p[0];

    pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
    if (pidfd == -1) {
        vsb_log_errno(VSB_LOG_WARN, "flush of state records: "
                      "pidfd_open(%d)", (int) pid);
        while (waitpid(pid, NULL, 0) == -1 && errno == EINTR) {
            /* void */
        }
        close(vsb_durable_rfd);
        vsb_durable_rfd = -1;
        vsb_durable_here();     /* again here: cheap if the child did it */
        return;
    }

    vsb_durable_ev.fd = pidfd;
    vsb_durable_ev.handler = vsb_durable_exited;
    vsb_durable_ev.data = NULL;

    if (vsb_loop_add(&vsb_durable_ev, EPOLLIN) != 0) {
        vsb_log_errno(VSB_LOG_WARN, "flush of state records: watch %d",
                      (int) pid);
        vsb_durable_reap(1);
    }
}


int
vsb_durable_flush(void)
{
    vsb_durable_report_t  rep;

    vsb_timer_del(&vsb_durable_timer);

    if (vsb_durable_pid != -1) {
        vsb_durable_reap(1);
        vsb_timer_del(&vsb_durable_timer);
    }

    if (vsb_durable_head == NULL) {
        return 0;
    }

    vsb_durable_upto = vsb_durable_tail->seq;
    vsb_durable_work(vsb_durable_upto, &rep);

    if (rep.failed) {
        rep.detail[sizeof(rep.detail) - 1] = '\0';
        vsb_log(VSB_LOG_ERR, "state records could not be put on disk: %s",
                rep.detail);
        return -1;
    }

    return vsb_durable_done(vsb_durable_upto);
}
