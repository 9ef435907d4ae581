/*
 * The event loop the helper and the egress proxy share (loop.c, compiled
 * into both: egress-proxy/egress.mk): one thread, epoll for descriptors,
 * a monotonic timer list for deadlines.  Nothing blocks; work that waits
 * (an exec, a termination that must be confirmed, a relay) registers an
 * event or a timer and returns.
 *
 * What it promises:
 *   - a handler may delete another event, and free its owner, within a
 *     batch: vsb_loop_del() clears the batch's later entries for it;
 *   - timers fire in deadline order, each once per vsb_timer_add();
 *   - a wait is never longer than the nearest timer's deadline, and with
 *     no timer armed it waits for an event alone (no busy loop);
 *   - a process acts before each wait and after each turn through its
 *     hooks (vsb_loop_hooks_t), with no code of its own in here.
 */
#ifndef VSB_LOOP_H
#define VSB_LOOP_H

#include <signal.h>
#include <stdint.h>

typedef struct vsb_event_s  vsb_event_t;
typedef struct vsb_timer_s  vsb_timer_t;

typedef void (*vsb_event_handler_pt)(vsb_event_t *ev, uint32_t revents);
typedef void (*vsb_timer_handler_pt)(vsb_timer_t *t);

struct vsb_event_s {
    int                    fd;
    vsb_event_handler_pt   handler;
    void                  *data;
    uint32_t               events;        /* as registered, if active */
    unsigned               active:1;      /* registered with epoll */
};

struct vsb_timer_s {
    uint64_t               deadline_ms;   /* vsb_now_ms() clock */
    vsb_timer_handler_pt   handler;
    void                  *data;
    vsb_timer_t           *prev, *next;
    unsigned               armed:1;
};

/* What a process does around the loop; any member may be NULL. */
typedef struct {
    /* a failed system call (errno as it left it; step names the call):
     * each process logs it its own way */
    void  (*error)(const char *step);
    /* before each wait: may arm or disarm timers (c-ares' deadline) */
    void  (*before_wait)(void);
    /* after each turn's events and expired timers (deferred frees) */
    void  (*after_turn)(void);
} vsb_loop_hooks_t;

/* Creates the epoll instance, once; hooks (copied) replace any before. */
int vsb_loop_init(const vsb_loop_hooks_t *hooks);

/* events: EPOLLIN / EPOLLOUT / ... ; handler gets epoll's revents. */
int vsb_loop_add(vsb_event_t *ev, uint32_t events);
/* mod adds an inactive ev; the mask already registered makes no call */
int vsb_loop_mod(vsb_event_t *ev, uint32_t events);
int vsb_loop_del(vsb_event_t *ev);          /* safe if not active */

/* (Re)arm t to fire once after ms; vsb_timer_del() is safe if unarmed. */
void vsb_timer_add(vsb_timer_t *t, uint64_t after_ms);
void vsb_timer_del(vsb_timer_t *t);

uint64_t vsb_now_ms(void);                  /* CLOCK_MONOTONIC */
/* vsb_now_ms() as the current turn's wait returned (the handlers of one
 * turn share it: no clock read per event) */
uint64_t vsb_loop_time_ms(void);

/* Runs until *stop becomes non-zero. Returns 0, or -1 on a loop failure. */
int vsb_loop_run(volatile sig_atomic_t *stop);

#endif
