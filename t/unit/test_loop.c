/*
 * The event loop the helper and the egress proxy share (sandbox-helper/
 * loop.c), on a real epoll instance and pipes: timers fire in deadline
 * order; a handler deletes and frees another event's owner within the
 * batch and that event is not dispatched; a wait ends at the nearest
 * deadline, not a later one, and an idle loop does not spin; the hooks run
 * before each wait and after each turn's events and timers; a failed
 * epoll_ctl() reaches the error hook with errno kept.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cmocka.h>

#include "vsb_loop.h"

static volatile sig_atomic_t  stop;
static char                   trace[64];
static size_t                 ntrace;
static unsigned               turns;


static void
note(char c)
{
    if (ntrace + 1 < sizeof(trace)) {
        trace[ntrace++] = c;
        trace[ntrace] = '\0';
    }
}


static void
reset(const vsb_loop_hooks_t *hooks)
{
    stop = 0;
    ntrace = 0;
    trace[0] = '\0';
    turns = 0;
    assert_int_equal(vsb_loop_init(hooks), 0);
}


/* A pipe with a byte in it: its read end is readable until drained. */
static void
readable_pipe(int p[2])
{
    assert_int_equal(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
    assert_int_equal(write(p[1], "x", 1), 1);
}


/* timers */

static uint64_t  fired_late_ms;


static void
on_timer(vsb_timer_t *t)
{
    uint64_t  now = vsb_now_ms();

    if (now < t->deadline_ms) {
        fired_late_ms = UINT64_MAX;         /* early: fails the test */
    }
    note(*(const char *) t->data);
    if (*(const char *) t->data == 'd') {
        stop = 1;
    }
}


static void
test_timers_fire_in_deadline_order(void **state)
{
    vsb_timer_t  a, b, c, d;

    (void) state;
    reset(NULL);
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    memset(&c, 0, sizeof(c));
    memset(&d, 0, sizeof(d));
    a.handler = b.handler = c.handler = d.handler = on_timer;
    a.data = "a";
    b.data = "b";
    c.data = "c";
    d.data = "d";
    fired_late_ms = 0;

    vsb_timer_add(&d, 40);
    vsb_timer_add(&b, 20);
    vsb_timer_add(&a, 10);
    vsb_timer_add(&c, 5);
    vsb_timer_add(&c, 30);          /* re-armed: moves behind b */

    assert_int_equal(vsb_loop_run(&stop), 0);
    assert_string_equal(trace, "abcd");
    assert_true(fired_late_ms == 0);
    assert_false(a.armed || b.armed || c.armed || d.armed);
}


/* deletion within a batch */

typedef struct owner_s  owner_t;

struct owner_s {
    vsb_event_t   ev;
    int           p[2];
    owner_t     **other;            /* the peer's slot, NULL when freed */
    owner_t     **self;
    char          name;
};


static void
owner_free(owner_t *o)
{
    assert_int_equal(vsb_loop_del(&o->ev), 0);
    close(o->p[0]);
    close(o->p[1]);
    *o->self = NULL;
    free(o);
}


static void
on_owner(vsb_event_t *ev, uint32_t revents)
{
    owner_t  *o = ev->data;

    (void) revents;
    note(o->name);
    if (*o->other != NULL) {
        owner_free(*o->other);      /* its event is in this batch too */
    }
    owner_free(o);
    stop = 1;
}


static void
test_handler_frees_other_owner_in_batch(void **state)
{
    owner_t  *x, *y;

    (void) state;
    reset(NULL);
    x = calloc(1, sizeof(*x));
    y = calloc(1, sizeof(*y));
    assert_non_null(x);
    assert_non_null(y);
    readable_pipe(x->p);
    readable_pipe(y->p);
    x->name = 'x';
    y->name = 'y';
    x->self = &x;
    x->other = &y;
    y->self = &y;
    y->other = &x;
    x->ev.fd = x->p[0];
    y->ev.fd = y->p[0];
    x->ev.handler = y->ev.handler = on_owner;
    x->ev.data = x;
    y->ev.data = y;
    assert_int_equal(vsb_loop_add(&x->ev, EPOLLIN), 0);
    assert_int_equal(vsb_loop_add(&y->ev, EPOLLIN), 0);

    /* both readable: one wait returns both; the first handler frees the
     * second's owner, which must then not be dispatched (under ASan a
     * dispatch would be a use after free) */
    assert_int_equal(vsb_loop_run(&stop), 0);
    assert_int_equal(ntrace, 1);
    assert_null(x);
    assert_null(y);
}


/* the wait */

static void
count_turn(void)
{
    turns++;
}


static void
on_stop_timer(vsb_timer_t *t)
{
    (void) t;
    stop = 1;
}


static void
test_wait_ends_at_nearest_deadline(void **state)
{
    vsb_loop_hooks_t  hooks = { .before_wait = count_turn };
    vsb_timer_t       near, far;
    vsb_event_t       idle;
    int               p[2];
    uint64_t          t0, took;

    (void) state;
    reset(&hooks);
    memset(&near, 0, sizeof(near));
    memset(&far, 0, sizeof(far));
    memset(&idle, 0, sizeof(idle));
    assert_int_equal(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
    idle.fd = p[0];                 /* never readable */
    idle.handler = NULL;
    assert_int_equal(vsb_loop_add(&idle, EPOLLIN), 0);
    near.handler = on_stop_timer;
    far.handler = on_stop_timer;

    t0 = vsb_now_ms();
    vsb_timer_add(&far, 10000);
    vsb_timer_add(&near, 60);
    assert_int_equal(vsb_loop_run(&stop), 0);
    took = vsb_now_ms() - t0;

    assert_true(took >= 60);
    assert_true(took < 5000);       /* not the far timer's 10 s */
    assert_true(turns <= 3);        /* slept, did not spin */
    assert_true(far.armed);
    assert_false(near.armed);

    vsb_timer_del(&far);
    assert_int_equal(vsb_loop_del(&idle), 0);
    close(p[0]);
    close(p[1]);
}


/* the hooks */

static void hook_before(void) { note('B'); }
static void hook_after(void) { note('A'); stop = 1; }


static void
on_event(vsb_event_t *ev, uint32_t revents)
{
    (void) revents;
    note('E');
    assert_int_equal(vsb_loop_del(ev), 0);
}


static void
on_turn_timer(vsb_timer_t *t)
{
    (void) t;
    note('T');
}


static void
test_hooks_run_around_each_turn(void **state)
{
    vsb_loop_hooks_t  hooks = { .before_wait = hook_before,
                                .after_turn = hook_after };
    vsb_event_t       ev;
    vsb_timer_t       t;
    int               p[2];

    (void) state;
    reset(&hooks);
    memset(&ev, 0, sizeof(ev));
    memset(&t, 0, sizeof(t));
    readable_pipe(p);
    ev.fd = p[0];
    ev.handler = on_event;
    /* mod adds an event not yet registered */
    assert_int_equal(vsb_loop_mod(&ev, EPOLLIN), 0);
    assert_true(ev.active);
    assert_int_equal(vsb_loop_mod(&ev, EPOLLIN), 0);
    t.handler = on_turn_timer;
    vsb_timer_add(&t, 0);

    assert_int_equal(vsb_loop_run(&stop), 0);
    assert_string_equal(trace, "BETA");
    close(p[0]);
    close(p[1]);
}


/* the error hook */

static char  failed_step[64];
static int   failed_errno;


static void
hook_error(const char *step)
{
    failed_errno = errno;
    (void) snprintf(failed_step, sizeof(failed_step), "%s", step);
    errno = 0;                      /* the loop gives the caller its own */
}


static void
test_failed_call_reaches_error_hook(void **state)
{
    vsb_loop_hooks_t  hooks = { .error = hook_error };
    vsb_event_t       ev;

    (void) state;
    reset(&hooks);
    memset(&ev, 0, sizeof(ev));
    ev.fd = -1;
    errno = 0;
    assert_int_equal(vsb_loop_add(&ev, EPOLLIN), -1);
    assert_int_equal(errno, EBADF);
    assert_int_equal(failed_errno, EBADF);
    assert_string_equal(failed_step, "epoll_ctl(ADD, fd -1)");
    assert_false(ev.active);
    assert_int_equal(vsb_loop_del(&ev), 0);     /* not active: no call */
}


int
main(void)
{
    const struct CMUnitTest  tests[] = {
        cmocka_unit_test(test_timers_fire_in_deadline_order),
        cmocka_unit_test(test_handler_frees_other_owner_in_batch),
        cmocka_unit_test(test_wait_ends_at_nearest_deadline),
        cmocka_unit_test(test_hooks_run_around_each_turn),
        cmocka_unit_test(test_failed_call_reaches_error_hook),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
