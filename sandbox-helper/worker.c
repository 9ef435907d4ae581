/*
 * Slow file work in a short-lived child (vsb_worker.h): the pattern of
 * teardown.c, with the result in two memory files instead of a pipe, so
 * the child never blocks on a reader and the helper reads it once, whole,
 * bounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vsb_fdio.h"
#include "vsb_log.h"
#include "vsb_loop.h"
#include "vsb_protocol.h"
#include "vsb_worker.h"

#define VSB_WORKER_HFD   3
#define VSB_WORKER_PFD   4
#define VSB_WORKER_NICE  10

struct vsb_worker_s {
    char                 name[32];
    pid_t                pid;
    int                  hfd, pfd;
    size_t               max_payload;
    vsb_event_t          ev;          /* the child's pidfd */
    vsb_worker_done_pt   done;
    void                *data;
    unsigned             cancelled:1;
};


int
vsb_worker_json(int hfd, json_t *obj)
{
    char  *s;
    int    rc;

    s = json_dumps(obj, JSON_COMPACT);
    if (s == NULL) {
        return -1;
    }

    rc = vsb_write_full(hfd, s, strlen(s));
    free(s);
    return rc;
}


static void
vsb_worker_child(vsb_worker_t *w, vsb_worker_fn_pt fn, void *arg,
    pid_t parent)
{
    int  rc;

    (void) signal(SIGTERM, SIG_DFL);
    (void) signal(SIGINT, SIG_DFL);
    (void) signal(SIGPIPE, SIG_IGN);

    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0
        || getppid() != parent)
    {
        _exit(1);
    }

    (void) prctl(PR_SET_NAME, w->name, 0, 0, 0);
    (void) setpriority(PRIO_PROCESS, 0, VSB_WORKER_NICE);

    /* hold no client connection open: 0-2 and the two result files */
    if (dup2(w->hfd, VSB_WORKER_HFD) == -1
        || dup2(w->pfd, VSB_WORKER_PFD) == -1
        || close_range(VSB_WORKER_PFD + 1, ~0U, 0) != 0)
    {
        _exit(1);
    }

    rc = fn(arg, VSB_WORKER_HFD, VSB_WORKER_PFD);
    _exit(rc == 0 ? 0 : 2);
}


/* The whole of a memory file, at most max bytes; NULL with why. */
static unsigned char *
vsb_worker_slurp(int fd, size_t max, size_t *len, char *why, size_t wlen)
{
    struct stat     st;
    unsigned char  *buf;
    ssize_t         n;
    size_t          got = 0;

    *len = 0;

    if (fstat(fd, &st) != 0) {
        snprintf(why, wlen, "fstat of the result: %s", strerror(errno));
        return NULL;
    }

    if ((uint64_t) st.st_size > max) {
        snprintf(why, wlen, "the result is %lld bytes, more than %zu",
                 (long long) st.st_size, max);
        return NULL;
    }

    buf = malloc((size_t) st.st_size + 1);
    if (buf == NULL) {
        snprintf(why, wlen, "out of memory for a result of %lld bytes",
                 (long long) st.st_size);
        return NULL;
    }

    while (got < (size_t) st.st_size) {
        n = pread(fd, buf + got, (size_t) st.st_size - got, (off_t) got);
        if (n == -1 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            snprintf(why, wlen, "read the result: %s",
                     n == 0 ? "short" : strerror(errno));
            free(buf);
            return NULL;
        }
        got += (size_t) n;
    }

    buf[got] = '\0';
    *len = got;
    return buf;
}


static void
vsb_worker_exited(vsb_event_t *ev, uint32_t revents)
{
    vsb_worker_t   *w = ev->data;
    siginfo_t       si;
    json_t         *header = NULL;
    json_error_t    jerr;
    unsigned char  *h = NULL, *p = NULL;
    size_t          hlen = 0, plen = 0;
    char            why[256];

    (void) revents;
    memset(&si, 0, sizeof(si));
    why[0] = '\0';

    if (waitid(P_PIDFD, (id_t) ev->fd, &si, WEXITED | WNOHANG) != 0) {
        if (errno == EINTR || errno == EAGAIN) {
            return;
        }
        vsb_log_errno(VSB_LOG_ERR, "%s: waitid for process %d", w->name,
                      (int) w->pid);

    } else if (si.si_pid == 0) {
        return;                 /* spurious: still running */
    }

    (void) vsb_loop_del(ev);
    close(ev->fd);
    ev->fd = -1;

    if (w->cancelled) {
        snprintf(why, sizeof(why), "cancelled");

    } else if (si.si_code != CLD_EXITED
               || (si.si_status != 0 && si.si_status != 2))
    {
        snprintf(why, sizeof(why), "the %s process %d ended (%s %d) "
                 "without a result", w->name, (int) w->pid,
                 si.si_code == CLD_EXITED ? "status" : "signal",
                 si.si_status);

    } else {
        h = vsb_worker_slurp(w->hfd, VSB_MAX_JSON, &hlen, why, sizeof(why));
        if (h != NULL) {
            header = json_loadb((const char *) h, hlen,
                                JSON_REJECT_DUPLICATES, &jerr);
            if (!json_is_object(header)) {
                snprintf(why, sizeof(why), "the %s process wrote no JSON "
                         "object: %s", w->name, jerr.text);
                json_decref(header);
                header = NULL;
            }
        }
        if (header != NULL) {
            p = vsb_worker_slurp(w->pfd, w->max_payload, &plen, why,
                                 sizeof(why));
            if (p == NULL) {
                json_decref(header);
                header = NULL;
            } else if (plen == 0) {
                free(p);
                p = NULL;
            }
        }
    }

    free(h);
    close(w->hfd);
    close(w->pfd);

    w->done(w->data, header, p, plen, header == NULL ? why : NULL);
    json_decref(header);
    free(w);
}


vsb_worker_t *
vsb_worker_start(const char *name, vsb_worker_fn_pt fn, void *arg,
    size_t max_payload, vsb_worker_done_pt done, void *data, char *err,
    size_t errlen)
{
    vsb_worker_t  *w;
    pid_t          parent;
    int            pidfd;

    w = calloc(1, sizeof(*w));
    if (w == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }

    snprintf(w->name, sizeof(w->name), "%s", name);
    w->max_payload = max_payload;
    w->done = done;
    w->data = data;
    w->ev.fd = -1;

    w->hfd = memfd_create("vsb-result-header", MFD_CLOEXEC);
    w->pfd = w->hfd == -1 ? -1
             : memfd_create("vsb-result-payload", MFD_CLOEXEC);
    if (w->pfd == -1) {
        snprintf(err, errlen, "memfd_create: %s", strerror(errno));
        if (w->hfd != -1) {
            close(w->hfd);
        }
        free(w);
        return NULL;
    }

    parent = getpid();
    w->pid = fork();
    if (w->pid == -1) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        goto failed;
    }

    if (w->pid == 0) {
        vsb_worker_child(w, fn, arg, parent);
    }

    pidfd = (int) syscall(SYS_pidfd_open, w->pid, 0);
    if (pidfd == -1) {
        snprintf(err, errlen, "pidfd_open(%d): %s", (int) w->pid,
                 strerror(errno));
        goto kill;
    }

    w->ev.fd = pidfd;
    w->ev.handler = vsb_worker_exited;
    w->ev.data = w;

    if (vsb_loop_add(&w->ev, EPOLLIN) != 0) {
        snprintf(err, errlen, "watch process %d: %s", (int) w->pid,
                 strerror(errno));
        close(pidfd);
        goto kill;
    }

    vsb_log(VSB_LOG_DEBUG, "%s in process %d", w->name, (int) w->pid);
    return w;

kill:

    (void) kill(w->pid, SIGKILL);
    while (waitpid(w->pid, NULL, 0) == -1 && errno == EINTR) {
        /* void */
    }

failed:

    close(w->hfd);
    close(w->pfd);
    free(w);
    return NULL;
}


void
vsb_worker_cancel(vsb_worker_t *w)
{
    siginfo_t  si;

    w->cancelled = 1;
    (void) kill(w->pid, SIGKILL);

    /* a killed child holds the sandbox's files until it is gone: wait
     * (it dies at once), so a teardown after this finds nothing busy */
    memset(&si, 0, sizeof(si));
    while (waitid(P_PIDFD, (id_t) w->ev.fd, &si, WEXITED | WNOWAIT) != 0
           && errno == EINTR)
    {
        /* void */
    }

    vsb_worker_exited(&w->ev, 0);
}
