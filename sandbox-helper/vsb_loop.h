/*
 * The helper's single-threaded event loop: epoll for descriptors, a
 * monotonic timer list for deadlines.  Nothing in the helper blocks; work
 * that waits (an exec, a termination that must be confirmed) registers an
 * event or a timer and returns.
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

int vsb_loop_init(void);

/* events: EPOLLIN / EPOLLOUT / ... ; handler gets epoll's revents. */
int vsb_loop_add(vsb_event_t *ev, uint32_t events);
/* mod with the mask already registered makes no system call */
int vsb_loop_mod(vsb_event_t *ev, uint32_t events);
int vsb_loop_del(vsb_event_t *ev);          /* safe if not active */

/* (Re)arm t to fire once after ms; vsb_timer_del() is safe if unarmed. */
void vsb_timer_add(vsb_timer_t *t, uint64_t after_ms);
void vsb_timer_del(vsb_timer_t *t);

uint64_t vsb_now_ms(void);                  /* CLOCK_MONOTONIC */

/* Runs until *stop becomes non-zero. Returns 0, or -1 on a loop failure. */
int vsb_loop_run(volatile sig_atomic_t *stop);

#endif
