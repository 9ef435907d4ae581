/*
 * Background execs (background.c): their records, their output retained
 * on the sandbox's disk, and the requests waiting on them (followers of
 * their output, kills).  The ops over them are op_background.c's; the
 * start is "exec" with "background": true (vsb_bg_start(), vsb_op.h).
 */
#ifndef VSB_BACKGROUND_H
#define VSB_BACKGROUND_H

#include <time.h>

#include "vsb_op.h"
#include "vsb_retain.h"

typedef enum {
    VSB_BG_RUNNING = 0,
    VSB_BG_EXITED,
    VSB_BG_TIMED_OUT,
    VSB_BG_KILLED,
    VSB_BG_FAILED
} vsb_bg_state_t;

typedef struct vsb_bg_s       vsb_bg_t;
typedef struct vsb_bg_wait_s  vsb_bg_wait_t;

/* A request waiting on a background exec: a follower or a kill. */
struct vsb_bg_wait_s {
    vsb_pending_t    p;                 /* first: c->op points here */
    vsb_bg_t        *bg;
    int              stream;            /* follow: VSB_EXEC_STDOUT, _STDERR */
    uint64_t         offset;            /* follow: next byte to send */
    unsigned         kill:1;
    vsb_bg_wait_t   *next;
};

struct vsb_bg_s {
    char             id[VSB_EXEC_ID_LEN + 1];
    vsb_sandbox_t   *sb;
    vsb_exec_t      *ex;                /* while it runs */
    json_t          *root;              /* its request, while it runs */
    vsb_bg_state_t   state;
    time_t           started_at;
    time_t           ended_at;
    uint64_t         output_bytes;      /* retained per stream */
    vsb_retain_t     out[3];            /* [VSB_EXEC_STDOUT], [_STDERR] */
    json_t          *result;            /* once ended */
    unsigned         kill_requested:1;
    unsigned         ending:1;          /* its sandbox ends */
    vsb_bg_wait_t   *waiters;
    vsb_bg_t        *next;
};

const char *vsb_bg_stream_name(int stream);
vsb_bg_t *vsb_bg_find(const vsb_sandbox_t *sb, const char *id);
/* EXEC, as the protocol describes it. */
json_t *vsb_bg_json(const vsb_bg_t *bg);

/* A waiter on bg for c's request, c->op set; NULL: out of memory. */
vsb_bg_wait_t *vsb_bg_wait_new(vsb_conn_t *c, const vsb_request_t *r,
    vsb_bg_t *bg);
/* A follower sends what it can; at the end, its reply. */
void vsb_bg_pump(vsb_bg_wait_t *w);

#endif
