/*
 * Records made durable off the loop (vsb_durable.h).  One FIFO of
 * entries, each with a sequence number.  A flush sends the paths of the
 * records queued so far, in one message, to a child started once (the
 * first time there is something to flush) and kept: it fsyncs each record
 * and then each directory they are in, and answers with the last
 * sequence number it covered.  Every entry up to it is then done: the
 * unlinks among them happen now, in the helper.  Entries queued meanwhile
 * go in the next message, sent as soon as this one is answered.  A failed
 * flush is logged and tried again a second later; its unlinks wait.  A
 * child that died is reaped and started again at the next flush; where
 * none can run, the helper fsyncs on its own thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vsb_durable.h"
#include "vsb_log.h"
#include "vsb_loop.h"
#include "vsb_statefile.h"

#define VSB_DURABLE_FD        3       /* its socket, in the child */
#define VSB_DURABLE_RETRY_MS  1000
#define VSB_DURABLE_DELAY_MS  1
#define VSB_DURABLE_DIRS      8
#define VSB_DURABLE_MSG       (60 * 1024)     /* one batch, at most */

typedef struct vsb_durable_s  vsb_durable_t;

struct vsb_durable_s {
    vsb_durable_t  *next;
    uint64_t        seq;
    unsigned        unlink:1;
    size_t          dirlen;           /* path[dirlen] is the '/' */
    char            path[];
};

typedef struct {
    uint64_t        upto;
    int32_t         failed;
    char            detail[480];
} vsb_durable_report_t;

static vsb_durable_t         *vsb_durable_head, *vsb_durable_tail;
static unsigned               vsb_durable_n;
static uint64_t               vsb_durable_seq;
static vsb_timer_t            vsb_durable_timer;
static int                    vsb_durable_failing;

/* the child, and the batch it works on */
static pid_t                  vsb_durable_pid = -1;
static vsb_event_t            vsb_durable_ev = { .fd = -1 };
static int                    vsb_durable_busy;
static char                   vsb_durable_msg[VSB_DURABLE_MSG];

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
    if (!vsb_durable_busy && !vsb_durable_timer.armed) {
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


/* The batch in msg (upto, then NUL-terminated paths): each record, then
 * each directory they are in, on disk. */
static void
vsb_durable_work(const char *msg, size_t len, vsb_durable_report_t *rep)
{
    const char  *p, *end = msg + len, *slash, *dirs[VSB_DURABLE_DIRS];
    size_t       nd = 0, i, dl, dls[VSB_DURABLE_DIRS];
    char         path[PATH_MAX];

    memset(rep, 0, sizeof(*rep));
    memcpy(&rep->upto, msg, sizeof(rep->upto));

    for (p = msg + sizeof(uint64_t); p < end; p += strlen(p) + 1) {
        if (vsb_durable_fsync(p, 0, rep) != 0) {
            rep->failed = 1;
            return;
        }

        slash = strrchr(p, '/');
        if (slash == NULL || slash == p) {
            continue;
        }
        dl = (size_t) (slash - p);

        for (i = 0; i < nd; i++) {
            if (dls[i] == dl && memcmp(dirs[i], p, dl) == 0) {
                break;
            }
        }
        if (i < nd) {
            continue;
        }

        if (nd == VSB_DURABLE_DIRS || dl >= sizeof(path)) {
            /* more directories than kept: this one now */
            if (dl >= sizeof(path)) {
                continue;
            }
            memcpy(path, p, dl);
            path[dl] = '\0';
            if (vsb_durable_fsync(path, 1, rep) != 0) {
                rep->failed = 1;
                return;
            }
            continue;
        }

        dirs[nd] = p;
        dls[nd++] = dl;
    }

    for (i = 0; i < nd; i++) {
        memcpy(path, dirs[i], dls[i]);
        path[dls[i]] = '\0';
        if (vsb_durable_fsync(path, 1, rep) != 0) {
            rep->failed = 1;
            return;
        }
    }
}


/* The next batch into vsb_durable_msg: its length (0: nothing to sync,
 * *upto still set when there are unlinks to do). */
static size_t
vsb_durable_batch(uint64_t *upto)
{
    vsb_durable_t  *d;
    size_t          len = sizeof(uint64_t), l;

    *upto = 0;

    for (d = vsb_durable_head; d != NULL; d = d->next) {
        if (!d->unlink) {
            l = strlen(d->path) + 1;
            if (len + l > sizeof(vsb_durable_msg)) {
                break;          /* the rest in the next batch */
            }
            memcpy(vsb_durable_msg + len, d->path, l);
            len += l;
        }
        *upto = d->seq;
    }

    memcpy(vsb_durable_msg, upto, sizeof(*upto));
    return len;
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
    vsb_durable_busy = 0;

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

    (void) vsb_durable_done(rep->upto);

    if (vsb_durable_head != NULL) {
        vsb_durable_timer.handler = vsb_durable_start;
        vsb_timer_add(&vsb_durable_timer, 0);
    }
}


/* The child is gone (or must go): reaped, to be started again. */
static void
vsb_durable_lost(const char *why)
{
    vsb_durable_report_t  rep;
    int                   status;

    if (vsb_durable_ev.fd != -1) {
        (void) vsb_loop_del(&vsb_durable_ev);
        close(vsb_durable_ev.fd);
        vsb_durable_ev.fd = -1;
    }

    if (vsb_durable_pid != -1) {
        (void) kill(vsb_durable_pid, SIGKILL);
        while (waitpid(vsb_durable_pid, &status, 0) == -1 && errno == EINTR) {
            /* void */
        }
        vsb_durable_pid = -1;
    }

    if (vsb_durable_busy) {
        memset(&rep, 0, sizeof(rep));
        rep.failed = 1;
        snprintf(rep.detail, sizeof(rep.detail), "the flush process %s",
                 why);
        vsb_durable_result(&rep);
    }
}


/* Its answer, or its end. */
static void
vsb_durable_answer(vsb_event_t *ev, uint32_t revents)
{
    vsb_durable_report_t  rep;
    ssize_t               n;

    (void) revents;

    n = recv(ev->fd, &rep, sizeof(rep), MSG_DONTWAIT);

    if (n == -1 && (errno == EAGAIN || errno == EINTR)) {
        return;
    }

    if (n != (ssize_t) sizeof(rep) || !vsb_durable_busy) {
        vsb_log(VSB_LOG_WARN, "state records: the flush process %d %s",
                (int) vsb_durable_pid, n == 0 ? "ended" : "answered wrongly");
        vsb_durable_lost(n == 0 ? "ended" : "answered wrongly");
        return;
    }

    rep.detail[sizeof(rep.detail) - 1] = '\0';
    vsb_durable_result(&rep);
}


static void
vsb_durable_child(void)
{
    vsb_durable_report_t  rep;
    ssize_t               n;

    for ( ;; ) {
        n = recv(VSB_DURABLE_FD, vsb_durable_msg, sizeof(vsb_durable_msg), 0);
        if (n == -1 && errno == EINTR) {
            continue;
        }
        if (n < (ssize_t) sizeof(uint64_t)) {
            _exit(n == 0 ? 0 : 1);      /* the helper closed it: done */
        }

        vsb_durable_work(vsb_durable_msg, (size_t) n, &rep);

        do {
            n = send(VSB_DURABLE_FD, &rep, sizeof(rep), MSG_NOSIGNAL);
        } while (n == -1 && errno == EINTR);

        if (n != (ssize_t) sizeof(rep)) {
            _exit(1);
        }
    }
}


/* The child, started; -1 when it cannot be. */
static int
vsb_durable_spawn(void)
{
    int    sv[2];
    pid_t  pid, parent = getpid();

    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        vsb_log_errno(VSB_LOG_WARN, "flush of state records: socketpair");
        return -1;
    }

    pid = fork();
    if (pid == -1) {
        vsb_log_errno(VSB_LOG_WARN, "flush of state records: fork");
        close(sv[0]);
        close(sv[1]);
        return -1;
    }

    if (pid == 0) {
        (void) signal(SIGTERM, SIG_DFL);
        (void) signal(SIGINT, SIG_DFL);

        /* a helper gone has its records in the page cache: nothing is
         * lost by not finishing */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0
            || getppid() != parent
            || dup2(sv[1], VSB_DURABLE_FD) == -1
            || close_range(VSB_DURABLE_FD + 1, ~0U, 0) != 0)
        {
            _exit(1);
        }

        (void) prctl(PR_SET_NAME, "vsb-sync", 0, 0, 0);
        vsb_durable_child();
    }

    close(sv[1]);

    vsb_durable_pid = pid;
    vsb_durable_ev.fd = sv[0];
    vsb_durable_ev.handler = vsb_durable_answer;
    vsb_durable_ev.data = NULL;

    if (vsb_loop_add(&vsb_durable_ev, EPOLLIN) != 0) {
        vsb_log_errno(VSB_LOG_WARN, "flush of state records: watch %d",
                      (int) pid);
        vsb_durable_lost("could not be watched");
        return -1;
    }

    vsb_log(VSB_LOG_DEBUG, "state records: flush process %d", (int) pid);
    return 0;
}


static void
vsb_durable_start(vsb_timer_t *t)
{
    vsb_durable_report_t  rep;
    uint64_t              upto;
    size_t                len;
    ssize_t               n;

    (void) t;

    if (vsb_durable_busy || vsb_durable_head == NULL) {
        return;
    }

    len = vsb_durable_batch(&upto);

    if (len == sizeof(uint64_t)) {
        (void) vsb_durable_done(upto);     /* unlinks only */
        return;
    }

    if (vsb_durable_pid == -1 && vsb_durable_spawn() != 0) {
        /* here, blocking: better than never */
        vsb_durable_busy = 1;
        vsb_durable_work(vsb_durable_msg, len, &rep);
        vsb_durable_result(&rep);
        return;
    }

    do {
        n = send(vsb_durable_ev.fd, vsb_durable_msg, len,
                 MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (n == -1 && errno == EINTR);

    vsb_durable_busy = 1;

    if (n != (ssize_t) len) {
        vsb_log_errno(VSB_LOG_WARN, "state records: send to the flush "
                      "process %d", (int) vsb_durable_pid);
        vsb_durable_lost("could not be sent its batch");
    }
}


int
vsb_durable_flush(void)
{
    vsb_durable_report_t  rep;
    struct pollfd         pfd;
    uint64_t              upto;
    size_t                len;

    vsb_timer_del(&vsb_durable_timer);

    /* the batch in flight answered (or its child gone) */
    while (vsb_durable_busy && vsb_durable_ev.fd != -1) {
        pfd.fd = vsb_durable_ev.fd;
        pfd.events = POLLIN;
        if (poll(&pfd, 1, -1) == -1 && errno != EINTR) {
            vsb_durable_lost("could not be waited for");
            break;
        }
        vsb_durable_answer(&vsb_durable_ev, 0);
    }
    vsb_timer_del(&vsb_durable_timer);
    vsb_durable_busy = 0;

    /* the rest here */
    while (vsb_durable_head != NULL) {
        len = vsb_durable_batch(&upto);
        if (len > sizeof(uint64_t)) {
            vsb_durable_work(vsb_durable_msg, len, &rep);
            if (rep.failed) {
                rep.detail[sizeof(rep.detail) - 1] = '\0';
                vsb_log(VSB_LOG_ERR, "state records could not be put on "
                        "disk: %s", rep.detail);
                return -1;
            }
        }
        if (vsb_durable_done(upto) != 0) {
            return -1;
        }
    }

    return 0;
}


void
vsb_durable_stop(void)
{
    if (vsb_durable_ev.fd != -1) {
        (void) vsb_loop_del(&vsb_durable_ev);
        close(vsb_durable_ev.fd);       /* its recv() returns 0: it exits */
        vsb_durable_ev.fd = -1;
    }

    if (vsb_durable_pid != -1) {
        while (waitpid(vsb_durable_pid, NULL, 0) == -1 && errno == EINTR) {
            /* void */
        }
        vsb_durable_pid = -1;
    }
}
