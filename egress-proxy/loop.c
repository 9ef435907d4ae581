/*
 * The proxy's part of the event loop it shares with the helper
 * (sandbox-helper/loop.c, vsb_loop.h: epoll, a timer list, deletion safe
 * within a batch).  What is the proxy's own is here:
 *
 *   - a signalfd for SIGTERM/SIGINT, an ordinary event that stops the run;
 *   - the sweep, a timer every EG_TICK_MS that enforces every deadline
 *     (request heads, connects, idle relays, DNS over TCP) and re-arms
 *     listeners paused for want of descriptors;
 *   - c-ares' deadline, a timer re-armed before each wait to what
 *     ares_timeout() says;
 *   - after each turn, the control connection flushed (records queued by
 *     the turn's handlers) and the memory handlers freed on the way
 *     (eg_loop_defer_free) released: a connection closed deep in a handler
 *     may still be touched by its caller.  Every such block's events are
 *     deleted from the loop before it is deferred (eg_conn_close,
 *     eg_dnsconn_close, eg_sandbox_unlink_free), so no later event of the
 *     batch reaches it either way; the blocks freed at once are those
 *     never registered, or whose events were just deleted (a sandbox
 *     whose listeners failed to attach: control.c).
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

eg_proxy_t  eg_proxy;

static void       **eg_defer;
static size_t       eg_ndefer, eg_defer_cap;

static vsb_timer_t  eg_sweep_timer;
static vsb_timer_t  eg_ares_timer;


uint64_t
eg_wall_ms(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}


void
eg_loop_defer_free(void *p)
{
    void  **nd;

    if (eg_ndefer == eg_defer_cap) {
        size_t  cap = eg_defer_cap ? eg_defer_cap * 2 : 64;
        nd = realloc(eg_defer, cap * sizeof(*nd));
        if (nd == NULL) {
            /* Leak rather than free early: a caller may still use it. */
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
eg_loop_sweep(vsb_timer_t *t)
{
    eg_sandbox_t  *sb;
    uint64_t       now = vsb_loop_time_ms();

    vsb_timer_add(t, EG_TICK_MS);

    for (sb = eg_proxy.sandboxes; sb != NULL; sb = sb->next) {
        eg_conn_sweep(sb, now);
        eg_dnsstub_sweep(sb, now);
        eg_listen_resume(sb);
    }

    if (now - eg_proxy.local_refreshed_ms >= EG_LOCAL_REFRESH_MS) {
        eg_sandbox_refresh_local();
    }
}


static void
eg_loop_ares_timeout(vsb_timer_t *t)
{
    (void) t;
    eg_resolve_process_timeouts();
}


static void
eg_loop_signal(vsb_event_t *ev, uint32_t events)
{
    struct signalfd_siginfo  si;

    (void) events;
    if (read(ev->fd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
        eg_log(EG_LOG_INFO, "signal %u: stopping", si.ssi_signo);
        eg_proxy.quit = 1;
    }
}


static void
eg_loop_failed(const char *step)
{
    eg_log(EG_LOG_ERROR, "%s: %s", step, strerror(errno));
}


/* c-ares' next deadline, as it stands after the turn's queries. */
static void
eg_loop_before_wait(void)
{
    int  at;

    at = eg_resolve_next_timeout_ms();
    if (at < 0) {
        vsb_timer_del(&eg_ares_timer);
    } else {
        vsb_timer_add(&eg_ares_timer, (uint64_t) at);
    }
}


static void
eg_loop_after_turn(void)
{
    eg_control_flush();
    eg_loop_free_deferred();
}


static const vsb_loop_hooks_t  eg_loop_hooks = {
    .error = eg_loop_failed,
    .before_wait = eg_loop_before_wait,
    .after_turn = eg_loop_after_turn
};


int
eg_loop_init(void)
{
    return vsb_loop_init(&eg_loop_hooks);
}


int
eg_loop_run(void)
{
    vsb_event_t  sig_ev;
    sigset_t     set;
    int          rc;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    memset(&sig_ev, 0, sizeof(sig_ev));
    sig_ev.fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    sig_ev.handler = eg_loop_signal;
    if (sig_ev.fd == -1) {
        eg_log(EG_LOG_ERROR, "signalfd: %s", strerror(errno));
        return -1;
    }
    if (vsb_loop_add(&sig_ev, EPOLLIN) != 0) {
        close(sig_ev.fd);
        return -1;
    }

    eg_sweep_timer.handler = eg_loop_sweep;
    eg_ares_timer.handler = eg_loop_ares_timeout;
    vsb_timer_add(&eg_sweep_timer, EG_TICK_MS);

    rc = vsb_loop_run(&eg_proxy.quit);

    vsb_timer_del(&eg_sweep_timer);
    vsb_timer_del(&eg_ares_timer);
    vsb_loop_del(&sig_ev);
    close(sig_ev.fd);
    return rc;
}


void
eg_loop_cleanup(void)
{
    eg_loop_free_deferred();
    free(eg_defer);
    eg_defer = NULL;
    eg_defer_cap = 0;
}
