/*
 * The helper's listening socket and its client connections: peer
 * credential check, frame reading, reply writing, timeouts.  A connection
 * carries one request at a time, handed to the dispatch callback; ops
 * reply through vsb_conn_reply(), possibly much later (exec), and learn
 * of a vanished client through the detach callback.
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
    VSB_CONN_READING = 0,
    VSB_CONN_BUSY,                     /* request in flight, no timeout */
    VSB_CONN_WRITING
} vsb_conn_state_t;

typedef struct vsb_conn_s  vsb_conn_t;

struct vsb_conn_s {
    vsb_event_t          ev;
    vsb_timer_t          timer;
    vsb_conn_state_t     state;
    uid_t                uid;
    pid_t                pid;
    unsigned long        n;            /* connection number, for logs */

    vsb_frame_parser_t   in;

    unsigned char       *out_head;     /* prefix + JSON */
    size_t               out_head_len;
    unsigned char       *out_payload;  /* owned */
    size_t               out_payload_len;
    size_t               out_sent;
    unsigned             close_after:1;
    size_t               held_in;      /* counted in the global budget */
    size_t               held_out;

    void                *op;           /* ops' pending request, or NULL */

    vsb_conn_t          *prev, *next;
};

/* Handles one complete request frame from c, replying through
 * vsb_conn_reply() now or later (setting c->op while a reply is owed);
 * json and payload are only borrowed for the duration of the call. */
typedef void (*vsb_server_dispatch_pt)(vsb_conn_t *c, const char *json,
    size_t json_len, const unsigned char *payload, size_t payload_len);

/* c's client is gone: the pending request op (c->op) must not reply. */
typedef void (*vsb_server_detach_pt)(void *op);

int vsb_server_init(const vsb_config_t *cf, vsb_server_dispatch_pt dispatch,
    vsb_server_detach_pt detach, char *err, size_t errlen);
/* Stops accepting and removes the socket file. */
void vsb_server_stop_listening(void);
void vsb_server_close_all(void);

/* Queues the reply (reply is consumed, payload is owned from now on) and
 * returns; the write happens from the loop.  After a reply is queued the
 * request is over: c->op must have been cleared by the caller. */
void vsb_conn_reply(vsb_conn_t *c, json_t *reply, unsigned char *payload,
    size_t payload_len);
void vsb_conn_reply_error(vsb_conn_t *c, const char *request_id,
    const vsb_error_t *e);

/* 1 if n more bytes of reply fit in the global buffer budget. */
int vsb_server_can_buffer(size_t n);

/* {"ok":false,"error":...} with request_id echoed when not NULL. */
json_t *vsb_error_json(const char *request_id, const vsb_error_t *e);

#endif
