/*
 * The event loop: epoll, a signalfd for SIGTERM/SIGINT, c-ares'
 * timeouts, and a sweep every EG_TICK_MS that enforces every deadline
 * (request heads, connects, idle relays, DNS over TCP) and re-arms
 * listeners paused for want of descriptors.
 *
 * The helper has an epoll loop of its own (sandbox-helper/loop.c) that
 * looks alike at the epoll_ctl() calls: they stay two on purpose.  Here a
 * deleted handler is marked dead and its memory freed only after the
 * batch (eg_loop_defer_free), deadlines are swept on a tick and c-ares
 * sets the wait; there a deletion clears the batch's later entries and
 * deadlines are a sorted timer list.  Each process links only its own.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "eg_conn.h"
#include "eg_control.h"
#include "eg_dnsstub.h"
#include "eg_listen.h"
#include "eg_log.h"
#include "eg_resolve.h"
#include "egress.h"

#define EG_TICK_MS            250
#define EG_LOCAL_REFRESH_MS   10000
#define EG_EVENTS             128

eg_proxy_t  eg_proxy;

static void   **eg_defer;
static size_t   eg_ndefer, eg_defer_cap;


uint64_t
eg_now_ms(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}


uint64_t
eg_wall_ms(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}


/* Registers h for events (op EPOLL_CTL_ADD or _MOD). */
static int
eg_loop_ctl(eg_handler_t *h, int op, uint32_t events)
{
    struct epoll_event  ev;

    memset(&ev, 0, sizeof(ev));
    ev.events = events;
    ev.data.ptr = h;
    if (epoll_ctl(eg_proxy.epfd, op, h->fd, &ev) != 0) {
        eg_log(EG_LOG_ERROR, "epoll_ctl(%s, %d): %s",
               op == EPOLL_CTL_ADD ? "ADD" : "MOD", h->fd, strerror(errno));
        return -1;
    }
    h->events = events;
    return 0;
}


int
eg_loop_add(eg_handler_t *h, uint32_t events)
{
    if (eg_loop_ctl(h, EPOLL_CTL_ADD, events) != 0) {
        return -1;
    }
    h->dead = 0;
    return 0;
}


int
eg_loop_mod(eg_handler_t *h, uint32_t events)
{
    return eg_loop_ctl(h, EPOLL_CTL_MOD, events);
}


void
eg_loop_del(eg_handler_t *h)
{
    if (epoll_ctl(eg_proxy.epfd, EPOLL_CTL_DEL, h->fd, NULL) != 0
        && errno != ENOENT && errno != EBADF)
    {
        eg_log(EG_LOG_ERROR, "epoll_ctl(DEL, %d): %s", h->fd,
               strerror(errno));
    }
    h->dead = 1;
}


void
eg_loop_defer_free(void *p)
{
    void  **nd;

    if (eg_ndefer == eg_defer_cap) {
        size_t  cap = eg_defer_cap ? eg_defer_cap * 2 : 64;
        nd = realloc(eg_defer, cap * sizeof(*nd));
        if (nd == NULL) {
            /* Leak rather than free early: a pending event may use it. */
            eg_log(EG_LOG_ERROR, "out of memory deferring a free");
            return;
        }
        eg_defer = nd;
        eg_defer_cap = cap;
    }
    eg_defer[eg_ndefer++] = p;
}


static void
eg_loop_free_deferred(void)
{
    size_t  i;

    for (i = 0; i < eg_ndefer; i++) {
        free(eg_defer[i]);
    }
    eg_ndefer = 0;
}


static void
eg_loop_sweep(void)
{
    eg_sandbox_t  *sb;

    for (sb = eg_proxy.sandboxes; sb != NULL; sb = sb->next) {
        eg_conn_sweep(sb, eg_proxy.now_ms);
        eg_dnsstub_sweep(sb, eg_proxy.now_ms);
        eg_listen_resume(sb);
    }

    if (eg_proxy.now_ms - eg_proxy.local_refreshed_ms >= EG_LOCAL_REFRESH_MS) {
        eg_sandbox_refresh_local();
    }
}


static void
eg_loop_signal(eg_handler_t *h, uint32_t events)
{
    struct signalfd_siginfo  si;

    (void) events;
    if (read(h->fd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
        eg_log(EG_LOG_INFO, "signal %u: stopping", si.ssi_signo);
        eg_proxy.quit = 1;
    }
}


int
eg_loop_run(void)
{
    struct epoll_event  evs[EG_EVENTS];
    eg_handler_t        sig_h;
    sigset_t            set;
    uint64_t            last_sweep;
    int                 n, i, timeout, at;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    memset(&sig_h, 0, sizeof(sig_h));
    sig_h.type = EG_EV_SIGNAL;
    sig_h.fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    sig_h.handler = eg_loop_signal;
    if (sig_h.fd == -1 || eg_loop_add(&sig_h, EPOLLIN) != 0) {
        eg_log(EG_LOG_ERROR, "signalfd: %s", strerror(errno));
        return -1;
    }

    eg_proxy.now_ms = eg_now_ms();
    last_sweep = eg_proxy.now_ms;

    while (!eg_proxy.quit) {
        timeout = EG_TICK_MS;
        at = eg_resolve_next_timeout_ms();
        if (at >= 0 && at < timeout) {
            timeout = at;
        }

        n = epoll_wait(eg_proxy.epfd, evs, EG_EVENTS, timeout);
        if (n < 0 && errno != EINTR) {
            eg_log(EG_LOG_ERROR, "epoll_wait: %s", strerror(errno));
            return -1;
        }
        eg_proxy.now_ms = eg_now_ms();

        for (i = 0; i < n; i++) {
            eg_handler_t  *h = evs[i].data.ptr;
            if (!h->dead) {
                h->handler(h, evs[i].events);
            }
        }

        eg_resolve_process_timeouts();

        if (eg_proxy.now_ms - last_sweep >= EG_TICK_MS) {
            last_sweep = eg_proxy.now_ms;
            eg_loop_sweep();
        }

        eg_control_flush();
        eg_loop_free_deferred();
    }

    eg_loop_del(&sig_h);
    close(sig_h.fd);
    return 0;
}


void
eg_loop_cleanup(void)
{
    eg_loop_free_deferred();
    free(eg_defer);
    eg_defer = NULL;
    eg_defer_cap = 0;
}
