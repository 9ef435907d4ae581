/*
 * The event loop of the helper and the egress proxy (vsb_loop.h): one
 * epoll instance and a sorted, doubly linked list of timers.  A few
 * hundred timers at most (the proxy arms two), so insertion sort is
 * plenty.  It knows neither process: each logs, and acts around a wait,
 * through the hooks it gives vsb_loop_init().
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "vsb_loop.h"

#define VSB_LOOP_EVENTS  128

static int               vsb_epfd = -1;
static vsb_timer_t      *vsb_timers;      /* earliest first */
static vsb_loop_hooks_t  vsb_hooks;
static uint64_t          vsb_turn_ms;     /* vsb_loop_time_ms() */

/* The batch being dispatched: vsb_loop_del() clears later entries that
 * name the deleted event, so a handler may free another event's owner. */
static struct epoll_event  *vsb_batch;
static int                  vsb_batch_n;


/* Tells the process's error hook; errno comes back as it was. */
static void
vsb_loop_error(const char *step)
{
    int  saved = errno;

    if (vsb_hooks.error != NULL) {
        vsb_hooks.error(step);
    }
    errno = saved;
}


int
vsb_loop_init(const vsb_loop_hooks_t *hooks)
{
    if (hooks != NULL) {
        vsb_hooks = *hooks;
    } else {
        memset(&vsb_hooks, 0, sizeof(vsb_hooks));
    }

    if (vsb_epfd != -1) {
        return 0;
    }

    vsb_epfd = epoll_create1(EPOLL_CLOEXEC);
    if (vsb_epfd == -1) {
        vsb_loop_error("epoll_create1()");
        return -1;
    }

    vsb_turn_ms = vsb_now_ms();
    return 0;
}


/* Registers ev for events (op EPOLL_CTL_ADD or _MOD). */
static int
vsb_loop_ctl(vsb_event_t *ev, int op, uint32_t events)
{
    struct epoll_event  ee;
    char                step[48];

    memset(&ee, 0, sizeof(ee));
    ee.events = events;
    ee.data.ptr = ev;

    if (epoll_ctl(vsb_epfd, op, ev->fd, &ee) == -1) {
        (void) snprintf(step, sizeof(step), "epoll_ctl(%s, fd %d)",
                        op == EPOLL_CTL_ADD ? "ADD" : "MOD", ev->fd);
        vsb_loop_error(step);
        return -1;
    }

    ev->events = events;
    return 0;
}


int
vsb_loop_add(vsb_event_t *ev, uint32_t events)
{
    if (vsb_loop_ctl(ev, EPOLL_CTL_ADD, events) != 0) {
        return -1;
    }

    ev->active = 1;
    return 0;
}


int
vsb_loop_mod(vsb_event_t *ev, uint32_t events)
{
    if (!ev->active) {
        return vsb_loop_add(ev, events);
    }

    /* level-triggered, no one-shot: an unchanged mask needs no call (a
     * connection's request cycle would make three per request) */
    if (events == ev->events) {
        return 0;
    }

    return vsb_loop_ctl(ev, EPOLL_CTL_MOD, events);
}


int
vsb_loop_del(vsb_event_t *ev)
{
    int   i;
    char  step[48];

    for (i = 0; i < vsb_batch_n; i++) {
        if (vsb_batch[i].data.ptr == ev) {
            vsb_batch[i].data.ptr = NULL;
        }
    }

    if (!ev->active) {
        return 0;
    }

    ev->active = 0;

    if (epoll_ctl(vsb_epfd, EPOLL_CTL_DEL, ev->fd, NULL) == -1) {
        (void) snprintf(step, sizeof(step), "epoll_ctl(DEL, fd %d)", ev->fd);
        vsb_loop_error(step);
        return -1;
    }

    return 0;
}


uint64_t
vsb_now_ms(void)
{
    struct timespec  ts;

    /* CLOCK_MONOTONIC cannot fail with a valid pointer. */
    (void) clock_gettime(CLOCK_MONOTONIC, &ts);

    return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}


uint64_t
vsb_loop_time_ms(void)
{
    return vsb_turn_ms;
}


void
vsb_timer_del(vsb_timer_t *t)
{
    if (!t->armed) {
        return;
    }

    if (t->prev != NULL) {
        t->prev->next = t->next;
    } else {
        vsb_timers = t->next;
    }

    if (t->next != NULL) {
        t->next->prev = t->prev;
    }

    t->prev = NULL;
    t->next = NULL;
    t->armed = 0;
}


void
vsb_timer_add(vsb_timer_t *t, uint64_t after_ms)
{
    vsb_timer_t  *p, *last;

    vsb_timer_del(t);

    t->deadline_ms = vsb_now_ms() + after_ms;
    t->armed = 1;

    last = NULL;
    for (p = vsb_timers; p != NULL; p = p->next) {
        if (p->deadline_ms > t->deadline_ms) {
            break;
        }
        last = p;
    }

    t->prev = last;
    t->next = p;

    if (last != NULL) {
        last->next = t;
    } else {
        vsb_timers = t;
    }

    if (p != NULL) {
        p->prev = t;
    }
}


/*
 * Fires every timer expired when the turn's wait returned; a handler may
 * add or delete any timer.  One that expired while the turn's events were
 * handled fires next turn, whose wait is then 0: no clock read here.
 */
static void
vsb_timers_run(void)
{
    vsb_timer_t  *t;

    while (vsb_timers != NULL && vsb_timers->deadline_ms <= vsb_turn_ms) {
        t = vsb_timers;
        vsb_timer_del(t);
        t->handler(t);
    }
}


static int
vsb_timers_wait_ms(void)
{
    uint64_t  now;

    if (vsb_timers == NULL) {
        return -1;
    }

    now = vsb_now_ms();
    if (vsb_timers->deadline_ms <= now) {
        return 0;
    }

    if (vsb_timers->deadline_ms - now > 60000) {
        return 60000;
    }

    return (int) (vsb_timers->deadline_ms - now);
}


int
vsb_loop_run(volatile sig_atomic_t *stop)
{
    struct epoll_event  events[VSB_LOOP_EVENTS];
    vsb_event_t        *ev;
    int                 i, n;

    while (!*stop) {
        if (vsb_hooks.before_wait != NULL) {
            vsb_hooks.before_wait();
        }

        n = epoll_wait(vsb_epfd, events, VSB_LOOP_EVENTS,
                       vsb_timers_wait_ms());
        if (n == -1) {
            if (errno != EINTR) {
                vsb_loop_error("epoll_wait()");
                return -1;
            }
            n = 0;                  /* a signal: timers and hooks still */
        }

        vsb_turn_ms = vsb_now_ms();

        vsb_batch = events;
        vsb_batch_n = n;

        for (i = 0; i < n; i++) {
            ev = events[i].data.ptr;

            /* An earlier handler in this batch may have closed it. */
            if (ev == NULL || !ev->active) {
                continue;
            }

            events[i].data.ptr = NULL;
            ev->handler(ev, events[i].events);
        }

        vsb_batch = NULL;
        vsb_batch_n = 0;

        vsb_timers_run();

        if (vsb_hooks.after_turn != NULL) {
            vsb_hooks.after_turn();
        }
    }

    return 0;
}
