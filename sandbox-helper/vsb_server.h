/*
 * The helper's listening socket and its client connections: peer
 * credential check, frame reading, reply writing, timeouts.  A connection
 * carries one request at a time, handed to the dispatch hook; ops reply
 * through vsb_conn_reply(), possibly much later (exec), may send event
 * frames before it (streamed output), may take a request's payload as a
 * stream (archives), and learn of a vanished client through detach.
 */
#ifndef VSB_SERVER_H
#define VSB_SERVER_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

#include "vsb_config.h"
#include "vsb_frame.h"
#include "vsb_loop.h"
#include "vsb_request.h"

#ifndef VSB_CONN_TIMEOUT_MS
#define VSB_CONN_TIMEOUT_MS   60000   /* to read a frame, to write a reply */
#endif
#define VSB_MAX_CONNS         1024
/* requests and replies buffered for all connections together, in units
 * of the largest frame (max_file_bytes + JSON): whatever the number of
 * connections, the helper holds at most this many frames in memory */
#define VSB_BUFFERED_FRAMES   8

typedef enum {
    VSB_CONN_READING = 0,              /* a request frame, 60 s in all */
    VSB_CONN_STREAMING,                /* a streamed payload, to the op */
    VSB_CONN_BUSY,                     /* request in flight, no timeout */
    VSB_CONN_WRITING                   /* the reply is queued */
} vsb_conn_state_t;

typedef struct vsb_conn_s  vsb_conn_t;
typedef struct vsb_out_s   vsb_out_t;

/* One frame waiting to be written: event frames, then the reply. */
struct vsb_out_s {
    vsb_out_t           *next;
    unsigned char       *head;          /* prefix + JSON */
    size_t               head_len;
    unsigned char       *payload;       /* owned */
    size_t               payload_len;
    unsigned             reply:1;
};

struct vsb_conn_s {
    vsb_event_t          ev;
    vsb_timer_t          timer;
    vsb_conn_state_t     state;
    uid_t                uid;
    pid_t                pid;
    unsigned long        n;            /* connection number, for logs */

    vsb_frame_parser_t   in;
    uint64_t             in_left;      /* streamed payload still to read */

    vsb_out_t           *out;          /* frames to write, in order */
    vsb_out_t           *out_last;
    size_t               out_sent;     /* of the first */
    size_t               out_queued;   /* bytes of every queued frame */

    unsigned             close_after:1;
    unsigned             in_paused:1;  /* the op has no room for input */
    unsigned             replied:1;    /* the reply is queued or sent */
    unsigned             dispatching:1; /* in dispatch: no epoll changes */
    size_t               held_in;      /* counted in the global budget */
    size_t               held_out;

    void                *op;           /* ops' pending request, or NULL */

    vsb_conn_t          *prev, *next;
};

/*
 * What the server asks of the ops.  c->op is opaque to the server.
 *
 * dispatch: handles one request, replying through vsb_conn_reply() now
 *   or later (setting c->op while a reply is owed); json and payload are
 *   only borrowed for the duration of the call.  For an op that streams
 *   its payload, payload is NULL and payload_len the announced size: the
 *   bytes then come through input().
 * streams: 1 if the request's op takes its payload as a stream.
 * detach: c's client is gone: the pending request (op) must not reply.
 * room: bytes op can take now; 0 pauses reading until
 *   vsb_conn_resume_input().
 * input: the next bytes of a streamed payload; last is 1 with the final
 *   bytes (len may be 0).  Without a pending op the bytes are discarded.
 * drained: the event frames op queued are written: it may queue more.
 */
typedef struct {
    void    (*dispatch)(vsb_conn_t *c, const char *json, size_t json_len,
                        const unsigned char *payload, size_t payload_len);
    int     (*streams)(const char *json, size_t json_len);
    void    (*detach)(void *op);
    size_t  (*room)(void *op);
    void    (*input)(void *op, const unsigned char *data, size_t len,
                     int last);
    void    (*drained)(void *op);
} vsb_server_hooks_t;

int vsb_server_init(const vsb_config_t *cf, const vsb_server_hooks_t *hooks,
    char *err, size_t errlen);
/* Stops accepting and removes the socket file. */
void vsb_server_stop_listening(void);
void vsb_server_close_all(void);

/* Queues the reply (reply is consumed, payload is owned from now on) and
 * returns; the write happens from the loop.  After a reply is queued the
 * request is over: c->op must have been cleared by the caller.  A reply
 * queued while a streamed payload is still arriving is written at once;
 * the rest of the payload is read and discarded (unless close_after). */
void vsb_conn_reply(vsb_conn_t *c, json_t *reply, unsigned char *payload,
    size_t payload_len);
void vsb_conn_reply_error(vsb_conn_t *c, const char *request_id,
    const vsb_error_t *e);

/* Queues an event frame before the reply (event is consumed, payload is
 * owned from now on).  The op keeps vsb_conn_queued() bounded and waits
 * for the drained hook: the server never refuses an event. */
void vsb_conn_event(vsb_conn_t *c, json_t *event, unsigned char *payload,
    size_t payload_len);
size_t vsb_conn_queued(const vsb_conn_t *c);

/* The op has room for streamed input again. */
void vsb_conn_resume_input(vsb_conn_t *c);

/* 1 if n more bytes of reply fit in the global buffer budget. */
int vsb_server_can_buffer(size_t n);

/* What the server holds now (the stats op). */
typedef struct {
    unsigned             connections;  /* clients connected */
    size_t               buffered;     /* request and reply frames held */
    size_t               buffered_max; /* the budget (may be exceeded by
                                          exec replies, never refused) */
} vsb_server_usage_t;

void vsb_server_usage(vsb_server_usage_t *u);

/* {"ok":false,"error":...} with request_id echoed when not NULL. */
json_t *vsb_error_json(const char *request_id, const vsb_error_t *e);

#endif
