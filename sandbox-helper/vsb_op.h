/*
 * What the op handlers (op_*.c, destroy.c) share: sandbox lookups, the
 * "ok" reply, state names, and the record of a request whose reply comes
 * later (vsb_pending_t, for exec and destroy).
 */
#ifndef VSB_OP_H
#define VSB_OP_H

#include <jansson.h>

#include "vsb_exec.h"
#include "vsb_ops.h"
#include "vsb_request.h"
#include "vsb_sandbox.h"
#include "vsb_server.h"

typedef enum {
    VSB_PENDING_EXEC = 1,
    VSB_PENDING_DESTROY,
    VSB_PENDING_CREATE,             /* waits for the egress proxy */
    VSB_PENDING_NETWORK,            /* update_network */
    VSB_PENDING_WAIT,               /* on a background exec */
    VSB_PENDING_ARCHIVE,
    VSB_PENDING_FREEZE,             /* pause, resume */
    VSB_PENDING_SNAPSHOT            /* snapshot_create, changes */
} vsb_pending_kind_t;

/* A request whose reply comes later.  conn is NULL once the client left. */
typedef struct vsb_pending_s  vsb_pending_t;

/*
 * What a pending request does when the server calls on it (ops.c routes
 * the server's hooks here).  Any may be NULL: detach then cancels an exec
 * (and lets a destroy go on), room/input discard a streamed payload.
 */
typedef struct {
    void    (*detach)(vsb_pending_t *p);        /* p->conn is NULL now */
    void    (*drained)(vsb_pending_t *p);       /* its events are written */
    size_t  (*room)(vsb_pending_t *p);
    void    (*input)(vsb_pending_t *p, const unsigned char *data,
                     size_t len, int last);
} vsb_pending_hooks_t;

struct vsb_pending_s {
    vsb_pending_kind_t   kind;
    vsb_conn_t          *conn;
    char                 request_id[VSB_MAX_ID_LEN + 1];
    unsigned             has_request_id:1;
    unsigned             in_start:1;    /* inside vsb_exec_start() */
    unsigned             finished:1;    /* done came during start */
    unsigned             cancelled:1;

    unsigned             stream:1;      /* exec: output as events */
    unsigned             paused:1;      /* exec: waits for the client */

    vsb_sandbox_t       *sb;
    vsb_exec_t          *ex;
    json_t              *root;          /* keeps argv/env alive */
    const vsb_pending_hooks_t  *hooks;

    vsb_pending_t       *next;          /* op_exec.c's list */
};

#define vsb_pending_rid(p)  ((p)->has_request_id ? (p)->request_id : NULL)

vsb_pending_t *vsb_pending_new(vsb_pending_kind_t kind, vsb_conn_t *c,
    const char *rid);
void vsb_pending_free(vsb_pending_t *p);

/* An exec whose output p streams to its client as events (a streamed
 * exec, an export): after an event, ex is paused once a window is
 * queued; the drained hook resumes it when the client has read them. */
void vsb_pending_stream_throttle(vsb_pending_t *p, vsb_exec_t *ex);
void vsb_pending_stream_drained(vsb_pending_t *p);

/* {"ok":true} with request_id echoed when not NULL. */
json_t *vsb_ok(const char *request_id);

const char *vsb_state_name(const vsb_sandbox_t *sb);

/* Execs running, counting those whose reply is not sent yet. */
unsigned vsb_execs_running(const vsb_sandbox_t *sb);

/* The sandbox r names, owned by r's tenant and agent; NULL with e set
 * (not_found).  _ready: and in state ready (else busy). */
vsb_sandbox_t *vsb_find(const vsb_request_t *r, vsb_error_t *e);
vsb_sandbox_t *vsb_find_ready(const vsb_request_t *r, vsb_error_t *e);
/* _running: ready and not paused (else paused): what runs something in
 * it or touches its files (exec, files, archives). */
vsb_sandbox_t *vsb_find_running(const vsb_request_t *r, vsb_error_t *e);

/* What an exec request ("exec", in the foreground or the background)
 * asks of vsb_exec_start(): argv, cwd, env, its timeout_s under the
 * gateway's cap, payload as stdin; req zeroed first.  How its output is
 * kept or streamed is the caller's to add. */
void vsb_exec_request_init(vsb_exec_request_t *req, const vsb_request_t *r,
    const unsigned char *payload, size_t payload_len);

/* op_exec.c: cancels every running exec of sb (a destroy has begun). */
void vsb_op_exec_cancel_all(vsb_sandbox_t *sb);

/* op_exec.c: an exec's result as reply fields, set into obj: exit_code,
 * signal, timed_out, oom_killed, usage, and per stream *_bytes,
 * *_dropped_bytes, *_truncated, plus *_len and *_head_len with kept. */
void vsb_exec_result_fields(json_t *obj, const vsb_exec_result_t *res,
    int kept);

/* op_background.c: a validated exec request with "background": true. */
void vsb_bg_start(vsb_conn_t *c, json_t *root, const vsb_request_t *r,
    vsb_sandbox_t *sb, const unsigned char *payload, size_t payload_len,
    vsb_error_t *e);
/* op_background.c: running background execs of sb, and its records gone
 * (a destroy has begun: running ones end with their exec). */
unsigned vsb_bg_running(const vsb_sandbox_t *sb);
void vsb_bg_sandbox_ending(vsb_sandbox_t *sb);
/* op_pause.c: a pause or resume of sb under way ends (busy). */
void vsb_pause_sandbox_ending(vsb_sandbox_t *sb);
/* op_snapshot.c: a snapshot or changes worker reading sb's files is
 * killed and gone before this returns (its client told busy). */
void vsb_snapshot_sandbox_ending(vsb_sandbox_t *sb);
/* op_snapshot.c: create's from_snapshot (r->snapshot): sb's profile
 * becomes the snapshot's and sb holds it; -1 with e (not_found, field
 * "from_snapshot"; snapshot_profile_gone; bad_value, field "profile"). */
int vsb_snapshot_fork(vsb_sandbox_t *sb, const vsb_request_t *r,
    vsb_error_t *e);
/* op_archive.c: the archive ops of sb stop touching it (a destroy). */
void vsb_archive_sandbox_ending(vsb_sandbox_t *sb);

#endif
